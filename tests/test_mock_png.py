"""The mock window's PNG encoder (reused template bands) gives the image itself, whatever changed."""

from __future__ import annotations

import io
import os
import zlib

import pytest
from PIL import Image, ImageChops

from pytest_agentbench.benches.mock import bench
from pytest_agentbench.benches.mock.png import BAND_ROWS, BandedEncoder, _adler32_combine


@pytest.mark.parametrize("task_id, step, typed, clicked", [
    ("mock_chrome_001", 0, "", []),
    ("mock_notepad_042", 1, "", ["4"]),
    ("mock_clock_007", 2, "hello", ["1", "2", "3"]),
    ("mock_vlc_100", 9, "a long line\n" * 60, ["2"]),  # typed text down to the bottom rows
    ("mock_msedge_003", 3, "gjpqy_|" * 40, ["1", "2", "3", "4"]),  # descenders; wider than the field
    ("mock_settings_999", 12345, "\n\n\nthree lines down", ["3"]),
    ("mock_chrome_001", 0, "", []),  # again: a band kept from the screens above must not leak in
])
def test_the_png_is_the_drawn_window(task_id: str, step: int, typed: str, clicked: list[str]) -> None:
    png = bench.render_window(task_id, step, typed, clicked)
    decoded = Image.open(io.BytesIO(png))
    decoded.load()  # a bad checksum or a broken deflate stream raises here
    expected = Image.new("RGB", bench.SCREEN, "#eef0f3")  # as the window was drawn before its canvas was kept
    bench._draw(expected, f"task {task_id} - step {step}", typed, clicked)
    assert decoded.mode == "RGB" and decoded.size == bench.SCREEN
    assert ImageChops.difference(decoded, expected).getbbox() is None


def test_a_screen_read_twice_in_a_row_is_the_same_png() -> None:
    """The second encoding reuses the bands the first deflated: the bytes must not change."""
    first = bench.render_window("mock_clock_002", 1, "", ["4"])
    assert bench.render_window("mock_clock_002", 1, "", ["4"]) == first
    bench.render_window("mock_clock_002", 2, "typed", ["1"])
    assert bench.render_window("mock_clock_002", 1, "", ["4"]) == first


def test_bands_handed_in_replace_the_templates() -> None:
    size = (16, 3 * BAND_ROWS + 5)  # a last band shorter than the others
    template = bytes(size[0] * size[1] * 3)
    encoder = BandedEncoder(size, template)
    changed = bytearray(template)
    last = encoder.band_rows(3)
    changed[last.start * size[0] * 3:] = b"\x07" * (len(last) * size[0] * 3)
    changed[(BAND_ROWS * size[0] + 2) * 3] = 9
    png = encoder.encode_bands({1: bytes(changed[BAND_ROWS * 48:2 * BAND_ROWS * 48]),
                                3: bytes(changed[last.start * 48:])})
    assert Image.open(io.BytesIO(png)).tobytes() == bytes(changed)
    assert encoder.encode_bands({}) == encoder.encode(template)
    with pytest.raises(ValueError, match="no band 4: the image has bands 0 to 3"):
        encoder.encode_bands({4: b""})
    with pytest.raises(ValueError, match="band 3: expected 240 bytes of RGB, got 3"):
        encoder.encode_bands({3: b"abc"})


def test_any_band_that_differs_from_the_template_is_encoded_afresh() -> None:
    size = (16, 3 * BAND_ROWS + 5)  # a last band shorter than the others
    template = bytes(size[0] * size[1] * 3)
    encoder = BandedEncoder(size, template)
    for row in (0, BAND_ROWS, size[1] - 1):
        changed = bytearray(template)
        changed[(row * size[0] + 7) * 3 + 1] = 200  # one byte of one pixel
        decoded = Image.open(io.BytesIO(encoder.encode(bytes(changed))))
        assert decoded.tobytes() == bytes(changed)
    with pytest.raises(ValueError, match="expected 2100 bytes of RGB, got 3"):
        BandedEncoder((700, 1), b"abc")


@pytest.mark.parametrize("length", [0, 1, 65520, 65521, 200_000])
def test_adler32_combine_matches_zlib(length: int) -> None:
    first, second = os.urandom(1000), os.urandom(length)
    assert _adler32_combine(zlib.adler32(first), zlib.adler32(second), length) == zlib.adler32(first + second)
