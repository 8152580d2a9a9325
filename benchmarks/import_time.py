#!/usr/bin/env python
"""What pytest-agentbench costs a plain pytest run that does not use it.

An installed pytest11 plugin loads in every pytest run of every project, so the plugin must stay
cheap when no benchmark is requested. This script measures, and asserts nothing:

1. the median wall clock of ``python -m pytest --co -q`` on a tiny project, with the plugin
   enabled and with ``-p no:agentbench`` (runs interleaved, each in a fresh temp dir);
2. ``python -X importtime -c "import pytest_agentbench.plugin"``: the cumulative import time of
   the package and its plugin module, cold (pytest not yet imported) and warm (after ``import
   pytest``, which is what a pytest run pays);
3. which modules the plugin brings in, and whether pydantic, httpx or PIL are imported at startup,
   and if so by whom: pytest alone, the other installed plugins, or this plugin.

Plugins of packages that pytest-agentbench does not depend on (e.g. pytest-benchmark, hypothesis)
are disabled in the timed runs (1) so their noise does not drown the figure; ``--keep-plugins``
keeps them. Step 3 always looks at the full installed set.

    python benchmarks/import_time.py [--repeat 7] [--json PATH]
"""

from __future__ import annotations

import argparse
import datetime as _dt
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
from importlib import metadata
from pathlib import Path
from typing import Any

HEAVY = ("pydantic", "httpx", "PIL")
TINY_TESTS = """\
def test_one():
    assert 1 + 1 == 2


def test_two():
    assert "a" in "abc"


class TestThree:
    def test_three(self):
        assert [1, 2][0] == 1
"""
#: Written into a separate copy of the tiny project: records sys.modules once plugins and
#: conftests are loaded and collection is over.
PROBE_CONFTEST = """\
import json, os, sys


def pytest_collection_finish(session):
    with open(os.environ["AGENTBENCH_MODULE_PROBE"], "w") as fh:
        json.dump(sorted(sys.modules), fh)
"""


# -- helpers: the plugin-exclusion rules are overhead.py's ---------------------------------------
sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead import foreign_plugins  # noqa: E402 - a sibling script, not a package

#: Set by main: a private PYTHONPYCACHEPREFIX, so runs reuse bytecode as on a developer's machine
#: even where PYTHONDONTWRITEBYTECODE is set (else each run recompiles every plugin module).
PYCACHE: Path | None = None


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for key in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        env.pop(key, None)
    if PYCACHE is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    env.update(extra)
    return env


def tiny_project(probe: bool = False) -> Path:
    path = Path(tempfile.mkdtemp(prefix="agentbench-import-"))
    (path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (path / "test_tiny.py").write_text(TINY_TESTS, encoding="utf-8")
    if probe:
        (path / "conftest.py").write_text(PROBE_CONFTEST, encoding="utf-8")
    return path


def run(cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd, env=env or child_env(), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
        raise SystemExit(f"error: {' '.join(cmd)} exited {proc.returncode}:\n{tail}")
    return proc


# -- 1. pytest --co on a tiny project -------------------------------------------------------------
def time_collect_only(repeat: int, base_args: list[str]) -> dict[str, Any]:
    variants = {"plugin enabled": [], "-p no:agentbench": ["-p", "no:agentbench"]}
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for round_ in range(repeat + 1):  # round 0 warms the caches and is not counted
        for name, extra in variants.items():
            workdir = tiny_project()
            try:
                cmd = [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", *base_args, *extra]
                t0 = time.perf_counter()
                proc = run(cmd, cwd=workdir)
                wall = time.perf_counter() - t0
                if "3 tests collected" not in proc.stdout:
                    raise SystemExit(f"error: unexpected output of {' '.join(cmd)}:\n{proc.stdout[-2000:]}")
                if round_:
                    samples[name].append(wall)
            finally:
                shutil.rmtree(workdir, ignore_errors=True)
    medians = {name: statistics.median(s) for name, s in samples.items()}
    return {"samples": samples, "median": medians,
            "plugin_cost_s": medians["plugin enabled"] - medians["-p no:agentbench"]}


# -- 2. -X importtime ---------------------------------------------------------------------------
_LINE = re.compile(r"import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)")


def importtime(code: str) -> dict[str, Any]:
    """Cumulative microseconds of the root-level pytest_agentbench* imports, and what they pulled in."""
    proc = run([sys.executable, "-X", "importtime", "-c", code])
    roots: dict[str, int] = {}
    nested: list[tuple[str, int, int]] = []  # (module, self us, depth) imported under our roots
    pending: list[tuple[str, int, int]] = []
    for line in proc.stderr.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        self_us, cumulative, indent, module = int(match[1]), int(match[2]), len(match[3]), match[4]
        depth = (indent - 1) // 2
        if depth > 0:
            pending.append((module, self_us, depth))
            continue
        # importtime prints a module after the modules it imported: a root line closes its group.
        if module.startswith("pytest_agentbench"):
            roots[module] = cumulative
            nested.extend(pending)
        pending = []
    return {"roots_us": roots, "total_us": sum(roots.values()), "nested": nested}


def import_figures(repeat: int) -> dict[str, Any]:
    codes = {
        "cold": "import pytest_agentbench.plugin",
        "warm": "import pytest; import pytest_agentbench.plugin",
    }
    out: dict[str, Any] = {}
    for name, code in codes.items():
        runs = [importtime(code) for _ in range(repeat + 1)][1:]
        out[name] = {
            "code": code,
            "total_ms_samples": [r["total_us"] / 1000 for r in runs],
            "total_ms": statistics.median(r["total_us"] / 1000 for r in runs),
            "roots_us": runs[-1]["roots_us"],
            "nested": runs[-1]["nested"],
        }
    return out


# -- 3. modules ---------------------------------------------------------------------------------
def modules_after_import() -> dict[str, Any]:
    brief = run([sys.executable, "-c", ("import sys, pytest_agentbench.plugin; "
                                        f"print([m for m in {HEAVY!r} if m in sys.modules])")]).stdout.strip()
    pytest_only = run([sys.executable, "-c", f"import sys, pytest; print([m for m in {HEAVY!r} if m in sys.modules])"]
                      ).stdout.strip()
    added = run([sys.executable, "-c", ("import sys, pytest; before = set(sys.modules); "
                                        "import pytest_agentbench.plugin; "
                                        "print(' '.join(sorted(set(sys.modules) - before)))")]).stdout.split()
    return {"heavy_after_plugin_import": brief, "heavy_after_pytest_import": pytest_only, "added_by_plugin": added}


def modules_in_pytest_run() -> dict[str, list[str]]:
    """sys.modules at the end of collection in a --co run, for: pytest alone, all installed
    plugins but ours, all installed plugins."""
    variants = {
        "pytest alone (PYTEST_DISABLE_PLUGIN_AUTOLOAD=1)": ({"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}, []),
        "all installed plugins, -p no:agentbench": ({}, ["-p", "no:agentbench"]),
        "all installed plugins (agentbench inert)": ({}, []),
    }
    out = {}
    for name, (env_extra, args) in variants.items():
        workdir = tiny_project(probe=True)
        try:
            probe = workdir / "modules.json"
            run([sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", *args], cwd=workdir,
                env=child_env(AGENTBENCH_MODULE_PROBE=str(probe), **env_extra))
            out[name] = json.loads(probe.read_text(encoding="utf-8"))
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    return out


def _top(module: str) -> str:
    return module.split(".", 1)[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs per variant; medians are reported (default 7)")
    parser.add_argument("--keep-plugins", action="store_true", help="do not disable plugins that are not ours in (1)")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="keep the caller's bytecode settings (default: cache .pyc under a private prefix)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")
    global PYCACHE
    if not args.no_bytecode_cache:
        PYCACHE = Path(tempfile.mkdtemp(prefix="agentbench-import-pycache-"))
    try:
        return measure(args)
    finally:
        if PYCACHE is not None:
            shutil.rmtree(PYCACHE, ignore_errors=True)


def measure(args: argparse.Namespace) -> int:

    disabled = [] if args.keep_plugins else foreign_plugins()
    base_args = [a for name, _ in disabled for a in ("-p", f"no:{name}")]
    print(f"pytest-agentbench import cost  ({_dt.datetime.now().astimezone().isoformat(timespec='seconds')})")
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"pytest {metadata.version('pytest')}; load average {os.getloadavg()[0]:.2f}")
    print("bytecode: " + ("cached under a private PYTHONPYCACHEPREFIX" if PYCACHE is not None else
                          "as the environment says"))
    print()

    co = time_collect_only(args.repeat, base_args)
    print(f"1. `python -m pytest --co -q -p no:cacheprovider` on a 3-test project, median of {args.repeat}:")
    if disabled:
        print("   (with " + " ".join(base_args) + ": plugins pytest-agentbench does not bring)")
    for name, value in co["median"].items():
        spread = ", ".join(f"{s:.3f}" for s in co["samples"][name])
        print(f"   {name:18s} {value:.3f} s   [{spread}]")
    print(f"   plugin cost       {co['plugin_cost_s'] * 1000:+.1f} ms  (difference of medians; within noise if small)")
    print()

    imp = import_figures(args.repeat)
    print(f"2. `python -X importtime -c ...`, cumulative time of the pytest_agentbench imports, "
          f"median of {args.repeat}:")
    for name, fig in imp.items():
        roots = ", ".join(f"{m} {us / 1000:.1f} ms" for m, us in fig["roots_us"].items())
        print(f"   {name:5s} {fig['total_ms']:7.1f} ms   `{fig['code']}`  ({roots})")
    print("   (cold includes importing pytest itself, which the plugin module imports; warm is what a pytest run pays)")
    warm_nested = imp["warm"]["nested"]
    if warm_nested:
        print("   imported on the way (warm): " + ", ".join(m for m, _, d in warm_nested if d == 1))
    print()

    mods = modules_after_import()
    print("3. modules")
    print(f"   `import sys, pytest_agentbench.plugin` -> heavy modules loaded: {mods['heavy_after_plugin_import']}")
    print(f"   `import sys, pytest`                   -> heavy modules loaded: {mods['heavy_after_pytest_import']}")
    print(f"   modules the plugin import adds to an imported pytest ({len(mods['added_by_plugin'])}): "
          + " ".join(mods["added_by_plugin"]))
    run_mods = modules_in_pytest_run()
    names = list(run_mods)
    print("   in a `pytest --co` run (sys.modules at the end of collection):")
    for name in names:
        present = sorted({_top(m) for m in run_mods[name]} & set(HEAVY))
        ours = sorted(m for m in run_mods[name] if _top(m) == "pytest_agentbench")
        print(f"     {name:48s} heavy: {present or 'none'}; pytest_agentbench modules: {ours or 'none'}")
    without, with_ = set(run_mods[names[1]]), set(run_mods[names[2]])
    pytest_alone = {_top(m) for m in run_mods[names[0]]}
    added = sorted(with_ - without)
    heavy_ours = sorted({_top(m) for m in added} & set(HEAVY))
    heavy_others = sorted(({_top(m) for m in without} & set(HEAVY)) - pytest_alone)
    heavy_pytest = sorted(pytest_alone & set(HEAVY))
    print(f"   modules the inert plugin adds to that run ({len(added)}): {' '.join(added) or 'none'}")
    print(f"   heavy modules attributable to: pytest itself {heavy_pytest or 'none'}; "
          f"other installed plugins {heavy_others or 'none'}; pytest-agentbench {heavy_ours or 'none'}")

    if args.json:
        data = {
            "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version(),
                        "pytest": metadata.version("pytest")},
            "disabled_plugins": [{"name": n, "dist": d} for n, d in disabled],
            "collect_only": co,
            "importtime": imp,
            "modules": {**mods, "added_in_pytest_run": added, "heavy_by_pytest": heavy_pytest,
                        "heavy_by_other_plugins": heavy_others, "heavy_by_agentbench": heavy_ours},
        }
        Path(args.json).write_text(json.dumps(data, indent=2), encoding="utf-8")
        print(f"\nfigures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
