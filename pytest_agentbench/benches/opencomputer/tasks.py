"""OpenComputer task files: ``DIR/<id>/task.json``, checked and turned into ``Task`` objects.

The layout is OpenComputer's own (``task_generator/tasks/<id>/task.json`` with the seed files in
``<id>/env/``, possibly in subfolders such as ``env/project/src/Main.java``), so
``--opencomputer-tasks`` takes that folder, or an OpenComputer checkout (its
``task_generator/tasks`` is used). The folder name is the task id and must equal the file's
``"id"``: the reference harness finds a task's ``env/`` folder by its id, so a mismatch would
silently lose the seed files there.

The reference loader skips files that are not valid JSON. Here a task file that cannot be used
does not stop the run either, but it is not lost: it becomes one item that errors with a one-line
message naming the file and what is wrong (:func:`broken_task`), so ``--bench-task`` and ``-m``
still select the good tasks and the summary still counts the broken one. A folder whose name
cannot be an item id is reported once (a warning) and left out.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_agentbench.model import Task
from pytest_agentbench.untrusted import load_file, loads, read_text

BENCHMARK = "opencomputer"
#: The reference harness's default step limit (``EVAL_MAX_ITERATIONS``); an explicit --bench-max-steps wins.
UPSTREAM_MAX_STEPS = 100
#: App names become domains: pytest markers and node-id parts.
_APP = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_BAD_ID = re.compile(r"[\[\]/\\\s]|::")
#: A command that ``shlex.split`` can split: POSIX shell words where every quote is closed and every
#: backslash escapes a character. ``shlex`` reads a character at a time in Python (0.1 s for an
#: OpenComputer checkout's commands); this regular expression answers the same question in C, and
#: ``shlex`` runs only for the message of a command that fails it (tests/test_opencomputer.py
#: compares the two on random strings).
_SPLITS = re.compile(r"""(?:[^'"\\]|\\.|'[^']*'|"(?:[^"\\]|\\.)*")*""", re.DOTALL)
#: Where env files may go: the sandbox's home and temporary folders (see infra/sandbox.py).
SANDBOX_ROOTS = (PurePosixPath("/home/user"), PurePosixPath("/tmp"))
#: The tag given to tasks with LLM-judged checks (``-k "not llm_judged"`` leaves them out).
LLM_TAG = "llm_judged"


class OpenComputerWarning(UserWarning):
    """Task folders left out of a run (their names cannot be item ids)."""


class OpenComputerTaskError(ValueError):
    """A task folder or task file that cannot be used. The message is one line naming the file."""


def resolve_tasks_dir(path: str | Path) -> Path:
    """The folder holding ``<id>/task.json``: ``path`` itself, or an OpenComputer checkout's
    ``task_generator/tasks``."""
    folder = Path(path)
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise OpenComputerTaskError(f"OpenComputer tasks folder {folder} {what} (--opencomputer-tasks wants "
                                    "a folder of <id>/task.json, e.g. OpenComputer's task_generator/tasks)")
    nested = folder / "task_generator" / "tasks"
    return nested if nested.is_dir() else folder


def task_files(tasks_dir: Path) -> list[Path]:
    """Every ``<id>/task.json`` in the folder, sorted. Folders without one are not tasks.
    ``scandir`` tells folders from files without a ``stat`` each (a checkout has 900)."""
    with os.scandir(tasks_dir) as entries:
        names = sorted(e.name for e in entries if e.is_dir() and os.path.isfile(os.path.join(e.path, "task.json")))
    return [tasks_dir / name / "task.json" for name in names]


def _check(ok: bool, path: Path, message: str) -> None:
    if not ok:
        raise _error(path, message)


def _error(path: Path, message: str) -> OpenComputerTaskError:
    """The error of a bad task file. Checks whose message shows the bad value (``_short``) raise
    it under an ``if``, so that the value's repr is built only for a file that fails: 900 task
    files make some 20,000 checks."""
    return OpenComputerTaskError(f"OpenComputer task file {path}: {message}")


def _short(value: Any) -> str:
    return " ".join(repr(value).split())[:80]


def check_sandbox_path(value: Any, path: Path, where: str) -> str:
    if not (isinstance(value, str) and value != ""):
        raise _error(path, f"{where}: 'sandbox_path' must be a path string, got {_short(value)}")
    _check(inside_sandbox(value), path, f"{where}: 'sandbox_path' {value!r} must be a file under /home/user or /tmp "
                         "(the sandbox's writable folders)")
    return value


def inside_sandbox(value: str) -> bool:
    """Whether ``value`` names a path strictly below one of :data:`SANDBOX_ROOTS`, with no ``..``.

    The answer ``PurePosixPath`` gives (``pure.is_absolute()``, no ``..`` part, a root among
    ``pure.parents``), from string operations: building the paths cost more than the rest of a
    task file's checks. As in ``pathlib``, empty and ``.`` parts do not count, and exactly two
    leading slashes are a root of their own, so ``//tmp/x`` is not under ``/tmp``
    (tests/test_opencomputer.py compares the two on random strings)."""
    if not value.startswith("/") or (value.startswith("//") and not value.startswith("///")):
        return False
    parts = [part for part in value.split("/") if part not in ("", ".")]
    if ".." in parts:
        return False
    return any(len(parts) > len(root.parts) - 1 and tuple(parts[:len(root.parts) - 1]) == root.parts[1:]
               for root in SANDBOX_ROOTS)


def _check_env(env: Any, path: Path) -> None:
    _check(isinstance(env, dict), path, f"'env' must be an object, got {type(env).__name__}")
    files = env.get("files", [])
    _check(isinstance(files, list), path, f"'env.files' must be a list, got {type(files).__name__}")
    for i, entry in enumerate(files):
        where = f"env.files[{i}]"
        if not isinstance(entry, dict):
            raise _error(path, f"{where} must be an object, got {_short(entry)}")
        name = entry.get("filename")
        if not is_env_filename(name):
            raise _error(path, f"{where}: 'filename' must be a relative path inside the task's env/ folder, "
                               f"got {_short(name)}")
        check_sandbox_path(entry.get("sandbox_path"), path, where)


def is_env_filename(name: Any) -> bool:
    """A relative path inside ``env/`` (subfolders allowed, as OpenComputer allows them): no
    absolute path, no ``..``, no empty or ``.`` parts, no backslashes."""
    if not isinstance(name, str) or name == "" or "\\" in name or "\x00" in name:
        return False
    parts = name.split("/")
    return not name.startswith("/") and all(part not in ("", ".", "..") for part in parts)


def check_kind(check: dict[str, Any]) -> str:
    """``llm``, ``eval`` or ``key`` (the reference's order: a judge first, then ``eval``, which wins
    over ``expected`` when both are present)."""
    if "judge" in check:
        return "llm"
    return "eval" if "eval" in check else "key"


def _check_verification(checks: Any, path: Path) -> None:
    if not (isinstance(checks, list) and len(checks) > 0):
        raise _error(path, f"'verification' must be a non-empty list of checks, got {_short(checks)}")
    for i, check in enumerate(checks):
        where = f"verification[{i}]"
        if not isinstance(check, dict):
            raise _error(path, f"{where} must be an object, got {_short(check)}")
        kind = check_kind(check)
        command = check.get("command")
        if kind == "llm":
            if check["judge"] != "llm":
                raise _error(path, f"{where}: 'judge' must be \"llm\", got {_short(check['judge'])}")
            _check(isinstance(check.get("prompt"), str) and check["prompt"].strip() != "", path,
                   f"{where}: an LLM-judged check needs a 'prompt' string")
            if command is None:
                continue
        if not (isinstance(command, str) and command.strip() != ""):
            raise _error(path, f"{where}: 'command' must be a verifier subcommand with its arguments, "
                               f"got {_short(command)}")
        try:
            if _SPLITS.fullmatch(command) is None:
                shlex.split(command)
        except ValueError as exc:
            raise OpenComputerTaskError(f"OpenComputer task file {path}: {where}: 'command' cannot be split "
                                        f"into arguments ({exc}): {command!r}") from None
        if kind == "eval":
            expr = check["eval"]
            _check(isinstance(expr, str) and expr.strip() != "", path,
                   f"{where}: 'eval' must be a Python expression string")
            try:
                compile(expr, f"{path}:{where}", "eval")
            except SyntaxError as exc:
                raise OpenComputerTaskError(f"OpenComputer task file {path}: {where}: 'eval' is not a Python "
                                            f"expression ({exc.msg}): {expr!r}") from None
        elif kind == "key":
            _check(isinstance(check.get("key"), str) and check["key"] != "", path,
                   f"{where}: a check needs 'key' and 'expected', an 'eval' expression, or 'judge': \"llm\"")
            _check("expected" in check, path, f"{where}: a 'key' check needs 'expected'")
        if "description" in check:
            _check(isinstance(check["description"], str), path, f"{where}: 'description' must be a string")


def check_task_json(data: Any, path: Path) -> dict[str, Any]:
    """Raise ``OpenComputerTaskError`` unless ``data`` is a usable OpenComputer task."""
    if not isinstance(data, dict):
        raise _error(path, f"the top level must be an object, got {type(data).__name__}")
    task_id = data.get("id")
    if not (isinstance(task_id, str) and task_id != ""):
        raise _error(path, f"'id' must be a non-empty string, got {_short(task_id)}")
    _check(not _BAD_ID.search(task_id) and task_id not in (".", ".."), path,
           f"task id {task_id!r} cannot be a pytest node id (no brackets, '::', slashes or whitespace)")
    _check(task_id == path.parent.name, path,
           f"'id' {task_id!r} differs from its folder name {path.parent.name!r}; rename one so they match")
    app = data.get("app")
    if not (isinstance(app, str) and _APP.match(app)):
        raise _error(path, f"'app' must be an app name (letters, digits and '_', not starting with a digit), "
                           f"got {_short(app)}")
    instruction = data.get("task")
    if not (isinstance(instruction, str) and instruction.strip() != ""):
        raise _error(path, f"'task' (the instruction) must be a non-empty string, got {_short(instruction)}")
    if "env" in data:
        _check_env(data["env"], path)
    _check_verification(data.get("verification"), path)
    if "metadata" in data:
        _check(isinstance(data["metadata"], dict), path,
               f"'metadata' must be an object, got {type(data['metadata']).__name__}")
    return data


#: A task file larger than this is refused unread (OpenComputer's largest is about 20 kB).
MAX_TASK_BYTES = 1 << 20
#: ``raw_config`` key of a task that cannot be used (:func:`broken_task`): the one-line reason.
BROKEN = "agentbench_broken"
#: The domain of a broken task whose app cannot be read.
BROKEN_DOMAIN = "invalid_task"


def read_task(path: Path) -> Task:
    """One ``task.json`` as a ``Task``: the app is the domain, the whole file is ``raw_config``."""
    try:
        # never through a symlink (a link in a task folder must not read a host file), never a FIFO
        text = read_text(path, MAX_TASK_BYTES, follow_symlinks=False)
    except UnicodeDecodeError as exc:
        raise OpenComputerTaskError(f"OpenComputer task file {path}: not UTF-8 ({exc.reason})") from None
    except OSError as exc:
        raise OpenComputerTaskError(f"OpenComputer task file {path} cannot be read: {exc.strerror or exc}") from None
    try:
        data = loads(text)
    except json.JSONDecodeError as exc:
        raise OpenComputerTaskError(f"OpenComputer task file {path}: not valid JSON: {exc}") from None
    check_task_json(data, path)
    llm = any(check_kind(c) == "llm" for c in data["verification"])
    return Task(
        task_id=data["id"],
        instruction=data["task"].strip(),
        domain=data["app"],
        benchmark=BENCHMARK,
        time_limit_steps=UPSTREAM_MAX_STEPS,
        tags=[LLM_TAG] if llm else [],
        raw_config=data,
    )


def usable_id(name: str) -> bool:
    """Whether a folder name can be an item id."""
    return bool(name) and not _BAD_ID.search(name) and name not in (".", "..")


def broken_task(path: Path, message: str) -> Task:
    """A task file that cannot be used, as a task whose item errors with ``message``. Its domain
    is the file's ``app`` when that much can be read (so ``-m <app>`` still shows it), else
    ``invalid_task``."""
    app = BROKEN_DOMAIN
    try:
        data = load_file(path, MAX_TASK_BYTES, follow_symlinks=False)
    except (OSError, ValueError):
        data = None
    if isinstance(data, dict) and isinstance(data.get("app"), str) and _APP.match(data["app"]):
        app = data["app"]
    return Task(task_id=path.parent.name, domain=app, benchmark=BENCHMARK, tags=[BROKEN_DOMAIN],
                raw_config={BROKEN: message, "app": app})


def load_tasks(tasks_dir: Path) -> tuple[list[Task], list[str]]:
    """All tasks of the folder, and one line per folder left out (its name cannot be an item id).
    A task file that cannot be used is a :func:`broken_task`, not an exception."""
    files = task_files(tasks_dir)
    if not files:
        raise OpenComputerTaskError(f"OpenComputer tasks folder {tasks_dir} holds no <id>/task.json files "
                                    "(--opencomputer-tasks wants OpenComputer's task_generator/tasks layout)")
    tasks: list[Task] = []
    left_out: list[str] = []
    for path in files:
        if not usable_id(path.parent.name):
            left_out.append(f"OpenComputer task folder {path.parent}: its name cannot be a pytest node id "
                            "(no brackets, '::' or whitespace); rename it to use the task")
            continue
        try:
            tasks.append(read_task(path))
        except OpenComputerTaskError as exc:
            tasks.append(broken_task(path, str(exc)))
    return tasks, left_out
