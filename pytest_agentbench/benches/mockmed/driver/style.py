"""The driver's own small style sheet for MockMed's markup, and the page's palette.

Colours and fonts are the page's: ``bg``, ``color``, ``border`` ... name CSS custom properties read
from the page's ``<style>`` (:func:`page_vars`), so a theme change reaches the screenshot while the
box model stays the driver's.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_agentbench.benches.mockmed.driver.dom import Element, input_type


def _pad(t: float, r: float | None = None, b: float | None = None,
         left: float | None = None) -> tuple[float, float, float, float]:
    """CSS shorthand padding: top, then right, bottom and left defaulting the way CSS does."""
    r = t if r is None else r
    b = t if b is None else b
    left = r if left is None else left
    return (t, r, b, left)


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


def compute_style(el: Element, parent: dict[str, Any]) -> dict[str, Any]:
    tag = el.tag
    style: dict[str, Any] = {k: parent[k] for k in _INHERITED if k in parent}
    if tag in ("head", "title", "style", "script", "meta", "link", "template", "noscript") or "hidden" in el.attrs:
        style["display"] = "none"
        return style
    if tag == "input" and input_type(el) == "hidden":
        style["display"] = "none"
        return style
    style["display"] = "block" if tag in _BLOCK_TAGS or tag == "#document" else "inline"
    for props in _TAG_RULES.get(tag, ()):
        style.update(props)
    matched = sorted((i, props) for cls in el.classes for (i, props) in _CLASS_RULES.get(cls, ()))
    for _, props in matched:
        style.update(props)
    if tag == "input" and input_type(el) in ("radio", "checkbox"):
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
