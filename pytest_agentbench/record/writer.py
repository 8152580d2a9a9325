"""A background writer for per-task files (trajectory.json, screenshots).

Creating a file costs more disk time than a mock episode takes to play, so the next episode runs
while the disk works: text files (a trajectory whose text is made already) go to a child process
(``record/file_process.py``, which says why not a thread), other jobs (screenshots, drawn from
the observation's pixels) to a thread. The writer is flushed at session end, before the controller
renders the summary and the viewer, and a write that failed is reported there (the run then exits
non-zero), never dropped silently.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_agentbench.record.file_process import FileProcess

_STOP = object()

#: Jobs waiting at most: ``submit`` blocks beyond it. Unbounded, the queue grew to hundreds of
#: tasks' files on a busy machine (the thread waits for the interpreter lock while episodes run),
#: held in memory and lost with them if the process died.
PENDING = 32


class BackgroundWriter:
    def __init__(self, pending: int = PENDING, *, use_process: bool = True) -> None:
        # A SimpleQueue (C, lock-free for the caller) and an event for the bound: queue.Queue's
        # maxsize takes two Python-level locks per job on each side.
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._pending = pending
        self._drained = threading.Event()
        self._drained.set()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.errors: list[str] = []
        self._use_process = use_process
        self._process: FileProcess | None = None

    def submit_text(self, path: str, text: str) -> None:
        """Queue the file ``path`` holding ``text`` (its folder is made when missing)."""
        data = text.encode("utf-8")
        if self._use_process:
            process = self._process
            if process is None:
                from pytest_agentbench.record.file_process import FileProcess

                process = self._process = FileProcess.start()
            if process is not None and process.write(path, data):
                return
            self._use_process = False  # cannot start here, or gone: the thread writes from now on
        from pytest_agentbench.record.file_child import write_file

        self.submit(lambda: write_file(path, data))

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
        if self._process is not None:
            self._process.sync()
        if thread is not None:
            self._queue.put(_STOP)
            thread.join()
        return self._errors()

    def close(self) -> list[str]:
        """``flush``, and end the child process (a later job starts another)."""
        errors = self.flush()
        process, self._process = self._process, None
        if process is not None:
            self.errors.extend(process.close())
            self._use_process = True
            return list(self.errors)
        return errors

    def _errors(self) -> list[str]:
        return [*self.errors, *(self._process.errors if self._process is not None else ())]
