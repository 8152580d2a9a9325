"""Extension points. Every hook here is also implemented by the plugin's own built-ins.

Implement them in a ``conftest.py`` or in a package with a ``pytest11`` entry point; the names must
start with ``pytest_`` for pytest to find them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .model import EpisodeRecord
    from .outcomes import Outcome
    from .registry import AgentRegistry, BenchmarkRegistry


def pytest_agentbench_register_benchmarks(registry: BenchmarkRegistry) -> None:
    """Register benchmarks: ``registry.register("name", factory, description=...)``.

    ``factory(config)`` receives the ``pytest.Config`` (or None outside pytest) and returns a
    :class:`pytest_agentbench.Benchmark`. Called once per process, at session start.
    """


def pytest_agentbench_register_agents(registry: AgentRegistry) -> None:
    """Register agents: ``registry.register("name", factory, description=...)``.

    ``factory(config)`` returns a :class:`pytest_agentbench.Agent`. It may raise
    ``pytest.UsageError`` (a missing API key, say) and is then reported before anything runs.
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
    results.jsonl records (controller only)."""


def pytest_agentbench_episode_finished(record: EpisodeRecord, item: pytest.Item, payload: dict[str, Any]) -> None:
    """Observe a finished episode. ``payload`` is the JSON record that goes to ``results.jsonl``;
    implementations may add JSON-plain keys under ``payload["extra"]``."""
