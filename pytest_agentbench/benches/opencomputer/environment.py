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

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from pytest_agentbench.benchmark import InfrastructureError
from pytest_agentbench.untrusted import read_text

if TYPE_CHECKING:
    from pytest_agentbench.infra.sandbox import Sandbox

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
        if _place(sandbox, source, entry["sandbox_path"], task_dir, task_id):
            continue
        parent = str(PurePosixPath(entry["sandbox_path"]).parent)
        sandbox.mkdir(parent)
        missing.append(entry)
    if missing:
        create = env_dir / "create_env.py"
        first = env_dir / missing[0]["filename"]
        if not _place(sandbox, create, "/tmp/create_env.py", task_dir, task_id):
            raise InfrastructureError(
                f"task {task_id}: env file {first} does not exist and there is no env/create_env.py to make it")
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


def _place(sandbox: Sandbox, source: Path, sandbox_path: str, task_dir: Path, task_id: str) -> bool:
    """Copy a file of the task folder into the sandbox, read without following a symlink inside
    the task folder (a link there must not bring a host file in); False when it does not exist."""
    try:
        sandbox.place(source, sandbox_path, within=task_dir)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise InfrastructureError(f"task {task_id}: {source} cannot be copied in: it must be a regular file in the "
                                  f"task folder, not a symlink ({exc.strerror or exc})") from None
    return True


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


def _copy_over(source: Path, sandbox: Sandbox) -> None:
    """Lay ``source``'s tree over the sandbox's home without following any symlink, neither one
    already in the home (setup scripts ran there and could have planted one pointing out of the
    sandbox: it is replaced) nor one in ``source`` (copied as a symlink, never read)."""
    from pytest_agentbench.infra import safefs

    try:
        safefs.copy_tree(source, sandbox.home, skip=(DELETED, SNAPSHOT_MARKER), owner=sandbox.owner)
    except safefs.UnsafeEntry as exc:
        raise EndStateError(str(exc)) from None
    except OSError as exc:
        raise EndStateError(f"{source}: cannot be laid over {HOME}: {exc}") from None


def _member_parts(name: str) -> list[str] | None:
    """A tar member's path under ``/home/user`` (the archive may hold ``./x``, ``home/user/x`` or
    ``/home/user/x``); None for the home itself and the folders above it."""
    name = name.lstrip("/")
    while name.startswith("./"):
        name = name[2:]
    if name.rstrip("/") in ("", ".", "home", "home/user"):
        return None
    return name.removeprefix("home/user/").rstrip("/").split("/")


def _extract(tar_path: Path, sandbox: Sandbox) -> None:
    """Extract a tar snapshot into the sandbox's home (see :func:`extract_snapshot`)."""
    extract_snapshot(tar_path, sandbox.home, sandbox.owner)


def extract_snapshot(tar_path: Path, home: Path, owner: tuple[int, int] | None = None) -> None:
    """Extract a tar snapshot into ``home``, by :func:`safefs.extract_tar` (member by member through
    no-follow, descriptor-relative writes, each file given ``owner``)."""
    import tarfile

    from pytest_agentbench.infra import safefs

    try:
        safefs.extract_tar(tar_path, home, name_of=_member_parts, owner=owner, home=HOME,
                           max_members=MAX_TAR_MEMBERS, max_bytes=MAX_TAR_BYTES)
    except safefs.UnsafeEntry as exc:
        raise EndStateError(str(exc)) from None
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise EndStateError(f"{tar_path}: not a usable tar snapshot of {HOME}: {exc}") from None


def is_snapshot(end_state: Path) -> bool:
    """A whole-home snapshot (a tar, or a folder holding ``.snapshot``), not an overlay."""
    return end_state.is_file() or (end_state / SNAPSHOT_MARKER).exists()


@contextlib.contextmanager
def snapshot_tree(end_state: Path) -> Iterator[Path]:
    """A snapshot as a folder: the folder itself, or a tar extracted (by the same rules as into a
    sandbox) into a temporary folder that is removed afterwards. For a container's home, which is
    laid from a folder."""
    if not end_state.is_file():
        yield end_state
        return
    folder = Path(tempfile.mkdtemp(prefix="agentbench-snapshot-"))
    try:
        extract_snapshot(end_state, folder)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def deleted_paths(folder: Path) -> list[PurePosixPath]:
    """The paths ``folder/.deleted`` lists (blank lines and ``#`` comments skipped)."""
    listing = folder / DELETED
    if listing.is_symlink():
        raise EndStateError(f"{listing}: a symlink, not the end state's own list")
    if not listing.exists():
        return []
    try:
        lines = read_text(listing, MAX_DELETED_BYTES, follow_symlinks=False, errors="replace").splitlines()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise EndStateError(f"{listing}: {exc.strerror or exc}") from None
    return [_relative(line, listing) for line in lines if line.strip() and not line.lstrip().startswith("#")]


def lay_end_state(sandbox: Sandbox, end_state: Path) -> list[str]:
    """Lay an end state over the sandbox's home; the paths it removed, relative to ``/home/user``.

    * a folder: an overlay (its paths relative to ``/home/user``; start-state files it does not
      hold stay), then the paths its ``.deleted`` lists are removed;
    * a folder holding ``.snapshot``, or ``<id>.tar[.gz]``: the whole home after the agent's work;
      anything of the start state not in it is gone.

    Nothing is written, read or removed through a symlink found in the sandbox, and symlinks
    inside the end state are copied as symlinks, never read. ``end_state`` itself may be a
    symlink (a folder of end states linking to the runs that made them): it is resolved once and
    read from there. Every form keeps the modes of files and folders as the end state has them, makes
    FIFOs and sockets again and refuses a device node (one rule, :func:`safefs.lay_special`); a tar
    also refuses a symlink that leaves the home and writes a hard link as a copy.
    ``EndStateError`` for a bad end state."""
    from pytest_agentbench.infra import safefs

    end_state = end_state.resolve()
    home = sandbox.home
    if end_state.is_file():
        safefs.empty_dir(home)
        _extract(end_state, sandbox)
        return []
    if (end_state / SNAPSHOT_MARKER).exists():
        safefs.empty_dir(home)
        _copy_over(end_state, sandbox)
        return []
    removals = deleted_paths(end_state)
    _copy_over(end_state, sandbox)
    removed = []
    for rel in removals:
        if sandbox.remove(f"{HOME}/{rel}"):
            removed.append(str(rel))
    return removed
