"""A WAA-compatible fake server for trying agents offline (no VM, no new dependency).

``FakeWAAServer`` is a real HTTP server (stdlib ``http.server`` in a thread) on 127.0.0.1 with an
ephemeral port. It serves the WAA Flask endpoints (research ``benchmarks.md`` §1.2) with the upstream
reply formats (plain text where WAA replies in text, form fields for ``/file``, multipart for
``/setup/upload``) and, on the same port, an evaluate endpoint (``POST /evaluate``) that scores a
task by the upstream rule. ``url`` and ``evaluate_url`` are therefore the same address.

What is simulated, and how far:

* **File system** (``.fs``: Windows path -> bytes, case-insensitive lookups, ``/`` or ``\\``,
  ``~`` is ``C:\\Users\\Docker``) and **folders** (``.folders``; the user folders exist at start).
* **Windows** (``.windows``: a list of dicts ``{kind, title, ...}``, the last one focused).
  ``kind`` is ``notepad``, ``explorer``, ``run`` (Win+R), ``start`` (Win), ``save_as`` or ``app``
  (any other launched program, which only has a title).
* **Keyboard** through the pyautogui code sent to ``/execute`` as ``python -c``: only a whitelisted
  subset is interpreted (``ast``, literal arguments): ``click/doubleClick/rightClick/moveTo/dragTo/
  mouseDown/mouseUp`` (they move the simulated pointer; clicks do not change focus), ``typewrite/
  write`` (text goes to the focused window's text or field; ``\\n`` is Enter), ``press``,
  ``hotkey``, ``scroll/hscroll/vscroll`` (recorded), ``time.sleep`` (recorded, not slept) and
  ``print(pyautogui.position())``. Other code fails with returncode 1, as a real error would.
  Keys: Win opens Start, Win+R opens Run; typing a program name and Enter launches it (``notepad``
  opens Notepad). In Notepad typing edits the buffer, Enter/Tab/Backspace edit it, Ctrl+A selects
  all, Ctrl+S saves (or opens Save As for a new file), Ctrl+Shift+S opens Save As, Ctrl+N opens a new
  Notepad. In Save As the file name field is preselected; Enter saves to the typed path, relative
  names resolve against Documents and get ``.txt`` when they have no extension; the parent folder must
  exist. Esc closes dialogs, Alt+F4 the focused window.
* Other ``/execute`` and ``/setup/execute`` commands are recorded in ``.commands`` and succeed with
  empty output (``notepad``/``explorer`` commands open the matching window).
* ``/screenshot`` is a solid-colour PNG whose colour follows the simulated state; ``/accessibility``
  is an XML tree of the windows (focused state, position, size, Notepad's text as ``val:value``).
* **Evaluate** runs ``evaluator.postconfig`` (failures are logged, not fatal, like upstream) and
  scores with :mod:`pytest_agentbench.benches.waa.scoring`. Metrics: ``exact_match``,
  ``compare_text_file`` (options ``ignore_blanks``, ``ignore_case``), ``infeasible``. Getters:
  ``rule``, ``vm_file``, ``vm_file_exists_in_vm_folder``, ``cloud_file`` (served from
  ``.cloud_files`` url -> bytes, else fetched with urllib). Anything else is a "cannot score" reply:
  HTTP 422 ``{"success": false, "score": null, "scored": false, "error_type": "evaluation", ...}``.

Not simulated: real applications other than Notepad, mouse-driven UI, Chrome/CDP, window
geometry, and the accessibility tree of real pywinauto (the shape is alike, the content is not).
"""

from __future__ import annotations

import ast
import json
import ntpath
import re
import shlex
import tempfile
import threading
import time
import urllib.request
import zlib
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit
from xml.sax.saxutils import quoteattr

from ..benches.waa import scoring

HOME = "C:\\Users\\Docker"
DOCUMENTS = HOME + "\\Documents"
DOWNLOADS = HOME + "\\Downloads"
DEFAULT_FOLDERS = ("C:\\", "C:\\Users", HOME) + tuple(
    f"{HOME}\\{name}" for name in ("Desktop", "Documents", "Downloads", "Pictures", "Music", "Videos")
)
NS = {
    "st": "https://accessibility.windows.example.org/ns/state",
    "cp": "https://accessibility.windows.example.org/ns/component",
    "val": "https://accessibility.windows.example.org/ns/value",
}
#: Window titles of launched programs other than Notepad and Explorer (they have no behaviour).
APP_TITLES = {
    "code": "Visual Studio Code", "chrome": "Google Chrome", "google-chrome": "Google Chrome",
    "msedge": "Microsoft Edge", "soffice": "LibreOffice", "vlc": "VLC media player",
    "calc": "Calculator", "mspaint": "Paint",
}
SUPPORTED_METRICS = ("exact_match", "compare_text_file", "infeasible")
SUPPORTED_GETTERS = ("rule", "vm_file", "vm_file_exists_in_vm_folder", "cloud_file")


def winpath(path: str) -> str:
    """Normalise a Windows path: backslashes, ``~`` and ``%USERPROFILE%`` expanded, no trailing slash."""
    path = str(path).strip().replace("/", "\\")
    path = re.sub(r"%userprofile%", HOME.replace("\\", "\\\\"), path, flags=re.I)
    if path.startswith("~"):
        path = HOME + path[1:]
    path = ntpath.normpath(path)
    return path if re.fullmatch(r"[A-Za-z]:\\", path) else path.rstrip("\\")


def _png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    row = b"\x00" + bytes(rgb) * width
    ihdr = width.to_bytes(4, "big") + height.to_bytes(4, "big") + b"\x08\x02\x00\x00\x00"
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(row * height, 1)) + chunk(b"IEND", b"")


class _NotSimulated(Exception):
    pass


class FakeWAAServer:
    """A WAA Flask server look-alike plus an evaluate endpoint, on one loopback port."""

    def __init__(self, latency: float = 0.0, *, screen: tuple[int, int] = (1280, 720)) -> None:
        self.latency = latency
        self.screen = screen
        self.requests: list[dict[str, Any]] = []
        self.fs: dict[str, bytes] = {}
        self.folders: set[str] = set(DEFAULT_FOLDERS)
        self.windows: list[dict[str, Any]] = []
        self.commands: list[Any] = []
        self.events: list[Any] = []
        self.cloud_files: dict[str, bytes] = {}
        self.pointer = (screen[0] // 2, screen[1] // 2)
        self.lock = threading.RLock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._cache = tempfile.TemporaryDirectory(prefix="fake-waa-cache-")
        self._png_cache: dict[Any, bytes] = {}

    # ------------------------------------------------------------------ lifecycle
    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("FakeWAAServer is not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def evaluate_url(self) -> str:
        return self.url

    def start(self) -> FakeWAAServer:
        if self._httpd is not None:
            return self
        server = self

        class Handler(_Handler):
            fake = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="fake-waa", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeWAAServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._cache.cleanup()

    # ------------------------------------------------------------------ file system
    def _key(self, path: str) -> str | None:
        want = winpath(path).casefold()
        return next((k for k in self.fs if k.casefold() == want), None)

    def read_file(self, path: str) -> bytes | None:
        key = self._key(path)
        return self.fs[key] if key is not None else None

    def write_file(self, path: str, data: bytes | str) -> None:
        key = self._key(path) or winpath(path)
        self.fs[key] = data.encode("utf-8") if isinstance(data, str) else bytes(data)

    def folder_exists(self, path: str) -> bool:
        want = winpath(path).casefold()
        return any(f.casefold() == want for f in self.folders)

    def make_folder(self, path: str) -> None:
        path = winpath(path)
        while path and not self.folder_exists(path):
            self.folders.add(path)
            parent = ntpath.dirname(path)
            if parent == path:
                break
            path = parent

    # ------------------------------------------------------------------ windows
    @property
    def focused(self) -> dict[str, Any] | None:
        return self.windows[-1] if self.windows else None

    def _open_window(self, window: dict[str, Any]) -> dict[str, Any]:
        self.windows.append(window)
        return window

    def _notepad(self, path: str | None = None) -> dict[str, Any]:
        text = ""
        if path:
            data = self.read_file(path)
            text = data.decode("utf-8", "replace") if data is not None else ""
            path = self._key(path) or winpath(path)
        title = f"{ntpath.basename(path)} - Notepad" if path else "Untitled - Notepad"
        return self._open_window({"kind": "notepad", "title": title, "text": text, "path": path, "selected": False})

    def _launch(self, command: list[str] | str) -> dict[str, Any]:
        argv = shlex.split(command, posix=False) if isinstance(command, str) else [str(a) for a in command]
        if not argv:
            raise ValueError("empty command")
        program = ntpath.basename(argv[0].strip('"')).lower().removesuffix(".exe")
        args = [a.strip('"') for a in argv[1:]]
        if program == "notepad":
            return self._notepad(args[0] if args else None)
        if program == "explorer":
            folder = winpath(args[0]) if args else HOME
            return self._open_window({"kind": "explorer", "title": ntpath.basename(folder) or folder, "path": folder})
        title = APP_TITLES.get(program, program)
        return self._open_window({"kind": "app", "title": title, "argv": argv})

    def _match_window(self, name: str, strict: bool) -> dict[str, Any] | None:
        for window in reversed(self.windows):
            if (window["title"] == name) if strict else (name.lower() in window["title"].lower()):
                return window
        return None

    # ------------------------------------------------------------------ keyboard model
    def _type(self, text: str) -> None:
        for ch in text:
            if ch == "\n":
                self._press("enter")
                continue
            window = self.focused
            if window is None:
                continue
            field = "text" if window["kind"] == "notepad" else "field" if "field" in window else None
            if field is None:
                continue
            if window.get("selected"):
                window[field] = ""
                window["selected"] = False
            window[field] += ch

    def _press(self, key: str) -> None:
        key = key.lower()
        self.events.append(("press", key))
        window = self.focused
        if key in ("win", "winleft", "winright"):
            if window is not None and window["kind"] == "start":
                self.windows.pop()
            else:
                self._open_window({"kind": "start", "title": "Start", "field": ""})
            return
        if window is None:
            return
        kind = window["kind"]
        if key in ("esc", "escape") and kind in ("start", "run", "save_as"):
            self.windows.remove(window)
        elif key in ("enter", "return"):
            if kind in ("start", "run"):
                self.windows.remove(window)
                if window["field"].strip():
                    self._launch(window["field"].strip())
            elif kind == "save_as":
                self._save_as(window)
            elif kind == "notepad":
                self._type_char(window, "\n")
        elif key == "tab" and kind == "notepad":
            self._type_char(window, "\t")
        elif key == "backspace":
            field = "text" if kind == "notepad" else "field" if "field" in window else None
            if field:
                window[field] = "" if window.get("selected") else window[field][:-1]
                window["selected"] = False

    def _type_char(self, window: dict[str, Any], ch: str) -> None:
        if window.get("selected"):
            window["text"] = ""
            window["selected"] = False
        window["text"] += ch

    def _hotkey(self, keys: list[str]) -> None:
        combo = tuple(k.lower() for k in keys)
        self.events.append(("hotkey", combo))
        mods, key = set(combo[:-1]), combo[-1]
        window = self.focused
        if mods == {"win"} and key == "r":
            self._open_window({"kind": "run", "title": "Run", "field": "", "selected": True})
        elif mods == {"alt"} and key == "f4":
            if window is not None:
                self.windows.remove(window)
        elif window is not None and window["kind"] == "notepad" and mods == {"ctrl"}:
            if key == "s":
                self._save(window)
            elif key == "a":
                window["selected"] = True
            elif key == "n":
                self._notepad()
        elif window is not None and window["kind"] == "notepad" and mods == {"ctrl", "shift"} and key == "s":
            self._open_save_as(window)
        elif len(combo) == 1:
            self._press(key)

    def _open_save_as(self, owner: dict[str, Any]) -> None:
        name = ntpath.basename(owner["path"]) if owner.get("path") else "*.txt"
        folder = ntpath.dirname(owner["path"]) if owner.get("path") else DOCUMENTS
        self._open_window({"kind": "save_as", "title": "Save As", "field": name, "selected": True,
                           "folder": folder, "owner": owner})

    def _save(self, window: dict[str, Any]) -> None:
        if window.get("path"):
            self.write_file(window["path"], window["text"])
        else:
            self._open_save_as(window)

    def _save_as(self, dialog: dict[str, Any]) -> None:
        name = dialog["field"].strip().strip('"')
        if not name or "*" in name:
            return
        path = winpath(name) if re.match(r"^[A-Za-z]:[\\/]|^~|^%", name) else winpath(ntpath.join(dialog["folder"], name))
        if "." not in ntpath.basename(path):
            path += ".txt"
        if not self.folder_exists(ntpath.dirname(path)):
            dialog["error"] = f"Path does not exist: {ntpath.dirname(path)}"
            return
        owner = dialog["owner"]
        self.windows.remove(dialog)
        owner["path"] = self._key(path) or path
        owner["title"] = f"{ntpath.basename(path)} - Notepad"
        self.write_file(path, owner["text"])

    # ------------------------------------------------------------------ pyautogui interpreter
    def run_pyautogui(self, code: str) -> str:
        """Interpret the whitelisted pyautogui subset; return stdout. Raise _NotSimulated otherwise."""
        try:
            tree = ast.parse(code)
        except SyntaxError as exc:
            raise _NotSimulated(f"SyntaxError: {exc}") from exc
        out: list[str] = []
        for stmt in tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in stmt.names] if isinstance(stmt, ast.Import) else [stmt.module or ""]
                if not set(names) <= {"pyautogui", "time"}:
                    raise _NotSimulated(f"import of {names} is not simulated")
                continue
            if isinstance(stmt, ast.Assign) and ast.unparse(stmt.targets[0]) == "pyautogui.FAILSAFE":
                continue
            if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
                raise _NotSimulated(f"statement not simulated: {ast.unparse(stmt)}")
            call = stmt.value
            name = ast.unparse(call.func)
            if name == "print" and len(call.args) == 1 and ast.unparse(call.args[0]) == "pyautogui.position()":
                out.append(f"Point(x={self.pointer[0]}, y={self.pointer[1]})\n")
                continue
            try:
                args = [ast.literal_eval(a) for a in call.args]
                kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
            except ValueError as exc:
                raise _NotSimulated(f"non-literal arguments in {ast.unparse(call)}") from exc
            self._call(name, args, kwargs)
        return "".join(out)

    def _call(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
        self.events.append((name, args, kwargs))
        if name in ("pyautogui.click", "pyautogui.doubleClick", "pyautogui.rightClick", "pyautogui.moveTo",
                    "pyautogui.dragTo", "pyautogui.mouseDown", "pyautogui.mouseUp"):
            if len(args) >= 2:
                self.pointer = (int(args[0]), int(args[1]))
            elif "x" in kwargs and "y" in kwargs:
                self.pointer = (int(kwargs["x"]), int(kwargs["y"]))
        elif name in ("pyautogui.typewrite", "pyautogui.write"):
            text = args[0] if args else kwargs.get("message", "")
            if isinstance(text, list):
                for key in text:
                    self._press(key)
            else:
                self._type(str(text))
        elif name == "pyautogui.press":
            keys = args[0] if args else kwargs.get("keys")
            for key in keys if isinstance(keys, list) else [keys]:
                for _ in range(int(kwargs.get("presses", 1))):
                    self._press(str(key))
        elif name == "pyautogui.hotkey":
            self._hotkey([str(k) for k in args])
        elif name in ("pyautogui.scroll", "pyautogui.hscroll", "pyautogui.vscroll", "time.sleep"):
            pass  # recorded in .events only
        else:
            raise _NotSimulated(f"{name} is not simulated")

    def run_command(self, command: list[str] | str, shell: Any) -> dict[str, Any]:
        self.commands.append(command)
        argv = command if isinstance(command, list) else (shlex.split(command) if not shell else [command])
        if len(argv) >= 3 and ntpath.basename(str(argv[0])).lower().removesuffix(".exe") in ("python", "python3") \
                and argv[1] == "-c":
            try:
                output = self.run_pyautogui(str(argv[2]))
            except (_NotSimulated, KeyError, TypeError, ValueError) as exc:
                return {"status": "success", "output": "", "error": f"Traceback (fake):\n{exc}\n", "returncode": 1}
            return {"status": "success", "output": output, "error": "", "returncode": 0}
        program = ntpath.basename(str(argv[0]).split()[0] if argv else "").lower().removesuffix(".exe")
        if program in ("notepad", "explorer"):
            self._launch(argv if isinstance(command, list) else str(command))
        return {"status": "success", "output": "", "error": "", "returncode": 0}

    # ------------------------------------------------------------------ observation
    def screenshot(self) -> bytes:
        state = tuple((w["kind"], w["title"], len(w.get("text", "") or w.get("field", ""))) for w in self.windows)
        if state not in self._png_cache:
            digest = zlib.crc32(repr(state).encode())
            rgb = (digest & 0xFF, (digest >> 8) & 0xFF, (digest >> 16) & 0xFF)
            self._png_cache[state] = _png(self.screen[0], self.screen[1], rgb)
        return self._png_cache[state]

    def accessibility_xml(self) -> str:
        w, h = self.screen
        decl = " ".join(f'xmlns:{p}="{u}"' for p, u in NS.items())
        parts = [f'<desktop {decl} name="Desktop" cp:screencoord="(0, 0)" cp:size="({w}, {h})">']
        for i, window in enumerate(self.windows):
            focused = "true" if i == len(self.windows) - 1 else "false"
            parts.append(f'<window name={quoteattr(window["title"])} st:focused="{focused}" '
                         f'cp:screencoord="(0, 0)" cp:size="({w}, {h})">')
            if window["kind"] == "notepad":
                parts.append(f'<edit name="Text Editor" val:value={quoteattr(window["text"])} '
                             f'cp:screencoord="(0, 60)" cp:size="({w}, {h - 90})"/>')
            elif "field" in window:
                parts.append(f'<edit name="File name" val:value={quoteattr(window["field"])} '
                             f'cp:screencoord="(100, 300)" cp:size="(400, 30)"/>')
            parts.append("</window>")
        parts.append("</desktop>")
        return "".join(parts)

    # ------------------------------------------------------------------ evaluate
    def _cached(self, dest: str, data: bytes) -> str:
        path = Path(self._cache.name) / Path(dest).name
        path.write_bytes(data)
        return str(path)

    def _get(self, cfg: dict[str, Any] | None) -> Any:
        if cfg is None:
            return None
        kind = cfg.get("type")
        if kind == "rule":
            return cfg["rules"]
        if kind == "vm_file":
            if cfg.get("multi"):
                raise scoring.CannotScore("vm_file with multi is not simulated")
            data = self.read_file(cfg["path"])
            return None if data is None else self._cached(cfg.get("dest") or ntpath.basename(cfg["path"]), data)
        if kind == "vm_file_exists_in_vm_folder":
            return 1.0 if self.read_file(ntpath.join(cfg["folder_name"], cfg["file_name"])) is not None else 0.0
        if kind == "cloud_file":
            url = cfg["path"]
            data = self.cloud_files.get(url)
            if data is None:
                try:
                    with urllib.request.urlopen(url, timeout=30) as reply:  # noqa: S310 - task-given URL
                        data = reply.read()
                except OSError as exc:
                    raise scoring.CannotScore(f"cloud_file {url} could not be fetched: {exc}") from exc
            return self._cached(cfg.get("dest") or "cloud_file", data)
        raise scoring.CannotScore(f"getter {kind!r} is not simulated (supported: {', '.join(SUPPORTED_GETTERS)})")

    def _metric(self, spec: scoring.MetricSpec) -> float:
        if spec.func not in SUPPORTED_METRICS or spec.func == "infeasible":
            raise scoring.CannotScore(f"metric {spec.func!r} is not simulated (supported: {', '.join(SUPPORTED_METRICS)})")
        result = self._get(spec.result)
        expected = self._get(spec.expected)
        if spec.func == "exact_match":
            return 1.0 if result == expected["expected"] else 0.0
        # compare_text_file(actual_path, expected_path, ignore_blanks=False, ignore_case=False)
        if not result:
            return 0.0
        actual_text = Path(result).read_text(encoding="utf-8", errors="replace")
        expected_text = Path(expected).read_text(encoding="utf-8", errors="replace")
        if spec.options.get("ignore_blanks"):
            actual_text = re.sub(r"\s+", " ", re.sub(r"[\t\n]", " ", actual_text).strip())
            expected_text = re.sub(r"\s+", " ", re.sub(r"[\t\n]", " ", expected_text).strip())
        if spec.options.get("ignore_case"):
            actual_text, expected_text = actual_text.lower(), expected_text.lower()
        return 1.0 if actual_text == expected_text else 0.0

    def postconfig(self, steps: list[dict[str, Any]]) -> list[str]:
        """Run postconfig steps in-process; return the error messages (failures are not fatal)."""
        errors: list[str] = []
        for step in steps or []:
            kind, params = step.get("type"), step.get("parameters") or {}
            try:
                if kind == "open":
                    self.open_path(params["path"])
                elif kind == "activate_window":
                    window = self._match_window(params["window_name"], bool(params.get("strict")))
                    if window is None:
                        raise LookupError(f"window {params['window_name']!r} not found")
                    self.windows.remove(window)
                    self.windows.append(window)
                elif kind == "sleep":
                    pass
                elif kind in ("execute", "command"):
                    self.run_command(params["command"], params.get("shell", False))
                elif kind == "launch":
                    self._launch(params["command"])
                else:
                    raise scoring.CannotScore(f"postconfig step {kind!r} is not simulated")
            except scoring.CannotScore:
                raise
            except Exception as exc:  # noqa: BLE001 - upstream logs failed postconfig steps and goes on
                errors.append(f"{kind}: {exc}")
        return errors

    def open_path(self, path: str) -> dict[str, Any]:
        if self.folder_exists(path):
            return self._open_window({"kind": "explorer", "title": ntpath.basename(winpath(path)), "path": winpath(path)})
        if self.read_file(path) is None:
            raise FileNotFoundError(path)
        if winpath(path).lower().endswith(".txt"):
            return self._notepad(path)
        return self._open_window({"kind": "app", "title": ntpath.basename(winpath(path)), "path": winpath(path)})

    def evaluate(self, task: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        evaluator = task.get("evaluator")
        if not isinstance(evaluator, dict) or "func" not in evaluator:
            return 422, {"success": False, "score": None, "scored": False, "error_type": "evaluation",
                         "reason": "No evaluator config"}
        try:
            notes = self.postconfig(evaluator.get("postconfig") or [])
            result = scoring.score_task(evaluator, task.get("agent_last_action"), self._metric)
        except (scoring.CannotScore, KeyError, TypeError) as exc:
            return 422, {"success": False, "score": None, "scored": False, "error_type": "evaluation",
                         "reason": f"cannot score: {exc}"}
        return 200, {
            "success": result.success, "score": result.score, "reason": result.reason, "scored": True,
            "metrics": [{"metric": m.func, "score": m.score, "success": m.score >= 1.0} for m in result.metrics],
            "postconfig_errors": notes,
        }


class _Handler(BaseHTTPRequestHandler):
    fake: FakeWAAServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    # -- replies
    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj).encode(), "application/json")

    def _text(self, status: int, text: str) -> None:
        self._send(status, text.encode(), "text/html; charset=utf-8")

    # -- requests
    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _parse(self, raw: bytes) -> tuple[Any, dict[str, Any]]:
        ctype = self.headers.get("Content-Type", "")
        if ctype.startswith("application/json"):
            return (json.loads(raw) if raw else {}), {}
        if ctype.startswith("application/x-www-form-urlencoded"):
            return None, {k: v[0] for k, v in parse_qs(raw.decode()).items()}
        if ctype.startswith("multipart/form-data"):
            msg = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + raw)
            form: dict[str, Any] = {}
            for part in msg.iter_parts():
                name = part.get_param("name", header="content-disposition")
                data = part.get_payload(decode=True) or b""
                form[name] = data if part.get_filename() is not None else data.decode()
            return None, form
        return None, {}

    def do_GET(self) -> None:  # noqa: N802
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        fake = self.fake
        parts = urlsplit(self.path)
        raw = self._body() if method == "POST" else b""
        try:
            body, form = self._parse(raw)
        except ValueError:
            self._text(400, "Bad request body")
            return
        with fake.lock:
            fake.requests.append({"method": method, "path": parts.path, "query": parts.query, "json": body,
                                  "form": {k: v for k, v in form.items() if not isinstance(v, bytes)},
                                  "time": time.monotonic()})
        if fake.latency:
            time.sleep(fake.latency)
        try:
            with fake.lock:
                self._route(method, parts.path, parse_qs(parts.query), body or {}, form)
        except Exception as exc:  # noqa: BLE001 - the Flask error handler's shape
            self._json(500, {"status": "error", "message": str(exc)})

    def _route(self, method: str, path: str, query: dict[str, list[str]], body: dict[str, Any], form: dict[str, Any]) -> None:
        fake = self.fake
        key = (method, path)
        if key == ("GET", "/probe"):
            return self._json(200, {"status": "Probe successful", "message": "Service is operational"})
        if key == ("GET", "/screenshot"):
            return self._send(200, fake.screenshot(), "image/png")
        if key == ("GET", "/accessibility"):
            backend = query.get("backend", ["win32"])[0]
            if backend not in ("win32", "uia"):
                return self._text(400, f"Invalid backend: {backend}")
            return self._json(200, {"AT": fake.accessibility_xml()})
        if key == ("GET", "/platform"):
            return self._text(200, "Windows")
        if key == ("GET", "/obs_winagent"):
            import base64

            window = fake.focused
            return self._json(200, {"image": base64.b64encode(fake.screenshot()).decode(),
                                    "window_title": window["title"] if window else "",
                                    "rect": [0, 0, *fake.screen], "window_names_str": "\n".join(w["title"] for w in fake.windows),
                                    "computer_clipboard": None, "human_input": None, "status": "success"})
        if method != "POST":
            return self._text(404, "Not Found")
        if path in ("/execute", "/setup/execute"):
            return self._json(200, fake.run_command(body["command"], body.get("shell", False)))
        if path == "/execute_windows":
            try:
                fake.run_pyautogui(body["command"])
            except _NotSimulated as exc:
                return self._json(500, {"status": "error", "message": str(exc)})
            return self._json(200, {"status": "success"})
        if path == "/update_computer":
            return self._json(200, {"success": True})
        if path == "/setup/launch":
            command = body["command"]
            fake._launch(command)
            shown = command if isinstance(command, str) else " ".join(command)
            return self._text(200, f"{shown} launched successfully")
        if path == "/setup/open_file":
            target = body.get("path")
            if not target:
                return self._text(400, "Path not supplied!")
            try:
                fake.open_path(target)
            except FileNotFoundError:
                return self._text(404, f"File not found: {target}")
            return self._text(200, "File opened successfully")
        if path in ("/setup/activate_window", "/setup/close_window"):
            window = fake._match_window(body.get("window_name", ""), bool(body.get("strict")))
            if window is None:
                return self._text(404, "Window not found.")
            fake.windows.remove(window)
            if path.endswith("activate_window"):
                fake.windows.append(window)
                return self._text(200, "Window activated successfully")
            return self._text(200, "Window closed successfully")
        if path == "/setup/close_all":
            fake.windows.clear()
            return self._text(200, "All windows closed successfully.")
        if path == "/setup/clear_task_files":
            prefix = DOWNLOADS.casefold() + "\\"
            for name in [k for k in fake.fs if k.casefold().startswith(prefix) and not k.lower().endswith("desktop.ini")]:
                del fake.fs[name]
            return self._text(200, "Task files cleared successfully.")
        if path == "/setup/upload":
            if "file_path" not in form or "file_data" not in form:
                return self._json(400, {"error": "file_path and file_data are required"})
            fake.make_folder(ntpath.dirname(winpath(form["file_path"])))
            fake.write_file(form["file_path"], form["file_data"])
            return self._text(200, "File Uploaded")
        if path == "/setup/download_file":
            try:
                with urllib.request.urlopen(body["url"], timeout=30) as reply:  # noqa: S310
                    data = reply.read()
            except OSError as exc:
                return self._text(500, f"Failed to download {body['url']}: {exc}")
            fake.make_folder(ntpath.dirname(winpath(body["path"])))
            fake.write_file(body["path"], data)
            return self._text(200, "File downloaded successfully")
        if path == "/setup/create_folder":
            fake.make_folder(body["path"])
            return self._json(200, {"status": "success", "message": f"Folder created: {body['path']}"})
        if path == "/setup/create_file":
            fake.make_folder(ntpath.dirname(winpath(body["path"])))
            fake.write_file(body["path"], body.get("content", ""))
            return self._json(200, {"status": "success", "message": f"File created: {body['path']}"})
        if path == "/setup/recycle":
            name = fake._key(body.get("path", ""))
            if name is None:
                return self._json(400, {"status": "error", "message": "File not found"})
            del fake.fs[name]
            return self._json(200, {"status": "success", "message": "File moved to recycle bin"})
        if path == "/file":
            if "file_path" not in form:
                return self._json(400, {"error": "file_path is required"})
            data = fake.read_file(form["file_path"])
            if data is None:
                return self._json(404, {"error": "File not found"})
            return self._send(200, data, "application/octet-stream")
        if path == "/file_exists":
            found = fake.read_file(ntpath.join(body.get("path", ""), body.get("file_name", ""))) is not None
            return self._json(200 if found else 400, {"status": "success" if found else "error"})
        if path == "/folder_exists":
            found = fake.folder_exists(ntpath.join(body.get("path", ""), body.get("folder_name", "")))
            return self._json(200 if found else 400, {"status": "success" if found else "error"})
        if path == "/screen_size":
            return self._json(200, {"width": fake.screen[0], "height": fake.screen[1]})
        if path == "/desktop_path":
            return self._json(200, {"desktop_path": HOME + "\\Desktop"})
        if path == "/documents_path":
            return self._json(200, {"documents_path": DOCUMENTS})
        if path == "/evaluate":
            status, reply = fake.evaluate(body)
            return self._json(status, reply)
        return self._text(404, "Not Found")
