"""The run's statistics where people read them: summary.json, the terminal block, JUnit properties.

The numbers come from ``stats.run_statistics`` over the records the controller collected; this
module only places and formats them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentbench import stats
from pytest_agentbench.metrics import format_rate
from pytest_agentbench.text import render_table

METHODS = {"wilson": "Wilson", "wilson-clustered": "Wilson over tasks' effective trials"}


def summary_fields(records: Sequence[Mapping[str, Any]], trials: int) -> dict[str, Any]:
    """The keys summary.json gains: the configured trials per task and the statistics block."""
    return {"trials": trials, "statistics": stats.run_statistics(records)}


def format_interval(ci: Sequence[float] | None) -> str:
    return "n/a" if not ci else f"[{ci[0] * 100:.1f}%, {ci[1] * 100:.1f}%]"


def _curve(values: Mapping[str, float]) -> str:
    return ", ".join(f"k={k} {v * 100:.1f}%" for k, v in values.items())


def terminal_lines(statistics: Mapping[str, Any], *, domains: bool) -> list[str]:
    """The "how sure" block printed under the results block."""
    s = statistics
    method = METHODS.get(str(s.get("ci_method")), "n/a")
    lines = [
        "Statistics (95% confidence, outcomes only)",
        (f"Success rate: {format_rate(s['success_rate'])} {format_interval(s['ci95'])} ({method}; "
         f"{s['passes']} of {s['outcome_trials']} outcome trials, {s['tasks_with_outcomes']} tasks)"),
    ]
    if s["max_trials"] > 1:
        lines.append(f"pass@k:       {_curve(s['pass_at_k'])}")
        lines.append(f"pass^k:       {_curve(s['pass_hat_k'])}")
        flip = s["flip_rate"]
        lines.append(f"Flip rate:    {format_rate(flip)} ({s['flipped_tasks']} task(s) with both verdicts "
                     f"across trials)")
    if s["excluded_trials"]:
        lines.append(f"Excluded:     {s['excluded_trials']} trial(s) not outcomes (infrastructure or evaluation "
                     "errors, not evaluated): out of every denominator")
    if domains and len(s["by_domain"]) > 1:
        lines.append("")
        lines.extend(domain_table(s["by_domain"]))
    return lines


def domain_table(by_domain: Mapping[str, Mapping[str, Any]]) -> list[str]:
    header = ("domain", "tasks", "trials", "passes", "success", "95% CI", "flips", "excluded")
    rows = [(domain, str(d["tasks"]), str(d["outcome_trials"]), str(d["passes"]),
             format_rate(d["success_rate"]), format_interval(d["ci95"]),
             format_rate(d["flip_rate"]) if d["max_trials"] > 1 else "-", str(d["excluded_trials"]))
            for domain, d in by_domain.items()]
    return render_table(header, rows, right=range(1, len(header)))


def junit_properties(statistics: Mapping[str, Any], trials: int) -> list[tuple[str, str]]:
    """Test-suite properties for the JUnit XML (``--junitxml``)."""
    s = statistics
    out = [("agentbench_trials", str(trials)),
           ("agentbench_success_rate", "" if s["success_rate"] is None else f"{s['success_rate']:.6f}")]
    if s["ci95"]:
        out += [("agentbench_ci95_low", f"{s['ci95'][0]:.6f}"), ("agentbench_ci95_high", f"{s['ci95'][1]:.6f}"),
                ("agentbench_ci_method", str(s["ci_method"]))]
    for k, v in s["pass_at_k"].items():
        out.append((f"agentbench_pass_at_{k}", f"{v:.6f}"))
    for k, v in s["pass_hat_k"].items():
        out.append((f"agentbench_pass_hat_{k}", f"{v:.6f}"))
    if s["flip_rate"] is not None:
        out.append(("agentbench_flip_rate", f"{s['flip_rate']:.6f}"))
    out.append(("agentbench_excluded_trials", str(s["excluded_trials"])))
    return out


def viewer_statistics(summary: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Formatted statistics for the viewer's cards: from summary.json, or computed from the
    records of a run that never wrote one. None when there is nothing to show."""
    s = summary.get("statistics")
    if not isinstance(s, dict) or "ci95" not in s:
        usable = [r for r in records if isinstance(r, Mapping) and "task_id" in r and "benchmark" in r]
        if not usable:
            return None
        s = stats.run_statistics(usable)
    k = str(s.get("max_trials") or 0)
    hat = s.get("pass_hat_k") or {}
    top = max(hat, key=int) if hat else None
    return {
        "ci95": format_interval(s.get("ci95")),
        "method": METHODS.get(str(s.get("ci_method")), "n/a"),
        "trials": k,
        "pass_hat": f"{hat[top] * 100:.1f}%" if top else None,
        "pass_at": f"{s['pass_at_k'][top] * 100:.1f}%" if top and top in (s.get("pass_at_k") or {}) else None,
        "k": top,
        "flip_rate": format_rate(s.get("flip_rate")) if s.get("flip_rate") is not None else None,
        "flipped": s.get("flipped_tasks", 0),
    }
