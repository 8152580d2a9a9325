"""File operations on a folder that sandboxed code can write to, done from the host without ever
following a symlink found there.

Why: setup scripts, verifiers and end states run or are written inside a sandbox whose ``home/``
and ``tmp/`` are host folders. Any of them can plant a symlink (``~/verifiers -> /usr/lib``,
``/tmp/create_env.py -> /root/.bashrc``) where the pytest process later writes, reads or
removes. Path-based calls (``shutil.copy2``, ``Path.write_text``, ``Path.mkdir``) follow such
links and act on the host. Everything here walks from an open folder descriptor, one component at
a time, with ``O_NOFOLLOW``: a planted symlink (or a file where a folder is needed) is removed
and replaced by a real folder or file, never followed, and the check and the use are the same
system call, so a process still running in the sandbox cannot swap a link in between.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: How often a component that keeps changing under us is retried before giving up.
_RETRIES = 8
_CHUNK = 1 << 20


class UnsafePath(OSError):
    """A path under the folder cannot be made safe (it keeps changing, or names ``..``)."""


def _parts(relative: str | PurePosixPath | Sequence[str]) -> list[str]:
    parts = list(PurePosixPath(relative).parts) if isinstance(relative, (str, PurePosixPath)) else list(relative)
    if any(p in ("", ".", "..", "/") or "/" in p or "\x00" in p for p in parts):
        raise UnsafePath(f"{'/'.join(parts)!r} is not a plain relative path")
    return parts


def remove_at(dir_fd: int, name: str) -> None:
    """Remove ``name`` in ``dir_fd`` whatever it is (a folder with everything in it), without
    following symlinks. Missing is fine."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        import shutil

        if sys.version_info >= (3, 11):
            shutil.rmtree(name, dir_fd=dir_fd)  # fd-based on Linux: does not follow links inside
        else:  # rmtree takes dir_fd from 3.11; name the folder through the descriptor instead
            shutil.rmtree(os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), name))
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dir_fd)


def _open_child_dir(dir_fd: int, name: str, *, create: bool, mode: int = 0o755) -> int:
    for _ in range(_RETRIES):
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            if not create:
                raise
        except (NotADirectoryError, OSError) as exc:  # ELOOP: a symlink; ENOTDIR: a file
            if not create or isinstance(exc, PermissionError):
                raise
            remove_at(dir_fd, name)
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, mode, dir_fd=dir_fd)
    raise UnsafePath(f"{name!r} keeps changing while it is made a folder")


@contextlib.contextmanager
def open_dir(root: str | Path, relative: str | PurePosixPath | Sequence[str] = (), *, create: bool = False,
             owner: tuple[int, int] | None = None) -> Iterator[int]:
    """A descriptor of ``root/relative`` reached without following symlinks below ``root``
    (``root`` itself is the caller's, trusted). With ``create``, missing folders are made and
    symlinks or files in the way are replaced by folders (given ``owner`` when set)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in _parts(relative):
            child = _open_child_dir(fd, part, create=create)
            os.close(fd)
            fd = child
            if create and owner is not None:
                info = os.fstat(fd)
                if (info.st_uid, info.st_gid) != owner:
                    os.fchown(fd, *owner)
        yield fd
    finally:
        os.close(fd)


def _create_file(dir_fd: int, name: str, mode: int) -> int:
    """A new empty regular file ``name`` in ``dir_fd`` (whatever was there is removed first)."""
    for _ in range(_RETRIES):
        remove_at(dir_fd, name)
        try:  # O_EXCL with O_CREAT never follows a symlink: one planted in between fails here
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
                           dir_fd=dir_fd)
        except FileExistsError:
            continue
    raise UnsafePath(f"{name!r} keeps reappearing while it is written")


def write_file(root: str | Path, relative: str | PurePosixPath, data: bytes, *, mode: int = 0o644,
               owner: tuple[int, int] | None = None) -> None:
    """Write ``data`` to ``root/relative`` as a fresh regular file (parents made), replacing
    whatever was there (a symlink is removed, not followed)."""
    parts = _parts(relative)
    with open_dir(root, parts[:-1], create=True, owner=owner) as dir_fd:
        fd = _create_file(dir_fd, parts[-1], mode)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if owner is not None:
                os.fchown(fd, *owner)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)


def copy_in(source: str | Path, root: str | Path, relative: str | PurePosixPath, *,
            owner: tuple[int, int] | None = None) -> None:
    """Copy the host file ``source`` (followed: it is the caller's) to ``root/relative`` as
    :func:`write_file` does, keeping its permission bits and modification time."""
    parts = _parts(relative)
    with open(source, "rb") as src:
        info = os.fstat(src.fileno())
        mode = stat.S_IMODE(info.st_mode)
        with open_dir(root, parts[:-1], create=True, owner=owner) as dir_fd:
            fd = _create_file(dir_fd, parts[-1], 0o600)
            try:
                while chunk := src.read(_CHUNK):
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(fd, view):]
                if owner is not None:
                    os.fchown(fd, *owner)
                os.fchmod(fd, mode)
                os.utime(fd, ns=(info.st_atime_ns, info.st_mtime_ns))
            finally:
                os.close(fd)


def read_file(root: str | Path, relative: str | PurePosixPath, limit: int) -> bytes:
    """The bytes of the regular file ``root/relative`` (no symlink followed on the way or at the
    end); ``OSError`` for a symlink, a non-regular file or more than ``limit`` bytes."""
    parts = _parts(relative)
    with open_dir(root, parts[:-1]) as dir_fd:
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise OSError(f"{'/'.join(parts)} is not a regular file")
            data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(f"{'/'.join(parts)} is larger than {limit} bytes")
    return data


def remove(root: str | Path, relative: str | PurePosixPath) -> bool:
    """Remove ``root/relative`` (its folders walked without following symlinks; a symlinked
    folder on the way means the path is not there). True when something was removed."""
    parts = _parts(relative)
    try:
        with open_dir(root, parts[:-1]) as dir_fd:
            try:
                os.stat(parts[-1], dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                return False
            remove_at(dir_fd, parts[-1])
            return True
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: a symlink where a folder would be
            return False
        raise


def copy_tree(source: str | Path, root: str | Path, relative: str | PurePosixPath | Sequence[str] = (), *,
              skip: Sequence[str] = (), owner: tuple[int, int] | None = None) -> None:
    """Lay the tree ``source`` over ``root/relative``: its folders made (replacing files or
    symlinks in the way), its files written fresh, its symlinks copied as symlinks (never followed,
    neither in ``source`` nor in the destination). ``skip``: names at the top of ``source`` left out.

    ``source`` is walked by descriptor too: a symlink inside it is copied as a link, not read."""
    src_fd = os.open(source, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        with open_dir(root, relative, create=True, owner=owner) as dst_fd:
            _copy_dir(src_fd, dst_fd, set(skip), owner)
    finally:
        os.close(src_fd)


def _copy_dir(src_fd: int, dst_fd: int, skip: set[str], owner: tuple[int, int] | None) -> None:
    for entry in sorted(os.listdir(src_fd)):
        if entry in skip:
            continue
        info = os.stat(entry, dir_fd=src_fd, follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            child_src = os.open(entry, _DIR_FLAGS, dir_fd=src_fd)
            try:
                child_dst = _open_child_dir(dst_fd, entry, create=True)
                try:
                    if owner is not None:
                        os.fchown(child_dst, *owner)
                    _copy_dir(child_src, child_dst, set(), owner)
                finally:
                    os.close(child_dst)
            finally:
                os.close(child_src)
        elif stat.S_ISLNK(info.st_mode):
            target = os.readlink(entry, dir_fd=src_fd)
            remove_at(dst_fd, entry)
            os.symlink(target, entry, dir_fd=dst_fd)
            if owner is not None:
                os.chown(entry, *owner, dir_fd=dst_fd, follow_symlinks=False)
        elif stat.S_ISREG(info.st_mode):
            src = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=src_fd)
            try:
                fd = _create_file(dst_fd, entry, 0o600)
                try:
                    while chunk := os.read(src, _CHUNK):
                        view = memoryview(chunk)
                        while view:
                            view = view[os.write(fd, view):]
                    if owner is not None:
                        os.fchown(fd, *owner)
                    os.fchmod(fd, stat.S_IMODE(info.st_mode))
                    os.utime(fd, ns=(info.st_atime_ns, info.st_mtime_ns))
                finally:
                    os.close(fd)
            finally:
                os.close(src)
        # sockets, fifos and devices in an end state are left out: nothing to grade in them


def empty_dir(root: str | Path) -> None:
    """Remove everything in ``root`` (not ``root`` itself), following no symlink."""
    with open_dir(root) as fd:
        for name in os.listdir(fd):
            remove_at(fd, name)
