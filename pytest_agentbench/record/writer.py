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
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=pending)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.errors: list[str] = []

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="agentbench-writer", daemon=True)
                self._thread.start()
        self._queue.put(job)

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            if job is _STOP:
                return
            try:
                job()
            except Exception as exc:  # noqa: BLE001 - reported at flush, never lost
                self.errors.append(f"{type(exc).__name__}: {exc}")

    def flush(self) -> list[str]:
        """Wait for every submitted job; return the errors so far. Safe to call more than once."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(_STOP)
            thread.join()
        return list(self.errors)
