"""Per-task files (trajectory.json, screenshots) and the JSON record of one item.

Runs where the item runs (a worker under xdist); the run folder is on a shared file system. The
record it returns travels to the controller on the test report and becomes one results.jsonl line.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from pydantic_core import to_jsonable_python

if TYPE_CHECKING:
    import pytest

    from pytest_agentbench.model import Action, Criterion, EpisodeRecord, Task
    from pytest_agentbench.outcomes import Outcome
    from pytest_agentbench.plugin.session import AgentbenchPlugin

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


def _write_png(path: str, observation: Any) -> None:
    data = observation.screenshot  # rendered here, on the writer thread, when lazy
    if not data:
        raise ValueError(f"no screenshot to write to {path}")
    with open(path, "wb") as handle:
        handle.write(data)


# The record's JSON is built from the models' attributes rather than with ``model_dump``: several
# dumps per step and per item were the largest per-item cost of the plugin. The shapes are the
# ones record/models.py describes; the tests validate real runs against those models and schemas.
def action_json(action: Action) -> dict[str, Any]:
    """``action.model_dump(mode="json", exclude_none=True, exclude_defaults=True)``, fast: every
    field but ``type`` defaults to None, except ``keys`` (an empty list)."""
    out = {name: value for name, value in action.__dict__.items() if value is not None}
    if not out.get("keys", True):
        del out["keys"]
    if "raw" in out:
        out["raw"] = to_jsonable_python(out["raw"])  # agent data: whatever it holds, as model_dump would
    return out


_PLAIN = (str, int, float, bool)


def _jsonable(value: Any) -> Any:
    return value if value is None or type(value) in _PLAIN else to_jsonable_python(value)


def criterion_json(criterion: Criterion) -> dict[str, Any]:
    """``criterion.model_dump(mode="json")``, fast."""
    return {"name": criterion.name, "passed": criterion.passed, "detail": criterion.detail,
            "expected": _jsonable(criterion.expected), "actual": _jsonable(criterion.actual)}


def save_episode(
    state: AgentbenchPlugin,
    item: pytest.Item,
    task: Task,
    record: EpisodeRecord,
    outcome: Outcome,
    seconds: float,
) -> dict[str, Any]:
    """Write trajectory.json (always) and screenshots (per ``--bench-screenshots``); return the record."""
    payload = base_payload(item.nodeid, item.stash[_task_key()], record.agent)
    verdict = record.verdict
    criteria = [criterion_json(c) for c in verdict.criteria] if verdict else []
    steps_json: list[dict[str, Any]] = [{"index": step.index, "action": action_json(step.action), "reasoning": step.reasoning,
                   "seconds": step.seconds, "screenshot_path": step.screenshot_path, "cost_usd": step.cost_usd,
                   "usage": step.usage, "label": step.action.describe()} for step in record.steps]
    final_json = None
    if record.final_action is not None:  # the last step's action, whose dict is built already
        last = record.steps[-1] if record.steps else None
        final_json = dict(steps_json[-1]["action"]) if last is not None and last.action is record.final_action \
            else action_json(record.final_action)
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
        criteria=criteria,
        final_action=final_json,
        total_time_seconds=round(record.total_time_seconds, 6),
        cost_usd=record.cost_usd,
        expected_outcome=outcome.kind,
    )
    folder = state.run_folder
    if folder is None:  # --collect-only never plays; defensive for direct fixture use
        return payload
    from pytest_agentbench.plugin.trials import file_suffix

    task_dir, trajectory_file = folder.task_files(record.benchmark, record.task_id, file_suffix(item))
    pngs: list[tuple[str, Any]] = []
    mode = state.settings.screenshots
    keep = mode == "on" or (mode == "only-on-failure" and outcome.kind != "passed")
    shots: list[str] = []
    if keep:
        for step, entry in zip(record.steps, steps_json):
            if step.observation is not None and step.observation.has_screenshot:
                shot = f"{task_dir}/step_{step.index:03d}.png"
                pngs.append((folder.absolute(shot), step.observation))
                entry["screenshot_path"] = shot
                shots.append(shot)
    final_shot = None
    final = record.final_observation
    if keep and final is not None and final.has_screenshot:
        final_shot = f"{task_dir}/final.png"
        pngs.append((folder.absolute(final_shot), final))
        shots.append(final_shot)
    trajectory = {
        "schema": TRAJECTORY_SCHEMA,
        "nodeid": item.nodeid,
        "task": task.__dict__.copy(),  # every field; the values came from the manifest's JSON
        "agent": record.agent,
        "steps": steps_json,
        "final_screenshot": final_shot,
        "num_steps": record.num_steps,
        "step_limit": record.step_limit,
        "verdict": {"score": verdict.score, "passed": verdict.passed, "criteria": criteria, "reason": verdict.reason}
        if verdict else None,
        "error": record.error,
        "error_type": record.error_type,
        "outcome": outcome.kind,
        "message": outcome.message,
        "total_time_seconds": round(record.total_time_seconds, 6),
        "cost_usd": record.cost_usd,
    }
    trajectory_path = folder.absolute(trajectory_file)
    png_dir = folder.absolute(task_dir)

    def write_files() -> None:
        # The trajectory first: a screenshot that cannot be drawn must not cost the step record.
        try:
            folder.write_task_json(trajectory_path, trajectory)
        except FileNotFoundError:  # the first task of this benchmark: make tasks/<bench>/
            os.makedirs(os.path.dirname(trajectory_path), exist_ok=True)
            folder.write_task_json(trajectory_path, trajectory)
        if pngs:
            os.makedirs(png_dir, exist_ok=True)
        failed: Exception | None = None
        for png, observation in pngs:
            try:
                _write_png(png, observation)
            except Exception as exc:  # noqa: BLE001 - keep writing the others, report the first
                failed = failed or exc
        if failed is not None:
            raise failed

    state.writer.submit(write_files)
    payload["trajectory"] = trajectory_file
    payload["screenshots"] = shots
    payload["criteria"] = list(criteria)  # its own list: a hook may change the record, not the trajectory
    return payload


def _task_key():
    from pytest_agentbench.plugin.episodes import TASK_KEY

    return TASK_KEY
