"""The audit loop: one reference, one batch delivery per task, one class per edited run.

Per task: run the reference; apply each operator; deliver the unedited control and every edited
run in **one** ``adapter.deliver`` call; check the control reproduces the reference end state and
passes; then classify each edited run, first rule that holds:

1. the run has an error, or its verdict is neither PASS nor FAIL -> ``not-delivered`` (error)
2. the control is not ok -> ``invalid``
3. verdict FAIL -> ``killed``
4. PASS and the end state equals the control's -> ``equivalent``
5. PASS, the end state differs, and more of its calls crashed than the control's -> ``unconfirmed``
6. PASS and the end state differs -> ``false-accept``

An operator that finds nothing to edit gives ``refused``. Mutants are compared with the control
delivery's end state, not the reference's.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pytest_agentbench.audit.effects import Ignore, compare
from pytest_agentbench.audit.model import FAIL, PASS, RUN_CLASS_TEXT, Run, RunResult
from pytest_agentbench.audit.operators import OPERATOR_CLASS, OPERATORS, apply_operator, write_indexes

SCHEMA = "pytest-agentbench/verifier-audit/v1"


@dataclass
class TaskResult:
    """``status``: audited, control-failed, no-reference or no-write."""

    task_id: str
    status: str
    reason: str | None = None
    seconds: float = 0.0
    control_verdict: str | None = None
    runs: list[RunResult] = field(default_factory=list)

    @property
    def audited(self) -> bool:
        return self.status in ("audited", "control-failed")

    def to_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "status": self.status, "reason": self.reason,
                "seconds": round(self.seconds, 3), "control_verdict": self.control_verdict,
                "runs": [r.to_dict() for r in self.runs]}


def _error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _policy(adapter: Any) -> Any:
    from pytest_agentbench.audit.model import DEFAULT_POLICY

    return getattr(adapter, "policy", None) or DEFAULT_POLICY


def audit_task(
    adapter: Any,
    task_id: str,
    operators: Sequence[str] = OPERATORS,
    ignore_fields: Iterable[str] = (),
) -> TaskResult:
    """Audit one task with the given operators. Never raises for adapter faults."""
    started = time.perf_counter()
    policy = _policy(adapter)
    ignore = Ignore([*getattr(adapter, "ignore_fields", ()), *ignore_fields])

    def done(result: TaskResult) -> TaskResult:
        result.seconds = time.perf_counter() - started
        return result

    try:
        reference = adapter.reference(task_id)
    except Exception as exc:  # noqa: BLE001 - a broken reference is a task not audited
        return done(TaskResult(task_id, "no-reference", f"the reference run raised {_error(exc)}"))
    if getattr(reference, "error", None):
        return done(TaskResult(task_id, "no-reference", f"the reference run failed: {reference.error}"))
    calls = list(getattr(reference, "calls", None) or [])
    if not calls:
        return done(TaskResult(task_id, "no-reference", "the reference run made no calls"))
    if not write_indexes(calls, policy):
        return done(TaskResult(task_id, "no-write", "the reference run writes nothing, so there is nothing to edit"))

    def scan(runs: Sequence[Run]) -> Sequence[Any]:
        delivered: Sequence[Any] = adapter.deliver(task_id, list(runs))  # the adapter is duck-typed (Any)
        return delivered

    results: dict[str, RunResult] = {}
    runs = [Run("control", calls)]
    for operator in operators:
        edit = apply_operator(calls, operator, policy, scan=scan, ignore=ignore)
        if edit.calls is None:
            results[operator] = RunResult(task_id, operator, "refused", reason=edit.refusal, detail=edit.detail)
        else:
            results[operator] = RunResult(task_id, operator, "pending", detail=edit.detail)
            runs.append(Run(operator, edit.calls))

    if len(runs) == 1:  # every operator refused: nothing to judge, so no delivery at all
        return done(TaskResult(task_id, "audited", None, runs=[results[o] for o in operators]))
    try:
        delivered = {getattr(d, "run_id", None): d for d in adapter.deliver(task_id, runs)}
        delivery_error = None
    except Exception as exc:  # noqa: BLE001 - every run of the batch gets the error
        delivered, delivery_error = {}, f"deliver raised {_error(exc)}"

    control = delivered.get("control")
    control_reason = None
    if control is None:
        control_reason = f"control not delivered: {delivery_error or 'no delivery for the control run'}"
    elif getattr(control, "error", None):
        control_reason = f"control not delivered: {control.error}"
    elif getattr(control, "verdict", None) != PASS:
        control_reason = "the verifier gave the unedited reference run FAIL"
    elif not compare(reference.effect, control.effect, ignore).same:
        control_reason = "replaying the reference run did not reproduce its end state"
    control_ok = control_reason is None
    control_crashes = sum(1 for s in (getattr(control, "statuses", None) or []) if s == -1) if control else 0

    for operator in operators:
        result = results[operator]
        if result.run_class == "refused":
            continue
        mutant = delivered.get(operator)
        if mutant is None or getattr(mutant, "error", None) or getattr(mutant, "verdict", None) not in (PASS, FAIL):
            why = (getattr(mutant, "error", None) if mutant is not None else None) or delivery_error or (
                "no delivery for this run" if mutant is None else f"verdict {getattr(mutant, 'verdict', None)!r}")
            result.run_class, result.reason = "not-delivered", str(why)
            continue
        result.verdict = mutant.verdict
        detail = getattr(mutant, "detail", None) or {}
        for key in ("num_tests", "num_failed"):
            if key in detail:
                result.detail[key] = detail[key]
        if control is None or control_reason is not None:
            result.run_class, result.reason = "invalid", control_reason
            continue
        diff = compare(control.effect, mutant.effect, ignore)
        result.shape, result.tables, result.summary = diff.shape, diff.tables, diff.summarize() if not diff.same else ""
        crashes = sum(1 for s in (getattr(mutant, "statuses", None) or []) if s == -1)
        if mutant.verdict == FAIL:
            result.run_class = "killed"
        elif diff.same:
            result.run_class = "equivalent"
        elif crashes > control_crashes:
            result.run_class = "unconfirmed"
            result.reason = f"{crashes - control_crashes} more call(s) crashed than in the unedited run"
        else:
            result.run_class = "false-accept"
            result.reason = result.summary

    status = "audited" if control_ok else "control-failed"
    return done(TaskResult(task_id, status, control_reason, control_verdict=getattr(control, "verdict", None),
                           runs=[results[o] for o in operators]))


@dataclass
class AuditResult:
    benchmark: dict[str, Any]
    operators: list[str]
    tasks: list[TaskResult]
    ignore_fields: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def false_accepts(self) -> list[RunResult]:
        return [r for t in self.tasks for r in t.runs if r.run_class == "false-accept"]

    def by_operator(self) -> dict[str, Counter[str]]:
        table: dict[str, Counter[str]] = {op: Counter() for op in self.operators}
        for task in self.tasks:
            for run in task.runs:
                table.setdefault(run.operator, Counter())[run.run_class] += 1
        return table

    def to_dict(self) -> dict[str, Any]:
        by_op = {op: {k: counts.get(k, 0) for k in ("equivalent", "false-accept", "invalid", "killed", "not-delivered",
                                                    "refused", "unconfirmed")}
                 for op, counts in self.by_operator().items()}
        return {
            "schema": SCHEMA,
            "benchmark": self.benchmark,
            "ignore_fields": self.ignore_fields,
            "operators": [{"name": op, "class": OPERATOR_CLASS.get(op, "custom")} for op in self.operators],
            "run_classes": dict(RUN_CLASS_TEXT),
            "seconds": round(self.seconds, 3),
            "summary": {
                "by_operator": by_op,
                "false_accepts": len(self.false_accepts),
                "tasks": len(self.tasks),
                "tasks_audited": sum(1 for t in self.tasks if t.audited),
                "tasks_with_false_accept": sum(1 for t in self.tasks
                                               if any(r.run_class == "false-accept" for r in t.runs)),
            },
            "tasks": [t.to_dict() for t in self.tasks],
        }


def audit(
    adapter: Any,
    task_ids: Sequence[str],
    operators: Sequence[str] = OPERATORS,
    *,
    jobs: int = 1,
    progress: Callable[[TaskResult], None] | None = None,
    ignore_fields: Iterable[str] = (),
) -> AuditResult:
    """Audit ``task_ids``; results come back in input order whatever ``jobs`` is."""
    unknown = [op for op in operators if op not in OPERATOR_CLASS]
    if unknown:
        raise ValueError(f"unknown operator {', '.join(map(repr, unknown))}; known: {', '.join(OPERATORS)}")
    extra = list(ignore_fields)
    started = time.perf_counter()

    def one(task_id: str) -> TaskResult:
        result = audit_task(adapter, task_id, operators, extra)
        if progress:
            progress(result)
        return result

    if jobs > 1:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            tasks = list(pool.map(one, task_ids))
    else:
        tasks = [one(t) for t in task_ids]
    describe = getattr(adapter, "describe", None)
    return AuditResult(
        benchmark=describe() if callable(describe) else {"name": getattr(adapter, "name", "?")},
        operators=list(operators),
        tasks=tasks,
        ignore_fields=sorted({*getattr(adapter, "ignore_fields", ()), *extra}),
        seconds=time.perf_counter() - started,
    )
