"""The headless driver: MockMed over HTTP with no browser (see the package docstring).

Pages are fetched with httpx (cookies kept), parsed, laid out and turned into the accessibility
tree; actions change the parsed DOM's form state or issue the request a browser would.
"""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING, Any

from pytest_agentbench.benches.mockmed.driver.accessibility import TreeBuilder
from pytest_agentbench.benches.mockmed.driver.dom import (
    Element,
    input_type,
    is_control,
    is_submit,
    is_textbox,
    parse_html,
)
from pytest_agentbench.benches.mockmed.driver.fonts import font_family
from pytest_agentbench.benches.mockmed.driver.layout import Layout
from pytest_agentbench.benches.mockmed.driver.paint import paint
from pytest_agentbench.benches.mockmed.driver.protocol import APP_NAME, VIEWPORT
from pytest_agentbench.benches.mockmed.driver.style import page_vars
from pytest_agentbench.model import Action, Observation

if TYPE_CHECKING:
    import httpx
    from typing_extensions import Self

#: What a cached tree depends on: the page, the scroll offset and every control's value and state.
_TreeKey = tuple[int, float, tuple[tuple[str, bool], ...]]


class _Page:
    """One loaded page: its DOM, layout, palette and title."""

    def __init__(self, url: str, status: int, markup: str, viewport: tuple[int, int]) -> None:
        self.url = url
        self.status = status
        self.html = markup
        self.root = parse_html(markup)
        self.vars = page_vars(self.root)
        self.family = font_family(self.vars)
        self.layout = Layout(self.root, viewport, self.family)
        title = next((el for el in self.root.elements() if el.tag == "title"), None)
        self.title = title.text(skip_hidden=False) if title is not None else ""
        self.elements = list(self.root.elements())


class HeadlessDriver:
    """MockMed over HTTP with no browser: see the package docstring for the tree and the actions.

    ``observe()`` loads ``base_url`` the first time; ``goto(path)`` loads any page of the app.
    """

    def __init__(self, base_url: str, viewport: tuple[int, int] = VIEWPORT, *, timeout: float = 10.0,
                 client: httpx.Client | None = None) -> None:
        import httpx

        self.base_url = base_url
        self.viewport = (int(viewport[0]), int(viewport[1]))
        # A plain-HTTP app needs no TLS context; building one costs more than a whole episode.
        plain = str(base_url).startswith("http://")
        self._client = client if client is not None else httpx.Client(
            follow_redirects=True, timeout=timeout, verify=not plain)
        self._own_client = client is None
        self._page: _Page | None = None
        self._focus: Element | None = None
        self._select_all = False
        self._scroll = 0.0
        self._effect = ""
        self._tree_cache: tuple[_TreeKey, dict[str, Any], TreeBuilder] | None = None

    # -- pages ------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return self._page.url if self._page is not None else self.base_url

    @property
    def current_html(self) -> str:
        return self._ensure().html

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

    def _load(self, response: httpx.Response) -> None:
        self._page = _Page(str(response.url), response.status_code, response.text, self.viewport)
        self._focus = next((el for el in self._page.elements if "autofocus" in el.attrs and is_control(el)), None)
        self._select_all = False
        self._scroll = 0.0
        self._tree_cache = None

    def _get(self, url: str) -> None:
        self._load(self._client.get(url))

    def close(self) -> None:
        if self._own_client:
            self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- observing --------------------------------------------------------------------------------
    def _tree(self) -> tuple[dict[str, Any], TreeBuilder]:
        page = self._ensure()
        key: _TreeKey = (id(page), self._scroll,
                         tuple((el.value, el.checked) for el in page.elements if is_control(el)))
        if self._tree_cache is not None and self._tree_cache[0] == key:
            return self._tree_cache[1], self._tree_cache[2]
        builder = TreeBuilder(page.root, self._scroll)
        tree = builder.build(page.title)
        self._tree_cache = (key, tree, builder)
        return tree, builder

    def accessibility_tree(self) -> dict[str, Any]:
        return self._tree()[0]

    def observe(self) -> Observation:
        page = self._ensure()
        tree, _ = self._tree()
        values = {el.index: el.value for el in page.elements if is_textbox(el)}
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
                    self._focus is not None and is_textbox(self._focus):
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

    def _hit(self, x: float, y: float) -> Element | None:
        page = self._ensure()
        py = y + self._scroll
        hit = None
        for el in page.elements:
            box = el.box
            if box is not None and box[0] <= x < box[2] and box[1] <= py < box[3] and \
                    el.style.get("display") != "none" and el.tag not in ("html", "body"):
                hit = el
        return hit

    def _activatable(self, el: Element) -> Element | None:
        for node in (el, *el.ancestors()):
            if node.attrs.get("disabled") is not None and is_control(node):
                return None
            if node.tag == "a" and "href" in node.attrs:
                return node
            if is_control(node):
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
        if is_textbox(target):
            self._set_focus(target)
            self._effect = f"focused {self._describe(target)}"
            return
        kind = input_type(target)
        if kind == "radio":
            self._check(target)
            return
        if kind == "checkbox":
            target.checked = not target.checked
            self._set_focus(target)
            self._effect = f"{'checked' if target.checked else 'unchecked'} {self._describe(target)}"
            return
        if is_submit(target):
            self._submit(self._form_of(target), target)
            return
        if target.tag == "button" and target.attrs.get("type", "").lower() == "reset":
            form = self._form_of(target)
            if form is not None:
                for field in form.elements():
                    if is_textbox(field):
                        field.value = field.attrs.get("value", "")
                    elif input_type(field) in ("radio", "checkbox"):
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
                if other is not radio and input_type(other) == "radio" and other.attrs.get("name") == name:
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
                kind = input_type(field)
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
        if field is None or not is_textbox(field):
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
            elif field.tag == "a" or is_submit(field):
                self._activate(field)
            elif field.tag == "input" and input_type(field) not in ("button", "reset"):
                form = self._form_of(field)
                submitter = next((el for el in form.elements() if is_submit(el)), None) if form else None
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
            if field is not None and is_textbox(field):
                field.value = "" if self._select_all else field.value[:-1]
                self._select_all = False
                self._effect = f"deleted in {self._describe(field)}"
        elif name in ("space", " "):
            if field is not None and is_textbox(field):
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
        return (el.tag == "a" and "href" in el.attrs) or (is_control(el) and el.attrs.get("disabled") is None)

    @staticmethod
    def _describe(el: Element | None) -> str:
        if el is None:
            return "nothing"
        if el.id:
            return f"#{el.id}"
        text = el.text()
        return f"<{el.tag}> {text[:30]!r}" if text else f"<{el.tag}>"
