"""Keeping API keys out of every file a run writes.

Why more than an exact match: a model that echoes its key rarely echoes it whole and plain. It
quotes a piece of it, spells it backwards, or hands it on base64-encoded inside a larger blob,
and each of those was stored in the records, the trajectories, the viewer and the Inspect log.
:func:`redact` replaces every run of key-like characters (letters, digits, ``-_+/=``) that holds
12 or more characters of a known key's body (after its ``sk-ant-api03-``-style prefix), of the
body reversed, or of the key's base64 or URL-safe base64 at each of the three byte alignments it
can have inside a longer encoded string. Any ``sk-ant-`` key, known or not, goes too.

The keys are the one the Claude agent was given (:func:`register`) and the values of the
environment's ``*_API_KEY`` variables; their 12-character pieces are computed once per process, and
a write when no key is known costs one substring test. Every writer of a run file calls
:func:`redact` (``RunFolder``, ``files.write_atomic``, ``record.streamed``). Pytest-free,
standard library only.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable
from typing import NamedTuple

#: The replacement of a key, or of a run of characters holding a piece of one.
MARK = "[redacted]"
#: How many characters of a key's body identify it (about 70 bits of a random key).
PIECE = 12
#: The first look's pieces, tried every ``_STEP`` characters (``_SHORT + _STEP - 1 <= PIECE``).
_SHORT, _STEP = 8, 4
#: A value shorter than this is not taken for a key (``*_API_KEY=x`` in a test environment).
MIN_KEY = 16
#: A prefix that every key of its kind shares, so it identifies no key: left out of the pieces.
_PREFIX = re.compile(r"^(?:sk-ant-[a-z]+\d*-|sk-ant-|sk-proj-|sk-|ghp_|github_pat_|xox[abp]-)")
#: Any Anthropic key, known or not.
_ANY_ANTHROPIC = re.compile(r"sk-ant-[A-Za-z0-9_\-]{4,}")
#: A run of characters a key, its reverse or its base64 is made of.
_RUN = re.compile(rf"[A-Za-z0-9+/=_\-]{{{PIECE},}}")

_registered: set[str] = set()
_pieces: Pieces | None = None
_pieces_for: tuple[str, ...] | None = None
_stale = True


def register(key: str) -> None:
    """Redact ``key`` (an API key this process holds) from every file written from now on."""
    global _stale
    key = key.strip()
    if len(key) >= MIN_KEY and key not in _registered:
        _registered.add(key)
        _stale = True


def refresh() -> None:
    """Read the environment's keys again at the next write (a run folder is opened: a new run)."""
    global _stale
    _stale = True


def _known_keys() -> tuple[str, ...]:
    env = (value.strip() for name, value in os.environ.items() if name.upper().endswith("API_KEY"))
    return tuple(sorted({*_registered, *(v for v in env if len(v) >= MIN_KEY)}))


def _base64_middles(key: str) -> Iterable[str]:
    """The base64 (standard and URL-safe) characters that encode only ``key``'s bytes, for the
    key starting at each byte offset mod 3 of a longer encoded string."""
    data = key.encode("utf-8")
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + data).decode("ascii")
        first = -(-8 * offset // 6)  # the characters holding a bit of the bytes before the key
        last = 8 * (offset + len(data)) // 6  # after it: characters holding a bit of the next bytes
        middle = encoded[first:last]
        yield middle
        yield middle.replace("+", "-").replace("/", "_")


class Pieces(NamedTuple):
    """The pieces of some keys to look for: every ``PIECE``-character one, and every 8-character
    one (the cheap first look: see :func:`_holds`)."""

    long: frozenset[str]
    short: frozenset[str]


NONE = Pieces(frozenset(), frozenset())


def pieces_of(keys: Iterable[str]) -> Pieces:
    """Every ``PIECE``-character piece of each key's body, its reverse and its base64 forms."""
    out: set[str] = set()
    for key in keys:
        prefix = _PREFIX.match(key)
        body = key[prefix.end():] if prefix else key
        for text in (body, body[::-1], *_base64_middles(key)):
            out.update(text[i:i + PIECE] for i in range(len(text) - PIECE + 1))
    return Pieces(frozenset(out), frozenset(p[k:k + _SHORT] for p in out for k in range(PIECE - _SHORT + 1)))


def _current() -> Pieces:
    """This process's pieces, looked up again only at the first write after :func:`register` or
    :func:`refresh` (reading the environment per write would cost more than the record)."""
    global _pieces, _pieces_for, _stale
    if _stale or _pieces is None:
        keys = _known_keys()
        if keys != _pieces_for or _pieces is None:
            _pieces, _pieces_for = pieces_of(keys), keys
        _stale = False
    return _pieces


def _holds(run: str, pieces: Pieces, *, confirm: bool = True) -> bool:
    """Whether ``run`` holds a ``PIECE``-character piece. A common stretch of 12 characters or
    more holds an 8-character piece starting at a multiple of 4, so only those are looked up
    first (a quarter of the positions); a hit is confirmed on the 12-character windows around it
    (``confirm=False``: the 8-character hit is enough, for a first look at a whole text)."""
    short, long, end = pieces.short, pieces.long, len(run) - PIECE
    for i in range(0, len(run) - _SHORT + 1, _STEP):
        if run[i:i + _SHORT] in short and (not confirm or any(
                run[j:j + PIECE] in long for j in range(max(0, i + _SHORT - PIECE), min(i, end) + 1))):
            return True
    return False


def redact(text: str, pieces: Pieces | None = None) -> str:
    """``text`` with every known key, and every run of key characters holding a piece of one
    (see the module docstring), replaced by ``[redacted]``. ``pieces``: :func:`pieces_of` of the
    keys to look for (default: this process's keys)."""
    if "sk-ant-" in text:
        text = _ANY_ANTHROPIC.sub(MARK, text)
    pieces = _current() if pieces is None else pieces
    if not pieces.long or not _holds(text, pieces, confirm=False):
        return text  # the usual case: not one piece in the whole text, looked at every 4th character
    def check(match: re.Match[str]) -> str:
        run = match.group()  # a JSON number stays one: a mark there would not be JSON
        return MARK if not run.lstrip("-").isdigit() and _holds(run, pieces) else run

    return _RUN.sub(check, text)
