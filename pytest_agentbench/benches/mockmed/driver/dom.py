"""The DOM the headless driver works on: elements parsed with the stdlib HTML parser.

Each :class:`Element` also carries what the later stages give it (computed style, layout box, text
fragments) and its form state (``value``, ``checked``), so one tree serves layout, the accessibility
tree, painting and the actions.
"""

from __future__ import annotations

from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
                   "track", "wbr"})


class Element:
    """One HTML element, with the layout and form state the driver gives it."""

    __slots__ = ("_classes", "_mc", "attrs", "box", "checked", "children", "frags", "index", "parent", "style", "tag",
                 "value")

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
            el.value = raw.removeprefix("\n")
        elif el.tag == "input":
            el.value = el.attrs.get("value", "") if input_type(el) not in ("radio", "checkbox") else \
                el.attrs.get("value", "on")
            el.checked = "checked" in el.attrs
    return root


def input_type(el: Element) -> str:
    return el.attrs.get("type", "text").lower() if el.tag == "input" else ""


TEXT_INPUTS = frozenset({"text", "password", "email", "search", "tel", "url", "number", ""})


def is_textbox(el: Element) -> bool:
    return el.tag == "textarea" or (el.tag == "input" and input_type(el) in TEXT_INPUTS)


def is_submit(el: Element) -> bool:
    if el.tag == "button":
        return el.attrs.get("type", "submit").lower() == "submit"
    return el.tag == "input" and input_type(el) in ("submit", "image")


def is_control(el: Element) -> bool:
    return el.tag in ("input", "textarea", "select", "button") and input_type(el) != "hidden"
