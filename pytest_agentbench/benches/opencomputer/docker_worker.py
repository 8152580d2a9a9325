"""OpenComputer's own Docker backend, driven for one item. Started by ``container.py``.

Why a process of its own: OpenComputer's backend (``computer_env/backends/docker/runtime.py``)
keeps its containers in process globals and removes them at exit (``atexit``); one worker per
item holds one container for the whole episode, and its exit (normal, or the pipe closing when
pytest dies) removes it as OpenComputer's own runs do. The script uses the standard library and the
user's OpenComputer checkout (``--checkout``, put first on ``sys.path``), never ``pytest_agentbench``.

    python3 -I docker_worker.py --checkout DIR --tasks DIR

reads one JSON request per line on stdin and answers one JSON line on stdout (everything the
harness prints goes to stderr):

* ``{"op": "create", "task": {...}, "options": {...}, "run_id": "..."}``: OpenComputer's
  ``setup_sandbox_session`` for the task with ``env_backend="docker"`` (``create_env``, verifier
  upload, env files, prepare hooks, setup scripts, profile hooks, app launch, ready check, stable
  window); answers ``{"container_id", "container_name", "seconds"}``;
* ``{"op": "screenshot"}``: the backend's ``screenshot()`` (``scrot --pointer`` in the container),
  as ``{"png_b64"}``;
* ``{"op": "run", "command": "...", "timeout": N}``: ``sandbox.commands.run`` (``bash -lc`` as the
  image's user); ``{"stdout", "stderr", "exit_code"}``;
* ``{"op": "close"}``: ``sandbox.kill()``; the worker then exits.

A failure answers ``{"error": "one line", "kind": "ExceptionName"}``.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any


def _one_line(text: object, limit: int = 400) -> str:
    return " ".join(str(text).split())[:limit]


class Worker:
    def __init__(self, tasks_dir: str) -> None:
        self.session: Any = None
        # upload_task_env_files reads TASK_GEN_DIR / "tasks" / <id> / "env": point it at the
        # tasks folder pytest was given, whatever its name.
        self.gen_dir = tempfile.mkdtemp(prefix="agentbench-oc-tasks-")
        os.symlink(os.path.abspath(tasks_dir), os.path.join(self.gen_dir, "tasks"))

    def create(self, request: dict[str, Any]) -> dict[str, Any]:
        import evaluation.runtime.sandbox_session as ss

        ss.TASK_GEN_DIR = Path(self.gen_dir)
        task = request["task"]
        options = request.get("options", {})
        started = time.monotonic()
        self.session = ss.setup_sandbox_session(
            task["app"], task=task, run_id=request.get("run_id"), env_backend="docker",
            sandbox_timeout=int(options.get("timeout", 3600)),
            docker_image=options["image"], docker_shm_size=options.get("shm_size"),
            docker_memory=options.get("memory"), docker_cpus=options.get("cpus"),
            docker_ready_timeout=options.get("ready_timeout"))
        box = self.session.sandbox
        return {"container_id": box.container_id, "container_name": box.container_name,
                "seconds": round(time.monotonic() - started, 3)}

    def screenshot(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"png_b64": base64.b64encode(self._box().screenshot()).decode()}

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        from computer_env.backends.base import CommandExitException

        try:
            done = self._box().commands.run(request["command"], timeout=request.get("timeout"))
        except CommandExitException as exc:
            return {"stdout": exc.stdout or "", "stderr": exc.stderr or "", "exit_code": exc.exit_code}
        return {"stdout": done.stdout, "stderr": done.stderr, "exit_code": 0}

    def close(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.session is not None:
            self.session.sandbox.kill()
            self.session = None
        return {"closed": True}

    def _box(self) -> Any:
        if self.session is None:
            raise RuntimeError("no container: create first")
        return self.session.sandbox


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkout", required=True)
    parser.add_argument("--tasks", required=True)
    args = parser.parse_args()
    out = os.fdopen(os.dup(1), "w")
    sys.stdout = sys.stderr  # the harness prints progress; only answers go to the real stdout
    sys.path.insert(0, args.checkout)
    worker = Worker(args.tasks)
    try:
        for line in sys.stdin:
            request = json.loads(line)
            op = request.get("op")
            handler = {"create": worker.create, "screenshot": worker.screenshot, "run": worker.run,
                       "close": worker.close}.get(op)
            try:
                if handler is None:
                    raise ValueError(f"unknown op {op!r}")
                answer = handler(request)
            except Exception as exc:  # noqa: BLE001 - every failure is answered as one line
                traceback.print_exc(file=sys.stderr)
                answer = {"error": f"{type(exc).__name__}: {_one_line(exc)}", "kind": type(exc).__name__}
            out.write(json.dumps(answer) + "\n")
            out.flush()
            if op == "close":
                break
    finally:
        try:
            worker.close({})  # stdin closed (pytest gone): remove the container now, not only at exit
        finally:
            shutil.rmtree(worker.gen_dir, ignore_errors=True)  # the link to the tasks folder only


if __name__ == "__main__":
    main()
