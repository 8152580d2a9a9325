"""PNG encoding of screens that differ from one template in a few rows: the mock window.

Why: every mock step's screenshot is the same 1920x1200 window but for a few rows (a clicked
button's outline, typed text, the task and step line), and encoding the whole of it took 21 ms of
the 25 ms a screenshot cost, the largest fixed cost of a step on the agent path. The image's
filtered rows are cut into bands; each band is deflated on its own (a full flush: no band refers
to another's bytes, so compressed bands can be joined), and the template's compressed bands are
kept. A screen then costs its raw bytes, a comparison per band, and the deflating of the bands that
differ. Any band that differs in any byte is encoded afresh, so the result is always the image
itself. Standard library only (the image comes in as Pillow's raw RGB bytes).
"""

from __future__ import annotations

import struct
import zlib

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_ADLER_BASE = 65521
#: Rows per band: a band of the 1920-wide window is 230 KB of raw bytes.
BAND_ROWS = 40


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _adler32_combine(first: int, second: int, second_length: int) -> int:
    """The Adler-32 of two byte strings joined, from theirs (zlib's ``adler32_combine``, which
    Python's zlib module leaves out)."""
    rem = second_length % _ADLER_BASE
    sum1 = first & 0xFFFF
    sum2 = (rem * sum1) % _ADLER_BASE
    sum1 = (sum1 + (second & 0xFFFF) + _ADLER_BASE - 1) % _ADLER_BASE
    sum2 = (sum2 + (first >> 16) + (second >> 16) + _ADLER_BASE - rem) % _ADLER_BASE
    return sum1 | (sum2 << 16)


class _Band:
    __slots__ = ("adler", "deflated", "raw")

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        compressor = zlib.compressobj(1, zlib.DEFLATED, -15)  # raw deflate: the stream's header is ours
        self.deflated = compressor.compress(raw) + compressor.flush(zlib.Z_FULL_FLUSH)
        self.adler = zlib.adler32(raw)


class BandedEncoder:
    """Encodes RGB images of one size as PNG, reusing the bands they share with ``template``."""

    def __init__(self, size: tuple[int, int], template: bytes) -> None:
        self.width, self.height = size
        self._ihdr = _chunk(b"IHDR", struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0))
        self._template = [_Band(raw) for raw in self._bands(template)]

    def _bands(self, rgb: bytes) -> list[bytes]:
        """The image's rows, each after its filter byte (0: none), in bands of ``BAND_ROWS`` rows."""
        stride = self.width * 3
        if len(rgb) != stride * self.height:
            raise ValueError(f"expected {stride * self.height} bytes of RGB, got {len(rgb)}")
        bands = []
        for top in range(0, self.height, BAND_ROWS):
            rows = range(top, min(top + BAND_ROWS, self.height))
            bands.append(b"".join(b"\x00" + rgb[row * stride:(row + 1) * stride] for row in rows))
        return bands

    def encode(self, rgb: bytes) -> bytes:
        """The PNG of ``rgb`` (raw 8-bit RGB rows, top to bottom)."""
        parts = [b"\x78\x01"]  # zlib header: deflate, 32 KB window, fastest
        adler = 1
        for raw, kept in zip(self._bands(rgb), self._template, strict=True):
            band = kept if raw == kept.raw else _Band(raw)
            parts.append(band.deflated)
            adler = _adler32_combine(adler, band.adler, len(raw))
        parts.append(b"\x03\x00")  # an empty final block
        parts.append(struct.pack(">I", adler))
        return _SIGNATURE + self._ihdr + _chunk(b"IDAT", b"".join(parts)) + _chunk(b"IEND", b"")
