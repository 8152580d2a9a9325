"""OpenComputer's own Docker backend, driven for one item. Started by ``container.py``.

Why a process of its own: OpenComputer's backend (``computer_env/backends/docker/runtime.py``)
keeps its containers in process globals and removes them at exit (``atexit``); one worker per
item holds one container for the whole episode, and its exit (normal, or the pipe closing when
pytest dies) removes it as OpenComputer's own runs do. The script uses the standard library and the
user's OpenComputer checkout (``--checkout``, put first on ``sys.path``), never ``pytest_agentbench``.

    python3 -I docker_worker.py --checkout DIR --tasks DIR [--forward-via JSON]

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

``--forward-via`` (JSON ``{"ssh": [ssh, options...], "to": [destination...]}``, given when
``DOCKER_HOST`` is ``ssh://``): a remote daemon publishes the container's noVNC port on the remote's 127.0.0.1, while
OpenComputer's ready check (and its stream URL) connect to that port on 127.0.0.1 here. So as soon
as the backend has started the container, its published port is forwarded to the same port here
(``ssh -N -L``), unless something here serves that port already (the host is this machine).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _one_line(text: object, limit: int = 400) -> str:
    return " ".join(str(text).split())[:limit]


def _docker_out(*args: str) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=60, check=False)
    return done.stdout if done.returncode == 0 else ""


def _port_free_here(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def published_port(session_id: str) -> int | None:
    """The 127.0.0.1 port the container of OpenComputer's backend session ``session_id`` publishes
    its noVNC port on (on the Docker host), once it does."""
    ids = _docker_out("ps", "-q", "--filter", f"label=gui-synth-env.session={session_id}").split()
    mapping = _docker_out("port", ids[0], "6080/tcp").split() if ids else []
    return int(mapping[0].rsplit(":", 1)[-1]) if mapping else None


class PortForward:
    """Forwards the noVNC port of this process's container from a remote Docker host (see the
    module's docstring): waits for ``find_port`` to name the port, then forwards it to the same
    port here over ``ssh -N -L``; started before the backend creates the container, stopped at close."""

    def __init__(self, via: dict[str, list[str]], find_port: Callable[[], int | None]) -> None:
        self.via = via
        self.find_port = find_port
        self.proc: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="novnc-forward", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.5):
            port = self.find_port()
            if port is None:
                continue
            self.port = port
            if _port_free_here(port):
                self.proc = subprocess.Popen(
                    [*self.via["ssh"], "-N", "-o", "ExitOnForwardFailure=yes", "-L",
                     f"127.0.0.1:{port}:127.0.0.1:{port}", *self.via["to"]],
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=sys.stderr)
            return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        proc, self.proc = self.proc, None
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class Worker:
    def __init__(self, tasks_dir: str, forward_via: dict[str, list[str]] | None = None) -> None:
        self.session: Any = None
        self.forward_via = forward_via
        self.forward: PortForward | None = None
        # upload_task_env_files reads TASK_GEN_DIR / "tasks" / <id> / "env": point it at the
        # tasks folder pytest was given, whatever its name.
        self.gen_dir = tempfile.mkdtemp(prefix="agentbench-oc-tasks-")
        os.symlink(os.path.abspath(tasks_dir), os.path.join(self.gen_dir, "tasks"))

    def create(self, request: dict[str, Any]) -> dict[str, Any]:
        import evaluation.runtime.sandbox_session as ss

        ss.TASK_GEN_DIR = Path(self.gen_dir)
        if self.forward_via is not None and self.forward is None:
            from computer_env.backends.docker import runtime

            session_id = runtime.PROCESS_SESSION_ID
            self.forward = PortForward(self.forward_via, lambda: published_port(session_id))
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
        answer = {"container_id": box.container_id, "container_name": box.container_name,
                  "seconds": round(time.monotonic() - started, 3)}
        if self.forward is not None:
            answer["forwarded_port"] = self.forward.port if self.forward.proc is not None else None
        return answer

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
        try:
            if self.session is not None:
                self.session.sandbox.kill()
                self.session = None
        finally:
            if self.forward is not None:
                self.forward.stop()
                self.forward = None
        return {"closed": True}

    def _box(self) -> Any:
        if self.session is None:
            raise RuntimeError("no container: create first")
        return self.session.sandbox


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkout", required=True)
    parser.add_argument("--tasks", required=True)
    parser.add_argument("--forward-via", help='JSON {"ssh": [ssh, options...], "to": [destination...]}')
    args = parser.parse_args()
    out = os.fdopen(os.dup(1), "w")
    sys.stdout = sys.stderr  # the harness prints progress; only answers go to the real stdout
    sys.path.insert(0, args.checkout)
    worker = Worker(args.tasks, json.loads(args.forward_via) if args.forward_via else None)
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
