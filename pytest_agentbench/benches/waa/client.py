"""An httpx client for the Windows Agent Arena Flask server (port 5000 in the VM).

Why one module of over 500 lines: it is the whole upstream protocol (every setup step type, actions,
observations, downloads and their address checks), one method per endpoint.

It speaks the upstream protocol, checked against upstream's real server (see the user guide's
"what was tested against what"):

* **Setup** goes through the real ``/setup/*`` endpoints, one per step type, with upstream's
  ``SetupController`` semantics: a step the server refuses (a missing program, a missing file to
  open, an upload into a missing folder, a window not found) is logged in :attr:`setup_warnings`
  and setup goes on; an empty argument, an unknown step type, a download that cannot be fetched and
  Chrome not answering on its DevTools port after 15 tries 5 s apart are errors, as upstream raises
  there. A server that cannot be reached at all is an :class:`InfrastructureError`. ``download``
  URLs are fetched here under :mod:`.downloads`' rules and pushed with multipart ``/setup/upload``.
* **Settle times** are upstream's: :attr:`settle` seconds after close-all and after setup, 2 s
  after opening a file, :attr:`step_pause` after each action.
* **Actions** are pyautogui code run as ``python -c`` through ``/execute`` (upstream's
  ``pyautogui`` action space); replies are read as ``output``/``error``/``returncode``.
* **Timeouts**: :attr:`command_timeout` for ``/execute`` and setup commands (the server itself
  kills a command after 120 s), :attr:`tree_timeout` for the accessibility tree (upstream: 300 s).
* **Scoring** is not done here by default: :mod:`.upstream` runs upstream's own evaluator code.
  :meth:`evaluate` is the path for a user's own evaluate server (``--waa-evaluate-url``), the
  reference tool's way of scoring.

Transient network errors (connect errors, and 502/503/504 replies) are retried with exponential
backoff plus random jitter (:mod:`...infra.retry`), waiting longer when a reply's ``Retry-After``
(seconds or an HTTP-date) asks to, up to the request's timeout; read timeouts are retried only
for requests that are safe to repeat. After the retries an :class:`InfrastructureError` names the
URL.
"""

from __future__ import annotations

import logging
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

import httpx
import tenacity

from pytest_agentbench.benches.waa import downloads, scoring
from pytest_agentbench.benchmark import EvaluationError, InfrastructureError
from pytest_agentbench.images import png_size
from pytest_agentbench.infra.retry import call_with_retries
from pytest_agentbench.model import Action, Criterion, Observation, Verdict

if TYPE_CHECKING:
    from typing_extensions import Self

log = logging.getLogger("pytest_agentbench.waa")

TRANSIENT_STATUS = frozenset({502, 503, 504})
#: Failures before the request reached the server: always safe to try again.
_UNSENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
#: Failures after the request may have reached the server: tried again only when repeating is harmless.
_MAYBE_SENT = (httpx.ReadTimeout, httpx.WriteTimeout, httpx.RemoteProtocolError, httpx.ReadError)
_TRANSIENT_REPLY = tenacity.retry_if_result(lambda response: response.status_code in TRANSIENT_STATUS)
_RETRY_UNSENT = tenacity.retry_if_exception_type(_UNSENT) | _TRANSIENT_REPLY
_RETRY_ANY = tenacity.retry_if_exception_type(_UNSENT + _MAYBE_SENT) | _TRANSIENT_REPLY

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


def _walk(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("children", []):
        yield from _walk(child)


def _node_title(node: dict[str, Any]) -> str | None:
    attrs: dict[str, str] = node["attrs"]  # XML attribute values (parse_accessibility)
    return attrs.get("name") or attrs.get("title")


#: State attributes that mark the foreground window: Windows UIA as upstream's server emits it marks
#: it ``st:active``; the Linux AT-SPI tree marks the frame ``st:active`` too (and may mark the
#: focused widget ``st:focused``); older trees and other servers use ``focused``.
_FOREGROUND_STATES = ("active", "focused")


def _state(attrs: dict[str, Any], name: str) -> bool:
    return any(k.split(":")[-1] == name and str(v).lower() == "true" for k, v in attrs.items())


def _windows(tree: dict[str, Any]) -> list[dict[str, Any]]:
    """Top-level windows: the root's children, or, in AT-SPI's desktop > application > frame
    shape, the frames inside each application."""
    found: list[dict[str, Any]] = []
    for child in tree.get("children", []):
        tag = str(child.get("tag", "")).lower()
        if tag in ("application", "desktop-frame") or tag.endswith(":application"):
            found.extend(child.get("children", []))
        else:
            found.append(child)
    return found


def focused_window_title(tree: dict[str, Any]) -> str | None:
    """The name of the foreground window: the top-level element marked ``st:active`` (or
    ``focused``), else the window holding a focused element; None when nothing is marked."""
    windows = _windows(tree)
    for state in _FOREGROUND_STATES:
        for window in windows:
            if _state(window.get("attrs", {}), state):
                return _node_title(window)
    for window in windows:
        if any(_state(node.get("attrs", {}), "focused") for node in _walk(window)):
            return _node_title(window)
    return None


def _parse_pair(text: str | None) -> tuple[float, float] | None:
    if not text:
        return None
    nums = re.findall(r"-?\d+(?:\.\d+)?", text)
    return (float(nums[0]), float(nums[1])) if len(nums) >= 2 else None


class WAAClient:
    """One WAA VM (its Flask server), and optionally a user's evaluate server that scores it."""

    def __init__(
        self,
        server_url: str,
        evaluate_url: str | None = None,
        *,
        timeout: float = 30,
        retries: int = 3,
        backoff: float = 0.5,
        jitter: float = 0.5,
        transport: httpx.BaseTransport | None = None,
        cdp_url: str | None = None,
        evaluate_timeout: float | None = None,
        command_timeout: float = 120.0,
        tree_timeout: float = 300.0,
        settle: float = 5.0,
        step_pause: float = 0.0,
        open_wait: float = 2.0,
        cdp_tries: int = 15,
        cdp_wait: float = 5.0,
        download_allow: frozenset[str] = frozenset(),
        download_max_bytes: int = downloads.DEFAULT_MAX_BYTES,
        upstream_setup: Callable[[list[dict[str, Any]]], list[str]] | None = None,
    ) -> None:
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries!r}")
        self.server_url = server_url.rstrip("/")
        self.evaluate_url = evaluate_url.rstrip("/") if evaluate_url else None
        host = urlsplit(self.server_url).hostname or "localhost"
        #: Chrome's DevTools HTTP endpoint (upstream: port 9222 on the VM; a pool tunnels it).
        self.cdp_url = (cdp_url or f"http://{host}:9222").rstrip("/")
        self.timeout = timeout
        self.evaluate_timeout = evaluate_timeout if evaluate_timeout is not None else max(timeout, 180.0)
        self.command_timeout = command_timeout
        self.tree_timeout = tree_timeout
        self.settle = settle
        self.step_pause = step_pause
        self.open_wait = open_wait
        self.cdp_tries = max(1, cdp_tries)
        self.cdp_wait = cdp_wait
        self.download_allow = frozenset(h.lower() for h in download_allow)
        self.download_max_bytes = download_max_bytes
        #: Runs setup steps this client does not implement with upstream's SetupController.
        self.upstream_setup = upstream_setup
        self.retries = retries
        self.backoff = backoff
        #: Up to this many seconds added at random to each backoff wait (clients failing together spread out).
        self.jitter = jitter
        self._http = httpx.Client(transport=transport, timeout=timeout, follow_redirects=False)
        #: Replaceable for tests (backoff, settle times and the ``sleep`` setup step go through it).
        self.sleep: Callable[[float], None] = time.sleep
        self.viewport: tuple[int, int] | None = None
        self._last_tree: dict[str, Any] | None = None
        #: Setup problems upstream logs and goes on from (a window not found, a program missing).
        self.setup_warnings: list[str] = []

    # ------------------------------------------------------------------ transport
    def _request(
        self, method: str, url: str, *, idempotent: bool = True, timeout: float | None = None, **kwargs: Any
    ) -> httpx.Response:
        attempts = self.retries + 1
        timeout = timeout or self.timeout
        try:
            response = call_with_retries(
                lambda: self._http.request(method, url, timeout=timeout, **kwargs), attempts=attempts,
                retry=_RETRY_ANY if idempotent else _RETRY_UNSENT, backoff=self.backoff, jitter=self.jitter,
                cap=timeout, sleep=lambda seconds: self.sleep(seconds),
            )
        except _UNSENT as exc:
            raise InfrastructureError(f"{method} {url} failed after {attempts} attempt(s): "
                                      f"{type(exc).__name__}: {exc}") from exc
        except _MAYBE_SENT as exc:
            if idempotent:
                raise InfrastructureError(f"{method} {url} failed after {attempts} attempt(s): "
                                          f"{type(exc).__name__}: {exc}") from exc
            raise InfrastructureError(f"{method} {url}: {type(exc).__name__}: {exc} "
                                      "(not retried: the request may have run)") from exc
        except httpx.HTTPError as exc:
            raise InfrastructureError(f"{method} {url}: {type(exc).__name__}: {exc}") from exc
        if response.status_code in TRANSIENT_STATUS:
            raise InfrastructureError(f"{method} {url} failed after {attempts} attempt(s): HTTP {response.status_code}")
        return response

    def _server(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self._request(method, self.server_url + path, **kwargs)

    @staticmethod
    def _body(response: httpx.Response) -> str:
        return response.text.strip().replace("\n", " ")[:300]

    def _expect_ok(self, response: httpx.Response, what: str) -> httpx.Response:
        if response.status_code != 200:
            raise InfrastructureError(
                f"{what} failed: HTTP {response.status_code} from {response.url}: {self._body(response)}")
        return response

    def _warn(self, text: str) -> None:
        self.setup_warnings.append(text)
        log.warning("WAA setup: %s", text)

    def _tolerate(self, response: httpx.Response, what: str) -> bool:
        """Upstream logs a refused setup step and goes on: True when the step succeeded."""
        if response.status_code == 200:
            return True
        self._warn(f"{what}: HTTP {response.status_code}: {self._body(response)}")
        return False

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
        """Run a task's ``config`` steps in order, as upstream's ``SetupController.setup`` does."""
        for index, step in enumerate(config or []):
            if not isinstance(step, dict) or "type" not in step:
                raise ValueError(f"setup step {index} must be an object with a 'type', got {step!r}")
            kind = step["type"]
            params = step.get("parameters") or {}
            if kind not in SETUP_TYPES:
                if self.upstream_setup is not None:
                    self.setup_warnings.extend(self.upstream_setup([step]))
                    continue
                if kind in UNSUPPORTED_SETUP_TYPES:
                    raise InfrastructureError(
                        f"setup step {index} ({kind}) needs upstream's SetupController: point --waa-upstream "
                        "at your WAA checkout")
                raise ValueError(f"setup step {index} has unknown type {kind!r} "
                                 f"(known: {', '.join(sorted(SETUP_TYPES))})")
            getattr(self, f"_setup_{kind}")(**params)

    def _post(self, path: str, payload: dict[str, Any], *, idempotent: bool = True,
              timeout: float | None = None) -> httpx.Response:
        return self._server("POST", path, json=payload, idempotent=idempotent, timeout=timeout)

    @staticmethod
    def _need(value: Any, what: str) -> None:
        if not value:
            raise ValueError(f"setup {what} is empty")  # upstream raises on an empty argument too

    def _setup_launch(self, command: list[str] | str, shell: Any = False) -> None:
        self._need(command, "launch command")
        shell = _as_bool(shell)
        if not shell and isinstance(command, str) and len(command.split()) > 1:
            command = command.split()  # upstream splits a string command on spaces
        self._tolerate(self._post("/setup/launch", {"command": command, "shell": shell}, idempotent=False),
                       f"launch {command!r}")

    def _setup_open(self, path: str) -> None:
        self._need(path, "open path")
        if self._tolerate(self._post("/setup/open_file", {"path": path}, idempotent=False), f"open {path!r}"):
            self.sleep(self.open_wait)

    def _setup_activate_window(self, window_name: str, strict: Any = False, by_class: Any = False) -> None:
        self._need(window_name, "activate_window window_name")
        payload = {"window_name": window_name, "strict": _as_bool(strict), "by_class": _as_bool(by_class)}
        response = self._post("/setup/activate_window", payload)
        if response.status_code == 404:
            self._warn(f"activate_window: window {window_name!r} not found")
            return
        self._tolerate(response, f"activate window {window_name!r}")

    def _setup_sleep(self, seconds: float) -> None:
        self.sleep(float(seconds))

    def run_command(self, command: list[str] | str, shell: Any = False, *,
                    endpoint: str = "/execute") -> dict[str, Any]:
        """POST a command to ``/execute`` (or ``/setup/execute``); return ``{output, error, returncode}``.
        A refused command (HTTP 500: the program does not exist, or it timed out) is an error here."""
        response = self._expect_ok(self._command(command, shell, endpoint), f"{endpoint} {command!r}")
        return self._command_body(response, endpoint)

    def _command(self, command: list[str] | str, shell: Any, endpoint: str) -> httpx.Response:
        payload = {"command": command, "shell": _as_bool(shell)}
        return self._post(endpoint, payload, idempotent=False, timeout=self.command_timeout)

    @staticmethod
    def _command_body(response: httpx.Response, endpoint: str) -> dict[str, Any]:
        try:
            body = response.json()
        except ValueError as exc:
            raise InfrastructureError(f"{endpoint} replied with non-JSON: {response.text[:200]!r}") from exc
        if not isinstance(body, dict):
            raise InfrastructureError(f"{endpoint} replied with {body!r}, expected an object")
        return body

    def _setup_execute(self, command: list[str] | str, shell: Any = False, stdout: str = "", stderr: str = "",
                       until: dict[str, Any] | None = None) -> None:
        """Upstream repeats the command 0.3 s apart until ``until`` holds or it failed 5 times; the
        repetition is bounded here by the command timeout as well."""
        self._need(command, "execute command")
        until = until or {}
        failures = 0
        deadline = time.monotonic() + self.command_timeout
        while True:
            response = self._command(command, shell, "/setup/execute")
            result: dict[str, Any] | None = None
            if self._tolerate(response, f"execute {command!r}"):
                result = self._command_body(response, "/setup/execute")
            else:
                failures += 1
            if not until:
                return
            if result is not None and (
                ("returncode" in until and result.get("returncode") == until["returncode"])
                or ("stdout" in until and str(until["stdout"]) in str(result.get("output") or ""))
                or ("stderr" in until and str(until["stderr"]) in str(result.get("error") or ""))
            ):
                return
            if failures >= 5 or time.monotonic() >= deadline:
                if result is not None:
                    self._warn(f"execute {command!r}: {until!r} did not hold within {self.command_timeout:g}s")
                return
            self.sleep(0.3)

    def _setup_command(self, command: list[str] | str, **kwargs: Any) -> None:
        self._setup_execute(command, **kwargs)

    def _setup_create_folder(self, path: str) -> None:
        self._need(path, "create_folder path")
        self._tolerate(self._post("/setup/create_folder", {"path": path}), f"create folder {path!r}")

    def _setup_create_file(self, path: str, content: str = "") -> None:
        self._need(path, "create_file path")
        self._tolerate(self._post("/setup/create_file", {"path": path, "content": content}), f"create file {path!r}")

    def _setup_recycle_file(self, path: str) -> None:
        self._need(path, "recycle_file path")
        self._tolerate(self._post("/setup/recycle", {"path": path}), f"recycle {path!r}")

    def _setup_close_all(self) -> None:
        self._tolerate(self._post("/setup/close_all", {}), "close all windows")

    def _setup_clear_task_files(self) -> None:
        self._tolerate(self._post("/setup/clear_task_files", {}), "clear task files")

    def _setup_download(self, files: list[dict[str, str]]) -> None:
        for entry in files:
            url, path = entry.get("url"), entry.get("path")
            if not url or not path:
                raise ValueError(f"download entry needs 'url' and 'path', got {entry!r}")
            try:
                data = downloads.fetch(self._http, url, allow=self.download_allow, max_bytes=self.download_max_bytes,
                                       timeout=self.command_timeout, sleep=self.sleep)
            except downloads.DownloadRefused:
                raise
            except OSError as exc:
                raise InfrastructureError(str(exc)) from exc
            self.upload(path, data, tolerate=True)

    def upload(self, path: str, data: bytes, *, tolerate: bool = False) -> None:
        """Push bytes to ``path`` in the VM through multipart ``/setup/upload``."""
        filename = PurePosixPath(path.replace("\\", "/")).name or "file"
        response = self._server(
            "POST", "/setup/upload", data={"file_path": path}, files={"file_data": (filename, data)},
            timeout=self.command_timeout,
        )
        if tolerate:
            self._tolerate(response, f"upload to {path!r}")
        else:
            self._expect_ok(response, f"upload to {path!r}")

    def _cdp_pages(self) -> list[dict[str, Any]]:
        """Chrome's open pages; waits for DevTools as upstream does (15 tries, 5 s apart)."""
        last = ""
        for attempt in range(self.cdp_tries):
            if attempt:
                self.sleep(self.cdp_wait)
            try:
                response = self._http.get(f"{self.cdp_url}/json/list", timeout=min(self.timeout, 10.0))
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if response.status_code == 200:
                try:
                    pages = response.json()
                except ValueError:
                    pages = None
                if isinstance(pages, list):
                    return [p for p in pages if isinstance(p, dict) and p.get("type") == "page"]
            last = f"HTTP {response.status_code}"
        raise InfrastructureError(f"Chrome DevTools at {self.cdp_url} did not answer after {self.cdp_tries} tries "
                                  f"{self.cdp_wait:g}s apart ({last}); is the DevTools port forwarded "
                                  "(--waa-cdp-url, --pool-cdp-port)?")

    def _setup_chrome_open_tabs(self, urls_to_open: list[str]) -> None:
        # Chrome's DevTools HTTP endpoint opens a tab per PUT /json/new?<url> (no websocket needed).
        before = self._cdp_pages()
        for index, url in enumerate(urls_to_open):
            response = self._request("PUT", f"{self.cdp_url}/json/new?{quote(url, safe=':/?&=%#')}", idempotent=False)
            self._expect_ok(response, f"open Chrome tab {url!r}")
            if index == 0 and before:
                # Upstream closes the default tab once the first task tab is open.
                self._request("GET", f"{self.cdp_url}/json/close/{before[0]['id']}")

    def _setup_chrome_close_tabs(self, urls_to_close: list[str]) -> None:
        self.sleep(self.cdp_wait)  # upstream waits for Chrome to finish launching
        pages = self._cdp_pages()
        for url in urls_to_close:
            wanted = url.rstrip("/")
            for tab in pages:
                if str(tab.get("url", "")).rstrip("/") == wanted:
                    self._expect_ok(self._request("GET", f"{self.cdp_url}/json/close/{tab['id']}"),
                                    f"close tab {tab['url']}")
                    pages.remove(tab)
                    break

    # ------------------------------------------------------------------ episode
    def reset(self) -> None:
        """Upstream's reset for a remote VM: close every window, wait, wait for the server, clear
        the task files."""
        self._setup_close_all()
        self.sleep(self.settle)
        self.wait_ready(max(self.timeout, 5.0))
        self._setup_clear_task_files()
        self._last_tree = None

    def after_setup(self) -> None:
        """Upstream sleeps after the task's setup before the first observation."""
        self.sleep(self.settle)

    def observe(self) -> Observation:
        """``GET /screenshot`` (PNG) and ``GET /accessibility?backend=uia`` (tree) into an Observation."""
        shot = self._expect_ok(self._server("GET", "/screenshot"), "screenshot").content
        if not shot.startswith(b"\x89PNG"):
            raise InfrastructureError(f"/screenshot at {self.server_url} did not return a PNG ({shot[:16]!r})")
        size = png_size(shot)
        if size:
            self.viewport = size
        tree: dict[str, Any] | None = None
        raw: dict[str, Any] = {"a11y_backend": "uia"}
        response = self._server("GET", "/accessibility", params={"backend": "uia"}, timeout=self.tree_timeout)
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
            if (action.x is not None and action.y is not None) or action.target_id is not None:
                x, y = self._point(action)
                code = f"pyautogui.click({x}, {y}); " + code
            return code
        if kind == "key":
            assert action.key is not None
            parts = ([normalise_key(p) for p in action.key.split("+")] if "+" in action.key.strip("+")
                     else [normalise_key(action.key)])
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
        if self.step_pause:
            self.sleep(self.step_pause)  # upstream waits before the next observation

    # ------------------------------------------------------------------ scoring
    def evaluate(self, task: dict[str, Any], last_action: Action | None) -> Verdict:
        """Score through a user's evaluate server (``POST /evaluate``, the reference tool's way).

        Infeasible tasks and feasible tasks ended with FAIL are decided here by the upstream rule (the
        reference evaluate server gets infeasible wrong). Known differences of that server from
        upstream's scoring are listed in the user guide."""
        if self.evaluate_url is None:
            raise EvaluationError("no evaluate server configured (--waa-evaluate-url); the default scorer is "
                                  "upstream's own evaluator code (--waa-upstream)")
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
        if response.status_code == 404 or (
                response.status_code == 500 and isinstance(body, dict)
                and str(body.get("message", "")).startswith("404 Not Found")):
            # The WAA server itself answers unknown routes with 500 {"message": "404 Not Found..."}.
            raise InfrastructureError(f"no evaluate server at {url} (HTTP {response.status_code}: it has no /evaluate; "
                                      "the WAA server is not an evaluate server)")
        reason = (str(body.get("reason") or body.get("message") or body.get("error") or "")
                  if isinstance(body, dict) else "")
        if response.status_code != 200:
            if response.status_code >= 500 and not isinstance(body, dict):
                raise InfrastructureError(f"evaluate server {url} failed: HTTP {response.status_code}: "
                                          f"{response.text[:200]}")
            raise EvaluationError(f"evaluate server could not score: HTTP {response.status_code}: "
                                  f"{reason or response.text[:200]}")
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
        per = [(str(m.get("metric") or m.get("func")), float(m.get("score", 0.0)))
               for m in metrics if isinstance(m, dict)]
        return self._verdict(float(score), reason or f"score {float(score):g}", per)

    @staticmethod
    def _verdict(score: float, reason: str, metrics: list[tuple[str, float]]) -> Verdict:
        criteria = [Criterion(name=name, passed=value >= 1.0, actual=value, expected=1.0) for name, value in metrics]
        if not criteria:
            criteria = [Criterion(name="waa_evaluator", passed=score >= 1.0, actual=score, expected=1.0, detail=reason)]
        return Verdict(score=score, passed=score >= 1.0, criteria=criteria, reason=reason)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
