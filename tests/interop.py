"""Where the unmodified upstream snapshots are, for the tests that run against the real thing.

Each snapshot is named by an environment variable. On a user's fresh machine it is unset and the
tests that need it skip with the reason; ``.ci/run`` sets it and ``AGENTBENCH_REQUIRE_INTEROP=1``,
under which a missing snapshot fails those tests instead of skipping them.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, NoReturn

import pytest

#: The WindowsAgentArena snapshot (its ``client/desktop_env`` and ``vm/setup/server``).
WAA_UPSTREAM = "AGENTBENCH_WAA_UPSTREAM"


def required() -> bool:
    return os.environ.get("AGENTBENCH_REQUIRE_INTEROP", "") == "1"


def snapshot(variable: str, what: str) -> Path:
    """The folder ``$variable`` names; skip (or, under CI, fail) when it is unset or missing."""
    value = os.environ.get(variable, "")
    problem = None
    if not value:
        problem = f"interop: set {variable} to {what} (.ci/run does) to run this test against the real code"
    elif not Path(value).is_dir():
        problem = f"interop: {variable}={value} is not a folder; it should be {what}"
    if problem is None:
        return Path(value)
    unavailable(problem)


def unavailable(reason: str) -> NoReturn:
    """Skip for ``reason`` (something the real-code test needs is missing); under CI, fail."""
    if required():
        pytest.fail(reason + " [AGENTBENCH_REQUIRE_INTEROP=1: a skip here is a failure]", pytrace=False)
    pytest.skip(reason)


def waa_upstream() -> Path:
    return snapshot(WAA_UPSTREAM, "a WindowsAgentArena checkout (e.g. ../shared/interop/waa/upstream)")


def bench_records(argv: list[str], cwd: Path, task_ids: list[str], timeout: float,
                  env: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """Run pytest ``argv`` (whose ``--bench-results-dir`` is ``cwd/results``) in ``cwd``; the result
    records by task id, one for each of ``task_ids``."""
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-2000:]
    records: dict[str, dict[str, Any]] = {}
    for results in (cwd / "results").rglob("results.jsonl"):
        for line in results.read_text().splitlines():
            if line.strip():
                record = json.loads(line)
                records[record["task_id"]] = record
    assert sorted(records) == sorted(task_ids), done.stdout[-3000:]
    return records
