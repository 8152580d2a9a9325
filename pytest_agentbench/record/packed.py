"""Compressed blocks for the viewer page: a run's detail (each task's record and trajectory) packed
into blocks of raw deflate, each written as ASCII into its own inert script block.

Most of a big run's page was detail that is read only when someone opens a task: at 20,000 mock
tasks 43 MB of its 44.6 MB, which the browser had to read, byte by byte, before it could show
anything. Packed, the page is a fraction of that; the page unpacks one block when a task opens
(``DecompressionStream('deflate-raw')``, native in the browser). The table's rows are one more
block, unpacked as the page loads.

Pieces are packed together, about ``CHUNK`` bytes to a block, because a task's JSON alone is too
short to compress well: a 1.5 KB mock trajectory deflates to 44% of itself on its own, while a
20,000-task mock run's records and trajectories, in blocks of 256 KB, pack to 5%; and the page
unpacks such a block in 3-5 ms (headless Chromium, load 18). A piece is never split, so one big
trajectory makes one big block.

The block's text is base64: its alphabet (letters, digits, ``+``, ``/``, ``=``) holds no ``<``,
``>`` or ``&``, so whatever the data, a block can neither end its ``<script>`` early nor open a
comment (base-85 alphabets hold ``<`` and ``!``); and the browser decodes it natively (``atob``).
"""

from __future__ import annotations

import base64
import zlib

#: Bytes of pieces per block: a block is sealed once it holds at least this many.
CHUNK = 256 * 1024
#: zlib's level. The 43.7 MB of pieces of a 20,000-task mock run packed to 5.6% at level 1, 5.1%
#: at 3 and 4.1% at 6, but levels 4 and up (lazy matching) took three times as long: 0.20 s at 1-3,
#: 0.63 s at 6 (2 cores at load 20). The page is written at the end of every run, opened by few, and
#: at 3 it is 0.6 MB bigger at 20,000 tasks than at 6.
LEVEL = 3


class Packer:
    """Packs byte pieces into numbered blocks. ``add`` says where a piece will be, as
    ``[block, start, end]`` (byte offsets into the block's unpacked bytes); ``seal`` makes the
    block's text and starts the next block. Memory is one block's pieces."""

    def __init__(self, *, chunk: int = CHUNK, level: int = LEVEL) -> None:
        self.chunk, self.level = chunk, level
        self.blocks = 0
        self._pieces: list[bytes] = []
        self._size = 0

    def add(self, piece: bytes) -> list[int]:
        where = [self.blocks, self._size, self._size + len(piece)]
        self._pieces.append(piece)
        self._size += len(piece)
        return where

    @property
    def full(self) -> bool:
        return self._size >= self.chunk

    @property
    def empty(self) -> bool:
        return not self._pieces

    def seal(self) -> str:
        """The block's text (``pack`` of its pieces); the next piece goes into the next block."""
        text = pack(b"".join(self._pieces), self.level)
        self._pieces, self._size = [], 0
        self.blocks += 1
        return text


def pack(data: bytes, level: int = LEVEL) -> str:
    """``data`` as a block's text: raw deflate (no zlib header: what ``deflate-raw`` reads), base64."""
    packer = zlib.compressobj(level, zlib.DEFLATED, -15)
    return base64.b64encode(packer.compress(data) + packer.flush()).decode("ascii")


def unpack(text: str) -> bytes:
    """A block's unpacked bytes (what the page does; for tests and tools reading a page)."""
    return zlib.decompress(base64.b64decode(text, validate=True), -15)
