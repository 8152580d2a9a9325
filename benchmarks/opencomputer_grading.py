#!/usr/bin/env python
"""What grading OpenComputer end states costs with ``--bench=opencomputer`` against OpenComputer's
reference harness, on the same tasks and end states, as ratios measured in one run.

Both sides set up each task's start state with OpenComputer's own code (upload, prepare hooks,
setup scripts), lay the same end state over the home (an empty folder per task: the start state
is graded) and run ``verify_task``, every command in bubblewrap:

* ``ref``: ``run_reference_harness.py`` (beside the checkout), one process per task, as
  OpenComputer's harness grades one task per call; one at a time, and ``WORKERS`` at a time;
* ``ours``: ``pytest --bench=opencomputer --opencomputer-end-state ... --opencomputer-python system``
  (``system``: the reference runs the host's ``python3``): one process over all the tasks, without
  ``-n`` and with ``-n WORKERS``; and one process per task (``--bench-task ID``), as a user grading
  one end state at a time runs it.

Each repeat times ``ours`` and ``ref`` one after the other (in alternating order), by wall clock
and by the CPU seconds (user plus system) of their processes, and takes their ratios, so a
machine that slows down between repeats shifts both; the figure is the median of the paired
ratios (with the lowest and highest). The CPU seconds are the host side's only: pytest and its
workers against the reference's Python processes. What runs in a sandbox is not counted (on either
side: bubblewrap's monitor leaves the namespace's init to be reaped elsewhere, so its usage never
reaches the caller), which makes it a measure of the harness's own cost, steadier than wall time
on a busy machine. A warm-up pair on one task runs first, untimed.
``ours`` also runs once with ``--collect-only`` (pytest starting and reading the checkout's 900
task files), its fixed cost. As in ``overhead.py`` (whose set-up this script uses), pytest
plugins that pytest-agentbench does not bring are disabled and both sides cache bytecode under a
private ``PYTHONPYCACHEPREFIX``. It asserts nothing; the rewards of both sides are compared only to
show that both graded the same thing.

    python benchmarks/opencomputer_grading.py [CHECKOUT] [--tasks ID,ID] [--repeat 3] [--workers 2]
                                              [--json PATH]

CHECKOUT defaults to ``$AGENTBENCH_OPENCOMPUTER_UPSTREAM``.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from opencomputer_agreement import checkout_and_reference
from overhead import prepare

#: Set by main from ``overhead.prepare``: the environment of every timed process (the private
#: bytecode cache), and ``-p no:NAME`` for each foreign pytest plugin.
ENV: dict[str, str] = {}
NO_PLUGINS: list[str] = []

#: One task of each of ten apps, with no LLM-judged check (the reference harness raises without an
#: OpenAI key), whose start state both sides grade without a setup error (Zotero's hook waits 60 s
#: for its binary; some Blender and Impress setups need modules the host lacks). Thunderbird's and
#: pcmanfm's have prepare hooks or deletions; 3 to 23 checks each.
TASKS = ("gedit_change_font_and_save_code", "drawio_edit_add_styles", "libreoffice_writer_agenda_document",
         "calc_3d_quarterly_consolidation", "inkscape_axes_and_plot_points", "pcmanfm_archive_reshape_quarters",
         "thunderbird_add_contact_with_notes", "vscode_appearance_settings", "obsidian_add_links_to_existing",
         "gimp_add_alpha_transparent")


def _reference(reference: Path, checkout: Path, tasks: list[str], out: Path, workers: int) -> float:
    """Seconds to grade ``tasks`` with the reference harness, ``workers`` processes at a time."""
    def one(task: str) -> None:
        subprocess.run([sys.executable, str(reference), str(checkout), task, str(out / f"{task}.json"),
                        "--no-sleep"], env=ENV, capture_output=True, text=True, timeout=900, check=False)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, tasks))
    return time.perf_counter() - started


def _ours(checkout: Path, tasks: list[str], root: Path, results: Path, workers: int, *extra: str) -> float:
    """Seconds of one ``pytest --bench=opencomputer`` process over ``tasks``."""
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *NO_PLUGINS, "-q", "--bench=opencomputer",
            "--opencomputer-tasks", str(checkout), "--opencomputer-end-state", str(root / "end"),
            "--opencomputer-python", "system", "--bench-results-dir", str(results), *extra]
    if workers > 1:
        argv += ["-n", str(workers)]
    for task in tasks:
        argv += ["--bench-task", task]
    started = time.perf_counter()
    subprocess.run(argv, cwd=root, env=ENV, capture_output=True, text=True, timeout=3600, check=False)
    return time.perf_counter() - started


def _children_cpu() -> float:
    """User plus system seconds of every finished child process so far: the host side's (pytest,
    its workers, the reference's Python), not the sandboxed commands' (see the docstring)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _rewards(results: Path, out: Path, tasks: list[str]) -> dict[str, list[float | None]]:
    """task -> [ours, reference] rewards (None where a side has none)."""
    ours: dict[str, float] = {}
    for file in results.rglob("results.jsonl"):
        for line in file.read_text().splitlines():
            record = json.loads(line)
            if record.get("score") is not None and not record.get("error"):
                ours[record["task_id"]] = record["score"]
    pairs: dict[str, list[float | None]] = {}
    for task in tasks:
        ref_file = out / f"{task}.json"
        ref = json.loads(ref_file.read_text()) if ref_file.is_file() else {}
        ref_reward = None if ref.get("setup_error") or ref.get("verify_crash") else ref.get("reward")
        pairs[task] = [ours.get(task), ref_reward]
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", nargs="?", default=os.environ.get("AGENTBENCH_OPENCOMPUTER_UPSTREAM"))
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    checkout, reference = checkout_and_reference(parser, args.checkout)
    tasks = [t for t in args.tasks.split(",") if t]
    n = len(tasks)
    _, no_plugins, pycache, env, _ = prepare(False, False, "agentbench-grading-pycache-")
    if pycache is not None:
        atexit.register(shutil.rmtree, pycache, True)
    ENV.clear()
    ENV.update(env)
    NO_PLUGINS[:] = no_plugins
    load = os.getloadavg()[0]
    print(f"load average at start: {load:.2f}; {os.cpu_count()} cpus; {n} tasks; repeat {args.repeat}")
    w = args.workers
    #: mode -> (what ours runs, what the reference runs); each a function of the repeat's folder
    modes: dict[str, tuple[Callable[[Path], float], Callable[[Path], float]]] = {
        "one pytest process, one at a time": (lambda out: _ours(checkout, tasks, root, out, 1),
                                              lambda out: _reference(reference, checkout, tasks, out, 1)),
        f"one pytest process -n {w}, reference {w} at a time": (
            lambda out: _ours(checkout, tasks, root, out, w),
            lambda out: _reference(reference, checkout, tasks, out, w)),
        "a pytest process per task, one at a time": (
            lambda out: sum(_ours(checkout, [task], root, out / task, 1) for task in tasks),
            lambda out: _reference(reference, checkout, tasks, out, 1)),
    }
    times: dict[str, tuple[list[float], list[float]]] = {mode: ([], []) for mode in modes}
    cpu: dict[str, tuple[list[float], list[float]]] = {mode: ([], []) for mode in modes}
    with tempfile.TemporaryDirectory(prefix="agentbench-grading-") as folder:
        root = Path(folder)
        for task in tasks:
            (root / "end" / task).mkdir(parents=True)
        _ours(checkout, tasks[:1], root, root / "warm", 1)  # warm-up: bytecode, page cache, the bwrap probe
        _reference(reference, checkout, tasks[:1], root / "warm-ref", 1)
        collect = _ours(checkout, tasks, root, root / "collect", 1, "--collect-only")
        for turn in range(args.repeat):
            for number, (mode, sides) in enumerate(modes.items()):
                ours, ref = times[mode]
                order = [(ours, cpu[mode][0], sides[0], "ours"), (ref, cpu[mode][1], sides[1], "ref")]
                for into, cpu_into, measure, side in order if turn % 2 == 0 else reversed(order):
                    before = _children_cpu()
                    into.append(measure(root / f"{side}-{turn}-{number}"))
                    cpu_into.append(_children_cpu() - before)
                print(f"repeat {turn + 1}, {mode}: ours {ours[-1]:.1f} s, reference {ref[-1]:.1f} s", flush=True)
        rewards = _rewards(root / "ours-0-0", root / "ref-0-0", tasks)
    rows = {}
    for mode, (ours, ref) in times.items():
        ratios = sorted(o / r for o, r in zip(ours, ref, strict=True))
        cpu_ratios = sorted(o / r for o, r in zip(*cpu[mode], strict=True))
        rows[mode] = {"cpu_ratio": round(statistics.median(cpu_ratios), 3),
                      "cpu_ratio_range": [round(cpu_ratios[0], 3), round(cpu_ratios[-1], 3)],
                      "cpu_seconds": {"ours": [round(t, 2) for t in cpu[mode][0]],
                                      "ref": [round(t, 2) for t in cpu[mode][1]]},
                      "ours_s_per_task": round(statistics.median(ours) / n, 3),
                      "ref_s_per_task": round(statistics.median(ref) / n, 3),
                      "ratio": round(statistics.median(ratios), 3),
                      "ratio_range": [round(ratios[0], 3), round(ratios[-1], 3)],
                      "seconds": {"ours": [round(t, 2) for t in ours], "ref": [round(t, 2) for t in ref]}}
    summary: dict[str, Any] = {
        "tasks": n, "repeat": args.repeat, "load_at_start": round(load, 2), "load_at_end": round(os.getloadavg()[0], 2),
        "collect_only_seconds": round(collect, 2), "modes": rows,
        "rewards_equal": sum(1 for ours_reward, ref_reward in rewards.values()
                             if ours_reward is not None and ours_reward == ref_reward),
        "rewards": rewards,
    }
    print(f"{'mode':<50} {'ours s/task':>11} {'ref s/task':>10} {'wall':>6}  {'range':<11} {'host cpu':>8}  range")
    for mode, row in rows.items():
        low, high = row["ratio_range"]
        cpu_low, cpu_high = row["cpu_ratio_range"]
        print(f"{mode:<50} {row['ours_s_per_task']:>11.3f} {row['ref_s_per_task']:>10.3f} {row['ratio']:>5.2f}x  "
              f"{f'{low:.2f}-{high:.2f}x':<11} {row['cpu_ratio']:>7.2f}x  {cpu_low:.2f}-{cpu_high:.2f}x")
    print(f"--collect-only of the same command: {collect:.2f} s; rewards equal on {summary['rewards_equal']} of {n} "
          f"tasks; load average at end: {summary['load_at_end']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
