"""Leases on demand: xdist workers ask the controller for their VM when they first need one.

A worker learns which items it plays only as the scheduler sends them, so a lease handed out when
the worker starts would tie up a VM in a worker that may get nothing to play (a resumed run with
one item left under ``-n 8``). Instead each worker gets a *ticket* (this service's loopback
address and a secret key) in its ``workerinput`` and trades it for a lease on its first item that
needs a VM; a worker that plays nothing never holds one.

The service is a ``multiprocessing.connection`` listener on 127.0.0.1: one request per
connection (the holder's name), answered with ``("ok", lease)`` or ``("error", message)``. The
secret key authenticates both sides (HMAC challenge), so no other local process can take a VM.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Connection, Listener
from typing import Any

TICKET_KIND = "deferred"


class LeaseError(Exception):
    """The controller could not give this worker a VM (its reason is the message)."""


class LeaseService:
    """Controller side: answers lease requests with ``grant(holder)`` (which may create a VM and
    raise LeaseError), each in its own thread so VMs for several workers are made at once."""

    def __init__(self, grant: Callable[[str], dict[str, Any]]) -> None:
        self._grant = grant
        self._authkey = secrets.token_bytes(32)
        self._listener = Listener(("127.0.0.1", 0), authkey=self._authkey)
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name="agentbench-leases", daemon=True)
        self._thread.start()

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._listener.address
        return str(host), int(port)

    def ticket(self, holder: str) -> dict[str, Any]:
        """What a worker needs to ask for its lease (it travels in ``workerinput``)."""
        host, port = self.address
        return {"kind": TICKET_KIND, "holder": holder, "host": host, "port": port, "authkey": self._authkey.hex()}

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn = self._listener.accept()
            except (OSError, EOFError, AuthenticationError):
                if self._closed:
                    return
                continue  # a caller without the key, or one that hung up: not ours to serve
            if self._closed:
                conn.close()
                return
            threading.Thread(target=self._answer, args=(conn,), name="agentbench-lease", daemon=True).start()

    def _answer(self, conn: Connection) -> None:
        with conn:
            try:
                holder = conn.recv()
                try:
                    conn.send(("ok", self._grant(str(holder))))
                except LeaseError as exc:
                    conn.send(("error", str(exc)))
            except (EOFError, OSError):
                pass  # the worker died while waiting: its lease is released when xdist reports it down

    def close(self) -> None:
        """Stop answering (idempotent): wake the accept loop with a connection of our own."""
        if self._closed:
            return
        self._closed = True
        try:
            Client(self.address, authkey=self._authkey).close()
        except OSError:
            pass
        self._listener.close()


def is_ticket(lease: dict[str, Any] | None) -> bool:
    return lease is not None and lease.get("kind") == TICKET_KIND


def redeem(ticket: dict[str, Any]) -> dict[str, Any]:
    """Worker side: trade the ticket for a lease (blocks while the controller creates the VM)."""
    try:
        with Client((ticket["host"], int(ticket["port"])), authkey=bytes.fromhex(ticket["authkey"])) as conn:
            conn.send(ticket["holder"])
            status, answer = conn.recv()
    except (OSError, EOFError) as exc:
        raise LeaseError(f"cannot ask the controller for a VM: {exc}") from None
    if status != "ok":
        raise LeaseError(str(answer))
    return dict(answer)
