"""The audit report as text: the false-accept table, the per-operator table and the legend,
laid out as the reference tool prints them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentbench.audit.operators import OPERATOR_CLASS
from pytest_agentbench.text import render_table

COLUMNS = (("killed", "killed"), ("false-accept", "false accept"), ("equivalent", "equivalent"),
           ("unconfirmed", "unconfirmed"), ("refused", "refused"), ("not-delivered", "error"), ("invalid", "invalid"))
LEGEND = [
    "false accept: the verifier passed the edited run, and the end state (read",
    "  back before grading) differs from the reference run's.",
    "equivalent: the edit left the end state unchanged, so the pass is correct.",
]


def by_operator(runs: Sequence[Mapping[str, Any]], operators: Sequence[str]) -> dict[str, dict[str, int]]:
    counts = {op: {key: 0 for key, _ in COLUMNS} for op in operators}
    for run in runs:
        counts.setdefault(run["operator"], {key: 0 for key, _ in COLUMNS})[run["run_class"]] += 1
    return counts


def render(
    benchmark: str,
    tasks: Sequence[Mapping[str, Any]],
    runs: Sequence[Mapping[str, Any]],
    operators: Sequence[str],
    seconds: float,
) -> list[str]:
    """``tasks``: ``{task_id, status, reason}`` in audit order; ``runs``: ``{task_id, operator,
    run_class, summary}`` in task then operator order."""
    audited = sum(1 for t in tasks if t["status"] in ("audited", "control-failed"))
    lines = [f"Verifier audit: {benchmark}, {len(tasks)} task(s), {audited} audited, {seconds:.0f}s", ""]
    false = [r for r in runs if r["run_class"] == "false-accept"]
    if false:
        lines.append(f"The verifier passed {len(false)} edited run(s) whose end state is wrong:")
        lines += render_table(("task", "operator", "end state compared with the reference run"),
                              [(r["task_id"], r["operator"], r.get("summary") or "") for r in false], indent="  ")
    else:
        lines.append("No confirmed false accepts.")
    skipped = [t for t in tasks if t["status"] not in ("audited", "control-failed")]
    if skipped:
        lines += ["", f"{len(skipped)} task(s) not audited:"]
        lines += [f"  {t['task_id']}: {t['status']}: {t.get('reason') or ''}".rstrip() for t in skipped]
    lines += ["", "Per operator (each edited run counted once; operators are not pooled):"]
    counts = by_operator(runs, operators)
    rows = []
    for op in operators:
        c = counts[op]
        total = sum(v for k, v in c.items() if k != "refused")
        rows.append((op, OPERATOR_CLASS.get(op, "custom"), str(total), *(str(c[key]) for key, _ in COLUMNS)))
    header = ("operator", "class", "runs", *(label for _, label in COLUMNS))
    lines += render_table(header, rows, right=range(2, len(header)), indent="  ")
    lines += ["", *LEGEND]
    return lines
