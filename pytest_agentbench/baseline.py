"""``--bench-baseline``: read an earlier run's results and list the tasks that did not pass there."""

from __future__ import annotations

from pathlib import Path

from pytest_agentbench.record.runfolder import read_results
from pytest_agentbench.untrusted import file_problem


def load_baseline(path: Path) -> dict[str, str]:
    """``{"<bench>::<task_id>": status}`` for every task that did not pass in the baseline run.

    ``path`` is a results.jsonl file or a run folder holding one. A task passed when its checker
    said so (``success`` true), whatever pytest outcome it had then. With ``--bench-trials`` a task
    passed only when every trial did (the first failing trial's status is given), whatever order
    the trials were recorded in; a record repeated for the same trial replaces the earlier one.
    """
    file = path / "results.jsonl" if path.is_dir() else path
    problem = file_problem(file)
    if problem is not None:
        raise ValueError(f"{file} {problem}; pass a results.jsonl file or a run folder")
    verdicts: dict[str, dict[int, str | None]] = {}
    for record in read_results(file):
        key = f"{record['benchmark']}::{record['task_id']}"
        raw_trial = record.get("trial")
        trial = raw_trial if isinstance(raw_trial, int) else 1
        status = None if record.get("success") is True else str(
            record.get("status") or ("error" if record.get("error_type") else "failed"))
        verdicts.setdefault(key, {})[trial] = status
    known: dict[str, str] = {}
    for key, by_trial in verdicts.items():
        failing = [status for _, status in sorted(by_trial.items()) if status is not None]
        if failing:
            known[key] = failing[0]
    return known
