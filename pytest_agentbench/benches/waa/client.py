"""An httpx client for the Windows Agent Arena Flask server (port 5000 in the VM) and an evaluate server.

It speaks the upstream protocol (research ``benchmarks.md`` §1.2-1.3), not the reference tool's
one-liner translation:

* task setup goes through the real ``/setup/*`` endpoints, one per step type, like upstream's
  ``SetupController`` (``command`` may be a list or a string; ``shell`` may be the string ``"true"``;
  ``download`` is fetched here and pushed with multipart ``/setup/upload``);
* actions are pyautogui code run as ``python -c`` through ``/execute`` (upstream's ``pyautogui``
  action space), and ``/execute`` replies are read as ``output``/``error``/``returncode``;
* scoring is ``POST /evaluate`` with the task JSON plus ``agent_last_action``; infeasible tasks and
  feasible tasks ended with FAIL are decided here by the upstream rule (no VM state is needed, and the
  deployed reference evaluate server gets infeasible wrong); a reply that says it could not score is an
  :class:`EvaluationError`, never a 0 score.

Transient network errors (connect errors, and 502/503/504 replies) are retried with exponential
backoff; read timeouts are retried only for requests that are safe to repeat. After the retries an
:class:`InfrastructureError` names the URL.
"""

from __future__ import annotations

import re
import struct
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from ...benchmark import EvaluationError, InfrastructureError
from ...model import Action, Criterion, Observation, Verdict
from . import scoring

TRANSIENT_STATUS = frozenset({502, 503, 504})

#: Prefix of every action command, as upstream's PythonController wraps pyautogui code.
PYAUTOGUI_PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; "

#: Setup step types this client runs. ``update_browse_history`` and its Edge variant need a template
#: SQLite database and the browser profile path; they are not supported (see ``setup``).
SETUP_TYPES = frozenset(
    {
        "launch", "download", "sleep", "open", "activate_window", "execute", "command",
        "create_folder", "create_file", "recycle_file", "close_all", "clear_task_files",
        "chrome_open_tabs", "chrome_close_tabs",
    }
)
UNSUPPORTED_SETUP_TYPES = frozenset({"update_browse_history", "update_browse_history_edge"})

_KEY_ALIASES = {
    "control": "ctrl", "return": "enter", "escape": "esc", "del": "delete", "cmd": "win",
    "command": "win", "meta": "win", "super": "win", "windows": "win", "option": "alt",
    "pgup": "pageup", "pgdn": "pagedown", "arrowup": "up", "arrowdown": "down",
    "arrowleft": "left", "arrowright": "right", "spacebar": "space", " ": "space",
}


def normalise_key(key: str) -> str:
    """A pyautogui key name for a key as agents spell it (``Control`` -> ``ctrl``, ``Return`` -> ``enter``)."""
    k = key.strip().lower() if key.strip() else key
    return _KEY_ALIASES.get(k, k)


def _as_bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def _png_size(data: bytes) -> tuple[int, int] | None:
    if len(data) >= 24 and data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    return None


def parse_accessibility(xml_text: str) -> dict[str, Any]:
    """Parse the ``{"AT": xml}`` tree into nested dicts ``{id, tag, attrs, children}``.

    Namespaced attributes keep their prefix (``st:focused``, ``cp:screencoord``); ids are preorder
    indices as strings, which ``Action.target_id`` may name.
    """
    prefixes = {uri: prefix for prefix, uri in re.findall(r'xmlns:([\w.-]+)="([^"]+)"', xml_text)}

    def name(raw: str) -> str:
        if raw.startswith("{"):
            uri, _, local = raw[1:].partition("}")
            return f"{prefixes[uri]}:{local}" if uri in prefixes else local
        return raw

    counter = iter(range(1_000_000))

    def convert(el: ET.Element) -> dict[str, Any]:
        node: dict[str, Any] = {"id": str(next(counter)), "tag": name(el.tag)}
        node["attrs"] = {name(k): v for k, v in el.attrib.items()}
        if el.text and el.text.strip():
            node["text"] = el.text.strip()
        node["children"] = [convert(child) for child in el]
        return node

    return convert(ET.fromstring(xml_text))


def _walk(node: dict[str, Any]):
    yield node
    for child in node.get("children", []):
        yield from _walk(child)


def _node_title(node: dict[str, Any]) -> str | None:
    return node["attrs"].get("name") or node["attrs"].get("title")


def focused_window_title(tree: dict[str, Any]) -> str | None:
    """The name of the top-level element marked foreground: ``st:active`` true, as WAA's Windows tree
    marks it (``st:focused``/``focused`` true are accepted too), if any."""
    for child in tree.get("children", []):
        attrs = child.get("attrs", {})
        if any(k.split(":")[-1] in ("active", "focused") and str(v).lower() == "true" for k, v in attrs.items()):
            return _node_title(child)
    return None


def _parse_pair(text: str | None) -> tuple[float, float] | None:
    if not text:
        return None
    nums = re.findall(r"-?\d+(?:\.\d+)?", text)
    return (float(nums[0]), float(nums[1])) if len(nums) >= 2 else None


class WAAClient:
    """One WAA VM (its Flask server) plus the evaluate server that scores it."""

    def __init__(
        self,
        server_url: str,
        evaluate_url: str | None = None,
        *,
        timeout: float = 30,
        retries: int = 3,
        backoff: float = 0.5,
        transport: httpx.BaseTransport | None = None,
        cdp_url: str | None = None,
        evaluate_timeout: float | None = None,
    ) -> None:
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries!r}")
        self.server_url = server_url.rstrip("/")
        self.evaluate_url = (evaluate_url or server_url).rstrip("/")
        host = urlsplit(self.server_url).hostname or "localhost"
        #: Chrome's DevTools HTTP endpoint (task configs forward it to 9222 with socat).
        self.cdp_url = (cdp_url or f"http://{host}:9222").rstrip("/")
        self.timeout = timeout
        self.evaluate_timeout = evaluate_timeout if evaluate_timeout is not None else max(timeout, 180.0)
        self.retries = retries
        self.backoff = backoff
        self._http = httpx.Client(transport=transport, timeout=timeout, follow_redirects=True)
        #: Replaceable for tests (backoff and the ``sleep`` setup step go through it).
        self.sleep: Callable[[float], None] = time.sleep
        self.viewport: tuple[int, int] | None = None
        self._last_tree: dict[str, Any] | None = None
        #: Non-fatal setup problems (a window to activate that was not found), as upstream logs them.
        self.setup_warnings: list[str] = []

    # ------------------------------------------------------------------ transport
    def _request(
        self, method: str, url: str, *, idempotent: bool = True, timeout: float | None = None, **kwargs: Any
    ) -> httpx.Response:
        attempts = self.retries + 1
        last: str = ""
        for attempt in range(attempts):
            if attempt:
                self.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                response = self._http.request(method, url, timeout=timeout or self.timeout, **kwargs)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            except (httpx.ReadTimeout, httpx.WriteTimeout, httpx.RemoteProtocolError, httpx.ReadError) as exc:
                last = f"{type(exc).__name__}: {exc}"
                if idempotent:
                    continue
                raise InfrastructureError(f"{method} {url}: {last} (not retried: the request may have run)") from exc
            except httpx.HTTPError as exc:
                raise InfrastructureError(f"{method} {url}: {type(exc).__name__}: {exc}") from exc
            if response.status_code in TRANSIENT_STATUS:
                last = f"HTTP {response.status_code}"
                continue
            return response
        raise InfrastructureError(f"{method} {url} failed after {attempts} attempt(s): {last}")

    def _server(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self._request(method, self.server_url + path, **kwargs)

    def _expect_ok(self, response: httpx.Response, what: str) -> httpx.Response:
        if response.status_code != 200:
            body = response.text.strip().replace("\n", " ")[:300]
            raise InfrastructureError(f"{what} failed: HTTP {response.status_code} from {response.url}: {body}")
        return response

    # ------------------------------------------------------------------ readiness
    def probe(self) -> bool:
        """True when the WAA server answers ``GET /probe`` with 200. Never raises."""
        try:
            return self._http.get(self.server_url + "/probe", timeout=min(self.timeout, 5.0)).status_code == 200
        except Exception:  # noqa: BLE001 - a probe reports, it never raises
            return False

    def wait_ready(self, timeout: float) -> None:
        """Poll ``/probe`` until it answers or ``timeout`` seconds pass (then InfrastructureError)."""
        deadline = time.monotonic() + timeout
        while True:
            if self.probe():
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise InfrastructureError(f"WAA server at {self.server_url} did not answer /probe within {timeout:g}s")
            self.sleep(min(1.0, remaining))

    # ------------------------------------------------------------------ setup
    def setup(self, config: list[dict[str, Any]]) -> None:
        """Run a task's ``config`` (or ``evaluator.postconfig``) steps in order, like ``SetupController``."""
        for index, step in enumerate(config or []):
            if not isinstance(step, dict) or "type" not in step:
                raise ValueError(f"setup step {index} must be an object with a 'type', got {step!r}")
            kind = step["type"]
            params = step.get("parameters") or {}
            if kind in UNSUPPORTED_SETUP_TYPES:
                raise InfrastructureError(
                    f"setup step {index} ({kind}) is not supported by this client: it needs a browser "
                    "history database pushed into the VM's browser profile"
                )
            if kind not in SETUP_TYPES:
                raise ValueError(f"setup step {index} has unknown type {kind!r} (known: {', '.join(sorted(SETUP_TYPES))})")
            getattr(self, f"_setup_{kind}")(**params)

    def _setup_post(self, path: str, payload: dict[str, Any], what: str, *, idempotent: bool = True) -> httpx.Response:
        return self._expect_ok(self._server("POST", path, json=payload, idempotent=idempotent), what)

    def _setup_launch(self, command: list[str] | str, shell: Any = False) -> None:
        self._setup_post("/setup/launch", {"command": command, "shell": _as_bool(shell)}, f"launch {command!r}", idempotent=False)

    def _setup_open(self, path: str) -> None:
        self._setup_post("/setup/open_file", {"path": path}, f"open {path!r}", idempotent=False)

    def _setup_activate_window(self, window_name: str, strict: Any = False, by_class: Any = False) -> None:
        payload = {"window_name": window_name, "strict": _as_bool(strict), "by_class": _as_bool(by_class)}
        response = self._server("POST", "/setup/activate_window", json=payload)
        if response.status_code == 404:
            # Upstream's SetupController logs a window it cannot find and goes on; so do we.
            self.setup_warnings.append(f"activate_window: window {window_name!r} not found")
            return
        self._expect_ok(response, f"activate window {window_name!r}")

    def _setup_sleep(self, seconds: float) -> None:
        self.sleep(float(seconds))

    def run_command(self, command: list[str] | str, shell: Any = False, *, endpoint: str = "/execute") -> dict[str, Any]:
        """POST a command to ``/execute`` (or ``/setup/execute``); return ``{output, error, returncode}``."""
        payload = {"command": command, "shell": _as_bool(shell)}
        response = self._expect_ok(self._server("POST", endpoint, json=payload, idempotent=False), f"{endpoint} {command!r}")
        try:
            body = response.json()
        except ValueError as exc:
            raise InfrastructureError(f"{endpoint} replied with non-JSON: {response.text[:200]!r}") from exc
        if not isinstance(body, dict):
            raise InfrastructureError(f"{endpoint} replied with {body!r}, expected an object")
        return body

    def _setup_execute(self, command: list[str] | str, shell: Any = False, stdout: str = "", stderr: str = "",
                       until: dict[str, Any] | None = None) -> None:
        for attempt in range(5 if until else 1):
            result = self.run_command(command, shell, endpoint="/setup/execute")
            if not until:
                return
            if ("returncode" in until and result.get("returncode") == until["returncode"]) or (
                until.get("stdout") and until["stdout"] in (result.get("output") or "")
            ) or (until.get("stderr") and until["stderr"] in (result.get("error") or "")):
                return
            if attempt < 4:
                self.sleep(0.3)

    _setup_command = _setup_execute

    def _setup_create_folder(self, path: str) -> None:
        self._setup_post("/setup/create_folder", {"path": path}, f"create folder {path!r}")

    def _setup_create_file(self, path: str, content: str = "") -> None:
        self._setup_post("/setup/create_file", {"path": path, "content": content}, f"create file {path!r}")

    def _setup_recycle_file(self, path: str) -> None:
        self._setup_post("/setup/recycle", {"path": path}, f"recycle {path!r}")

    def _setup_close_all(self) -> None:
        self._setup_post("/setup/close_all", {}, "close all windows")

    def _setup_clear_task_files(self) -> None:
        self._setup_post("/setup/clear_task_files", {}, "clear task files")

    def _setup_download(self, files: list[dict[str, str]]) -> None:
        for entry in files:
            url, path = entry.get("url"), entry.get("path")
            if not url or not path:
                raise ValueError(f"download entry needs 'url' and 'path', got {entry!r}")
            fetched = self._request("GET", url)
            if fetched.status_code != 200:
                raise InfrastructureError(f"download of {url} failed: HTTP {fetched.status_code}")
            self.upload(path, fetched.content)

    def upload(self, path: str, data: bytes) -> None:
        """Push bytes to ``path`` in the VM through multipart ``/setup/upload``."""
        filename = PurePosixPath(path.replace("\\", "/")).name or "file"
        response = self._server(
            "POST", "/setup/upload", data={"file_path": path}, files={"file_data": (filename, data)}
        )
        self._expect_ok(response, f"upload to {path!r}")

    def _setup_chrome_open_tabs(self, urls_to_open: list[str]) -> None:
        # Chrome's DevTools HTTP endpoint opens a tab per PUT /json/new?<url> (no websocket needed).
        for url in urls_to_open:
            response = self._request("PUT", f"{self.cdp_url}/json/new?{quote(url, safe=':/?&=%#')}", idempotent=False)
            self._expect_ok(response, f"open Chrome tab {url!r}")

    def _setup_chrome_close_tabs(self, urls_to_close: list[str]) -> None:
        tabs = self._expect_ok(self._request("GET", f"{self.cdp_url}/json/list"), "list Chrome tabs").json()
        wanted = {u.rstrip("/") for u in urls_to_close}
        for tab in tabs:
            if tab.get("type") == "page" and str(tab.get("url", "")).rstrip("/") in wanted:
                self._expect_ok(self._request("GET", f"{self.cdp_url}/json/close/{tab['id']}"), f"close tab {tab['url']}")

    # ------------------------------------------------------------------ episode
    def reset(self) -> None:
        """Close every window, wait for the server, and clear the task files (upstream's remote reset)."""
        self._setup_close_all()
        self.wait_ready(max(self.timeout, 5.0))
        self._setup_clear_task_files()
        self._last_tree = None

    def observe(self) -> Observation:
        """``GET /screenshot`` (PNG) and ``GET /accessibility?backend=uia`` (tree) into an Observation."""
        shot = self._expect_ok(self._server("GET", "/screenshot"), "screenshot").content
        if not shot.startswith(b"\x89PNG"):
            raise InfrastructureError(f"/screenshot at {self.server_url} did not return a PNG ({shot[:16]!r})")
        size = _png_size(shot)
        if size:
            self.viewport = size
        tree: dict[str, Any] | None = None
        raw: dict[str, Any] = {"a11y_backend": "uia"}
        response = self._server("GET", "/accessibility", params={"backend": "uia"})
        if response.status_code == 200:
            try:
                at = response.json().get("AT")
            except (ValueError, AttributeError):
                at = None
            if isinstance(at, str):
                raw["accessibility_xml"] = at
                try:
                    tree = parse_accessibility(at)
                except ET.ParseError as exc:
                    raw["accessibility_error"] = f"unparsable tree: {exc}"
            elif isinstance(at, dict):
                tree = at
        else:
            raw["accessibility_error"] = f"HTTP {response.status_code}"
        self._last_tree = tree
        title = focused_window_title(tree) if tree else None
        return Observation(screenshot=shot, accessibility_tree=tree, window_title=title, viewport=size, raw=raw)

    def _screen(self) -> tuple[int, int]:
        if self.viewport is None:
            response = self._expect_ok(self._server("POST", "/screen_size"), "screen size")
            body = response.json()
            self.viewport = (int(body["width"]), int(body["height"]))
        return self.viewport

    def _point(self, action: Action) -> tuple[int, int]:
        if action.target_id is not None and (action.x is None or action.y is None):
            return self._target_centre(action.target_id)
        if action.is_fraction():
            width, height = self._screen()
            point = action.to_pixels(width, height)
        else:
            point = action.to_pixels(0, 0)
        assert point is not None
        return point

    def _target_centre(self, target_id: str) -> tuple[int, int]:
        if self._last_tree is not None:
            for node in _walk(self._last_tree):
                if node["id"] == target_id:
                    pos = _parse_pair(node["attrs"].get("cp:screencoord"))
                    size = _parse_pair(node["attrs"].get("cp:size"))
                    if pos and size:
                        return round(pos[0] + size[0] / 2), round(pos[1] + size[1] / 2)
                    raise ValueError(f"accessibility element {target_id!r} has no screen position")
        raise ValueError(f"accessibility element {target_id!r} is not in the last observation's tree")

    def action_code(self, action: Action) -> str:
        """The pyautogui code for one non-terminal action (without the import prefix)."""
        kind = action.type
        if action.is_terminal:
            raise ValueError(f"{kind} is a terminal action: it ends the episode and is never executed")
        if kind in ("click", "double_click", "right_click"):
            x, y = self._point(action)
            fn = {"click": "click", "double_click": "doubleClick", "right_click": "rightClick"}[kind]
            return f"pyautogui.{fn}({x}, {y})"
        if kind == "type":
            code = f"pyautogui.typewrite({action.text!r}, interval=0.02)"
            if action.x is not None and action.y is not None or action.target_id is not None:
                x, y = self._point(action)
                code = f"pyautogui.click({x}, {y}); " + code
            return code
        if kind == "key":
            assert action.key is not None
            parts = [normalise_key(p) for p in action.key.split("+")] if "+" in action.key.strip("+") else [normalise_key(action.key)]
            if len(parts) > 1:
                return f"pyautogui.hotkey({', '.join(repr(p) for p in parts)})"
            return f"pyautogui.press({parts[0]!r})"
        if kind == "hotkey":
            return f"pyautogui.hotkey({', '.join(repr(normalise_key(k)) for k in action.keys)})"
        if kind == "scroll":
            direction = action.scroll_direction or "down"
            amount = action.scroll_amount if action.scroll_amount is not None else 3
            clicks = -amount if direction in ("down", "right") else amount
            fn = "hscroll" if direction in ("left", "right") else "scroll"
            # hscroll: positive is right in pyautogui; scroll: positive is up.
            if fn == "hscroll":
                clicks = -clicks
            if action.x is not None and action.y is not None:
                x, y = self._point(action)
                return f"pyautogui.{fn}({clicks}, x={x}, y={y})"
            return f"pyautogui.{fn}({clicks})"
        if kind == "drag":
            x, y = self._point(action)
            end = Action(type="click", x=action.end_x, y=action.end_y, unit=action.unit)
            ex, ey = self._point(end)
            return f"pyautogui.moveTo({x}, {y}); pyautogui.dragTo({ex}, {ey}, duration=0.5, button='left')"
        if kind == "wait":
            return f"time.sleep({float(action.seconds if action.seconds is not None else 1.0)!r})"
        raise ValueError(f"unsupported action type {kind!r}")

    def act(self, action: Action) -> None:
        """Run one action as ``python -c "<pyautogui code>"`` through ``/execute``."""
        code = self.action_code(action)
        result = self.run_command(["python", "-c", PYAUTOGUI_PREFIX + code], False)
        if result.get("status") not in (None, "success") or result.get("returncode", 0) != 0:
            error = (result.get("error") or result.get("message") or "").strip()[-500:]
            raise InfrastructureError(
                f"action {action.describe()} failed in the VM (returncode {result.get('returncode')}): {error}"
            )

    # ------------------------------------------------------------------ scoring
    def evaluate(self, task: dict[str, Any], last_action: Action | None) -> Verdict:
        """Score the episode by the upstream rule through ``POST /evaluate``."""
        evaluator = task.get("evaluator")
        if not isinstance(evaluator, dict) or "func" not in evaluator:
            raise EvaluationError(f"task {task.get('id', '?')} has no evaluator: it cannot be scored")
        word = scoring.last_action_word(last_action)
        early = scoring.precheck(evaluator, word)
        if early is not None:
            return self._verdict(early.score, early.reason, [(m.func, m.score) for m in early.metrics])
        try:
            scoring.metric_specs(evaluator)
        except scoring.CannotScore as exc:
            raise EvaluationError(f"task {task.get('id', '?')}: {exc}") from exc
        payload = dict(task)
        payload["agent_last_action"] = word
        url = self.evaluate_url + "/evaluate"
        response = self._request("POST", url, json=payload, idempotent=False, timeout=self.evaluate_timeout)
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code == 404:
            raise InfrastructureError(f"no evaluate server at {url} (HTTP 404)")
        reason = str(body.get("reason") or body.get("message") or body.get("error") or "") if isinstance(body, dict) else ""
        if response.status_code != 200:
            if response.status_code >= 500 and not isinstance(body, dict):
                raise InfrastructureError(f"evaluate server {url} failed: HTTP {response.status_code}: {response.text[:200]}")
            raise EvaluationError(f"evaluate server could not score: HTTP {response.status_code}: {reason or response.text[:200]}")
        if not isinstance(body, dict):
            raise EvaluationError(f"evaluate server replied with non-JSON or non-object: {response.text[:200]!r}")
        if body.get("scored") is False or body.get("error_type") in ("evaluation", "infrastructure"):
            if body.get("error_type") == "infrastructure":
                raise InfrastructureError(f"evaluate server: {reason}")
            raise EvaluationError(f"evaluate server could not score: {reason or 'no reason given'}")
        if reason.strip().lower().startswith("no evaluator"):
            raise EvaluationError(f"evaluate server could not score: {reason}")
        score = body.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0.0 <= float(score) <= 1.0:
            raise EvaluationError(f"evaluate server returned an invalid score {score!r}")
        metrics = body.get("metrics") or []
        per = [(str(m.get("metric") or m.get("func")), float(m.get("score", 0.0))) for m in metrics if isinstance(m, dict)]
        return self._verdict(float(score), reason or f"score {float(score):g}", per)

    @staticmethod
    def _verdict(score: float, reason: str, metrics: list[tuple[str, float]]) -> Verdict:
        criteria = [Criterion(name=name, passed=value >= 1.0, actual=value, expected=1.0) for name, value in metrics]
        if not criteria:
            criteria = [Criterion(name="waa_evaluator", passed=score >= 1.0, actual=score, expected=1.0, detail=reason)]
        return Verdict(score=score, passed=score >= 1.0, criteria=criteria, reason=reason)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> WAAClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
