"""Speed-up of ``-n 4`` over one process on WAA tasks through a static pool of 4 hosts.

Each host is a ``FakeWAAServer`` on loopback that adds a fixed latency to every call, standing in
for a Windows VM whose calls take time. 40 copies of the notepad task are played by the scripted
agent (a real solve: setup, 8 actions, evaluate) once with ``-n 0`` (the first host) and once with
``-n 4`` (one host per worker). Target: at least 3.5x.

    python benchmarks/waa_pool.py [--tasks 40] [--latency 0.05] [--workers 4] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "tests" / "data" / "waa" / "examples"
TARGET = 3.5


def project(folder: Path, tasks: int) -> list[str]:
    from pytest_agentbench.testing import NOTEPAD_SOLUTION, NOTEPAD_TASK

    examples = folder / "examples" / "notepad"
    examples.mkdir(parents=True)
    for n in range(tasks):
        shutil.copy(EXAMPLES / "notepad" / f"{NOTEPAD_TASK}.json", examples / f"t{n:03d}.json")
    (folder / "index.json").write_text(json.dumps({"notepad": [f"t{n:03d}" for n in range(tasks)]}))
    (folder / "script.json").write_text(json.dumps({"*": NOTEPAD_SOLUTION}))
    (folder / "pytest.ini").write_text("[pytest]\n")
    return ["--bench=waa", "--waa-examples", str(folder / "examples"), "--waa-index", str(folder / "index.json"),
            "--bench-agent", "scripted", "--bench-agent-script", str(folder / "script.json"),
            "-q", "-p", "no:cacheprovider",
            "-p", "no:benchmark", "-p", "no:hypothesispytest"]


def timed(args: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"pytest failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds added to every call (default 0.05)")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    from pytest_agentbench.testing import NOTEPAD_TASK, FakeWAAServer, serve_notepad_gold

    task = json.loads((EXAMPLES / "notepad" / f"{NOTEPAD_TASK}.json").read_text())
    servers = [FakeWAAServer(latency=args.latency, evaluate=True) for _ in range(args.workers)]
    folder = Path(tempfile.mkdtemp(prefix="agentbench-waa-pool-"))
    try:
        for server in servers:
            server.start()
            serve_notepad_gold(server, task)
        base = [*project(folder, args.tasks), "--pool", "static", "--pool-hosts", ",".join(s.url for s in servers)]
        serial = timed([*base, "-p", "no:xdist"], folder)
        calls_serial = sum(len(s.requests) for s in servers)
        parallel = timed([*base, "-n", str(args.workers)], folder)
        calls = sum(len(s.requests) for s in servers) - calls_serial
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    speedup = serial / parallel
    print(f"WAA through a static pool: {args.tasks} notepad tasks solved by the scripted agent, "
          f"{args.latency * 1000:.0f} ms latency per call, {calls_serial} calls per run "
          f"({calls_serial / args.tasks:.0f} per task); machine: {os.cpu_count()} cores")
    print(f"  one process (first host)     {serial:7.2f} s wall")
    print(f"  -n {args.workers} ({args.workers} hosts, one each)   {parallel:7.2f} s wall  ({calls} calls)")
    print(f"  speed-up {speedup:.2f}x  (target >= {TARGET}x: {'PASS' if speedup >= TARGET else 'FAIL'})")
    if args.json:
        args.json.write_text(json.dumps({"tasks": args.tasks, "latency_s": args.latency, "workers": args.workers,
                                         "serial_s": serial, "parallel_s": parallel, "speedup": speedup,
                                         "calls_per_run": calls_serial}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
