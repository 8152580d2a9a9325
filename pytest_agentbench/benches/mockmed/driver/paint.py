"""Painting: a laid-out page drawn as a PNG with pillow, in the page's own palette and fonts.

Only called when an observation's screenshot is asked for, so an episode that reads the tree alone
never pays for drawing.
"""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING

from pytest_agentbench.benches.mockmed.driver.dom import Element, input_type, is_textbox
from pytest_agentbench.benches.mockmed.driver.fonts import load_font

if TYPE_CHECKING:
    from PIL.ImageFont import FreeTypeFont, ImageFont

def _rgb(value: str | None, fallback: str = "#000000") -> str:
    if not value:
        return fallback
    value = value.strip()
    if re.fullmatch(r"#[0-9a-fA-F]{3}|#[0-9a-fA-F]{6}", value):
        return value
    return fallback


def paint(root: Element, *, viewport: tuple[int, int], vars_: dict[str, str], family: str, scroll_y: float,
          values: dict[int, str], checked: set[int], focused: int | None) -> bytes:
    """Draw a laid-out page as PNG bytes."""
    from PIL import Image, ImageDraw

    width, height = viewport
    def colour(name: str | None, fb: str = "#000000") -> str:
        return _rgb(vars_.get(name) if name else None, fb)

    image = Image.new("RGB", (width, height), colour("bg", "#ffffff"))
    draw = ImageDraw.Draw(image)

    def rect(box: list[float]) -> tuple[int, int, int, int]:
        return (round(box[0]), round(box[1] - scroll_y), round(box[2]) - 1, round(box[3] - scroll_y) - 1)

    def visible(box: list[float]) -> bool:
        return box[3] - scroll_y >= 0 and box[1] - scroll_y <= height

    def seg_checked(el: Element) -> bool:
        return any(isinstance(c, Element) and c.index in checked for c in el.children)

    def visit(el: Element, override: str | None) -> None:
        st = el.style
        if st.get("display") == "none" or st.get("display") == "overlay":
            return
        box = el.box
        if box is not None and visible(box) and el.tag not in ("html", "#document"):
            bg, border = st.get("bg"), st.get("border")
            if st.get("seg") and seg_checked(el):
                bg, border, override = "primary", "primary", "primary-text"
            radius = min(st.get("radius", 0), (box[3] - box[1]) / 2, (box[2] - box[0]) / 2)
            corners = None
            if st.get("seg") and el.parent is not None:
                sibs = [c for c in el.parent.children if isinstance(c, Element)]
                first, last = sibs[0] is el, sibs[-1] is el
                corners = (first, last, last, first)
            if bg or border:
                draw.rounded_rectangle(rect(box), radius=radius, fill=colour(bg) if bg else None,
                                       outline=colour(border) if border else None, width=1, corners=corners)
            if st.get("bt"):
                draw.line([(box[0], box[1] - scroll_y), (box[2], box[1] - scroll_y)], fill=colour(st["bt"]))
            if st.get("bb"):
                draw.line([(box[0], box[3] - scroll_y - 1), (box[2], box[3] - scroll_y - 1)], fill=colour(st["bb"]))
            if el.tag in ("input", "textarea") and is_textbox(el):
                if el.index == focused:
                    draw.rounded_rectangle(rect(box), radius=radius, outline=colour("primary"), width=2)
                value = values.get(el.index, "")
                if input_type(el) == "password":
                    value = "•" * len(value)
                font = load_font(family, False, int(st.get("size", 15)))
                line_h = round(st.get("size", 15) * st.get("line", 1.45))
                pad = st.get("pad", (8, 12, 8, 12))
                tx, ty = box[0] + pad[3] + 1, box[1] + pad[0] + 1 - scroll_y
                if el.tag == "textarea":
                    lines = _wrap(value, font, box[2] - box[0] - pad[1] - pad[3] - 2)
                    fit = max(1, int((box[3] - box[1] - pad[0] - pad[2]) // line_h))
                    lines = lines[-fit:]  # the view follows the caret, like a scrolled textarea
                else:
                    lines = [value]
                    ty = box[1] - scroll_y + (box[3] - box[1] - line_h) / 2
                for i, line in enumerate(lines):
                    draw.text((tx, ty + i * line_h + (line_h - st.get("size", 15)) / 2 - 2), line, font=font,
                              fill=colour("text"))
                if el.index == focused:
                    caret_x = tx + font.getlength(lines[-1]) + 1
                    caret_y = ty + (len(lines) - 1) * line_h
                    draw.line([(caret_x, caret_y + 3), (caret_x, caret_y + line_h - 3)], fill=colour("text"), width=1)
            elif el.index == focused:
                draw.rounded_rectangle((box[0] - 2, box[1] - 2 - scroll_y, box[2] + 1, box[3] + 1 - scroll_y),
                                       radius=radius + 2, outline=colour("primary"), width=2)
        for frag in el.frags:
            x, y, _, h, text, (bold, size), color = frag[:7]
            if not text or y + h - scroll_y < 0 or y - scroll_y > height:
                continue
            font = load_font(family, bold, size)
            draw.text((x, y - scroll_y + (h - size) / 2 - size * 0.12), text, font=font,
                      fill=colour(override or color, "#000000"))
        for child in el.children:
            if isinstance(child, Element) and child.tag != "textarea":
                visit(child, override)
            elif isinstance(child, Element):
                visit(child, None)

    visit(root, None)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


def _wrap(text: str, font: FreeTypeFont | ImageFont, width: float) -> list[str]:
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split(" "):
            candidate = word if not line else f"{line} {word}"
            if line and font.getlength(candidate) > width:
                lines.append(line)
                line = word
            else:
                line = candidate
        lines.append(line)
    return lines or [""]
