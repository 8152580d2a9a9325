"""How a latency-bound run scales with xdist workers: mock tasks played by an HTTP agent that thinks.

The example agent server (``conftest_examples/http_agent/server.py``) runs in this process, made to
think ``--think`` seconds before each ``/act`` reply (a model call, with the machine idle meanwhile);
a mock task takes two steps. ``pytest --bench=mock --bench-agent http`` plays ``--serial-tasks``
tasks in one process, then ``--tasks`` tasks under each ``-n`` of ``--workers``. The serial run
gives the seconds per task (start-up included, as a user's serial run has it); the ideal for
``-n k`` is that many tasks at that rate divided by ``k``, and the figure is the ideal over the
wall time measured (1.0: perfect scaling). The runs alternate (serial, -n 2, -n 4, serial, ...)
``--repeat`` times so a drift of the machine's speed falls on every run alike; the medians are
printed. Also printed: the think-time floor of a task (steps x think) against the serial seconds
per task, which is the fixed cost per task on the agent path (requests, screenshot, record), and
each parallel run's excess over its ideal, which is mostly the fixed cost of starting workers.
Each run's CPU seconds (the pytest process and its workers, from the kernel's accounting) are
printed too: a loaded machine stretches wall times, far less the CPU a run needs.

Plugins of packages that pytest-agentbench does not bring are disabled with ``-p no:NAME``, and
bytecode is cached under a private ``PYTHONPYCACHEPREFIX``, as in ``overhead.py`` (whose helpers
this script imports): every process of a run, each worker among them, pays what a user of this
plugin pays, not what else happens to be installed (hypothesis's plugin imports hypothesis at the
end of every process) nor a recompilation that an installed machine caches. ``--keep-plugins`` and
``--no-bytecode-cache`` keep the caller's.

    python benchmarks/agent_scaling.py [--think 0.1] [--serial-tasks 32] [--tasks 128] [--workers 2,4]
                                       [--repeat 3] [--server PATH] [--json PATH] [--keep-plugins]
                                       [--no-bytecode-cache]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead import prepare

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "conftest_examples" / "http_agent" / "server.py"
#: Steps of a mock task played by the example agent: click Submit, then done.
STEPS = 2


def _example(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("agentbench_example_http_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def start_server(think: float, path: Path = SERVER) -> tuple[Any, list[int]]:
    """The example server with an agent that sleeps ``think`` seconds per step; returns it and a
    one-item list counting the /act calls (to check each run played what it should)."""
    example = _example(path)
    calls = [0]
    lock = threading.Lock()

    class ThinkingAgent(example.SubmitAgent):  # type: ignore[misc,name-defined]
        def act(self, request: dict[str, Any]) -> dict[str, Any]:
            with lock:
                calls[0] += 1
            time.sleep(think)
            return super().act(request)  # type: ignore[no-any-return]

    server = example.AgentServer(ThinkingAgent())
    server.start()
    return server, calls


def run(url: str, tasks: int, workers: int, folder: Path, base: list[str] | None = None,
        env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user and system, its workers' included) of one whole pytest
    process; ``workers`` 0 means without xdist. ``base``: more arguments (plugins disabled); ``env``:
    the process's environment (default: this one's)."""
    spread = ["-p", "no:xdist"] if workers == 0 else ["-n", str(workers)]
    args = [sys.executable, "-m", "pytest", "--bench=mock", "--bench-limit", str(tasks), "--bench-agent", "http",
            "--bench-agent-url", url, "-q", "-p", "no:cacheprovider", "--bench-results-dir", str(folder / "runs"),
            *spread, *(base or [])]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(args, cwd=folder, capture_output=True, text=True, check=False, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if done.returncode != 0 or f"{tasks} passed" not in done.stdout:
        raise SystemExit(f"pytest failed ({done.returncode}): {' '.join(args)}\n{done.stdout[-3000:]}\n"
                         f"{done.stderr[-2000:]}")
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--think", type=float, default=0.1, help="seconds the agent thinks per step (default 0.1)")
    parser.add_argument("--serial-tasks", type=int, default=32, help="tasks of the serial run (default 32)")
    parser.add_argument("--tasks", type=int, default=128, help="tasks of each parallel run (default 128)")
    parser.add_argument("--workers", default="2,4", help="comma-separated -n values (default 2,4)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of alternated runs (default 3)")
    parser.add_argument("--server", type=Path, default=SERVER,
                        help="the agent server module (default: the example); another copy of it, say an older one")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--keep-plugins", action="store_true", help="do not disable plugins that are not ours")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="keep the caller's bytecode settings (default: cache .pyc under a private prefix)")
    args = parser.parse_args(argv)
    try:
        counts = [int(n) for n in args.workers.split(",")]
    except ValueError:
        parser.error(f"--workers must be comma-separated integers, got {args.workers!r}")
    if min(counts, default=0) < 1 or args.repeat < 1 or args.serial_tasks < 1 or args.tasks < 1:
        parser.error("--workers, --repeat, --serial-tasks and --tasks must be positive")

    disabled, base, pycache, env, info = prepare(args.keep_plugins, args.no_bytecode_cache,
                                                 "agentbench-scaling-pycache-")
    server, calls = start_server(args.think, args.server)
    folder = Path(tempfile.mkdtemp(prefix="agentbench-scaling-"))
    (folder / "pytest.ini").write_text("[pytest]\n")
    load = os.getloadavg()[0]
    walls: dict[int, list[float]] = {0: [], **{n: [] for n in counts}}
    cpus: dict[int, list[float]] = {n: [] for n in walls}
    try:
        run(server.url, 2, 0, folder, base, env)  # warm-up: bytecode, page cache
        for _ in range(args.repeat):
            for workers in walls:
                before = calls[0]
                tasks = args.serial_tasks if workers == 0 else args.tasks
                wall, cpu = run(server.url, tasks, workers, folder, base, env)
                walls[workers].append(wall)
                cpus[workers].append(cpu)
                if calls[0] - before != STEPS * tasks:
                    raise SystemExit(f"expected {STEPS * tasks} /act calls, the agent saw {calls[0] - before}")
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(folder, ignore_errors=True)
        if pycache is not None:
            shutil.rmtree(pycache, ignore_errors=True)
    per_task = statistics.median(walls[0]) / args.serial_tasks
    floor = STEPS * args.think
    print(f"mock tasks through --bench-agent http, the example server thinking {args.think:g} s per step "
          f"({STEPS} steps a task); {os.cpu_count()} cpus; load average {load:.2f} at start, "
          f"{os.getloadavg()[0]:.2f} at end; median of {args.repeat}")
    print(f"  bytecode {info['bytecode']}; " + ("disabled (not brought by pytest-agentbench): "
                                                + ", ".join(f"{n} ({d})" for n, d in disabled)
                                                if disabled else "every installed plugin loaded"))
    print(f"  serial      {args.serial_tasks:4d} tasks  {statistics.median(walls[0]):7.2f} s  "
          f"{per_task:.3f} s/task (think floor {floor:.3f} s, {per_task - floor:+.3f} s above it)  "
          f"cpu {statistics.median(cpus[0]):6.2f} s")
    rows: dict[str, Any] = {}
    for workers in counts:
        wall = statistics.median(walls[workers])
        ideal = per_task * args.tasks / workers
        cpu = statistics.median(cpus[workers])
        rows[str(workers)] = {"wall_s": wall, "ideal_s": ideal, "of_ideal": ideal / wall, "cpu_s": cpu,
                              "speedup": per_task * args.tasks / wall, "walls": walls[workers]}
        print(f"  -n {workers:<2d}       {args.tasks:4d} tasks  {wall:7.2f} s  ideal {ideal:6.2f} s  "
              f"speed-up {per_task * args.tasks / wall:5.2f}x  of ideal {ideal / wall:.2f}  "
              f"({wall - ideal:+.2f} s over it)  cpu {cpu:6.2f} s")
    if args.json:
        args.json.write_text(json.dumps({"think_s": args.think, "serial_tasks": args.serial_tasks,
                                         "tasks": args.tasks, "cpus": os.cpu_count(), "load_start": load,
                                         "bytecode": info["bytecode"], "disabled": [n for n, _ in disabled],
                                         "serial_walls": walls[0], "serial_cpus": cpus[0], "per_task_s": per_task,
                                         "workers": rows},
                                        indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
