"""Write a run folder for ``evaluate_agent_on_benchmark(..., results_dir=...)`` (no pytest), through
the same writers as the plugin (``record/run_files.py``)."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

from pytest_agentbench.record.run_files import (
    RESULT_SCHEMA,
    TRAJECTORY_SCHEMA,
    run_summary,
    write_episode_files,
    write_summary,
)
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
    for task, record in zip(tasks, results, strict=True):
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
        write_episode_files(folder, str(folder.trajectory_path(record.benchmark or bench.name, record.task_id)),
                            trajectory)
        row = {
            "schema": RESULT_SCHEMA, "nodeid": None, "benchmark": record.benchmark or bench.name,
            "domain": record.domain, "task_id": record.task_id, "agent": record.agent,
            "success": record.success, "score": record.score,
            "passed": record.verdict.passed if record.verdict else None, "outcome": record.is_outcome,
            "num_steps": record.num_steps, "step_limit": record.step_limit, "error": record.error,
            "error_type": record.error_type, "reason": record.reason,
            "criteria": [c.model_dump(mode="json") for c in record.verdict.criteria] if record.verdict else [],
            "final_action": record.final_action.model_dump(mode="json", exclude_none=True)
                            if record.final_action else None,
            "total_time_seconds": record.total_time_seconds, "cost_usd": record.cost_usd,
            "trajectory": folder.relative(folder.trajectory_path(record.benchmark or bench.name, record.task_id)),
            "screenshots": [], "worker": "main",
            "extra": {}, "status": trajectory["outcome"], "duration": record.total_time_seconds,
        }
        folder.append_result(row)
        records.append(row)
    folder.close()  # (on an exception, the folder's finalizer closes it)
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    write_summary(folder, run_summary(records, run_name=folder.name, benchmarks=[bench.name], agent=agent_name,
                                      created_at=now, finished_at=now, max_steps=None))
    return folder
