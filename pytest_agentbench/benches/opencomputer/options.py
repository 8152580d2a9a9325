"""The OpenComputer settings, read through a :class:`~pytest_agentbench.settings.Settings` reader (the
``--opencomputer-*`` options are declared in the option table, ``pytest_agentbench/plugin/options.py``:
a plain run must not import ``pytest_agentbench.benches``). Each has an ini key ``agentbench_<dest>``;
the command line wins. Relative paths on the command line are taken from the invocation folder, in
the ini file from the ini file's folder (as for ``--waa-examples``). Each field names its option.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_agentbench.benches.opencomputer.checks import DEFAULT_TIMEOUT
from pytest_agentbench.benches.opencomputer.container import DEFAULT_IMAGE, DEFAULT_READY_TIMEOUT, DEFAULT_SHM_SIZE
from pytest_agentbench.settings import from_settings, option

if TYPE_CHECKING:
    from pytest_agentbench.settings import Settings


@dataclass(frozen=True)
class OpenComputerSettings:
    tasks: Path | None = option("opencomputer_tasks", None, convert=Path)
    checkout: Path | None = option("opencomputer_checkout", None, convert=Path)
    verifiers: Path | None = option("opencomputer_verifiers", None, convert=Path)
    end_state: Path | None = option("opencomputer_end_state", None, convert=Path)
    timeout: float = option("opencomputer_timeout", DEFAULT_TIMEOUT, convert=float)
    judge: str | None = option("opencomputer_judge", None, convert=str)
    verifier_errors: str = option("opencomputer_verifier_errors", "fail")
    harness: str = option("opencomputer_harness", "auto")
    python: str = option("opencomputer_python", "auto", convert=str)
    backend: str = option("opencomputer_backend", "bwrap")
    image: str = option("opencomputer_image", DEFAULT_IMAGE, convert=str)
    docker_memory: str | None = option("opencomputer_docker_memory", None, convert=str)
    docker_cpus: str | None = option("opencomputer_docker_cpus", None, convert=str)
    docker_shm_size: str = option("opencomputer_docker_shm_size", DEFAULT_SHM_SIZE, convert=str)
    docker_ready_timeout: float = option("opencomputer_docker_ready_timeout", float(DEFAULT_READY_TIMEOUT),
                                         convert=float)
    #: ``--pool``: with docker, aws or azure the pool's hosts run the containers (and the pool checks them)
    pool: str | None = option("pool", None)

    @property
    def pooled(self) -> bool:
        return self.pool in ("docker", "aws", "azure")


def opencomputer_settings(settings: Settings | None) -> OpenComputerSettings:
    """The options, as checked by the option table (every default outside pytest)."""
    return from_settings(OpenComputerSettings, settings)
