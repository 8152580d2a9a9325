"""A warning for an option value pytest took as a test path when it chose the rootdir.

pytest decides the rootdir and the ini file (``_pytest/config/findpaths.py``) from the command
line's arguments before it loads installed plugins, so before it knows their options: in
``--opencomputer-tasks /abs/dir`` the value is read as a test path then, and ``/abs/dir``'s project
can become the rootdir and give the ini file. Once the plugin's options are known the value is
bound to its option, but the rootdir stays. No plugin can run earlier, so the fix is the user's
(``--opencomputer-tasks=/abs/dir``); this check says so at configure time when it happened.
"""

from __future__ import annotations

import inspect
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.plugin.options import config_warning

_CHECKED = pytest.StashKey[bool]()


def spaced_values(config: pytest.Config) -> list[tuple[str, str]]:
    """``(option, value)`` pairs of long options given with a space whose value names an
    existing path and is not one of the run's test paths (so an option took it)."""
    args = [str(a) for a in config.invocation_params.args]
    positional = {str(a) for a in (getattr(config.option, "file_or_dir", None) or [])}
    pairs = []
    for flag, value in pairwise(args):
        if not flag.startswith("--") or "=" in flag or value.startswith("-") or value in positional:
            continue
        if (config.invocation_params.dir / value).exists():
            pairs.append((flag, value))
    return pairs


def _setup(config: pytest.Config, args: list[str]) -> tuple[Path, Path | None] | None:
    """The rootdir and ini file pytest chooses for these test path ``args`` (and the run's
    ``-c``, ``-o`` and ``--rootdir``), or None when this pytest's ``determine_setup`` cannot be
    called so."""
    try:
        from _pytest.config.findpaths import determine_setup
    except ImportError:
        return None
    option = config.option
    given: dict[str, Any] = {
        "inifile": getattr(option, "inifilename", None), "override_ini": getattr(option, "override_ini", None),
        "args": args, "rootdir_cmd_arg": getattr(option, "rootdir", None) or None,
        "invocation_dir": config.invocation_params.dir,
    }
    try:
        wanted = inspect.signature(determine_setup).parameters
        result = determine_setup(**{k: v for k, v in given.items() if k in wanted})
    except (TypeError, ValueError, pytest.UsageError):
        return None
    return Path(result[0]), (Path(result[1]) if result[1] is not None else None)


def warn_spaced_path_options(config: pytest.Config) -> None:
    """Warn when an option's value given after a space chose the rootdir or the ini file."""
    if hasattr(config, "workerinput") or config.stash.get(_CHECKED, False):
        return
    config.stash[_CHECKED] = True  # once per run, whichever of benchmarks and audit asks first
    pairs = spaced_values(config)
    if not pairs:
        return
    actual = (config.rootpath, config.inipath)
    base = [str(a) for a in (getattr(config.option, "file_or_dir", None) or [])]
    if _setup(config, base) in (None, actual):
        return
    culprits = [(flag, value) for flag, value in pairs if _setup(config, [*base, value]) == actual] or pairs
    shown = ", ".join(f"{flag} {value}" for flag, value in culprits)
    fixed = " ".join(f"{flag}={value}" for flag, value in culprits)
    ini = f" and ini file {config.inipath}" if config.inipath is not None else ""
    config_warning(config, pytest.PytestConfigWarning(
        f"pytest chose rootdir {config.rootpath}{ini} from {shown}: it reads an option's value given after a space "
        f"as a test path before plugins load. Write {fixed}"))
