#!/usr/bin/env python
"""Timing of the verifier audit: the toy audit as a whole process, and audit items per second.

1. **The toy audit against the seed's claim.** The reference tool's README says the toy audit
   "runs offline in under a second". This times, in fresh temporary directories and subprocesses,
   the median wall clock of

   * ``python -m pytest --audit-verifier=toy -q -p no:cacheprovider`` (exit code 1, four false
     accepts: the exact command a user types, as a whole process);
   * the same with ``-k`` matching no item: the fixed cost of starting Python, pytest and the
     plugins, resolving the adapter and collecting the 30 items, with no audit run;
   * the same with ``--audit-out``: the report's ``seconds`` is the audit work itself (the sum of
     the tasks' seconds: references, operators, deliveries, classification), without pytest.

2. **A scaled synthetic adapter** of ``--tasks`` tasks (default 1,000, so 6,000 items), written
   below and registered through a ``conftest.py`` written into each run's temp dir (``--run-ms``
   adds a pause per reference and per delivered run, to model an adapter that starts its app fresh
   for every run, as real benchmarks do). Its tasks cycle
   through four kinds (a loophole checker, a counting checker, an idempotent update, a single
   idempotent write), so items end as killed, false accept, equivalent and refused, like the toy's.
   It is timed with ``--audit-limit 0`` in one process and under ``-n 2`` (``--workers``), next to a bare
   file of as many trivial parametrized tests (``benchmarks/overhead.py``'s), and reported as
   audit items per second: by wall clock (the whole process) and by pytest's own session time.

Plugins of packages that pytest-agentbench does not bring are disabled with ``-p no:NAME``, and
bytecode is cached under a private ``PYTHONPYCACHEPREFIX``, as in ``overhead.py`` (whose helpers
this script imports).

    python benchmarks/audit.py [--repeat 5] [--scaled-repeat 3] [--tasks 1000] [--run-ms 0] [--workers 2]
                               [--json PATH] [--check]

Exit status is 0 unless a run ends other than expected (or, with ``--check``, the toy audit takes
a second or more).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead import (
    RunFailed,
    _children_cpu,
    _finite,
    prepare,
    print_table,
    timed_run,
)

TARGET_TOY_S = 1.0  # the seed: "this runs offline in under a second"
#: Measured by the research notes (§1.1) on another machine, with the reference tool's own CLI.
#: Printed for context only; nothing here compares against it.
REFERENCE = {"tool": "openadapt-evals", "command": "openadapt-evals audit-verifier --benchmark toy",
             "wall_s": 0.07, "note": "measured on another machine, not here"}
NO_MATCH = "agentbench_audit_no_such_item"
OPERATORS = 6
TOY_COUNTS = {"failed": 4, "passed": 23, "skipped": 3}

SCALED_ADAPTER = '''\
"""A synthetic audit adapter of {n} cheap tasks in four kinds (written by benchmarks/audit.py)."""

import time

from pytest_agentbench.audit import DEFAULT_POLICY, Delivery, Reference

N_TASKS = {n}
RUN_S = {run_s!r}  # a pause per reference and per delivered run, like an app started fresh per run
TOKEN = "scaled-token"


class App:
    def __init__(self):
        self.items = []      # scaled.Item rows added by runs
        self.flag = {{"id": 1, "on": False}}
        self.next_id = 1

    def handle(self, call):
        method, url, data = call["method"], call["url"], call.get("data") or {{}}
        if url.endswith("/auth/token") or url.startswith("/supervisor") or method == "get":
            return 200
        if data.get("access_token") != TOKEN:
            return 401
        if method == "post" and url == "/scaled/items":
            self.items.append({{"id": self.next_id, "name": data["name"], "qty": data.get("qty", 1)}})
            self.next_id += 1
            return 201
        if method == "patch" and url.startswith("/scaled/items/"):
            for row in self.items:
                if str(row["id"]) == url.rsplit("/", 1)[1]:
                    row["qty"] = data["qty"]
                    return 200
            return 404
        if method == "put" and url == "/scaled/flag":
            self.flag = {{"id": 1, "on": data["on"]}}
            return 200
        return 404

    def effect(self):
        out = {{}}
        if self.items:
            out["scaled.Item"] = {{"added": [dict(r) for r in self.items], "removed": [], "updated": []}}
        if self.flag["on"] is not False:
            out["scaled.Flag"] = {{"added": [], "removed": [],
                                  "updated": [{{"before": {{"id": 1, "on": False}}, "after": dict(self.flag)}}]}}
        return out


def _write(method, url, **data):
    return {{"method": method, "url": url, "data": {{"access_token": TOKEN, **data}}}}


SIGN_IN = {{"method": "post", "url": "/scaled/auth/token", "data": {{"username": "u", "password": "p"}}}}
CLAIM = {{"method": "post", "url": "/supervisor/complete_task", "data": {{"status": "success"}}}}


def solution(i):
    kind = i % 4
    if kind in (0, 1):   # two inserts; kind 0's checker does not count them (loophole)
        body = [_write("post", "/scaled/items", name=f"item{{i}}a"),
                _write("post", "/scaled/items", name=f"item{{i}}b")]
    elif kind == 2:      # an insert, then an idempotent update
        body = [_write("post", "/scaled/items", name=f"item{{i}}a"), _write("patch", "/scaled/items/1", qty=2)]
    else:                # one idempotent write
        body = [_write("put", "/scaled/flag", on=True)]
    return [SIGN_IN, *body, CLAIM]


def check(i, app):
    kind = i % 4
    names = [r["name"] for r in app.items]
    if kind == 0:
        return set(names) == {{f"item{{i}}a", f"item{{i}}b"}}
    if kind == 1:
        return sorted(names) == [f"item{{i}}a", f"item{{i}}b"]
    if kind == 2:
        return [(r["name"], r["qty"]) for r in app.items] == [(f"item{{i}}a", 2)]
    return app.flag["on"] is True and not app.items


class ScaledAdapter:
    name = "scaled"
    ignore_fields = frozenset({{"id"}})
    policy = DEFAULT_POLICY

    def describe(self):
        return {{"name": self.name, "synthetic": True, "tasks": N_TASKS}}

    def task_ids(self, split=None, limit=None):
        ids = [f"t{{i:05d}}" for i in range(N_TASKS)]
        return ids[:limit] if limit else ids

    def reference(self, task_id):
        i = int(task_id[1:])
        calls = solution(i)
        if RUN_S:
            time.sleep(RUN_S)
        app = App()
        for c in calls:
            app.handle(c)
        return Reference(task_id, calls, app.effect())

    def deliver(self, task_id, runs):
        i = int(task_id[1:])
        out = []
        for run in runs:
            if RUN_S:
                time.sleep(RUN_S)
            app = App()
            statuses = [app.handle(c) for c in run.calls]
            effect = app.effect()
            verdict = ("PASS" if check(i, app) else "FAIL") if run.grade else None
            out.append(Delivery(run.run_id, effect, verdict, statuses))
        return out
'''

SCALED_CONFTEST = '''\
from scaled_audit import ScaledAdapter


def pytest_agentbench_register_audit_adapters(registry):
    registry.register("scaled", lambda config: ScaledAdapter())
'''

#: Items per kind of task, by outcome: (failed, passed, skipped).
KIND_COUNTS = {0: (2, 4, 0), 1: (0, 6, 0), 2: (0, 5, 1), 3: (0, 4, 2)}


def scaled_counts(n: int) -> dict[str, int]:
    out = {"failed": 0, "passed": 0, "skipped": 0}
    for i in range(n):
        f, p, s = KIND_COUNTS[i % 4]
        out["failed"] += f
        out["passed"] += p
        out["skipped"] += s
    return {k: v for k, v in out.items() if v}


# -- one run --------------------------------------------------------------------------------------
def counts(line: str) -> dict[str, int]:
    return {word: int(num)
            for num, word in re.findall(r"(\d+) (failed|passed|skipped|deselected|errors?|xfailed)", line)}


def pytest_run(args: list[str], env: dict[str, str], *, files: dict[str, str], expect_rc: int,
               expect: dict[str, int], keep: bool, out: bool = False) -> dict[str, Any]:
    """One ``python -m pytest -q -p no:cacheprovider ARGS`` in a fresh temp dir: wall, cpu, pytest's
    session time and, with ``out``, the ``--audit-out`` report's ``seconds`` (the audit work)."""
    workdir = Path(tempfile.mkdtemp(prefix="agentbench-audit-bench-"))
    try:
        (workdir / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # pins the rootdir here
        for name, text in files.items():
            (workdir / name).write_text(text, encoding="utf-8")
        report = workdir / "audit.json"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
        if out:
            cmd += ["--audit-out", str(report)]
        cpu0 = _children_cpu()
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        cpu = _children_cpu() - cpu0
        last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
        got = counts(last)
        if proc.returncode != expect_rc or got != expect:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
            raise RunFailed(f"{' '.join(cmd)} (in {workdir}) exited {proc.returncode} with {got}, "
                            f"expected {expect_rc} and {expect}:\n{tail}")
        match = re.search(r" in (\d+(?:\.\d+)?)s\b", last)
        result = {"wall": wall, "cpu": cpu, "session": float(match.group(1)) if match else float("nan")}
        if out:
            data = json.loads(report.read_text(encoding="utf-8"))
            result["audit_work"] = float(data["seconds"])
            result["report_bytes"] = report.stat().st_size
        return result
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def med(samples: list[dict[str, Any]], key: str) -> float:
    values = [s[key] for s in samples if key in s]
    return statistics.median(values) if values else float("nan")


# -- main -----------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5,
                        help="runs per toy configuration; medians are reported (default 5)")
    parser.add_argument("--scaled-repeat", type=int, default=3, help="runs per scaled configuration (default 3)")
    parser.add_argument("--tasks", type=int, default=1000, help="tasks of the scaled adapter (default 1000)")
    parser.add_argument("--run-ms", type=float, default=0.0,
                        help="scaled adapter: pause this long per reference and per delivered run, like an adapter "
                             "that starts a fresh app per run (default 0: the plugin's own cost only)")
    parser.add_argument("--workers", type=int, default=2, help="xdist workers of the parallel scaled run (default 2)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed toy runs first, to warm caches (default 1)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures and raw samples as JSON")
    parser.add_argument("--keep-plugins", action="store_true", help="do not disable plugins that are not ours")
    parser.add_argument("--keep-dirs", action="store_true", help="keep the temporary directories")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="keep the caller's bytecode settings (default: cache .pyc under a private prefix)")
    parser.add_argument("--check", action="store_true", help="exit 1 when the toy audit takes a second or more")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.scaled_repeat < 1 or args.tasks < 4 or args.workers < 1:
        parser.error("--repeat and --scaled-repeat must be >= 1, --tasks >= 4, --workers >= 1")

    disabled, base, pycache, env, info = prepare(args.keep_plugins, args.no_bytecode_cache, "agentbench-audit-pycache-")
    keep = args.keep_dirs
    items = args.tasks * OPERATORS
    scaled_files = {"scaled_audit.py": SCALED_ADAPTER.format(n=args.tasks, run_s=args.run_ms / 1000),
                    "conftest.py": SCALED_CONFTEST}
    scaled_expect = scaled_counts(args.tasks)
    toy = ["--audit-verifier=toy"]
    scaled = ["--audit-verifier=scaled", "--audit-limit", "0"]
    par = ["-n", str(args.workers)]

    samples: dict[str, list[dict[str, Any]]] = {k: [] for k in (
        "toy", "toy_empty", "toy_out", "scaled_1", "scaled_n", "bare_1", "bare_n", "scaled_1_out", "scaled_n_out")}
    try:
        for _ in range(args.warmup):
            pytest_run(base + toy, env, files={}, expect_rc=1, expect=TOY_COUNTS, keep=False)
        for round_ in range(args.repeat):
            samples["toy_empty"].append(pytest_run(base + toy + ["-k", NO_MATCH], env, files={}, expect_rc=5,
                                                   expect={"deselected": 30}, keep=keep))
            samples["toy"].append(pytest_run(base + toy, env, files={}, expect_rc=1, expect=TOY_COUNTS, keep=keep))
            samples["toy_out"].append(pytest_run(base + toy, env, files={}, expect_rc=1, expect=TOY_COUNTS, keep=keep,
                                                 out=True))
            print(f"toy round {round_ + 1}/{args.repeat} done", file=sys.stderr, flush=True)
        for round_ in range(args.scaled_repeat):
            samples["scaled_1"].append(pytest_run(base + scaled, env, files=scaled_files, expect_rc=1,
                                                  expect=scaled_expect, keep=keep))
            samples["scaled_n"].append(pytest_run(base + scaled + par, env, files=scaled_files, expect_rc=1,
                                                  expect=scaled_expect, keep=keep))
            samples["bare_1"].append(timed_run("bare", items, base, env, keep))
            samples["bare_n"].append(timed_run("bare", items, base + par, env, keep))
            print(f"scaled round {round_ + 1}/{args.scaled_repeat} done", file=sys.stderr, flush=True)
        # The audit work (sum of task seconds) comes from one run with --audit-out per configuration.
        samples["scaled_1_out"].append(pytest_run(base + scaled, env, files=scaled_files, expect_rc=1,
                                                  expect=scaled_expect, keep=keep, out=True))
        samples["scaled_n_out"].append(pytest_run(base + scaled + par, env, files=scaled_files, expect_rc=1,
                                                  expect=scaled_expect, keep=keep, out=True))
    except RunFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        if pycache is not None:
            shutil.rmtree(pycache, ignore_errors=True)
    info["loadavg_end"] = list(os.getloadavg())

    # -- 1. toy ------------------------------------------------------------------------------------
    toy_wall, toy_empty = med(samples["toy"], "wall"), med(samples["toy_empty"], "wall")
    toy_work = med(samples["toy_out"], "audit_work")
    print(f"pytest-agentbench verifier audit timing  ({info['date']})")
    print(f"machine: {info['platform']}, {info['cpus']} cores, Python {info['python']}, pytest {info['pytest']}; "
          f"load average at start {info['loadavg_start'][0]:.2f}, at end {info['loadavg_end'][0]:.2f}")
    print(f"every run: `python -m pytest -q -p no:cacheprovider ...` in a fresh temp dir; bytecode {info['bytecode']}")
    if disabled:
        print("disabled (not brought by pytest-agentbench): " + ", ".join(f"{n} ({d})" for n, d in disabled))
    print()
    print(f"1. the toy audit, median of {args.repeat} runs (4 failed, 23 passed, 3 skipped; exit code 1)")
    rows = [("run", "wall s", "cpu s", "pytest's time s"),
            ("pytest --audit-verifier=toy", toy_wall, med(samples["toy"], "cpu"), med(samples["toy"], "session")),
            ("  ... -k <no item>  (fixed cost, no audit)", toy_empty, med(samples["toy_empty"], "cpu"),
             med(samples["toy_empty"], "session")),
            ("  ... --audit-out  (report written)", med(samples["toy_out"], "wall"), med(samples["toy_out"], "cpu"),
             med(samples["toy_out"], "session"))]
    print_table(rows)
    print(f"   audit work (the report's seconds: sum of the 5 tasks' seconds): {toy_work * 1000:.1f} ms")
    walls = ", ".join(f"{s['wall']:.3f}" for s in samples["toy"])
    print(f"   walls of the runs: {walls}")
    ok_toy = toy_wall < TARGET_TOY_S
    print(f"   seed claim \"runs offline in under a second\": whole process {toy_wall:.3f} s -> "
          f"{'PASS' if ok_toy else 'FAIL'}; of which {toy_empty:.3f} s is starting Python, pytest and the plugins "
          f"and collecting; the audit itself {toy_work * 1000:.1f} ms")
    print(f"   reference, for context only: {REFERENCE['command']} took {REFERENCE['wall_s']:.2f} s "
          f"({REFERENCE['note']}; its CLI does not start pytest)")
    print()

    # -- 2. scaled ---------------------------------------------------------------------------------
    print(f"2. scaled synthetic adapter: {args.tasks} tasks x {OPERATORS} operators = {items} items, --audit-limit 0, "
          f"median of {args.scaled_repeat} runs"
          + (f", {args.run_ms:g} ms pause per reference and per delivered run" if args.run_ms else ""))
    print("   (" + ", ".join(f"{v} {k}" for k, v in scaled_expect.items()) + "; exit code 1)")
    figures: dict[str, Any] = {}
    rows = [("configuration", "wall s", "pytest's time s", "audit work s", "items/s (wall)", "items/s (pytest)",
             "ms/item (pytest)")]
    for key, label, out_key in (("scaled_1", "audit, 1 process", "scaled_1_out"),
                                ("scaled_n", f"audit, -n {args.workers}", "scaled_n_out"),
                                ("bare_1", f"bare pytest, {items} trivial items, 1 process", None),
                                ("bare_n", f"bare pytest, {items} trivial items, -n {args.workers}", None)):
        wall, session = med(samples[key], "wall"), med(samples[key], "session")
        work = med(samples[out_key], "audit_work") if out_key else float("nan")
        figures[key] = {"wall_s": wall, "session_s": session, "cpu_s": med(samples[key], "cpu"), "audit_work_s": work,
                        "items_per_s_wall": items / wall, "items_per_s_session": items / session,
                        "ms_per_item_session": session / items * 1000}
        rows.append((label, wall, session, work if out_key else "", f"{items / wall:,.0f}", f"{items / session:,.0f}",
                     f"{session / items * 1000:.3f}"))
    print_table(rows)
    one, par_ = figures["scaled_1"], figures["scaled_n"]
    print(f"   audit work = the --audit-out report's seconds (sum of task seconds, over all workers), "
          f"from one extra run "
          f"each; its report is {samples['scaled_1_out'][0]['report_bytes'] / 1e6:.1f} MB")
    line = f"   speed-up of -n {args.workers} over 1 process, by wall clock: {one['wall_s'] / par_['wall_s']:.2f}x"
    if not args.run_ms:
        line += (f"; an audit item costs {one['ms_per_item_session'] / figures['bare_1']['ms_per_item_session']:.2f}x "
                 "a bare item in pytest's session time (1 process)")
    print(line)
    verdict = {"toy_under_1s": {"value": toy_wall, "target": TARGET_TOY_S, "ok": ok_toy}}

    if args.json:
        data = {
            "machine": info,
            "command": "python -m pytest -q -p no:cacheprovider " + " ".join(base),
            "repeat": args.repeat, "scaled_repeat": args.scaled_repeat, "tasks": args.tasks, "workers": args.workers,
            "run_ms": args.run_ms,
            "disabled_plugins": [{"name": n, "dist": d} for n, d in disabled],
            "toy": {"wall_s": toy_wall, "empty_wall_s": toy_empty, "audit_work_s": toy_work,
                    "cpu_s": med(samples["toy"], "cpu"), "session_s": med(samples["toy"], "session")},
            "scaled": figures,
            "samples": samples,
            "verdict": verdict,
            "reference": REFERENCE,
        }
        Path(args.json).write_text(json.dumps(_finite(data), indent=2, allow_nan=False), encoding="utf-8")
        print(f"\nfigures written to {args.json}")
    if args.check and not ok_toy:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
