"""The real-browser driver: MockMed in Debian's headless Chromium through Playwright.

The accessibility tree is built in the page by :data:`_TREE_JS` from the live DOM and its real
boxes, with the same roles, names and ids as the headless driver's.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentbench.benches.mockmed.driver.protocol import APP_NAME, VIEWPORT
from pytest_agentbench.extras import install_hint
from pytest_agentbench.model import Action, Observation

if TYPE_CHECKING:
    from playwright.sync_api import Locator
    from typing_extensions import Self

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
        return f"--mockmed-driver browser needs the playwright package: {install_hint('browser')}"
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
            raise RuntimeError(f"PlaywrightDriver needs the playwright package: {install_hint('browser')}") from exc
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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def accessibility_tree(self) -> dict[str, Any]:
        self._ensure()
        tree: dict[str, Any] = self.page.evaluate(_TREE_JS)  # evaluate() returns the JSON value, Any
        return tree

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
      if (t.tagName === "A") {
        const h = t.getAttribute("href") || "";
        return (h && !h.startsWith("#")) ? "nav" : "none";
      }
      if (t.tagName === "BUTTON")
        return ((t.getAttribute("type") || "submit").toLowerCase() === "submit" && t.form) ? "nav" : "none";
      if (t.tagName === "INPUT" && ["submit","image"].includes((t.type || "").toLowerCase()))
        return t.form ? "nav" : "none";
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

    def _locator(self, target_id: str) -> Locator:
        self.page.evaluate(_TREE_JS)  # tags every node with data-agentbench-id
        locator = self.page.locator(f'[data-agentbench-id="{target_id}"]')
        if locator.count() == 0:
            locator = self.page.locator(f'[id="{target_id}"]')
            if locator.count() == 0:
                raise LookupError(f"no element with id {target_id!r} on {self.page.url}")
        return locator.first
