"""What third-party reports show of an item: its description, its location, its attachments.

* **Description.** Report tools show a test function's docstring as its description (allure-pytest
  reads ``item.function.__doc__``, as does pytest-html's documented description column). Every
  benchmark item shares one function, so each item's ``function`` is that function under the
  item's own docstring (the task's instruction): :func:`described`.
* **Location.** pytest-sugar, GitHub annotations and ``-rA`` lines show ``item.location``, from
  ``reportinfo()``. Items point at the source of what they test, with its line:
  :func:`source_of` finds an object's file and line once per object.
* **Attachments.** With allure-pytest writing results (``--alluredir``), :class:`AllureReports`
  attaches each benchmark item's trajectory and screenshots to its test result. allure is
  imported only then.
"""

from __future__ import annotations

import functools
import inspect
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable

    from pytest_agentbench.plugin.session import AgentbenchPlugin

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


def source_of(target: Any) -> tuple[Path, int] | None:
    """The file and 0-based line where ``target`` (a class or function) is defined, or None.
    Looked up once per target: ``reportinfo`` asks for every item."""
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
    if path is None or line is None:
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
    """Registered when allure-pytest's listener is active: attaches each benchmark item's
    trajectory and screenshots to its allure test result, for the report that carries the
    item's record (the call, or a failed setup)."""

    def __init__(self, state: AgentbenchPlugin) -> None:
        self.state = state

    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> None:
        from pytest_agentbench.plugin.state import PAYLOAD_KEY, is_episode_item

        if not is_episode_item(item) or self.state.run_folder is None:
            return
        if call.when != "call" and not (call.when == "setup" and call.excinfo is not None):
            return
        payload = item.stash.get(PAYLOAD_KEY, None)
        if payload is None:
            return
        self.state.writer.flush()  # the task's files are written in the background
        from allure_commons._allure import attach
        from allure_commons.types import AttachmentType

        folder = self.state.run_folder.path
        files = [(payload.get("trajectory"), AttachmentType.JSON)]
        files += [(shot, AttachmentType.PNG) for shot in payload.get("screenshots", [])]
        for relative, kind in files:
            if relative and (folder / relative).is_file():
                # allure-pytest ships no type information for its attach API
                attach.file(str(folder / relative), name=Path(relative).name,  # type: ignore[no-untyped-call]
                            attachment_type=kind)
