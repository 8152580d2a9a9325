"""Which strings may become pytest node names (task ids, domains, audit task ids).

Task files are untrusted, and their ids end up in node ids, in ``-k`` expressions, in the
terminal and in reports that do not escape them (pytest-html's Test column renders the node id as
HTML). So an id is refused, with the reason, when it holds anything that has a meaning there:
brackets and ``::`` (pytest's own syntax; pytest#15045 drops bracketed names from ``--lf``),
whitespace and control characters (terminal escapes, torn lines), and the HTML markup characters
``< > & " ' ```. Ids are also bounded in length, since every report repeats them.
"""

from __future__ import annotations

import re

#: The longest id accepted (WAA's longest is under 60 characters).
MAX_NAME_LENGTH = 200
MARKUP = frozenset("<>&\"'`")
_REFUSED = re.compile("[\\[\\]" + re.escape("".join(sorted(MARKUP))) + "\\s]")
RULE = ("must not contain brackets, '::', whitespace, control characters or markup characters "
        f"(< > & \" ' `), and must be at most {MAX_NAME_LENGTH} characters")


def name_problem(value: object) -> str | None:
    """Why ``value`` cannot be a node name, or None when it can."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if not value:
        return "must not be empty"
    if len(value) > MAX_NAME_LENGTH:
        return f"is {len(value)} characters long; {RULE}"
    # One regex scan and one C-level check instead of a Python loop per character (ids of every
    # task are checked at collection): ``\s`` is ``str.isspace`` for str patterns.
    if "::" in value or _REFUSED.search(value) or not value.isprintable():
        return RULE
    return None


def shown(value: object, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters, for an error line about a hostile id."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"
