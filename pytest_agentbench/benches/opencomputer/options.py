"""The OpenComputer settings, read back from the option table (``pytest_agentbench/plugin/options.py``,
where the ``--opencomputer-*`` options are declared: a plain run must not import
``pytest_agentbench.benches``). Each has an ini key ``agentbench_<dest>``; the command line wins.
Relative paths on the command line are taken from the invocation folder, in the ini file from the
ini file's folder (as for ``--waa-examples``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_agentbench.plugin.options import (
    OPENCOMPUTER_DEFAULT_TIMEOUT,
    setting,
)


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


def opencomputer_settings(config: pytest.Config) -> OpenComputerSettings:
    """The options, checked (bad values are usage errors naming the option and the fix)."""
    def get(key: str) -> str | None:
        value = setting(config, f"opencomputer_{key}")
        return None if value is None else str(value)

    def folder(key: str) -> Path | None:
        value = get(key)
        return Path(value) if value else None

    timeout = setting(config, "opencomputer_timeout")
    return OpenComputerSettings(
        tasks=folder("tasks"),
        verifiers=folder("verifiers"),
        end_state=folder("end_state"),
        timeout=OPENCOMPUTER_DEFAULT_TIMEOUT if timeout is None else float(timeout),
        judge=get("judge"),
        verifier_errors=get("verifier_errors") or "fail",
        harness=get("harness") or "auto",
        python=get("python") or "auto",
    )
