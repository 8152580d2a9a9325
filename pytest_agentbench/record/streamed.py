"""Writing a big run file piece by piece, so that readers never see half of it: through a fresh
temporary file beside it and a rename, as ``files.write_atomic`` does for a file given whole.

The end of a run writes summary.json and viewer.html, each several megabytes for a few thousand
tasks; building either as one string first (and its UTF-8 bytes after) was most of the run's
peak memory. Pieces go through one buffered handle instead, so the memory is the buffer's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import IO, Any

from pytest_agentbench.redact import redact

#: The write buffer: the many small pieces of a page cost few system calls, and the buffer,
#: allocated whole, stays small beside the run's records.
BUFFER = 64 * 1024


@contextmanager
def replacing(path: Path, *, tmp: Path | None = None, mode: int = 0o666) -> Iterator[IO[bytes]]:
    """A binary handle on a new temporary file (default ``path`` + ``.tmp``, created fresh, never
    through a symbolic link left at its name, ``mode`` less the umask) that replaces ``path``
    when the block ends. On any error the temporary file is removed and ``path`` is untouched."""
    tmp = tmp if tmp is not None else path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    try:
        with os.fdopen(fd, "wb", buffering=BUFFER) as handle:
            yield handle
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_pieces(path: Path, pieces: Iterable[str], *, tmp: Path | None = None, mode: int = 0o666) -> Path:
    """Write ``pieces`` as UTF-8 (unencodable characters replaced) to ``path``, atomically."""
    with replacing(path, tmp=tmp, mode=mode) as handle:
        for piece in pieces:  # a piece ends between JSON values, never inside a string
            handle.write(redact(piece).encode("utf-8", "replace"))
    return path


def json_pieces(data: Any, *, indent: int | None = 2, sort_keys: bool = True) -> Iterator[str]:
    """``json.dumps(data, indent=indent, sort_keys=sort_keys)`` in pieces of a few thousand of the
    encoder's chunks each: the same text, without the whole of it in memory at once."""
    chunks = json.JSONEncoder(indent=indent, sort_keys=sort_keys).iterencode(data)
    while batch := list(islice(chunks, 4096)):  # taken and joined in C: no Python step per chunk
        yield "".join(batch)


def json_pieces_with_rows(data: dict[str, Any], key: str, rows: Iterable[Any]) -> Iterator[str]:
    """The compact JSON of ``{**data, key: list(rows)}`` (keys sorted) in pieces, taking ``rows``
    one at a time: a row list built whole (summary.json's one row per task) would sit on top of
    the records it is made from for as long as the file is written.

    Compact, because only ``JSONEncoder.encode`` without an indent runs in C: indented or
    streamed through ``iterencode``, the encoder is pure Python, and at a few thousand tasks it was
    a twelfth of the whole run. Each row is encoded whole and stands on a line of its own, so the
    file still reads (and greps) one task per line; ``python -m json.tool`` indents it."""
    if key in data:
        raise ValueError(f"{key!r} is in the data already; it is the key the rows are written under")
    encode = json.JSONEncoder(separators=(",", ":"), sort_keys=True).encode
    yield "{"
    for number, name in enumerate(sorted([*data, key])):
        yield ("," if number else "") + encode(name) + ":"
        if name != key:
            yield encode(data[name])
            continue
        empty = True
        for row in rows:
            yield ("[\n" if empty else ",\n") + encode(row)
            empty = False
        yield "[]" if empty else "\n]"
    yield "}\n"
