"""OpenComputer's own harness code, run INSIDE an item's sandbox. Started by ``harness.py``.

Why inside: the harness's ``verify_task`` evaluates the task's ``eval`` expressions in its own
process and its prepare hooks run shell commands; here both stay in the sandbox, and the pytest
process only reads this script's JSON answer. The script uses the standard library and the
user's OpenComputer checkout (bound read-only at ``--checkout``), never ``pytest_agentbench``, and
stands in for OpenComputer's Docker backend with the same command semantics: ``bash -lc`` with
the backend's DBus prefix, working folder ``/home/user``, ``CommandExitException`` on a non-zero
exit, ``TimeoutError`` at the timeout, files written as the sandbox's user.

    python3 -I harness_worker.py --checkout DIR setup   < {"task": {...}, "hooks": true}
    python3 -I harness_worker.py --checkout DIR verify  < {"task": {...}, "sleep": false, "save": false}
    python3 -I harness_worker.py --checkout DIR launch  < {"task": {...}}

Each prints one JSON object on stdout (everything the harness itself prints goes to stderr):

* ``setup``: ``{"steps": [{"step", "ok", "error"}...], "error": null | "one line"}``; it runs
  ``upload_verifier``, ``upload_task_env_files``, the app spec's ``prepare_task_hooks``,
  ``run_task_setup_scripts`` and its ``prepare_profile_hooks``, in ``setup_sandbox_session``'s
  order, and stops at the first exception as that function does;
* ``verify``: ``{"passed", "total", "details": [...], "error": null | "one line"}``, the return of
  ``verify_task`` (optionally after OpenComputer's ``auto_save_app``), with LLM-judged checks
  answered "not judged" (the judge, if any, runs in the pytest process on the ``result`` here);
* ``launch``: ``{"command": "..."}``, the app spec's launch command for the task.

Every ``result`` in ``details`` is cut to ``MAX_RESULT_CHARS`` of JSON after the verdict is made.
"""

from __future__ import annotations  # the sandbox's python3 may predate ``X | None`` at run time

import argparse
import functools
import json
import os
import shlex
import subprocess
import sys
import traceback
import types
from collections.abc import Callable
from typing import Any

HOME = "/home/user"
DBUS = "unix:path=/tmp/runtime-user/bus"
NOT_JUDGED = "agentbench: not judged here (the judge, if configured, runs in the pytest process)"
MAX_RESULT_CHARS = 65536
#: How deep a result may nest in the answer (the host reads answers at most 200 deep: untrusted.MAX_DEPTH).
MAX_RESULT_DEPTH = 100


def _one_line(text: object, limit: int = 300) -> str:
    return " ".join(str(text).split())[:limit]


def _within(path: str) -> bool:
    real = os.path.realpath(path)
    return any(real == root or real.startswith(root + "/") for root in (HOME, "/tmp"))


class Commands:
    """The Docker backend's ``CommandsClient``: ``bash -lc`` in ``/home/user``."""

    def __init__(self, exc_type: Callable[..., BaseException], result_type: Callable[..., object],
                 handle_type: Callable[..., object]) -> None:
        self.exc_type = exc_type
        self.result_type = result_type
        self.handle_type = handle_type
        self.background: list[subprocess.Popen[bytes]] = []

    def run(self, command: str, timeout: float | None = None, background: bool = False) -> object:
        prefix = f"export DBUS_SESSION_BUS_ADDRESS=${{DBUS_SESSION_BUS_ADDRESS:-{shlex.quote(DBUS)}}}; "
        argv = ["bash", "-lc", f"{prefix}{command}"]
        if background:
            proc = subprocess.Popen(argv, cwd=HOME, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True)
            self.background.append(proc)
            return self.handle_type(command=command, backend="agentbench-bwrap", pid=proc.pid)
        effective = None if timeout == 0 else timeout
        try:
            done = subprocess.run(argv, cwd=HOME, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  errors="replace", timeout=effective, check=False)
        except subprocess.TimeoutExpired as exc:
            raise TimeoutError(f"Command timed out after {timeout}s: {command}") from exc
        if done.returncode != 0:
            raise self.exc_type(command=command, exit_code=done.returncode, stdout=done.stdout, stderr=done.stderr)
        return self.result_type(command=command, stdout=done.stdout or "", stderr=done.stderr or "", exit_code=0)


class Files:
    """The Docker backend's ``FilesClient``, limited to the sandbox's writable folders."""

    def write(self, path: str, data: str | bytes) -> None:
        if not _within(os.path.dirname(path) or "/"):
            raise PermissionError(f"{path} is outside /home/user and /tmp")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        payload = data.encode() if isinstance(data, str) else data
        if os.path.islink(path):
            os.unlink(path)
        with open(path, "wb") as handle:
            handle.write(payload)

    def read(self, path: str, format: str = "text") -> str | bytes:
        with open(path, "rb") as handle:
            data = handle.read()
        return data if format in ("bytes", "binary") else data.decode()

    def remove(self, path: str) -> None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


class Box:
    backend_name = "agentbench-bwrap"

    def __init__(self, base: types.ModuleType) -> None:
        self.commands = Commands(base.CommandExitException, base.CommandResult, base.BackgroundCommandHandle)
        self.files = Files()

    def screenshot(self) -> bytes:
        raise RuntimeError("no screenshot from the grading sandbox")

    def kill(self) -> None:
        for proc in self.commands.background:
            if proc.poll() is None:
                proc.kill()


def _nesting(value: object) -> int:
    """How deep ``value`` nests (lists and dicts), walked without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, (list, tuple)) else None
        if children is not None:
            deepest = max(deepest, level)
            if level <= MAX_RESULT_DEPTH:
                stack.extend((child, level + 1) for child in children)
    return deepest


def _cut(result: object) -> Any:
    """The result as the host may read it: JSON, at most ``MAX_RESULT_CHARS`` of it and nested at
    most ``MAX_RESULT_DEPTH`` deep; else its text, cut, as a string. (A verifier that printed a
    deeply nested reply failed its check here already; the host refuses a deeper answer whole.)"""
    if _nesting(result) > MAX_RESULT_DEPTH:
        return {"agentbench_truncated": f"nested more than {MAX_RESULT_DEPTH} levels deep"}
    try:
        text = json.dumps(result, default=str)
    except (TypeError, ValueError):
        text = json.dumps(repr(result))
    if len(text) <= MAX_RESULT_CHARS:
        return json.loads(text)
    return {"agentbench_truncated": text[:MAX_RESULT_CHARS]}


def setup(request: dict[str, Any], box: Box) -> dict[str, Any]:
    import evaluation.runtime.sandbox_session as ss
    from evaluation.apps.base import AppContext
    from evaluation.apps.registry import get_app_spec

    task = request["task"]
    spec = get_app_spec(task["app"])
    ctx = AppContext(sandbox=box, app_spec=spec, task=task, env_backend="docker")
    hooks = bool(request.get("hooks", True))
    steps: list[tuple[str, Callable[[], object]]] = [("upload_verifier", lambda: ss.upload_verifier(box, task["app"])),
             ("upload_task_env_files", lambda: ss.upload_task_env_files(box, task))]
    for hook in spec.prepare_task_hooks if hooks else ():
        steps.append(("prepare_task_hook " + hook.__name__, functools.partial(hook, ctx)))
    steps.append(("run_task_setup_scripts", lambda: ss.run_task_setup_scripts(box, task)))
    for hook in spec.prepare_profile_hooks if hooks else ():
        steps.append(("prepare_profile_hook " + hook.__name__, functools.partial(hook, ctx)))
    out: dict[str, Any] = {"steps": [], "error": None}
    for name, step in steps:
        try:
            step()
        except Exception as exc:  # noqa: BLE001 - setup_sandbox_session stops at the first one too
            detail = _one_line(getattr(exc, "stderr", "") or "")
            message = f"{name}: {type(exc).__name__}: {_one_line(exc)}" + (f" ({detail})" if detail else "")
            out["steps"].append({"step": name, "ok": False, "error": message})
            out["error"] = message
            traceback.print_exc(file=sys.stderr)
            break
        out["steps"].append({"step": name, "ok": True, "error": None})
    return out


def verify(request: dict[str, Any], box: Box) -> dict[str, Any]:
    import evaluation.runtime.verification as ver
    from evaluation.apps.registry import get_app_spec

    task = request["task"]
    app = task["app"]
    if not request.get("sleep", False):
        ver.time.sleep = lambda seconds: None  # the 3 s wait is for a running app's auto-save
    ver._llm_judge_criteria = lambda criteria, screenshots, outputs: [
        {"passed": False, "reason": NOT_JUDGED} for _ in criteria]
    saved = None
    if request.get("save"):
        spec = get_app_spec(app)
        if spec.save_shortcut:
            from evaluation.apps.save import auto_save_app

            try:
                saved = auto_save_app(box, app, spec.save_shortcut, save_window_name=spec.save_window_name)
            except Exception as exc:  # noqa: BLE001 - the harness prints and goes on
                saved = {"ok": False, "message": f"{type(exc).__name__}: {_one_line(exc)}"}
    try:
        passed, total, details = ver.verify_task(box, app, task["verification"])
    except Exception as exc:  # noqa: BLE001 - the harness scores such a task 0 with the error
        traceback.print_exc(file=sys.stderr)
        return {"passed": 0, "total": len(task["verification"]), "details": None, "save": saved,
                "error": f"verify_task raised {type(exc).__name__}: {_one_line(exc)}"}
    clean = []
    for entry in details:
        if isinstance(entry, dict):
            entry = dict(entry)
            entry["passed"] = bool(entry.get("passed"))
            for key in ("result", "actual"):
                if key in entry:
                    entry[key] = _cut(entry[key])
            if "expected" in entry:
                entry["expected"] = _cut(entry["expected"])
        clean.append(entry)
    return {"passed": passed, "total": total, "details": clean, "save": saved, "error": None}


def launch(request: dict[str, Any], box: Box) -> dict[str, Any]:
    from evaluation.apps.base import AppContext
    from evaluation.apps.registry import get_app_spec

    task = request["task"]
    spec = get_app_spec(task["app"])
    ctx = AppContext(sandbox=box, app_spec=spec, task=task, env_backend="docker")
    return {"command": spec.build_launch_command(ctx), "error": None}


def _not_dumpable() -> None:
    """Keep the sandbox's other processes (the verifiers, code an end state put in ~/.profile,
    which ``bash -l`` runs) from attaching to this one: same-uid ptrace needs a dumpable target."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass


def main() -> None:
    _not_dumpable()
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkout", required=True)
    parser.add_argument("phase", choices=("setup", "verify", "launch"))
    args = parser.parse_args()
    out = os.fdopen(os.dup(1), "w")
    sys.stdout = sys.stderr  # the harness prints progress; only our answer goes to stdout
    request = json.load(sys.stdin)
    sys.path.insert(0, args.checkout)
    from computer_env.backends import base

    box = Box(base)
    try:
        answer = {"setup": setup, "verify": verify, "launch": launch}[args.phase](request, box)
    finally:
        box.kill()
    json.dump(answer, out)
    out.flush()


if __name__ == "__main__":
    main()
