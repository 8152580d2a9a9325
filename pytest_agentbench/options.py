"""Command-line options and ini keys, and their validation into one frozen settings object.

Each option has an ini key of the same meaning (``agentbench_<name>``); the command line wins.
Bad values are usage errors naming the value and the fix.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

SCREENSHOT_MODES = ("off", "only-on-failure", "on")
#: The most tasks one run takes (``--tasks``): every task is held in memory, in the manifest and
#: in the summary, and no GUI benchmark has more.
MAX_TASKS = 100_000
#: The most VMs one cloud pool creates (``--pool-workers``).
MAX_POOL_WORKERS = 256
#: The longest wait any timeout option accepts: one day.
MAX_WAIT_SECONDS = 86_400.0


def _whole_number(flag: str, minimum: int, note: str = "", maximum: int | None = None):  # type: ignore[no-untyped-def]
    """An argparse type for a whole number >= ``minimum`` (and <= ``maximum``), with errors naming
    the flag and value."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} must be a whole number >= {minimum}{note}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{flag} must be >= {minimum}{note}, got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"{flag} must be at most {maximum}{note}, got {value}")
        return value

    return parse


def _positive_int(flag: str, maximum: int | None = None):  # type: ignore[no-untyped-def]
    return _whole_number(flag, 1, maximum=maximum)


def checked(check: str, flag: str, **limits):  # type: ignore[no-untyped-def]
    """An argparse type from the ``values`` check named ``check`` (``"url"``, ``"port"``...): the
    check's one-line message becomes the usage error. ``values`` is imported on first use, so a
    plain pytest run that gives none of these options never loads it."""
    def parse(text: str):  # type: ignore[no-untyped-def]
        from . import values

        try:
            return getattr(values, check)(flag, text, **limits)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

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
    group.addoption("--tasks", type=_positive_int("--tasks", MAX_TASKS), default=None, metavar="N",
                    help="run at most N tasks per benchmark (mock: make N tasks).")
    group.addoption("--bench-task", action="append", default=None, metavar="ID",
                    help="run only the task with this exact id (repeatable); unknown ids are errors.")
    group.addoption("--agent", default=None, metavar="NAME", help="agent to run (default: mock).")
    group.addoption("--agent-script", default=None, metavar="FILE",
                    help="JSON file of actions per task id for --agent scripted.")
    group.addoption("--max-steps", type=_positive_int("--max-steps"), default=None, metavar="N",
                    help="step limit per task; beats the task's own limit.")
    group.addoption("--bench-task-timeout", dest="task_timeout", default=None, metavar="SECONDS",
                    help="deadline of each episode; past it the task fails (default: pytest-timeout's timeout).")
    group.addoption("--run-name", type=checked("run_name", "--run-name"), default=None, metavar="NAME",
                    help="name of the run folder (made unique if it exists).")
    group.addoption("--results-dir", default=None, metavar="DIR",
                    help="where run folders go (default: benchmark_results).")
    group.addoption("--screenshots", default=None, choices=SCREENSHOT_MODES,
                    help="which screenshots to save: off, only-on-failure (default) or on.")
    group.addoption("--baseline", default=None, metavar="PATH",
                    help="results.jsonl (or run folder) of an earlier run: its non-passing tasks become xfail.")
    group.addoption("--min-success", type=_rate, default=None, metavar="RATE",
                    help="fail the run when the success rate (outcomes only) is below RATE.")
    group.addoption("--inspect-log", default=None, metavar="PATH",
                    help="also write the run as an Inspect AI eval log: PATH.json, or a directory "
                         "(the log gets the timestamped name inspect view lists).")

    parser.addini("agentbench_benchmarks", "benchmarks to run (as --bench)", type="args", default=[])
    parser.addini("agentbench_tasks", "tasks per benchmark (as --tasks)", default="")
    parser.addini("agentbench_bench_tasks", "exact task ids (as --bench-task)", type="args", default=[])
    parser.addini("agentbench_agent", "agent name (as --agent)", default="")
    parser.addini("agentbench_agent_script", "scripted agent file (as --agent-script)", default="")
    parser.addini("agentbench_max_steps", "step limit (as --max-steps)", default="")
    parser.addini("agentbench_task_timeout", "episode deadline in seconds (as --bench-task-timeout)", default="")
    parser.addini("agentbench_run_name", "run folder name (as --run-name)", default="")
    parser.addini("agentbench_results_dir", "results folder (as --results-dir)", default="")
    parser.addini("agentbench_screenshots", "screenshot mode (as --screenshots)", default="")
    parser.addini("agentbench_baseline", "baseline results (as --baseline)", default="")
    parser.addini("agentbench_min_success", "minimum success rate (as --min-success)", default="")
    parser.addini("agentbench_inspect_log", "Inspect AI eval log file or folder (as --inspect-log)", default="")


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
    inspect_log: Path | None = None


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
    tasks = opt("tasks") if opt("tasks") is not None else _ini_convert(config, "agentbench_tasks", "--tasks",
                                                                       _positive_int("--tasks", MAX_TASKS))
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
    inspect_log = opt("inspect_log") or str(ini("agentbench_inspect_log")).strip() or None
    if inspect_log is not None:
        from .record.inspect_log import check_path

        try:
            inspect_log = check_path(inspect_log)
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
    return Settings(
        benchmarks=tuple(benchmarks_requested(config)),
        tasks=tasks,
        task_ids=task_ids,
        agent=opt("agent") or str(ini("agentbench_agent")).strip() or "mock",
        agent_script=Path(script) if script else None,
        max_steps=max_steps,
        run_name=opt("run_name") or _ini_convert(config, "agentbench_run_name", "--run-name",
                                                 checked("run_name", "--run-name")),
        results_dir=Path(results_dir),
        screenshots=screenshots,
        baseline=Path(baseline) if baseline else None,
        min_success=min_success,
        inspect_log=inspect_log,
    )


def _operators(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


_limit = _whole_number("--limit", 0, " (0 = all)")


def add_audit_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentbench-audit", "verifier audit (pytest-agentbench)")
    group.addoption("--audit-verifier", default=None, metavar="NAME",
                    help="audit this benchmark's checker: toy, appworld, a registered name, or module:Attr.")
    group.addoption("--operators", action="append", default=None, metavar="LIST",
                    help="comma-separated operators (default: all six).")
    group.addoption("--audit-tasks", action="append", default=None, metavar="IDS",
                    help="comma-separated task ids to audit (repeatable); unknown ids are errors.")
    group.addoption("--audit-split", "--split", dest="audit_split", default=None, metavar="NAME",
                    help="the benchmark split to take tasks from (adapter default when unset).")
    group.addoption("--audit-limit", "--limit", dest="audit_limit", type=_limit, default=None, metavar="N",
                    help="audit the first N tasks of the split (default 20; 0 = all).")
    group.addoption("--ignore-fields", action="append", default=None, metavar="LIST",
                    help="fields with no task meaning, 'field' or 'table.field', comma-separated.")
    group.addoption("--audit-out", default=None, metavar="PATH",
                    help="write every run's result as JSON (counts and field names, never values).")
    group.addoption("--appworld-python", default=None, metavar="PY",
                    help="the interpreter of the AppWorld environment (or $APPWORLD_PYTHON).")
    group.addoption("--appworld-root", default=None, metavar="DIR",
                    help="the AppWorld data root holding data/tasks (or $APPWORLD_ROOT).")
    for key, text in (("audit_verifier", "as --audit-verifier"), ("operators", "as --operators"),
                      ("audit_tasks", "as --audit-tasks"), ("audit_split", "as --split"),
                      ("audit_limit", "as --limit"), ("ignore_fields", "as --ignore-fields"),
                      ("audit_out", "as --audit-out"), ("appworld_python", "as --appworld-python"),
                      ("appworld_root", "as --appworld-root")):
        parser.addini(f"agentbench_{key}", text, default="")


def audit_requested(config: pytest.Config) -> str | None:
    return config.getoption("audit_verifier") or str(config.getini("agentbench_audit_verifier")).strip() or None


@dataclass(frozen=True)
class AuditSettings:
    verifier: str
    operators: tuple[str, ...]
    task_ids: tuple[str, ...]
    split: str | None
    limit: int | None  # None = all
    ignore_fields: tuple[str, ...]
    out: Path | None
    appworld_python: str | None
    appworld_root: str | None


def _listed(config: pytest.Config, name: str) -> list[str]:
    raw = config.getoption(name) or [str(config.getini(f"agentbench_{name}"))]
    return [part for text in raw for part in _operators(str(text))]


def audit_settings_from_config(config: pytest.Config) -> AuditSettings:
    from .audit.operators import OPERATORS

    operators = _listed(config, "operators") or list(OPERATORS)
    unknown = [op for op in operators if op not in OPERATORS]
    if unknown:
        raise pytest.UsageError(
            f"unknown operator {', '.join(map(repr, unknown))} in --operators; known: {', '.join(OPERATORS)}")
    limit = config.getoption("audit_limit")
    if limit is None:
        raw = str(config.getini("agentbench_audit_limit")).strip()
        try:
            limit = _limit(raw) if raw else 20
        except argparse.ArgumentTypeError as exc:
            raise pytest.UsageError(f"ini agentbench_audit_limit: {exc}") from None
    out = config.getoption("audit_out") or str(config.getini("agentbench_audit_out")).strip() or None
    return AuditSettings(
        verifier=audit_requested(config) or "",
        operators=tuple(dict.fromkeys(operators)),
        task_ids=tuple(dict.fromkeys(_listed(config, "audit_tasks"))),
        split=config.getoption("audit_split") or str(config.getini("agentbench_audit_split")).strip() or None,
        limit=None if limit == 0 else limit,
        ignore_fields=tuple(_listed(config, "ignore_fields")),
        out=Path(out) if out else None,
        appworld_python=config.getoption("appworld_python") or str(config.getini("agentbench_appworld_python")).strip() or None,
        appworld_root=config.getoption("appworld_root") or str(config.getini("agentbench_appworld_root")).strip() or None,
    )


def add_mockmed_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentbench-mockmed", "MockMed UI-change benchmark (pytest-agentbench)")
    group.addoption("--mockmed-condition", action="append", default=None, metavar="LIST",
                    help="conditions to run: clean, theme, rename (default: all).")
    group.addoption("--mockmed-arm", action="append", default=None, metavar="LIST",
                    help="arms to run: compiled, by-position, by-name (default: all).")
    group.addoption("--mockmed-runs", type=_positive_int("--mockmed-runs", 1000), default=None, metavar="N",
                    help="runs per condition and arm (default: 3).")
    group.addoption("--mockmed-driver", default=None, choices=("headless", "browser"),
                    help="headless (HTML to tree and pillow screenshot, default) or browser (Chromium via Playwright).")
    group.addoption("--mockmed-workflow", default=None, metavar="PATH",
                    help="the compiled workflow for the compiled-replay arm; recorded on clean and written "
                         "there when the file does not exist.")


def waa_ready_timeout(text: str) -> float:
    """``--waa-ready-timeout``: a number of seconds from 0 to a day."""
    return checked("number", "--waa-ready-timeout", low=0, high=MAX_WAIT_SECONDS, unit="seconds")(text)


def parse_number(flag: str, text: object, *, positive: bool = False, unit: str = "seconds") -> float:
    """A finite number (>= 0, or > 0 with ``positive``); the ValueError names the flag and the unit."""
    try:
        value = float(str(text).strip())
    except ValueError:
        raise ValueError(f"{flag} must be a number of {unit}, got {text!r}") from None
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise ValueError(f"{flag} must be a finite number of {unit} {bound}, got {text!r}")
    return value


def _number_type(flag: str, *, positive: bool = False, unit: str = "seconds") -> Callable[[str], float]:
    def convert(text: str) -> float:
        try:
            return parse_number(flag, text, positive=positive, unit=unit)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


#: ``--waa-<name>`` -> what it is. Each is a field of ``benches.waa.settings.WAASettings`` (with ``-``
#: as ``_``), whose default is upstream's value; ``*-timeout`` values must be > 0.
WAA_SECONDS = {
    "settle": "seconds to wait after closing all windows and after setup (upstream: 5)",
    "step-pause": "seconds to wait after each action before observing (upstream: 3)",
    "open-wait": "seconds to wait after a setup step opened a file (upstream: 2)",
    "command-timeout": "seconds a setup or action command may take (upstream's server: 120)",
    "tree-timeout": "seconds the accessibility tree may take (upstream: 300)",
    "evaluate-timeout": "seconds one scoring may take (default: 600)",
}


def add_waa_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentbench-waa", "Windows Agent Arena (pytest-agentbench)")
    group.addoption("--waa-examples", default=None, metavar="PATH",
                    help="WAA's evaluation_examples_windows folder (or its examples/ folder): "
                         "tasks are examples/<domain>/<id>.json.")
    group.addoption("--waa-index", default=None, metavar="all|small|PATH",
                    help="which tasks: all (test_all.json, default), small (test_small.json) or an index "
                         "file {domain: [id, ...]}.")
    group.addoption("--waa-server", type=checked("url", "--waa-server"), default=None, metavar="URL",
                    help="the WAA server (default: http://localhost:5001).")
    group.addoption("--waa-upstream", default=None, metavar="DIR",
                    help="the WindowsAgentArena checkout (or its src/win-arena-container/client folder) whose "
                         "evaluator code scores the tasks (default: found from --waa-examples).")
    group.addoption("--waa-python", default=None, metavar="PY",
                    help="the Python that runs upstream's evaluator code (default: this one; it needs "
                         "pytest-agentbench[waa] or upstream's client requirements).")
    group.addoption("--waa-evaluate-url", type=checked("url", "--waa-evaluate-url"), default=None, metavar="URL",
                    help="score with your own evaluate server instead of upstream's code (the reference "
                         "tool's scoring; see the user guide for how it differs).")
    group.addoption("--waa-cdp-url", type=checked("url", "--waa-cdp-url"), default=None, metavar="URL",
                    help="Chrome's DevTools endpoint for chrome tab steps (default: port 9222 on the "
                         "--waa-server host).")
    group.addoption("--waa-ready-timeout", type=waa_ready_timeout, default=None, metavar="SECONDS",
                    help="wait up to SECONDS for the WAA server before the first task (default: probe once).")
    for name, text in WAA_SECONDS.items():
        group.addoption(f"--waa-{name}", type=_number_type(f"--waa-{name}", positive=name.endswith("timeout")),
                        default=None, metavar="SECONDS", help=f"{text}.")
    group.addoption("--waa-download-allow", action="append", default=None, metavar="HOSTS",
                    help="hosts a task's download step may fetch although they resolve to a private, "
                         "loopback or link-local address (comma-separated or repeated).")
    group.addoption("--waa-download-max-mb", type=_number_type("--waa-download-max-mb", positive=True, unit="megabytes"),
                    default=None, metavar="MB", help="largest file a download step may fetch (default: 512).")
    keys = ["examples", "index", "server", "upstream", "python", "evaluate_url", "cdp_url", "ready_timeout",
            *(n.replace("-", "_") for n in WAA_SECONDS), "download_allow", "download_max_mb"]
    for key in keys:
        parser.addini(f"agentbench_waa_{key}", f"WAA: as --waa-{key.replace('_', '-')}", default="")


def add_extradup_options(parser: pytest.Parser) -> None:
    """``--reward module:callable`` (repeatable) and the ini key ``agentbench_reward``.
    Safe to call twice (a conftest and the plugin)."""
    group = parser.getgroup("agentbench", "agent benchmarks (pytest-agentbench)")
    if not any("--reward" in opt.names() for opt in group.options):
        group.addoption("--reward", dest="agentbench_reward", action="append", default=None,
                        metavar="MODULE:CALLABLE",
                        help="extradup: also score this reward, reward(evidence) -> bool | float | None, "
                             "importable from the rootdir (repeatable).")
    if "agentbench_reward" not in getattr(parser, "_inidict", {}):
        parser.addini("agentbench_reward", "extradup rewards to score (as --reward)", type="args", default=[])


def add_agent_options(parser: pytest.Parser) -> None:
    """Options of the model-backed agents, budgets and the cost estimate."""
    group = parser.getgroup("agentbench-agents", "agents, budgets and cost (pytest-agentbench)")
    group.addoption("--agent-model", default=None, metavar="MODEL",
                    help="api-claude: the Claude model (default: claude-sonnet-4-6).")
    group.addoption("--agent-url", type=checked("url", "--agent-url"), default=None, metavar="URL",
                    help="http: the agent server's base URL (POST /act, POST /reset, GET /health).")
    group.addoption("--agent-timeout", default=None, metavar="SECONDS",
                    help="api-claude / http: seconds per request before it counts as failed (default: 120 / 60).")
    group.addoption("--replay-bundles", default=None, metavar="DIR",
                    help="replay: compiled workflows, DIR/<task id>/workflow.json.")
    group.addoption("--max-cost-usd", default=None, metavar="USD",
                    help="stop calling models once the run has spent USD; later items are skipped (budget spent).")
    group.addoption("--max-cost-usd-per-task", default=None, metavar="USD",
                    help="a task whose model calls reach USD ends as an agent error.")
    group.addoption("--dry-run", action="store_true", default=False,
                    help="estimate VM and model cost for the selected tasks; start nothing, call no model.")
    for key, text in (("agent_model", "as --agent-model"), ("agent_url", "as --agent-url"),
                      ("agent_timeout", "as --agent-timeout"), ("replay_bundles", "as --replay-bundles"),
                      ("max_cost_usd", "as --max-cost-usd"), ("max_cost_usd_per_task", "as --max-cost-usd-per-task")):
        parser.addini(f"agentbench_{key}", text, default="")


def setting(config: pytest.Config, name: str) -> str | None:
    """``--<name>`` (dest ``name``), else the ini key ``agentbench_<name>``; None when neither.
    The command line wins over the ini file."""
    value = config.getoption(name, None)
    if value not in (None, ""):
        return str(value)
    raw = str(config.getini(f"agentbench_{name}")).strip()
    return raw or None


def money_setting(config: pytest.Config, name: str, flag: str) -> float | None:
    """A dollar amount option (``--max-cost-usd`` and friends): a number > 0, or None."""
    value = setting(config, name)
    if value is None:
        return None
    try:
        number = float(value.lstrip("$"))
    except ValueError:
        raise pytest.UsageError(f"{flag} must be an amount in US dollars such as 5 or 0.50, got {value!r}") from None
    if not 0 < number < float("inf"):
        raise pytest.UsageError(f"{flag} must be more than 0, got {value!r}")
    return number


#: ``--sandbox-<name>``: (default, least, most, unit, what it limits). Each is a field of
#: ``infra.sandbox.Limits`` with ``-`` as ``_``; 0 means no limit.
SANDBOX_LIMITS = {
    "memory-mb": (2048, 64, 1 << 20, "MB", "address space of each sandboxed process (RLIMIT_AS)"),
    "max-procs": (256, 8, 1 << 16, "processes", "processes and threads of the sandbox's user at once (RLIMIT_NPROC)"),
    "output-mb": (16, 1, 1 << 16, "MB", "stdout plus stderr read back from one sandboxed command; past it the "
                                        "command is killed and reported as output over the limit"),
}

#: The argparse type of each ``--sandbox-<name>`` limit.
SANDBOX_LIMIT_TYPES = {f"--sandbox-{name}": checked("limit", f"--sandbox-{name}", low=low, high=high, unit=unit)
                       for name, (_default, low, high, unit, _what) in SANDBOX_LIMITS.items()}

#: Settings checked at configure time, from the command line or the ini key: dest -> argparse type.
#: Types given to ``addoption`` check the command line as it is parsed; this table also covers the
#: ini keys and the options read as plain strings by the code that uses them.
CHECKED_SETTINGS = {
    **{f"sandbox_{name.replace('-', '_')}": SANDBOX_LIMIT_TYPES[f"--sandbox-{name}"] for name in SANDBOX_LIMITS},
    "run_name": checked("run_name", "--run-name"),
    "task_timeout": checked("number", "--bench-task-timeout", low=0, low_open=True, high=MAX_WAIT_SECONDS,
                            unit="seconds"),
    "waa_server": checked("url", "--waa-server"),
    "waa_evaluate_url": checked("url", "--waa-evaluate-url"),
    "waa_ready_timeout": waa_ready_timeout,
    "waa_cdp_url": checked("url", "--waa-cdp-url"),
    **{f"waa_{name.replace('-', '_')}": _number_type(f"--waa-{name}", positive=name.endswith("timeout"))
       for name in WAA_SECONDS},
    "waa_download_max_mb": _number_type("--waa-download-max-mb", positive=True, unit="megabytes"),
    "agent_url": checked("url", "--agent-url"),
    "agent_timeout": checked("number", "--agent-timeout", low=0, low_open=True, high=MAX_WAIT_SECONDS,
                             unit="seconds"),
    "pool_ssh_cidr": checked("cidr", "--pool-ssh-cidr"),
    "aws_subnet": checked("aws_subnet", "--aws-subnet"),
    "pool_ready_timeout": checked("number", "--pool-ready-timeout", low=0, low_open=True, high=MAX_WAIT_SECONDS,
                                  unit="seconds"),
    "pool_auto_shutdown_hours": checked("number", "--pool-auto-shutdown-hours", low=1 / 60, high=720.0, zero=True,
                                        unit="hours (0 = never; the least is one minute)"),
    "pool_minutes_per_task": checked("number", "--pool-minutes-per-task", low=0, low_open=True, high=1440.0,
                                     unit="minutes"),
    "pool_poll_interval": checked("number", "--pool-poll-interval", low=0, high=600.0, unit="seconds"),
    "pool_hourly_usd": checked("number", "--pool-hourly-usd", low=0, high=10_000.0, unit="US dollars"),
}


def check_settings(config: pytest.Config) -> None:
    """Every setting of ``CHECKED_SETTINGS`` (and the money options) that is given, checked now,
    so a bad value is one usage line before anything starts, not an error when items run."""
    for name, parse in CHECKED_SETTINGS.items():
        given = config.getoption(name, None)
        source = ""
        if given in (None, ""):
            try:
                given = str(config.getini(f"agentbench_{name}")).strip() or None
            except ValueError:  # no ini key of that name
                given = None
            source = f"ini agentbench_{name}: "
        if given is None:
            continue
        try:
            parse(str(given))
        except argparse.ArgumentTypeError as exc:
            raise pytest.UsageError(f"{source}{exc}") from None
    money_setting(config, "max_cost_usd", "--max-cost-usd")
    money_setting(config, "max_cost_usd_per_task", "--max-cost-usd-per-task")


def add_pool_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentbench-pool", "machine pools for live benchmarks (pytest-agentbench)")
    group.addoption("--pool", default=None, choices=("static", "aws", "azure"),
                    help="lease one WAA host per process (per xdist worker): static = existing --pool-hosts; "
                         "aws / azure = create one VM per worker for this run and delete them at the end.")
    group.addoption("--pool-hosts", action="append", default=None, metavar="URLS",
                    help="static pool: WAA server URLs, comma-separated or repeated; URL|EVALUATE_URL to "
                         "give a separate evaluate server.")
    group.addoption("--pool-workers", type=_positive_int("--pool-workers", MAX_POOL_WORKERS), default=None, metavar="N",
                    help="cloud pool: VMs to create (default: one per xdist worker, else one).")
    group.addoption("--pool-region", default=None, metavar="REGION",
                    help="cloud pool: region (default: aws us-east-1, azure eastus).")
    group.addoption("--pool-size", default=None, metavar="SIZE",
                    help="cloud pool: instance type / VM size (default: aws m8i.2xlarge, azure Standard_D8ds_v5).")
    group.addoption("--pool-image", default=None, metavar="IMAGE",
                    help="cloud pool: the prepared WAA image (an AMI id; an Azure image id or publisher:offer:sku:version).")
    group.addoption("--pool-ssh-user", default=None, metavar="USER",
                    help="cloud pool: the VM login (default: aws ubuntu, azure azureuser).")
    group.addoption("--pool-ssh-key", default=None, metavar="FILE",
                    help="cloud pool: a private key whose FILE.pub is installed on the VMs, or a .pub file whose "
                         "private key is in your SSH agent (default: a fresh key per run).")
    group.addoption("--pool-ssh-cidr", type=checked("cidr", "--pool-ssh-cidr"), default=None, metavar="CIDR",
                    help="cloud pool: who may reach port 22 of the VMs, e.g. 203.0.113.7/32 (default: this "
                         "machine's public address, asked of an address echo service; required when that fails).")
    group.addoption("--pool-connect", default=None, choices=("ssh", "direct"),
                    help="cloud pool: ssh = tunnel to the VM's WAA ports (default); direct = talk to the VM's address.")
    group.addoption("--pool-address", default=None, choices=("public", "private"),
                    help="cloud pool: which VM address to connect to (default: public).")
    group.addoption("--pool-waa-port", type=checked("port", "--pool-waa-port"), default=5000, metavar="PORT",
                    help="the WAA server's port on the VM (default: 5000).")
    group.addoption("--pool-evaluate-port", type=checked("port", "--pool-evaluate-port"), default=5051, metavar="PORT",
                    help="the evaluate server's port on the VM, used with --waa-evaluate-url (default: 5051).")
    group.addoption("--pool-cdp-port", type=checked("port", "--pool-cdp-port"), default=9222, metavar="PORT",
                    help="Chrome's DevTools port on the VM, forwarded for chrome tab steps (default: 9222).")
    group.addoption("--pool-ready-timeout", default=None, metavar="SECONDS",
                    help="cloud pool: wait up to SECONDS per worker for SSH and WAA readiness (default: 1200).")
    group.addoption("--pool-auto-shutdown-hours", default=None, metavar="HOURS",
                    help="cloud pool: VMs stop by themselves after HOURS even if this run dies (default: 4; 0 = never; "
                         "at least 1/60, one minute; at most 720).")
    group.addoption("--pool-hourly-usd", default=None, metavar="USD",
                    help="cloud pool: price per VM-hour for the cost (default: the list price of the size created).")
    group.addoption("--pool-poll-interval", default=None, metavar="SECONDS",
                    help="cloud pool: seconds between status polls of the cloud (default: 5).")
    group.addoption("--pool-minutes-per-task", default=None, metavar="MINUTES",
                    help="--pool-dry-run: VM minutes a task takes (default: 3).")
    group.addoption("--pool-dry-run", action="store_true", default=False,
                    help="print the VM cost estimate for the selected tasks and start nothing.")
    group.addoption("--keep-pool", action="store_true", default=False,
                    help="cloud pool: leave the VMs running at the end (delete them later with --agentbench-reap).")
    group.addoption("--agentbench-reap", action="store_true", default=False,
                    help="delete every VM and resource that pytest-agentbench runs left in --pool aws|azure, then exit.")
    group.addoption("--reap-run", default=None, metavar="RUN_ID",
                    help="--agentbench-reap: only this run's resources.")
    group.addoption("--azure-subscription", default=None, metavar="ID",
                    help="azure pool: the subscription (default: AZURE_SUBSCRIPTION_ID).")
    group.addoption("--aws-subnet", type=checked("aws_subnet", "--aws-subnet"), default=None, metavar="SUBNET_ID",
                    help="aws pool: launch in this subnet (default: the default VPC).")
    parser.addini("agentbench_pool", "as --pool", default="")
    parser.addini("agentbench_pool_hosts", "as --pool-hosts", type="args", default=[])
    for key in ("region", "size", "image", "ssh_user", "ssh_key", "ssh_cidr", "connect", "address", "ready_timeout",
                "auto_shutdown_hours", "hourly_usd", "poll_interval", "minutes_per_task"):
        parser.addini(f"agentbench_pool_{key}", f"as --pool-{key.replace('_', '-')}", default="")
    parser.addini("agentbench_azure_subscription", "as --azure-subscription", default="")
    parser.addini("agentbench_aws_subnet", "as --aws-subnet", default="")


# -- OpenComputer and sandbox options ---------------------------------------------------------------------------------------
OPENCOMPUTER_DEFAULT_TIMEOUT = 30.0
OPENCOMPUTER_VERIFIER_ERRORS = ("fail", "error")
OPENCOMPUTER_HARNESS = ("auto", "opencomputer", "builtin")
SANDBOX_ISOLATION_MODES = ("auto", "bwrap", "none")


def opencomputer_timeout(text: str) -> float:
    """``--opencomputer-timeout``: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--opencomputer-timeout must be a number of seconds, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"--opencomputer-timeout must be a finite number of seconds > 0, got {text!r}")
    return value


def _has_flag(group: pytest.OptionGroup, flag: str) -> bool:
    return any(flag in opt.names() for opt in group.options)


def _addini_once(parser: pytest.Parser, name: str, text: str) -> None:
    if name not in getattr(parser, "_inidict", {}):
        parser.addini(name, text, default="")


def add_opencomputer_options(parser: pytest.Parser) -> None:
    """``--opencomputer-*`` and their ini keys. Safe to call twice (a conftest and the plugin)."""
    group = parser.getgroup("agentbench-opencomputer", "OpenComputer tasks (pytest-agentbench)")
    if not _has_flag(group, "--opencomputer-tasks"):
        group.addoption("--opencomputer-tasks", default=None, metavar="DIR",
                        help="OpenComputer tasks: DIR/<id>/task.json with seed files in DIR/<id>/env/ "
                             "(OpenComputer's task_generator/tasks, or a checkout holding it).")
        group.addoption("--opencomputer-verifiers", default=None, metavar="DIR",
                        help="the verifier scripts, DIR/<app>/<app>.py (OpenComputer's verifiers/) or DIR/<app>.py.")
        group.addoption("--opencomputer-end-state", default=None, metavar="DIR",
                        help="grade the end states DIR/<id>/ (paths relative to /home/user) instead of "
                             "playing an agent; tasks without one are skipped.")
        group.addoption("--opencomputer-timeout", type=opencomputer_timeout, default=None, metavar="SECONDS",
                        help="seconds per checker command before it is killed "
                             f"(default: {OPENCOMPUTER_DEFAULT_TIMEOUT:g}).")
        group.addoption("--opencomputer-judge", default=None, metavar="MODULE:CALLABLE",
                        help="judge of the LLM-judged checks, judge(check, output) -> bool | None; "
                             "without it they are not evaluated.")
        group.addoption("--opencomputer-verifier-errors", default=None, choices=OPENCOMPUTER_VERIFIER_ERRORS,
                        help="a verifier that answers an error ({\"error\": ...}, a crash, a timeout) fails that "
                             "check, as OpenComputer does (fail, default), or makes the item an error (error).")
        group.addoption("--opencomputer-harness", default=None, choices=OPENCOMPUTER_HARNESS,
                        help="who sets up and grades: OpenComputer's own harness code from the checkout "
                             "--opencomputer-tasks names (opencomputer), this plugin's checker (builtin), or the "
                             "first when there is a checkout (auto, default).")
        group.addoption("--opencomputer-python", default=None, metavar="auto|system|current|PATH",
                        help="the sandbox's python3: an interpreter with the packages of OpenComputer's image "
                             "(current, or a PATH), the host's /usr/bin/python3 (system), or the current one "
                             "when it has them, else the system's (auto, default).")
    for key, text in (("tasks", "as --opencomputer-tasks"), ("verifiers", "as --opencomputer-verifiers"),
                      ("end_state", "as --opencomputer-end-state"), ("timeout", "as --opencomputer-timeout"),
                      ("judge", "as --opencomputer-judge"), ("verifier_errors", "as --opencomputer-verifier-errors"),
                      ("harness", "as --opencomputer-harness"), ("python", "as --opencomputer-python")):
        _addini_once(parser, f"agentbench_opencomputer_{key}", text)


def add_sandbox_options(parser: pytest.Parser) -> None:
    """``--sandbox-isolation`` (the ``sandbox`` fixture and OpenComputer's sandboxes). Safe to call twice."""
    group = parser.getgroup("agentbench", "agent benchmarks (pytest-agentbench)")
    if not _has_flag(group, "--sandbox-isolation"):
        group.addoption("--sandbox-isolation", default=None, choices=SANDBOX_ISOLATION_MODES,
                        help="sandboxes: auto (bubblewrap when it works, else a plain folder with a warning; "
                             "default), bwrap (required) or none (a plain folder, no warning).")
    _addini_once(parser, "agentbench_sandbox_isolation", "as --sandbox-isolation")
    for name, (default, _low, _high, unit, what) in SANDBOX_LIMITS.items():
        flag = f"--sandbox-{name}"
        if not _has_flag(group, flag):
            group.addoption(flag, type=SANDBOX_LIMIT_TYPES[flag], default=None, metavar=unit.upper(),
                            help=f"sandboxes: {what} (default: {default}; 0: no limit).")
        _addini_once(parser, f"agentbench_sandbox_{name.replace('-', '_')}", f"as {flag}")


def _trajectory_min(text: str) -> float:
    """``--trajectory-min``, parsed by the trajectory module (loaded only when the option is given)."""
    from .trajectory.collect import parse_min

    return parse_min(text)


def add_trajectory_options(parser: pytest.Parser) -> None:
    """``--trajectory-min`` and its ini key: gate a run of trajectory test cases (``*.case.json``)."""
    group = parser.getgroup("agentbench-trajectory", "trajectory checks (pytest-agentbench)")
    group.addoption("--trajectory-min", type=_trajectory_min, default=None, metavar="SCORE",
                    help="fail the run when the mean score of the evaluated trajectory metrics, over every "
                         "*.case.json item that ran, is below SCORE (0..1).")
    parser.addini("agentbench_trajectory_min", "minimum mean trajectory score (as --trajectory-min)", default="")


def check_trajectory_min(config: pytest.Config) -> None:
    """A bad ``agentbench_trajectory_min`` is a usage error at once (exit 4), not at the end of a run."""
    if str(config.getini("agentbench_trajectory_min")).strip():
        from .trajectory.collect import configured_min

        configured_min(config)


def add_trial_options(parser: pytest.Parser) -> None:
    """Repeated trials, run comparison and resuming; validated in ``trials.TrialSettings``."""
    group = parser.getgroup("agentbench-trials", "repeated trials, statistics and run comparison (pytest-agentbench)")
    group.addoption("--trials", default=None, metavar="K",
                    help="play every task K times, as K items <task id>::trial-<n> (default 1).")
    group.addoption("--trial-seed", default=None, metavar="N",
                    help="base of the per-trial seeds the agent is given (default 0): same N, same seeds.")
    group.addoption("--compare", default=None, metavar="RUN",
                    help="compare this run with an earlier one (a run folder or its results.jsonl), task by task.")
    group.addoption("--fail-on-regression", action="store_true", default=None,
                    help="with --compare: fail the run when its success rate is significantly below RUN's.")
    group.addoption("--regression-alpha", default=None, metavar="P",
                    help="significance level of --fail-on-regression (default 0.05).")
    group.addoption("--resume", default=None, metavar="RUN",
                    help="continue an interrupted run in its folder: play only items without a final record.")
    parser.addini("agentbench_trials", "trials per task (as --trials)", default="")
    parser.addini("agentbench_trial_seed", "base of the per-trial seeds (as --trial-seed)", default="")
    parser.addini("agentbench_compare", "run to compare with (as --compare)", default="")
    parser.addini("agentbench_fail_on_regression", "fail on a significant regression (as --fail-on-regression)",
                  type="bool", default=False)
    parser.addini("agentbench_regression_alpha", "significance level (as --regression-alpha)", default="")
