"""The MockMed comparison table: condition x arm, k/n runs that the checker passed, and the
median seconds per run of each arm — the layout of the published comparison."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentbench.text import render_table

ARM_LABELS = {"compiled": "Compiled replay", "by-position": "Script, by position", "by-name": "Script, by name",
              "agent": "The run's agent"}
CONDITION_ORDER = ("clean", "theme", "rename")


def arm_of(task_id: str) -> str:
    """``rename-by-name-run2`` -> ``by-name``."""
    return task_id.split("-", 1)[1].rsplit("-run", 1)[0]


def render(records: Sequence[Mapping[str, Any]]) -> list[str]:
    arms = [a for a in ARM_LABELS if any(arm_of(r["task_id"]) == a for r in records)]
    conditions = [c for c in CONDITION_ORDER if any(r["domain"] == c for r in records)]
    header = ["Condition", *(ARM_LABELS[a] for a in arms)]
    rows = []
    for condition in conditions:
        row = [condition]
        for arm in arms:
            runs = [r for r in records if r["domain"] == condition and arm_of(r["task_id"]) == arm]
            row.append(f"{sum(1 for r in runs if r.get('success'))}/{len(runs)}")
        rows.append(row)
    medians = ["median s/run"]
    for arm in arms:
        seconds = [float(r.get("total_time_seconds") or 0.0) for r in records if arm_of(r["task_id"]) == arm]
        medians.append(f"{statistics.median(seconds):.3f}" if seconds else "n/a")
    rows.append(medians)
    wrong = [r for r in records if str(r.get("reason") or "").startswith("wrong write")]
    lines = ["MockMed: runs the checker passed, by condition and arm (stored record read back from SQLite)"]
    lines += render_table(header, rows)
    lines.append(f"wrong writes: {len(wrong)}" + (": " + ", ".join(r["nodeid"] or r["task_id"] for r in wrong)
                                                  if wrong else ""))
    return lines
