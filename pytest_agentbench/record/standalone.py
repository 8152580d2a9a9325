"""Write a run folder for ``evaluate_agent_on_benchmark(..., results_dir=...)`` (no pytest)."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

from pytest_agentbench import metrics as m
from pytest_agentbench.plugin.artifacts import RESULT_SCHEMA, TRAJECTORY_SCHEMA
from pytest_agentbench.plugin.controller import SUMMARY_SCHEMA
from pytest_agentbench.record.runfolder import RunFolder, default_run_name


def _status(record: Any) -> str:
    """The word the pytest path would give this record (see outcomes.default_outcome)."""
    if record.error_type in ("infrastructure", "evaluation"):
        return "error"
    if record.error_type == "agent":
        return "failed"
    if record.verdict is None or record.verdict.passed is None:
        return "skipped"
    return "passed" if record.verdict.passed else "failed"


def write_run(results_dir: Path, run_name: str | None, bench: Any, agent: Any, tasks: list[Any],
              results: list[Any]) -> RunFolder:
    from pytest_agentbench.episode import _agent_name

    agent_name = _agent_name(agent)
    folder = RunFolder.create(results_dir, run_name or default_run_name([bench.name], agent_name))
    records = []
    for task, record in zip(tasks, results):
        if not hasattr(task, "model_dump"):  # an unknown id: record it as a bare task
            from pytest_agentbench.model import Task

            task = Task(task_id=str(task), benchmark=bench.name)
        task_json = task.model_dump(mode="json")
        trajectory = {
            "schema": TRAJECTORY_SCHEMA, "nodeid": None, "task": task_json, "agent": record.agent,
            "steps": [dict(s.model_dump(mode="json", exclude={"observation"}), label=s.action.describe())
                      for s in record.steps],
            "final_screenshot": None, "num_steps": record.num_steps, "step_limit": record.step_limit,
            "verdict": record.verdict.model_dump(mode="json") if record.verdict else None,
            "error": record.error, "error_type": record.error_type,
            "outcome": _status(record),
            "message": record.reason or "", "total_time_seconds": record.total_time_seconds,
            "cost_usd": record.cost_usd,
        }
        folder.write_json(folder.trajectory_path(record.benchmark or bench.name, record.task_id), trajectory)
        row = {
            "schema": RESULT_SCHEMA, "nodeid": None, "benchmark": record.benchmark or bench.name,
            "domain": record.domain, "task_id": record.task_id, "agent": record.agent,
            "success": record.success, "score": record.score,
            "passed": record.verdict.passed if record.verdict else None, "outcome": record.is_outcome,
            "num_steps": record.num_steps, "step_limit": record.step_limit, "error": record.error,
            "error_type": record.error_type, "reason": record.reason,
            "criteria": [c.model_dump(mode="json") for c in record.verdict.criteria] if record.verdict else [],
            "final_action": record.final_action.model_dump(mode="json", exclude_none=True) if record.final_action else None,
            "total_time_seconds": record.total_time_seconds, "cost_usd": record.cost_usd,
            "trajectory": folder.relative(folder.trajectory_path(record.benchmark or bench.name, record.task_id)),
            "screenshots": [], "worker": "main",
            "extra": {}, "status": trajectory["outcome"], "duration": record.total_time_seconds,
        }
        folder.append_result(row)
        records.append(row)
    folder.close()  # (on an exception, the folder's finalizer closes it)
    attempts = [m.attempt_from_result(r) for r in records]
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    folder.write_json(folder.summary_path, {
        "schema": SUMMARY_SCHEMA, "run_name": folder.name, "benchmark_name": bench.name, "benchmarks": [bench.name],
        "agent": agent_name, "model_id": agent_name, "created_at": now, "finished_at": now, "max_steps": None,
        **m.metrics(attempts), "by_domain": m.by_domain(attempts),
        "statuses": {k: sum(1 for r in records if r["status"] == k) for k in sorted({r["status"] for r in records})},
        "tasks": [{k: r.get(k) for k in ("nodeid", "benchmark", "domain", "task_id", "status", "success", "score",
                                         "num_steps", "error", "error_type", "reason", "trajectory")} for r in records],
    })
    from pytest_agentbench.record.viewer import write_viewer

    write_viewer(folder.path)
    return folder
