"""Run upstream WAA's ``vm/setup/server/main.py`` unmodified on Linux, from a private working folder.

Usage: ``<server python> waa_server_launcher.py <upstream server dir> <work dir> --port N``.

Only what cannot exist on Linux is stubbed, because those imports fail at module level there:
``win32gui``, ``win32con``, ``win32clipboard``, ``winreg`` (stub modules whose functions raise
NotImplementedError), ``ctypes.WinDLL``/``ctypes.windll`` (``computer.py`` calls user32 at import) and
``pygetwindow`` (it raises on import on Linux; ``getAllWindows``/``getWindowsWithTitle`` return []).

Harness-only changes, none of them protocol: Flask serves 127.0.0.1 without the reloader (upstream:
0.0.0.0 with debug and reloader), on the listening socket ``$WAA_LISTEN_FD`` when the caller passes
one (werkzeug's own way of serving an inherited socket, as its reloader does), so no other process
can take the port between the caller choosing it and the server binding it; a WSGI wrapper appends
one JSON line per request to ``$WAA_LOG``; with ``WAA_PATCH_CLEAR_TASK_FILES=1`` the Linux branch of
``/setup/clear_task_files`` (always 500 upstream) is replaced by the Windows branch's logic on
``$HOME/Downloads``.

Why a work dir: ``main.py`` writes ``server.log`` into its current folder and ``screenshots/`` and
``recordings/`` next to ``__file__``. Run from the snapshot, every test worker would write into the
shared snapshot and race on one ``screenshot.png``. So ``main.py`` runs through a symlink in the work
dir (``__file__`` is the symlink, the code is the snapshot's), and the snapshot's folder is on
``sys.path`` for its sibling modules. Nothing of upstream is copied.
"""

from __future__ import annotations

import ctypes
import glob
import json
import mimetypes
import os
import runpy
import sys
import time
import types
from collections.abc import Callable, Iterable
from typing import Any

mimetypes.init()  # before the winreg stub exists, so mimetypes never reads the registry stub


def _windows_only(module: str, attr: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{module}.{attr} is Windows-only (stubbed on Linux)")

    return call


def stub_module(name: str, constants: dict[str, Any] | None = None) -> types.ModuleType:
    """Install a module whose constants are given and whose every other attribute raises when called."""
    module = types.ModuleType(name)
    for key, value in (constants or {}).items():
        setattr(module, key, value)
    module.__getattr__ = lambda attr: _windows_only(name, attr)  # type: ignore[attr-defined]
    sys.modules[name] = module
    return module


class _NoOpDLL:
    """``ctypes.windll.user32`` and friends: every call returns 0 (the import-time calls only)."""

    def __getattr__(self, attr: str) -> Callable[..., int]:
        return lambda *args, **kwargs: 0


def install_stubs() -> None:
    stub_module("win32gui")
    stub_module("win32con", {"SWP_NOSIZE": 1, "SW_MAXIMIZE": 3, "SW_RESTORE": 9})
    stub_module("win32clipboard", {"CF_DIB": 8})
    stub_module("winreg", {"HKEY_LOCAL_MACHINE": 0})
    ctypes.WinDLL = lambda *args, **kwargs: _NoOpDLL()  # type: ignore[attr-defined]
    ctypes.windll = types.SimpleNamespace(user32=_NoOpDLL(), kernel32=_NoOpDLL())  # type: ignore[attr-defined]
    pygetwindow = stub_module("pygetwindow")

    class PyGetWindowException(Exception):
        pass

    pygetwindow.PyGetWindowException = PyGetWindowException  # type: ignore[attr-defined]
    pygetwindow.getAllWindows = list  # type: ignore[attr-defined]
    pygetwindow.getWindowsWithTitle = lambda title: []  # type: ignore[attr-defined]


def request_logger(inner: Callable[..., Iterable[bytes]], log_path: str) -> Callable[..., list[bytes]]:
    """A WSGI wrapper that appends ``{t, method, path, query, status, reply_len, reply_head}`` per request."""

    def logged(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        record: dict[str, Any] = {
            "t": time.time(), "method": environ["REQUEST_METHOD"], "path": environ.get("PATH_INFO"),
            "query": environ.get("QUERY_STRING", ""), "ctype": environ.get("CONTENT_TYPE", ""),
        }

        def recording_start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            record["status"] = status
            record["reply_ctype"] = dict(headers).get("Content-Type")
            return start_response(status, headers, exc_info)

        body = b"".join(inner(environ, recording_start_response))
        record["reply_len"] = len(body)
        record["reply_head"] = body[:300].decode("utf-8", "replace")
        with open(log_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
        return [body]

    return logged


def clear_task_files() -> tuple[str, int]:
    """The Windows branch of ``/setup/clear_task_files``, on ``$HOME/Downloads``."""
    path = os.path.join(os.path.expanduser("~"), "Downloads")
    removed = []
    for name in glob.glob(path + "/*"):
        if not name.endswith("desktop.ini"):
            try:
                os.remove(name)
                removed.append(name)
            except OSError:
                pass
    if removed:
        return f"All task files ({removed}) cleared successfully from {path!r}.", 200
    return f"No task files to clear from {path!r}.", 200


def patch_flask_run() -> None:
    import flask

    original_run = flask.Flask.run

    def run(self: flask.Flask, host: str | None = None, port: int | None = None, debug: bool | None = None,
            **kwargs: Any) -> None:
        self.wsgi_app = request_logger(self.wsgi_app, os.environ.get("WAA_LOG", "requests.jsonl"))  # type: ignore[method-assign]
        if os.environ.get("WAA_PATCH_CLEAR_TASK_FILES") == "1":
            self.view_functions["clear_task_files"] = clear_task_files
        listen_fd = os.environ.get("WAA_LISTEN_FD")
        if listen_fd:  # werkzeug's run_simple serves this fd instead of binding (and prints no banner)
            os.environ["WERKZEUG_RUN_MAIN"], os.environ["WERKZEUG_SERVER_FD"] = "true", listen_fd
        original_run(self, host="127.0.0.1", port=port, debug=debug, use_reloader=False, **kwargs)

    flask.Flask.run = run  # type: ignore[method-assign]


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit("usage: waa_server_launcher.py <upstream server dir> <work dir> [main.py args]")
    server_dir, work_dir = os.path.abspath(argv[0]), os.path.abspath(argv[1])
    os.makedirs(work_dir, exist_ok=True)
    entry = os.path.join(work_dir, "main.py")
    if not os.path.lexists(entry):
        os.symlink(os.path.join(server_dir, "main.py"), entry)
    install_stubs()
    patch_flask_run()
    sys.argv = [entry, *argv[2:]]
    sys.path.insert(0, server_dir)
    os.chdir(work_dir)
    runpy.run_path(entry, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
