"""TCP sockets that send each write at once: the package's HTTP servers and its SSH tunnel's relay.

Why: a message that leaves in two writes (``http.server`` writes a reply's head, then its body; a
relay forwards what it reads, piece by piece) stalls on Nagle's algorithm: the kernel holds the
second small write until the first is acknowledged, and the peer delays that acknowledgement (40 ms
on Linux, up to 200 ms on Windows) because it is waiting for the rest of the message. On loopback
that was 44 ms for every keep-alive request to a stdlib server, whatever the size of the reply.
Buffering the reply into one write is not enough: a reply larger than the buffer (a screenshot)
leaves in two writes again, and stalled the same way. So every socket of ours that sends replies
sets ``TCP_NODELAY``, as nginx, uvicorn and curl do. httpx's connections (httpcore) set it already.
Pytest-free, standard library only.
"""

from __future__ import annotations

import socket
from http.server import ThreadingHTTPServer
from typing import Any


def no_delay(sock: socket.socket) -> socket.socket:
    """Turn Nagle's algorithm off on a connected TCP socket (other sockets are left as they are)."""
    if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class HTTPServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` whose accepted connections send each write at once (see the module
    docstring), with daemon threads so a client that keeps its connection open does not hold up exit.
    One place for every stdlib HTTP server the package and its tests run, whatever its handler."""

    daemon_threads = True

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, address = super().get_request()
        return no_delay(conn), address

