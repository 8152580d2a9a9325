"""Export a run as an Inspect AI eval log (``--bench-inspect-log PATH``), so ``inspect view`` lists and
opens it beside the user's other evals.

The log is Inspect's JSON format (``version: 2``), written with the standard library only: the
plugin does not depend on inspect-ai, and a run never imports it. The shape follows
``inspect_ai.log.EvalLog`` (0.3.x); tests read it back with ``inspect_ai.log.read_eval_log`` when
inspect-ai is installed. Two format facts drive the layout:

* Inspect's header reader streams the top-level keys and stops at ``samples``: every header field
  (``version``, ``status``, ``eval``, ``plan``, ``results``, ``stats``) is written before it.
* ``inspect view`` lists a ``.json`` log only when its file name starts with an ISO timestamp and
  parses ``<timestamp>_<task>_<id>.json`` for the listing: a directory PATH gets such a name.

One sample per record (an item of the run). Each sample carries two scores, so that Inspect's
own metrics, recomputed from the samples, give the plugin's figures: ``success`` (``"C"``/``"I"``,
whose accuracy is the success rate over outcomes) and ``score`` (the checker's partial credit,
whose mean is the average score over outcomes). Attempts that are not outcomes (infrastructure and
evaluation errors, not-evaluated tasks) have no scores; the errors are sample errors.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_agentbench import metrics as m
from pytest_agentbench.files import write_atomic
from pytest_agentbench.untrusted import load_file

#: Inspect's eval log format version written here.
LOG_VERSION = 2
#: Status values Inspect accepts for a whole eval.
STATUSES = ("started", "success", "cancelled", "error")
#: Terminal actions end the episode and are never executed: no tool call, no tool result.
TERMINAL = ("done", "fail", "answer", "error")

TrajectorySource = Callable[[Mapping[str, Any]], Mapping[str, Any] | None] | str | os.PathLike[str] | None

_UNSAFE = re.compile(r"[^A-Za-z0-9.-]")


def check_path(value: str | os.PathLike[str]) -> Path:
    """Validate an ``--bench-inspect-log`` value before the run starts; returns it as a Path.

    A path ending in ``.json`` is the log file; anything else is a directory for a timestamp-named
    log (Inspect's ``.eval`` zip format is not written)."""
    path = Path(value)
    text = str(value).strip()
    if not text:
        raise ValueError("--bench-inspect-log needs a PATH: a .json file or a directory")
    if path.suffix.lower() == ".eval":
        raise ValueError(f"--bench-inspect-log {text}: only Inspect's JSON log format is written; "
                         "give a .json file or a directory")
    if path.suffix.lower() == ".json" and path.is_dir():
        return path
    if path.suffix.lower() != ".json" and path.exists() and not path.is_dir():
        raise ValueError(f"--bench-inspect-log {text} is an existing file that is not .json; "
                         "give a .json file or a directory")
    return path


def log_file_name(created: str, task: str, task_id: str) -> str:
    """Inspect's own naming, ``<created>_<task>_<id>.json`` with ``_ / : +`` made ``-`` in each part,
    which is what ``inspect view`` needs to list the file and show its task."""
    def clean(part: str) -> str:
        return _UNSAFE.sub("-", part) or "run"

    return f"{clean(created)}_{clean(task)}_{clean(task_id)}.json"


def write_inspect_log(
    path: str | os.PathLike[str],
    summary: Mapping[str, Any] | None,
    records: Iterable[Mapping[str, Any]],
    trajectories: TrajectorySource = None,
    *,
    status: str = "success",
) -> Path:
    """Write ``records`` (result records, results.jsonl lines) as one Inspect eval log; return its path.

    ``path``: a ``.json`` file, or a directory to hold ``<created>_<task>_<id>.json``.
    ``summary``: the run's summary.json (run name, agent, benchmarks, times); None derives what it
    can from the records. ``trajectories``: the run folder (its trajectory files and manifest give
    each sample its instruction and messages), or a callable from a record to its trajectory dict
    (None when there is none), or None. ``status`` is Inspect's status of the eval run itself:
    ``success`` for a run that finished, whatever its tasks scored; ``cancelled`` for an interrupted one.
    Raises ValueError for a bad status and OSError when the file cannot be written.
    """
    if status not in STATUSES:
        raise ValueError(f"status {status!r} is not an Inspect eval status; use one of {', '.join(STATUSES)}")
    log = build_log(summary, list(records), trajectories, status=status)
    target = Path(path)
    if target.suffix.lower() != ".json" or target.is_dir():
        target = target / log_file_name(log["eval"]["created"], log["eval"]["task"], log["eval"]["task_id"])
    return write_atomic(target, json.dumps(log, indent=2), mkdir=True)


def build_log(
    summary: Mapping[str, Any] | None,
    records: list[Mapping[str, Any]],
    trajectories: TrajectorySource = None,
    *,
    status: str = "success",
) -> dict[str, Any]:
    """The eval log as a dict, keys in Inspect's order (header fields before ``samples``)."""
    summary = dict(summary or {})
    lookup = _trajectory_lookup(trajectories)
    tasks = _manifest_tasks(trajectories)
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    benchmarks = list(summary.get("benchmarks") or _unique(str(r.get("benchmark", "")) for r in records) or ["run"])
    task = str(summary.get("benchmark_name") or "+".join(benchmarks))
    agent = str(summary.get("agent") or _first(r.get("agent") for r in records) or "agent")
    model = agent if "/" in agent else f"agentbench/{agent}"
    created = _utc(summary.get("created_at")) or now
    completed = _utc(summary.get("finished_at")) or now
    run_name = str(summary.get("run_name") or f"{task}_{agent}_{created}")
    ids = _sample_ids(records)
    samples = [_sample(record, sample_id, epoch, model, lookup(record), tasks)
               for record, (sample_id, epoch) in zip(records, ids, strict=True)]
    attempts = [m.attempt_from_result(r) for r in records]
    overall = m.metrics(attempts)
    usage = _add_usage(s["model_usage"] for s in samples)
    outcomes = overall["num_outcome_tasks"]
    scores = []
    if overall["success_rate"] is not None:
        scores.append(_eval_score("success", "accuracy", overall["success_rate"], outcomes, len(records)))
    if overall["avg_score"] is not None:
        scores.append(_eval_score("score", "mean", overall["avg_score"], outcomes, len(records)))
    return {
        "version": LOG_VERSION,
        "status": status,
        "eval": {
            "eval_id": _digest("eval", run_name, created),
            "run_id": _digest("run", run_name, created),
            "created": created,
            "task": task,
            "task_id": _digest("task", run_name, created),
            "task_version": 0,
            "task_attribs": {},
            "task_args": {},
            "task_args_passed": {},
            "tags": ["agentbench", *benchmarks],
            "dataset": {"name": task, "samples": len(samples), "sample_ids": _unique(s["id"] for s in samples)},
            "model": model,
            "model_generate_config": {},
            "model_args": {},
            "config": {"epochs": max((e for _, e in ids), default=1)},
            "packages": _packages(),
            "metadata": {"agentbench": {
                "run_name": run_name,
                "benchmarks": benchmarks,
                "agent": agent,
                "max_steps": summary.get("max_steps"),
                "metrics": overall,
                "by_domain": summary.get("by_domain") or m.by_domain(attempts),
                "statistics": summary.get("statistics"),
            }},
        },
        "plan": {"name": "plan", "steps": [{"solver": model, "params": {"max_steps": summary.get("max_steps")}}],
                 "config": {}},
        "results": {"total_samples": len(samples),
                    "completed_samples": sum(1 for s in samples if "error" not in s),
                    "scores": scores},
        "stats": {"started_at": created, "completed_at": completed, "model_usage": usage},
        "invalidated": False,
        "samples": samples,
    }


# -- samples ----------------------------------------------------------------------------------


def _sample(record: Mapping[str, Any], sample_id: str, epoch: int, model: str,
            trajectory: Mapping[str, Any] | None, tasks: Mapping[tuple[str, str], Mapping[str, Any]]) -> dict[str, Any]:
    task = dict((trajectory or {}).get("task")
                or tasks.get((str(record.get("benchmark")), str(record.get("task_id")))) or {})
    instruction = str(task.get("instruction") or record.get("instruction") or "")
    spec = task.get("evaluation_spec")
    steps = list((trajectory or {}).get("steps") or [])
    messages: list[dict[str, Any]] = [{"role": "user", "content": instruction, "source": "input"}]
    for step in steps:
        messages.extend(_step_messages(step, model))
    final = _final_text(record, steps)
    usage = _sample_usage(steps, model)
    sample: dict[str, Any] = {
        "id": sample_id,
        "epoch": epoch,
        "input": instruction,
        "target": json.dumps(spec, sort_keys=True) if spec is not None else "",
        "messages": messages,
        "output": {"model": model, "completion": final,
                   "choices": [{"message": {"role": "assistant", "content": final, "source": "generate",
                                            "model": model},
                                "stop_reason": "stop"}] if final else []},
        "scores": _scores(record),
        "metadata": _metadata(record),
        "store": {},
        "model_usage": usage,
        "total_time": float(record.get("total_time_seconds") or 0.0),
        "working_time": float(record.get("total_time_seconds") or 0.0),
    }
    if sample["scores"] is None:
        del sample["scores"]
    error = _sample_error(record)
    if error is not None:
        sample["error"] = error
    return sample


def _step_messages(step: Mapping[str, Any], model: str) -> list[dict[str, Any]]:
    """An executed action is an assistant tool call plus its tool result; a terminal one is text."""
    action = dict(step.get("action") or {})
    kind = str(action.pop("type", "action"))
    label = str(step.get("label") or kind)
    index = step.get("index", 0)
    reasoning = step.get("reasoning") or action.get("reason")
    content: str | list[dict[str, Any]] = label
    if reasoning:
        content = [{"type": "reasoning", "reasoning": str(reasoning)}, {"type": "text", "text": label}]
    meta = {k: step.get(k) for k in ("index", "seconds", "cost_usd", "screenshot_path") if step.get(k) is not None}
    message: dict[str, Any] = {"role": "assistant", "content": content, "source": "generate", "model": model,
                               "metadata": meta}
    if kind in TERMINAL:
        return [message]
    call_id = f"step_{index}"
    message["tool_calls"] = [{"id": call_id, "function": kind, "arguments": action, "type": "function"}]
    result = f"executed ({step['screenshot_path']})" if step.get("screenshot_path") else "executed"
    return [message, {"role": "tool", "content": result, "tool_call_id": call_id, "function": kind}]


def _final_text(record: Mapping[str, Any], steps: list[Mapping[str, Any]]) -> str:
    """What the agent ended with: its answer, else the last action's label."""
    final = record.get("final_action") or {}
    if final.get("answer"):
        return str(final["answer"])
    if steps:
        return str(steps[-1].get("label") or "")
    return str(final.get("type") or "")


def _scores(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """Scored only when the attempt is an outcome, so Inspect's metrics match the plugin's."""
    if not record.get("outcome"):
        return None
    status = str(record.get("status") or "")
    explanation = _explanation(record)
    common = {"answer": status, "explanation": explanation}
    return {
        "success": {"value": "C" if record.get("success") else "I", **common,
                    "metadata": {k: record.get(k) for k in ("passed", "error_type") if record.get(k) is not None}},
        "score": {"value": float(record.get("score") or 0.0), **common,
                  "metadata": {"criteria": list(record.get("criteria") or [])}},
    }


def _explanation(record: Mapping[str, Any]) -> str:
    """The reason, then the checker's criteria as a markdown list (the viewer renders markdown)."""
    lines = [str(record.get("reason") or record.get("error") or "")]
    marks = {True: "\u2713", False: "\u2717", None: "?"}
    for c in record.get("criteria") or []:
        passed = c.get("passed")
        line = f"- {marks.get(passed, '?')} {c.get('name', '')}"
        if c.get("detail"):
            line += f": {c['detail']}"
        if passed is None:
            line += " (not evaluated)"
        lines.append(line)
    return "\n".join(line for line in lines if line)


def _metadata(record: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("nodeid", "benchmark", "domain", "task_id", "status", "success", "passed", "outcome", "num_steps",
            "step_limit", "cost_usd", "duration", "error", "error_type", "reason", "trajectory", "screenshots",
            "worker", "extra")
    return {k: record.get(k) for k in keys if k in record}


def _sample_error(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """Errors that are not outcomes (environment, checker, pytest fixture) become Inspect sample errors."""
    if record.get("outcome") or not (record.get("error") or record.get("status") == "error"):
        return None
    kind = record.get("error_type") or "pytest"
    message = str(record.get("error") or record.get("reason") or f"{kind} error")
    text = f"{kind} error: {message}"
    return {"message": message, "traceback": text, "traceback_ansi": text}


def _sample_ids(records: list[Mapping[str, Any]]) -> list[tuple[str, int]]:
    """Task ids when they are unique across benchmarks, else node ids; a repeat is another epoch."""
    task_ids = [str(r.get("task_id") or r.get("nodeid") or i) for i, r in enumerate(records)]
    keys = {(str(r.get("benchmark")), t) for r, t in zip(records, task_ids, strict=True)}
    if len({t for _, t in keys}) < len(keys):
        task_ids = [str(r.get("nodeid") or f"{r.get('benchmark')}::{t}")
                    for r, t in zip(records, task_ids, strict=True)]
    seen: dict[str, int] = {}
    out = []
    for record, sample_id in zip(records, task_ids, strict=True):
        seen[sample_id] = seen.get(sample_id, 0) + 1
        trial = record.get("trial")  # --bench-trials: trial n is epoch n, whatever order the records came in
        out.append((sample_id, trial if isinstance(trial, int) and trial >= 1 else seen[sample_id]))
    return out


# -- usage ------------------------------------------------------------------------------------


def _sample_usage(steps: list[Mapping[str, Any]], model: str) -> dict[str, dict[str, Any]]:
    """Tokens and cost per model, from the usage the agent reported per step."""
    out: dict[str, dict[str, Any]] = {}
    for step in steps:
        usage = step.get("usage")
        if not usage:
            continue
        name = str(usage.get("model") or model)
        entry = out.setdefault(name, {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "total_cost": 0.0})
        entry["input_tokens"] += int(usage.get("input_tokens") or 0)
        entry["output_tokens"] += int(usage.get("output_tokens") or 0)
        entry["total_tokens"] = entry["input_tokens"] + entry["output_tokens"]
        entry["total_cost"] = round(entry["total_cost"] + float(usage.get("cost_usd") or 0.0), 9)
    return out


def _add_usage(usages: Iterable[Mapping[str, Mapping[str, Any]]]) -> dict[str, dict[str, Any]]:
    total: dict[str, dict[str, Any]] = {}
    for usage in usages:
        for name, entry in usage.items():
            acc = total.setdefault(name, {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "total_cost": 0.0})
            for key in ("input_tokens", "output_tokens", "total_tokens"):
                acc[key] += entry[key]
            acc["total_cost"] = round(acc["total_cost"] + entry["total_cost"], 9)
    return total


# -- inputs -----------------------------------------------------------------------------------


def _trajectory_lookup(source: TrajectorySource) -> Callable[[Mapping[str, Any]], Mapping[str, Any] | None]:
    if source is None:
        return lambda record: None
    if callable(source):
        return source
    folder = Path(source)

    def read(record: Mapping[str, Any]) -> Mapping[str, Any] | None:
        relative = record.get("trajectory")
        if not relative:
            return None
        try:
            data = load_file(folder / str(relative))
        except (OSError, ValueError):
            return None  # a missing or broken trajectory costs the sample its messages, not the log
        return data if isinstance(data, dict) else None

    return read


def _manifest_tasks(source: TrajectorySource) -> dict[tuple[str, str], Mapping[str, Any]]:
    """Tasks from the run folder's manifest.json: the instruction of an episode that never ran."""
    if source is None or callable(source):
        return {}
    try:
        manifest = load_file(Path(source) / "manifest.json")
    except (OSError, ValueError):
        return {}
    suites = manifest.get("suites") if isinstance(manifest, dict) else None
    out: dict[tuple[str, str], Mapping[str, Any]] = {}
    for suite in suites or []:
        for task in suite.get("tasks") or []:
            out[(str(task.get("benchmark", suite.get("name"))), str(task.get("task_id")))] = task
    return out


# -- small helpers ----------------------------------------------------------------------------


def _eval_score(name: str, metric: str, value: float, scored: int, total: int) -> dict[str, Any]:
    return {"name": name, "scorer": name, "scored_samples": scored, "unscored_samples": total - scored,
            "params": {}, "metrics": {metric: {"name": metric, "value": value, "params": {}}}}


def _utc(value: Any) -> str | None:
    """An ISO time in UTC with its offset (Inspect's ``created`` form), or None."""
    if not value:
        return None
    try:
        stamp = _dt.datetime.fromisoformat(str(value))
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=_dt.timezone.utc)
    return stamp.astimezone(_dt.timezone.utc).isoformat(timespec="seconds")


def _digest(kind: str, run_name: str, created: str) -> str:
    """A stable id (alphanumeric, as Inspect's are): exporting the same run twice gives the same file."""
    return hashlib.sha256(f"{kind}\0{run_name}\0{created}".encode()).hexdigest()[:22]


def _packages() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return {"pytest-agentbench": version("pytest-agentbench")}
    except PackageNotFoundError:
        return {}


def _unique(values: Iterable[str]) -> list[str]:
    out: list[str] = []
    for value in values:
        if value and value not in out:
            out.append(value)
    return out


def _first(values: Iterable[Any]) -> Any:
    return next((v for v in values if v), None)
