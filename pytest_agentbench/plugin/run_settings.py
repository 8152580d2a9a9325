"""The settings of a benchmark run and of a verifier audit, filled from the option table.

Each field names the option that feeds it (:func:`pytest_agentbench.settings.option`), so a value is
parsed and checked once, by its row in ``plugin/options.py``, and :func:`settings_from_config` only
reads and converts. This module loads when a run asks for a benchmark or an audit, not in the plain
pytest runs of a project that merely has the plugin installed (``options`` gives the names lazily).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_agentbench.plugin.bridge import settings_for, usage_errors
from pytest_agentbench.settings import from_settings, option, unique_words, words


def _inspect_log(value: str) -> Path:
    from pytest_agentbench.record.inspect_log import check_path

    return check_path(value)


@dataclass(frozen=True)
class Settings:
    """What a benchmark run plays, where its results go and which gates it has."""

    benchmarks: tuple[str, ...] = option("bench", (), convert=unique_words)
    tasks: int | None = option("tasks", None)
    task_ids: tuple[str, ...] = option("bench_task", (), convert=tuple)
    agent: str = option("agent", "mock")
    agent_script: Path | None = option("agent_script", None, convert=Path)
    max_steps: int | None = option("max_steps", None)
    run_name: str | None = option("run_name", None)
    results_dir: Path = option("results_dir", Path("benchmark_results"), convert=Path)
    screenshots: str = option("screenshots", "only-on-failure")
    baseline: Path | None = option("baseline", None, convert=Path)
    min_success: float | None = option("min_success", None)
    inspect_log: Path | None = option("inspect_log", None, convert=_inspect_log)


def _operators(values: list[str]) -> tuple[str, ...]:
    from pytest_agentbench.audit.operators import OPERATORS

    operators = unique_words(values) or tuple(OPERATORS)
    unknown = [op for op in operators if op not in OPERATORS]
    if unknown:
        raise ValueError(f"unknown operator {', '.join(map(repr, unknown))} in --audit-operators; "
                         f"known: {', '.join(OPERATORS)}")
    return operators


def _all_operators() -> tuple[str, ...]:
    from pytest_agentbench.audit.operators import OPERATORS

    return tuple(OPERATORS)


def _audit_limit(limit: int) -> int | None:
    return None if limit == 0 else limit


@dataclass(frozen=True)
class AuditSettings:
    """Which checker the audit runs, on which tasks, with which operators."""

    verifier: str = option("audit_verifier", "")
    operators: tuple[str, ...] = option("operators", convert=_operators, default_factory=_all_operators)
    task_ids: tuple[str, ...] = option("audit_tasks", (), convert=unique_words)
    split: str | None = option("audit_split", None)
    limit: int | None = option("audit_limit", 20, convert=_audit_limit)  # None = all
    ignore_fields: tuple[str, ...] = option("ignore_fields", (), convert=words)
    out: Path | None = option("audit_out", None, convert=Path)
    appworld_python: str | None = option("appworld_python", None)
    appworld_root: str | None = option("appworld_root", None)


def settings_from_config(config: pytest.Config) -> Settings:
    """The run's settings; a bad one is a usage error."""
    with usage_errors():
        return from_settings(Settings, settings_for(config))


def audit_settings_from_config(config: pytest.Config) -> AuditSettings:
    """The audit's settings; an unknown operator is a usage error."""
    with usage_errors():
        return from_settings(AuditSettings, settings_for(config))
