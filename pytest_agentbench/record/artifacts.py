"""Per-task files (trajectory.json, screenshots) and the JSON record of one item.

Runs where the item runs (a worker under xdist); the run folder is on a shared file system. The
record it returns travels to the controller on the test report and becomes one results.jsonl line.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

    from ..model import EpisodeRecord, Task
    from ..outcomes import Outcome
    from ..session import AgentbenchPlugin

RESULT_SCHEMA = "pytest-agentbench/result/v1"
TRAJECTORY_SCHEMA = "pytest-agentbench/trajectory/v1"


def base_payload(nodeid: str, task: dict[str, Any], agent: str) -> dict[str, Any]:
    return {
        "schema": RESULT_SCHEMA,
        "nodeid": nodeid,
        "benchmark": task["benchmark"],
        "domain": task.get("domain", "default"),
        "task_id": task["task_id"],
        "agent": agent,
        "success": False,
        "score": 0.0,
        "passed": None,
        "outcome": False,
        "num_steps": 0,
        "step_limit": 0,
        "error": None,
        "error_type": None,
        "reason": None,
        "criteria": [],
        "final_action": None,
        "total_time_seconds": 0.0,
        "cost_usd": 0.0,
        "trajectory": None,
        "screenshots": [],
        "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
        "extra": {},
    }


def _write_png(path: Any, observation: Any) -> None:
    data = observation.screenshot  # rendered here, on the writer thread, when lazy
    if not data:
        raise ValueError(f"no screenshot to write to {path}")
    path.write_bytes(data)


def save_episode(
    state: AgentbenchPlugin,
    item: pytest.Item,
    task: Task,
    record: EpisodeRecord,
    outcome: Outcome,
    seconds: float,
) -> dict[str, Any]:
    """Write trajectory.json (always) and screenshots (per ``--screenshots``); return the record."""
    payload = base_payload(item.nodeid, item.stash[_task_key()], record.agent)
    verdict = record.verdict
    payload.update(
        success=record.success,
        score=record.score,
        passed=verdict.passed if verdict else None,
        outcome=record.is_outcome,
        num_steps=record.num_steps,
        step_limit=record.step_limit,
        error=record.error,
        error_type=record.error_type,
        reason=record.reason,
        criteria=[c.model_dump(mode="json") for c in verdict.criteria] if verdict else [],
        final_action=record.final_action.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
        if record.final_action else None,
        total_time_seconds=round(record.total_time_seconds, 6),
        cost_usd=record.cost_usd,
        expected_outcome=outcome.kind,
    )
    folder = state.run_folder
    if folder is None:  # --collect-only never plays; defensive for direct fixture use
        return payload
    from ..trials import task_dir as trial_task_dir, trajectory_path as trial_trajectory_path

    task_dir = trial_task_dir(folder, item, record.benchmark, record.task_id)
    pngs: list[tuple[Any, Any]] = []
    mode = state.settings.screenshots
    keep = mode == "on" or (mode == "only-on-failure" and outcome.kind != "passed")
    shots: list[str] = []
    steps_json = []
    for step in record.steps:
        entry = step.model_dump(mode="json", exclude={"observation"})
        entry["action"] = step.action.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
        entry["action"]["type"] = step.action.type
        entry["label"] = step.action.describe()
        if keep and step.observation is not None and step.observation.has_screenshot:
            png = task_dir / f"step_{step.index:03d}.png"
            pngs.append((png, step.observation))
            entry["screenshot_path"] = folder.relative(png)
            shots.append(entry["screenshot_path"])
        steps_json.append(entry)
    final_shot = None
    final = record.final_observation
    if keep and final is not None and final.has_screenshot:
        png = task_dir / "final.png"
        pngs.append((png, final))
        final_shot = folder.relative(png)
        shots.append(final_shot)
    trajectory = {
        "schema": TRAJECTORY_SCHEMA,
        "nodeid": item.nodeid,
        "task": task.model_dump(mode="json"),
        "agent": record.agent,
        "steps": steps_json,
        "final_screenshot": final_shot,
        "num_steps": record.num_steps,
        "step_limit": record.step_limit,
        "verdict": verdict.model_dump(mode="json") if verdict else None,
        "error": record.error,
        "error_type": record.error_type,
        "outcome": outcome.kind,
        "message": outcome.message,
        "total_time_seconds": round(record.total_time_seconds, 6),
        "cost_usd": record.cost_usd,
    }
    trajectory_path = trial_trajectory_path(folder, item, record.benchmark, record.task_id)

    def write_files() -> None:
        # The trajectory first: a screenshot that cannot be drawn must not cost the step record.
        try:
            folder.write_task_json(trajectory_path, trajectory)
        except FileNotFoundError:  # the first task of this benchmark: make tasks/<bench>/
            trajectory_path.parent.mkdir(parents=True, exist_ok=True)
            folder.write_task_json(trajectory_path, trajectory)
        if pngs:
            task_dir.mkdir(parents=True, exist_ok=True)
        failed: Exception | None = None
        for png, observation in pngs:
            try:
                _write_png(png, observation)
            except Exception as exc:  # noqa: BLE001 - keep writing the others, report the first
                failed = failed or exc
        if failed is not None:
            raise failed

    state.writer.submit(write_files)
    payload["trajectory"] = folder.relative(trajectory_path)
    payload["screenshots"] = shots
    return payload


def _task_key():  # type: ignore[no-untyped-def]
    from ..collect import TASK_KEY

    return TASK_KEY
