#!/usr/bin/env python
"""The plugin's cost against bare pytest, row by row, as ratios measured in one run.

Each row times the plugin doing some work (``ours``) and a reference doing the same amount of
pytest work without it (``ref``), as whole processes, alternated ``ours, ref, ours, ref, ...``
after one untimed warm-up pair, so a burst of load elsewhere hits both sides alike. The figure
quoted is the **median of the paired ratios** ours/ref (wall clock; peak RSS for the memory row),
next to both medians, an interval for that median and the goal.

The interval is the distribution-free one of ``stats.median_interval`` (order statistics of the
paired ratios), printed with how sure it is: 94% for
five pairs, 96% for the twenty of the inert rows. The verdict is ``met`` when all of the interval
meets the goal, ``MISSED`` when none of it does, and ``unsure`` when the goal lies inside it or the
interval is less than 90% sure (fewer than five pairs: ``--repeat`` below 5, below 2 for the
inert rows): the runs cannot tell, and a median alone would pass or fail the row by the luck of
the hour.

Rows (``--rows`` picks some; all by default):

========== ============================================================= ==================
row        ours / reference                                              goal
========== ============================================================= ==================
item       per mock item: (wall(2000) - wall(5)) / 1995, against the     <= 2.0x
           same slope of bare parametrized items
mock500    ``--bench=mock --bench-limit 500``, whole process, against    <= 1.64x
           500 bare items (the issue's "< 1.0 s", see below)
rss        peak RSS of 2,000 mock tasks against 2,000 bare items          <= 1.3x
collect    ``--collect-only`` of 2,000 mock tasks against 2,000 bare      <= 1.2x
waa        ``--collect-only`` of the 154 WAA tasks in tests/data/waa      <= 1.2x
           against 154 bare items
compare    peak RSS of 100 mock tasks ``--bench-compare`` a finished      <= 1.15x
           20,000-task run, against the same 100 tasks alone
resume     peak RSS of ``--bench-resume`` of a finished 20,000-task       <= 1.3x
           run (nothing left to play), against 20,000 bare items
audit      the scaled audit adapter of benchmarks/audit.py, 200 tasks     <= 1.2x
           (1,200 items), against 1,200 bare items with the same
           failed/passed/skipped counts
extradup   ``pytest --bench=extradup`` against the reference tool's       <= 1.0x
           ``python -m openadapt_evals.extradup kill-scan`` (needs
           ``--reference-python`` with openadapt-evals installed); pytest
           with this plugin only, both with bytecode (see row_extradup)
trajectory 1,000 trajectory cases against 1,000 bare items failing in     <= 1.05x
           the same proportion
opencomp   ``--collect-only`` of a whole OpenComputer checkout            <= 2.39x
           ($AGENTBENCH_OPENCOMPUTER_UPSTREAM) against 900 bare items
           (the issue's "< 1.0 s", see below)
inert      a 5-item bare file with the plugin installed but not asked     <= 1.03x
           for, against ``-p no:agentbench``
help-same  ``pytest --help`` against ``-p no:agentbench`` with a plugin      <= 1.03x
           that registers the same options, ini keys and help texts and
           nothing else (the same output, checked): the plugin's cost at
           ``--help`` beyond printing its own table
help       ``pytest --help`` against ``-p no:agentbench --help``, for       (printed only)
           the record: the reference prints 23 KB less, and registering
           and formatting the option table alone (95 options, 32 hidden
           old spellings, 86 ini keys) is more than 3% of it
========== ============================================================= ==================

Two goals of the issue were given in seconds on the machine its figures come from: 500 mock
tasks in under 1.0 s, a 900-task OpenComputer checkout collected in under 1.0 s. Seconds measure
the machine as much as the plugin (bare pytest alone took from 0.69 s to 1.64 s for 500 items
here, depending on the hour), so both rows are ratios to bare pytest doing the same number of items
in the same run, with the goal the seconds stood for on that machine. Its speed comes from two of
its bare figures and their instruction counts (``valgrind --tool=callgrind``, the same flags as
here): a bare item cost 0.51 ms and 2.53M instructions (4.96G per second); ``--collect-only`` of
2,000 bare items took 0.424 s and 2,461M instructions (5.80G per second). At the slower of the two,
which gives the stricter goal, 500 bare items (3,021M instructions) took 0.609 s there, so 1.0 s is
1.64x of them; ``--collect-only`` of 900 bare items (2,072M) took 0.418 s, so 1.0 s is 2.39x. Our
side's seconds are still printed.

Both sides run ``python -m pytest -q`` in fresh temporary directories holding an empty
``pytest.ini`` (so the rootdir is there), with the same noise plugins disabled. Mock runs keep
their default screenshot mode (only on failure; the mock agent passes, so neither side writes a
screenshot) and write their whole run folder. Bytecode is kept, as on an installed machine: the
warm-up pair compiles into a cache of the run's own, even under ``PYTHONDONTWRITEBYTECODE``. The
load average before and after is printed.

    python benchmarks/goals.py [--repeat 5] [--rows item,collect] [--reference-python PY] [--json PATH] [--check]

With ``--instructions`` each side runs once more under ``valgrind --tool=callgrind`` after the
timed runs, and the table gains the ratio of user-space instructions (the same slope for the item
row). Instruction counts repeat to within a fraction of a percent whatever else the machine does,
where wall times here move by a tenth; they leave out what the kernel does (creating files,
writing the pipe), which the wall-clock ratio includes, and they weigh native code (pydantic's
core, the JSON encoder) more than its time, so wall clock decides, except on the inert rows
(inert, help-same), where the instruction ratio gives the verdict (marked ``(instr)``): their
goal of 3% is narrower than the spread of wall times here (about 6% over twenty pairs; help read
1.00x in wall clock and 1.041x in instructions in one run), and they write no files and run no
native code of note, so their instructions follow their time.
Slow: a 2,000-item run takes a minute.

Exit status 0 unless a run ends other than expected or, with ``--check``, a row is not ``met``
(``unsure`` counts as not met).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_agentbench.stats import median_interval

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

NOISE = ["-p", "no:randomly", "-p", "no:benchmark", "-p", "no:hypothesispytest", "-p", "no:cacheprovider",
         "-p", "no:sugar", "-p", "no:allure_pytest", "-p", "no:json-report", "-p", "no:timeout", "-p", "no:repeat"]

BARE = """\
import pytest


@pytest.mark.parametrize("i", range({n}))
def test_x(i):
    assert i >= {failing}
"""


class RunFailed(RuntimeError):
    pass


@dataclass
class Side:
    """One command of a row: argv after ``python -m pytest -q``, files to write, what it must end with."""

    args: list[str]
    files: dict[str, str] = field(default_factory=dict)
    expect: str = ""  # a regex the last line of output must match
    rc: tuple[int, ...] = (0,)
    argv: list[str] | None = None  # a whole command instead of pytest
    env: dict[str, str | None] = field(default_factory=dict)  # variables set (None: removed) for this side


@dataclass
class Row:
    name: str
    what: str
    goal: float
    kind: str  # "ratio" (ours / ref <= goal), "slope" (per item), "rss" (peak RSS ratio)
    sides: Callable[[], tuple[Side, Side] | tuple[Side, Side, Side, Side]]
    skip: str = ""
    #: Pairs run, as a multiple of --repeat: the inert rows look for a few milliseconds in a third
    #: of a second, where five pairs cannot tell a difference from noise; their runs are cheap. The
    #: audit row's pairs spread over 1.02x-1.28x around a median of 1.13x-1.19x (goal 1.2x): five
    #: pairs left it unsure, fifteen told (1.04x-1.20x).
    runs: int = 1
    #: With ``--instructions``, the instruction ratio gives the verdict, not the wall-clock interval:
    #: for rows whose goal is narrower than the wall-clock noise and that write no files and run no
    #: native code of note, so that their instruction ratio follows their time (the inert rows).
    #: Elsewhere it does not: the audit row's read 1.11x where its CPU time read 1.24x-1.34x.
    decided_by_count: bool = False
    #: Printed for the record, judged by no goal (``--check`` ignores it): see the help row.
    informational: bool = False


def bare(n: int, failing: int = 0) -> dict[str, str]:
    return {"test_bare.py": BARE.format(n=n, failing=failing)}


def run(side: Side, env: dict[str, str], *, count: bool = False) -> dict[str, float]:
    """One whole process in a fresh directory: wall seconds, cpu seconds and peak RSS (MiB); with
    ``count``, under callgrind, and its user-space instruction count too."""
    workdir = Path(tempfile.mkdtemp(prefix="agentbench-goals-"))
    try:
        (workdir / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        for name, text in side.files.items():
            (workdir / name).write_text(text, encoding="utf-8")
        cmd = side.argv or [sys.executable, "-m", "pytest", "-q", *NOISE, *side.args]
        log = workdir / ".valgrind"
        if count:
            cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", f"--log-file={log}", *cmd]
        out_path = workdir / ".out"
        with open(out_path, "wb") as out:
            t0 = time.perf_counter()
            if side.env:
                env = {k: v for k, v in {**env, **side.env}.items() if v is not None}
            proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT)
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        text = out_path.read_text(encoding="utf-8", errors="replace").strip()
        last = text.splitlines()[-1] if text else ""
        if proc.returncode not in side.rc or (side.expect and not re.search(side.expect, last)):
            tail = "\n".join(text.splitlines()[-20:])
            raise RunFailed(f"{' '.join(cmd)} exited {proc.returncode}, expected {side.rc} and "
                            f"/{side.expect}/:\n{tail}")
        out = {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mib": usage.ru_maxrss / 1024}
        if count:
            found = re.search(r"Collected : (\d+)", log.read_text(encoding="utf-8", errors="replace"))
            if found is None:
                raise RunFailed(f"no instruction count in {log.name}: {log.read_text()[-500:]}")
            out["instructions"] = float(found.group(1))
        return out
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


# -- rows ----------------------------------------------------------------------------------------
def mock(n: int, *extra: str) -> Side:
    return Side(["--bench=mock", f"--bench-limit={n}", *extra], expect=rf"\b{n} passed")


def row_item() -> tuple[Side, Side, Side, Side]:
    return mock(2000), Side([], bare(2000), r"\b2000 passed"), mock(5), Side([], bare(5), r"\b5 passed")


def row_rss() -> tuple[Side, Side]:
    return mock(2000), Side([], bare(2000), r"\b2000 passed")


_BIG_RUN: list[Path] = []
BIG_TASKS = 20000


def big_run() -> Path:
    """A finished run folder of 20,000 mock tasks, made once per invocation (about a minute) and
    removed at exit: what the compare and resume rows read."""
    if not _BIG_RUN:
        folder = Path(tempfile.mkdtemp(prefix="agentbench-goals-big-"))
        atexit.register(shutil.rmtree, folder, True)
        (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", *NOISE, "--bench=mock",
                               f"--bench-limit={BIG_TASKS}", "--bench-run-name=big", "--results-dir", str(folder)],
                              cwd=folder, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RunFailed(f"the {BIG_TASKS}-task run failed:\n{done.stdout[-2000:]}")
        _BIG_RUN.append(folder / "big")
    return _BIG_RUN[0]


def row_compare() -> tuple[Side, Side]:
    """100 mock tasks compared against a finished 20,000-task run, against the same 100 alone."""
    return mock(100, f"--bench-compare={big_run()}"), mock(100)


def row_resume() -> tuple[Side, Side]:
    """Resuming a finished 20,000-task run (nothing left to play: every item reported from its
    record), against 20,000 bare items."""
    ours = Side(["--bench=mock", f"--bench-limit={BIG_TASKS}", f"--bench-resume={big_run()}"],
                expect=rf"\b{BIG_TASKS} passed")
    return ours, Side([], bare(BIG_TASKS), rf"\b{BIG_TASKS} passed")


def row_mock500() -> tuple[Side, Side]:
    return mock(500), Side([], bare(500), r"\b500 passed")


def row_collect() -> tuple[Side, Side]:
    return (Side(["--bench=mock", "--bench-limit=2000", "--collect-only"], expect=r"2000 tests? collected"),
            Side(["--collect-only"], bare(2000), r"2000 tests? collected"))


def waa_examples() -> Path:
    return REPO / "tests" / "data" / "waa"


def row_waa() -> tuple[Side, Side]:
    n = sum(1 for _ in (waa_examples() / "examples").glob("*/*.json"))
    return (Side(["--bench=waa", f"--waa-examples={waa_examples()}", "--collect-only"],
                 expect=rf"{n} tests? collected"),
            Side(["--collect-only"], bare(n), rf"{n} tests? collected"))


def row_audit() -> tuple[Side, Side]:
    import audit

    tasks = 200
    counts = audit.scaled_counts(tasks)
    files = {"scaled_audit.py": audit.SCALED_ADAPTER.format(n=tasks, run_s=0.0), "conftest.py": audit.SCALED_CONFTEST}
    items = sum(counts.values())
    # The bare side fails, passes and skips as many items as the audit does.
    bare_text = (f"import pytest\n\n\n@pytest.mark.parametrize('i', range({items}))\ndef test_x(i):\n"
                 f"    if i < {counts.get('skipped', 0)}:\n        pytest.skip('no')\n"
                 f"    assert i >= {counts.get('skipped', 0) + counts.get('failed', 0)}\n")
    expect = r"\d+ failed"
    return (Side(["--audit-verifier=scaled", "--audit-limit", "0"], files, expect, rc=(1,)),
            Side([], {"test_bare.py": bare_text}, expect, rc=(1,)))


def row_extradup(reference: str | None) -> tuple[Side, Side]:
    """The same work on both sides: the 7 conditions x 3 trials scored by two rewards (a screen-only
    one and one that reads the record back), the same figures printed, no file left behind (kill-scan
    without --json writes none; a run of suite benchmarks alone writes no run folder).

    What the reference does not do is left out of ours: pytest runs with its own plugins, this one
    and the plugins of its core dependencies (xdist, pytest-html and pytest-metadata, which every
    install has), not every other pytest plugin installed here (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``;
    bare pytest with all of those, collecting nothing, costs as much as the whole reference run).
    """
    core = ["-p", "xdist.plugin", "-p", "pytest_html.plugin", "-p", "pytest_metadata.plugin"]
    ours = Side([*core, "-p", "pytest_agentbench.plugin", "--bench=extradup"],
                expect=r"\b24 passed, 3 skipped, 15 xfailed", env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    ref_cmd = [reference or sys.executable, "-m", "openadapt_evals.extradup", "kill-scan"]
    return ours, Side([], argv=ref_cmd, expect=r"\| oracle_outage \| PASS \| certified_sor \|.* \| 3 \|")


def row_trajectory() -> tuple[Side, Side]:
    import trajectory_items

    folder = Path(tempfile.mkdtemp(prefix="agentbench-goals-cases-"))
    atexit.register(shutil.rmtree, folder, True)
    expected = trajectory_items.write_cases(folder / "cases", 1000)
    failing = expected.get("failed", 0)
    return (Side([str(folder / "cases")], expect=rf"\b{failing} failed", rc=(0, 1)),
            Side([], bare(1000, failing), rf"\b{failing} failed", rc=(0, 1)))


def row_opencomputer() -> tuple[Side, Side]:
    checkout = os.environ.get("AGENTBENCH_OPENCOMPUTER_UPSTREAM", "")
    return (Side(["--bench=opencomputer", f"--opencomputer-tasks={checkout}", "--collect-only"],
                 expect=r"\d+ tests? collected"),
            Side(["--collect-only"], bare(900), r"900 tests? collected"))


def row_inert() -> tuple[Side, Side]:
    return Side([], bare(5), r"\b5 passed"), Side(["-p", "no:agentbench"], bare(5), r"\b5 passed")


def row_help() -> tuple[Side, Side]:
    return Side(["--help"]), Side(["-p", "no:agentbench", "--help"])


def help_table_module() -> str:
    """A pytest plugin that registers exactly the options and ini keys of ours, with the same help
    texts, groups, metavars and hidden old spellings, and does nothing else: the reference side of
    the ``help-same`` row, whose ``--help`` prints the same text as ours."""
    from pytest_agentbench.plugin import options

    lines = ["import argparse", "", "", "def pytest_addoption(parser):"]
    groups: dict[str, str] = {}  # each group looked up once, as ours does
    for opt in options.OPTIONS:
        kwargs = {k: v for k, v in options._argparse_kwargs(opt).items() if k != "type"}  # no value is parsed
        if opt.group not in groups:
            groups[opt.group] = name = f"group{len(groups)}"
            lines.append(f"    {name} = parser.getgroup({opt.group!r}, {options.GROUPS[opt.group]!r})")
        group = groups[opt.group]
        lines.append(f"    {group}.addoption({opt.flag!r}, help={opt.help!r}, **{kwargs!r})")
        lines += [f"    {group}.addoption({old!r}, help=argparse.SUPPRESS, **{kwargs!r})" for old in opt.old]
        kind = options._ini_type(opt)
        lines.append(f"    parser.addini({opt.ini!r}, {'as ' + opt.flag!r}, type={kind!r}, "
                     f"default={options._ini_default(kind)!r})")
    return "\n".join(lines) + "\n"


def row_help_same() -> tuple[Side, Side]:
    """``pytest --help`` against pytest printing the same help from a plugin that only registers
    the same table (``help_table_module``): what the plugin costs at ``--help`` beyond the text it
    must show. The two outputs are compared once here, line by line (a plugin named by ``-p`` loads
    earlier, so its groups come earlier in the text), and the row fails if they ever differ."""
    folder = Path(tempfile.mkdtemp(prefix="agentbench-goals-help-"))
    atexit.register(shutil.rmtree, folder, True)
    (folder / "agentbench_help_table.py").write_text(help_table_module(), encoding="utf-8")
    env = {"PYTHONPATH": os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)}
    ours = Side(["--help"])
    ref = Side(["-p", "no:agentbench", "-p", "agentbench_help_table", "--help"], env=env)
    texts = []
    for side in (ours, ref):
        out = subprocess.run([sys.executable, "-m", "pytest", "-q", *NOISE, *side.args], cwd=folder,
                             capture_output=True, text=True, env={**os.environ, **(side.env or {})}, check=False)
        texts.append(out.stdout)
    if sorted(texts[0].splitlines()) != sorted(texts[1].splitlines()):
        raise RunFailed("help-same: the reference's --help differs from ours; help_table_module is out of date")
    return ours, ref


def rows(reference: str | None) -> list[Row]:
    oc = os.environ.get("AGENTBENCH_OPENCOMPUTER_UPSTREAM", "")
    ref_ok = subprocess.run([reference or sys.executable, "-c", "import openadapt_evals.extradup"],
                            capture_output=True, check=False).returncode == 0
    return [
        Row("item", "per mock item vs bare item (slope 5..2000)", 2.0, "slope", row_item),
        Row("mock500", "500 mock tasks vs 500 bare items, whole process", 1.64, "ratio", row_mock500),
        Row("rss", "peak RSS, 2,000 mock tasks vs 2,000 bare items", 1.3, "rss", row_rss),
        Row("collect", "--collect-only 2,000 mock vs bare", 1.2, "ratio", row_collect),
        Row("compare", "peak RSS, 100 mock tasks --bench-compare a 20,000-task run vs alone", 1.15, "rss",
            row_compare),
        Row("resume", "peak RSS, --bench-resume of a finished 20,000-task run vs 20,000 bare items", 1.3, "rss",
            row_resume),
        Row("waa", "--collect-only 154 WAA tasks vs bare", 1.2, "ratio", row_waa),
        Row("audit", "audit 200 tasks (1,200 items) vs bare items", 1.2, "ratio", row_audit, runs=3),
        Row("extradup", "--bench=extradup vs reference kill-scan", 1.0, "ratio",
            lambda: row_extradup(reference),
            skip="" if ref_ok else "openadapt-evals is not importable (give --reference-python PY of a venv "
                                   "with `pip install openadapt-evals`)"),
        Row("trajectory", "1,000 trajectory cases vs 1,000 bare failing items", 1.05, "ratio", row_trajectory),
        Row("opencomp", "--collect-only of an OpenComputer checkout vs 900 bare items", 2.39, "ratio",
            row_opencomputer,
            skip="" if oc and Path(oc).is_dir() else "AGENTBENCH_OPENCOMPUTER_UPSTREAM is not a checkout"),
        Row("inert", "plugin installed, not asked for, vs -p no:agentbench", 1.03, "ratio", row_inert, runs=4,
            decided_by_count=True),
        Row("help", "pytest --help vs -p no:agentbench --help (prints 23 KB less)", 1.03, "ratio", row_help,
            runs=4, informational=True),
        Row("help-same", "pytest --help vs the same help from a plugin that only registers it", 1.03, "ratio",
            row_help_same, runs=4, decided_by_count=True),
    ]


# -- measuring -----------------------------------------------------------------------------------
def instruction_ratio(row: Row, counts: list[float]) -> float | None:
    """ours / ref in user-space instructions (per item for the slope row); None for peak RSS."""
    if row.kind == "rss":
        return None
    if row.kind == "slope":
        big, bare_big, small, bare_small = counts
        return (big - small) / (bare_big - bare_small)
    return counts[0] / counts[1]


def measure(row: Row, repeat: int, env: dict[str, str], *, instructions: bool = False) -> dict[str, Any]:
    sides = row.sides()
    for side in sides:  # warm-up: bytecode and page caches
        run(side, env)
    samples: list[list[dict[str, float]]] = [[] for _ in sides]
    for _ in range(repeat * row.runs):
        for i, side in enumerate(sides):
            samples[i].append(run(side, env))
    counted = instruction_ratio(row, [run(side, env, count=True)["instructions"] for side in sides]) \
        if instructions and row.kind != "rss" else None
    wall = [[s["wall"] for s in side] for side in samples]
    if row.kind == "slope":
        big, bare_big, small, bare_small = wall
        ratios = [(b - s) / (bb - bs) for b, bb, s, bs in zip(big, bare_big, small, bare_small, strict=True) if bb > bs]
        ours = (statistics.median(big) - statistics.median(small)) / 1995 * 1000
        ref = (statistics.median(bare_big) - statistics.median(bare_small)) / 1995 * 1000
        unit = "ms/item"
    elif row.kind == "rss":
        rss = [[s["rss_mib"] for s in side] for side in samples]
        ratios = [a / b for a, b in zip(*rss, strict=True)]
        ours, ref, unit = statistics.median(rss[0]), statistics.median(rss[1]), "MiB"
    else:
        ratios = [a / b for a, b in zip(*wall, strict=True)]
        ours, ref, unit = statistics.median(wall[0]), statistics.median(wall[1]), "s"
    ratio = statistics.median(ratios) if ratios else float("nan")
    low, high, coverage = median_interval(ratios) or (float("nan"), float("nan"), 0.0)
    judged = verdict(row, low, high, coverage)
    basis = "wall"
    if row.informational:
        judged = "info"
    elif counted is not None and row.decided_by_count:
        judged, basis = ("met" if counted <= row.goal else "MISSED"), "instructions"
    return {"row": row.name, "what": row.what, "ours": ours, "ref": ref, "unit": unit, "ratio": ratio,
            "ratio_min": min(ratios, default=float("nan")), "ratio_max": max(ratios, default=float("nan")),
            "interval": [low, high], "coverage": coverage, "goal": row.goal, "kind": row.kind,
            "verdict": judged, "basis": basis, "instruction_ratio": counted, "samples": samples}


#: The least coverage a verdict other than ``unsure`` needs: five pairs give 94%, one pair none.
SURE = 0.9


def verdict(row: Row, low: float, high: float, coverage: float) -> str:
    """``met`` when the whole interval of the median meets the goal, ``MISSED`` when none of it
    does, ``unsure`` when the goal lies inside it or the interval is less than ``SURE`` sure (too
    few pairs): more pairs (``--repeat``) or a quieter machine can tell, a single median cannot."""
    if coverage < SURE:
        return "unsure"
    return "met" if high <= row.goal else "MISSED" if low > row.goal else "unsure"


def file_creation_ms(count: int = 2000) -> float:
    """Milliseconds per file to create ``count`` small files in one folder where the rows run (the
    temporary folder's disk; on some virtual disks the cost per file grows with the count).

    A mock run writes one trajectory file per task and bare pytest none, so on a disk where making
    a file costs about as much as a bare item, the item row's ratio says as much about the disk as
    about the plugin; printed beside the rows so a reader can tell."""
    folder = Path(tempfile.mkdtemp(prefix="agentbench-goals-disk-"))
    try:
        text = b"x" * 1024
        t0 = time.perf_counter()
        for i in range(count):
            with open(folder / f"{i}.json", "wb") as handle:
                handle.write(text)
        return (time.perf_counter() - t0) / count * 1000
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="alternated runs per side (default 5)")
    parser.add_argument("--rows", default="", help="comma-separated rows to run (default: all)")
    parser.add_argument("--reference-python", default=None, metavar="PY",
                        help="a Python with openadapt-evals installed, for the extradup row")
    parser.add_argument("--json", metavar="PATH", help="also write the figures and samples as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    parser.add_argument("--instructions", action="store_true",
                        help="also count user-space instructions of each side once, under valgrind's callgrind")
    args = parser.parse_args(argv)
    if args.instructions and shutil.which("valgrind") is None:
        parser.error("--instructions needs valgrind on PATH (Debian: apt-get install valgrind)")
    wanted = {r for r in args.rows.split(",") if r}
    table = rows(args.reference_python)
    unknown = wanted - {r.name for r in table}
    if unknown:
        parser.error(f"unknown rows {sorted(unknown)}; choose from {[r.name for r in table]}")
    # Bytecode is kept, as on any installed machine: the warm-up pair compiles every module once into
    # a cache of this run's, also when PYTHONDONTWRITEBYTECODE is set here (an editable checkout under
    # that variable recompiles the plugin, and pytest re-rewrites its asserts, in every timed run).
    cache = tempfile.mkdtemp(prefix="agentbench-goals-pycache-")
    atexit.register(shutil.rmtree, cache, True)
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPYCACHEPREFIX": cache}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    print(f"load average at start: {os.getloadavg()[0]:.2f}; {os.cpu_count()} cpus; repeat {args.repeat}")
    print(f"disk: creating 2,000 files of 1 KiB in {tempfile.gettempdir()} takes {file_creation_ms():.3f} ms "
          "each (a mock run creates one per task, bare pytest none)")
    results, missed = [], 0
    header = (f"{'row':<11}{'ours':>10}{'ref':>10}  {'unit':<8}{'ratio':>7}{'interval':>16} {'sure':>4}{'goal':>10}"
              "  verdict")
    print(header)
    for row in table:
        if wanted and row.name not in wanted:
            continue
        if row.skip:
            print(f"{row.name:<11}skipped: {row.skip}")
            results.append({"row": row.name, "skipped": row.skip})
            continue
        res = measure(row, args.repeat, env, instructions=args.instructions)
        results.append(res)
        missed += res["verdict"] not in ("met", "info")
        goal = "-" if row.informational else f"<= {row.goal:g}x"
        counted = res["instruction_ratio"]
        instr = f"   instructions {counted:.3f}x" if counted is not None else ""
        low, high = res["interval"]
        shown = f"{low:.2f}-{high:.2f}x"
        judged = res["verdict"] + (" (instr)" if res["basis"] == "instructions" else "")
        print(f"{row.name:<11}{res['ours']:>10.3f}{res['ref']:>10.3f}  {res['unit']:<8}{res['ratio']:>6.2f}x "
              f"{shown:>15} {res['coverage']:>4.0%}{goal:>10}  {judged:<15}"
              f"{row.what}{instr}", flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
