"""A task's start state in a sandbox (its ``env`` files and setup scripts, for the built-in
checker; with a checkout OpenComputer's own harness lays it), and an end state laid over it
(:func:`lay_end_state`: an overlay with a ``.deleted`` list, or a whole-home snapshot).

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

import os
import shutil
from pathlib import Path, PurePosixPath
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


#: An end-state folder holding this file is a whole-home snapshot, not an overlay.
SNAPSHOT_MARKER = ".snapshot"
#: An end-state folder's list of removed paths (relative to /home/user, one per line).
DELETED = ".deleted"
TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz")
MAX_DELETED_BYTES = 1 << 20
#: Limits on a tar snapshot: members and bytes once extracted.
MAX_TAR_MEMBERS = 200_000
MAX_TAR_BYTES = 8 << 30


class EndStateError(ValueError):
    """An end state that cannot be laid; the message names the file and what is wrong."""


def find_end_state(end_state_dir: Path, task_id: str) -> Path | None:
    """``DIR/<id>/`` (an overlay, or a snapshot with ``.snapshot``), or ``DIR/<id>.tar[.gz]``
    (a snapshot); None when the task has none."""
    folder = end_state_dir / task_id
    if folder.is_dir():
        return folder
    for suffix in TAR_SUFFIXES:
        tar = end_state_dir / f"{task_id}{suffix}"
        if tar.is_file():
            return tar
    return None


def _relative(line: str, where: Path) -> PurePosixPath:
    text = line.strip()
    if text.startswith(HOME + "/"):
        text = text[len(HOME) + 1:]
    rel = PurePosixPath(text)
    if rel.is_absolute() or not rel.parts or ".." in rel.parts or "\x00" in text:
        raise EndStateError(f"{where}: {line.strip()!r} is not a path relative to {HOME} (no '..')")
    return rel


def _real_dir(home: Path, rel_parts: tuple[str, ...]) -> Path | None:
    """``home/<parts>`` when every component is a real folder (no symlink), else None."""
    here = home
    for part in rel_parts:
        here = here / part
        if here.is_symlink() or not here.is_dir():
            return None
    return here


def _remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path)


def _copy_over(source: Path, home: Path) -> None:
    """Copy ``source``'s tree onto ``home`` without following any symlink already in ``home``
    (setup scripts ran there and could have planted one pointing out of the sandbox): a symlink
    where the end state has a folder or file is replaced. Symlinks of the end state are copied as
    symlinks."""
    for root, dirs, files in os.walk(source):
        rel = Path(root).relative_to(source)
        target_dir = home / rel
        if target_dir.is_symlink() or (target_dir.exists() and not target_dir.is_dir()):
            target_dir.unlink()
        target_dir.mkdir(exist_ok=True)
        for name in list(dirs):
            if (Path(root) / name).is_symlink():  # os.walk lists links to folders as folders
                dirs.remove(name)
                files.append(name)
        for name in files:
            if rel == Path(".") and name in (DELETED, SNAPSHOT_MARKER):
                continue
            src, dst = Path(root) / name, target_dir / name
            if dst.is_symlink() or dst.is_file():
                dst.unlink()
            elif dst.is_dir():
                shutil.rmtree(dst)
            if src.is_symlink():
                os.symlink(os.readlink(src), dst)
            else:
                shutil.copy2(src, dst, follow_symlinks=False)


def _empty(home: Path) -> None:
    for entry in list(home.iterdir()):
        _remove(entry)


def _extract(tar_path: Path, home: Path) -> None:
    import tarfile

    if not hasattr(tarfile, "data_filter"):
        raise EndStateError(f"{tar_path}: reading tar snapshots needs a Python with tarfile filters (3.10.12+)")
    try:
        with tarfile.open(tar_path) as tar:
            members = []
            total = 0
            for member in tar:
                members.append(member)
                total += max(member.size, 0)
                if len(members) > MAX_TAR_MEMBERS or total > MAX_TAR_BYTES:
                    raise EndStateError(f"{tar_path}: more than {MAX_TAR_MEMBERS} members or {MAX_TAR_BYTES} "
                                        "bytes; a snapshot of /home/user should be smaller")
            for member in members:
                name = member.name
                while name.startswith("./"):
                    name = name[2:]
                if name.startswith("home/user/"):
                    name = name[len("home/user/"):]
                member.name = name
            tar.extractall(home, members=[m for m in members if m.name not in ("", ".", "home", "home/user")],
                           filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise EndStateError(f"{tar_path}: not a usable tar snapshot of {HOME}: {exc}") from None


def deleted_paths(folder: Path) -> list[PurePosixPath]:
    """The paths ``folder/.deleted`` lists (blank lines and ``#`` comments skipped)."""
    listing = folder / DELETED
    if not listing.is_file():
        return []
    if listing.stat().st_size > MAX_DELETED_BYTES:
        raise EndStateError(f"{listing}: more than {MAX_DELETED_BYTES} bytes")
    lines = listing.read_text(encoding="utf-8", errors="replace").splitlines()
    return [_relative(line, listing) for line in lines if line.strip() and not line.lstrip().startswith("#")]


def lay_end_state(sandbox: Sandbox, end_state: Path) -> list[str]:
    """Lay an end state over the sandbox's home; the paths it removed, relative to ``/home/user``.

    * a folder: an overlay (its paths relative to ``/home/user``; start-state files it does not
      hold stay), then the paths its ``.deleted`` lists are removed;
    * a folder holding ``.snapshot``, or ``<id>.tar[.gz]``: the whole home after the agent's work;
      anything of the start state not in it is gone.

    Nothing is written through a symlink found in the sandbox. ``EndStateError`` for a bad end state."""
    home = sandbox.path(HOME)
    if end_state.is_file():
        _empty(home)
        _extract(end_state, home)
        return []
    if (end_state / SNAPSHOT_MARKER).exists():
        _empty(home)
        _copy_over(end_state, home)
        return []
    removals = deleted_paths(end_state)
    _copy_over(end_state, home)
    removed = []
    for rel in removals:
        parent = _real_dir(home, rel.parts[:-1])
        if parent is None:
            continue
        target = parent / rel.parts[-1]
        if target.is_symlink() or target.exists():
            _remove(target)
            removed.append(str(rel))
    return removed
