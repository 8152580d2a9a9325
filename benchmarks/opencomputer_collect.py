#!/usr/bin/env python
"""How long ``--bench=opencomputer`` takes to collect a whole OpenComputer checkout.

Every task file of the checkout is read and checked when the run starts (a broken one becomes
one erroring item), so collection time grows with the checkout. This script measures, and
asserts nothing:

1. ``load``: reading and checking every ``task.json`` in process (``tasks.load_tasks``), median
   of ``--repeat`` runs;
2. ``collect``: ``python -m pytest --bench=opencomputer --opencomputer-tasks CHECKOUT --collect-only
   -q`` as a subprocess, the wall clock and pytest's own "collected in" figure, median of
   ``--repeat`` runs;
3. ``bare``: the same command without ``--bench`` (pytest and the plugins starting, nothing to
   collect), to separate start-up from collection.

    python benchmarks/opencomputer_collect.py [CHECKOUT] [--repeat 5] [--json PATH]

CHECKOUT defaults to ``$AGENTBENCH_OPENCOMPUTER_UPSTREAM``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _pytest(args: list[str], cwd: str) -> tuple[float, float | None, int]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd,
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    match = re.search(r"(\d+) tests? collected in ([\d.]+)s", done.stdout)
    items = int(match[1]) if match else 0
    return wall, float(match[2]) if match else None, items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", nargs="?", default=os.environ.get("AGENTBENCH_OPENCOMPUTER_UPSTREAM"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    if not args.checkout:
        parser.error("give the OpenComputer checkout (or set AGENTBENCH_OPENCOMPUTER_UPSTREAM)")
    from pytest_agentbench.benches.opencomputer.tasks import load_tasks, resolve_tasks_dir

    tasks_dir = resolve_tasks_dir(args.checkout)
    loads = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        tasks, left_out = load_tasks(tasks_dir)
        loads.append(time.perf_counter() - started)
    broken = sum(1 for t in tasks if t.domain == "invalid_task" or "agentbench_broken" in t.raw_config)
    with tempfile.TemporaryDirectory() as cwd:
        runs = [_pytest(["--bench=opencomputer", "--opencomputer-tasks", args.checkout, "--collect-only", "-q"], cwd)
                for _ in range(args.repeat)]
        bare = [_pytest(["--collect-only", "-q"], cwd)[0] for _ in range(args.repeat)]
    result = {
        "checkout": args.checkout, "tasks": len(tasks), "broken": broken, "left_out": len(left_out),
        "items_collected": runs[0][2],
        "load_seconds_median": round(statistics.median(loads), 3),
        "collect_wall_seconds_median": round(statistics.median(r[0] for r in runs), 3),
        "collected_in_seconds_median": round(statistics.median(r[1] for r in runs if r[1] is not None), 3),
        "bare_pytest_wall_seconds_median": round(statistics.median(bare), 3),
        "repeat": args.repeat, "python": sys.version.split()[0],
    }
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
