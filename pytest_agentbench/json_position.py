"""Where a value sits in a JSON text: the offset and the line of the value at a path of keys and indexes.

``json.loads`` forgets where each value was; an error about a user's file (a replay workflow, a
scripted agent's actions) should name the line. Pytest-free, imports only the standard library.
"""

from __future__ import annotations

import json
import re

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")


def _skip(text: str, index: int) -> int:
    match_ = _WS.match(text, index)
    return match_.end() if match_ else index


def json_offset(text: str, path: tuple[str | int, ...]) -> int | None:
    """The character offset of the value at ``path`` (object keys and array indices) in the JSON
    ``text``, or None when the path is not there. A repeated key resolves to its last occurrence,
    as ``json.loads`` does. Each step decodes the values it passes over with the standard decoder,
    so strings holding brackets or quotes cannot mislead it."""
    try:
        index = _skip(text, 0)
        for part in path:
            opener = text[index]
            if opener == "{" and isinstance(part, str):
                found, index = None, _skip(text, index + 1)
                while text[index] != "}":
                    key, index = _DECODER.raw_decode(text, index)
                    index = _skip(text, index)
                    index = _skip(text, index + 1)  # past ':'
                    if key == part:
                        found = index
                    _, index = _DECODER.raw_decode(text, index)
                    index = _skip(text, index)
                    if text[index] == ",":
                        index = _skip(text, index + 1)
                if found is None:
                    return None
                index = found
            elif opener == "[" and isinstance(part, int):
                position, index = 0, _skip(text, index + 1)
                while text[index] != "]" and position < part:
                    _, index = _DECODER.raw_decode(text, index)
                    index = _skip(text, index)
                    if text[index] == ",":
                        index = _skip(text, index + 1)
                    position += 1
                if text[index] == "]":
                    return None
            else:
                return None
        return index
    except (ValueError, IndexError):
        return None


def json_line(text: str, *paths: tuple[str | int, ...]) -> int | None:
    """The 1-based line of the first of ``paths`` found in ``text``."""
    for path in paths:
        offset = json_offset(text, path)
        if offset is not None:
            return text.count("\n", 0, offset) + 1
    return None
