"""Per-task files (trajectory.json, screenshots) and the JSON record of one item, from what pytest
knows of it (its node id, its trial, the ``--bench-screenshots`` mode); the files themselves are
written by ``record/run_files.py``, as the Python API writes them.

Runs where the item runs (a worker under xdist); the run folder is on a shared file system. The
record it returns travels to the controller on the test report and becomes one results.jsonl line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_agentbench.plugin.state import TASK_KEY
from pytest_agentbench.plugin.trials import file_suffix
from pytest_agentbench.record.run_files import (
    TRAJECTORY_SCHEMA,
    action_json,
    base_payload,
    criterion_json,
    write_episode_files,
)
from pytest_agentbench.record.runfolder import task_json

if TYPE_CHECKING:
    import pytest

    from pytest_agentbench.model import EpisodeRecord, Task
    from pytest_agentbench.outcomes import Outcome
    from pytest_agentbench.plugin.session import AgentbenchPlugin


def save_episode(
    state: AgentbenchPlugin,
    item: pytest.Item,
    task: Task,
    record: EpisodeRecord,
    outcome: Outcome,
    seconds: float,
) -> dict[str, Any]:
    """Write trajectory.json (always) and screenshots (per ``--bench-screenshots``); return the record."""
    payload = base_payload(item.nodeid, item.stash[TASK_KEY], record.agent)
    verdict = record.verdict
    criteria = [criterion_json(c) for c in verdict.criteria] if verdict else []
    steps_json: list[dict[str, Any]] = [
        {"index": step.index, "action": action_json(step.action), "reasoning": step.reasoning,
         "seconds": step.seconds, "screenshot_path": step.screenshot_path, "cost_usd": step.cost_usd,
         "usage": step.usage, "label": step.action.describe()} for step in record.steps]
    final_json = None
    if record.final_action is not None:  # the last step's action, whose dict is built already (shared,
        # not copied: the payload is held to the end of the run and nothing edits either dict)
        last = record.steps[-1] if record.steps else None
        final_json = steps_json[-1]["action"] if last is not None and last.action is record.final_action \
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
    task_dir, trajectory_file = folder.task_files(record.benchmark, record.task_id, file_suffix(item))
    pngs: list[tuple[str, Any]] = []
    mode = state.settings.screenshots
    keep = mode == "on" or (mode == "only-on-failure" and outcome.kind != "passed")
    shots: list[str] = []
    if keep:
        for step, entry in zip(record.steps, steps_json, strict=True):
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
    # Encoded here, not in the background: a queued job then holds the file's text, a third of
    # the size of its dicts, and the writer is left with the system calls, which run beside the
    # next episode (in a child process when there is no screenshot to draw).
    text = task_json(trajectory)
    if pngs:
        def write_files() -> None:
            write_episode_files(folder, trajectory_path, text, pngs)

        state.writer.submit(write_files)
    else:
        state.writer.submit_text(trajectory_path, text)
    payload["trajectory"] = trajectory_file
    payload["screenshots"] = shots
    payload["criteria"] = list(criteria)  # its own list: a hook may change the record, not the trajectory
    return payload
