"""What the package reads from images without decoding them. Pytest-free, standard library only."""

from __future__ import annotations

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG's IHDR chunk (the first 24 bytes are enough), or None when
    ``data`` is not a PNG: an agent sizes screenshots and clicks by it, and decoding a whole
    screenshot for two numbers would cost a step's worth of time."""
    if len(data) >= 24 and data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR":
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    return None
