"""Import a user's ``module:callable`` (``--bench-reward``, ``--opencomputer-judge``): from installed
packages, the rootdir or the current folder, the places a conftest-level module would be."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any


class LoadError(ValueError):
    """``module:callable`` could not be imported; ``str()`` is ``ExcType: message``."""


def import_callable(module_name: str, attr: str, rootdir: str | None = None) -> Any:
    """``module_name`` imported with the rootdir and the current folder on ``sys.path``, then the
    dotted ``attr`` looked up in it. Any import problem is a LoadError; callability is the caller's."""
    for folder in (rootdir, os.getcwd()):
        if folder and folder not in sys.path:
            sys.path.insert(0, folder)
    importlib.invalidate_caches()
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - any import problem (a module calling sys.exit
        # at import, too) is reported with the spec; KeyboardInterrupt still stops the run
        raise LoadError(f"{type(exc).__name__}: {exc}") from None
    return target
