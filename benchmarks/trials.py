#!/usr/bin/env python
"""What ``--bench-trials K`` costs: ``pytest --bench=mock --bench-limit N --bench-trials K`` against one trial.

Times, in fresh temporary directories and in subprocesses (``python -m pytest -q -p
no:cacheprovider ...``, the plugins and bytecode cache set up as in ``overhead.py``), the median
wall clock of

* ``--bench-limit N`` (one trial per task; N items);
* ``--bench-limit N --bench-trials K`` (N*K items, statistics with the clustered Wilson interval);
* ``--bench-limit N*K`` (N*K items of one trial each: the same number of items without trials);
* the empty run (one item collected and deselected): the fixed cost of starting.

and prints, all from the same invocation:

* ``trials / one trial``: the whole-run ratio; the target is at most K (K times the items, plus noise);
* the same ratio of the marginal cost (each minus the empty run), which takes the fixed start-up
  cost out of both;
* ``trials / same items``: what trials cost beyond having N*K items (the per-trial collectors,
  seeds, the statistics at the end);
* the time ``stats.run_statistics`` takes in process on a synthetic N x K table.

    python benchmarks/trials.py [--tasks 500] [--trials 5] [--repeat 3] [--json PATH] [--check]

Exit status is 0 unless a run fails (or, with ``--check``, the ratio exceeds K * 1.1).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead import NO_MATCH, prepare, print_table

NOISE = 1.10  # --check allows 10% over K


def timed(args: list[str], env: dict[str, str]) -> float:
    workdir = Path(tempfile.mkdtemp(prefix="agentbench-trials-"))
    try:
        (workdir / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                              cwd=workdir, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        if proc.returncode not in (0, 5):
            raise RuntimeError(f"pytest {' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-2000:]}")
        return wall
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def stats_seconds(tasks: int, trials: int) -> float:
    from pytest_agentbench import stats

    rng = random.Random(1)
    records = [{"benchmark": "mock", "domain": f"d{i % 3}", "task_id": f"t{i}", "trial": k, "outcome": True,
                "success": rng.random() < 0.5} for i in range(tasks) for k in range(1, trials + 1)]
    started = time.perf_counter()
    stats.run_statistics(records)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", default=None, metavar="PATH")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--keep-plugins", action="store_true")
    args = parser.parse_args(argv)
    n, k = args.tasks, args.trials
    disabled, base, pycache, env, info = prepare(args.keep_plugins, False, "agentbench-trials-pyc-")
    configs = {
        "empty": [*base, "--bench=mock", "--bench-limit=1", "-k", NO_MATCH],
        "one trial": [*base, "--bench=mock", f"--bench-limit={n}"],
        f"{k} trials": [*base, "--bench=mock", f"--bench-limit={n}", f"--bench-trials={k}"],
        "same items": [*base, "--bench=mock", f"--bench-limit={n * k}"],
    }
    samples: dict[str, list[float]] = {name: [] for name in configs}
    try:
        timed(configs["empty"], env)  # warm-up (bytecode cache), untimed
        for _ in range(args.repeat):  # interleaved rounds
            for name, config in configs.items():
                samples[name].append(timed(config, env))
    finally:
        if pycache is not None:
            shutil.rmtree(pycache, ignore_errors=True)
    median = {name: statistics.median(values) for name, values in samples.items()}
    trials_name = f"{k} trials"
    ratio = median[trials_name] / median["one trial"]
    marginal = (median[trials_name] - median["empty"]) / (median["one trial"] - median["empty"])
    beyond = median[trials_name] / median["same items"]
    in_process = stats_seconds(n, k)
    print(f"--trials {k} over {n} mock tasks ({info['platform']}, {info['cpus']} CPUs, python {info['python']}; "
          f"median of {args.repeat}; disabled: {', '.join(name for name, _ in disabled) or 'none'})")
    rows: list[tuple[Any, ...]] = [("run", "items", "wall s (median)", "all runs")]
    items = {"empty": 0, "one trial": n, trials_name: n * k, "same items": n * k}
    for name in configs:
        rows.append((name, items[name], median[name], " ".join(f"{v:.2f}" for v in samples[name])))
    print_table(rows)
    print(f"   {trials_name} / one trial:             {ratio:.2f}x  (target: at most {k}x)")
    print(f"   marginal (minus the empty run):  {marginal:.2f}x")
    print(f"   {trials_name} / {n * k} one-trial items: {beyond:.2f}x  (what trials add beyond the items)")
    print(f"   statistics of {n} tasks x {k} trials in process: {in_process * 1000:.0f} ms")
    verdict = ratio <= k * NOISE
    print(f"   verdict: {'met' if verdict else 'MISSED'}: {ratio:.2f}x <= {k}x (+10% noise)")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": info, "tasks": n, "trials": k, "samples": samples,
                                               "median": median, "ratio": ratio, "marginal_ratio": marginal,
                                               "vs_same_items": beyond, "stats_seconds": in_process}, indent=2))
    return 1 if args.check and not verdict else 0


if __name__ == "__main__":
    sys.exit(main())
