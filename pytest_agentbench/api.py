"""The reference tool's Python API, on top of the pytest-free episode loop.

``evaluate_agent_on_benchmark(agent, adapter)`` and ``compute_metrics(results)`` behave like
openadapt-evals' functions of the same names, with its known faults fixed: an unknown task id is
an error result for that task (the rest still run), the step counting and step-limit rules of
``episode.py`` apply, and with no outcomes the success rate is ``None``, not 0.0. Nothing is
written to disk unless ``results_dir`` is given.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pytest_agentbench.agent import Agent
from pytest_agentbench.benches.mock import MockBenchmark
from pytest_agentbench.benchmark import Benchmark
from pytest_agentbench.episode import DEFAULT_MAX_STEPS, run_episode
from pytest_agentbench.metrics import attempt_from_record, metrics
from pytest_agentbench.model import EpisodeRecord


class WAAMockAdapter(MockBenchmark):
    """The reference tool's mock adapter name, for code written against it."""

    name = "waa-mock"

    def __init__(self, num_tasks: int = 20, domains: Sequence[str] | None = None) -> None:
        super().__init__(num_tasks=num_tasks, domains=list(domains) if domains else None)


def evaluate_agent_on_benchmark(
    agent: Agent,
    adapter: Benchmark,
    task_ids: Iterable[str] | None = None,
    max_steps: int | None = DEFAULT_MAX_STEPS,
    *,
    results_dir: str | Path | None = None,
    run_name: str | None = None,
) -> list[EpisodeRecord]:
    """Play every task (or ``task_ids``) once and return one record per task, in order.

    ``max_steps`` is an explicit limit and so beats each task's own; pass ``None`` to use the
    tasks' limits. With ``results_dir`` the run is also written as a run folder.
    """
    if task_ids is None:
        tasks: list[Any] = list(adapter.list_tasks())
    else:
        tasks = []
        for task_id in task_ids:
            try:
                tasks.append(adapter.load_task(task_id))
            except KeyError:
                tasks.append(task_id)
    results = []
    for task in tasks:
        if isinstance(task, str):
            results.append(EpisodeRecord(
                task_id=task, benchmark=adapter.name, agent=getattr(agent, "name", ""),
                error=f"unknown task id {task!r} for benchmark {adapter.name!r}", error_type="infrastructure",
            ))
            continue
        results.append(run_episode(agent, adapter, task, max_steps=max_steps))
    if results_dir is not None:
        from pytest_agentbench.record.standalone import write_run

        write_run(Path(results_dir), run_name, adapter, agent, tasks, results)
    return results


def compute_metrics(results: Iterable[Any]) -> dict[str, Any]:
    """The reference tool's 15 metric keys (plus two), over outcomes only where it says so."""
    return metrics(attempt_from_record(r) for r in results)
