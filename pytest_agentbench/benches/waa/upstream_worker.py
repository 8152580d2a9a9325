"""Score one WAA task with upstream's own ``DesktopEnv.evaluate``, in upstream's interpreter.

This file is a script, not a module of the package: :mod:`.upstream` starts it with the Python that
has upstream's client dependencies (``--waa-python``), so nothing here imports pytest_agentbench,
pytest or pydantic. It imports the user's WAA checkout (its ``client`` folder, which holds
``desktop_env``) and calls upstream's code unchanged:

* ``DesktopEnv`` is built without its ``__init__`` (which would start a QEMU VM); the attributes
  ``evaluate`` reads are set as ``__init__`` and ``reset`` set them, with upstream's own
  ``PythonController`` and ``SetupController`` pointed at the WAA server;
* ``env._set_task_info(task)`` resolves the task's metrics and getters by name, as upstream does;
* ``env.evaluate()`` runs the postconfig steps, the infeasible rule, the getters, the metrics with
  their ``options`` and the and/or rule. Its return value is the score.

What this script adds, around upstream's code and never inside it:

* **Addresses.** Upstream hard-codes port 5000 (server) and 9222 (Chrome DevTools) on ``vm_ip``.
  Requests to those are rewritten to the server and DevTools URLs this run uses (a tunnel's local
  ports), in ``requests`` and in Playwright's ``connect_over_cdp``.
* **Missing optional packages.** Upstream's metric modules import ~40 packages at the top (torch
  through easyocr, librosa, ...), most used by a few metrics. An import *made by an upstream file* of
  a package that is not installed yields a placeholder module; using it raises
  :class:`MissingDependency`, which names the package. Imports made by libraries are untouched.
* **What went wrong.** Every HTTP request during scoring is recorded with its phase (``postconfig``
  or ``getters``); connection failures, timeouts and 5xx replies while the getters read the VM,
  a missing package, or an unknown metric or getter are reported as infrastructure problems, so the
  caller turns them into an error instead of a score. Upstream's own score is reported alongside.

Protocol: ``upstream_worker.py --client DIR --job JOB.json --out OUT.json`` (run by path through
``runpy``, so that this folder is not on ``sys.path``). ``JOB.json``
holds ``{"task", "last_action", "server_url", "cdp_url", "cache_dir"}`` to score, or ``{"setup":
[steps], "server_url", "cdp_url", "cache_dir"}`` to run setup steps with upstream's
``SetupController`` (step types the harness does not implement); ``OUT.json`` is written
(atomically) only when the script got as far as scoring. See :mod:`.upstream` for its fields.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.abc
import importlib.machinery
import json
import logging
import os
import sys
import time
import traceback
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:  # annotations only: at run time Playwright may be absent or a placeholder
    from playwright.sync_api import Browser

#: Bound on what is reported back (log lines, request records, text fields).
MAX_RECORDS = 200
MAX_TEXT = 2000


class MissingDependency(ImportError):
    """An upstream metric or getter needed a package that this interpreter does not have."""


def _clip(text: object, limit: int = MAX_TEXT) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- placeholders for packages that are not installed ----------------------------------------------
class _Missing:
    """Stands for anything taken from a package that is not installed; using it raises."""

    def __init__(self, package: str, path: str) -> None:
        self._package, self._path = package, path

    def _fail(self, *args: object, **kwargs: object) -> None:
        raise MissingDependency(
            f"upstream code needs the Python package {self._package!r} ({self._path}), which is not "
            f"installed in {sys.executable}; install it there (or point --waa-python at an interpreter "
            "that has upstream's client requirements)")

    __call__ = _fail

    def __getattr__(self, name: str) -> _Missing:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Missing(self._package, f"{self._path}.{name}")

    def __mro_entries__(self, bases: tuple[object, ...]) -> tuple[type, ...]:
        return (object,)  # ``class X(missing.Base)`` still defines X; using the base raises later


class _MissingModule(types.ModuleType):
    def __init__(self, name: str, package: str) -> None:
        super().__init__(name)
        self.__path__: list[str] = []
        self._package = package

    def __getattr__(self, name: str) -> _Missing:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Missing(self._package, f"{self.__name__}.{name}")


class _MissingLoader(importlib.abc.Loader):
    def __init__(self, package: str) -> None:
        self.package = package

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _MissingModule(spec.name, self.package)

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class MissingFinder(importlib.abc.MetaPathFinder):
    """Last on ``sys.meta_path``: consulted only for modules no other finder has. It answers only
    imports whose importing frame is a file under the upstream client folder."""

    def __init__(self, client_dir: str) -> None:
        self.client_dir = os.path.realpath(client_dir) + os.sep
        self.missing: set[str] = set()

    def _imported_by_upstream(self) -> bool:
        frame: types.FrameType | None = sys._getframe(2)
        while frame is not None:
            filename = frame.f_code.co_filename
            if not filename.startswith("<frozen") and "importlib" not in filename:
                return os.path.realpath(filename).startswith(self.client_dir)
            frame = frame.f_back
        return False

    def find_spec(self, fullname: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        top = fullname.partition(".")[0]
        if top == "desktop_env":
            return None
        if top not in self.missing and not self._imported_by_upstream():
            return None
        self.missing.add(top)
        return importlib.machinery.ModuleSpec(fullname, _MissingLoader(top), is_package=True)


# -- request recording and address rewriting -------------------------------------------------------
class Traffic:
    """Rewrites upstream's fixed addresses and records every request made while scoring."""

    def __init__(self, vm_ip: str, server_url: str, cdp_url: str) -> None:
        self.rewrites = [(f"http://{vm_ip}:5000", server_url.rstrip("/")),
                         (f"http://{vm_ip}:9222", cdp_url.rstrip("/"))]
        self.phase = "load"
        self.records: list[dict[str, object]] = []
        self.problems: list[str] = []

    def rewrite(self, url: str) -> str:
        for old, new in self.rewrites:
            if old != new and (url == old or url.startswith(old + "/")):
                return new + url[len(old):]
        return url

    def note(self, method: str, url: str, status: int | None, error: str | None, body: str = "") -> None:
        record: dict[str, object] = {"phase": self.phase, "method": method, "url": _clip(url, 300),
                                     "status": status}
        if error:
            record["error"] = _clip(error, 300)
        if len(self.records) < MAX_RECORDS:
            self.records.append(record)
        if self.phase != "getters":
            return  # upstream's SetupController logs postconfig failures and goes on; so does scoring
        if error is not None:
            self.problems.append(f"{method} {url} during scoring: {error}")
        elif status is not None and status >= 500:
            self.problems.append(f"{method} {url} during scoring: HTTP {status}: {_clip(body.strip(), 200)}")

    def install(self) -> None:
        import requests.sessions

        original = requests.sessions.Session.request
        traffic = self

        def request(session: requests.sessions.Session, method: str, url: str | bytes, *args: Any,
                    **kwargs: Any) -> requests.Response:
            url = traffic.rewrite(str(url))
            try:
                response = original(session, method, url, *args, **kwargs)
            except Exception as exc:
                traffic.note(str(method).upper(), url, None, f"{type(exc).__name__}: {exc}")
                raise
            body = ""
            if response.status_code >= 500:
                try:
                    body = response.text[:300]
                except Exception:  # noqa: BLE001 - a body we cannot read is still a 5xx
                    body = ""
            traffic.note(str(method).upper(), url, response.status_code, None, body)
            return response

        requests.sessions.Session.request = request  # type: ignore[method-assign,assignment]
        try:
            from playwright.sync_api._generated import BrowserType
        except Exception:  # noqa: BLE001 - Playwright absent or a placeholder: nothing to rewrite
            return
        connect = BrowserType.connect_over_cdp

        def connect_over_cdp(self: BrowserType, endpoint_url: str, *args: Any, **kwargs: Any) -> Browser:
            return connect(self, traffic.rewrite(str(endpoint_url)), *args, **kwargs)

        BrowserType.connect_over_cdp = connect_over_cdp  # type: ignore[method-assign]


class LogTail(logging.Handler):
    """Keeps upstream's warnings and errors (``desktopenv.*`` loggers), bounded."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.lines) < MAX_RECORDS:
            with contextlib.suppress(Exception):  # a bad log call must not stop scoring
                self.lines.append(_clip(f"{record.name}: {record.getMessage()}", 500))


# -- scoring ---------------------------------------------------------------------------------------
def _wrap(fn: Callable[..., object] | None, name: str, kind: str,
          calls: list[dict[str, object]]) -> Callable[..., object] | None:
    """Record what one upstream metric or getter returned or raised; never change it."""
    if fn is None:
        return None

    def recorded(*args: object, **kwargs: object) -> object:
        entry: dict[str, object] = {"kind": kind, "name": name}
        calls.append(entry)
        try:
            value = fn(*args, **kwargs)
        except BaseException as exc:
            entry["error"] = _clip(f"{type(exc).__name__}: {exc}", 500)
            entry["exception"] = type(exc).__name__
            entry["missing"] = isinstance(exc, MissingDependency)
            raise
        if kind == "metric":
            entry["value"] = value if isinstance(value, (int, float, bool)) and not isinstance(value, bool) \
                else (float(value) if isinstance(value, bool) else _clip(repr(value), 200))
        return value

    recorded.__name__ = getattr(fn, "__name__", name)
    return recorded


def _wrap_all(value: Any, kind: str,
              calls: list[dict[str, object]]) -> Callable[..., object] | list[Callable[..., object] | None] | None:
    if isinstance(value, list):
        return [_wrap(v, getattr(v, "__name__", kind), kind, calls) for v in value]
    return _wrap(value, getattr(value, "__name__", kind), kind, calls)


def score(client_dir: str, job: dict[str, object]) -> dict[str, object]:
    finder = MissingFinder(client_dir)
    sys.meta_path.append(finder)
    sys.path.insert(0, client_dir)
    tail = LogTail()
    logging.getLogger("desktopenv").addHandler(tail)
    logging.getLogger("desktopenv").setLevel(logging.INFO)
    server_url = str(job["server_url"])
    vm_ip = urlsplit(server_url).hostname or "127.0.0.1"
    traffic = Traffic(vm_ip, server_url, str(job.get("cdp_url") or f"http://{vm_ip}:9222"))
    out: dict[str, object] = {"python": sys.version.split()[0], "executable": sys.executable}

    def finish(**fields: object) -> dict[str, object]:
        out.update(fields)
        out["requests"] = traffic.records
        out["log"] = tail.lines
        out["missing_packages"] = sorted(finder.missing)
        return out

    try:
        import requests  # noqa: F401 - upstream's controllers need it; without it nothing can score
    except ImportError:
        return finish(problem=f"the Python package 'requests' is not installed in {sys.executable}")
    traffic.install()
    started = time.monotonic()
    try:
        from desktop_env.controllers.python import PythonController
        from desktop_env.controllers.setup import SetupController
        from desktop_env.envs.desktop_env import DesktopEnv
    except Exception as exc:  # noqa: BLE001 - reported, with the traceback's last lines
        return finish(problem=f"upstream's evaluator code does not import: {type(exc).__name__}: {exc}",
                      traceback=_clip(traceback.format_exc(), 4000))
    out["import_seconds"] = round(time.monotonic() - started, 3)

    cache_dir = str(job["cache_dir"])
    if "setup" in job:
        return run_setup(SetupController, vm_ip, server_url, cache_dir, job["setup"], traffic, finish)
    task = job["task"]
    assert isinstance(task, dict)
    env = DesktopEnv.__new__(DesktopEnv)
    # What DesktopEnv.__init__ sets for a remote VM (emulator_ip given), less the QEMU controller.
    env.snapshot_name = "init_state"
    env.cache_dir_base = cache_dir
    env.headless = True
    env.a11y_backend = "uia"
    env.require_a11y_tree = False
    env.require_terminal = False
    env.remote_vm = True
    env.vm_ip = vm_ip
    env.controller = PythonController(vm_ip=vm_ip)
    env.setup_controller = SetupController(vm_ip=vm_ip, cache_dir=cache_dir)
    for controller in (env.controller, env.setup_controller):
        controller.http_server = server_url.rstrip("/")
    env.setup_controller.http_server_setup_root = server_url.rstrip("/") + "/setup"
    env.instruction = task.get("instruction")
    env.action_space = "pyautogui"
    env._traj_no = 0
    env._step_no = 0
    last = job.get("last_action")
    env.action_history = [last] if last is not None else []

    calls: list[dict[str, object]] = []
    try:
        env._set_task_info(task)
    except AttributeError as exc:
        return finish(problem=f"the task names a metric or getter that upstream does not have: {exc}")
    except Exception as exc:  # noqa: BLE001
        return finish(problem=f"upstream could not read the task's evaluator: {type(exc).__name__}: {exc}")
    env.setup_controller.reset_cache_dir(env.cache_dir)
    env.metric = _wrap_all(env.metric, "metric", calls)
    env.result_getter = _wrap_all(env.result_getter, "result", calls)
    env.expected_getter = _wrap_all(env.expected_getter, "expected", calls)

    setup = env.setup_controller.setup

    def postconfig(config: object) -> object:
        traffic.phase = "postconfig"
        try:
            return setup(config)
        finally:
            traffic.phase = "getters"

    env.setup_controller.setup = postconfig
    traffic.phase = "getters"
    started = time.monotonic()
    try:
        value = env.evaluate()
    except BaseException as exc:  # noqa: BLE001 - upstream raised: reported as such, never a score
        return finish(calls=calls, seconds=round(time.monotonic() - started, 3),
                      raised=_clip(f"{type(exc).__name__}: {exc}", 1000),
                      traceback=_clip(traceback.format_exc(), 4000), infrastructure=traffic.problems)
    if isinstance(value, bool):
        value = float(value)
    return finish(calls=calls, seconds=round(time.monotonic() - started, 3),
                  score=value if isinstance(value, (int, float)) else None,
                  score_repr=_clip(repr(value), 200), infrastructure=traffic.problems)


def run_setup(setup_controller: Callable[..., Any], vm_ip: str, server_url: str, cache_dir: str, steps: object,
              traffic: Traffic, finish: Callable[..., dict[str, object]]) -> dict[str, object]:
    """Run setup steps with upstream's ``SetupController`` (for step types the harness does not
    implement itself). Failures upstream logs are reported as warnings; what it raises, as raised."""
    os.makedirs(cache_dir, exist_ok=True)
    controller = setup_controller(vm_ip=vm_ip, cache_dir=cache_dir)
    controller.http_server = server_url.rstrip("/")
    controller.http_server_setup_root = server_url.rstrip("/") + "/setup"
    traffic.phase = "setup"
    try:
        controller.setup(steps)
    except BaseException as exc:  # noqa: BLE001
        return finish(raised=_clip(f"{type(exc).__name__}: {exc}", 1000),
                      traceback=_clip(traceback.format_exc(), 4000))
    return finish(setup_done=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client", required=True)
    parser.add_argument("--job", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    with open(args.job, encoding="utf-8") as fh:
        job = json.load(fh)
    result = score(args.client, job)
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(result, fh, default=repr)
    os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
