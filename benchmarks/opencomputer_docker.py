#!/usr/bin/env python
"""What ``--opencomputer-backend docker`` costs, against OpenComputer's own runs in the same image.
It measures, and asserts nothing:

1. ``start``: one container from ``docker run`` to the first screenshot, through the plugin's
   container session (OpenComputer's ``setup_sandbox_session``: app launched, window ready),
   per task;
2. ``overhead``: the wall clock of OpenComputer's own sequence over the tasks
   (``tests/data/opencomputer/docker_reference.py``: setup, auto-save, ``verify_task``, kill; one
   process) against a plugin run over the same tasks at ``-n 0`` with the noop agent; the ratio
   per item;
3. ``throughput``: the plugin run's items per minute over the same tasks at each ``--workers``
   count (``-n N``), and its ratio to the first count's (``-n 1`` by default): how far N containers
   at once scale on this machine.

    python benchmarks/opencomputer_docker.py [CHECKOUT] [--image IMAGE] [--tasks a,b,...]
                                             [--workers 1,2,4] [--json PATH]

CHECKOUT defaults to ``$AGENTBENCH_OPENCOMPUTER_UPSTREAM``; the image to
``agentbench-opencomputer-desktop:latest`` (``python -m
pytest_agentbench.benches.opencomputer.desktop_image CHECKOUT`` builds it); ``DOCKER_HOST`` picks
the daemon.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "tests" / "data" / "opencomputer" / "docker_reference.py"
#: gedit and pcmanfm start in seconds: 8 items give every worker of -n 4 two
DEFAULT_TASKS = ("gedit_reformat_json,gedit_log_filter_errors,gedit_sort_lines_manually,gedit_delete_comment_lines,"
                 "pcmanfm_permission_lockdown,pcmanfm_cleanup_temp_files,pcmanfm_dedupe_and_consolidate,"
                 "gedit_disable_autosave_font_change")


def start_times(checkout: Path, image: str, tasks: list[str]) -> list[float]:
    sys.path.insert(0, str(ROOT))
    from pytest_agentbench.benches.opencomputer.container import ContainerSession, DockerOptions

    seconds = []
    for task_id in tasks:
        task = json.loads((checkout / "task_generator" / "tasks" / task_id / "task.json").read_text())
        session = ContainerSession(checkout, checkout / "task_generator" / "tasks", DockerOptions(image=image),
                                   "benchmark")
        started = time.perf_counter()
        try:
            session.create(task)
            session.screenshot()
            seconds.append(time.perf_counter() - started)
        finally:
            session.close()
    return seconds


def reference_wall(checkout: Path, image: str, tasks: list[str]) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-I", str(REFERENCE), str(checkout), image, f"{tmp}/out.json", *tasks],
                       capture_output=True, check=True)
        return time.perf_counter() - started


def plugin_wall(checkout: Path, image: str, tasks: list[str], workers: int) -> float:
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--bench=opencomputer",
            f"--opencomputer-tasks={checkout}", "--opencomputer-backend=docker", f"--opencomputer-image={image}",
            "--bench-agent=noop", "-n", str(workers), *(f"--bench-task={task}" for task in tasks)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        done = subprocess.run([*argv, f"--bench-results-dir={tmp}/results"], cwd=tmp, env=env, capture_output=True,
                              text=True, check=False)
        wall = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"the plugin run failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("checkout", nargs="?", default=os.environ.get("AGENTBENCH_OPENCOMPUTER_UPSTREAM"))
    parser.add_argument("--image", default="agentbench-opencomputer-desktop:latest")
    parser.add_argument("--tasks", default=DEFAULT_TASKS)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not args.checkout:
        parser.error("name the OpenComputer checkout (or set AGENTBENCH_OPENCOMPUTER_UPSTREAM)")
    checkout = Path(args.checkout).resolve()
    tasks = [task for task in args.tasks.split(",") if task]
    starts = start_times(checkout, args.image, tasks)
    print(f"start: docker run to first screenshot, {len(starts)} tasks: median {statistics.median(starts):.1f} s "
          f"(min {min(starts):.1f}, max {max(starts):.1f})")
    reference = reference_wall(checkout, args.image, tasks)
    ours = plugin_wall(checkout, args.image, tasks, 0)
    print(f"overhead: OpenComputer's own sequence {reference:.1f} s, the plugin at -n 0 {ours:.1f} s over "
          f"{len(tasks)} tasks: ratio {ours / reference:.3f} ({(ours - reference) / len(tasks):+.1f} s per item, "
          "pytest start-up included)")
    throughput: dict[int, float] = {}
    for workers in (int(n) for n in args.workers.split(",") if n):
        wall = plugin_wall(checkout, args.image, tasks, workers)
        throughput[workers] = len(tasks) / wall * 60
        first = next(iter(throughput))
        print(f"throughput: -n {workers}: {len(tasks)} items in {wall:.1f} s, {throughput[workers]:.2f} items/min, "
              f"{throughput[workers] / throughput[first]:.2f}x -n {first}")
    if args.json:
        first = next(iter(throughput), None)
        ratios = {n: rate / throughput[first] for n, rate in throughput.items()} if first is not None else {}
        args.json.write_text(json.dumps({"tasks": tasks, "start_seconds": starts, "reference_wall": reference,
                                         "plugin_wall": ours, "throughput_per_min": throughput,
                                         "throughput_ratio": ratios}, indent=1))


if __name__ == "__main__":
    main()
