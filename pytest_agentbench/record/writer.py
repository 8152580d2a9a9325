"""A background writer for per-task files (trajectory.json, screenshots).

Creating a folder and two or three files per task costs more disk time than a mock episode
takes to play; on a thread the next episode runs while the disk works. The writer is flushed at
session end, before the controller renders the summary and the viewer, and a write that failed is
reported there (the run then exits non-zero), never dropped silently.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

_STOP = object()

#: Jobs waiting at most: ``submit`` blocks beyond it. Unbounded, the queue grew to hundreds of
#: tasks' files on a busy machine (the thread waits for the interpreter lock while episodes run),
#: held in memory and lost with them if the process died.
PENDING = 32


class BackgroundWriter:
    def __init__(self, pending: int = PENDING) -> None:
        # A SimpleQueue (C, lock-free for the caller) and an event for the bound: queue.Queue's
        # maxsize takes two Python-level locks per job on each side.
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._pending = pending
        self._drained = threading.Event()
        self._drained.set()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.errors: list[str] = []

    def submit(self, job: Callable[[], None]) -> None:
        """Queue ``job``; when more than ``pending`` jobs wait, block until half of them are done."""
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="agentbench-writer", daemon=True)
                    self._thread.start()
        self._queue.put(job)
        if self._queue.qsize() > self._pending:
            self._drained.clear()
            # Looked at again after the clear: had the thread emptied the queue in between, it
            # would not set the event again, as it sets it only after a job.
            thread = self._thread
            while self._queue.qsize() > self._pending and not self._drained.wait(1.0):
                if thread is None or not thread.is_alive():  # never wait on a thread that is gone
                    break

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            if job is _STOP:
                self._drained.set()
                return
            try:
                job()
            except Exception as exc:  # noqa: BLE001 - reported at flush, never lost
                self.errors.append(f"{type(exc).__name__}: {exc}")
            if not self._drained.is_set() and self._queue.qsize() <= self._pending // 2:
                self._drained.set()

    def flush(self) -> list[str]:
        """Wait for every submitted job; return the errors so far. Safe to call more than once."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(_STOP)
            thread.join()
        return list(self.errors)
