"""Per-task text files created by a child process fed through a pipe.

Creating a file is the slow part of a run folder on many disks (a new inode: up to a millisecond
on a virtual machine's ext4, more on network storage), slower than a mock episode takes to play.
A thread cannot hide it: each time its system call returns, the thread waits for the interpreter
lock, which the episodes hold, so it falls behind and the run waits for it. A child process has no
such lock. The run hands it each file's path and bytes in one pipe write (``file_child.py`` says
the framing) and goes on; the pipe's buffer, raised to a megabyte where Linux allows, bounds what
waits. What the child was handed survives the parent: it writes everything up to the end of its
input before it exits, so a run killed mid-item loses at most the item in flight.

Write errors come back as lines, read by a thread that sleeps in ``read`` (it never competes
for the lock while files are written), and are counted like the thread writer's. When the child
cannot be started, or has died, the caller writes on its own thread instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from typing import IO

from pytest_agentbench.record.file_child import HEADER

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "file_child.py")
#: The pipe's buffer where Linux lets it be raised: about 300 trajectories of a mock task.
PIPE_BYTES = 1 << 20
_SYNC = HEADER.pack(0, 0)
_EXIT = HEADER.pack(0, 4) + b"exit"


class FileProcess:
    """The child and the two ends of its pipes. ``start`` returns None where it cannot run."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self._proc = proc
        assert proc.stdin is not None and proc.stdout is not None
        self._stdin = proc.stdin
        self._fd = proc.stdin.fileno()
        self._ready = threading.Condition()
        self._acks = 0
        self._asked = 0
        self._gone = False  # the child's answers ended: it exited or was killed
        self.errors: list[str] = []
        self._reader = threading.Thread(target=self._read, args=(proc.stdout,), name="agentbench-file-replies",
                                        daemon=True)
        self._reader.start()

    @classmethod
    def start(cls) -> FileProcess | None:
        if not sys.executable or not os.path.isfile(CHILD):
            return None
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", CHILD],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                # Not the item's captured stderr (the child may start inside an item's capture);
                # its own failures come back on stdout.
                stderr=subprocess.DEVNULL,
                # Its own session: the terminal's Ctrl-C stops the run, which then closes the
                # child after its last file, instead of killing it with files still in the pipe.
                start_new_session=os.name == "posix",
            )
        except OSError:
            return None
        assert proc.stdin is not None
        _raise_pipe_size(proc.stdin.fileno())
        return cls(proc)

    def write(self, path: str, data: bytes) -> bool:
        """Hand ``data`` for ``path`` to the child; False when the child is gone (not written)."""
        raw = os.fsencode(path)
        return self._send(HEADER.pack(len(raw), len(data)) + raw + data)

    def sync(self) -> None:
        """Wait until the child has written every file handed to it so far (or is gone)."""
        if not self._send(_SYNC):
            return
        with self._ready:
            self._asked += 1
            wanted = self._asked
            while self._acks < wanted and not self._gone:
                self._ready.wait(1.0)
                if self._proc.poll() is not None and self._acks < wanted:
                    self._gone = True

    def close(self) -> list[str]:
        """Write the rest, end the child and return every error, including its own end when that
        came early (files handed to it after its last answer may be missing then)."""
        self._send(_EXIT)
        try:
            self._stdin.close()
        except OSError:
            pass
        code = self._proc.wait()
        self._reader.join()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        if code != 0:
            how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
            self.errors.append(f"ChildProcessError: the file writer process {how}; "
                               "task files handed to it after its last one may be missing")
        return self.errors

    def _send(self, frame: bytes) -> bool:
        if self._gone:
            return False
        view = memoryview(frame)
        try:
            while view:
                view = view[os.write(self._fd, view):]
        except (BrokenPipeError, ValueError, OSError):
            self._gone = True
            return False
        return True

    def _read(self, stream: IO[bytes]) -> None:
        for line in iter(stream.readline, b""):
            with self._ready:
                if line == b"ok\n":
                    self._acks += 1
                elif line.startswith(b"E "):
                    self.errors.append(line[2:].decode("utf-8", "replace").rstrip("\n"))
                self._ready.notify_all()
        with self._ready:
            self._gone = True
            self._ready.notify_all()


def _raise_pipe_size(fd: int) -> None:
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, AttributeError, OSError):  # not Linux, or above /proc/sys/fs/pipe-max-size
        pass
