"""Reading input that someone else wrote: files given on the command line or found in a run or
task folder, and JSON replies of verifiers, checkers, harnesses and agents.

Why one place: each reader bounding its input on its own left some without bounds. A FIFO or
``/dev/zero`` named as a task file, a baseline or a trace hung the run or grew it to gigabytes,
and a JSON document nested a few thousand levels deep raised ``RecursionError`` (a pytest
INTERNALERROR) in every reader, or later in whatever walked the value. Here a file is read only
when it is a regular file, never blocking and never past a size bound, and JSON deeper than
:data:`MAX_DEPTH` is a ``json.JSONDecodeError`` like any other bad JSON, so each reader's own
"not valid JSON" line and path apply. Pytest-free, standard library only.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Iterator
from itertools import accumulate
from pathlib import Path
from typing import Any

#: How deep a JSON document read from outside may nest. Real task files, records and traces
#: stay under 30; 200 is jiter's (pydantic's JSON parser's) default, and far enough under the
#: interpreter's recursion limit that the value can still be encoded, validated and compared.
MAX_DEPTH = 200
#: The bound of :func:`read_bytes` when the caller names none.
MAX_INPUT_BYTES = 256 << 20

_TEXT_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BYTES_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_TEXT_OTHER = re.compile(r"[^\[\]{}]+")
_BYTES_OTHER = re.compile(rb"[^\[\]{}]+")
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1, 91: 1, 123: 1, 93: -1, 125: -1}


class NotRegularFile(OSError):
    """An input path names a FIFO, a device, a socket or a folder, not a file."""


class InputTooBig(OSError):
    """An input file is bigger than its reader's bound."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def file_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be read as an input file (``does not exist``, ``is a FIFO, not a
    regular file``), or None when it is a regular file. For a check at configure time, before
    the run; :func:`read_bytes` checks again on the descriptor it reads."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return "does not exist" if isinstance(exc, FileNotFoundError) else f"cannot be read: {exc.strerror or exc}"
    if stat.S_ISREG(mode):
        return None
    what = _kind(mode)
    return f"is {what}, not a regular file" if what.startswith("a ") else f"is {what}"


def _open_regular(path: str | os.PathLike[str], limit: int, follow_symlinks: bool) -> int:
    """A descriptor on the regular file ``path`` of at most ``limit`` bytes (see :func:`read_bytes`)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_BINARY", 0)
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            what = _kind(info.st_mode)
            reason = f"it is {what}, not a regular file" if what.startswith("a ") else what
            raise NotRegularFile(errno.EINVAL, reason, os.fspath(path))
        if info.st_size > limit:
            raise InputTooBig(errno.EFBIG, f"{info.st_size} bytes, more than the {limit} allowed", os.fspath(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_lines(path: str | os.PathLike[str], limit: int = MAX_INPUT_BYTES, *,
               errors: str = "strict") -> Iterator[str]:
    """The lines of the regular file ``path`` (each with its newline, the last one without when
    the file does not end with one), decoded as UTF-8, read as they are asked for: a reader that
    keeps a little of each line (a comparison, a resume) never holds the whole file. The checks
    of :func:`read_bytes`; a file that grows past ``limit`` while read is :class:`InputTooBig`."""
    fd = _open_regular(path, limit, True)
    with os.fdopen(fd, "r", encoding="utf-8", errors=errors, newline="\n") as handle:
        size = 0
        for line in handle:
            size += len(line)  # characters: at most the bytes they came from
            if size > limit:
                raise InputTooBig(errno.EFBIG, f"more than the {limit} bytes allowed", os.fspath(path))
            yield line


def read_bytes(path: str | os.PathLike[str], limit: int = MAX_INPUT_BYTES, *, follow_symlinks: bool = True) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    Opened non-blocking, so a FIFO cannot hang the open; then checked on the open descriptor (no
    race with a swap of the path): anything but a regular file is :class:`NotRegularFile`, a file
    over ``limit`` (or one that grows past it while read) is :class:`InputTooBig`. Both are
    OSErrors whose ``strerror`` is the reason, so a reader's ``cannot read X: {strerror}`` line
    says it. ``follow_symlinks=False`` refuses a symbolic link at ``path`` itself (ELOOP)."""
    fd = _open_regular(path, limit, follow_symlinks)
    try:
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise InputTooBig(errno.EFBIG, f"more than the {limit} bytes allowed", os.fspath(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike[str], limit: int = MAX_INPUT_BYTES, *, follow_symlinks: bool = True,
              errors: str = "strict") -> str:
    """:func:`read_bytes` decoded as UTF-8 (``UnicodeDecodeError`` when it is not, unless
    ``errors`` says otherwise)."""
    return read_bytes(path, limit, follow_symlinks=follow_symlinks).decode("utf-8", errors)


def depth(text: str | bytes) -> int:
    """How deep the JSON ``text`` nests (0 for a scalar). Strings are cut out first, so brackets
    inside them do not count; done with C-level regular expressions and ``accumulate``."""
    if isinstance(text, str):
        brackets: str | bytes = _TEXT_OTHER.sub("", _TEXT_STRING.sub("", text))
    else:
        brackets = _BYTES_OTHER.sub(b"", _BYTES_STRING.sub(b"", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def _too_deep(text: str | bytes) -> json.JSONDecodeError:
    """The error for a document past :data:`MAX_DEPTH`, at the bracket that passes it."""
    shown = text if isinstance(text, str) else text.decode("utf-8", "replace")
    level = position = 0
    for token in _TOKEN.finditer(shown):  # only for the error: strings skipped whole
        char = token.group()[0]
        if char != '"':
            level += 1 if char in "[{" else -1
            if level > MAX_DEPTH:
                position = token.start()
                break
    return json.JSONDecodeError(f"nested more than {MAX_DEPTH} levels deep", shown, position)


def too_deep(text: str | bytes) -> bool:
    """Whether the JSON ``text`` nests deeper than :data:`MAX_DEPTH`. Measured only when it holds
    more opening brackets than that (never for the usual small document or JSON line)."""
    opened = text.count("[") + text.count("{") if isinstance(text, str) else text.count(b"[") + text.count(b"{")
    return opened > MAX_DEPTH and depth(text) > MAX_DEPTH


def loads(text: str | bytes) -> Any:
    """``json.loads`` for untrusted text: a document nested deeper than :data:`MAX_DEPTH` raises
    ``json.JSONDecodeError`` (a ValueError) with its position, as malformed JSON does, instead of
    ``RecursionError`` now or in the code that walks the value later."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise _too_deep(text) from None
    if too_deep(text):
        raise _too_deep(text)
    return value


def load_file(path: str | Path, limit: int = MAX_INPUT_BYTES, *, follow_symlinks: bool = True) -> Any:
    """The JSON value of the file ``path``: :func:`read_text` then :func:`loads`. OSError,
    UnicodeDecodeError and JSONDecodeError as those raise them."""
    return loads(read_text(path, limit, follow_symlinks=follow_symlinks))
