"""Command-line options and ini keys, and their validation into one frozen settings object.

Each option has an ini key of the same meaning (``agentbench_<name>``); the command line wins.
Bad values are usage errors naming the value and the fix.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import pytest

SCREENSHOT_MODES = ("off", "only-on-failure", "on")


def _positive_int(flag: str):  # type: ignore[no-untyped-def]
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} must be a whole number >= 1, got {text!r}") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"{flag} must be >= 1, got {value}")
        return value

    return parse


def _rate(text: str) -> float:
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--min-success must be a rate such as 0.8 or 80%, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"--min-success must be between 0 and 1 (or 0% and 100%), got {text!r}")
    return value


def addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentbench", "agent benchmarks (pytest-agentbench)")
    group.addoption("--bench", action="append", default=None, metavar="NAME",
                    help="run the tasks of benchmark NAME as test items (repeatable).")
    group.addoption("--tasks", type=_positive_int("--tasks"), default=None, metavar="N",
                    help="run at most N tasks per benchmark (mock: make N tasks).")
    group.addoption("--bench-task", action="append", default=None, metavar="ID",
                    help="run only the task with this exact id (repeatable); unknown ids are errors.")
    group.addoption("--agent", default=None, metavar="NAME", help="agent to run (default: mock).")
    group.addoption("--agent-script", default=None, metavar="FILE",
                    help="JSON file of actions per task id for --agent scripted.")
    group.addoption("--max-steps", type=_positive_int("--max-steps"), default=None, metavar="N",
                    help="step limit per task; beats the task's own limit.")
    group.addoption("--run-name", default=None, metavar="NAME",
                    help="name of the run folder (made unique if it exists).")
    group.addoption("--results-dir", default=None, metavar="DIR",
                    help="where run folders go (default: benchmark_results).")
    group.addoption("--screenshots", default=None, choices=SCREENSHOT_MODES,
                    help="which screenshots to save: off, only-on-failure (default) or on.")
    group.addoption("--baseline", default=None, metavar="PATH",
                    help="results.jsonl (or run folder) of an earlier run: its non-passing tasks become xfail.")
    group.addoption("--min-success", type=_rate, default=None, metavar="RATE",
                    help="fail the run when the success rate (outcomes only) is below RATE.")

    parser.addini("agentbench_benchmarks", "benchmarks to run (as --bench)", type="args", default=[])
    parser.addini("agentbench_tasks", "tasks per benchmark (as --tasks)", default="")
    parser.addini("agentbench_bench_tasks", "exact task ids (as --bench-task)", type="args", default=[])
    parser.addini("agentbench_agent", "agent name (as --agent)", default="")
    parser.addini("agentbench_agent_script", "scripted agent file (as --agent-script)", default="")
    parser.addini("agentbench_max_steps", "step limit (as --max-steps)", default="")
    parser.addini("agentbench_run_name", "run folder name (as --run-name)", default="")
    parser.addini("agentbench_results_dir", "results folder (as --results-dir)", default="")
    parser.addini("agentbench_screenshots", "screenshot mode (as --screenshots)", default="")
    parser.addini("agentbench_baseline", "baseline results (as --baseline)", default="")
    parser.addini("agentbench_min_success", "minimum success rate (as --min-success)", default="")


def benchmarks_requested(config: pytest.Config) -> list[str]:
    """Benchmark names from --bench or the ini key; empty means the plugin stays inert."""
    names = config.getoption("bench") or config.getini("agentbench_benchmarks")
    out: list[str] = []
    for name in names:
        for part in str(name).split(","):
            if part.strip() and part.strip() not in out:
                out.append(part.strip())
    return out


@dataclass(frozen=True)
class Settings:
    benchmarks: tuple[str, ...]
    tasks: int | None
    task_ids: tuple[str, ...]
    agent: str
    agent_script: Path | None
    max_steps: int | None
    run_name: str | None
    results_dir: Path
    screenshots: str
    baseline: Path | None
    min_success: float | None


def _ini_convert(config: pytest.Config, key: str, flag: str, convert):  # type: ignore[no-untyped-def]
    raw = str(config.getini(key)).strip()
    if not raw:
        return None
    try:
        return convert(raw)
    except argparse.ArgumentTypeError as exc:
        raise pytest.UsageError(f"ini {key}: {exc}") from None


def settings_from_config(config: pytest.Config) -> Settings:
    opt = config.getoption
    ini = config.getini
    tasks = opt("tasks") if opt("tasks") is not None else _ini_convert(config, "agentbench_tasks", "--tasks", _positive_int("--tasks"))
    max_steps = opt("max_steps") if opt("max_steps") is not None else _ini_convert(
        config, "agentbench_max_steps", "--max-steps", _positive_int("--max-steps"))
    min_success = opt("min_success") if opt("min_success") is not None else _ini_convert(
        config, "agentbench_min_success", "--min-success", _rate)
    screenshots = opt("screenshots") or str(ini("agentbench_screenshots")).strip() or "only-on-failure"
    if screenshots not in SCREENSHOT_MODES:
        raise pytest.UsageError(f"agentbench_screenshots must be one of {', '.join(SCREENSHOT_MODES)}, got {screenshots!r}")
    task_ids = tuple(opt("bench_task") or ini("agentbench_bench_tasks") or ())
    script = opt("agent_script") or str(ini("agentbench_agent_script")).strip() or None
    baseline = opt("baseline") or str(ini("agentbench_baseline")).strip() or None
    results_dir = opt("results_dir") or str(ini("agentbench_results_dir")).strip() or "benchmark_results"
    return Settings(
        benchmarks=tuple(benchmarks_requested(config)),
        tasks=tasks,
        task_ids=task_ids,
        agent=opt("agent") or str(ini("agentbench_agent")).strip() or "mock",
        agent_script=Path(script) if script else None,
        max_steps=max_steps,
        run_name=opt("run_name") or str(ini("agentbench_run_name")).strip() or None,
        results_dir=Path(results_dir),
        screenshots=screenshots,
        baseline=Path(baseline) if baseline else None,
        min_success=min_success,
    )
