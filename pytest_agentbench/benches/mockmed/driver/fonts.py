"""Fonts for measuring and drawing text: the system's Liberation or DejaVu faces through pillow.

Layout measures with the same faces the painter draws with, so text boxes and pixels agree.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL.ImageFont import FreeTypeFont, ImageFont

_FONT_DIRS = ("/usr/share/fonts/truetype/liberation", "/usr/share/fonts/truetype/dejavu",
              "/usr/share/fonts/truetype/liberation2", "/usr/share/fonts/TTF")
_FONT_FILES = {
    ("sans", False): ("LiberationSans-Regular.ttf", "DejaVuSans.ttf"),
    ("sans", True): ("LiberationSans-Bold.ttf", "DejaVuSans-Bold.ttf"),
    ("serif", False): ("DejaVuSerif.ttf", "LiberationSerif-Regular.ttf", "DejaVuSans.ttf"),
    ("serif", True): ("DejaVuSerif-Bold.ttf", "LiberationSerif-Bold.ttf", "DejaVuSans-Bold.ttf"),
}


@lru_cache(maxsize=64)
def load_font(family: str, bold: bool, size: int) -> FreeTypeFont | ImageFont:
    from PIL import ImageFont

    for name in _FONT_FILES[(family, bold)]:
        for folder in _FONT_DIRS:
            path = Path(folder) / name
            if path.exists():
                return ImageFont.truetype(str(path), size)
    return ImageFont.load_default(size=size)


@lru_cache(maxsize=8192)
def text_width(family: str, bold: bool, size: int, text: str) -> float:
    return float(load_font(family, bold, size).getlength(text))


def font_family(vars_: dict[str, str]) -> str:
    value = vars_.get("font", "").lower()
    return "serif" if "serif" in value and "sans-serif" not in value else "sans"
