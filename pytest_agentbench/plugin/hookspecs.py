"""Extension points. Every hook here is also implemented by the plugin's own built-ins.

Implement them in a ``conftest.py`` or in a package with a ``pytest11`` entry point; the names must
start with ``pytest_`` for pytest to find them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_agentbench.model import EpisodeRecord
    from pytest_agentbench.outcomes import Outcome
    from pytest_agentbench.registry import AgentRegistry, BenchmarkRegistry


def pytest_agentbench_register_benchmarks(registry: BenchmarkRegistry) -> None:
    """Register benchmarks: ``registry.register("name", factory, description=...)``.

    ``factory(config)`` receives the ``pytest.Config`` (or None outside pytest) and returns a
    :class:`pytest_agentbench.Benchmark`. Called once per process, at session start.
    """


def pytest_agentbench_register_agents(registry: AgentRegistry) -> None:
    """Register agents: ``registry.register("name", factory, description=...)``.

    ``factory(config)`` returns a :class:`pytest_agentbench.Agent`. It may raise
    ``pytest.UsageError`` or ``pytest_agentbench.errors.ConfigError`` (a missing API key, say) and
    is then reported before anything runs.
    """


def pytest_agentbench_register_audit_adapters(registry: Any) -> None:
    """Register verifier-audit adapters by name: ``registry.register("name", factory)``, then
    ``pytest --audit-verifier=name``. ``factory(config)`` returns an object with the adapter
    protocol (``name``, ``ignore_fields``, ``policy``, ``describe``, ``task_ids``, ``reference``,
    ``deliver``)."""


@pytest.hookspec(firstresult=True)
def pytest_agentbench_verdict_to_outcome(record: EpisodeRecord, item: pytest.Item) -> Outcome | None:
    """Decide the pytest outcome of one episode. Return None to keep the built-in mapping."""


def pytest_agentbench_terminal_summary(terminalreporter: Any, records: list[dict[str, Any]]) -> None:
    """Print a benchmark's own tables after the run's summary. ``records`` are the run's
    results.jsonl records (controller only), to read: equal values (criteria, final actions,
    words) are one object shared between records, which holds every record to the end of the
    run in less memory."""


def pytest_agentbench_episode_finished(record: EpisodeRecord, item: pytest.Item, payload: dict[str, Any]) -> None:
    """Observe a finished episode. ``payload`` is the JSON record that goes to ``results.jsonl``;
    implementations may add JSON-plain keys under ``payload["extra"]``."""


@pytest.hookspec(firstresult=True)
def pytest_agentbench_vm_endpoints(vm: dict[str, Any], config: pytest.Config) -> dict[str, str] | None:
    """Choose how this process reaches its leased cloud VM: return ``{"server_url": ...,
    "evaluate_url": ..., "cdp_url": ...}`` (a bastion, a VPN address, a local double; the last two
    optional) and no SSH tunnel is opened.
    ``vm`` has ``name``, ``provider``, ``resource_id``, ``public_ip``, ``private_ip``, ``ssh_user``
    and ``host_key``. Return None to keep the built-in SSH tunnel (or ``--pool-connect direct``).
    With ``--opencomputer-backend docker`` the VM serves as a Docker host: return
    ``{"docker_host": "ssh://user@host"}`` to reach its daemon another way (your SSH setup and
    ``--pool-ssh-key``/``--pool-ssh-known-hosts`` apply); by default it is ``ssh://`` to the VM
    with the run's login key and pinned host key."""


def pytest_agentbench_pool_provider_extra(kind: str, config: pytest.Config) -> dict[str, Any] | None:
    """Settings for the cloud provider of ``--pool aws|azure`` that options cannot carry: return a
    dict merged into its settings (Azure: ``credential`` (a TokenCredential), ``transport``;
    both: ``ssh_cidr``, ``disk_gb``; AWS: ``subnet_id``). Called on the controller."""


def pytest_agentbench_scrub_screenshot(png: bytes, task: Any, config: pytest.Config) -> bytes | None:
    """Blank out what must not leave the machine (names, faces, numbers) from a screenshot.

    Called for every screenshot before any agent sees it and before anything is written to the run
    folder, only when it is read. Return the new PNG bytes, or None to leave it as it is; several
    implementations run in turn, in hook call order (latest registered first), each on the previous
    one's output."""
