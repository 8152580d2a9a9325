"""The OpenComputer options and the sandbox option, and reading them back.

The first part (definitions) imports only argparse and pytest, because ``pytest_addoption`` runs
in every pytest run; it is meant to live in ``pytest_agentbench/options.py`` next to the other
benchmarks' options (a plain run must not import ``pytest_agentbench.benches``). Each option has
an ini key of the same meaning (``agentbench_<dest>``); the command line wins. Relative paths on
the command line are taken from the invocation folder, in the ini file from the ini file's folder
(as for ``--waa-examples``).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path

import pytest

from ...options import (  # noqa: F401 - the definitions live with the other options
    OPENCOMPUTER_DEFAULT_TIMEOUT,
    OPENCOMPUTER_HARNESS,
    OPENCOMPUTER_VERIFIER_ERRORS,
    SANDBOX_ISOLATION_MODES,
    add_opencomputer_options,
    add_sandbox_options,
    opencomputer_timeout,
)


# -- reading them back (stays in this package) ----------------------------------------------------------
@dataclass(frozen=True)
class OpenComputerSettings:
    tasks: Path | None
    verifiers: Path | None
    end_state: Path | None
    timeout: float
    judge: str | None
    verifier_errors: str
    harness: str = "auto"
    python: str = "auto"


def _setting(config: pytest.Config, key: str) -> tuple[str | None, Path | None]:
    """The value and the folder relative paths are taken from (None when unset)."""
    dest = f"opencomputer_{key}"
    value = config.getoption(dest, None)
    if value not in (None, ""):
        return str(value), Path(config.invocation_params.dir)
    try:
        raw = str(config.getini(f"agentbench_{dest}")).strip()
    except ValueError:  # the ini key is not registered
        raw = ""
    if raw:
        return raw, Path(config.inipath).parent if config.inipath else Path(config.rootpath)
    return None, None


def _folder(config: pytest.Config, key: str) -> Path | None:
    value, base = _setting(config, key)
    if value is None:
        return None
    path = Path(value).expanduser()
    return path if path.is_absolute() or base is None else base / path


def opencomputer_settings(config: pytest.Config) -> OpenComputerSettings:
    """The options, checked. Bad values are usage errors naming the option and the fix."""
    timeout_text, _ = _setting(config, "timeout")
    timeout = OPENCOMPUTER_DEFAULT_TIMEOUT
    if timeout_text is not None:
        try:
            timeout = opencomputer_timeout(timeout_text)
        except argparse.ArgumentTypeError as exc:
            raise pytest.UsageError(f"ini agentbench_opencomputer_timeout: {exc}") from None
    errors, _ = _setting(config, "verifier_errors")
    if errors is not None and errors not in OPENCOMPUTER_VERIFIER_ERRORS:
        raise pytest.UsageError(f"agentbench_opencomputer_verifier_errors must be fail or error, got {errors!r}")
    harness, _ = _setting(config, "harness")
    if harness is not None and harness not in OPENCOMPUTER_HARNESS:
        raise pytest.UsageError(f"agentbench_opencomputer_harness must be one of {', '.join(OPENCOMPUTER_HARNESS)}, "
                                f"got {harness!r}")
    python, base = _setting(config, "python")
    if python is not None and python not in ("auto", "system", "current"):
        path = Path(python).expanduser()
        python = str(path if path.is_absolute() or base is None else base / path)
    judge, _ = _setting(config, "judge")
    return OpenComputerSettings(
        tasks=_folder(config, "tasks"),
        verifiers=_folder(config, "verifiers"),
        end_state=_folder(config, "end_state"),
        timeout=timeout,
        judge=judge,
        verifier_errors=errors or "fail",
        harness=harness or "auto",
        python=python or "auto",
    )
