"""HTTP for ``FakeWAAServer``: the WAA Flask server's routes, reply bodies and error conventions.

The conventions are those of upstream's ``vm/setup/server/main.py``, as the real-server tests
(``tests/test_waa_real_server.py``) pin them:

* every route has its methods; an unknown path, or a known one with another method, is werkzeug's
  404/405 turned into **HTTP 500** JSON by the server's catch-all error handler:
  ``{"status": "error", "message": "404 Not Found: ..."}`` / ``"405 Method Not Allowed: ..."``;
* any other exception in a route is also 500 ``{"status": "error", "message": str(exception)}``
  (a missing program for ``/execute``, a missing folder for ``/setup/upload``);
* a JSON route given a body that is not ``application/json`` is a 415, and unparsable JSON a 400,
  both through the same handler (so HTTP 500);
* replies are plain text (``text/html``) where upstream returns a string, JSON where it uses
  ``jsonify``, and ``/file`` is an attachment.
"""

from __future__ import annotations

import base64
import json
import mimetypes
import ntpath
import time
import urllib.request
from collections.abc import Callable
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from pytest_agentbench.testing.waa_server.desktop import (
    DESKTOP,
    DOCUMENTS,
    DOWNLOADS,
    MissingProgram,
    NotSimulated,
    expand,
    winpath,
)
from pytest_agentbench.untrusted import loads

if TYPE_CHECKING:
    from pytest_agentbench.testing.waa_server.server import FakeWAAServer

NOT_FOUND = ("404 Not Found: The requested URL was not found on the server. If you entered the URL manually "
             "please check your spelling and try again.")
METHOD_NOT_ALLOWED = "405 Method Not Allowed: The method is not allowed for the requested URL."
UNSUPPORTED_MEDIA = ("415 Unsupported Media Type: Did not attempt to load JSON data because the request "
                     "Content-Type was not 'application/json'.")
#: Upstream runs Flask with debug=True, which puts the JSON decoder's message in the 400.
BAD_JSON = "400 Bad Request: Failed to decode JSON object: {}"


class Reply(Exception):
    """Raised by a route to send a reply early (an error)."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(status, body)
        self.status, self.body = status, body


class Request:
    """One parsed request: path, query, and the body as JSON or form fields (files as bytes)."""

    def __init__(self, method: str, path: str, query: dict[str, list[str]], ctype: str, raw: bytes) -> None:
        self.method, self.path, self.query, self.ctype, self.raw = method, path, query, ctype, raw
        self.form: dict[str, Any] = {}
        if ctype.startswith("application/x-www-form-urlencoded"):
            self.form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
        elif ctype.startswith("multipart/form-data"):
            msg = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + raw)
            for part in msg.iter_parts():
                name = part.get_param("name", header="content-disposition")
                data = part.get_payload(decode=True) or b""
                if not isinstance(name, str) or not isinstance(data, bytes):
                    continue  # a part without a plain name, or a nested multipart: no form field
                self.form[name] = data if part.get_filename() is not None else data.decode()

    @property
    def json(self) -> Any:
        """Flask's ``request.json``: a 415 without a JSON content type, a 400 for unparsable JSON."""
        if not self.ctype.startswith("application/json"):
            raise Reply(500, {"status": "error", "message": UNSUPPORTED_MEDIA})
        try:
            return loads(self.raw) if self.raw else None
        except ValueError as exc:
            raise Reply(500, {"status": "error", "message": BAD_JSON.format(exc)}) from None

    def json_or_empty(self) -> dict[str, Any]:
        body = self.json
        return body if isinstance(body, dict) else {}


Route = Callable[["FakeWAAServer", Request], Any]
ROUTES: dict[str, dict[str, Route]] = {}


def route(path: str, method: str = "POST") -> Callable[[Route], Route]:
    def register(fn: Route) -> Route:
        ROUTES.setdefault(path, {})[method] = fn
        return fn

    return register


def text(status: int, body: str) -> tuple[int, str]:
    return status, body


# ---------------------------------------------------------------- readiness and observation
@route("/probe", "GET")
def probe(fake: FakeWAAServer, request: Request) -> Any:
    return 200, {"status": "Probe successful", "message": "Service is operational"}


@route("/screenshot", "GET")
def screenshot(fake: FakeWAAServer, request: Request) -> Any:
    return 200, fake.screenshot()


@route("/accessibility", "GET")
def accessibility(fake: FakeWAAServer, request: Request) -> Any:
    backend = request.query.get("backend", ["win32"])[0]
    if backend not in ("win32", "uia"):
        return text(400, "Invalid backend specified")
    return 200, {"AT": fake.accessibility_xml()}


@route("/platform", "GET")
def platform(fake: FakeWAAServer, request: Request) -> Any:
    return text(200, "Windows")


@route("/obs_winagent", "GET")
def obs_winagent(fake: FakeWAAServer, request: Request) -> Any:
    window = fake.focused
    return 200, {"image": base64.b64encode(fake.screenshot()).decode(),
                 "window_title": window["title"] if window else "",
                 "rect": [0, 0, *fake.screen], "window_names_str": "\n".join(w["title"] for w in fake.windows),
                 "computer_clipboard": None, "human_input": None, "status": "success"}


@route("/screen_size")
def screen_size(fake: FakeWAAServer, request: Request) -> Any:
    return 200, {"width": fake.screen[0], "height": fake.screen[1]}


# ---------------------------------------------------------------- commands
@route("/execute")
@route("/setup/execute")
def execute(fake: FakeWAAServer, request: Request) -> Any:
    body = request.json_or_empty()
    shell = body.get("shell", False)
    try:
        return 200, fake.run_command(body.get("command", "" if shell else []), shell)
    except MissingProgram as exc:
        return 500, {"status": "error", "message": str(exc)}


@route("/execute_windows")
def execute_windows(fake: FakeWAAServer, request: Request) -> Any:
    # Upstream execs the code with `computer` and `human` in scope; the fake runs the pyautogui
    # subset only. Printed output that mentions "error" fails the call, as upstream's does.
    body = request.json_or_empty()
    try:
        output = fake.run_pyautogui(str(body.get("command")))
        if "error" in output.lower():
            raise NotSimulated(output)
    except (NotSimulated, KeyError, TypeError, ValueError) as exc:
        return 500, {"status": "error", "message": str(exc)}
    return 200, {"status": "success"}


@route("/update_computer")
def update_computer(fake: FakeWAAServer, request: Request) -> Any:
    return 200, {"success": True}


# ---------------------------------------------------------------- setup
@route("/setup/launch")
def launch(fake: FakeWAAServer, request: Request) -> Any:
    # Upstream forces shell=True and Popen()s: a program that does not exist fails in the shell,
    # after the reply, so this is 200 whatever the command. The text shows a list as its repr.
    command = request.json_or_empty().get("command", "")
    fake._launch(command)
    return text(200, f"{command} launched successfully")


@route("/setup/open_file")
def open_file(fake: FakeWAAServer, request: Request) -> Any:
    target = request.json_or_empty().get("path")
    if not target:
        return text(400, "Path not supplied!")
    try:
        fake.open_path(target)
    except FileNotFoundError:
        return text(404, f"File not found: {winpath(target)}")
    return text(200, "File opened successfully")


def _windows_with_title(fake: FakeWAAServer, name: str) -> list[dict[str, Any]]:
    """pygetwindow's ``getWindowsWithTitle``: windows whose title contains ``name`` (any case), topmost first."""
    return [w for w in reversed(fake.windows) if name.upper() in w["title"].upper()]


@route("/setup/activate_window")
def activate_window(fake: FakeWAAServer, request: Request) -> Any:
    # Upstream's Windows branch: by_class is refused; a window is looked up by title substring; only
    # with strict is the first match restored to the foreground (without, nothing moves).
    body = request.json_or_empty()
    name = body.get("window_name")
    if not name:
        return text(400, "window_name required")
    if body.get("by_class"):
        return text(500, "Get window by class name is currently not supported on Windows.")
    windows = _windows_with_title(fake, name)
    if not windows:
        return text(404, f"Window {name} not found (empty results)")
    if body.get("strict"):
        fake.windows.remove(windows[0])
        fake.windows.append(windows[0])
    return text(200, "Window activated successfully")


@route("/setup/close_window")
def close_window(fake: FakeWAAServer, request: Request) -> Any:
    # Upstream's Windows branch compares each window's title with the window itself under strict,
    # so strict never matches; without strict the first match closes.
    body = request.json_or_empty()
    if "window_name" not in body:
        return text(400, "window_name required")
    name = body["window_name"]
    if body.get("by_class"):
        return text(500, "Get window by class name is not supported on Windows currently.")
    windows = _windows_with_title(fake, name)
    if not windows:
        return text(404, f"Window {name} not found (empty results)")
    if body.get("strict"):
        return text(404, f"Window {name} not found (strict mode).")
    fake.windows.remove(windows[0])
    return text(200, "Window closed successfully.")


@route("/setup/close_all")
def close_all(fake: FakeWAAServer, request: Request) -> Any:
    fake.windows.clear()
    return text(200, "All windows closed successfully.")


@route("/setup/clear_task_files")
def clear_task_files(fake: FakeWAAServer, request: Request) -> Any:
    prefix = DOWNLOADS.casefold() + "\\"
    removed = [k for k in fake.fs if k.casefold().startswith(prefix) and not k.lower().endswith("desktop.ini")]
    for name in removed:
        del fake.fs[name]
    if removed:
        return text(200, f"All task files ({removed}) cleared successfully from {DOWNLOADS!r}.")
    return text(200, f"No task files to clear from {DOWNLOADS!r}.")


@route("/setup/upload")
def upload(fake: FakeWAAServer, request: Request) -> Any:
    if "file_path" not in request.form or "file_data" not in request.form:
        return 400, {"error": "file_path and file_data are required"}
    path = winpath(request.form["file_path"])
    if not fake.folder_exists(ntpath.dirname(path)):
        # Flask's FileStorage.save() opens the path for writing; it never creates folders.
        given = expand(request.form["file_path"])
        return 500, {"status": "error", "message": f"[Errno 2] No such file or directory: {given!r}"}
    fake.write_file(path, request.form["file_data"])
    return text(200, "File Uploaded")


@route("/setup/download_file")
def download_file(fake: FakeWAAServer, request: Request) -> Any:
    body = request.json_or_empty()
    url, path = body.get("url"), body.get("path")
    if not url or not path:
        return text(400, "Path or URL not supplied!")
    try:
        with urllib.request.urlopen(url, timeout=30) as reply:
            data = reply.read()
    except OSError as exc:
        return text(500, f"Failed to download {url}. No retries left. Error: {exc}")
    fake.make_folder(ntpath.dirname(winpath(path)))  # upstream mkdirs the parents here
    fake.write_file(path, data)
    return text(200, "File downloaded successfully")


@route("/setup/create_folder")
def create_folder(fake: FakeWAAServer, request: Request) -> Any:
    body = request.json_or_empty()
    if "path" not in body:
        return 400, {"error": "path required"}
    if fake.folder_exists(body["path"]):
        return 200, {"status": "success", "message": f"{body['path']} already exists."}
    fake.make_folder(body["path"])
    return 200, {"status": "success", "message": f"{body['path']} created."}


@route("/setup/create_file")
def create_file(fake: FakeWAAServer, request: Request) -> Any:
    body = request.json_or_empty()
    if "path" not in body:
        return 400, {"error": "path required"}
    path = winpath(body["path"])
    if fake.folder_exists(path):
        return 400, {"status": "error", "message": "path is not a file"}
    fake.make_folder(ntpath.dirname(path))
    fake.write_file(path, body.get("content", ""))
    return 200, {"status": "success", "message": f"{path} created."}


@route("/setup/recycle")
def recycle(fake: FakeWAAServer, request: Request) -> Any:
    body = request.json_or_empty()
    if "path" not in body:
        return 400, {"error": "Missing 'path' parameter"}
    name = fake._key(body["path"])
    if name is None:
        return 400, {"status": "error", "message": f"Failed to recycle {body['path']}"}
    del fake.fs[name]
    return 200, {"status": "success", "message": f"{body['path']} recycled"}


# ---------------------------------------------------------------- getters (what upstream's evaluators read)
@route("/file")
def get_file(fake: FakeWAAServer, request: Request) -> Any:
    if "file_path" not in request.form:
        return 400, {"error": "file_path is required"}
    path = winpath(request.form["file_path"])
    data = fake.read_file(path)
    if data is None:
        return 404, {"error": "File not found"}
    return 200, ("attachment", ntpath.basename(path), data)


@route("/file_exists")
def file_exists(fake: FakeWAAServer, request: Request) -> Any:
    body = request.json_or_empty()
    for key in ("file_name", "path"):
        if key not in body:
            return 400, {"error": f"{key} required"}
    name, folder = body["file_name"], body["path"]
    if fake.read_file(ntpath.join(folder, name)) is not None:
        return 200, {"status": "success", "message": f"File {name} exists in {folder}."}
    return 400, {"status": "error", "message": f"File {name} does not exist in {folder}."}


@route("/folder_exists")
def folder_exists(fake: FakeWAAServer, request: Request) -> Any:
    body = request.json_or_empty()
    for key in ("folder_name", "path"):
        if key not in body:
            return 400, {"error": f"{key} required"}
    name, folder = body["folder_name"], body["path"]
    if fake.folder_exists(ntpath.join(folder, name)):
        return 200, {"status": "success", "message": f"Folder {name} exists in {folder}."}
    return 400, {"status": "error", "message": f"Folder {name} does not exist in {folder}."}


@route("/list_directory")
def list_directory(fake: FakeWAAServer, request: Request) -> Any:
    body = request.json_or_empty()
    if "path" not in body:
        return 400, {"error": "Missing 'path' parameter"}
    if not fake.folder_exists(body["path"]):
        return 400, {"error": "The provided path is not a directory"}
    return 200, {"directory_tree": fake.directory_tree(body["path"])}


@route("/desktop_path")
def desktop_path(fake: FakeWAAServer, request: Request) -> Any:
    return 200, {"desktop_path": DESKTOP}


@route("/documents_path")
def documents_path(fake: FakeWAAServer, request: Request) -> Any:
    return 200, {"documents_path": DOCUMENTS}


@route("/wallpaper")
def wallpaper(fake: FakeWAAServer, request: Request) -> Any:
    # The simulated machine has no wallpaper file: upstream's abort(404) through its error handler.
    return 500, {"status": "error", "message": "404 Not Found: Wallpaper file not found"}


#: The reference tool's evaluate endpoint; served only by ``FakeWAAServer(evaluate=True)``.
def evaluate(fake: FakeWAAServer, request: Request) -> Any:
    assert fake.evaluator is not None
    return fake.evaluator.evaluate(request.json_or_empty())


class Handler(BaseHTTPRequestHandler):
    """Dispatches to ``ROUTES`` (plus ``/evaluate`` when enabled) and writes Flask-shaped replies."""

    fake: FakeWAAServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def _send(self, status: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _reply(self, status: int, body: Any) -> None:
        if isinstance(body, str):
            self._send(status, body.encode(), "text/html; charset=utf-8")
        elif isinstance(body, bytes):
            self._send(status, body, "image/png")
        elif isinstance(body, tuple) and body[0] == "attachment":
            # Flask's send_file(as_attachment=True): the type guessed from the name, text with utf-8.
            _, name, data = body
            ctype = mimetypes.guess_type(name)[0] or "application/octet-stream"
            if ctype.startswith("text/"):
                ctype += "; charset=utf-8"
            self._send(status, data, ctype, {"Content-Disposition": f"attachment; filename={name}"})
        else:
            self._send(status, json.dumps(body).encode(), "application/json")

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def _dispatch(self, method: str) -> None:
        fake = self.fake
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            request = Request(method, parts.path, parse_qs(parts.query), self.headers.get("Content-Type", ""), raw)
        except (ValueError, UnicodeDecodeError) as exc:
            self._reply(500, {"status": "error", "message": f"400 Bad Request: {exc}"})
            return
        try:
            logged_json = loads(raw) if request.ctype.startswith("application/json") and raw else None
        except ValueError:
            logged_json = None
        with fake.lock:
            fake.requests.append({"method": method, "path": parts.path, "query": parts.query, "json": logged_json,
                                  "form": {k: v for k, v in request.form.items() if not isinstance(v, bytes)},
                                  "time": time.monotonic()})
        if fake.latency:
            time.sleep(fake.latency)
        routes = dict(ROUTES.get(parts.path, {}))
        if parts.path == "/evaluate" and fake.evaluator is not None:
            routes = {"POST": evaluate}
        if not routes:
            self._reply(500, {"status": "error", "message": NOT_FOUND})
            return
        if method not in routes:
            self._reply(500, {"status": "error", "message": METHOD_NOT_ALLOWED})
            return
        try:
            with fake.lock:
                status, body = routes[method](fake, request)
        except Reply as reply:
            status, body = reply.status, reply.body
        except Exception as exc:  # noqa: BLE001 - the Flask error handler's shape
            status, body = 500, {"status": "error", "message": str(exc)}
        self._reply(status, body)
