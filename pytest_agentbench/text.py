"""Text for terminal lines and one-line errors: whitespace collapsed, long text cut, and the plain
column tables every summary prints. One home, so a message or a table reads the same wherever
it comes from. Pytest-free, imports only the standard library."""

from __future__ import annotations

from collections.abc import Collection, Sequence

#: Control characters shown as ``\\xNN`` instead of sent to the terminal: C0 (but the whitespace
#: that lines are made of), DEL and C1. Checker and verifier output, task files and agent replies
#: are untrusted, and an escape sequence in them could rewrite the screen or the terminal's title.
_VISIBLE = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))
            if chr(code) not in "\t\n\r\x0b\x0c"}


def printable(text: object) -> str:
    """``text`` with its control characters (an ESC starting a terminal escape sequence, say)
    made visible as ``\\xNN``; newlines and tabs stay."""
    return str(text).translate(_VISIBLE)


def one_line(text: object) -> str:
    """``text`` on one line: every run of whitespace (newlines too) becomes one space, and control
    characters are made visible (:func:`printable`)."""
    return " ".join(str(text).translate(_VISIBLE).split())


def shorten(text: object, limit: int, marker: str = "...", *, within: bool = True) -> str:
    """``text`` on one line and cut when longer than ``limit`` characters. A cut line ends with
    ``marker``, which counts toward ``limit`` when ``within`` is true; when false, the line is
    cut at ``limit`` and the marker is added after it. ``marker=""`` cuts silently."""
    line = one_line(text)
    if len(line) <= limit:
        return line
    return line[: limit - len(marker)] + marker if within else line[:limit] + marker


def render_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    right: Collection[int] = (),
    *,
    indent: str = "",
    rule: bool = True,
    short_last_rule: bool = False,
) -> list[str]:
    """A plain-text table: the header, a rule of dashes, then the rows; columns two spaces apart,
    as wide as their widest cell, lines without trailing spaces. ``right`` holds the indexes of
    right-aligned (number) columns; ``indent`` starts every line; ``rule=False`` leaves the rule
    out (a small table inside a failure message). With ``short_last_rule`` the
    last column's rule is only as long as its header (for a free-text column whose cells vary
    widely)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]

    def line(cells: Sequence[str]) -> str:
        out = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        return (indent + "  ".join(out)).rstrip()

    if not rule:
        return [line(header), *(line(r) for r in rows)]
    last = len(widths) - 1
    dashes = ["-" * (len(header[i]) if short_last_rule and i == last else w) for i, w in enumerate(widths)]
    return [line(header), line(dashes), *(line(r) for r in rows)]
