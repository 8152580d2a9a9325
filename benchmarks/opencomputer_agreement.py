#!/usr/bin/env python
"""How often ``--bench=opencomputer`` agrees with OpenComputer's own harness, check by check.

For every selected task's **start state** (an empty end-state folder), it grades the task twice:

* with ``run_reference_harness.py`` (beside the checkout: OpenComputer's upload, prepare hooks,
  setup scripts and ``verify_task``, through bubblewrap), one process per task;
* with one ``pytest --bench=opencomputer --opencomputer-end-state ... --opencomputer-python system``
  run over all of them (``-n WORKERS``); ``system`` because the reference runs the host's python3;

then compares each check's verdict (an unjudged LLM check fails in both) and the reward. It asserts
nothing; it prints a JSON summary with the tasks that differ, and those that errored in either.

    python benchmarks/opencomputer_agreement.py [CHECKOUT] [--apps gedit,drawio] [--per-app N]
                                                [--skip-apps zotero] [--workers 2] [--json PATH]

CHECKOUT defaults to ``$AGENTBENCH_OPENCOMPUTER_UPSTREAM``. Zotero is skipped by default: its
prepare hook waits 60 s for a Zotero binary. All 870 other tasks take about 12 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def select(checkout: Path, apps: set[str], skip: set[str], per_app: int | None) -> list[str]:
    by_app: dict[str, list[str]] = collections.defaultdict(list)
    for path in sorted((checkout / "task_generator" / "tasks").glob("*/task.json")):
        app = json.loads(path.read_text()).get("app", "")
        if (not apps or app in apps) and app not in skip:
            by_app[app].append(path.parent.name)
    return [t for app in sorted(by_app) for t in by_app[app][:per_app]]


def checkout_and_reference(parser: argparse.ArgumentParser, given: str | None) -> tuple[Path, Path]:
    """The checkout (argument, else ``$AGENTBENCH_OPENCOMPUTER_UPSTREAM``) and the reference runner
    beside it; a usage error naming what is missing."""
    if not given:
        parser.error("give the OpenComputer checkout (or set AGENTBENCH_OPENCOMPUTER_UPSTREAM)")
    checkout = Path(given).resolve()
    reference = checkout.parent / "run_reference_harness.py"
    if not reference.is_file():
        parser.error(f"no run_reference_harness.py beside {checkout}")
    return checkout, reference


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", nargs="?", default=os.environ.get("AGENTBENCH_OPENCOMPUTER_UPSTREAM"))
    parser.add_argument("--apps", default="")
    parser.add_argument("--skip-apps", default="zotero")
    parser.add_argument("--per-app", type=int, default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    checkout, reference = checkout_and_reference(parser, args.checkout)
    tasks = select(checkout, set(filter(None, args.apps.split(","))), set(filter(None, args.skip_apps.split(","))),
                   args.per_app)
    with tempfile.TemporaryDirectory(prefix="agentbench-agreement-") as folder:
        root = Path(folder)
        for task in tasks:
            (root / "end" / task).mkdir(parents=True)
        started = time.perf_counter()
        refs: dict[str, dict[str, Any]] = {}
        for task in tasks:
            out = root / "ref" / f"{task}.json"
            # no LLM judge reachable (with openai installed and no key, OpenComputer's verify_task crashes)
            subprocess.run([sys.executable, str(reference), str(checkout), task, str(out), "--no-sleep"],
                           capture_output=True, text=True, timeout=600, check=False,
                           env={**os.environ, "OPENAI_API_KEY": "no-judge", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
            refs[task] = json.loads(out.read_text()) if out.is_file() else {"setup_error": "no result"}
        reference_seconds = time.perf_counter() - started
        argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--bench=opencomputer",
                "--opencomputer-tasks", str(checkout), "--opencomputer-end-state", str(root / "end"),
                "--opencomputer-python", "system", "--results-dir", str(root / "results")]
        if args.workers > 1:
            argv += ["-n", str(args.workers)]
        for task in tasks:
            argv += ["--bench-task", task]
        started = time.perf_counter()
        subprocess.run(argv, cwd=root, capture_output=True, text=True, check=False)
        plugin_seconds = time.perf_counter() - started
        records = {}
        for results in (root / "results").rglob("results.jsonl"):
            for line in results.read_text().splitlines():
                if line.strip():
                    record = json.loads(line)
                    records[record["task_id"]] = record
    checks = agreeing = equal = 0
    errored: list[dict[str, Any]] = []
    differing: list[dict[str, Any]] = []
    rewards: list[tuple[float, float]] = []
    for task in tasks:
        ref, mine = refs[task], records.get(task)
        ref_error = ref.get("setup_error") or ref.get("verify_crash")
        if mine is None or mine.get("error") or ref_error:
            errored.append({"task": task, "reference": ref_error, "plugin": (mine or {}).get("error", "no record")})
            continue
        theirs = [bool(d and d.get("passed")) for d in ref.get("verification_details") or []]
        ours = [bool(c["passed"]) for c in mine.get("criteria", [])]
        checks += max(len(theirs), len(ours))
        agreeing += sum(a == b for a, b in zip(theirs, ours, strict=False))  # unequal lengths disagree
        rewards.append((ref["reward"], mine["score"]))
        if theirs == ours and abs(ref["reward"] - mine["score"]) < 5e-5:
            equal += 1
        else:
            differing.append({"task": task, "reference": theirs, "plugin": ours,
                              "rewards": [ref["reward"], mine["score"]]})
    result = {
        "tasks": len(tasks), "graded_by_both": len(rewards), "items_equal": equal,
        "checks_agreeing": agreeing, "checks": checks,
        "mean_reward_reference": round(sum(r for r, _ in rewards) / len(rewards), 4) if rewards else None,
        "mean_reward_plugin": round(sum(p for _, p in rewards) / len(rewards), 4) if rewards else None,
        "reference_seconds": round(reference_seconds, 1), "plugin_seconds": round(plugin_seconds, 1),
        "differing": differing, "errored": errored,
    }
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
