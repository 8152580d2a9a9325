#!/usr/bin/env python
"""Harness overhead of pytest-agentbench: mock tasks against bare pytest items.

Times, in fresh temporary directories and in subprocesses (``python -m pytest -q -p
no:cacheprovider ...``), the median wall clock of

* ``pytest --bench=mock --bench-limit N`` for each N in ``--sizes`` (default 5, 50, 500);
* a bare test file with N trivial parametrized items (``def test_x(i): pass``);
* an empty run of each (one item collected, then deselected with ``-k``), which is the fixed cost
  of starting Python, pytest, the plugins and (for mock) the run folder, with no item run.

The per-item overhead is the least-squares slope of wall time over N, taken over the sizes that run
items: it is the marginal cost of one more item, uses every size, and leaves the fixed startup cost
in the intercept (shown next to the empty run as a cross-check). The two-point figure
``(wall(N) - wall(N_min)) / (N - N_min)`` is printed per row as well.

Targets: a mock item costs at most 3x a bare pytest item, and 500 mock tasks finish in under 2 s
of wall clock. Plugins of packages that are neither pytest-agentbench nor one of its (transitive)
dependencies are disabled with ``-p no:NAME`` in every run (e.g. pytest-benchmark, hypothesis), so
the figures measure what a user of this plugin gets, not what else happens to be installed.

    python benchmarks/overhead.py [--repeat 3] [--sizes 5,50,500] [--json PATH] [--check]

Exit status is 0 unless a run fails (or, with ``--check``, a target is missed).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

#: The reference tool's figures. They were measured on another machine and are printed for context
#: only; nothing here compares against them.
REFERENCE = {
    "tool": "openadapt-evals",
    "run": "mock benchmark",
    "note": "measured on another machine, not here",
    "wall_s": {5: 1.08, 50: 3.90, 500: 31.65},
}
TARGET_RATIO = 3.0  # mock per-item overhead <= 3x a bare pytest item
TARGET_WALL_500 = 2.0  # 500 mock tasks in under 2 s wall clock
OUR_DIST = "pytest-agentbench"
NO_MATCH = "agentbench_overhead_no_such_item"

BARE_TEST = """\
import pytest


@pytest.mark.parametrize("i", range({n}))
def test_x(i):
    pass
"""


# -- environment --------------------------------------------------------------------------------
def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_names(dist: str) -> set[str]:
    """Names of ``dist``'s requirements, without the ones behind an extra."""
    try:
        reqs = metadata.requires(dist) or []
    except metadata.PackageNotFoundError:
        return set()
    out = set()
    for req in reqs:
        spec, _, marker = req.partition(";")
        if "extra" in marker:
            continue
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
        if match:
            out.add(_canon(match.group(1)))
    return out


def dependency_closure(root: str) -> set[str]:
    seen, todo = set(), [_canon(root)]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(_requirement_names(name) - seen)
    return seen


def foreign_plugins() -> list[tuple[str, str]]:
    """(entry point name, distribution) of pytest11 plugins that pytest-agentbench does not bring."""
    ours = dependency_closure(OUR_DIST)
    out = []
    for ep in metadata.entry_points(group="pytest11"):
        dist = ep.dist.name if ep.dist is not None else "?"
        if _canon(dist) not in ours:
            out.append((ep.name, dist))
    return sorted(set(out))


def child_env(pycache: Path | None) -> dict[str, str]:
    """The environment of the timed runs: no pytest options from the caller's environment, and
    (with ``pycache``) bytecode cached under a private prefix, as on a developer's machine, even
    where PYTHONDONTWRITEBYTECODE is set; otherwise every run recompiles and re-rewrites (assertion
    rewriting) every plugin module, which is not what users pay."""
    env = dict(os.environ)
    for key in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_XDIST_AUTO_NUM_WORKERS"):
        env.pop(key, None)
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def print_table(rows: list[tuple[Any, ...]]) -> None:
    """A left-aligned first column, right-aligned figures, a rule under the header."""

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return "-" if value != value else f"{value:.3f}"
        return str(value)

    text = [[cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in text) for i in range(len(text[0]))]
    for i, row in enumerate(text):
        print("   " + "  ".join(c.ljust(w) if j == 0 else c.rjust(w)
                                for j, (c, w) in enumerate(zip(row, widths, strict=True))))
        if i == 0:
            print("   " + "  ".join("-" * w for w in widths))


def prepare(keep_plugins: bool, no_bytecode_cache: bool, prefix: str):  # type: ignore[no-untyped-def]
    """What every benchmark script sets up: the plugins to disable, the private bytecode cache, the
    child environment and the machine facts. Returns (disabled, base_args, pycache, env, info)."""
    disabled = [] if keep_plugins else foreign_plugins()
    base_args = [a for name, _ in disabled for a in ("-p", f"no:{name}")]
    pycache = None if no_bytecode_cache else Path(tempfile.mkdtemp(prefix=prefix))
    env = child_env(pycache)
    info = machine()
    info["bytecode"] = ("cached under a private PYTHONPYCACHEPREFIX" if pycache is not None else
                        "as the environment says" + (" (PYTHONDONTWRITEBYTECODE set: recompiled every run)"
                                                     if os.environ.get("PYTHONDONTWRITEBYTECODE") else ""))
    return disabled, base_args, pycache, env, info


def machine() -> dict[str, Any]:
    def version(dist: str) -> str | None:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    return {
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "pytest": version("pytest"),
        "pytest-agentbench": version(OUR_DIST),
        "loadavg_start": list(os.getloadavg()),
    }


# -- one run --------------------------------------------------------------------------------------
class RunFailed(RuntimeError):
    pass


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_run(kind: str, n: int, base_args: list[str], env: dict[str, str], keep: bool,
              results_dir: Path | None = None) -> dict[str, float]:
    """Run one configuration in a fresh temporary directory; return wall, cpu and pytest's own time.

    ``n == 0`` is the empty run: one item is collected and deselected, so nothing runs. Mock runs
    write their run folder inside that directory, or in a fresh directory under ``results_dir``."""
    workdir = Path(tempfile.mkdtemp(prefix=f"agentbench-overhead-{kind}{n}-"))
    resdir = Path(tempfile.mkdtemp(prefix="agentbench-overhead-results-", dir=results_dir)) if results_dir else None
    try:
        (workdir / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # pins the rootdir here
        args = list(base_args)
        if kind == "mock":
            args += ["--bench=mock", f"--bench-limit={max(n, 1)}"]
            if resdir is not None:
                args.append(f"--results-dir={resdir}")
        else:
            (workdir / "test_bare.py").write_text(BARE_TEST.format(n=max(n, 1)), encoding="utf-8")
        if n == 0:
            args += ["-k", NO_MATCH]
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
        cpu0 = _children_cpu()
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        cpu = _children_cpu() - cpu0
        expected_rc, expected = (5, "1 deselected") if n == 0 else (0, f"{n} passed")
        last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
        if proc.returncode != expected_rc or expected not in last:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
            raise RunFailed(f"{' '.join(cmd)} (in {workdir}) exited {proc.returncode}, "
                            f"expected {expected_rc} and {expected!r}:\n{tail}")
        match = re.search(r" in (\d+(?:\.\d+)?)s\b", last)
        return {"wall": wall, "cpu": cpu, "session": float(match.group(1)) if match else float("nan")}
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
            if resdir is not None:
                shutil.rmtree(resdir, ignore_errors=True)


# -- figures --------------------------------------------------------------------------------------
def slope(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least-squares (slope, intercept) of y over x."""
    if len(points) == 1:
        return float("nan"), float("nan")
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return b, my - b * mx


def per_item_estimate(medians: dict[int, float], sizes: list[int]) -> dict[str, float]:
    """Slope over the sizes that run items (seconds per item); with one size, against the empty run."""
    if len(sizes) >= 2:
        b, a = slope([(n, medians[n]) for n in sizes])
        return {"per_item_s": b, "intercept_s": a, "method": "least-squares slope over sizes"}
    n = sizes[0]
    return {"per_item_s": (medians[n] - medians[0]) / n, "intercept_s": medians[0],
            "method": "(wall(N) - wall(empty)) / N"}


def summarise(samples: dict[tuple[str, int], list[dict[str, float]]], sizes: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("mock", "bare"):
        med = {metric: {n: statistics.median(s[metric] for s in samples[(kind, n)]) for n in [0, *sizes]}
               for metric in ("wall", "cpu", "session")}
        fastest = {n: min(s["wall"] for s in samples[(kind, n)]) for n in [0, *sizes]}
        two_point = {}
        base = sizes[0]
        for n in sizes:
            if n == base:
                two_point[n] = (med["wall"][n] - med["wall"][0]) / n  # against the empty run
            else:
                two_point[n] = (med["wall"][n] - med["wall"][base]) / (n - base)
        out[kind] = {
            "median": med,
            "two_point_per_item_s": two_point,
            "wall": per_item_estimate(med["wall"], sizes),
            "cpu": per_item_estimate(med["cpu"], sizes),
            "fastest_wall": fastest,
            "wall_fastest": per_item_estimate(fastest, sizes),
        }
    return out


def ms(seconds: float) -> str:
    return "-" if seconds != seconds else f"{seconds * 1000:.2f}"


def print_report(info: dict[str, Any], figures: dict[str, Any], sizes: list[int], repeat: int,
                 disabled: list[tuple[str, str]]) -> dict[str, Any]:
    mock, bare = figures["mock"], figures["bare"]
    print(f"pytest-agentbench harness overhead  ({info['date']})")
    print(f"machine: {info['platform']}, {info['cpus']} cores, Python {info['python']}, pytest {info['pytest']}; "
          f"load average at start {info['loadavg_start'][0]:.2f}")
    print(f"median of {repeat} runs each, wall clock of `python -m pytest -q -p no:cacheprovider ...` "
          f"in a fresh temp dir"
          f"; bytecode {info['bytecode']}")
    print(f"temp dirs under {tempfile.gettempdir()}; mock run folders {info['results_dir']}")
    if disabled:
        print("disabled (not brought by pytest-agentbench): " + ", ".join(f"{n} ({d})" for n, d in disabled))
    print()
    header = ["N", "mock wall s", "bare wall s", "mock ms/item", "bare ms/item", "ratio", "mock cpu s", "bare cpu s"]
    rows = [header]
    rows.append(["empty", f"{mock['median']['wall'][0]:.3f}", f"{bare['median']['wall'][0]:.3f}", "", "", "",
                 f"{mock['median']['cpu'][0]:.3f}", f"{bare['median']['cpu'][0]:.3f}"])
    for n in sizes:
        if n == sizes[0]:
            mp = bp = float("nan")  # the reference size; its figure against the empty run is in the JSON
        else:
            mp, bp = mock["two_point_per_item_s"][n], bare["two_point_per_item_s"][n]
        ratio = f"{mp / bp:.2f}" if bp > 0 else "-"
        rows.append([str(n), f"{mock['median']['wall'][n]:.3f}", f"{bare['median']['wall'][n]:.3f}",
                     ms(mp), ms(bp), ratio,
                     f"{mock['median']['cpu'][n]:.3f}", f"{bare['median']['cpu'][n]:.3f}"])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for i, row in enumerate(rows):
        print("  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print(f"per-item columns: (wall(N) - wall({sizes[0]})) / (N - {sizes[0]}); "
          "empty = one item collected and deselected (-k), i.e. the fixed startup cost.")
    print()

    mw, bw = mock["wall"], bare["wall"]
    mc, bc = mock["cpu"], bare["cpu"]
    conclusive = mw["per_item_s"] > 0 and bw["per_item_s"] > 0
    ratio = mw["per_item_s"] / bw["per_item_s"] if conclusive else float("nan")
    cpu_ratio = mc["per_item_s"] / bc["per_item_s"] if mc["per_item_s"] > 0 and bc["per_item_s"] > 0 else float("nan")
    print(f"per-item overhead ({mw['method']}):")
    def times(x: float) -> str:
        return "-" if x != x else f"{x:.2f}x"

    print(f"  wall: mock {ms(mw['per_item_s'])} ms/item, bare {ms(bw['per_item_s'])} ms/item, ratio {times(ratio)}")
    print(f"  cpu:  mock {ms(mc['per_item_s'])} ms/item, bare {ms(bc['per_item_s'])} ms/item, ratio {times(cpu_ratio)}"
          "   (user+sys of the pytest process; less sensitive to load from other processes)")
    mf, bf = mock["wall_fastest"], bare["wall_fastest"]
    fast_ratio = mf["per_item_s"] / bf["per_item_s"] if mf["per_item_s"] > 0 and bf["per_item_s"] > 0 else float("nan")
    print(f"  wall, fastest of the {repeat} runs: mock {ms(mf['per_item_s'])} ms/item, "
          f"bare {ms(bf['per_item_s'])} ms/item, "
          f"ratio {times(fast_ratio)}")
    print(f"  fixed cost (fit intercept / empty run): mock {mw['intercept_s']:.3f} / "
          f"{mock['median']['wall'][0]:.3f} s, "
          f"bare {bw['intercept_s']:.3f} / {bare['median']['wall'][0]:.3f} s")
    print()

    verdict: dict[str, Any] = {}
    ok_ratio = (ratio <= TARGET_RATIO) if conclusive else None
    verdict["per_item_ratio"] = {"value": ratio if conclusive else None, "target": TARGET_RATIO, "ok": ok_ratio}
    print("verdict:")
    if conclusive:
        print(f"  per-item overhead of a mock task <= {TARGET_RATIO:g}x a bare pytest item: "
              f"{ratio:.2f}x -> {'PASS' if ok_ratio else 'FAIL'}")
    else:
        print(f"  per-item overhead of a mock task <= {TARGET_RATIO:g}x a bare pytest item: INCONCLUSIVE "
              "(a per-item estimate is not positive: noise exceeds the signal; use larger --sizes or --repeat)")
    if 500 in sizes:
        wall500 = mock["median"]["wall"][500]
        ok_wall = wall500 < TARGET_WALL_500
        verdict["wall_500"] = {"value": wall500, "target": TARGET_WALL_500, "ok": ok_wall}
        print(f"  500 mock tasks under {TARGET_WALL_500:g} s wall: {wall500:.3f} s -> {'PASS' if ok_wall else 'FAIL'} "
              f"(of which {mock['median']['wall'][0]:.3f} s is the empty run's fixed cost; "
              f"pytest's own session time {mock['median']['session'][500]:.2f} s)")
    else:
        verdict["wall_500"] = None
        print(f"  500 mock tasks under {TARGET_WALL_500:g} s wall: not measured (500 is not in --sizes)")
    print()

    ref = REFERENCE["wall_s"]
    ref_sizes = sorted(ref)
    b, _ = slope([(n, ref[n]) for n in ref_sizes])
    print(f"reference, for context only: {REFERENCE['tool']} {REFERENCE['run']} ({REFERENCE['note']}):")
    print("  " + ", ".join(f"{ref[n]:.2f} s for {n}" for n in ref_sizes)
          + f"; least-squares slope {b * 1000:.1f} ms/item")
    return verdict


def _finite(value: Any) -> Any:
    """NaN and infinities become null, so the JSON is standard."""
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per configuration; the median is reported (default 3)")
    parser.add_argument("--sizes", default="5,50,500", help="comma-separated task counts (default 5,50,500)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first, to warm caches (default 1)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures and raw samples as JSON")
    parser.add_argument("--keep-plugins", action="store_true", help="do not disable plugins that are not ours")
    parser.add_argument("--keep-dirs", action="store_true", help="keep the temporary directories")
    parser.add_argument("--results-dir", metavar="DIR", type=Path,
                        help="write the mock runs' run folders under DIR (e.g. /dev/shm, to take the disk out of "
                             "the figures); default: inside each run's temp dir")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="keep the caller's bytecode settings (by default .pyc files are cached under a private "
                             "PYTHONPYCACHEPREFIX, even where PYTHONDONTWRITEBYTECODE is set)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    try:
        sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    except ValueError:
        parser.error(f"--sizes must be comma-separated whole numbers, got {args.sizes!r}")
    if not sizes or sizes[0] < 1:
        parser.error("--sizes must list whole numbers >= 1")
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")

    disabled, base_args, pycache, env, info = prepare(args.keep_plugins, args.no_bytecode_cache,
                                                      "agentbench-overhead-pycache-")
    info["results_dir"] = str(args.results_dir) if args.results_dir else "inside each run's temp dir"
    configs = [(kind, n) for n in [0, *sizes] for kind in ("mock", "bare")]
    samples: dict[tuple[str, int], list[dict[str, float]]] = {c: [] for c in configs}
    try:
        for _ in range(args.warmup):
            for kind, n in [(k, n) for n in (0, sizes[0]) for k in ("mock", "bare")]:
                timed_run(kind, n, base_args, env, False, args.results_dir)
        # Interleave the configurations, so a burst of load elsewhere hits them all alike.
        for round_ in range(args.repeat):
            for kind, n in configs:
                samples[(kind, n)].append(timed_run(kind, n, base_args, env, args.keep_dirs, args.results_dir))
            print(f"round {round_ + 1}/{args.repeat} done", file=sys.stderr)
    except RunFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        if pycache is not None:
            shutil.rmtree(pycache, ignore_errors=True)
    info["loadavg_end"] = list(os.getloadavg())
    figures = summarise(samples, sizes)
    verdict = print_report(info, figures, sizes, args.repeat, disabled)

    if args.json:
        data = {
            "machine": info,
            "command": "python -m pytest -q -p no:cacheprovider " + " ".join(base_args),
            "repeat": args.repeat,
            "sizes": sizes,
            "disabled_plugins": [{"name": n, "dist": d} for n, d in disabled],
            "figures": {k: {**v, "median": {m: {str(n): x for n, x in d.items()} for m, d in v["median"].items()},
                            "two_point_per_item_s": {str(n): x for n, x in v["two_point_per_item_s"].items()},
                            "fastest_wall": {str(n): x for n, x in v["fastest_wall"].items()}}
                        for k, v in figures.items()},
            "samples": {f"{kind}:{n}": s for (kind, n), s in samples.items()},
            "verdict": verdict,
            "reference": {**REFERENCE, "wall_s": {str(n): x for n, x in REFERENCE["wall_s"].items()}},
        }
        Path(args.json).write_text(json.dumps(_finite(data), indent=2, allow_nan=False), encoding="utf-8")
        print(f"\nfigures written to {args.json}")
    if args.check and not all(v["ok"] is True for v in verdict.values() if v is not None):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
