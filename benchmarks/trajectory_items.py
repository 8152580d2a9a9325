#!/usr/bin/env python
"""A 1,000-case trajectory folder run as pytest items, next to the in-process metric figure.

Both figures come from one invocation: this script

1. runs the in-process measurement of ``benchmarks/trajectory_metrics.py`` (its ``measure(n)`` if
   it has one, else its ``main`` with ``--json``): all seven metrics over 1,000 synthetic 10-step
   traces, traces per second;
2. writes the same 1,000 synthetic cases (``trajectory_metrics.synthetic_case(i)``) as a case folder
   (``<id>.case.json`` + ``<id>.trace.json`` each) in a fresh temporary directory with an empty
   ``pytest.ini``, and times ``python -m pytest DIR -q -p no:cacheprovider`` as a subprocess, median
   of ``--repeat`` runs after one untimed warm-up;
3. times the same for a bare file of 1,000 trivial parametrized tests, for the per-item context;
4. prints the items run against the reference CLI's ``openeval run --suite`` on the same workload,
   about 0.4 s (0.373-0.431 s). That figure is **from the research notes** (openeval-core 0.2.1, 4
   metrics, on another machine), **not measured here**; the ratio is for context only.

Plugins that are not this package or its dependencies and that add noise (pytest-randomly,
pytest-benchmark, hypothesis) are disabled in the timed runs. Asserts nothing; exits 1 only if a
run does not end with the expected outcome counts.

    python benchmarks/trajectory_items.py [--cases 1000] [--repeat 3] [--workers 0] [--json PATH] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import trajectory_metrics  # noqa: E402  (the in-process benchmark and the synthetic generator)

REFERENCE_CLI_S = 0.40  # openeval run --suite, 1,000 cases: 0.373-0.431 s, research notes (not measured here)
REFERENCE_RANGE_S = (0.373, 0.431)
NOISE = ("-p", "no:randomly", "-p", "no:benchmark", "-p", "no:hypothesispytest", "-p", "no:cacheprovider")

BARE = """\
import pytest


@pytest.mark.parametrize("i", range({n}))
def test_x(i):
    pass
"""


def write_cases(folder: Path, n: int) -> dict[str, int]:
    """The synthetic cases as a folder; returns the outcome counts the run must end with."""
    from pytest_agentbench.trajectory.metrics import score_all

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pytest.ini").write_text("[pytest]\n")
    expected = {"passed": 0, "failed": 0, "skipped": 0}
    for i in range(n):
        trace, case = trajectory_metrics.synthetic_case(i)
        stem = trace.task_id
        (folder / f"{stem}.case.json").write_text(json.dumps(case.to_dict()))
        (folder / f"{stem}.trace.json").write_text(json.dumps(trace.to_dict()))
        results = [r for r in score_all(trace, case) if r.passed is not None]
        key = "skipped" if not results else "passed" if all(r.passed for r in results) else "failed"
        expected[key] += 1
    return {k: v for k, v in expected.items() if v}


def pytest_cmd(folder: Path, workers: int) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", str(folder), "-q", *NOISE]
    if workers:
        cmd += ["-n", str(workers)]
    return cmd


def timed(cmd: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"},
                          check=False)
    return time.perf_counter() - start, done


def outcome_counts(stdout: str) -> dict[str, int]:
    last = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    return {word: int(num) for num, word in re.findall(r"(\d+) (passed|failed|skipped|error|errors)", last)}


def median_run(cmd: list[str], cwd: Path, repeat: int, expected: dict[str, int],
               ok: tuple[int, ...] = (0, 1)) -> tuple[list[float], str]:
    """Times ``cmd`` ``repeat`` times after a warm-up; every run must end with the ``expected``
    outcome counts and an exit code in ``ok``."""
    timed(cmd, cwd)  # warm-up: bytecode caches, page cache
    runs, last = [], ""
    for _ in range(repeat):
        seconds, done = timed(cmd, cwd)
        counts = outcome_counts(done.stdout)
        if counts != expected or done.returncode not in ok:
            sys.stderr.write(f"unexpected outcome of {' '.join(cmd)} (exit {done.returncode}): {counts}, "
                             f"expected {expected}\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}\n")
            raise SystemExit(1)
        runs.append(seconds)
        last = done.stdout
    return runs, last


def in_process(n: int, repeat: int) -> float:
    """Traces per second from benchmarks/trajectory_metrics.py (its block is printed as it runs)."""
    measure = getattr(trajectory_metrics, "measure", None)
    if callable(measure):
        return float(measure(n))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "metrics.json"
        trajectory_metrics.main(["--traces", str(n), "--repeat", str(repeat), "--json", str(out)])
        return float(json.loads(out.read_text())["traces_per_s"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--metric-repeat", type=int, default=5, help="timed runs of the in-process measurement")
    parser.add_argument("--workers", type=int, default=0, help="also time the items run with -n WORKERS")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--keep", type=Path, help="write the case folder here and keep it")
    args = parser.parse_args(argv)

    print(f"python {platform.python_version()} on {platform.machine()}, {platform.system()}, {os.cpu_count()} CPUs")
    print("== 1. in process (benchmarks/trajectory_metrics.py)")
    per_second = in_process(args.cases, args.metric_repeat)

    tmp = Path(tempfile.mkdtemp(prefix="trajectory-items-"))
    try:
        cases = args.keep or tmp / "cases"
        if args.keep and args.keep.exists():
            shutil.rmtree(args.keep)
        expected = write_cases(cases, args.cases)
        bare = tmp / "bare"
        bare.mkdir()
        (bare / "pytest.ini").write_text("[pytest]\n")
        (bare / "test_bare.py").write_text(BARE.format(n=args.cases))

        print(f"\n== 2. {args.cases} cases as pytest items: python -m pytest DIR -q {' '.join(NOISE)}")
        print(f"   expected outcomes (from score_all): {expected}")
        item_runs, stdout = median_run(pytest_cmd(cases, 0), tmp, args.repeat, expected)
        items_s = statistics.median(item_runs)
        print(f"   runs (s): {', '.join(f'{r:.3f}' for r in item_runs)}; median {items_s:.3f} s "
              f"-> {args.cases / items_s:,.0f} cases/s, {items_s / args.cases * 1000:.3f} ms per case")
        print(f"   last line: {stdout.strip().splitlines()[-1]}")
        every = [*pytest_cmd(cases, 0), "--trajectory-failures-shown", "all"]
        all_runs, _ = median_run(every, tmp, args.repeat, expected)
        all_s = statistics.median(all_runs)
        print(f"   with --trajectory-failures-shown all (a failure section for each of the {expected.get('failed', 0)} "
              f"failing cases, not the default 20): median {all_s:.3f} s, {all_s / items_s:.2f}x the default")
        xdist_s = None
        if args.workers:
            xdist_runs, _ = median_run(pytest_cmd(cases, args.workers), tmp, args.repeat, expected)
            xdist_s = statistics.median(xdist_runs)
            print(f"   with -n {args.workers}: runs (s): {', '.join(f'{r:.3f}' for r in xdist_runs)}; "
                  f"median {xdist_s:.3f} s")

        print("\n== 3. context: where the time goes")
        empty = tmp / "empty"
        empty.mkdir()
        (empty / "pytest.ini").write_text("[pytest]\n")
        startup_runs, _ = median_run([*pytest_cmd(empty, 0)], tmp, args.repeat, {}, ok=(5,))
        startup_s = statistics.median(startup_runs)
        print(f"   pytest start-up, no items (python, pytest, the installed plugins): {startup_s:.3f} s")
        collect_runs, _ = median_run([*pytest_cmd(cases, 0), "--collect-only"], tmp, args.repeat, {}, ok=(0,))
        collect_s = statistics.median(collect_runs)
        print(f"   start-up + collecting the folder ({2 * args.cases} files, --collect-only): {collect_s:.3f} s")
        bare_runs, _ = median_run(pytest_cmd(bare, 0), tmp, args.repeat, {"passed": args.cases})
        bare_s = statistics.median(bare_runs)
        print(f"   {args.cases} bare parametrized items (`def test_x(i): pass`), whole run: {bare_s:.3f} s")
        print(f"   the case folder's whole run is {items_s / bare_s:.2f}x the bare run "
              f"({(items_s - bare_s) / args.cases * 1000:.3f} ms more per case)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    low, high = trajectory_metrics.REFERENCE
    print("\n== summary")
    print(f"in process: {per_second:,.0f} traces/s with all 7 metrics "
          f"(reference openeval-core: {low:,}-{high:,}/s, research notes, not measured here; "
          f"{per_second / high:.2f}x-{per_second / low:.2f}x)")
    print(f"as pytest items: {args.cases} cases in {items_s:.3f} s, 7 metrics each "
          f"(reference CLI `openeval run --suite`: about {REFERENCE_CLI_S:.1f} s "
          f"[{REFERENCE_RANGE_S[0]}-{REFERENCE_RANGE_S[1]} s], 4 metrics, research notes, not measured here; "
          f"ratio {items_s / REFERENCE_CLI_S:.1f}x)")
    if args.json:
        figures: dict[str, Any] = {
            "cases": args.cases, "repeat": args.repeat, "in_process_traces_per_s": per_second,
            "items_runs_s": item_runs, "items_median_s": items_s, "items_xdist_median_s": xdist_s,
            "all_failures_shown_runs_s": all_runs, "all_failures_shown_median_s": all_s,
            "workers": args.workers, "bare_runs_s": bare_runs, "bare_median_s": bare_s,
            "startup_median_s": startup_s, "collect_only_median_s": collect_s,
            "expected_outcomes": expected, "reference_cli_s": REFERENCE_CLI_S,
            "ratio_to_reference_cli": items_s / REFERENCE_CLI_S, "python": platform.python_version(),
        }
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
