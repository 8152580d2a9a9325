"""The OpenComputer settings, read through a :class:`~pytest_agentbench.settings.Settings` reader (the
``--opencomputer-*`` options are declared in the option table, ``pytest_agentbench/plugin/options.py``:
a plain run must not import ``pytest_agentbench.benches``). Each has an ini key ``agentbench_<dest>``;
the command line wins. Relative paths on the command line are taken from the invocation folder, in
the ini file from the ini file's folder (as for ``--waa-examples``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_agentbench.benches.opencomputer.checks import DEFAULT_TIMEOUT

if TYPE_CHECKING:
    from pytest_agentbench.settings import Settings


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


def opencomputer_settings(settings: Settings) -> OpenComputerSettings:
    """The options, as checked by the option table."""
    def get(key: str) -> str | None:
        value = settings.get(f"opencomputer_{key}")
        return None if value is None else str(value)

    def folder(key: str) -> Path | None:
        value = get(key)
        return Path(value) if value else None

    timeout = settings.get("opencomputer_timeout")
    return OpenComputerSettings(
        tasks=folder("tasks"),
        verifiers=folder("verifiers"),
        end_state=folder("end_state"),
        timeout=DEFAULT_TIMEOUT if timeout is None else float(timeout),
        judge=get("judge"),
        verifier_errors=get("verifier_errors") or "fail",
        harness=get("harness") or "auto",
        python=get("python") or "auto",
    )
