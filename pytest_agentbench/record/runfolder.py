"""The run folder: ``<results-dir>/<run-name>/`` with results.jsonl, summary.json and tasks/.

Layout::

    <run>/manifest.json              the frozen task list (xdist workers collect from it)
    <run>/results.jsonl              one record per item, appended by the controller
    <run>/summary.json               metrics and per-task rows, written at the end
    <run>/viewer.html                static viewer rendered from the two files above
    <run>/tasks/<bench>/<slug>.trajectory.json
    <run>/tasks/<bench>/<slug>/step_000.png ... final.png   (only when screenshots are kept)

Trajectories sit beside the task folders rather than inside them: a folder per task costs more
disk time than a mock episode takes, so a task gets a folder only when it has screenshots.
"""

from __future__ import annotations

import datetime as _dt
import errno
import hashlib
import json
import os
import re
import weakref
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from pytest_agentbench.redact import redact
from pytest_agentbench.redact import refresh as refresh_keys

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@lru_cache(maxsize=4096)  # the trials of a task, and a benchmark's name for every task of it
def task_slug(task_id: str) -> str:
    """A folder name for a task id. Ids that had to be changed get a hash suffix, so ``a.b`` and
    ``a_b`` (or any two ids that sanitise alike) never share a folder."""
    slug = _UNSAFE.sub("_", task_id)[:120]
    if slug != task_id:
        slug += "-" + hashlib.sha1(task_id.encode()).hexdigest()[:8]
    return slug


def default_run_name(benchmarks: list[str] | tuple[str, ...], agent: str) -> str:
    stamp = _dt.datetime.now().strftime("%Y%m%d_%H%M%S")
    return f"{'+'.join(benchmarks) or 'run'}_{agent}_{stamp}"


class RunFolder:
    """One run's folder. Created once, on the controller; workers open it by path."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        #: The folder as a string: per-item paths are joined as strings (pathlib costs more per
        #: item than the rest of the record together).
        self.root = str(self.path)
        self._results_fd: int | None = None
        self._results_size = 0
        self._closer: weakref.finalize[..., Any] | None = None
        self._unlock: weakref.finalize[..., Any] | None = None
        refresh_keys()  # a new run: the environment's keys are read again at its first write

    @classmethod
    def create(cls, results_dir: Path, run_name: str) -> RunFolder:
        """Make a new folder; a taken name gets ``-2``, ``-3``... so no run overwrites another."""
        if not run_name or run_name in (".", "..") or "/" in run_name or "\\" in run_name:
            raise ValueError(f"--bench-run-name {run_name!r} must be a plain folder name")
        results_dir.mkdir(parents=True, exist_ok=True)
        candidate, n = run_name, 1
        while True:
            try:
                (results_dir / candidate).mkdir()
                return cls(results_dir / candidate)
            except FileExistsError:
                n += 1
                candidate = f"{run_name}-{n}"

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def results_path(self) -> Path:
        return self.path / "results.jsonl"

    @property
    def summary_path(self) -> Path:
        return self.path / "summary.json"

    @property
    def manifest_path(self) -> Path:
        return self.path / "manifest.json"

    @property
    def viewer_path(self) -> Path:
        return self.path / "viewer.html"

    def task_dir(self, benchmark: str, task_id: str) -> Path:
        """The folder of the task's screenshots."""
        return self.path / "tasks" / task_slug(benchmark) / task_slug(task_id)

    def trajectory_path(self, benchmark: str, task_id: str) -> Path:
        return self.path / "tasks" / task_slug(benchmark) / f"{task_slug(task_id)}.trajectory.json"

    def relative(self, path: Path) -> str:
        return path.relative_to(self.path).as_posix()

    def task_files(self, benchmark: str, task_id: str, suffix: str = "") -> tuple[str, str]:
        """``(screenshot folder, trajectory file)`` of a task, relative to the run folder, as the
        records name them; ``suffix`` tells trials and rerun attempts apart (``trials.file_suffix``).
        The same layout as :meth:`task_dir` and :meth:`trajectory_path`, without pathlib."""
        stem = f"tasks/{task_slug(benchmark)}/{task_slug(task_id)}{suffix}"
        return stem, stem + ".trajectory.json"

    def absolute(self, relative: str) -> str:
        return f"{self.root}/{relative}"

    def append_result(self, record: dict[str, Any]) -> str:
        """Append one JSON line with a single write on an O_APPEND descriptor, opened at the first
        line and kept open until :meth:`close` (an open per line costs more than the line). Each
        line is one ``write(2)``, unbuffered, so a crash loses at most the line being written.
        Returns the line's JSON text (without its newline): the viewer embeds it as it is, instead
        of encoding the record a second time at the end of the run.

        A write the disk cut short (ENOSPC, EDQUOT, EIO) is taken back, so the file keeps only
        whole lines, and raises OSError. Only this process appends, so the size after the last
        whole line is the place to cut back to."""
        text = redact(_RECORD_JSON(record))
        line = (text + "\n").encode("utf-8")
        fd = self._results_fd
        if fd is None:
            fd = self._open_results()
        try:
            written = os.write(fd, line)
            if written != len(line):
                raise OSError(errno.ENOSPC, f"only {written} of {len(line)} bytes could be written "
                                            f"(no space left on device?)")
        except OSError:
            try:
                os.ftruncate(fd, self._results_size)
            except OSError:
                pass  # a reader tolerates a torn last line (read_results)
            raise
        self._results_size += written
        return text

    def _open_results(self) -> int:
        """Open results.jsonl for appending, cut back to its last whole line first (a run killed
        mid-write leaves a torn line, which the next line would otherwise be glued onto)."""
        fd = os.open(self.results_path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            _cut_torn_tail(fd)
        except BaseException:
            os.close(fd)
            raise
        self._results_fd = fd
        self._results_size = os.fstat(fd).st_size
        # Closed by close(); the finalizer covers a folder dropped without it (the Python API, tests).
        self._closer = weakref.finalize(self, os.close, fd)
        return fd

    def lock(self) -> None:
        """Hold the folder's lock (``.lock``, an advisory ``flock``) until the process ends: a second
        run appending to this folder at once (two ``--bench-resume`` of it) is refused
        (``OSError``) before it plays anything. A lock file, not results.jsonl, because resuming
        replaces results.jsonl with its final records."""
        if self._unlock is not None:
            return
        import fcntl

        fd = os.open(self.path / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise OSError(errno.EBUSY, f"{self.path} is being written by another run at this moment") from None
        self._unlock = weakref.finalize(self, os.close, fd)  # closing the descriptor releases the lock

    def close(self) -> None:
        """Close results.jsonl (appending again reopens it) and release the folder's lock. Safe to
        call more than once."""
        closer, self._closer, self._results_fd = self._closer, None, None
        if closer is not None:
            closer()
        unlock, self._unlock = self._unlock, None
        if unlock is not None:
            unlock()

    def read_results(self) -> list[dict[str, Any]]:
        return read_results(self.results_path)

    def write_task_json(self, path: str | Path, data: Any) -> None:
        """Per-task files are written once, by one process, and read only after the run: compact
        JSON in one write (the indented encoder and a rename per task cost more than the episode).
        A value JSON has no form for (a task's config holding a path, say) is written as pydantic
        would dump it, as the per-item dicts are built without ``model_dump``."""
        self.write_task_text(path, task_json(data))

    def write_task_text(self, path: str | Path, text: str) -> None:
        """A per-task file whose JSON text (``task_json``) was made already."""
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(redact(text))

    def write_json(self, path: Path, data: Any) -> None:
        """Write indented JSON through a temporary file and a rename, so readers never see half a
        file; in pieces, as summary.json of a few thousand tasks is megabytes of text."""
        from pytest_agentbench.record.streamed import json_pieces, write_text_pieces

        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_pieces(path, json_pieces(data))


def task_json(data: Any) -> str:
    """The text of a per-task file (see ``RunFolder.write_task_json``)."""
    global _TASK_JSON
    if _TASK_JSON is None:  # one encoder: json.dumps with ``default`` builds a new one per call
        from pydantic_core import to_jsonable_python

        _TASK_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=to_jsonable_python).encode
    return _TASK_JSON(data)


_TASK_JSON: Callable[[Any], str] | None = None
#: A results.jsonl line: plain JSON (no ``default``), keys sorted, no spaces.
_RECORD_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
#: The biggest results.jsonl read back (a few thousand tasks' records are tens of megabytes).
MAX_RESULTS_BYTES = 1 << 30


def read_results(path: str | Path, keep: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
                 ) -> list[dict[str, Any]]:
    """Read results.jsonl, each record as it is or as ``keep`` makes it: a reader that needs a few
    fields of each record holds only those, as the file is read line by line (``iter_results``),
    never whole."""
    records = iter_results(path)
    return list(records) if keep is None else [keep(record) for record in records]


def iter_results(path: str | Path) -> Iterator[dict[str, Any]]:
    """The records of results.jsonl, one at a time as the file is read: a reader that keeps a
    little of each (a comparison against a run of 20,000 tasks) never holds them all. Raises
    ValueError naming the file and line of a malformed record (not JSON, nested too deep, or a
    field of the wrong type such as ``"score": "x"``), and naming the file when it cannot be read
    (missing, not a regular file, too big): compare, baseline and resume refuse it with that one
    line instead of failing later on the field. Records before a malformed one have been yielded
    by then.

    A last line without its newline that is not JSON is the torn end of a write the run could
    not finish (the disk filled, the machine died): it is skipped, and every whole record before
    it is kept."""
    from pytest_agentbench.record.models import record_problem
    from pytest_agentbench.untrusted import loads, read_lines

    path = Path(path)
    try:
        for number, line in enumerate(read_lines(path, MAX_RESULTS_BYTES, errors="replace"), 1):
            if not line.strip():
                continue
            try:
                record = loads(line)
            except json.JSONDecodeError as exc:
                if not line.endswith("\n"):
                    break  # the torn last line: a write the run could not finish
                raise ValueError(f"{path} line {number} is not JSON: {exc.msg}") from None
            if not isinstance(record, dict) or "task_id" not in record or "benchmark" not in record:
                raise ValueError(f"{path} line {number} is not a result record (needs task_id and benchmark)")
            problem = record_problem(record)
            if problem is not None:
                raise ValueError(f"{path} line {number} is not a valid result record: {problem}")
            yield record
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None


def _cut_torn_tail(fd: int, chunk: int = 1 << 16) -> None:
    """Truncate the file ``fd`` after its last newline when it does not end with one: the bytes
    after it are a line a killed run did not finish, not a record."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    end = size
    while end > 0:
        start = max(0, end - chunk)
        block = os.pread(fd, end - start, start)
        cut = block.rfind(b"\n")
        if cut >= 0:
            os.ftruncate(fd, start + cut + 1)
            return
        end = start
    os.ftruncate(fd, 0)
