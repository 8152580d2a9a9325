"""Drivers that show MockMed to an agent and carry out its actions.

:class:`HeadlessDriver` needs no browser. It fetches pages with httpx (cookies kept), parses the HTML
with the stdlib parser, lays the page out with a small deterministic block layout (normal flow, flex
rows, tables) so that every visible element gets a pixel box, and turns that into

* an accessibility tree of nested dicts::

      {"role": "row", "name": "Jane Sample Knee pain referral High Open", "id": "row:5.1",
       "bbox": [x0, y0, x1, y1], "children": [...]}

  plus ``"value"`` on textboxes and ``"checked"`` on radios. Roles: document, heading, text, link,
  button, textbox, radio, table, row, cell, status (the saved banner), alert (a form error), form. A
  row's name is its cells' names joined with spaces. ``id`` is the HTML id when the element has one,
  else a generated id ``"<role>:<path>"`` (the node's child indexes from the root, e.g. ``"row:5.1"``;
  the root is ``"document"``), stable for the same page structure;
* a screenshot drawn with pillow from the same layout, on demand only (``Observation.screenshot``),
  in the page's own palette and fonts (read from its CSS custom properties).

It performs the core's actions over HTTP: a click (by ``target_id`` or by coordinates, pixels or
fractions) follows a link, checks a radio, focuses a field or submits a form with the current field
values; ``type`` appends to the focused field; ``key`` handles Enter (submits from a text input, new
line in a textarea), Tab, Backspace and Space; ``hotkey`` ctrl+a selects the field's text so the next
``type`` or Backspace replaces it; ``scroll`` moves the viewport; ``wait`` and the terminal actions do
nothing. An unknown ``target_id`` raises :class:`LookupError`.

:class:`PlaywrightDriver` has the same interface over headless Chromium (Debian's ``/usr/bin/chromium``
through the ``playwright`` package, imported on first use; it never downloads a browser).
"""

from __future__ import annotations

import io
import re
import urllib.parse
from collections.abc import Callable, Iterator
from functools import lru_cache
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from ...model import Action, Observation

VIEWPORT = (1280, 800)
APP_NAME = "MockMed"

# ----------------------------------------------------------------------------------------------------
# The DOM.

_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
                   "track", "wbr"})
_RAW = frozenset({"style", "script", "title", "textarea"})


class Element:
    """One HTML element, with the layout and form state the driver gives it."""

    __slots__ = ("tag", "attrs", "children", "parent", "style", "box", "frags", "value", "checked", "index",
                 "_classes", "_mc")

    def __init__(self, tag: str, attrs: dict[str, str], parent: Element | None) -> None:
        self.tag = tag
        self.attrs = attrs
        self.children: list[Element | str] = []
        self.parent = parent
        self.style: dict[str, Any] = {}
        self.box: list[float] | None = None  # x0, y0, x1, y1 in page pixels
        self.frags: list[list[Any]] = []  # [x, y, w, h, text, font key, colour var, source index]
        self.value = ""
        self.checked = False
        self.index = 0
        self._classes: frozenset[str] | None = None
        self._mc: float | None = None

    @property
    def classes(self) -> frozenset[str]:
        if self._classes is None:
            self._classes = frozenset(self.attrs.get("class", "").split())
        return self._classes

    @property
    def id(self) -> str | None:
        return self.attrs.get("id")

    def elements(self) -> Iterator[Element]:
        """This element and its descendants, in document order."""
        stack: list[Element] = [self]
        while stack:
            el = stack.pop()
            yield el
            stack.extend(c for c in reversed(el.children) if isinstance(c, Element))

    def ancestors(self) -> Iterator[Element]:
        el = self.parent
        while el is not None:
            yield el
            el = el.parent

    def text(self, *, skip_hidden: bool = True) -> str:
        """The element's text content with whitespace collapsed (aria-hidden parts left out)."""
        parts: list[str] = []

        def visit(el: Element) -> None:
            if skip_hidden and (el.attrs.get("aria-hidden") == "true" or el.style.get("display") == "none"):
                return
            for child in el.children:
                if isinstance(child, str):
                    parts.append(child)
                elif child.tag not in ("style", "script"):
                    visit(child)

        visit(self)
        return " ".join(" ".join(parts).split())

    def __repr__(self) -> str:
        ident = f"#{self.id}" if self.id else ""
        return f"<{self.tag}{ident}>"


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {}, None)
        self.current = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = Element(tag, {k: ("" if v is None else v) for k, v in attrs}, self.current)
        self.current.children.append(el)
        if tag not in _VOID:
            self.current = el

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = Element(tag, {k: ("" if v is None else v) for k, v in attrs}, self.current)
        self.current.children.append(el)

    def handle_endtag(self, tag: str) -> None:
        el: Element | None = self.current
        while el is not None and el.tag != tag:
            el = el.parent
        if el is not None and el.parent is not None:
            self.current = el.parent

    def handle_data(self, data: str) -> None:
        if data:
            self.current.children.append(data)


def parse_html(markup: str) -> Element:
    """Parse a page into :class:`Element` objects; the root is a ``#document`` element."""
    parser = _Parser()
    parser.feed(markup)
    parser.close()
    root = parser.root
    for i, el in enumerate(root.elements()):
        el.index = i
        if el.tag == "textarea":
            raw = "".join(c for c in el.children if isinstance(c, str))
            el.value = raw[1:] if raw.startswith("\n") else raw
        elif el.tag == "input":
            el.value = el.attrs.get("value", "") if _input_type(el) not in ("radio", "checkbox") else \
                el.attrs.get("value", "on")
            el.checked = "checked" in el.attrs
    return root


def _input_type(el: Element) -> str:
    return el.attrs.get("type", "text").lower() if el.tag == "input" else ""


_TEXT_INPUTS = frozenset({"text", "password", "email", "search", "tel", "url", "number", ""})


def _is_textbox(el: Element) -> bool:
    return el.tag == "textarea" or (el.tag == "input" and _input_type(el) in _TEXT_INPUTS)


def _is_submit(el: Element) -> bool:
    if el.tag == "button":
        return el.attrs.get("type", "submit").lower() == "submit"
    return el.tag == "input" and _input_type(el) in ("submit", "image")


def _is_control(el: Element) -> bool:
    return el.tag in ("input", "textarea", "select", "button") and _input_type(el) != "hidden"


# ----------------------------------------------------------------------------------------------------
# Styles: the driver's own small style sheet for MockMed's markup. Colours and fonts are the page's:
# ``bg``, ``color``, ``border`` ... name CSS custom properties read from the page's <style>.


def _pad(t: float, r: float | None = None, b: float | None = None, l: float | None = None) -> tuple:  # noqa: E741
    r = t if r is None else r
    b = t if b is None else b
    l = r if l is None else l  # noqa: E741
    return (t, r, b, l)


_NONE = {"display": "none"}
_BLOCK_TAGS = frozenset({"html", "body", "div", "header", "main", "section", "nav", "footer", "form", "ul", "ol",
                         "li", "p", "h1", "h2", "h3", "h4", "h5", "h6", "fieldset", "legend", "label",
                         "article", "aside", "table", "thead", "tbody", "tfoot", "tr", "td", "th", "dl", "dt",
                         "dd", "pre", "blockquote", "figure", "hr"})
_INHERITED = ("size", "bold", "color", "linkc", "align", "line")

# (tag or None, class or None, properties); later rules win.
_RULES: list[tuple[str | None, str | None, dict[str, Any]]] = [
    ("body", None, {"bg": "bg", "color": "text", "size": 15, "line": 1.45, "linkc": "primary", "column": True}),
    ("h1", None, {"size": 24, "bold": True, "mb": 8, "line": 1.3}),
    ("h2", None, {"size": 18, "bold": True, "line": 1.3}),
    ("h3", None, {"size": 16, "bold": True, "mb": 8, "line": 1.3}),
    ("p", None, {"mb": 12}),
    ("strong", None, {"bold": True}),
    ("b", None, {"bold": True}),
    ("label", None, {"size": 14, "bold": True, "mb": 6}),
    ("legend", None, {"display": "shrink", "size": 14, "bold": True, "mb": 6}),
    ("input", None, {"display": "block", "width": "full", "height": 40, "pad": _pad(8, 12), "border": "border",
                     "radius": 6, "bg": "surface"}),
    ("textarea", None, {"display": "block", "width": "full", "height": 120, "pad": _pad(8, 12),
                        "border": "border", "radius": 6, "bg": "surface"}),
    ("button", None, {"display": "inline-block", "pad": _pad(9, 16), "border": "border", "radius": 6, "size": 14,
                      "bold": True, "line": 20 / 14, "align": "center"}),
    ("table", None, {"display": "table", "width": "full"}),
    ("th", None, {"pad": _pad(12, 20), "size": 13, "bold": True, "color": "muted", "bg": "thead-bg",
                  "bb": "border"}),
    ("td", None, {"pad": _pad(14, 20), "bb": "border"}),
    (None, "topbar", {"display": "flex", "height": 56, "pad": _pad(0, 32), "bg": "header-bg", "color": "header-text",
                      "justify": "between"}),
    (None, "brand", {"display": "flex", "gap": 10, "size": 20, "bold": True, "linkc": "header-text"}),
    (None, "logo", {"display": "inline-block", "width": 28, "height": 28, "bg": "primary", "radius": 7,
                    "color": "primary-text", "size": 20, "bold": True, "align": "center", "line": 1.0,
                    "vcenter": True}),
    (None, "usernav", {"display": "flex", "gap": 18, "size": 14, "color": "header-muted", "linkc": "header-text"}),
    (None, "page", {"maxw": 960, "pad": _pad(32, 32, 16), "grow": True}),
    (None, "page-narrow", {"maxw": 440, "pad": _pad(64, 32, 16)}),
    (None, "page-head", {"display": "flex", "justify": "between", "mb": 16}),
    (None, "muted", {"color": "muted"}),
    (None, "count", {"color": "muted", "size": 14}),
    (None, "card", {"bg": "surface", "border": "border", "radius": 10, "pad": _pad(24), "mb": 20, "trim": True}),
    (None, "card-flush", {"pad": _pad(0)}),
    (None, "card-head", {"display": "flex", "justify": "between", "mb": 12}),
    (None, "back", {"display": "shrink", "mb": 16, "size": 14}),
    (None, "field", {"mb": 18}),
    (None, "btn", {"display": "inline-block", "pad": _pad(9, 16), "border": None, "radius": 6, "size": 14,
                   "bold": True, "line": 20 / 14, "align": "center", "bw": 1}),
    (None, "btn-primary", {"bg": "primary", "color": "primary-text", "linkc": "primary-text"}),
    (None, "btn-secondary", {"bg": "surface", "color": "primary", "linkc": "primary", "border": "primary"}),
    (None, "btn-ghost", {"color": "muted", "linkc": "muted"}),
    (None, "btn-block", {"display": "block", "width": "full"}),
    (None, "form-actions", {"display": "flex", "justify": "end", "gap": 12, "mt": 8}),
    (None, "segmented", {"display": "flex", "gap": 0}),
    (None, "seg", {"pad": _pad(8, 22), "border": "border", "bg": "surface", "bold": True, "mb": 0, "size": 15,
                   "seg": True}),
    (None, "pname", {"bold": True}),
    (None, "badge", {"display": "inline-block", "pad": _pad(2, 10), "radius": 999, "size": 12, "bold": True,
                     "line": 1.45}),
    (None, "badge-high", {"color": "high", "bg": "high-bg"}),
    (None, "badge-medium", {"color": "medium", "bg": "medium-bg"}),
    (None, "badge-low", {"color": "low", "bg": "low-bg"}),
    (None, "banner", {"pad": _pad(12, 16), "radius": 8, "mb": 20, "bold": True, "bw": 1}),
    (None, "banner-success", {"bg": "success-bg", "color": "success-text", "border": "success-border"}),
    (None, "banner-error", {"bg": "danger-bg", "color": "danger-text", "border": "danger-border"}),
    (None, "encounter", {"pad": _pad(12, 0), "bt": "border"}),
    (None, "enc-meta", {"size": 13, "color": "muted", "mt": 2}),
    (None, "empty", {"color": "muted", "pad": _pad(12, 0), "bt": "border", "mb": 0}),
    (None, "foot", {"align": "center", "size": 12, "color": "muted", "pad": _pad(20, 32, 28)}),
]
_TAG_RULES: dict[str, list[dict[str, Any]]] = {}
_CLASS_RULES: dict[str, list[tuple[int, dict[str, Any]]]] = {}
for _i, (_tag, _cls, _props) in enumerate(_RULES):
    if _cls is None:
        _TAG_RULES.setdefault(_tag or "", []).append(_props)
    else:
        _CLASS_RULES.setdefault(_cls, []).append((_i, _props))


def _compute_style(el: Element, parent: dict[str, Any]) -> dict[str, Any]:
    tag = el.tag
    style: dict[str, Any] = {k: parent[k] for k in _INHERITED if k in parent}
    if tag in ("head", "title", "style", "script", "meta", "link", "template", "noscript") or "hidden" in el.attrs:
        style["display"] = "none"
        return style
    if tag == "input" and _input_type(el) == "hidden":
        style["display"] = "none"
        return style
    style["display"] = "block" if tag in _BLOCK_TAGS or tag == "#document" else "inline"
    for props in _TAG_RULES.get(tag, ()):
        style.update(props)
    matched = sorted((i, props) for cls in el.classes for (i, props) in _CLASS_RULES.get(cls, ()))
    for _, props in matched:
        style.update(props)
    if tag == "input" and _input_type(el) in ("radio", "checkbox"):
        in_seg = el.parent is not None and "seg" in el.parent.classes
        style.update({"display": "overlay"} if in_seg else {"display": "inline-block", "width": 16, "height": 16,
                                                             "pad": _pad(0), "radius": 8})
    if tag == "td" and el.parent is not None and el.parent.parent is not None and \
            el.parent.parent.tag == "tbody" and _last_element(el.parent.parent) is el.parent:
        style["bb"] = None  # tbody tr:last-child td { border-bottom: 0 }
    if tag == "a" and "href" in el.attrs:
        style["color"] = style.get("linkc", "primary")
    return style


def _last_element(el: Element) -> Element | None:
    for child in reversed(el.children):
        if isinstance(child, Element):
            return child
    return None


_VAR_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
_VAR_DECL = re.compile(r"--([\w-]+)\s*:\s*([^;]+);?")


def page_vars(root: Element) -> dict[str, str]:
    """The page's CSS custom properties for its body's classes (``:root`` then ``body.<class>``)."""
    css = "\n".join(c for el in root.elements() if el.tag == "style" for c in el.children if isinstance(c, str))
    body = next((el for el in root.elements() if el.tag == "body"), None)
    wanted = {":root", "html", "body"} | {f"body.{c}" for c in (body.classes if body else ())}
    out: dict[str, str] = {}
    for selectors, block in _VAR_RULE.findall(css):
        if any(s.strip() in wanted for s in selectors.split(",")):
            for name, value in _VAR_DECL.findall(block):
                out[name] = value.strip()
    return out


# ----------------------------------------------------------------------------------------------------
# Fonts.

_FONT_DIRS = ("/usr/share/fonts/truetype/liberation", "/usr/share/fonts/truetype/dejavu",
              "/usr/share/fonts/truetype/liberation2", "/usr/share/fonts/TTF")
_FONT_FILES = {
    ("sans", False): ("LiberationSans-Regular.ttf", "DejaVuSans.ttf"),
    ("sans", True): ("LiberationSans-Bold.ttf", "DejaVuSans-Bold.ttf"),
    ("serif", False): ("DejaVuSerif.ttf", "LiberationSerif-Regular.ttf", "DejaVuSans.ttf"),
    ("serif", True): ("DejaVuSerif-Bold.ttf", "LiberationSerif-Bold.ttf", "DejaVuSans-Bold.ttf"),
}


@lru_cache(maxsize=64)
def _font(family: str, bold: bool, size: int) -> Any:
    from PIL import ImageFont

    for name in _FONT_FILES[(family, bold)]:
        for folder in _FONT_DIRS:
            path = Path(folder) / name
            if path.exists():
                return ImageFont.truetype(str(path), size)
    return ImageFont.load_default(size=size)


@lru_cache(maxsize=8192)
def _text_width(family: str, bold: bool, size: int, text: str) -> float:
    return float(_font(family, bold, size).getlength(text))


def _family(vars_: dict[str, str]) -> str:
    value = vars_.get("font", "").lower()
    return "serif" if "serif" in value and "sans-serif" not in value else "sans"


# ----------------------------------------------------------------------------------------------------
# Layout.

_BLOCKISH = frozenset({"block", "shrink", "flex", "table"})
_WORDS = re.compile(r"\s+|[^\s]+")


class _Layout:
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
        el.style = _compute_style(el, parent)
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
        return _text_width(self.family, bool(style.get("bold")), int(style.get("size", 15)), text)

    @staticmethod
    def _line_height(style: dict[str, Any]) -> float:
        return round(style.get("size", 15) * style.get("line", 1.45))

    # -- intrinsic widths -------------------------------------------------------------------------
    def _max_content(self, el: Element) -> float:
        if el._mc is not None:
            return el._mc
        st = el.style
        t, r, b, l = st.get("pad", (0, 0, 0, 0))
        bw = self._bw(st)
        if isinstance(st.get("width"), (int, float)):
            el._mc = float(st["width"])
            return el._mc
        if el.tag in ("input", "textarea"):
            el._mc = 200.0
            return el._mc
        display = st["display"]
        kids = [c for c in el.children if not (isinstance(c, Element) and c.style.get("display") in ("none", "overlay"))]
        if display == "flex":
            items = [c for c in kids if isinstance(c, Element)]
            inner = sum(self._max_content(c) for c in items) + st.get("gap", 0) * max(0, len(items) - 1)
        elif display == "table":
            inner = sum(self._table_columns(el))
        else:
            inner = 0.0
            run = 0.0
            for child in kids:
                if isinstance(child, Element) and child.style["display"] in _BLOCKISH:
                    inner = max(inner, run, self._max_content(child))
                    run = 0.0
                else:
                    run += self._inline_width(child, st)
            inner = max(inner, run)
        el._mc = inner + l + r + 2 * bw
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
        mt, mb = st.get("mt", 0), st.get("mb", 0)
        t, r, b, l = st.get("pad", (0, 0, 0, 0))
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
        cx, cy, cw = x0 + l + bw, y0 + t + bw, max(0.0, w - l - r - 2 * bw)
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
        blocks = [c for c in el.children if isinstance(c, Element) and c.style["display"] in _BLOCKISH]
        last = blocks[-1] if blocks and el.style.get("trim") else None
        grow_child: Element | None = None
        for index, child in enumerate(el.children):
            if isinstance(child, Element) and child.style["display"] in _BLOCKISH:
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
            grow_child.box[3] += extra
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
            widths.append(item.box[2] - item.box[0])
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
        for item, outer, dx in zip(items, heights, offsets):
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
            for cell, width in zip(cells, cols):
                heights.append(self._layout(cell, x, y, width))
                x += width
            row_h = max(heights, default=0.0)
            for cell, h in zip(cells, heights):
                if h < row_h:
                    self._shift_children(cell, 0, (row_h - h) / 2)
                    cell.box[3] = cell.box[1] + row_h
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
            items.append(["box", node.box[2] - node.box[0], outer, node])

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


# ----------------------------------------------------------------------------------------------------
# The accessibility tree.

_EXPLICIT_ROLES = frozenset({"button", "link", "status", "alert", "heading", "textbox", "radio", "table", "row",
                             "cell", "form", "checkbox"})
_LEAF_ROLES = frozenset({"button", "link", "heading", "textbox", "radio", "checkbox", "status", "alert", "text"})


def _role(el: Element) -> str | None:
    explicit = el.attrs.get("role", "").strip().lower()
    if explicit in ("presentation", "none"):
        return None
    if explicit in _EXPLICIT_ROLES:
        return explicit
    tag = el.tag
    if tag == "a" and "href" in el.attrs:
        return "link"
    if tag == "button":
        return "button"
    if tag == "input":
        kind = _input_type(el)
        if kind in ("submit", "button", "reset", "image"):
            return "button"
        if kind in ("radio", "checkbox"):
            return kind
        if kind in _TEXT_INPUTS:
            return "textbox"
        return None
    if tag == "textarea":
        return "textbox"
    if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
        return "heading"
    if tag == "table":
        return "table"
    if tag == "tr":
        return "row"
    if tag in ("td", "th"):
        return "cell"
    if tag == "form" and (el.attrs.get("aria-label") or el.attrs.get("aria-labelledby")):
        return "form"
    return None


class _TreeBuilder:
    def __init__(self, root: Element, scroll_y: float, password_mask: bool = True) -> None:
        self.root = root
        self.scroll_y = scroll_y
        self.by_id: dict[str, Element] = {}
        self.labels: dict[str, Element] = {}
        self.html_ids: dict[str, Element] = {}
        for el in root.elements():
            if el.id and el.id not in self.html_ids:
                self.html_ids[el.id] = el
            if el.tag == "label" and el.attrs.get("for"):
                self.labels.setdefault(el.attrs["for"], el)
        self._role_cache: dict[int, bool] = {}

    def build(self, title: str) -> dict[str, Any]:
        html = next((c for c in self.root.children if isinstance(c, Element) and c.tag == "html"), self.root)
        node = {"role": "document", "name": title, "id": "document",
                "bbox": self._bbox(html) or [0, 0, 0, 0], "children": []}
        self.by_id["document"] = html
        node["children"] = self._children(html, ())
        return node

    def _bbox(self, el: Element) -> list[int] | None:
        if el.box is None:
            return None
        x0, y0, x1, y1 = el.box
        return [round(x0), round(y0 - self.scroll_y), round(x1), round(y1 - self.scroll_y)]

    def _hidden(self, el: Element) -> bool:
        return el.style.get("display") == "none" or el.attrs.get("aria-hidden") == "true"

    def _has_role_inside(self, el: Element) -> bool:
        key = el.index
        if key not in self._role_cache:
            self._role_cache[key] = any(
                not self._hidden(d) and (_role(d) is not None or (d.tag == "label" and self._wrapped_control(d)))
                for d in el.elements() if d is not el)
        return self._role_cache[key]

    def _wrapped_control(self, label: Element) -> Element | None:
        for d in label.elements():
            if d is not label and _is_control(d):
                return d
        return None

    def control_of(self, label: Element) -> Element | None:
        target = label.attrs.get("for")
        if target:
            el = self.html_ids.get(target)
            return el if el is not None and _is_control(el) else None
        return self._wrapped_control(label)

    def name_of(self, el: Element, role: str) -> str:
        label = el.attrs.get("aria-label")
        if label:
            return " ".join(label.split())
        labelled = el.attrs.get("aria-labelledby")
        if labelled:
            parts = [self.html_ids[i].text() for i in labelled.split() if i in self.html_ids]
            return " ".join(" ".join(parts).split())
        if role in ("textbox", "radio", "checkbox") or (el.tag == "input" and role == "button"):
            if el.tag == "input" and role == "button":
                return el.attrs.get("value", "Submit")
            if el.id and el.id in self.labels:
                return self.labels[el.id].text()
            wrapper = next((a for a in el.ancestors() if a.tag == "label"), None)
            if wrapper is not None:
                return wrapper.text()
            return " ".join(el.attrs.get("placeholder", "").split())
        if role == "table":
            caption = next((c for c in el.children if isinstance(c, Element) and c.tag == "caption"), None)
            return caption.text() if caption is not None else ""
        if role in ("form", "row"):
            return ""
        return el.text()

    def _gen_id(self, el: Element, role: str, path: tuple[int, ...]) -> str:
        if el.id:
            node_id = el.id
        else:
            node_id = f"{role}:{'.'.join(map(str, path))}"
        self.by_id.setdefault(node_id, el)
        return node_id

    def _node(self, el: Element, role: str, path: tuple[int, ...], name: str | None = None,
              box_of: Element | None = None) -> dict[str, Any]:
        node: dict[str, Any] = {
            "role": role,
            "name": self.name_of(el, role) if name is None else name,
            "id": self._gen_id(el, role, path),
            "bbox": self._bbox(box_of or el) or [0, 0, 0, 0],
            "children": [],
        }
        if role == "textbox":
            node["value"] = "•" * len(el.value) if _input_type(el) == "password" else el.value
        elif role in ("radio", "checkbox"):
            node["checked"] = el.checked
        if role not in _LEAF_ROLES:
            if role == "cell" and not self._has_role_inside(el):
                pass
            else:
                node["children"] = self._children(el, path)
        if role == "row":
            node["name"] = " ".join(c["name"] for c in node["children"] if c["role"] == "cell" and c["name"])
        return node

    def _children(self, el: Element, path: tuple[int, ...]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for index, child in enumerate(el.children):
            if isinstance(child, str):
                text = " ".join(child.split())
                if not text or _role(el) is not None and _role(el) in _LEAF_ROLES:
                    continue
                frags = [f for f in el.frags if f[7] == index]
                if not frags:
                    continue
                box = [min(f[0] for f in frags), min(f[1] for f in frags), max(f[0] + f[2] for f in frags),
                       max(f[1] + f[3] for f in frags)]
                holder = Element("#text", {}, el)
                holder.box = box
                child_path = path + (len(out),)
                node_id = f"text:{'.'.join(map(str, child_path))}"
                self.by_id.setdefault(node_id, el)
                out.append({"role": "text", "name": text, "id": node_id, "bbox": self._bbox(holder),
                            "children": []})
                continue
            out.extend(self._element_nodes(child, path, len(out)))
        return out

    def _element_nodes(self, el: Element, path: tuple[int, ...], start: int) -> list[dict[str, Any]]:
        if self._hidden(el) or (el.box is None and el.style.get("display") != "inline"):
            return []
        role = _role(el)
        if role is not None:
            return [self._node(el, role, path + (start,))]
        if el.tag == "label":
            control = self._wrapped_control(el)
            if control is not None:
                role = _role(control)
                if role is None:
                    return []
                box_of = control if control.box is not None else el
                return [self._node(control, role, path + (start,), box_of=box_of)]
        if not self._has_role_inside(el) and not any(
                isinstance(c, Element) and c.style.get("display") in _BLOCKISH and not self._hidden(c)
                for c in el.children):
            text = el.text()
            if not text or el.box is None:
                return []
            return [self._node(el, "text", path + (start,), name=text)]
        # A plain container: its content joins the parent's children.
        nodes: list[dict[str, Any]] = []
        for index, child in enumerate(el.children):
            if isinstance(child, str):
                text = " ".join(child.split())
                frags = [f for f in el.frags if f[7] == index]
                if not text or not frags:
                    continue
                holder = Element("#text", {}, el)
                holder.box = [min(f[0] for f in frags), min(f[1] for f in frags),
                              max(f[0] + f[2] for f in frags), max(f[1] + f[3] for f in frags)]
                node_id = f"text:{'.'.join(map(str, path + (start + len(nodes),)))}"
                self.by_id.setdefault(node_id, el)
                nodes.append({"role": "text", "name": text, "id": node_id, "bbox": self._bbox(holder),
                              "children": []})
            else:
                nodes.extend(self._element_nodes(child, path, start + len(nodes)))
        return nodes


def iter_nodes(tree: dict[str, Any], ancestors: tuple[dict[str, Any], ...] = ()
               ) -> Iterator[tuple[dict[str, Any], tuple[dict[str, Any], ...]]]:
    """Every node of an accessibility tree with its ancestors (root first), in document order."""
    yield tree, ancestors
    for child in tree.get("children", ()):
        yield from iter_nodes(child, ancestors + (tree,))


def find_nodes(tree: dict[str, Any], *, role: str | None = None, name: str | None = None,
               name_contains: str | None = None, within: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Nodes matching ``role`` and ``name`` (exact) or ``name_contains`` (case-insensitive), in order."""
    base = within if within is not None else tree
    found = []
    for node, _ in iter_nodes(base):
        if role is not None and node["role"] != role:
            continue
        if name is not None and node["name"] != name:
            continue
        if name_contains is not None and name_contains.lower() not in node["name"].lower():
            continue
        found.append(node)
    return found


def center(node: dict[str, Any]) -> tuple[int, int]:
    """The middle of a node's box, in pixels."""
    x0, y0, x1, y1 = node["bbox"]
    return (x0 + x1) // 2, (y0 + y1) // 2


# ----------------------------------------------------------------------------------------------------
# Painting.


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
    colour = lambda name, fb="#000000": _rgb(vars_.get(name) if name else None, fb)  # noqa: E731
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
            if el.tag in ("input", "textarea") and _is_textbox(el):
                if el.index == focused:
                    draw.rounded_rectangle(rect(box), radius=radius, outline=colour("primary"), width=2)
                value = values.get(el.index, "")
                if _input_type(el) == "password":
                    value = "•" * len(value)
                font = _font(family, False, int(st.get("size", 15)))
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
            font = _font(family, bold, size)
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


def _wrap(text: str, font: Any, width: float) -> list[str]:
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


# ----------------------------------------------------------------------------------------------------
# The headless driver.


class _Page:
    """One loaded page: its DOM, layout, palette and title."""

    def __init__(self, url: str, status: int, markup: str, viewport: tuple[int, int]) -> None:
        self.url = url
        self.status = status
        self.html = markup
        self.root = parse_html(markup)
        self.vars = page_vars(self.root)
        self.family = _family(self.vars)
        self.layout = _Layout(self.root, viewport, self.family)
        title = next((el for el in self.root.elements() if el.tag == "title"), None)
        self.title = title.text(skip_hidden=False) if title is not None else ""
        self.elements = list(self.root.elements())


class HeadlessDriver:
    """MockMed over HTTP with no browser: see the module docstring for the tree and the actions.

    ``observe()`` loads ``base_url`` the first time; ``goto(path)`` loads any page of the app.
    """

    def __init__(self, base_url: str, viewport: tuple[int, int] = VIEWPORT, *, timeout: float = 10.0,
                 client: Any = None) -> None:
        import httpx

        self.base_url = base_url
        self.viewport = (int(viewport[0]), int(viewport[1]))
        # A plain-HTTP app needs no TLS context; building one costs more than a whole episode.
        plain = str(base_url).startswith("http://")
        self._client = client if client is not None else httpx.Client(
            follow_redirects=True, timeout=timeout, **({"verify": False} if plain else {}))
        self._own_client = client is None
        self._page: _Page | None = None
        self._focus: Element | None = None
        self._select_all = False
        self._scroll = 0.0
        self._effect = ""
        self._tree_cache: tuple[Any, ...] | None = None
        self._builder: _TreeBuilder | None = None

    # -- pages ------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return self._page.url if self._page is not None else self.base_url

    @property
    def current_html(self) -> str:
        return self._ensure().html

    @property
    def status_code(self) -> int:
        return self._ensure().status

    def goto(self, url: str) -> Observation:
        """Load ``url`` (absolute, or relative to the current page or ``base_url``) and observe it."""
        self._get(urllib.parse.urljoin(self.url, url))
        self._effect = f"navigated to {self.url}"
        return self.observe()

    def _ensure(self) -> _Page:
        if self._page is None:
            self._get(self.base_url)
        assert self._page is not None
        return self._page

    def _load(self, response: Any) -> None:
        self._page = _Page(str(response.url), response.status_code, response.text, self.viewport)
        self._focus = next((el for el in self._page.elements if "autofocus" in el.attrs and _is_control(el)), None)
        self._select_all = False
        self._scroll = 0.0
        self._tree_cache = None

    def _get(self, url: str) -> None:
        self._load(self._client.get(url))

    def close(self) -> None:
        if self._own_client:
            self._client.close()

    def __enter__(self) -> HeadlessDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- observing --------------------------------------------------------------------------------
    def _tree(self) -> tuple[dict[str, Any], _TreeBuilder]:
        page = self._ensure()
        key = (id(page), self._scroll, tuple((el.value, el.checked) for el in page.elements if _is_control(el)))
        if self._tree_cache is not None and self._tree_cache[0] == key:
            return self._tree_cache[1], self._tree_cache[2]
        builder = _TreeBuilder(page.root, self._scroll)
        tree = builder.build(page.title)
        self._tree_cache = (key, tree, builder)
        return tree, builder

    def accessibility_tree(self) -> dict[str, Any]:
        return self._tree()[0]

    def observe(self) -> Observation:
        page = self._ensure()
        tree, _ = self._tree()
        values = {el.index: el.value for el in page.elements if _is_textbox(el)}
        checked = {el.index for el in page.elements if el.checked}
        focused = self._focus.index if self._focus is not None else None
        scroll = self._scroll
        viewport = self.viewport

        def render() -> bytes:
            return paint(page.root, viewport=viewport, vars_=page.vars, family=page.family, scroll_y=scroll,
                         values=values, checked=checked, focused=focused)

        return Observation(
            accessibility_tree=tree, window_title=page.title, url=page.url, app_name=APP_NAME, viewport=viewport,
            raw={"http_status": page.status, "focused": self._focus_id(), "effect": self._effect,
                 "scroll_y": int(scroll), "page_height": int(page.layout.height)},
            renderer=render,
        )

    def screenshot(self) -> bytes:
        """PNG bytes of the current screen (the same as ``observe().screenshot``)."""
        shot = self.observe().screenshot
        assert shot is not None
        return shot

    def _focus_id(self) -> str | None:
        if self._focus is None:
            return None
        if self._focus.id:
            return self._focus.id
        _, builder = self._tree()
        return next((k for k, v in builder.by_id.items() if v is self._focus), None)

    # -- acting -----------------------------------------------------------------------------------
    def act(self, action: Action) -> Observation:
        """Carry out one action and observe the result."""
        self._ensure()
        kind = action.type
        self._effect = ""
        if kind in ("click", "double_click"):
            target = self._target(action)
            if target is None:
                self._blur()
                self._effect = f"clicked nothing at {self._point(action)}"
            else:
                self._activate(target)
        elif kind == "type":
            if action.target_id is not None:
                element = self._element(action.target_id)
                self._activate(element)
            self._type(action.text or "")
        elif kind == "key":
            self._key(action.key or "")
        elif kind == "hotkey":
            keys = [k.lower() for k in action.keys]
            if set(keys) in ({"ctrl", "a"}, {"control", "a"}, {"cmd", "a"}, {"meta", "a"}) and \
                    self._focus is not None and _is_textbox(self._focus):
                self._select_all = True
                self._effect = f"selected the text of {self._describe(self._focus)}"
            elif keys and keys[-1] in ("enter", "return", "tab", "backspace"):
                self._key(keys[-1])
            else:
                self._effect = f"ignored hotkey {'+'.join(action.keys)}"
        elif kind == "scroll":
            page = self._ensure()
            amount = (action.scroll_amount or 3) * 100
            direction = action.scroll_direction or "down"
            if direction in ("down", "up"):
                limit = max(0.0, page.layout.height - self.viewport[1])
                delta = amount if direction == "down" else -amount
                self._scroll = min(limit, max(0.0, self._scroll + delta))
            self._effect = f"scrolled to y={int(self._scroll)}"
        else:  # wait, right_click, drag and the terminal actions change nothing here
            self._effect = f"{kind}: nothing to do"
        return self.observe()

    def _point(self, action: Action) -> tuple[int, int] | None:
        return action.to_pixels(*self.viewport)

    def _element(self, target_id: str) -> Element:
        page = self._ensure()
        _, builder = self._tree()
        element = builder.html_ids.get(target_id) or builder.by_id.get(target_id)
        if element is None:
            raise LookupError(f"no element with id {target_id!r} on {page.url}")
        return element

    def _target(self, action: Action) -> Element | None:
        if action.target_id is not None:
            element = self._element(action.target_id)
            if self._activatable(element) is element:
                return element
            if element.box is None:
                return element
            x = (element.box[0] + element.box[2]) / 2
            y = (element.box[1] + element.box[3]) / 2 - self._scroll
            return self._hit(x, y) or element
        point = self._point(action)
        assert point is not None
        return self._hit(*point)

    def element_at(self, x: float, y: float) -> Element | None:
        """The topmost element drawn at viewport pixel (x, y)."""
        return self._hit(x, y)

    def _hit(self, x: float, y: float) -> Element | None:
        page = self._ensure()
        py = y + self._scroll
        hit = None
        for el in page.elements:
            box = el.box
            if box is not None and box[0] <= x < box[2] and box[1] <= py < box[3] and \
                    el.style.get("display") not in ("none",) and el.tag not in ("html", "body"):
                hit = el
        return hit

    def _activatable(self, el: Element) -> Element | None:
        for node in (el, *el.ancestors()):
            if node.attrs.get("disabled") is not None and _is_control(node):
                return None
            if node.tag == "a" and "href" in node.attrs:
                return node
            if _is_control(node):
                return node
            if node.tag == "label":
                builder = self._tree()[1]
                control = builder.control_of(node)
                return control
        return None

    def _activate(self, el: Element) -> None:
        target = self._activatable(el)
        if target is None:
            self._blur()
            self._effect = f"clicked {self._describe(el)}: nothing to activate"
            return
        if target.tag == "a":
            href = target.attrs.get("href", "")
            if not href or href.startswith("#") or href.lower().startswith("javascript:"):
                self._effect = f"clicked link {self._describe(target)}: no navigation"
                return
            self._get(urllib.parse.urljoin(self.url, href))
            self._effect = f"followed {self._describe(target)} to {self.url}"
            return
        if _is_textbox(target):
            self._set_focus(target)
            self._effect = f"focused {self._describe(target)}"
            return
        kind = _input_type(target)
        if kind == "radio":
            self._check(target)
            return
        if kind == "checkbox":
            target.checked = not target.checked
            self._set_focus(target)
            self._effect = f"{'checked' if target.checked else 'unchecked'} {self._describe(target)}"
            return
        if _is_submit(target):
            self._submit(self._form_of(target), target)
            return
        if target.tag == "button" and target.attrs.get("type", "").lower() == "reset":
            form = self._form_of(target)
            if form is not None:
                for field in form.elements():
                    if _is_textbox(field):
                        field.value = field.attrs.get("value", "")
                    elif _input_type(field) in ("radio", "checkbox"):
                        field.checked = "checked" in field.attrs
            self._effect = "reset the form"
            return
        self._set_focus(target)
        self._effect = f"clicked {self._describe(target)}"

    def _check(self, radio: Element) -> None:
        name = radio.attrs.get("name")
        scope = self._form_of(radio) or self._ensure().root
        if name:
            for other in scope.elements():
                if other is not radio and _input_type(other) == "radio" and other.attrs.get("name") == name:
                    other.checked = False
        radio.checked = True
        self._set_focus(radio)
        self._effect = f"checked {self._describe(radio)}"

    def _set_focus(self, el: Element | None) -> None:
        if el is not self._focus:
            self._select_all = False
        self._focus = el

    def _blur(self) -> None:
        self._set_focus(None)

    def _form_of(self, el: Element) -> Element | None:
        owner = el.attrs.get("form")
        if owner:
            return self._tree()[1].html_ids.get(owner)
        return next((a for a in el.ancestors() if a.tag == "form"), None)

    def _submit(self, form: Element | None, submitter: Element | None) -> None:
        if form is None:
            self._effect = f"clicked {self._describe(submitter) if submitter else 'submit'}: no form"
            return
        pairs: list[tuple[str, str]] = []
        for field in form.elements():
            name = field.attrs.get("name")
            if not name or field.attrs.get("disabled") is not None:
                continue
            if field.tag == "textarea":
                pairs.append((name, field.value.replace("\r\n", "\n").replace("\n", "\r\n")))
            elif field.tag == "input":
                kind = _input_type(field)
                if kind in ("radio", "checkbox"):
                    if field.checked:
                        pairs.append((name, field.value))
                elif kind in ("submit", "image", "button", "reset"):
                    continue
                else:
                    pairs.append((name, field.value))
            elif field.tag == "select":
                chosen = next((o for o in field.elements() if o.tag == "option" and "selected" in o.attrs), None)
                if chosen is not None:
                    pairs.append((name, chosen.attrs.get("value", chosen.text())))
        if submitter is not None and submitter.attrs.get("name"):
            pairs.append((submitter.attrs["name"], submitter.attrs.get("value", "")))
        action = urllib.parse.urljoin(self.url, form.attrs.get("action") or self.url)
        method = (form.attrs.get("method") or "get").lower()
        body = urllib.parse.urlencode(pairs)
        if method == "post":
            response = self._client.post(action, content=body.encode("utf-8"),
                                         headers={"Content-Type": "application/x-www-form-urlencoded"})
        else:
            response = self._client.get(urllib.parse.urlsplit(action)._replace(query=body).geturl())
        self._load(response)
        self._effect = f"submitted {method.upper()} {urllib.parse.urlsplit(action).path} -> {self.url}"

    def _type(self, text: str) -> None:
        field = self._focus
        if field is None or not _is_textbox(field):
            self._effect = f"typed {text!r} with no text field focused: nothing changed"
            return
        if field.tag == "input":
            text = text.replace("\r", "").replace("\n", "")
        if self._select_all:
            field.value = text
            self._select_all = False
        else:
            field.value += text
        self._effect = f"typed into {self._describe(field)}"

    def _key(self, key: str) -> None:
        name = key.strip().lower()
        field = self._focus
        if name in ("enter", "return"):
            if field is None:
                self._effect = "Enter with nothing focused: nothing happened"
            elif field.tag == "textarea":
                self._type("\n")
            elif field.tag == "a" or _is_submit(field):
                self._activate(field)
            elif field.tag == "input" and _input_type(field) not in ("button", "reset"):
                form = self._form_of(field)
                submitter = next((el for el in form.elements() if _is_submit(el)), None) if form else None
                self._submit(form, submitter)
            else:
                self._effect = f"Enter on {self._describe(field)}: nothing happened"
        elif name == "tab":
            order = [el for el in self._ensure().elements if self._focusable(el)]
            if order:
                position = order.index(field) + 1 if field in order else 0
                self._set_focus(order[position % len(order)])
                self._effect = f"focused {self._describe(self._focus)}"
        elif name == "backspace":
            if field is not None and _is_textbox(field):
                field.value = "" if self._select_all else field.value[:-1]
                self._select_all = False
                self._effect = f"deleted in {self._describe(field)}"
        elif name in ("space", " "):
            if field is not None and _is_textbox(field):
                self._type(" ")
            elif field is not None:
                self._activate(field)
        elif len(key) == 1:
            self._type(key)
        else:
            self._effect = f"key {key!r}: nothing happened"

    def _focusable(self, el: Element) -> bool:
        if el.box is None or el.style.get("display") == "none":
            return False
        return (el.tag == "a" and "href" in el.attrs) or (_is_control(el) and el.attrs.get("disabled") is None)

    @staticmethod
    def _describe(el: Element | None) -> str:
        if el is None:
            return "nothing"
        if el.id:
            return f"#{el.id}"
        text = el.text()
        return f"<{el.tag}> {text[:30]!r}" if text else f"<{el.tag}>"


# ----------------------------------------------------------------------------------------------------
# The real-browser driver.

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ("--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--no-first-run")

# The same tree as the headless driver's, built in the page from the live DOM and its real boxes.
_TREE_JS = r"""
() => {
  const LEAF = new Set(["button","link","heading","textbox","radio","checkbox","status","alert","text"]);
  const EXPLICIT = new Set(["button","link","status","alert","heading","textbox","radio","table","row","cell",
                            "form","checkbox"]);
  const TEXT_INPUTS = new Set(["text","password","email","search","tel","url","number",""]);
  const norm = s => (s || "").replace(/\s+/g, " ").trim();
  const hidden = el => {
    if (el.getAttribute("aria-hidden") === "true") return true;
    const cs = getComputedStyle(el);
    return cs.display === "none" || cs.visibility === "hidden";
  };
  const isControl = el => ["INPUT","TEXTAREA","SELECT","BUTTON"].includes(el.tagName) &&
                          !(el.tagName === "INPUT" && el.type === "hidden");
  const textOf = el => {
    let out = [];
    const visit = n => {
      for (const c of n.childNodes) {
        if (c.nodeType === 3) out.push(c.data);
        else if (c.nodeType === 1 && !["STYLE","SCRIPT"].includes(c.tagName) &&
                 c.getAttribute("aria-hidden") !== "true" && getComputedStyle(c).display !== "none") visit(c);
      }
    };
    visit(el);
    return norm(out.join(" "));
  };
  const role = el => {
    const explicit = (el.getAttribute("role") || "").trim().toLowerCase();
    if (explicit === "presentation" || explicit === "none") return null;
    if (EXPLICIT.has(explicit)) return explicit;
    const tag = el.tagName;
    if (tag === "A" && el.hasAttribute("href")) return "link";
    if (tag === "BUTTON") return "button";
    if (tag === "INPUT") {
      const t = (el.getAttribute("type") || "text").toLowerCase();
      if (["submit","button","reset","image"].includes(t)) return "button";
      if (t === "radio" || t === "checkbox") return t;
      if (TEXT_INPUTS.has(t)) return "textbox";
      return null;
    }
    if (tag === "TEXTAREA") return "textbox";
    if (/^H[1-6]$/.test(tag)) return "heading";
    if (tag === "TABLE") return "table";
    if (tag === "TR") return "row";
    if (tag === "TD" || tag === "TH") return "cell";
    if (tag === "FORM" && (el.getAttribute("aria-label") || el.getAttribute("aria-labelledby"))) return "form";
    return null;
  };
  const wrapped = label => label.querySelector("input:not([type=hidden]),textarea,select,button");
  const hasRoleInside = el => {
    for (const d of el.querySelectorAll("*")) {
      if (hidden(d)) continue;
      if (role(d) !== null || (d.tagName === "LABEL" && wrapped(d))) return true;
    }
    return false;
  };
  const blockish = el => {
    const d = getComputedStyle(el).display;
    return d === "block" || d === "flex" || d === "table" || d === "grid" || d === "list-item";
  };
  const nameOf = (el, r) => {
    const aria = el.getAttribute("aria-label");
    if (aria) return norm(aria);
    if (r === "textbox" || r === "radio" || r === "checkbox" || (el.tagName === "INPUT" && r === "button")) {
      if (el.tagName === "INPUT" && r === "button") return el.value || "Submit";
      if (el.id) { const l = document.querySelector(`label[for="${CSS.escape(el.id)}"]`); if (l) return textOf(l); }
      const w = el.closest("label"); if (w) return textOf(w);
      return norm(el.getAttribute("placeholder"));
    }
    if (r === "table") { const c = el.querySelector("caption"); return c ? textOf(c) : ""; }
    if (r === "form" || r === "row") return "";
    return textOf(el);
  };
  const box = el => {
    const b = el.getBoundingClientRect();
    return [Math.round(b.left), Math.round(b.top), Math.round(b.right), Math.round(b.bottom)];
  };
  const textBox = (node) => {
    const range = document.createRange(); range.selectNodeContents(node);
    const b = range.getBoundingClientRect();
    return [Math.round(b.left), Math.round(b.top), Math.round(b.right), Math.round(b.bottom)];
  };
  const tag = (el, id) => { el.setAttribute("data-agentbench-id", id); return id; };
  const makeNode = (el, r, path, name, boxOf) => {
    const id = tag(el, el.id || `${r}:${path.join(".")}`);
    const node = {role: r, name: name === undefined ? nameOf(el, r) : name, id, bbox: box(boxOf || el), children: []};
    if (r === "textbox") node.value = el.type === "password" ? "•".repeat(el.value.length) : el.value;
    else if (r === "radio" || r === "checkbox") node.checked = el.checked;
    if (!LEAF.has(r) && !(r === "cell" && !hasRoleInside(el))) node.children = children(el, path);
    if (r === "row") node.name = node.children.filter(c => c.role === "cell" && c.name).map(c => c.name).join(" ");
    return node;
  };
  const children = (el, path) => {
    const out = [];
    for (const c of el.childNodes) {
      if (c.nodeType === 3) {
        const t = norm(c.data); const r = role(el);
        if (!t || (r && LEAF.has(r))) continue;
        out.push({role: "text", name: t, id: `text:${path.concat([out.length]).join(".")}`, bbox: textBox(c),
                  children: []});
      } else if (c.nodeType === 1) out.push(...elementNodes(c, path, out.length));
    }
    return out;
  };
  const elementNodes = (el, path, start) => {
    if (hidden(el) || ["HEAD","SCRIPT","STYLE","TEMPLATE"].includes(el.tagName)) return [];
    if (el.tagName === "INPUT" && el.type === "hidden") return [];
    const r = role(el);
    if (r !== null) return [makeNode(el, r, path.concat([start]))];
    if (el.tagName === "LABEL") {
      const c = wrapped(el);
      if (c) { const cr = role(c); return cr ? [makeNode(c, cr, path.concat([start]), undefined, el)] : []; }
    }
    const blockKids = [...el.children].some(c => !hidden(c) && blockish(c));
    if (!hasRoleInside(el) && !blockKids) {
      const t = textOf(el);
      return t ? [makeNode(el, "text", path.concat([start]), t)] : [];
    }
    const nodes = [];
    for (const c of el.childNodes) {
      if (c.nodeType === 3) {
        const t = norm(c.data); if (!t) continue;
        nodes.push({role: "text", name: t, id: `text:${path.concat([start + nodes.length]).join(".")}`,
                    bbox: textBox(c), children: []});
      } else if (c.nodeType === 1) nodes.push(...elementNodes(c, path, start + nodes.length));
    }
    return nodes;
  };
  const root = document.documentElement;
  tag(root, "document");
  return {role: "document", name: document.title, id: "document", bbox: box(root), children: children(root, [])};
}
"""


def browser_problem(executable_path: str = CHROMIUM) -> str | None:
    """Why the browser driver cannot start here (no playwright package, no Chromium), or None.
    Checked when the benchmark is made, so a missing piece is one usage line, not an error per item."""
    import importlib.util

    if importlib.util.find_spec("playwright") is None:
        return "--mockmed-driver browser needs the playwright package: pip install 'pytest-agentbench[browser]'"
    if not Path(executable_path).exists():
        return (f"--mockmed-driver browser needs Chromium at {executable_path} (apt-get install chromium); "
                "it never downloads a browser")
    return None


class PlaywrightDriver:
    """MockMed in headless Chromium, with the same interface and tree as :class:`HeadlessDriver`.

    Uses Debian's Chromium at ``executable_path``; the ``playwright`` package is imported on first
    use and no browser is ever downloaded. ``close()`` (or leaving the ``with``) ends the browser.
    Screenshots are taken at each observation (``screenshots=False`` skips them), so a step costs
    about 0.1-0.3 s against the headless driver's few milliseconds. ``console_errors`` collects the
    page's console errors.
    """

    def __init__(self, base_url: str, viewport: tuple[int, int] = VIEWPORT, *,
                 executable_path: str = CHROMIUM, args: tuple[str, ...] = CHROMIUM_ARGS,
                 timeout_ms: float = 10_000, screenshots: bool = True) -> None:
        try:
            from playwright.sync_api import sync_playwright
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise RuntimeError("PlaywrightDriver needs the playwright package: pip install "
                               "'pytest-agentbench[browser]'") from exc
        if not Path(executable_path).exists():
            raise RuntimeError(f"PlaywrightDriver needs Chromium at {executable_path} (apt-get install chromium); "
                               "it never downloads a browser")
        self.base_url = base_url
        self.viewport = (int(viewport[0]), int(viewport[1]))
        self.screenshots = screenshots
        self._playwright = sync_playwright().start()
        try:
            self._browser = self._playwright.chromium.launch(executable_path=executable_path, args=list(args))
            self._context = self._browser.new_context(viewport={"width": self.viewport[0], "height": self.viewport[1]})
            self._context.set_default_timeout(timeout_ms)
            self.page = self._context.new_page()
        except BaseException:
            self._playwright.stop()
            raise
        self.console_errors: list[str] = []
        self.page.on("console", lambda m: self.console_errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.console_errors.append(str(e)))
        self._loaded = False
        self._effect = ""
        self._status: int | None = None

    @property
    def url(self) -> str:
        return self.page.url if self._loaded else self.base_url

    @property
    def current_html(self) -> str:
        self._ensure()
        return self.page.content()

    def goto(self, url: str) -> Observation:
        response = self.page.goto(urllib.parse.urljoin(self.url, url))
        self._status = response.status if response is not None else None
        self._loaded = True
        self._effect = f"navigated to {self.page.url}"
        return self.observe()

    def _ensure(self) -> None:
        if not self._loaded:
            response = self.page.goto(self.base_url)
            self._status = response.status if response is not None else None
            self._loaded = True

    def close(self) -> None:
        try:
            self._browser.close()
        finally:
            self._playwright.stop()

    def __enter__(self) -> PlaywrightDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def accessibility_tree(self) -> dict[str, Any]:
        self._ensure()
        return self.page.evaluate(_TREE_JS)

    def observe(self) -> Observation:
        self._ensure()
        self.page.wait_for_load_state()
        tree = self.page.evaluate(_TREE_JS)
        focused = self.page.evaluate("() => { const a = document.activeElement;"
                                     " return a && a !== document.body ? a.getAttribute('data-agentbench-id') : null }")
        # Taken now: the browser's page changes with the next action, so it cannot be drawn later.
        shot = self.page.screenshot(type="png") if self.screenshots else None
        return Observation(accessibility_tree=tree, window_title=self.page.title(), url=self.page.url,
                           app_name=APP_NAME, viewport=self.viewport, screenshot=shot,
                           raw={"http_status": self._status, "focused": focused, "effect": self._effect})

    def _navigating(self, fn: Callable[[], None], navigates: bool) -> None:
        if navigates:
            with self.page.expect_navigation() as info:
                fn()
            response = info.value
            self._status = response.status if response is not None else self._status
        else:
            fn()

    _WHAT_JS = r"""
    (el) => {
      if (!el) return "none";
      const t = el.closest("a[href],button,input,textarea,label,select");
      if (!t) return "none";
      if (t.tagName === "A") { const h = t.getAttribute("href") || ""; return (h && !h.startsWith("#")) ? "nav" : "none"; }
      if (t.tagName === "BUTTON") return ((t.getAttribute("type") || "submit").toLowerCase() === "submit" && t.form) ? "nav" : "none";
      if (t.tagName === "INPUT" && ["submit","image"].includes((t.type || "").toLowerCase())) return t.form ? "nav" : "none";
      return "none";
    }
    """

    def act(self, action: Action) -> Observation:
        self._ensure()
        kind = action.type
        self._effect = ""
        if kind in ("click", "double_click"):
            if action.target_id is not None:
                locator = self._locator(action.target_id)
                what = locator.evaluate(self._WHAT_JS)
                self._navigating(lambda: locator.click(), what == "nav")
                self._effect = f"clicked #{action.target_id}"
            else:
                point = action.to_pixels(*self.viewport)
                assert point is not None
                what = self.page.evaluate(f"(p) => ({self._WHAT_JS})(document.elementFromPoint(p[0], p[1]))",
                                          list(point))
                self._navigating(lambda: self.page.mouse.click(*point), what == "nav")
                self._effect = f"clicked at {point}"
        elif kind == "type":
            if action.target_id is not None:
                self._locator(action.target_id).click()
            self.page.keyboard.type(action.text or "")
            self._effect = "typed"
        elif kind == "key":
            key = action.key or ""
            name = {"enter": "Enter", "return": "Enter", "tab": "Tab", "backspace": "Backspace",
                    "space": "Space"}.get(key.lower(), key)
            navigates = name == "Enter" and self.page.evaluate(
                "() => { const a = document.activeElement; if (!a || !a.form) return a && a.tagName === 'A';"
                " return a.tagName === 'INPUT' || (a.tagName === 'BUTTON' && (a.type || 'submit') === 'submit'); }")
            self._navigating(lambda: self.page.keyboard.press(name), bool(navigates))
            self._effect = f"pressed {name}"
        elif kind == "hotkey":
            keys = [{"ctrl": "Control", "cmd": "Meta", "alt": "Alt", "shift": "Shift"}.get(k.lower(), k)
                    for k in action.keys]
            self.page.keyboard.press("+".join(keys))
            self._effect = f"pressed {'+'.join(keys)}"
        elif kind == "scroll":
            amount = (action.scroll_amount or 3) * 100
            dy = amount if (action.scroll_direction or "down") == "down" else \
                -amount if action.scroll_direction == "up" else 0
            self.page.mouse.wheel(0, dy)
            self._effect = f"scrolled {dy}"
        else:
            self._effect = f"{kind}: nothing to do"
        return self.observe()

    def _locator(self, target_id: str) -> Any:
        self.page.evaluate(_TREE_JS)  # tags every node with data-agentbench-id
        locator = self.page.locator(f'[data-agentbench-id="{target_id}"]')
        if locator.count() == 0:
            locator = self.page.locator(f'[id="{target_id}"]')
            if locator.count() == 0:
                raise LookupError(f"no element with id {target_id!r} on {self.page.url}")
        return locator.first
