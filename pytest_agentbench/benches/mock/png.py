"""PNG encoding of screens that differ from one template in a few rows: the mock window.

Why: every mock step's screenshot is the same 1920x1200 window but for a few rows (a clicked
button's outline, typed text, the task and step line), and encoding the whole of it took 21 ms of
the 25 ms a screenshot cost, the largest fixed cost of a step on the agent path. The image's
filtered rows are cut into bands; each band is deflated on its own (a full flush: no band refers
to another's bytes, so compressed bands can be joined), and the template's compressed bands are
kept. A screen then costs its raw bytes, a comparison per band, and the deflating of the bands that
differ. Any band that differs in any byte is encoded afresh, so the result is always the image
itself. A caller that knows which bands its drawing can have changed hands in those alone
(``encode_bands``) and pays neither for the others' pixels nor for comparing them; a band equal to
the last one encoded at its place is not deflated again. Standard library
only (the image comes in as Pillow's raw RGB bytes).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Mapping

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
        self.band_count = -(-self.height // BAND_ROWS)
        self._template = [_Band(raw) for raw in self._bands(template)]
        #: The last band encoded at each index that differed from the template's: a band that changes
        #: the same way from screen to screen (a clicked button's outline) is deflated once.
        self._last: dict[int, _Band] = {}

    def band_rows(self, index: int) -> range:
        """The rows of band ``index``: ``BAND_ROWS`` of them, the last band's fewer."""
        top = index * BAND_ROWS
        return range(top, min(top + BAND_ROWS, self.height))

    def _filtered(self, rgb: bytes | memoryview, rows: int) -> bytes:
        """``rows`` rows of raw RGB, each after its filter byte (0: none)."""
        stride = self.width * 3
        return b"".join(b"\x00" + rgb[row * stride:(row + 1) * stride] for row in range(rows))

    def _bands(self, rgb: bytes) -> list[bytes]:
        """The image's rows, each after its filter byte (0: none), in bands of ``BAND_ROWS`` rows."""
        stride = self.width * 3
        if len(rgb) != stride * self.height:
            raise ValueError(f"expected {stride * self.height} bytes of RGB, got {len(rgb)}")
        view = memoryview(rgb)
        return [self._filtered(view[rows.start * stride:rows.stop * stride], len(rows))
                for rows in map(self.band_rows, range(self.band_count))]

    def encode(self, rgb: bytes) -> bytes:
        """The PNG of ``rgb`` (raw 8-bit RGB rows, top to bottom)."""
        return self._assemble(kept if raw == kept.raw else _Band(raw)
                              for raw, kept in zip(self._bands(rgb), self._template, strict=True))

    def encode_bands(self, changed: Mapping[int, bytes]) -> bytes:
        """The PNG of the template with band ``i`` replaced by ``changed[i]`` (its raw 8-bit RGB rows,
        top to bottom): for a caller that knows every band its drawing can have changed."""
        stride = self.width * 3
        bands = list(self._template)
        for index, rgb in changed.items():
            rows = len(self.band_rows(index))
            if not 0 <= index < self.band_count:
                raise ValueError(f"no band {index}: the image has bands 0 to {self.band_count - 1}")
            if len(rgb) != stride * rows:
                raise ValueError(f"band {index}: expected {stride * rows} bytes of RGB, got {len(rgb)}")
            raw = self._filtered(rgb, rows)
            if raw != bands[index].raw:
                last = self._last.get(index)
                bands[index] = last if last is not None and raw == last.raw else _Band(raw)
                self._last[index] = bands[index]
        return self._assemble(bands)

    def _assemble(self, bands: Iterable[_Band]) -> bytes:
        parts = [b"\x78\x01"]  # zlib header: deflate, 32 KB window, fastest
        adler = 1
        for band in bands:
            parts.append(band.deflated)
            adler = _adler32_combine(adler, band.adler, len(band.raw))
        parts.append(b"\x03\x00")  # an empty final block
        parts.append(struct.pack(">I", adler))
        return _SIGNATURE + self._ihdr + _chunk(b"IDAT", b"".join(parts)) + _chunk(b"IEND", b"")
