"""A task's start state in a sandbox (its ``env`` files and setup scripts), and an end state laid
over it.

The order is the reference harness's (``upload_task_env_files``, then ``run_task_setup_scripts``):

1. each ``env.files`` entry is copied from ``<task>/env/<filename>`` to its ``sandbox_path``;
2. if any is missing and ``env/create_env.py`` exists, it is placed at ``/tmp/create_env.py`` and
   run with ``python3`` (timeout 120 s);
3. every entry whose ``filename`` starts with ``setup_`` is run where it was placed: ``.py`` with
   ``python3``, ``.sh`` with ``bash``, anything else directly (timeout 60 s each).

Differences from the reference: a seed file that is still missing after step 2 is an
infrastructure error naming the file (the reference continues without it), and a failing
``create_env.py`` is not retried after ``pip install``-ing python-docx, python-pptx and openpyxl
(the sandbox has no network): install what it needs in the sandbox's Python instead.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...benchmark import InfrastructureError

if TYPE_CHECKING:
    from ...infra.sandbox import Sandbox

CREATE_ENV_TIMEOUT = 120.0
SETUP_TIMEOUT = 60.0
HOME = "/home/user"


def prepare(sandbox: Sandbox, task_dir: Path, task: dict[str, Any]) -> None:
    """Lay out the task's start state in ``sandbox``. ``InfrastructureError`` when it cannot."""
    task_id = task["id"]
    env_dir = task_dir / "env"
    files: list[dict[str, Any]] = list(task.get("env", {}).get("files", []))
    missing: list[dict[str, Any]] = []
    for entry in files:
        source = env_dir / entry["filename"]
        if source.is_file():
            sandbox.place(source, entry["sandbox_path"])
        else:
            sandbox.path(entry["sandbox_path"]).parent.mkdir(parents=True, exist_ok=True)
            missing.append(entry)
    if missing:
        create = env_dir / "create_env.py"
        first = env_dir / missing[0]["filename"]
        if not create.is_file():
            raise InfrastructureError(
                f"task {task_id}: env file {first} does not exist and there is no env/create_env.py to make it")
        sandbox.place(create, "/tmp/create_env.py")
        sandbox.localize("/tmp/create_env.py")
        done = sandbox.run(["python3", "/tmp/create_env.py"], timeout=CREATE_ENV_TIMEOUT)
        if not done.ok:
            raise InfrastructureError(f"task {task_id}: env/create_env.py {done.summary()}")
        still = [e for e in missing if not sandbox.path(e["sandbox_path"]).exists()]
        if still:
            raise InfrastructureError(f"task {task_id}: env/create_env.py ran but did not make "
                                      f"{still[0]['sandbox_path']} (env file {still[0]['filename']})")
    for entry in files:
        if not entry["filename"].startswith("setup_"):
            continue
        where = entry["sandbox_path"]
        sandbox.localize(where)
        argv = ["python3", where] if where.endswith(".py") else ["bash", where] if where.endswith(".sh") else [where]
        done = sandbox.run(argv, timeout=SETUP_TIMEOUT)
        if not done.ok:
            raise InfrastructureError(f"task {task_id}: setup script {where} {done.summary()}")


def lay_end_state(sandbox: Sandbox, folder: Path) -> None:
    """Copy the end state ``folder`` (its paths relative to ``/home/user``) over the sandbox's home.

    An overlay: files of the start state that the end state does not hold stay as they were."""
    shutil.copytree(folder, sandbox.path(HOME), symlinks=True, dirs_exist_ok=True)
