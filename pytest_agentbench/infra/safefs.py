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
import functools
import os
import stat
from collections.abc import Callable, Iterator, Sequence
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
        _remove_tree(dir_fd, name)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dir_fd)


def _open_for_removal(dir_fd: int, name: str) -> int:
    """A descriptor of the folder ``name`` (no symlink followed), made readable first when its
    mode shuts its owner out (code in the sandbox may leave ``chmod 000`` folders)."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        if not stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            raise
        # no sandboxed process runs while the host removes a tree, so nothing swaps it between
        # the look and the chmod (chmod has no no-follow form on Linux)
        os.chmod(name, 0o700, dir_fd=dir_fd)
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


def _remove_tree(dir_fd: int, name: str) -> None:
    """Remove the folder ``name`` in ``dir_fd`` and all it holds, by descriptor, without following
    a symlink and without recursion: a tree thousands of folders deep (which code in a sandbox
    can make) is removed like a shallow one, where ``shutil.rmtree`` raises ``RecursionError``."""
    stack = [(dir_fd, name, _open_for_removal(dir_fd, name))]
    try:
        while stack:
            parent, entry_name, fd = stack[-1]
            child = None
            with os.scandir(fd) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        child = entry.name
                        break
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(entry.name, dir_fd=fd)
            if child is not None:
                stack.append((fd, child, _open_for_removal(fd, child)))
                continue
            stack.pop()
            os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                os.rmdir(entry_name, dir_fd=parent)
    finally:
        for _, _, fd in stack:
            os.close(fd)


def remove_tree(root: str | Path) -> None:
    """Remove the folder ``root`` (the caller's path, trusted) and everything in it, following no
    symlink inside it and however deep it is (see :func:`_remove_tree`). Missing is fine."""
    path = os.path.abspath(root)
    parent, name = os.path.split(path)
    try:
        fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        remove_at(fd, name)
    finally:
        os.close(fd)


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
            owner: tuple[int, int] | None = None, within: str | Path | None = None) -> None:
    """Copy the host file ``source`` to ``root/relative`` as :func:`write_file` does, keeping its
    permission bits and modification time.

    ``within``: a folder ``source`` lies in (a task folder, a verifiers folder) whose contents are
    not the caller's own: ``source`` is then reached from it without following any symlink, and
    anything but a regular file raises ``OSError`` (a link in a task folder must not copy a host
    file into the sandbox). Without it ``source`` is the caller's and is followed."""
    if within is None:
        src_fd = os.open(source, os.O_RDONLY | os.O_CLOEXEC)
    else:
        src_parts = _parts(PurePosixPath(os.path.relpath(source, within)))
        with open_dir(within, src_parts[:-1]) as folder:
            src_fd = os.open(src_parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    try:
        info = os.fstat(src_fd)
        if within is not None and not stat.S_ISREG(info.st_mode):
            raise OSError(f"{source} is not a regular file")
        parts = _parts(relative)
        with open_dir(root, parts[:-1], create=True, owner=owner) as dir_fd:
            _write_from(functools.partial(os.read, src_fd), dir_fd, parts[-1], stat.S_IMODE(info.st_mode), owner,
                        (info.st_atime_ns, info.st_mtime_ns))
    finally:
        os.close(src_fd)


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


#: How deep a tree copied or extracted into a sandbox may be: far beyond any real home folder, and
#: short of where per-level work (one open per component) and descriptors would add up.
MAX_DEPTH = 128
#: Mode bits kept from an end state: permissions and the sticky bit, not set-user/group-id.
_MODE_BITS = 0o1777


class UnsafeEntry(OSError):
    """An entry of an end state that is never laid into a sandbox (a device node, a hard link or a
    symlink leaving the home in a tar, a tree deeper than :data:`MAX_DEPTH`)."""


def _chown_at(dir_fd: int, name: str, owner: tuple[int, int] | None) -> None:
    if owner is not None:
        os.chown(name, *owner, dir_fd=dir_fd, follow_symlinks=False)


def lay_special(dir_fd: int, name: str, mode: int, owner: tuple[int, int] | None, *, where: str) -> None:
    """Lay a FIFO or socket of an end state as ``name`` in ``dir_fd`` (whatever was there removed):
    a FIFO is made again, a socket is made as a socket file no process listens on (what a socket
    left by an app that has exited is). A device node raises :class:`UnsafeEntry`: it would give
    the sandbox's user the device. The one rule for every form of end state (folder or tar)."""
    if stat.S_ISFIFO(mode):
        remove_at(dir_fd, name)
        os.mkfifo(name, mode & 0o777, dir_fd=dir_fd)
    elif stat.S_ISSOCK(mode):
        import socket

        remove_at(dir_fd, name)
        address = f"/proc/self/fd/{dir_fd}/{name}"  # the folder by descriptor; bind never follows the name
        if len(address.encode()) > 107:
            raise UnsafeEntry(f"{where}: a socket whose name is too long to make again ({len(name)} bytes)")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.bind(address)
    else:
        raise UnsafeEntry(f"{where}: a device node; an end state may not hold one (remove it from the end state)")
    _chown_at(dir_fd, name, owner)
    # just made by this process in a folder no sandboxed process runs in: chmod cannot meet a link
    os.chmod(name, mode & _MODE_BITS, dir_fd=dir_fd)


def _write_from(read: Callable[[int], bytes], dst_fd: int, name: str, mode: int, owner: tuple[int, int] | None,
                times_ns: tuple[int, int] | None) -> int:
    """Write what ``read`` gives into a fresh file ``name``; the bytes written."""
    fd = _create_file(dst_fd, name, 0o600)
    written = 0
    try:
        while chunk := read(_CHUNK):
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]
            written += len(chunk)
        if owner is not None:
            os.fchown(fd, *owner)
        os.fchmod(fd, mode & _MODE_BITS)
        if times_ns is not None:
            os.utime(fd, ns=times_ns)
    finally:
        os.close(fd)
    return written


def copy_tree(source: str | Path, root: str | Path, relative: str | PurePosixPath | Sequence[str] = (), *,
              skip: Sequence[str] = (), owner: tuple[int, int] | None = None, max_depth: int = MAX_DEPTH) -> None:
    """Lay the tree ``source`` over ``root/relative``: its folders made (replacing files or
    symlinks in the way) with their modes, its files written fresh with theirs, its symlinks copied
    as symlinks (never followed, neither in ``source`` nor in the destination), FIFOs and sockets
    made again (:func:`lay_special`; a device node is refused). ``skip``: names at the top of
    ``source`` left out. A folder's mode is set once its contents are in, so a read-only folder
    of the end state is laid whole.

    ``source`` is walked by descriptor too: a symlink inside it is copied as a link, not read.
    Iterative, so depth costs no Python stack; deeper than ``max_depth`` raises :class:`UnsafeEntry`."""
    src_fd = os.open(source, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        with open_dir(root, relative, create=True, owner=owner) as dst_fd:
            _copy_dir(src_fd, dst_fd, set(skip), owner, str(source), max_depth)
    finally:
        os.close(src_fd)


def _copy_dir(src_fd: int, dst_fd: int, skip: set[str], owner: tuple[int, int] | None, where: str,
              max_depth: int) -> None:
    # each level: (its source fd, its destination fd, the names left, its path, its mode and times
    # to set when done; None for the top, which is the caller's)
    top = [e for e in sorted(os.listdir(src_fd)) if e not in skip]
    stack: list[tuple[int, int, list[str], str, os.stat_result | None]] = [(src_fd, dst_fd, top[::-1], where, None)]
    try:
        while stack:
            sfd, dfd, names, path, info_dir = stack[-1]
            if not names:
                stack.pop()
                if info_dir is not None:
                    os.fchmod(dfd, stat.S_IMODE(info_dir.st_mode) & _MODE_BITS)
                    os.utime(dfd, ns=(info_dir.st_atime_ns, info_dir.st_mtime_ns))
                    os.close(sfd)
                    os.close(dfd)
                continue
            entry = names.pop()
            here = f"{path}/{entry}"
            info = os.stat(entry, dir_fd=sfd, follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                if len(stack) > max_depth:
                    raise UnsafeEntry(f"{here}: more than {max_depth} folders deep")
                child_src = os.open(entry, _DIR_FLAGS, dir_fd=sfd)
                try:
                    child_dst = _open_child_dir(dfd, entry, create=True, mode=0o700)
                except BaseException:
                    os.close(child_src)
                    raise
                stack.append((child_src, child_dst, sorted(os.listdir(child_src))[::-1], here, info))
                if owner is not None:
                    os.fchown(child_dst, *owner)
                if not os.access(f"/proc/self/fd/{child_dst}", os.W_OK | os.X_OK):
                    os.fchmod(child_dst, 0o700)  # a folder already there that shuts its owner out
            elif stat.S_ISLNK(info.st_mode):
                target = os.readlink(entry, dir_fd=sfd)
                remove_at(dfd, entry)
                os.symlink(target, entry, dir_fd=dfd)
                _chown_at(dfd, entry, owner)
            elif stat.S_ISREG(info.st_mode):
                src = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=sfd)
                try:
                    _write_from(functools.partial(os.read, src), dfd, entry, stat.S_IMODE(info.st_mode), owner,
                                (info.st_atime_ns, info.st_mtime_ns))
                finally:
                    os.close(src)
            else:
                lay_special(dfd, entry, info.st_mode, owner, where=here)
    finally:
        for sfd, dfd, _, _, info_dir in stack:
            if info_dir is not None:
                os.close(sfd)
                os.close(dfd)


def _link_stays_inside(parts: Sequence[str], target: str, home: str) -> bool:
    """Whether the symlink at ``parts`` (relative to the home) pointing at ``target`` resolves
    inside the home: an absolute target under ``home``, or a relative one that never climbs out."""
    if target.startswith("/"):
        return target == home or target.startswith(home + "/")
    depth = len(parts) - 1
    for part in target.split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return False
        elif part not in ("", "."):
            depth += 1
    return True


def extract_tar(archive: str | Path, root: str | Path, *, name_of: Callable[[str], Sequence[str] | None],
                owner: tuple[int, int] | None = None, home: str = "/home/user", max_members: int = 200_000,
                max_bytes: int = 8 << 30, max_depth: int = MAX_DEPTH) -> None:
    """Extract the tar ``archive`` into ``root`` member by member through this module's writes:
    no member is written through a symlink (one planted, or one the archive made earlier), so
    nothing of the interpreter's ``tarfile`` extraction (and its filters' bugs, CVE-2025-4517 and
    -4330 among them) is trusted.

    ``name_of`` maps a member's name to its path parts under ``root`` (None: left out; ``..`` or an
    absolute path is refused). Files and folders keep their modes (a folder's is set after its
    contents); FIFOs and sockets are made again and device nodes refused (:func:`lay_special`);
    a hard link is written as a copy of the file it names in the archive (read from the archive,
    never from the disk); a symlink whose target leaves ``home`` is refused. Everything written is
    given ``owner``. :class:`UnsafeEntry` for a refused member or a limit passed; ``tarfile``
    errors for a broken archive."""
    import tarfile

    members = total = 0
    folders: list[tuple[list[str], int, int]] = []
    with tarfile.open(archive) as tar:
        for member in tar:
            members += 1
            if members > max_members:
                raise UnsafeEntry(f"{archive}: more than {max_members} members")
            mapped = name_of(member.name)
            if mapped is None:
                continue
            where = f"{archive}: member {member.name!r}"
            parts = _parts_or_none(mapped)
            if parts is None:
                raise UnsafeEntry(f"{where} is not a path inside {home}")
            if len(parts) > max_depth:
                raise UnsafeEntry(f"{where} is more than {max_depth} folders deep")
            mode = member.mode
            if member.isdir():
                with open_dir(root, parts, create=True, owner=owner):
                    pass
                folders.append((parts, mode, int(member.mtime)))
                continue
            with open_dir(root, parts[:-1], create=True, owner=owner) as dir_fd:
                name = parts[-1]
                if member.isreg() or member.islnk():
                    total += member.size
                    if total > max_bytes:
                        raise UnsafeEntry(f"{archive}: more than {max_bytes} bytes once extracted")
                    if member.islnk() and _parts_or_none(name_of(member.linkname)) is None:
                        raise UnsafeEntry(f"{where}: a hard link to {member.linkname!r}, outside {home}")
                    try:  # a hard link reads the data of the member it names from the archive
                        handle = tar.extractfile(member)
                    except KeyError:
                        handle = None
                    if handle is None:
                        raise UnsafeEntry(f"{where}: a hard link to {member.linkname!r}, which is not a file "
                                          "earlier in the archive")
                    with handle:
                        _write_from(handle.read, dir_fd, name, mode, owner, (int(member.mtime) * 10**9,) * 2)
                elif member.issym():
                    if not _link_stays_inside(parts, member.linkname, home):
                        raise UnsafeEntry(f"{where}: a symlink to {member.linkname!r}, which leaves {home}")
                    remove_at(dir_fd, name)
                    os.symlink(member.linkname, name, dir_fd=dir_fd)
                    _chown_at(dir_fd, name, owner)
                elif member.isfifo():
                    lay_special(dir_fd, name, stat.S_IFIFO | mode, owner, where=where)
                else:  # character and block devices (tar holds no sockets)
                    lay_special(dir_fd, name, stat.S_IFCHR | mode, owner, where=where)
        for parts, mode, mtime in sorted(folders, key=lambda f: -len(f[0])):  # deepest first
            with open_dir(root, parts) as fd:
                os.fchmod(fd, mode & _MODE_BITS)
                os.utime(fd, ns=(mtime * 10**9,) * 2)


def _parts_or_none(mapped: Sequence[str] | None) -> list[str] | None:
    if mapped is None:
        return None
    try:
        return _parts(mapped)
    except UnsafePath:
        return None


def empty_dir(root: str | Path) -> None:
    """Remove everything in ``root`` (not ``root`` itself), following no symlink."""
    with open_dir(root) as fd:
        for name in os.listdir(fd):
            remove_at(fd, name)
