"""SSH tunnels to a VM's WAA server and evaluate server, with paramiko (the ``ssh`` extra).

``SSHTunnel`` opens one SSH connection and any number of local port forwards over it (the
``ssh -L`` kind): each forward listens on ``127.0.0.1`` (port 0 picks a free port) and carries every
accepted connection through a ``direct-tcpip`` channel to ``remote_host:remote_port`` as seen from
the SSH server::

    with SSHTunnel("vm.example.org", user="azureuser", key_filename="~/.ssh/waa",
                   forwards=[(0, "127.0.0.1", 5000), (0, "127.0.0.1", 5050)]) as tunnel:
        waa_url = tunnel.local_url(5000)         # http://127.0.0.1:<local port>
        evaluate_url = tunnel.local_url(5050)

Host keys are always verified unless ``insecure_accept_any_host_key=True`` is passed by name:
against a pinned ``host_key`` ("ssh-ed25519 AAAA..."), else against ``known_hosts`` (the given file,
else ``~/.ssh/known_hosts``). Authentication uses ``key_filename`` when given (that key only), else
the user's SSH agent and default keys (``~/.ssh/id_*``).

Every failure is a :class:`TunnelError` with one line that names ``host:port``: unknown or changed
host key, authentication refused, connection refused, timeout, name resolution, a local port in use.
paramiko is imported only when a tunnel starts.
"""

from __future__ import annotations

import base64
import contextlib
import getpass
import hashlib
import logging
import os
import select
import socket
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pytest_agentbench.extras import install_hint
from pytest_agentbench.sockets import no_delay

if TYPE_CHECKING:
    from typing_extensions import Self

log = logging.getLogger(__name__)

#: A forward: ``{local_port: (remote_host, remote_port)}`` or ``[(local_port, remote_host, remote_port)]``
#: (the list form allows several forwards on port 0).
Forwards = Mapping[int, tuple[str, int]] | Iterable[tuple[int, str, int]]


class TunnelError(RuntimeError):
    """An SSH tunnel could not be opened; the message is one line naming the host and the cause."""


def _import_paramiko() -> Any:
    try:
        import paramiko
    except ImportError:
        raise TunnelError(
            f"SSH tunnels need paramiko, which is not installed: {install_hint('ssh')}"
        ) from None
    return paramiko


def fingerprint(key: Any) -> str:
    """OpenSSH's ``SHA256:...`` fingerprint of a paramiko key."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def _parse_forwards(forwards: Forwards | None) -> list[tuple[int, str, int]]:
    out: list[tuple[int, str, int]] = []
    if forwards is None:
        return out
    if isinstance(forwards, Mapping):
        items: Iterable[Any] = ((local, *target) for local, target in forwards.items())
    else:
        items = forwards
    for item in items:
        try:
            local, rhost, rport = item
            out.append((int(local), str(rhost), int(rport)))
        except (TypeError, ValueError):
            raise ValueError(
                f"bad SSH forward {item!r}: use {{local_port: (remote_host, remote_port)}} "
                "or [(local_port, remote_host, remote_port)], local_port 0 for a free port"
            ) from None
        if not (0 <= out[-1][0] <= 65535 and 0 < out[-1][2] <= 65535):
            raise ValueError(f"bad SSH forward {item!r}: port out of range")
    return out


class _Forward:
    """One local listening socket and the connections it carries."""

    def __init__(self, tunnel: SSHTunnel, local_port: int, remote_host: str, remote_port: int) -> None:
        self.tunnel = tunnel
        self.remote_host = remote_host
        self.remote_port = remote_port
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind(("127.0.0.1", local_port))
        except OSError as exc:
            self.sock.close()
            raise TunnelError(
                f"cannot listen on 127.0.0.1:{local_port} for the tunnel to "
                f"{remote_host}:{remote_port} via {tunnel.address}: {exc.strerror or exc}"
            ) from None
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.local_port: int = self.sock.getsockname()[1]
        self.thread = threading.Thread(
            target=self._accept_loop, name=f"ssh-forward-{self.local_port}", daemon=True
        )

    def _accept_loop(self) -> None:
        stop = self.tunnel._stopping
        while not stop.is_set():
            try:
                conn, peer = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            conn.settimeout(None)
            no_delay(conn)  # each piece read from the channel leaves at once (pytest_agentbench.sockets)
            threading.Thread(
                target=self._carry, args=(conn, peer), name=f"ssh-forward-{self.local_port}-conn", daemon=True
            ).start()

    def _carry(self, conn: socket.socket, peer: tuple[str, int]) -> None:
        tunnel = self.tunnel
        transport = tunnel._transport
        chan = None
        try:
            if transport is None or not transport.is_active():
                log.warning("SSH tunnel to %s is down; dropping a connection to local port %s",
                            tunnel.address, self.local_port)
                return
            try:
                chan = transport.open_channel(
                    "direct-tcpip", (self.remote_host, self.remote_port), peer, timeout=tunnel.connect_timeout
                )
            except Exception as exc:  # noqa: BLE001 - ChannelException, SSHException, timeouts
                log.warning("SSH server %s could not connect to %s:%s: %s",
                            tunnel.address, self.remote_host, self.remote_port, exc)
                return
            with tunnel._lock:
                tunnel._open.update((conn, chan))
            self._pump(conn, chan)
        finally:
            for end in (chan, conn):
                if end is not None:
                    with contextlib.suppress(Exception):  # closing what already broke
                        end.close()
                    with tunnel._lock:
                        tunnel._open.discard(end)

    def _pump(self, conn: socket.socket, chan: Any) -> None:
        stop = self.tunnel._stopping
        while not stop.is_set():
            try:
                readable, _, _ = select.select([conn, chan], [], [], 0.2)
            except (OSError, ValueError):  # a side was closed by stop()
                return
            for src in readable:
                try:
                    data = src.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                dst = chan if src is conn else conn
                try:
                    dst.sendall(data)
                except OSError:
                    return

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class SSHTunnel:
    """An SSH connection with local port forwards (see the module docstring)."""

    def __init__(
        self,
        host: str,
        port: int = 22,
        user: str | None = None,
        *,
        key_filename: str | os.PathLike[str] | None = None,
        passphrase: str | None = None,
        known_hosts: str | os.PathLike[str] | None = None,
        host_key: str | None = None,
        insecure_accept_any_host_key: bool = False,
        forwards: Forwards | None = None,
        connect_timeout: float = 10,
    ) -> None:
        if host_key and insecure_accept_any_host_key:
            raise ValueError("SSHTunnel: give either host_key or insecure_accept_any_host_key=True, not both")
        self.host = host
        self.port = int(port)
        self.user = user or getpass.getuser()
        self.key_filename = os.path.expanduser(os.fspath(key_filename)) if key_filename else None
        self.passphrase = passphrase
        self.known_hosts = os.path.expanduser(os.fspath(known_hosts)) if known_hosts else None
        self.host_key = host_key.strip() if host_key else None
        self.insecure_accept_any_host_key = bool(insecure_accept_any_host_key)
        self.forwards = _parse_forwards(forwards)
        self.connect_timeout = float(connect_timeout)
        self._client: Any = None
        self._transport: Any = None
        self._listeners: list[_Forward] = []
        self._open: set[Any] = set()
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    # ------------------------------------------------------------------ addresses
    @property
    def address(self) -> str:
        """``user@host:port`` for messages."""
        return f"{self.user}@{self.host}:{self.port}"

    @property
    def _host_key_name(self) -> str:
        # The name known_hosts (and paramiko) use: bare host on port 22, "[host]:port" otherwise.
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"

    @property
    def ports(self) -> dict[int, int]:
        """``{remote_port: local_port}`` of the open forwards."""
        return {f.remote_port: f.local_port for f in self._listeners}

    def local_port(self, remote_port: int, remote_host: str | None = None) -> int:
        matches = [f for f in self._listeners if f.remote_port == int(remote_port)
                   and (remote_host is None or f.remote_host == remote_host)]
        if not matches:
            state = "open" if self._listeners else "started"
            raise KeyError(f"SSH tunnel {self.address} has no {state} forward to remote port {remote_port}")
        if len(matches) > 1:
            raise KeyError(f"SSH tunnel {self.address} forwards remote port {remote_port} for several hosts; "
                           "pass remote_host")
        return matches[0].local_port

    def local_url(self, remote_port: int, remote_host: str | None = None, scheme: str = "http") -> str:
        """``http://127.0.0.1:<local port>`` for the forward to ``remote_port``."""
        return f"{scheme}://127.0.0.1:{self.local_port(remote_port, remote_host)}"

    @property
    def active(self) -> bool:
        return self._transport is not None and self._transport.is_active()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> Self:
        if self._client is not None:
            return self
        paramiko = _import_paramiko()
        self._stopping.clear()
        try:
            self._connect(paramiko)
            for local, rhost, rport in self.forwards:
                fwd = _Forward(self, local, rhost, rport)
                self._listeners.append(fwd)
                fwd.thread.start()
        except BaseException:
            self.stop()
            raise
        return self

    def _connect(self, paramiko: Any) -> None:
        where = f"{self.host}:{self.port}"
        client = paramiko.SSHClient()
        self._client = client
        if self.insecure_accept_any_host_key:
            client.set_missing_host_key_policy(_accept_policy(paramiko))
        else:
            client.set_missing_host_key_policy(_reject_policy(paramiko))
            if self.host_key:
                client.get_host_keys().add(self._host_key_name, *_parse_host_key(paramiko, self.host_key))
            elif self.known_hosts:
                if not os.path.isfile(self.known_hosts):
                    raise TunnelError(f"SSH known_hosts file {self.known_hosts} (for {where}) does not exist")
                try:
                    client.load_host_keys(self.known_hosts)
                except (OSError, paramiko.SSHException) as exc:
                    raise TunnelError(f"cannot read SSH known_hosts file {self.known_hosts}: {exc}") from None
            else:
                try:
                    client.load_system_host_keys()  # ~/.ssh/known_hosts when it exists
                except (OSError, paramiko.SSHException) as exc:
                    raise TunnelError(f"cannot read ~/.ssh/known_hosts: {exc}") from None
        if self.key_filename and not os.path.isfile(self.key_filename):
            raise TunnelError(f"SSH key file {self.key_filename} (for {where}) does not exist")
        how = f"key file {self.key_filename}" if self.key_filename else "the SSH agent and default keys"
        try:
            client.connect(
                self.host,
                port=self.port,
                username=self.user,
                key_filename=self.key_filename,
                passphrase=self.passphrase,
                allow_agent=self.key_filename is None,
                look_for_keys=self.key_filename is None,
                timeout=self.connect_timeout,
                banner_timeout=self.connect_timeout,
                auth_timeout=self.connect_timeout,
            )
        except _UnknownHostKey as exc:
            key_line = f"{exc.key.get_name()} {exc.key.get_base64()}"
            source = self.known_hosts or "~/.ssh/known_hosts"
            raise TunnelError(
                f"SSH host key of {where} is unknown ({exc.key.get_name()} {fingerprint(exc.key)}); "
                f"after checking it, pin it with host_key={key_line!r} or add "
                f"'{self._host_key_name} {key_line}' to {source}, "
                "or pass insecure_accept_any_host_key=True to skip the check"
            ) from None
        except paramiko.BadHostKeyException as exc:
            pinned = "the pinned host_key" if self.host_key else (self.known_hosts or "~/.ssh/known_hosts")
            raise TunnelError(
                f"SSH host key of {where} does not match {pinned}: server sent {exc.key.get_name()} "
                f"{fingerprint(exc.key)}, expected {fingerprint(exc.expected_key)} "
                "(the host was rebuilt, or someone is intercepting the connection)"
            ) from None
        except paramiko.PasswordRequiredException:
            raise TunnelError(
                f"SSH key file {self.key_filename} for {where} is encrypted; pass passphrase= or load it "
                "into ssh-agent"
            ) from None
        except paramiko.AuthenticationException as exc:
            raise TunnelError(
                f"SSH authentication refused by {where} for user {self.user!r} with {how}: {exc}"
            ) from None
        except paramiko.ssh_exception.NoValidConnectionsError as exc:
            refused = all(getattr(e, "errno", None) in (111, 61, 10061) for e in exc.errors.values())
            cause = "connection refused" if refused else str(exc)
            raise TunnelError(f"cannot connect to SSH server {where}: {cause} (is sshd running there?)") from None
        except socket.gaierror as exc:
            raise TunnelError(f"cannot resolve SSH host {self.host!r} ({where}): {exc.strerror or exc}") from None
        except TimeoutError:
            raise TunnelError(
                f"SSH connection to {where} timed out after {self.connect_timeout:g}s"
            ) from None
        except ConnectionRefusedError:
            raise TunnelError(f"cannot connect to SSH server {where}: connection refused") from None
        except (OSError, EOFError, paramiko.SSHException) as exc:
            text = str(exc) or type(exc).__name__
            if "No existing session" in text or "protocol banner" in text:
                # paramiko's handshake wait ends silently after `timeout`; auth then finds no session.
                raise TunnelError(
                    f"SSH handshake with {where} did not complete within {self.connect_timeout:g}s "
                    "(is an SSH server listening there?)"
                ) from None
            raise TunnelError(f"SSH connection to {where} failed: {text}") from None
        self._transport = client.get_transport()
        self._transport.set_keepalive(30)
        no_delay(self._transport.sock)  # a request's head and body leave as two SSH packets

    def stop(self) -> None:
        """Close the local ports, the open connections and the SSH connection; safe to call twice."""
        self._stopping.set()
        for fwd in self._listeners:
            fwd.close()
        with self._lock:
            ends = list(self._open)
            self._open.clear()
        for end in ends:
            with contextlib.suppress(Exception):  # closing what may already be broken
                end.close()
        for fwd in self._listeners:
            if fwd.thread.is_alive() and fwd.thread is not threading.current_thread():
                fwd.thread.join(timeout=2)
        self._listeners = []
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()
        self._client = None
        self._transport = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        fwd = ", ".join(f"{f.local_port}->{f.remote_host}:{f.remote_port}" for f in self._listeners)
        return f"<SSHTunnel {self.address} {'active' if self.active else 'closed'} [{fwd}]>"


class _UnknownHostKey(Exception):
    def __init__(self, hostname: str, key: Any) -> None:
        super().__init__(hostname)
        self.hostname = hostname
        self.key = key


def _reject_policy(paramiko: Any) -> Any:
    # paramiko is untyped, so the base class is Any, which strict mypy (disallow_subclassing_any) rejects.
    class Reject(paramiko.MissingHostKeyPolicy):  # type: ignore[misc]  # untyped base: see above
        def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
            raise _UnknownHostKey(hostname, key)

    return Reject()


def _accept_policy(paramiko: Any) -> Any:
    class AcceptAny(paramiko.MissingHostKeyPolicy):  # type: ignore[misc]  # as in _reject_policy
        def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
            log.warning("SSH host key of %s NOT verified (insecure_accept_any_host_key=True): %s %s",
                        hostname, key.get_name(), fingerprint(key))

    return AcceptAny()


def _parse_host_key(paramiko: Any, text: str) -> tuple[str, Any]:
    """``"ssh-ed25519 AAAA... [comment]"`` (or a known_hosts line ``host ssh-ed25519 AAAA...``)."""
    parts = text.split()
    if len(parts) >= 3 and not parts[0].startswith(("ssh-", "ecdsa-", "sk-")):
        parts = parts[1:]  # a known_hosts line: drop the host name
    if len(parts) < 2:
        raise TunnelError(f"host_key {text!r} is not an OpenSSH public key such as 'ssh-ed25519 AAAA...'")
    try:
        entry = paramiko.hostkeys.HostKeyEntry.from_line(f"pinned {parts[0]} {parts[1]}")
    except Exception:  # noqa: BLE001 - InvalidHostKey, binascii.Error
        entry = None
    if entry is None or entry.key is None:
        raise TunnelError(f"host_key {text!r} is not a supported OpenSSH public key")
    return entry.key.get_name(), entry.key


__all__ = ["SSHTunnel", "TunnelError", "fingerprint"]
