"""``--baseline``: read an earlier run's results and list the tasks that did not pass there."""

from __future__ import annotations

from pathlib import Path

from .record.runfolder import read_results


def load_baseline(path: Path) -> dict[str, str]:
    """``{"<bench>::<task_id>": status}`` for every task that did not pass in the baseline run.

    ``path`` is a results.jsonl file or a run folder holding one. A task passed when its checker
    said so (``success`` true), whatever pytest outcome it had then.
    """
    file = path / "results.jsonl" if path.is_dir() else path
    if not file.exists():
        raise ValueError(f"{file} does not exist; pass a results.jsonl file or a run folder")
    known: dict[str, str] = {}
    for record in read_results(file):
        key = f"{record['benchmark']}::{record['task_id']}"
        if record.get("success") is True:
            known.pop(key, None)
        else:
            known[key] = str(record.get("status") or ("error" if record.get("error_type") else "failed"))
    return known
