"""The accessibility tree of a laid-out page, and helpers that search any such tree.

The tree is nested dicts (role, name, id, bbox, children; ``value`` on textboxes, ``checked`` on
radios and checkboxes); the browser driver builds the same tree in Chromium, so helpers here work
on either driver's observations.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pytest_agentbench.benches.mockmed.driver.dom import TEXT_INPUTS, Element, input_type, is_control
from pytest_agentbench.benches.mockmed.driver.layout import BLOCKISH

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
        kind = input_type(el)
        if kind in ("submit", "button", "reset", "image"):
            return "button"
        if kind in ("radio", "checkbox"):
            return kind
        if kind in TEXT_INPUTS:
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


class TreeBuilder:
    def __init__(self, root: Element, scroll_y: float) -> None:
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
            if d is not label and is_control(d):
                return d
        return None

    def control_of(self, label: Element) -> Element | None:
        target = label.attrs.get("for")
        if target:
            el = self.html_ids.get(target)
            return el if el is not None and is_control(el) else None
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
        node_id = el.id or f"{role}:{'.'.join(map(str, path))}"
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
            node["value"] = "•" * len(el.value) if input_type(el) == "password" else el.value
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
                if not text or (_role(el) is not None and _role(el) in _LEAF_ROLES):
                    continue
                frags = [f for f in el.frags if f[7] == index]
                if not frags:
                    continue
                box = [min(f[0] for f in frags), min(f[1] for f in frags), max(f[0] + f[2] for f in frags),
                       max(f[1] + f[3] for f in frags)]
                holder = Element("#text", {}, el)
                holder.box = box
                child_path = (*path, len(out))
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
            return [self._node(el, role, (*path, start))]
        if el.tag == "label":
            control = self._wrapped_control(el)
            if control is not None:
                role = _role(control)
                if role is None:
                    return []
                box_of = control if control.box is not None else el
                return [self._node(control, role, (*path, start), box_of=box_of)]
        if not self._has_role_inside(el) and not any(
                isinstance(c, Element) and c.style.get("display") in BLOCKISH and not self._hidden(c)
                for c in el.children):
            text = el.text()
            if not text or el.box is None:
                return []
            return [self._node(el, "text", (*path, start), name=text)]
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
                node_id = f"text:{'.'.join(map(str, (*path, start + len(nodes))))}"
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
        yield from iter_nodes(child, (*ancestors, tree))


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
