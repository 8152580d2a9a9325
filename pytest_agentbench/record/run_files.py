"""The files of a run folder, written the same way by the plugin and by the Python API
(``evaluate_agent_on_benchmark(..., results_dir=...)``): the record of an item (a results.jsonl line),
its trajectory.json and screenshots, and summary.json with the viewer. No pytest here: the plugin
layer (``plugin/artifacts.py``, ``plugin/controller.py``) adds only what it learns from pytest.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_agentbench import metrics as m
from pytest_agentbench.record.runfolder import task_json

if TYPE_CHECKING:
    from pytest_agentbench.model import Action, Criterion
    from pytest_agentbench.record.runfolder import RunFolder

RESULT_SCHEMA = "pytest-agentbench/result/v1"
TRAJECTORY_SCHEMA = "pytest-agentbench/trajectory/v1"
SUMMARY_SCHEMA = "pytest-agentbench/summary/v1"
#: What summary.json's ``tasks`` keeps of each record.
TASK_FIELDS = ("nodeid", "benchmark", "domain", "task_id", "status", "success", "score", "num_steps", "error",
               "error_type", "reason", "trajectory")


# -- one item's record ---------------------------------------------------------------------------------
def base_payload(nodeid: str | None, task: dict[str, Any], agent: str) -> dict[str, Any]:
    """The record of an item before its episode: every field at its "nothing happened" value."""
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
        from pydantic_core import to_jsonable_python  # here: collection never loads pydantic

        out["raw"] = to_jsonable_python(out["raw"])  # agent data: whatever it holds, as model_dump would
    return out


_PLAIN = (str, int, float, bool)


def _jsonable(value: Any) -> Any:
    if value is None or type(value) in _PLAIN:
        return value
    from pydantic_core import to_jsonable_python  # here: collection never loads pydantic

    return to_jsonable_python(value)


def criterion_json(criterion: Criterion) -> dict[str, Any]:
    """``criterion.model_dump(mode="json")``, fast."""
    return {"name": criterion.name, "passed": criterion.passed, "detail": criterion.detail,
            "expected": _jsonable(criterion.expected), "actual": _jsonable(criterion.actual)}


def write_png(path: str, observation: Any) -> None:
    data = observation.screenshot  # rendered here, on the writer thread, when lazy
    if not data:
        raise ValueError(f"no screenshot to write to {path}")
    with open(path, "wb") as handle:
        handle.write(data)


def write_episode_files(folder: RunFolder, trajectory_path: str, trajectory: dict[str, Any] | str,
                        pngs: Sequence[tuple[str, Any]] = ()) -> None:
    """trajectory.json (its dict, or its text from ``runfolder.task_json``), then the screenshots
    (``(path, observation)``); the trajectory first, so a screenshot that cannot be drawn does not
    cost the step record. Every screenshot is tried; the first failure is raised after the others
    were written."""
    text = trajectory if isinstance(trajectory, str) else task_json(trajectory)
    try:
        folder.write_task_text(trajectory_path, text)
    except FileNotFoundError:  # the first task of this benchmark: make tasks/<bench>/
        os.makedirs(os.path.dirname(trajectory_path), exist_ok=True)
        folder.write_task_text(trajectory_path, text)
    if pngs:
        os.makedirs(os.path.dirname(pngs[0][0]), exist_ok=True)
    failed: Exception | None = None
    for png, observation in pngs:
        try:
            write_png(png, observation)
        except Exception as exc:  # noqa: BLE001 - keep writing the others, report the first
            failed = failed or exc
    if failed is not None:
        raise failed


# -- the run's summary ---------------------------------------------------------------------------------
def count(values: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for value in values:
        out[value] = out.get(value, 0) + 1
    return dict(sorted(out.items()))


def run_summary(records: Sequence[dict[str, Any]], *, run_name: str, benchmarks: Sequence[str], agent: str,
                created_at: str, finished_at: str, max_steps: int | None,
                task_fields: tuple[str, ...] | None = TASK_FIELDS, **extra: Any) -> dict[str, Any]:
    """summary.json from the run's records: the metrics over all of them, by domain, the statuses
    and one line per task; ``extra`` adds what only one writer knows (the plugin's budget, say).

    ``task_fields=None`` leaves the per-task lines out: the caller writes them from the records
    with ``write_summary(..., tasks=task_rows(records, fields))``, one at a time, instead of
    holding a second dict per task beside its record (a few thousand tasks: a megabyte)."""
    attempts = [m.attempt_from_result(r) for r in records]
    summary = {
        "schema": SUMMARY_SCHEMA,
        "run_name": run_name,
        "benchmark_name": "+".join(benchmarks),
        "benchmarks": list(benchmarks),
        "agent": agent,
        "model_id": agent,
        "created_at": created_at,
        "finished_at": finished_at,
        "max_steps": max_steps,
        **m.metrics(attempts),
        "by_domain": m.by_domain(attempts),
        "statuses": count(r["status"] for r in records),
        "tasks": [],
        **extra,
    }
    if task_fields is None:
        del summary["tasks"]
    else:
        summary["tasks"] = list(task_rows(records, task_fields))
    return summary


def task_rows(records: Iterable[Mapping[str, Any]], task_fields: tuple[str, ...] = TASK_FIELDS,
              ) -> Iterator[dict[str, Any]]:
    """summary.json's line of each record (its ``tasks``), made as it is asked for."""
    for record in records:
        yield {k: record.get(k) for k in task_fields}


def write_summary(folder: RunFolder, summary: dict[str, Any], records: list[dict[str, Any]] | None = None, *,
                  tasks: Iterable[dict[str, Any]] | None = None,
                  record_texts: Sequence[str | None] | None = None) -> None:
    """summary.json and the viewer page (OSError when the disk says no). ``records``: the records
    results.jsonl holds, in its order, when the caller has them; the viewer then takes them, and
    ``summary``, from here instead of parsing both files back. ``tasks``: the per-task lines of a
    summary made without them (``run_summary(..., task_fields=None)``), written under ``tasks``
    as they come; the file is the same as for the summary holding them: compact JSON, one task
    per line (``streamed.json_pieces_with_rows``). ``record_texts``: the
    records' results.jsonl lines as written, which the viewer embeds as they are."""
    from pytest_agentbench.record.streamed import json_pieces_with_rows, write_text_pieces
    from pytest_agentbench.record.viewer import write_viewer

    head = {k: v for k, v in summary.items() if k != "tasks"}
    rows = summary.get("tasks", []) if tasks is None else tasks
    folder.summary_path.parent.mkdir(parents=True, exist_ok=True)
    write_text_pieces(folder.summary_path, json_pieces_with_rows(head, "tasks", rows))
    write_viewer(folder.path, summary=summary if records is not None else None, records=records,
                 record_texts=record_texts if records is not None else None)
