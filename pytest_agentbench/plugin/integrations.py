"""What third-party reports show of an item: its description, its location, its attachments.

* **Description.** Report tools show a test function's docstring as its description (allure-pytest
  reads ``item.function.__doc__``, as does pytest-html's documented description column). Every
  benchmark item shares one function, so each item's ``function`` is that function under the
  item's own docstring (the task's instruction): :func:`described`.
* **Location.** pytest-sugar, GitHub annotations, JUnit's ``file``/``line`` and ``-vv`` show
  ``item.location``, from ``reportinfo()``. Items point at the source of what they test, with its
  line (:func:`source_of` finds an object's file and line once per object), when that source is
  the user's: a built-in's (a benchmark, audit adapter or reward of this package) is a file of the
  installed plugin, which no one reading a report can open or annotate, so such an item names its
  node's path at line 0 (pytest needs a line to locate a skip marker's report) (:func:`located`).
* **Attachments and status.** With allure-pytest writing results (``--alluredir``),
  :class:`AllureReports` attaches each item's files (the layer's ``reporting.View``) to its test
  result and marks a setup error ``broken``, for every item kind. allure is imported only then.
"""

from __future__ import annotations

import functools
import inspect
import os
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_agentbench.plugin import reporting

if TYPE_CHECKING:
    from collections.abc import Callable, Generator

#: The plugin name of allure-pytest's listener, registered only with ``--alluredir``.
ALLURE_LISTENER = "allure_listener"


def described(function: Callable[..., Any], doc: str) -> Callable[..., Any]:
    """``function`` as a new function object with ``doc`` as its docstring (same code, globals
    and signature, so fixtures and calls see no difference)."""
    code = getattr(function, "__code__", None)
    if code is None:
        return function
    copy = types.FunctionType(code, function.__globals__, function.__name__,
                              function.__defaults__, function.__closure__)
    copy.__doc__ = doc
    copy.__qualname__ = function.__qualname__
    copy.__module__ = function.__module__
    return copy


#: This package's folder: frames from it are cut from the traceback of a user's exception, and no
#: item is located in it.
PACKAGE_DIR = os.path.join(str(Path(__file__).resolve().parent.parent), "")


def located(item: pytest.Item, source: tuple[Path, int] | None) -> tuple[Path, int, str]:
    """``reportinfo()`` of an item of this plugin: the user's ``source`` of what it tests, else its
    node path (``bench/mock``, ``audit/toy``) under the rootdir at line 0, which pytest shows as
    the location's file, the node id's part before ``::``; named by its node id. Line 0, not None:
    pytest locates a skip marker's report at the item's line and asserts there is one."""
    if source is None:
        return item.config.rootpath / item.nodeid.split("::", 1)[0], 0, item.nodeid
    return source[0], source[1], item.nodeid


def source_of(target: Any) -> tuple[Path, int] | None:
    """The file and 0-based line where ``target`` (a class or function) is defined, or None (also
    for a target of this package: see the module's note on locations). Looked up once per
    target: ``reportinfo`` asks for every item."""
    try:
        return _source_of(target)
    except TypeError:  # not hashable: look it up uncached
        return _source_of.__wrapped__(target)


@functools.lru_cache(maxsize=256)
def _source_of(target: Any) -> tuple[Path, int] | None:
    try:
        target = inspect.unwrap(target)
        path = inspect.getsourcefile(target)
        line = _first_line(target, path) if path is not None else None
    except (TypeError, OSError):
        return None
    if path is None or line is None or os.path.realpath(path).startswith(PACKAGE_DIR):
        return None
    return Path(path), max(line - 1, 0)


def _first_line(target: Any, path: str) -> int | None:
    """The 1-based line of ``target``'s ``def`` or ``class``. A function's code knows it; for a
    class (before Python 3.13's ``__firstlineno__``) its ``class`` statement is looked for in the
    file, where ``inspect.getsourcelines`` would parse the whole module (about 8 ms per run)."""
    known = getattr(target, "__firstlineno__", None)
    if isinstance(known, int):
        return known
    code = getattr(target, "__code__", None)
    if code is not None:
        return int(code.co_firstlineno)
    if not inspect.isclass(target):
        return int(inspect.getsourcelines(target)[1])
    import linecache
    import re

    statement = re.compile(rf"\s*class\s+{re.escape(target.__name__)}\b")
    return next((number for number, text in enumerate(linecache.getlines(path), 1) if statement.match(text)), None)


def resolve(spec: str) -> Any:
    """``module:Attr`` imported, or None when it cannot be (locations never fail a run)."""
    import importlib

    module_name, _, attr = spec.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError):
        return None


class AllureReports:
    """Registered in every process when allure-pytest writes results (``--alluredir``). For the
    report that carries an item's verdict (the call, or a failed setup), of every item kind: the
    item's files and documents as attachments (a benchmark's trajectory and screenshots, a case's
    case and trace files, an audit's run), and a setup error's status ``broken``.

    allure-pytest calls a test ``broken`` when it raises anything but an assertion or pytest's
    ``fail``; these items report the errors that keep them from being judged (infrastructure, an
    unreadable case, a run that could not be delivered) through ``pytest.fail`` in setup, for a
    report without the plugin's traceback, and pytest counts them as errors: allure's word for
    that is ``broken``, as for an ordinary test whose fixture raised."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    # tryfirst: outside allure's own wrapper and the layers', so both have made their part by now
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        listener = self.config.pluginmanager.get_plugin(ALLURE_LISTENER)
        if listener is None or not reporting.carries_payload(report):
            return report
        view = reporting.view_of(self.config, report)
        if view is None:
            return report
        if report.when == "setup" and report.failed:
            self._mark_broken(listener)
        self._attach(view)
        return report

    @staticmethod
    def _mark_broken(listener: Any) -> None:
        from allure_commons.model2 import Status

        # AllureReporter.get_test(None): the test result being written in this thread, this item's
        test = listener.allure_logger.get_test(None)
        if test is not None and test.status == Status.FAILED:
            test.status = Status.BROKEN

    @staticmethod
    def _attach(view: reporting.View) -> None:
        from allure_commons._allure import attach
        from allure_commons.types import AttachmentType

        if view.files and view.settle is not None:
            view.settle()
        for path, name in view.files:
            if path.is_file():
                kind = {".json": AttachmentType.JSON, ".png": AttachmentType.PNG}.get(path.suffix, AttachmentType.TEXT)
                # allure-pytest ships no type information for its attach API
                attach.file(str(path), name=name, attachment_type=kind)  # type: ignore[no-untyped-call]
        for name, text in view.documents:
            attach(text, name=name, attachment_type=AttachmentType.JSON)


#: The plugin pytest-github-actions-annotate-failures registers for its annotations of failures.
ANNOTATOR = "annotate_errors"


class SetupErrorAnnotations:
    """Registered on the controller in a GitHub Actions job (``GITHUB_ACTIONS=true``). The
    annotator (pytest-github-actions-annotate-failures) annotates call-phase failures only, yet
    these items report what kept them from being judged (infrastructure, an unreadable case, a run
    that could not be delivered) as setup errors: each such error of every item kind gets the same
    workflow command the annotator writes for a failure, while the annotator is active."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "setup" or not report.failed or reporting.payload_of(report) is None:
            return
        if not self.config.pluginmanager.has_plugin(ANNOTATOR):
            return
        import sys

        print(workflow_error(report), file=sys.stderr)


def workflow_error(report: pytest.TestReport) -> str:
    """The ``::error file=..,line=..::message`` command for ``report``, as the annotator builds
    one for a failure: the item's location (the first traceback entry's, when there is one), its
    head line and the error's message, escaped for a workflow command."""
    from _pytest._code.code import ExceptionRepr, ReprEntry

    path, line, _ = report.location
    lineno = None if line is None else line + 1
    message = report.head_line or "test"
    longrepr = report.longrepr
    if isinstance(longrepr, ExceptionRepr):
        if longrepr.reprcrash is not None:
            message += "\n\n" + longrepr.reprcrash.message
        entries = longrepr.reprtraceback.reprentries
        if entries and isinstance(entries[0], ReprEntry) and entries[0].reprfileloc is not None:
            path, lineno = entries[0].reprfileloc.path, entries[0].reprfileloc.lineno
    elif isinstance(longrepr, tuple):
        message += "\n\n" + str(longrepr[2])
    elif isinstance(longrepr, str):
        message += "\n\n" + longrepr
    fields = ",".join(f"{key}={value}" for key, value in (("file", _workspace_path(path)), ("line", lineno))
                      if value is not None)
    escaped = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return f"::error {fields}::{escaped}"


def _workspace_path(path: str) -> str:
    """The path as the annotator gives it: under ``PYTEST_RUN_PATH`` when set, then relative to
    ``GITHUB_WORKSPACE`` when it lies inside it."""
    import os

    run_path = os.environ.get("PYTEST_RUN_PATH")
    if run_path:
        path = os.path.join(run_path, path)
    workspace = os.environ.get("GITHUB_WORKSPACE")
    if workspace:
        try:
            relative = os.path.relpath(os.path.abspath(path), workspace)
        except ValueError:  # another drive (Windows)
            relative = path
        if not relative.startswith(".."):
            path = relative
    return path
