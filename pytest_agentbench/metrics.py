"""Run metrics, with the reference tool's keys and its outcomes-only rule.

Outcomes are the attempts the checker scored: everything except infrastructure and evaluation
errors and episodes the checker could not evaluate. Agent errors are outcomes (failures).
Success rate and average score are over outcomes; average steps and time over all attempts. With
no outcomes the success rate and average score are ``None`` (shown as "n/a"), not 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.text import render_table


@dataclass(frozen=True)
class Attempt:
    """The few facts metrics need from one attempt, whatever it came from."""

    success: bool
    score: float
    num_steps: int
    seconds: float
    error_type: str | None
    is_outcome: bool
    domain: str = "default"
    cost_usd: float = 0.0


def attempt_from_record(record: Any) -> Attempt:
    """From an ``EpisodeRecord`` or anything with the reference ``BenchmarkResult`` attributes."""
    error_type = getattr(record, "error_type", None)
    is_outcome = getattr(record, "is_outcome", None)
    if is_outcome is None:
        is_outcome = error_type not in ("infrastructure", "evaluation")
    return Attempt(
        success=bool(getattr(record, "success", False)),
        score=float(getattr(record, "score", 0.0) or 0.0),
        num_steps=int(getattr(record, "num_steps", 0) or 0),
        seconds=float(getattr(record, "total_time_seconds", 0.0) or 0.0),
        error_type=error_type,
        is_outcome=bool(is_outcome),
        domain=str(getattr(record, "domain", "default")),
        cost_usd=float(getattr(record, "cost_usd", 0.0) or 0.0),
    )


def attempt_from_result(result: Mapping[str, Any]) -> Attempt:
    """From one ``results.jsonl`` record."""
    return Attempt(
        success=bool(result.get("success")),
        score=float(result.get("score") or 0.0),
        num_steps=int(result.get("num_steps") or 0),
        seconds=float(result.get("total_time_seconds") or 0.0),
        error_type=result.get("error_type"),
        is_outcome=bool(result.get("outcome")),
        domain=str(result.get("domain", "default")),
        cost_usd=float(result.get("cost_usd") or 0.0),
    )


def metrics(attempts: Iterable[Attempt]) -> dict[str, Any]:
    """The reference tool's 15 keys (plus ``num_not_evaluated`` and ``total_cost_usd``)."""
    items = list(attempts)
    outcomes = [a for a in items if a.is_outcome]
    successes = sum(1 for a in outcomes if a.success)
    n = len(items)
    rate = successes / len(outcomes) if outcomes else None
    return {
        "num_tasks": n,
        "num_attempts": n,
        "num_outcome_tasks": len(outcomes),
        "error_count": sum(1 for a in items if a.error_type is not None),
        "success_rate": rate,
        "avg_score": sum(a.score for a in outcomes) / len(outcomes) if outcomes else None,
        "avg_steps": sum(a.num_steps for a in items) / n if n else 0.0,
        "avg_time_seconds": sum(a.seconds for a in items) / n if n else 0.0,
        "success_count": successes,
        "fail_count": len(outcomes) - successes,
        "num_infrastructure_failures": sum(1 for a in items if a.error_type == "infrastructure"),
        "num_evaluation_failures": sum(1 for a in items if a.error_type == "evaluation"),
        "num_agent_failures": sum(1 for a in items if a.error_type == "agent"),
        "num_tasks_excluding_infra": len(outcomes),
        "success_rate_excluding_infra": rate,
        "num_not_evaluated": sum(1 for a in items if not a.is_outcome and a.error_type is None),
        "total_cost_usd": sum(a.cost_usd for a in items),
    }


def by_domain(attempts: Iterable[Attempt]) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[Attempt]] = {}
    for attempt in attempts:
        groups.setdefault(attempt.domain, []).append(attempt)
    return {domain: metrics(group) for domain, group in sorted(groups.items())}


def format_rate(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate * 100:.1f}%"


def format_score(score: float | None) -> str:
    return "n/a" if score is None else f"{score:.3f}"


def results_block(m: Mapping[str, Any]) -> list[str]:
    """The reference tool's "Evaluation Results" block, line for line."""
    return [
        "=" * 50,
        "Evaluation Results",
        "=" * 50,
        f"Attempts:     {m['num_attempts']}",
        f"Outcomes:     {m['num_outcome_tasks']}",
        f"Errors:       {m['error_count']}{error_breakdown(m)}",
        f"Success rate: {format_rate(m['success_rate'])} (outcomes only)",
        f"Avg score:    {format_score(m['avg_score'])} (outcomes only)",
        f"Avg steps:    {m['avg_steps']:.1f} (all attempts)",
    ]


def error_breakdown(m: Mapping[str, Any]) -> str:
    """The error count's parts, since pytest counts them apart: agent errors are failures to
    pytest (the agent played a scored attempt), infrastructure and evaluation errors are errors."""
    parts = [(m.get("num_agent_failures", 0), "agent (failed, to pytest)"),
             (m.get("num_infrastructure_failures", 0), "infrastructure"),
             (m.get("num_evaluation_failures", 0), "evaluation")]
    named = [f"{count} {label}" for count, label in parts if count]
    return f" ({', '.join(named)})" if named else ""


def domain_table(domains: Mapping[str, Mapping[str, Any]]) -> list[str]:
    header = ("domain", "attempts", "outcomes", "passed", "success", "avg score", "errors")
    rows = [(domain, str(m["num_attempts"]), str(m["num_outcome_tasks"]), str(m["success_count"]),
             format_rate(m["success_rate"]), format_score(m["avg_score"]), str(m["error_count"]))
            for domain, m in domains.items()]
    return render_table(header, rows, right=range(1, len(header)))


def format_usd(value: float | None) -> str:
    """Dollars for terminal lines: cents, or four decimals below a cent."""
    if value is None:
        return "unknown"
    return f"${value:.2f}" if value >= 0.01 or value == 0 else f"${value:.4f}"
