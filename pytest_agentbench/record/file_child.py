"""The child process that creates per-task text files for ``record/file_process.py``.

Run as a script (``python -I -S file_child.py``), so it imports nothing but the standard library
and starts in a few milliseconds. It reads frames from stdin, each ``<path length, data length>``
as two little-endian 32-bit integers, then the path (``os.fsencode``) and the bytes to write
there. A frame with an empty path is a question: with no data it asks for a reply of ``ok`` once
every file before it is written; with the data ``exit`` it ends the child. A file that cannot be
written is reported as one line, ``E <Type>: <message>``, and the next frame is read: the parent
counts the failures and the run ends with one error line for them. At the end of its input (the
parent closed the pipe, or died) the child writes what it has and exits, so nothing the parent
handed over is lost with the parent.
"""

from __future__ import annotations

import os
import struct
import sys
from typing import BinaryIO

HEADER = struct.Struct("<II")
#: An error line at most, in characters: a path can be long, but the line is one line of a report.
MESSAGE_LIMIT = 500
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    """``size`` bytes, or None at the end of the input (a torn frame counts as the end)."""
    read = stream.read
    chunks = []
    while size:
        chunk = read(size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def write_file(path: str, data: bytes) -> None:
    """Create (or replace) ``path`` with ``data``, making its folder when it is missing."""
    try:
        fd = os.open(path, _FLAGS, 0o666)
    except FileNotFoundError:  # the first task of a benchmark: make tasks/<bench>/
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, _FLAGS, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


class _Reply:
    """The answers to the parent; once the parent is gone, files are still written, unanswered."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream: BinaryIO | None = stream

    def send(self, line: bytes) -> None:
        if self.stream is None:
            return
        try:
            self.stream.write(line)
            self.stream.flush()
        except (BrokenPipeError, ValueError):
            self.stream = None


def serve(source: BinaryIO, stream: BinaryIO) -> None:
    """Write every frame of ``source``; answer on ``stream``."""
    reply = _Reply(stream)
    while True:
        header = _read_exactly(source, HEADER.size)
        if header is None:
            return
        path_size, data_size = HEADER.unpack(header)
        path = _read_exactly(source, path_size) if path_size else b""
        data = _read_exactly(source, data_size) if data_size else b""
        if path is None or data is None:
            return
        if not path:  # a question, not a file
            if data == b"exit":
                return
            reply.send(b"ok\n")
            continue
        try:
            write_file(os.fsdecode(path), data)
        except Exception as exc:  # noqa: BLE001 - reported to the parent, then the next file
            message = " ".join(f"{type(exc).__name__}: {exc}".split())[:MESSAGE_LIMIT]
            reply.send(b"E " + message.encode("utf-8", "replace") + b"\n")


def main() -> int:
    try:
        serve(sys.stdin.buffer, sys.stdout.buffer)
    except BaseException as exc:  # noqa: BLE001 - a fault of this script: told to the parent, which reports it
        _Reply(sys.stdout.buffer).send(f"E file writer stopped: {type(exc).__name__}: {exc}"[:MESSAGE_LIMIT]
                                       .encode("utf-8", "replace") + b"\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
