"""The shared small helpers: one-line text, cutting, the table printer and the PNG size reader."""

from __future__ import annotations

import io

from pytest_agentbench.images import png_size
from pytest_agentbench.text import one_line, render_table, shorten


def test_one_line_collapses_every_whitespace_run():
    assert one_line("  a\n\tb   c \r\n") == "a b c"
    assert one_line(ValueError("bad\nvalue")) == "bad value"


def test_shorten_cut_styles():
    text = "x" * 10
    assert shorten(text, 10) == text  # at the limit: unchanged
    assert shorten(text, 8) == "xxxxx..."  # marker within the limit
    assert shorten(text, 8, "") == "x" * 8  # silent cut
    assert shorten(text, 8, within=False) == "x" * 8 + "..."  # marker after the limit
    assert shorten("a\nb " * 3, 100) == "a b a b a b"


def test_render_table_alignment_rule_and_indent():
    lines = render_table(["name", "n", "note"], [["alpha", "3", "short"], ["b", "12", "a longer note"]],
                         right={1}, indent="  ")
    assert lines == [
        "  name    n  note",
        "  -----  --  -------------",
        "  alpha   3  short",
        "  b      12  a longer note",
    ]
    short = render_table(["name", "details"], [["a", "a long free text"]], short_last_rule=True)
    assert short[1] == "----  -------"
    assert render_table(["only", "header"], []) == ["only  header", "----  ------"]


def test_png_size_reads_the_header_only():
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (37, 21)).save(buf, format="PNG")
    data = buf.getvalue()
    assert png_size(data) == (37, 21)
    assert png_size(data[:24]) == (37, 21)
    assert png_size(data[:23]) is None
    assert png_size(b"GIF89a" + bytes(30)) is None


def test_render_table_without_rule():
    assert render_table(["a", "bb"], [["xyz", "1"]], indent="  ", rule=False) == ["  a    bb", "  xyz  1"]
