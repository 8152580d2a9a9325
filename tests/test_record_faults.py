"""Fault injection on the run record: a worker killed with SIGKILL under its item, a disk that
fills up mid-run (an injected ENOSPC at the writer, and a real size-limited tmpfs when mount
works), and a torn last line in results.jsonl. Every complete record stays, the dead item counts
as an error, and the run ends with one ERROR: line."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from conftest import only_run_folder, results

KILL_WORKER = """
import os, signal
from pathlib import Path

def pytest_runtest_call(item):
    mark = Path(os.environ["KILL_MARK"])
    if item.name == "mock_clock_001" and os.environ.get("PYTEST_XDIST_WORKER") and not mark.exists():
        mark.write_text("x")
        os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_sigkilled_workers_item_is_recorded_as_an_error(run_sub, pytester, monkeypatch):
    monkeypatch.setenv("KILL_MARK", str(pytester.path / "killed"))
    pytester.makeconftest(KILL_WORKER)
    result = run_sub("--bench=mock", "--tasks", "5", "-n", "2")
    assert (pytester.path / "killed").exists()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    folder = only_run_folder(pytester.path)
    rows = {r["task_id"]: r for r in results(folder)}
    assert len(rows) == 5
    dead = rows["mock_clock_001"]
    assert dead["status"] == "error" and dead["error_type"] == "infrastructure"
    assert "crashed while running" in dead["error"] and dead["worker"].startswith("gw")
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["statuses"] == {"error": 1, "passed": 4}
    assert summary["num_attempts"] == 5 and summary["num_infrastructure_failures"] == 1
    result.stdout.fnmatch_lines(["Errors:       1"])
