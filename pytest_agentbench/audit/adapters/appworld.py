"""AppWorld for the verifier audit, run in AppWorld's own interpreter.

AppWorld pins pydantic 1, so it cannot be imported here. :class:`AppWorldAdapter` starts
``appworld_worker.py`` (beside this file) with AppWorld's Python, one subprocess per step, and the
two sides exchange JSON files in a fresh ``tempfile.mkdtemp(prefix="agentbench-appworld-")`` folder
that is deleted afterwards, whatever happened. There is no socket and no pipe protocol.

Worker protocol
---------------

Command line (``-P`` keeps the worker's own folder off ``sys.path``; the working directory is the
AppWorld root and ``APPWORLD_ROOT`` is set to it)::

    <python> -P appworld_worker.py <cmd> --root <root> --out <tmp>/out.json [arguments]

The worker writes ``out.json`` (atomically) only when the command finished. A missing ``out.json``
is a failure, reported with the last 5 lines of the worker's stderr. Its stdout is discarded.

============  =========================================  ==================================================
command       arguments                                  out.json
============  =========================================  ==================================================
``probe``     -                                          ``{"appworld": version, "data": db version|null,
                                                         "python": version}``
``list``      ``--split S``                              ``["22cc237_1", ...]`` (the split's task ids)
``reference`` ``--task-id T``                            ``{"task_id", "calls", "effect", "error",
                                                         "detail": {"claimed_success", "write_counters"}}``
``deliver``   ``--task-id T --runs <tmp>/runs.json``     ``[{"run_id", "effect", "verdict", "statuses",
                                                         "error", "detail"}, ...]``, one per run, in order
============  =========================================  ==================================================

* A call is ``{"method": "post", "url": "/venmo/...", "data": {...}}``, as AppWorld's requester
  records it (``world.requester.requests``).
* ``runs.json`` is ``[{"run_id": str, "calls": [call, ...], "grade": bool}, ...]``.
* An effect is ``{"app.Model": {"added": [record], "removed": [record],
  "updated": [{"before": record, "after": record}]}}`` with every record value a string (or null);
  only tables that changed appear.
* ``reference``: a fresh world runs the task's shipped ``ground_truth/solution.py``; ``calls`` is what
  it sent. ``error`` is null, or why the reference is unusable (the solution raised, or did not set
  the supervisor task to ``success``).
* ``deliver``: each run gets a fresh world; each call is replayed and its status kept (an HTTP
  status, or -1 when the call raised). The end state is read back, and only then, if ``grade``,
  the task's checker runs: ``verdict`` is ``"PASS"``/``"FAIL"`` and ``detail`` holds ``num_tests``
  and ``num_failed``; with ``grade`` false, ``verdict`` is null. ``detail.write_counters`` lists
  the tables AppWorld saw written. ``error`` is null, or why this run could not be delivered.

``keep_evidence=DIR`` copies each ``out.json`` to ``DIR/<cmd>_<argument>.json`` (numbered when the
name repeats, as the second ``deliver`` of a task does).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_agentbench.audit.model import DEFAULT_POLICY, Delivery, Reference, Run
from pytest_agentbench.untrusted import load_file

WORKER = Path(__file__).with_name("appworld_worker.py")
DEFAULT_SPLIT = "train"
STDERR_TAIL = 5

SETUP_STEPS = """\
AppWorld is not bundled. Install it once, in its own environment (it pins pydantic 1):

    uv venv --python 3.11 ~/.cache/appworld/venv
    uv pip install --python ~/.cache/appworld/venv/bin/python appworld==0.1.3.post1
    ~/.cache/appworld/venv/bin/appworld install
    ~/.cache/appworld/venv/bin/appworld download data --root ~/.cache/appworld

then pass --appworld-python ~/.cache/appworld/venv/bin/python --appworld-root ~/.cache/appworld
(or set APPWORLD_PYTHON and APPWORLD_ROOT)."""


class AppWorldSetupError(ValueError):
    """AppWorld cannot be used. ``problem`` is one line; the message adds the install steps."""

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(f"{problem}\n\n{SETUP_STEPS}")


class AppWorldWorkerError(RuntimeError):
    """A worker step failed: it timed out, could not start, or left no result.

    The message is one line; ``stderr_tail`` holds the worker's last stderr lines.
    """

    def __init__(self, message: str, stderr_tail: Sequence[str] = ()) -> None:
        self.stderr_tail = list(stderr_tail)
        super().__init__(message)


def _resolve_python(python: str | None) -> str:
    if not python:
        raise AppWorldSetupError("AppWorld's Python is not set (--appworld-python or APPWORLD_PYTHON)")
    expanded = os.path.expanduser(python)
    if os.sep in expanded or (os.altsep and os.altsep in expanded):
        if not os.path.isfile(expanded):
            raise AppWorldSetupError(f"AppWorld's Python was not found: {python}")
        if not os.access(expanded, os.X_OK):
            raise AppWorldSetupError(f"AppWorld's Python is not executable: {python}")
        return os.path.abspath(expanded)
    found = shutil.which(expanded)
    if not found:
        raise AppWorldSetupError(f"AppWorld's Python was not found on PATH: {python}")
    return found


def _check_root(root: str | None) -> str:
    if not root:
        raise AppWorldSetupError("the AppWorld root is not set (--appworld-root or APPWORLD_ROOT)")
    path = os.path.abspath(os.path.expanduser(root))
    if not os.path.isdir(path):
        raise AppWorldSetupError(f"the AppWorld root does not exist: {root}")
    if not os.path.isdir(os.path.join(path, "data", "tasks")):
        raise AppWorldSetupError(f"the AppWorld root has no data/tasks folder (the data is not downloaded): {root}")
    return path


def _tail(text: str, n: int = STDERR_TAIL) -> list[str]:
    return [line.rstrip() for line in text.splitlines() if line.strip()][-n:]


class AppWorldAdapter:
    """The verifier-audit adapter for AppWorld (duck-typed adapter protocol).

    ``python`` is AppWorld's interpreter, ``root`` the folder holding ``data/tasks``. The constructor
    checks both and runs the worker's ``probe`` once; any problem raises :class:`AppWorldSetupError`.
    """

    name = "appworld"
    ignore_fields = frozenset({"id", "created_at", "updated_at", "record_hash"})
    policy = DEFAULT_POLICY

    def __init__(self, python: str, root: str, *, timeout: float = 1800, keep_evidence: str | None = None) -> None:
        self.python = _resolve_python(python)
        self.root = _check_root(root)
        self.timeout = float(timeout)
        self.keep_evidence = Path(keep_evidence) if keep_evidence else None
        self._evidence_lock = threading.Lock()
        try:
            probe = self._run("probe")
        except AppWorldWorkerError as exc:
            raise AppWorldSetupError(f"AppWorld did not load: {self._probe_problem(exc)}") from None
        self.versions: dict[str, Any] = probe if isinstance(probe, dict) else {}

    @classmethod
    def from_env(cls, python: str | None = None, root: str | None = None, **options: Any) -> AppWorldAdapter:
        """Arguments first, then ``APPWORLD_PYTHON`` / ``APPWORLD_ROOT``."""
        return cls(python or os.environ.get("APPWORLD_PYTHON", ""), root or os.environ.get("APPWORLD_ROOT", ""),
                   **options)

    @staticmethod
    def _probe_problem(exc: AppWorldWorkerError) -> str:
        tail = exc.stderr_tail
        if any("Unknown option: -P" in line for line in tail):
            return "its Python is older than 3.11 (it does not know -P)"
        return tail[-1].strip() if tail else str(exc)

    # -- the adapter protocol -------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "appworld": self.versions.get("appworld"), "data": self.versions.get("data"),
                "python": self.versions.get("python")}

    def task_ids(self, split: str | None = None, limit: int | None = None) -> list[str]:
        split = split or DEFAULT_SPLIT
        ids = self._run("list", "--split", split, label=split)
        if not isinstance(ids, list):
            raise AppWorldWorkerError(f"AppWorld worker list returned {type(ids).__name__}, not a list")
        ids = [str(i) for i in ids]
        return ids[:limit] if limit and limit > 0 else ids

    def has_task(self, task_id: str) -> bool:
        """Whether the downloaded data has this task (``data/tasks/<id>``); no subprocess."""
        if not isinstance(task_id, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", task_id):
            return False
        return os.path.isdir(os.path.join(self.root, "data", "tasks", task_id))

    def reference(self, task_id: str) -> Reference:
        data = self._run("reference", "--task-id", task_id, label=task_id)
        if not isinstance(data, dict):
            raise AppWorldWorkerError(f"AppWorld worker reference returned {type(data).__name__}, not an object")
        return Reference(task_id=str(data.get("task_id") or task_id), calls=list(data.get("calls") or []),
                         effect=dict(data.get("effect") or {}), error=data.get("error"),
                         detail=dict(data.get("detail") or {}))

    def deliver(self, task_id: str, runs: Sequence[Run]) -> list[Delivery]:
        runs = list(runs)
        if not runs:
            return []
        payload = [{"run_id": r.run_id, "calls": list(r.calls), "grade": bool(getattr(r, "grade", True))}
                   for r in runs]
        data = self._run("deliver", "--task-id", task_id, label=task_id, files={"--runs": ("runs.json", payload)})
        if not isinstance(data, list):
            raise AppWorldWorkerError(f"AppWorld worker deliver returned {type(data).__name__}, not a list")
        by_id = {d.get("run_id"): d for d in data if isinstance(d, dict)}
        out = []
        for run in runs:
            d = by_id.get(run.run_id)
            if d is None:
                out.append(Delivery(run.run_id, error="the AppWorld worker returned no result for this run"))
                continue
            out.append(Delivery(run.run_id, effect=dict(d.get("effect") or {}), verdict=d.get("verdict"),
                                statuses=[int(s) for s in d.get("statuses") or []], error=d.get("error"),
                                detail=dict(d.get("detail") or {})))
        return out

    # -- the worker ------------------------------------------------------------------------------

    def _run(self, cmd: str, *args: str, label: str | None = None,
             files: dict[str, tuple[str, Any]] | None = None) -> Any:
        """Run one worker command and return its parsed ``out.json``."""
        folder = tempfile.mkdtemp(prefix="agentbench-appworld-")
        try:
            out = os.path.join(folder, "out.json")
            argv = [self.python, "-P", str(WORKER), cmd, "--root", self.root, "--out", out, *args]
            for flag, (name, payload) in (files or {}).items():
                path = os.path.join(folder, name)
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(payload, f)
                argv += [flag, path]
            returncode, stderr = self._spawn(cmd, argv)
            tail = _tail(stderr)
            if not os.path.isfile(out):
                detail = " | ".join(line.strip() for line in tail) or "no output on stderr"
                raise AppWorldWorkerError(f"AppWorld worker {cmd} failed (exit status {returncode}): {detail}", tail)
            try:
                result = load_file(out)
            except (OSError, ValueError) as exc:
                raise AppWorldWorkerError(f"AppWorld worker {cmd} wrote an unreadable result: {exc}", tail) from None
            self._keep(cmd, label, out)
            return result
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _spawn(self, cmd: str, argv: list[str]) -> tuple[int, str]:
        from pytest_agentbench.workers import WorkerTimeout, run_worker

        env = dict(os.environ, APPWORLD_ROOT=self.root)
        try:
            return run_worker(argv, cwd=self.root, env=env, timeout=self.timeout)
        except OSError as exc:
            raise AppWorldWorkerError(f"AppWorld worker {cmd} could not start {self.python}: {exc}") from None
        except WorkerTimeout as exc:
            raise AppWorldWorkerError(f"AppWorld worker {cmd} timed out after {self.timeout:g}s",
                                      _tail(exc.stderr)) from None

    def _keep(self, cmd: str, label: str | None, out: str) -> None:
        if self.keep_evidence is None:
            return
        stem = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{cmd}_{label}" if label else cmd)
        with self._evidence_lock:
            self.keep_evidence.mkdir(parents=True, exist_ok=True)
            target, n = self.keep_evidence / f"{stem}.json", 1
            while target.exists():
                n += 1
                target = self.keep_evidence / f"{stem}_{n}.json"
            shutil.copyfile(out, target)
