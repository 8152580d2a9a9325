"""Layout: a small deterministic block layout (normal flow, flex rows, tables) that gives every
displayed element a pixel box and every run of text its fragments.

Deterministic so that the same page always gives the same boxes: the accessibility tree's bboxes
and the click points an agent computes from them must not drift between runs.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_agentbench.benches.mockmed.driver.dom import Element
from pytest_agentbench.benches.mockmed.driver.fonts import text_width
from pytest_agentbench.benches.mockmed.driver.style import compute_style

BLOCKISH = frozenset({"block", "shrink", "flex", "table"})
_WORDS = re.compile(r"\s+|[^\s]+")


def _placed(el: Element) -> list[float]:
    """``el``'s box once :meth:`Layout._layout` has placed it; only a displayed element has one."""
    if el.box is None:
        raise ValueError(f"{el!r} has no layout box: it is not displayed")
    return el.box


class Layout:
    """Lays a parsed page out on a ``width``-wide viewport; every displayed element gets ``box``."""

    def __init__(self, root: Element, viewport: tuple[int, int], family: str) -> None:
        self.root = root
        self.vw, self.vh = viewport
        self.family = family
        self._style(root, {})
        for index, el in enumerate(root.elements()):
            el.index = index
        html = next((c for c in root.children if isinstance(c, Element) and c.tag == "html"), root)
        self.height = max(self._layout(html, 0.0, 0.0, float(self.vw)), float(self.vh))

    # -- styles -----------------------------------------------------------------------------------
    def _style(self, el: Element, parent: dict[str, Any]) -> None:
        el.style = compute_style(el, parent)
        if el.style["display"] == "none":
            return
        if el.style["display"] == "flex":
            # Text directly inside a flex container is an anonymous flex item.
            for i, child in enumerate(el.children):
                if isinstance(child, str) and child.strip():
                    anonymous = Element("#anon", {}, el)
                    anonymous.children.append(child)
                    el.children[i] = anonymous
        for child in el.children:
            if isinstance(child, Element):
                self._style(child, el.style)

    def _measure(self, text: str, style: dict[str, Any]) -> float:
        return text_width(self.family, bool(style.get("bold")), int(style.get("size", 15)), text)

    @staticmethod
    def _line_height(style: dict[str, Any]) -> float:
        size: float = style.get("size", 15)  # the style's values are numbers (Any to mypy)
        line: float = style.get("line", 1.45)
        return round(size * line)

    # -- intrinsic widths -------------------------------------------------------------------------
    def _max_content(self, el: Element) -> float:
        if el._mc is not None:
            return el._mc
        st = el.style
        _, r, _, left = st.get("pad", (0, 0, 0, 0))
        bw = self._bw(st)
        if isinstance(st.get("width"), (int, float)):
            el._mc = float(st["width"])
            return el._mc
        if el.tag in ("input", "textarea"):
            el._mc = 200.0
            return el._mc
        display = st["display"]
        kids = [c for c in el.children
                if not (isinstance(c, Element) and c.style.get("display") in ("none", "overlay"))]
        if display == "flex":
            items = [c for c in kids if isinstance(c, Element)]
            inner = sum(self._max_content(c) for c in items) + st.get("gap", 0) * max(0, len(items) - 1)
        elif display == "table":
            inner = sum(self._table_columns(el))
        else:
            inner = 0.0
            run = 0.0
            for child in kids:
                if isinstance(child, Element) and child.style["display"] in BLOCKISH:
                    inner = max(inner, run, self._max_content(child))
                    run = 0.0
                else:
                    run += self._inline_width(child, st)
            inner = max(inner, run)
        el._mc = inner + left + r + 2 * bw
        return el._mc

    def _inline_width(self, node: Element | str, style: dict[str, Any]) -> float:
        if isinstance(node, str):
            text = " ".join(node.split())
            if node[:1].isspace() and text:
                text = " " + text
            if node[-1:].isspace() and text:
                text = text + " "
            return self._measure(text, style) if text else 0.0
        if node.style["display"] == "inline":
            return sum(self._inline_width(c, node.style) for c in node.children
                       if not (isinstance(c, Element) and c.style.get("display") == "none"))
        if node.style["display"] in ("none", "overlay"):
            return 0.0
        return self._max_content(node)

    @staticmethod
    def _bw(style: dict[str, Any]) -> int:
        return 1 if style.get("border") or style.get("bw") else 0

    # -- boxes ------------------------------------------------------------------------------------
    def _layout(self, el: Element, x: float, y: float, avail: float, *, shrink: bool = False) -> float:
        """Place ``el``'s box with its top margin edge at ``y``; return its outer height."""
        st = el.style
        if st["display"] in ("none", "overlay"):
            return 0.0
        mt: float = st.get("mt", 0)  # the style's values are numbers (Any to mypy)
        mb: float = st.get("mb", 0)
        pad: tuple[float, float, float, float] = st.get("pad", (0, 0, 0, 0))
        t, r, b, left = pad
        bw = self._bw(st)
        width = st.get("width")
        if isinstance(width, (int, float)):
            w = float(width)
        elif width == "full":
            w = avail
        elif shrink or st["display"] in ("shrink", "inline-block"):
            w = min(self._max_content(el), avail)
        else:
            w = avail
        if st.get("maxw") and w > st["maxw"]:
            w = float(st["maxw"])
        x0 = x + (avail - w) / 2 if st.get("maxw") and avail > w else x
        y0 = y + mt
        cx, cy, cw = x0 + left + bw, y0 + t + bw, max(0.0, w - left - r - 2 * bw)
        if el.tag in ("input", "textarea"):
            content_h = self._line_height(st)
        elif st["display"] == "flex":
            content_h = self._layout_flex(el, cx, cy, cw, st.get("height"))
        elif st["display"] == "table":
            content_h = self._layout_table(el, cx, cy, cw)
        else:
            content_h = self._layout_flow(el, cx, cy, cw)
        h = content_h + t + b + 2 * bw
        if isinstance(st.get("height"), (int, float)):
            if st.get("vcenter") and h != st["height"]:
                self._shift_children(el, 0, (st["height"] - h) / 2)
            h = float(st["height"])
        el.box = [x0, y0, x0 + w, y0 + h]
        for child in el.children:
            if isinstance(child, Element) and child.style.get("display") == "overlay":
                child.box = list(el.box)
        return mt + h + mb

    def _layout_flow(self, el: Element, cx: float, cy: float, cw: float) -> float:
        y = cy
        previous_mb = 0.0  # adjacent vertical margins of block siblings collapse
        run: list[tuple[Element | str, int]] = []
        blocks = [c for c in el.children if isinstance(c, Element) and c.style["display"] in BLOCKISH]
        last = blocks[-1] if blocks and el.style.get("trim") else None
        grow_child: Element | None = None
        for index, child in enumerate(el.children):
            if isinstance(child, Element) and child.style["display"] in BLOCKISH:
                if run:
                    used = self._layout_inline(el, run, cx, y, cw)
                    if used:
                        previous_mb = 0.0
                    y += used
                    run = []
                if child is last:
                    child.style = dict(child.style, mb=0)
                y -= min(previous_mb, child.style.get("mt", 0))
                y += self._layout(child, cx, y, cw)
                previous_mb = child.style.get("mb", 0)
                if child.style.get("grow"):
                    grow_child = child
            elif isinstance(child, Element) and child.style["display"] in ("none", "overlay"):
                continue
            else:
                run.append((child, index))
        if run:
            y += self._layout_inline(el, run, cx, y, cw)
        if el.style.get("column") and grow_child is not None and y - cy < self.vh:
            extra = self.vh - (y - cy)
            _placed(grow_child)[3] += extra
            after = False
            for child in el.children:
                if child is grow_child:
                    after = True
                elif after and isinstance(child, Element):
                    self._shift(child, 0, extra)
            y += extra
        return y - cy

    def _layout_flex(self, el: Element, cx: float, cy: float, cw: float, fixed_h: Any) -> float:
        st = el.style
        items = [c for c in el.children if isinstance(c, Element) and c.style["display"] not in ("none", "overlay")]
        gap = st.get("gap", 0)
        heights = []
        widths = []
        x = cx
        for item in items:
            iw = min(self._max_content(item), cw) if item.style.get("width") != "full" else cw
            outer = self._layout(item, x, cy, iw, shrink=True)
            heights.append(outer)
            box = _placed(item)
            widths.append(box[2] - box[0])
            x += widths[-1] + gap
        line_h = max(heights, default=0.0)
        inner_h = line_h
        if isinstance(fixed_h, (int, float)):
            t, _, b, _ = st.get("pad", (0, 0, 0, 0))
            inner_h = max(line_h, fixed_h - t - b - 2 * self._bw(st))
        used = sum(widths) + gap * max(0, len(items) - 1)
        free = max(0.0, cw - used)
        justify = st.get("justify", "start")
        offsets = [0.0] * len(items)
        if justify == "between" and len(items) > 1:
            step = free / (len(items) - 1)
            offsets = [i * step for i in range(len(items))]
        elif justify == "end":
            offsets = [free] * len(items)
        elif justify == "center":
            offsets = [free / 2] * len(items)
        for item, outer, dx in zip(items, heights, offsets, strict=True):
            dy = (inner_h - outer) / 2
            if dx or dy:
                self._shift(item, dx, dy)
        return inner_h

    def _table_rows(self, table: Element) -> list[Element]:
        rows = []
        for child in table.children:
            if isinstance(child, Element):
                if child.tag == "tr":
                    rows.append(child)
                elif child.tag in ("thead", "tbody", "tfoot"):
                    rows.extend(c for c in child.children if isinstance(c, Element) and c.tag == "tr")
        return rows

    def _table_columns(self, table: Element) -> list[float]:
        cols: list[float] = []
        for row in self._table_rows(table):
            cells = [c for c in row.children if isinstance(c, Element) and c.tag in ("td", "th")]
            for i, cell in enumerate(cells):
                width = self._max_content(cell)
                if i < len(cols):
                    cols[i] = max(cols[i], width)
                else:
                    cols.append(width)
        return cols

    def _layout_table(self, table: Element, cx: float, cy: float, cw: float) -> float:
        cols = self._table_columns(table)
        total = sum(cols)
        if total > 0:
            scale = cw / total
            cols = [c * scale for c in cols]
        y = cy
        for row in self._table_rows(table):
            cells = [c for c in row.children if isinstance(c, Element) and c.tag in ("td", "th")]
            x = cx
            heights = []
            # A row may hold fewer or more cells than the table has columns (HTML allows both); cells
            # past the last column are not laid out, as a browser would overflow them out of view.
            for cell, width in zip(cells, cols, strict=False):
                heights.append(self._layout(cell, x, y, width))
                x += width
            row_h = max(heights, default=0.0)
            for cell, h in zip(cells, heights, strict=False):
                if h < row_h:
                    self._shift_children(cell, 0, (row_h - h) / 2)
                    box = _placed(cell)
                    box[3] = box[1] + row_h
            row.box = [cx, y, cx + cw, y + row_h]
            y += row_h
        for child in table.children:
            if isinstance(child, Element) and child.tag in ("thead", "tbody", "tfoot"):
                boxes = [r.box for r in child.children if isinstance(r, Element) and r.box]
                if boxes:
                    child.box = [min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes),
                                 max(b[3] for b in boxes)]
        return y - cy

    def _layout_inline(self, block: Element, run: list[tuple[Element | str, int]], cx: float, cy: float,
                       cw: float) -> float:
        """Flow text and inline boxes into lines; returns the height used (0 for whitespace only)."""
        items: list[list[Any]] = []  # [kind, width, height, payload...]

        def collect(node: Element | str, owner: Element, style: dict[str, Any], source: int) -> None:
            if isinstance(node, str):
                for token in _WORDS.findall(node):
                    if token.isspace():
                        items.append(["space", self._measure(" ", style), 0.0, owner, style, source])
                    else:
                        items.append(["word", self._measure(token, style), float(self._line_height(style)), owner,
                                      style, source, token])
                return
            display = node.style["display"]
            if display in ("none", "overlay"):
                return
            if display == "inline":
                for i, child in enumerate(node.children):
                    collect(child, node, node.style, i)
                node.box = None
                return
            if node.tag == "br":
                items.append(["br", 0.0, 0.0, node])
                return
            outer = self._layout(node, 0.0, 0.0, cw)
            box = _placed(node)
            items.append(["box", box[2] - box[0], outer, node])

        for node, index in run:
            collect(node, block, block.style, index)
        if not any(item[0] in ("word", "box") for item in items):
            return 0.0
        lines: list[list[list[Any]]] = [[]]
        x = 0.0
        for item in items:
            kind = item[0]
            if kind == "br":
                lines.append([])
                x = 0.0
                continue
            if kind == "space":
                if not lines[-1] or lines[-1][-1][0] == "space":
                    continue
                lines[-1].append(item)
                x += item[1]
                continue
            if lines[-1] and x + item[1] > cw + 0.5:
                while lines[-1] and lines[-1][-1][0] == "space":
                    x -= lines[-1].pop()[1]
                lines.append([])
                x = 0.0
            lines[-1].append(item)
            x += item[1]
        y = cy
        align = block.style.get("align", "left")
        owners: dict[int, Element] = {}
        for line in lines:
            while line and line[-1][0] == "space":
                line.pop()
            if not line:
                continue
            line_h = max((item[2] for item in line), default=0.0)
            line_w = sum(item[1] for item in line)
            x = cx + ((cw - line_w) / 2 if align == "center" else 0.0)
            frag: list[Any] | None = None
            for item in line:
                kind = item[0]
                if kind == "box":
                    node = item[3]
                    self._shift(node, x - node.box[0], y + (line_h - item[2]) / 2 - node.box[1] +
                                node.style.get("mt", 0))
                    frag = None
                elif kind in ("word", "space"):
                    owner, style, source = item[3], item[4], item[5]
                    text = item[6] if kind == "word" else " "
                    text_h = self._line_height(style)
                    if frag is not None and frag[8] is owner and frag[9] is style and frag[7] == source:
                        frag[4] += text
                        frag[2] += item[1]
                    elif kind == "word":
                        frag = [x, y + (line_h - text_h) / 2, item[1], text_h, text,
                                (bool(style.get("bold")), int(style.get("size", 15))), style.get("color", "text"),
                                source, owner, style]
                        owner.frags.append(frag)
                        owners[id(owner)] = owner
                    else:
                        frag = None
                x += item[1]
            y += line_h
        for owner in owners.values():
            for frag in owner.frags:
                frag[4] = frag[4].rstrip()
            if owner is not block and owner.frags:
                owner.box = [min(f[0] for f in owner.frags), min(f[1] for f in owner.frags),
                             max(f[0] + f[2] for f in owner.frags), max(f[1] + f[3] for f in owner.frags)]
        return y - cy

    # -- moving laid-out subtrees -----------------------------------------------------------------
    def _shift(self, el: Element, dx: float, dy: float) -> None:
        for node in el.elements():
            if node.box is not None:
                node.box = [node.box[0] + dx, node.box[1] + dy, node.box[2] + dx, node.box[3] + dy]
            for frag in node.frags:
                frag[0] += dx
                frag[1] += dy

    def _shift_children(self, el: Element, dx: float, dy: float) -> None:
        for frag in el.frags:
            frag[0] += dx
            frag[1] += dy
        for child in el.children:
            if isinstance(child, Element):
                self._shift(child, dx, dy)
