"""Every command-line option and ini key of the plugin, declared once in ``OPTIONS``.

Why one module of over 500 lines: it is the one table of every option, and splitting it would undo
declaring each option once.

Each :class:`Option` names its flag, the old spellings still accepted, its ``dest``, its ini key
(``agentbench_<dest>``), how its text is parsed and checked, its default, its help, its group and
whether it is a path. From that one table come ``parser.addoption`` / ``parser.addini``, the
configure-time check of every value (command line and ini alike, so a bad value is one usage line
before anything starts), the warning for an old spelling, and :func:`setting`, which every reader
uses: the validated value, the command line winning over the ini key, relative paths resolved
(from the invocation folder on the command line, from the ini file's folder in the ini file).

pytest loads this module in every run of every project that has the plugin installed, so it
imports only the standard library and pytest; the checks in ``values`` load when a value is given.
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_agentbench.plugin.run_settings import AuditSettings as AuditSettings
    from pytest_agentbench.plugin.run_settings import Settings as Settings
    from pytest_agentbench.plugin.run_settings import audit_settings_from_config as audit_settings_from_config
    from pytest_agentbench.plugin.run_settings import settings_from_config as settings_from_config

SCREENSHOT_MODES = ("off", "only-on-failure", "on")
#: The most tasks one run takes (``--bench-limit``): every task is held in memory, in the manifest
#: and in the summary, and no GUI benchmark has more.
MAX_TASKS = 100_000
#: The most VMs one cloud pool creates (``--pool-workers``).
MAX_POOL_WORKERS = 256
#: The longest wait any timeout option accepts: one day.
MAX_WAIT_SECONDS = 86_400.0
OPENCOMPUTER_DEFAULT_TIMEOUT = 30.0
OPENCOMPUTER_VERIFIER_ERRORS = ("fail", "error")
OPENCOMPUTER_HARNESS = ("auto", "opencomputer", "builtin")
OPENCOMPUTER_BACKENDS = ("bwrap", "docker")
SANDBOX_ISOLATION_MODES = ("auto", "bwrap", "none")

#: Option groups: key -> title shown by ``pytest --help``.
GROUPS = {
    "agentbench": "agent benchmarks (pytest-agentbench)",
    "agentbench-audit": "verifier audit (pytest-agentbench)",
    "agentbench-mockmed": "MockMed UI-change benchmark (pytest-agentbench)",
    "agentbench-waa": "Windows Agent Arena (pytest-agentbench)",
    "agentbench-pool": "machine pools for live benchmarks (pytest-agentbench)",
    "agentbench-agents": "agents, budgets and cost (pytest-agentbench)",
    "agentbench-opencomputer": "OpenComputer tasks (pytest-agentbench)",
    "agentbench-trajectory": "trajectory checks (pytest-agentbench)",
    "agentbench-trials": "repeated trials, statistics and run comparison (pytest-agentbench)",
}


class AgentbenchDeprecationWarning(DeprecationWarning):
    """An old option spelling was used; the message names the new one. Old spellings are accepted
    for one release."""


def config_warning(config: pytest.Config, warning: Warning) -> None:
    """Issue a configuration-time warning through pytest (so ``-W`` and ``filterwarnings`` apply).

    Why not ``config.issue_config_time_warning`` alone: when the run's filters make the warning
    an error (``-W error``, ``filterwarnings = error``), pytest raises it out of
    ``pytest_configure`` as an INTERNALERROR traceback. Here it is a usage error: one line with
    the warning's own message."""
    try:
        config.issue_config_time_warning(warning, stacklevel=3)
    except Warning as exc:
        if exc is not warning:
            raise
        raise pytest.UsageError(f"{exc} ({type(exc).__name__}, an error under the run's warning filters)") from None


# -- parsers: text -> value, raising ValueError with one line naming the option -----------------
Parse = Callable[[str], Any]


def checked(check: str, flag: str, **limits: Any) -> Parse:
    """The ``values`` check named ``check`` (``"url"``, ``"port"``...) for ``flag``. ``values`` is
    imported on first use, so a plain pytest run that gives none of these options never loads it."""
    def parse(text: str) -> Any:
        from pytest_agentbench import values

        return getattr(values, check)(flag, text, **limits)

    return parse


#: The most trials per task: far beyond what pass^k or an interval needs (k = 20 already costs 20x),
#: and a bound on the items a mistyped count makes (100000 would collect millions).
MAX_TRIALS = 1000


def _whole(flag: str, low: int = 1, high: int | None = None, note: str = "") -> Parse:
    return checked("whole", flag, low=low, high=high, note=note)


def _seconds(flag: str, *, positive: bool = False, high: float = MAX_WAIT_SECONDS, unit: str = "seconds") -> Parse:
    return checked("number", flag, low=0, low_open=positive, high=high, unit=unit)


def _lazy(module: str, name: str) -> Parse:
    """A parser that lives in another module of the package, imported when a value is given."""
    def parse(text: str) -> Any:
        import importlib

        return getattr(importlib.import_module(module, __package__), name)(text)

    return parse


def _argparse_type(parse: Parse) -> Parse:
    """``parse`` as an argparse type: its one-line message becomes the usage error."""
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except (ValueError, argparse.ArgumentTypeError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = getattr(parse, "__name__", "value")
    return convert


# -- the table --------------------------------------------------------------------------------------
class Option:
    """One setting: its flag (``flag``, plus the accepted old spellings ``old``), where the value
    goes (``dest``), its ini key, how text becomes a value, its default and its help.

    A plain class with slots rather than a named tuple or a frozen dataclass: the table is built in
    every pytest run of every project that has the plugin, ``--help`` included, and ``typing.NamedTuple``
    compiles each field's annotation to make the class (a quarter of this module's import). The rows
    are made once, here, and never changed."""

    __slots__ = ("bench_only", "choices", "default", "dest", "flag", "group", "help", "ini_key", "ini_type", "kind",
                 "metavar", "old", "parse", "path", "path_words", "typed")

    flag: str
    dest: str
    help: str
    group: str
    parse: Parse | None  # text -> checked value; None: the text itself
    choices: tuple[str, ...] | None
    kind: str  # "value", "list" (repeatable) or "flag" (on/off)
    default: Any
    metavar: str | None
    ini_key: str | None  # default agentbench_<dest>
    ini_type: str | None  # default: "args" for lists, "bool" for flags, else a string
    old: tuple[str, ...]
    #: A path: relative ones are resolved, from the invocation folder (command line) or the ini
    #: file's folder (ini key). Words in ``path_words`` (``auto``...) are left as they are.
    path: bool
    path_words: tuple[str, ...]
    #: Acts only on benchmark items: given without ``--bench``, a warning says nothing uses it.
    bench_only: bool
    #: False: the command line's text is checked at configure time (one ``ERROR: <flag> ...`` line,
    #: and code reading the option before configure sees the text) rather than as argparse parses it.
    typed: bool

    def __init__(self, flag: str, dest: str, help: str, group: str = "agentbench", parse: Parse | None = None,
                 choices: tuple[str, ...] | None = None, kind: str = "value", default: Any = None,
                 metavar: str | None = None, ini_key: str | None = None, ini_type: str | None = None,
                 old: tuple[str, ...] = (), path: bool = False, path_words: tuple[str, ...] = (),
                 bench_only: bool = False, typed: bool = True) -> None:
        self.flag, self.dest, self.help, self.group, self.parse, self.choices = flag, dest, help, group, parse, choices
        self.kind, self.default, self.metavar, self.ini_key, self.ini_type = kind, default, metavar, ini_key, ini_type
        self.old, self.path, self.path_words, self.bench_only, self.typed = old, path, path_words, bench_only, typed

    def __repr__(self) -> str:
        return f"Option({self.flag!r}, {self.dest!r})"

    @property
    def ini(self) -> str:
        return self.ini_key or f"agentbench_{self.dest}"

    @property
    def flags(self) -> tuple[str, ...]:
        return (self.flag, *self.old)

    def check(self, text: str) -> Any:
        """The value of ``text`` (from an ini key); ValueError naming the option when bad."""
        if self.choices is not None and text not in self.choices:
            raise ValueError(f"{self.flag} must be one of {', '.join(self.choices)}, got {text!r}")
        if self.parse is None:
            return text
        try:
            return self.parse(text)
        except argparse.ArgumentTypeError as exc:
            raise ValueError(str(exc)) from None


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


def _finite(flag: str, *, positive: bool = False, unit: str = "seconds") -> Parse:
    def parse(text: str) -> float:
        return parse_number(flag, text, positive=positive, unit=unit)

    return parse


def _probability(flag: str) -> Parse:
    """A significance level: a number strictly between 0 and 1."""
    def parse(text: str) -> float:
        try:
            value = float(str(text).strip())
        except ValueError:
            value = math.nan
        if not 0 < value < 1:
            raise ValueError(f"{flag} must be a probability between 0 and 1 such as 0.05, got {text!r}")
        return value

    return parse


def _money(flag: str) -> Parse:
    return checked("money", flag)


def _redact_region(text: str) -> str:
    """``X,Y,W,H`` checked at configure time (a usage error naming the fix); kept as text."""
    from pytest_agentbench.agents.redact import parse_region

    parse_region(text)
    return text


def _redact_text(text: str) -> str:
    """A regular expression checked at configure time; kept as text."""
    from pytest_agentbench.agents.redact import parse_pattern

    parse_pattern(text)
    return text


_B, _AU, _MM, _W, _P, _AG, _OC, _TR = ("agentbench", "agentbench-audit", "agentbench-mockmed", "agentbench-waa",
                                       "agentbench-pool", "agentbench-agents", "agentbench-opencomputer",
                                       "agentbench-trials")

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

#: ``--sandbox-<name>``: (default, least, most, unit, what it limits). Each is a field of
#: ``infra.sandbox.Limits`` with ``-`` as ``_``; 0 means no limit.
SANDBOX_LIMITS = {
    "memory-mb": (2048, 64, 1 << 20, "MB", "address space of each sandboxed process (RLIMIT_AS)"),
    "max-procs": (256, 8, 1 << 16, "processes", "processes and threads of the sandbox's user at once (RLIMIT_NPROC)"),
    "output-mb": (16, 1, 1 << 16, "MB", ("stdout plus stderr read back from one sandboxed command; past it the "
                                         "command is killed and reported as output over the limit")),
    "disk-mb": (6144, 16, 1 << 22, "MB", ("size of the tmpfs that holds /home/user and /tmp together; needs pytest "
                                         "to run as root, else they are not capped")),
}

OPTIONS: tuple[Option, ...] = (
    # -- the run -----------------------------------------------------------------------------------
    Option("--bench", "bench", "run the tasks of benchmark NAME as test items (repeatable).", kind="list",
           metavar="NAME", ini_key="agentbench_benchmarks"),
    Option("--bench-limit", "tasks", "run at most N tasks per benchmark (mock: make N tasks).",
           parse=_whole("--bench-limit", 1, MAX_TASKS), metavar="N", old=("--tasks",), bench_only=True),
    Option("--bench-task", "bench_task", "run only the task with this exact id (repeatable); unknown ids are errors.",
           kind="list", metavar="ID", ini_key="agentbench_bench_tasks", bench_only=True),
    Option("--bench-agent", "agent", "agent to run (default: mock).", metavar="NAME", old=("--agent",),
           bench_only=True),
    Option("--bench-agent-script", "agent_script", "JSON file of actions per task id for --bench-agent scripted.",
           metavar="FILE", old=("--agent-script",)),
    Option("--bench-max-steps", "max_steps", "step limit per task; beats the task's own limit.",
           parse=_whole("--bench-max-steps"), metavar="N", old=("--max-steps",), bench_only=True),
    Option("--bench-task-timeout", "task_timeout",
           "deadline of each episode; past it the task fails (default: pytest-timeout's timeout).",
           parse=_seconds("--bench-task-timeout", positive=True), metavar="SECONDS", ini_key="agentbench_task_timeout",
           bench_only=True),
    Option("--bench-run-name", "run_name", "name of the run folder (made unique if it exists).",
           parse=checked("run_name", "--bench-run-name"), metavar="NAME", old=("--run-name",), bench_only=True),
    Option("--bench-results-dir", "results_dir", "where run folders go (default: benchmark_results).",
           metavar="DIR", old=("--results-dir",)),
    Option("--bench-screenshots", "screenshots", "which screenshots to save: off, only-on-failure (default) or on.",
           choices=SCREENSHOT_MODES, old=("--screenshots",), bench_only=True),
    Option("--bench-baseline", "baseline",
           "results.jsonl (or run folder) of an earlier run: its non-passing tasks become xfail.",
           metavar="PATH", old=("--baseline",), bench_only=True),
    Option("--bench-min-success", "min_success", "fail the run when the success rate (outcomes only) is below RATE.",
           parse=checked("rate", "--bench-min-success"), metavar="RATE", old=("--min-success",), bench_only=True),
    Option("--bench-inspect-log", "inspect_log",
           "also write the run as an Inspect AI eval log: PATH.json, or a directory (the log gets the timestamped "
           "name inspect view lists).", metavar="PATH", old=("--inspect-log",)),
    Option("--bench-reward", "agentbench_reward",
           "extradup: also score this reward, reward(evidence) -> bool | float | None, importable from the "
           "rootdir (repeatable).", kind="list", metavar="MODULE:CALLABLE", ini_key="agentbench_reward",
           old=("--reward",)),
    Option("--sandbox-isolation", "sandbox_isolation",
           "sandboxes: auto (bubblewrap when it works, else a plain folder with a warning; default), bwrap "
           "(required) or none (a plain folder, no warning).", choices=SANDBOX_ISOLATION_MODES),
    *(Option(f"--sandbox-{name}", f"sandbox_{name.replace('-', '_')}",
             f"sandboxes: {what} (default: {default}; 0: no limit).",
             parse=checked("limit", f"--sandbox-{name}", low=low, high=high, unit=unit), metavar=unit.upper())
      for name, (default, low, high, unit, what) in SANDBOX_LIMITS.items()),
    # -- the verifier audit ----------------------------------------------------------------------------
    Option("--audit-verifier", "audit_verifier",
           "audit this benchmark's checker: toy, appworld, a registered name, or module:Attr.", _AU, metavar="NAME"),
    Option("--audit-operators", "operators", "comma-separated operators (default: all six).", _AU, kind="list",
           metavar="LIST", ini_type="string", old=("--operators",)),
    Option("--audit-tasks", "audit_tasks", "comma-separated task ids to audit (repeatable); unknown ids are errors.",
           _AU, kind="list", metavar="IDS", ini_type="string"),
    Option("--audit-split", "audit_split", "the benchmark split to take tasks from (adapter default when unset).",
           _AU, metavar="NAME", old=("--split",)),
    Option("--audit-limit", "audit_limit", "audit the first N tasks of the split (default 20; 0 = all).", _AU,
           parse=_whole("--audit-limit", 0, note=" (0 = all)"), metavar="N", old=("--limit",)),
    Option("--audit-ignore-fields", "ignore_fields",
           "fields with no task meaning, 'field' or 'table.field', comma-separated.", _AU, kind="list",
           metavar="LIST", ini_type="string", old=("--ignore-fields",)),
    Option("--audit-out", "audit_out", "write every run's result as JSON (counts and field names, never values).",
           _AU, metavar="PATH"),
    Option("--appworld-python", "appworld_python",
           "the interpreter of the AppWorld environment (or $APPWORLD_PYTHON).", _AU, metavar="PY"),
    Option("--appworld-root", "appworld_root", "the AppWorld data root holding data/tasks (or $APPWORLD_ROOT).",
           _AU, metavar="DIR"),
    # -- MockMed -------------------------------------------------------------------------------------------
    Option("--mockmed-condition", "mockmed_condition", "conditions to run: clean, theme, rename (default: all).",
           _MM, kind="list", metavar="LIST", ini_type="string"),
    Option("--mockmed-arm", "mockmed_arm",
           "arms to run: compiled, by-position, by-name, and agent (played by --bench-agent) "
           "(default: the first three).", _MM,
           kind="list", metavar="LIST", ini_type="string"),
    Option("--mockmed-runs", "mockmed_runs", "runs per condition and arm (default: 3).", _MM,
           parse=_whole("--mockmed-runs", 1, 1000), metavar="N"),
    Option("--mockmed-driver", "mockmed_driver",
           "headless (HTML to tree and pillow screenshot, default) or browser (Chromium via Playwright).", _MM,
           choices=("headless", "browser")),
    Option("--mockmed-workflow", "mockmed_workflow",
           "the compiled workflow for the compiled-replay arm; recorded on clean and written there when the file "
           "does not exist.", _MM, metavar="PATH"),
    # -- Windows Agent Arena -----------------------------------------------------------------------------
    Option("--waa-examples", "waa_examples", "WAA's evaluation_examples_windows folder (or its examples/ folder): "
           "tasks are examples/<domain>/<id>.json.", _W, metavar="PATH", path=True),
    Option("--waa-index", "waa_index", "which tasks: all (test_all.json, default), small (test_small.json) or an "
           "index file {domain: [id, ...]}.", _W, metavar="all|small|PATH", path=True, path_words=("all", "small")),
    Option("--waa-server", "waa_server", "the WAA server (default: http://localhost:5001).", _W,
           parse=checked("url", "--waa-server"), metavar="URL"),
    Option("--waa-upstream", "waa_upstream", "the WindowsAgentArena checkout (or its src/win-arena-container/client "
           "folder) whose evaluator code scores the tasks (default: found from --waa-examples).", _W, metavar="DIR",
           path=True),
    Option("--waa-python", "waa_python", "the Python that runs upstream's evaluator code (default: this one; it "
           "needs the waa extra or upstream's client requirements).", _W, metavar="PY"),
    Option("--waa-evaluate-url", "waa_evaluate_url", "score with your own evaluate server instead of upstream's "
           "code (the reference tool's scoring; see the user guide for how it differs).", _W,
           parse=checked("url", "--waa-evaluate-url"), metavar="URL"),
    Option("--waa-cdp-url", "waa_cdp_url", "Chrome's DevTools endpoint for chrome tab steps (default: port 9222 "
           "on the --waa-server host).", _W, parse=checked("url", "--waa-cdp-url"), metavar="URL"),
    Option("--waa-ready-timeout", "waa_ready_timeout",
           "wait up to SECONDS for the WAA server before the first task (default: probe once).", _W,
           parse=_seconds("--waa-ready-timeout"), metavar="SECONDS"),
    *(Option(f"--waa-{name}", f"waa_{name.replace('-', '_')}", f"{text}.", _W,
             parse=_finite(f"--waa-{name}", positive=name.endswith("timeout")), metavar="SECONDS")
      for name, text in WAA_SECONDS.items()),
    Option("--waa-download-allow", "waa_download_allow", "hosts a task's download step may fetch although they "
           "resolve to a private, loopback or link-local address (comma-separated or repeated).", _W, kind="list",
           metavar="HOSTS", ini_type="string"),
    Option("--waa-download-max-mb", "waa_download_max_mb", "largest file a download step may fetch (default: 512).",
           _W, parse=_finite("--waa-download-max-mb", positive=True, unit="megabytes"),
           metavar="MB"),
    # -- machine pools ---------------------------------------------------------------------------------------
    Option("--pool", "pool", "lease one host per process (per xdist worker): static = existing WAA servers in "
           "--pool-hosts; docker = existing Docker hosts in --pool-hosts, for --opencomputer-backend docker; "
           "aws / azure = create one VM per worker for this run and delete them at the end.", _P,
           choices=("static", "docker", "aws", "azure"), bench_only=True),
    Option("--pool-hosts", "pool_hosts", "static pool: WAA server URLs, comma-separated or repeated; "
           "URL|EVALUATE_URL to give a separate evaluate server. docker pool: Docker hosts, "
           "ssh://[user@]host[:port] (Docker's own ssh transport), tcp:// or unix://.", _P, kind="list",
           metavar="URLS"),
    Option("--pool-workers", "pool_workers", "cloud pool: VMs to create (default: one per xdist worker, else one).",
           _P, parse=_whole("--pool-workers", 1, MAX_POOL_WORKERS), metavar="N"),
    Option("--pool-region", "pool_region", "cloud pool: region (default: aws us-east-1, azure eastus).", _P,
           metavar="REGION"),
    Option("--pool-size", "pool_size", "cloud pool: instance type / VM size (default: aws m8i.2xlarge, azure "
           "Standard_D8ds_v5).", _P, metavar="SIZE"),
    Option("--pool-image", "pool_image", "cloud pool: the prepared WAA image (an AMI id; an Azure image id or "
           "publisher:offer:sku:version).", _P, metavar="IMAGE"),
    Option("--pool-ssh-user", "pool_ssh_user", "cloud pool: the VM login (default: aws ubuntu, azure azureuser).",
           _P, metavar="USER"),
    Option("--pool-ssh-key", "pool_ssh_key", "cloud pool: a private key whose FILE.pub is installed on the VMs, or "
           "a .pub file whose private key is in your SSH agent (default: a fresh key per run). docker pool: the "
           "key ssh uses for the hosts (default: your SSH setup).", _P, metavar="FILE"),
    Option("--pool-docker-image-from", "pool_docker_image_from", "cloud pool with --opencomputer-backend docker: "
           "how each VM gets the desktop image: pull (docker pull --opencomputer-image) or the http(s) URL of a "
           "docker save tarball (default: the VM image holds it).", _P, metavar="pull|URL"),
    Option("--pool-ssh-known-hosts", "pool_ssh_known_hosts", "docker pool: check the hosts' SSH keys against this "
           "known_hosts file (default: your SSH setup's).", _P, metavar="FILE"),
    Option("--pool-ssh-cidr", "pool_ssh_cidr", "cloud pool: who may reach port 22 of the VMs, e.g. 203.0.113.7/32 "
           "(default: this machine's public address, asked of an address echo service; required when that fails).",
           _P, parse=checked("cidr", "--pool-ssh-cidr"), metavar="CIDR"),
    Option("--pool-connect", "pool_connect", "cloud pool: ssh = tunnel to the VM's WAA ports (default); direct = "
           "talk to the VM's address.", _P, choices=("ssh", "direct")),
    Option("--pool-address", "pool_address", "cloud pool: which VM address to connect to (default: public).", _P,
           choices=("public", "private")),
    Option("--pool-waa-port", "pool_waa_port", "the WAA server's port on the VM (default: 5000).", _P,
           parse=checked("port", "--pool-waa-port"), default=5000, metavar="PORT"),
    Option("--pool-evaluate-port", "pool_evaluate_port", "the evaluate server's port on the VM, used with "
           "--waa-evaluate-url (default: 5051).", _P, parse=checked("port", "--pool-evaluate-port"), default=5051,
           metavar="PORT"),
    Option("--pool-cdp-port", "pool_cdp_port", "Chrome's DevTools port on the VM, forwarded for chrome tab steps "
           "(default: 9222).", _P, parse=checked("port", "--pool-cdp-port"), default=9222, metavar="PORT"),
    Option("--pool-ready-timeout", "pool_ready_timeout", "cloud pool: wait up to SECONDS per worker for SSH and WAA "
           "readiness (default: 1200).", _P, parse=_seconds("--pool-ready-timeout", positive=True),
           typed=False, metavar="SECONDS"),
    Option("--pool-auto-shutdown-hours", "pool_auto_shutdown_hours", "cloud pool: VMs stop by themselves after "
           "HOURS even if this run dies (default: 4; 0 = never; at least 1/60, one minute; at most 720).", _P,
           parse=checked("number", "--pool-auto-shutdown-hours", low=1 / 60, high=720.0, zero=True,
                         unit="hours (0 = never; the least is one minute)"), typed=False, metavar="HOURS"),
    Option("--pool-hourly-usd", "pool_hourly_usd", "cloud pool: price per VM-hour for the cost (default: the list "
           "price of the size created).", _P, parse=checked("number", "--pool-hourly-usd", low=0, high=10_000.0,
                                                          unit="US dollars"), typed=False, metavar="USD"),
    Option("--pool-poll-interval", "pool_poll_interval", "cloud pool: seconds between status polls of the cloud "
           "(default: 5).", _P, parse=_seconds("--pool-poll-interval", high=600.0), typed=False, metavar="SECONDS"),
    Option("--pool-minutes-per-task", "pool_minutes_per_task", "--pool-dry-run: VM minutes a task takes "
           "(default: 3).", _P, parse=_seconds("--pool-minutes-per-task", positive=True, high=1440.0,
                                               unit="minutes"), typed=False, metavar="MINUTES"),
    Option("--pool-dry-run", "pool_dry_run", "print the VM cost estimate for the selected tasks and start nothing.",
           _P, kind="flag", default=False),
    Option("--pool-keep", "keep_pool", "cloud pool: leave the VMs running at the end (delete them later with "
           "--agentbench-reap).", _P, kind="flag", default=False, old=("--keep-pool",)),
    Option("--agentbench-reap", "agentbench_reap", "delete every VM and resource that pytest-agentbench runs left "
           "in --pool aws|azure, then exit.", _P, kind="flag", default=False, ini_key="agentbench_reap"),
    Option("--agentbench-reap-run", "reap_run", "--agentbench-reap: only this run's resources.", _P,
           metavar="RUN_ID", old=("--reap-run",)),
    Option("--pool-azure-subscription", "azure_subscription", "azure pool: the subscription (default: "
           "AZURE_SUBSCRIPTION_ID).", _P, metavar="ID", old=("--azure-subscription",)),
    Option("--pool-aws-subnet", "aws_subnet", "aws pool: launch in this subnet (default: the default VPC).", _P,
           parse=checked("aws_subnet", "--pool-aws-subnet"), metavar="SUBNET_ID", old=("--aws-subnet",)),
    # -- agents, budgets and cost -----------------------------------------------------------------------------
    Option("--bench-agent-model", "agent_model", "api-claude / api-openai / api-vlm: the model (default: "
           "claude-sonnet-4-6 / gpt-5.4 / none, required).", _AG, metavar="MODEL", old=("--agent-model",)),
    Option("--bench-agent-url", "agent_url", "http: the agent server's base URL (POST /act, POST /reset, GET "
           "/health); api-vlm: the OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1.", _AG,
           parse=checked("url", "--bench-agent-url"), metavar="URL", old=("--agent-url",)),
    Option("--bench-agent-dialect", "agent_dialect", "api-vlm: how the model is prompted and read: qwen3vl, uitars "
           "or json (default: guessed from --bench-agent-model).", _AG, choices=("qwen3vl", "uitars", "json"),
           metavar="DIALECT"),
    Option("--bench-agent-acknowledge-safety-checks", "agent_acknowledge_safety_checks", "api-openai: acknowledge "
           "the model's pending safety checks and go on (without it a safety check ends the task as an agent "
           "error).", _AG, kind="flag", default=False),
    Option("--bench-agent-timeout", "agent_timeout", "api-claude / api-openai / http: seconds per request before it "
           "counts as failed (default: 120 / 120 / 60).", _AG, parse=_seconds("--bench-agent-timeout", positive=True),
           typed=False, metavar="SECONDS", old=("--agent-timeout",)),
    Option("--bench-replay-bundles", "replay_bundles", "replay: compiled workflows, DIR/<task id>/workflow.json.",
           _AG, metavar="DIR", old=("--replay-bundles",)),
    Option("--bench-planner", "planner", "planner-grounder: the agent that decides each step (any --bench-agent "
           "name).", _AG, metavar="NAME"),
    Option("--bench-grounder", "grounder", "planner-grounder: the agent that finds on the screen where the "
           "planner's pointing steps go.", _AG, metavar="NAME"),
    Option("--bench-planner-model", "planner_model", "planner-grounder: --bench-agent-model for the planner "
           "alone.", _AG, metavar="MODEL"),
    Option("--bench-grounder-model", "grounder_model", "planner-grounder: --bench-agent-model for the grounder "
           "alone.", _AG, metavar="MODEL"),
    Option("--bench-redact-region", "redact_region", "blank the screen region X,Y,W,H (pixels) in every "
           "observation the agent sees (repeatable); recorded on each action.", _AG, kind="list",
           parse=_redact_region, metavar="X,Y,W,H", ini_type="args", bench_only=True),
    Option("--bench-redact-text", "redact_text", "blank what matches REGEX (case-insensitive) in the accessibility "
           "tree, title and URL, and its box in the screenshot, in every observation the agent sees (repeatable).",
           _AG, kind="list", parse=_redact_text, metavar="REGEX", ini_type="args", bench_only=True),
    Option("--bench-max-cost-usd", "max_cost_usd", "stop calling models once the run has spent USD; later items "
           "are skipped (budget spent).", _AG, parse=_money("--bench-max-cost-usd"), typed=False, metavar="USD",
           old=("--max-cost-usd",), bench_only=True),
    Option("--bench-max-cost-usd-per-task", "max_cost_usd_per_task", "a task whose model calls reach USD ends as "
           "an agent error.", _AG, parse=_money("--bench-max-cost-usd-per-task"), typed=False, metavar="USD",
           old=("--max-cost-usd-per-task",), bench_only=True),
    Option("--bench-dry-run", "dry_run", "estimate VM and model cost for the selected tasks; start nothing, call "
           "no model.", _AG, kind="flag", default=False, old=("--dry-run",), bench_only=True),
    # -- OpenComputer ----------------------------------------------------------------------------------------------
    Option("--opencomputer-tasks", "opencomputer_tasks", "OpenComputer tasks: DIR/<id>/task.json with seed files in "
           "DIR/<id>/env/ (OpenComputer's task_generator/tasks, or a checkout holding it).", _OC, metavar="DIR",
           path=True),
    Option("--opencomputer-checkout", "opencomputer_checkout", "the OpenComputer checkout whose harness sets up "
           "and grades, when --opencomputer-tasks lies outside it (by default the checkout holding the tasks).",
           _OC, metavar="DIR", path=True),
    Option("--opencomputer-verifiers", "opencomputer_verifiers", "the verifier scripts, DIR/<app>/<app>.py "
           "(OpenComputer's verifiers/) or DIR/<app>.py.", _OC, metavar="DIR", path=True),
    Option("--opencomputer-end-state", "opencomputer_end_state", "grade the end states DIR/<id>/ (paths relative to "
           "/home/user) instead of playing an agent; tasks without one are skipped.", _OC, metavar="DIR",
           path=True),
    Option("--opencomputer-timeout", "opencomputer_timeout", "seconds per checker command before it is killed "
           f"(default: {OPENCOMPUTER_DEFAULT_TIMEOUT:g}).", _OC,
           parse=_finite("--opencomputer-timeout", positive=True), metavar="SECONDS"),
    Option("--opencomputer-judge", "opencomputer_judge", "judge of the LLM-judged checks, judge(check, output) -> "
           "bool | None; without it they are not evaluated.", _OC, metavar="MODULE:CALLABLE"),
    Option("--opencomputer-verifier-errors", "opencomputer_verifier_errors", "a verifier that answers an error "
           "({\"error\": ...}, a crash, a timeout) fails that check, as OpenComputer does (fail, default), or makes "
           "the item an error (error).", _OC, choices=OPENCOMPUTER_VERIFIER_ERRORS),
    Option("--opencomputer-harness", "opencomputer_harness", "who sets up and grades: OpenComputer's own harness "
           "code from the checkout --opencomputer-tasks names (opencomputer), this plugin's checker (builtin), or "
           "the first when there is a checkout (auto, default).", _OC, choices=OPENCOMPUTER_HARNESS),
    Option("--opencomputer-python", "opencomputer_python", "the sandbox's python3: an interpreter with the packages "
           "of OpenComputer's image (current, or a PATH), the host's /usr/bin/python3 (system), or the current one "
           "when it has them, else the system's (auto, default).", _OC, metavar="auto|system|current|PATH",
           path=True, path_words=("auto", "system", "current")),
    Option("--opencomputer-backend", "opencomputer_backend", "where an item's desktop runs: a bubblewrap sandbox on "
           "this host (bwrap, default), or a fresh container of OpenComputer's image made by OpenComputer's own "
           "Docker backend from the checkout (docker; DOCKER_HOST picks the daemon).", _OC,
           choices=OPENCOMPUTER_BACKENDS),
    Option("--opencomputer-image", "opencomputer_image", "--opencomputer-backend docker: the desktop image "
           "(default OpenComputer's gui-synth-env-desktop:latest).", _OC, metavar="IMAGE"),
    Option("--opencomputer-docker-memory", "opencomputer_docker_memory", "--opencomputer-backend docker: each "
           "container's memory limit, as docker run --memory takes it (default: none, as OpenComputer).", _OC,
           metavar="SIZE"),
    Option("--opencomputer-docker-cpus", "opencomputer_docker_cpus", "--opencomputer-backend docker: each "
           "container's CPUs, as docker run --cpus takes it (default: none, as OpenComputer).", _OC, metavar="N"),
    Option("--opencomputer-docker-shm-size", "opencomputer_docker_shm_size", "--opencomputer-backend docker: each "
           "container's /dev/shm (default 2g, as OpenComputer).", _OC, metavar="SIZE"),
    Option("--opencomputer-docker-ready-timeout", "opencomputer_docker_ready_timeout", "--opencomputer-backend "
           "docker: seconds a container's desktop has to become ready (default 90, as OpenComputer).", _OC,
           parse=_finite("--opencomputer-docker-ready-timeout", positive=True), metavar="SECONDS"),
    # -- trajectory checks -----------------------------------------------------------------------------------------
    Option("--trajectory-min", "trajectory_min", "fail the run when the mean score of the evaluated trajectory "
           "metrics, over every *.case.json item that ran, is below SCORE (0..1).", "agentbench-trajectory",
           parse=_lazy("pytest_agentbench.plugin.trajectory", "parse_min"), metavar="SCORE"),
    Option("--trajectory-failures-shown", "trajectory_failures_shown", "show at most N failing *.case.json items "
           "in full in pytest's failure summary (default 20; 'all'): the rest are in the short summary, JUnit XML and "
           "pytest-html, and pytest's summary costs failures x items.", "agentbench-trajectory",
           parse=_lazy("pytest_agentbench.plugin.trajectory", "parse_shown"), metavar="N|all"),
    # -- trials, comparison, resuming ------------------------------------------------------------------------------
    Option("--bench-trials", "trials", "play every task K times, as K items <task id>::trial-<n> (default 1, at "
           "most 1000).", _TR,
           parse=_whole("--bench-trials", high=MAX_TRIALS), typed=False, metavar="K", old=("--trials",),
           bench_only=True),
    Option("--bench-trial-seed", "trial_seed", "base of the per-trial seeds the agent is given (default 0): same N, "
           "same seeds.", _TR, parse=_whole("--bench-trial-seed", 0), typed=False, metavar="N", old=("--trial-seed",),
           bench_only=True),
    Option("--bench-compare", "compare", "compare this run with an earlier one (a run folder or its results.jsonl), "
           "task by task.", _TR, metavar="RUN", old=("--compare",), bench_only=True),
    Option("--bench-fail-on-regression", "fail_on_regression", "with --bench-compare: fail the run when its success "
           "rate is significantly below RUN's.", _TR, kind="flag", old=("--fail-on-regression",), bench_only=True),
    Option("--bench-regression-alpha", "regression_alpha", "significance level of --bench-fail-on-regression "
           "(default 0.05).", _TR, parse=_probability("--bench-regression-alpha"), typed=False, metavar="P",
           old=("--regression-alpha",)),
    Option("--bench-resume", "resume", "continue an interrupted run in its folder: play only items without a final "
           "record.", _TR, metavar="RUN", old=("--resume",), bench_only=True),
)

BY_DEST: dict[str, Option] = {opt.dest: opt for opt in OPTIONS}
#: Each old spelling -> its option.
OLD_SPELLINGS: dict[str, Option] = {old: opt for opt in OPTIONS for old in opt.old}
#: The argparse type of each ``--sandbox-<name>`` limit (``infra.sandbox`` checks ini values with it).
SANDBOX_LIMIT_TYPES = {opt.flag: _argparse_type(opt.parse) for opt in OPTIONS
                       if opt.flag.removeprefix("--sandbox-") in SANDBOX_LIMITS and opt.parse is not None}


# -- registration ---------------------------------------------------------------------------------
def _known_flags(parser: pytest.Parser) -> set[str]:
    groups = [*getattr(parser, "_groups", ()), getattr(parser, "_anonymous", None)]
    return {name for group in groups if group is not None for opt in group.options for name in opt.names()}


def _argparse_kwargs(opt: Option) -> dict[str, Any]:
    if opt.kind == "flag":
        return {"dest": opt.dest, "action": "store_true", "default": opt.default}
    kwargs: dict[str, Any] = {"dest": opt.dest, "default": None}
    if opt.kind == "list":
        kwargs["action"] = "append"
    if opt.parse is not None and opt.typed:
        kwargs["type"] = _argparse_type(opt.parse)
    if opt.choices is not None:
        kwargs["choices"] = opt.choices
    if opt.metavar is not None:
        kwargs["metavar"] = opt.metavar
    return kwargs


def _ini_type(opt: Option) -> str:
    return opt.ini_type or {"list": "args", "flag": "bool"}.get(opt.kind, "string")


def _ini_default(kind: str) -> Any:
    """The default an ini key of this type is registered with: empty, so an unset key reads as not given."""
    return {"args": [], "bool": False}.get(kind, "")


def add_options(parser: pytest.Parser, options: Iterable[Option] = OPTIONS) -> None:
    """``addoption`` and ``addini`` for ``options``. The old spellings are the same setting under
    another flag, hidden from ``--help``. What is registered already (a conftest that called this
    first) is left alone, so calling it twice is safe."""
    known = _known_flags(parser)
    inis = getattr(parser, "_inidict", {})
    groups: dict[str, Any] = {}  # getgroup walks every group of every plugin: once per group, not per option
    for opt in options:
        if opt.flag not in known:
            group = groups.get(opt.group)
            if group is None:
                group = groups[opt.group] = parser.getgroup(opt.group, GROUPS[opt.group])
            kwargs = _argparse_kwargs(opt)
            group.addoption(opt.flag, help=opt.help, **kwargs)
            for old in opt.old:
                group.addoption(old, help=argparse.SUPPRESS, **kwargs)
        if opt.ini not in inis:
            kind = _ini_type(opt)
            parser.addini(opt.ini, f"as {opt.flag}", type=kind, default=_ini_default(kind))  # type: ignore[arg-type]


def addoption(parser: pytest.Parser) -> None:
    """Every option of the plugin (``pytest_addoption``)."""
    add_options(parser)


# -- reading a setting ------------------------------------------------------------------------------
def _given(value: object) -> bool:
    return value is not None and value is not False and value != "" and value != []


def _resolve(config: pytest.Config, opt: Option, value: str, base: Path) -> str:
    if value in opt.path_words:
        return value
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else base / path)


def _ini_base(config: pytest.Config) -> Path:
    return Path(config.inipath).parent if config.inipath else Path(config.rootpath)


def _from_ini(config: pytest.Config, opt: Option) -> Any:
    try:
        raw = config.getini(opt.ini)
    except ValueError:  # the key is not registered (a conftest added only some options)
        return None
    if opt.kind == "flag":
        return bool(raw) or None
    if isinstance(raw, list):
        return [str(item) for item in raw] or None
    text = str(raw).strip()
    if not text:
        return None
    if opt.kind == "list":
        return [text]
    try:
        value = opt.check(text)
    except ValueError as exc:
        raise pytest.UsageError(f"ini {opt.ini}: {exc}") from None
    return _resolve(config, opt, value, _ini_base(config)) if opt.path else value


def setting(config: pytest.Config, dest: str, *, strict: bool = False) -> Any:
    """The validated value of the option ``dest``: the command line, else its ini key, else the
    default. Relative paths come back absolute (from the invocation folder on the command line,
    from the ini file's folder in the ini file). A bad ini value is a usage error naming the key.

    Every value was checked at configure time (``strict``); before that (a config that was only
    parsed), a bad command-line text of an untyped option comes back as it is, for the caller's
    own check."""
    opt = BY_DEST[dest]
    value = config.getoption(dest, None)
    if _given(value):
        if not opt.typed and isinstance(value, str):
            try:
                return opt.check(value)
            except ValueError as exc:
                if not strict:
                    return value
                raise pytest.UsageError(str(exc)) from None
        if opt.path and isinstance(value, str):
            return _resolve(config, opt, value, Path(config.invocation_params.dir))
        return value
    from_ini = _from_ini(config, opt)
    return opt.default if from_ini is None else from_ini


#: The values :func:`check_settings` read, kept for :func:`apply_settings` (each is read once a run).
_CHECKED = pytest.StashKey[dict[str, Any]]()


def check_settings(config: pytest.Config) -> None:
    """Every setting read now, so a bad ini value is one usage line before anything starts (the
    command line's values were checked as they were parsed)."""
    config.stash[_CHECKED] = {opt.dest: setting(config, opt.dest, strict=True) for opt in OPTIONS}


def apply_settings(config: pytest.Config) -> None:
    """Every setting's value put where ``config.getoption(dest)`` finds it: ini values, defaults
    and resolved paths, so code reading an option by its dest sees the same as :func:`setting`.
    The values are plain (str, int, float, bool, lists of str): xdist sends them to its workers."""
    values = config.stash.get(_CHECKED, None)
    if values is None:
        values = {opt.dest: setting(config, opt.dest) for opt in OPTIONS}
    else:
        del config.stash[_CHECKED]
    for dest, value in values.items():
        setattr(config.option, dest, value)


def given_on_command_line(config: pytest.Config, dest: str) -> bool:
    return _given(config.getoption(dest, None))


# -- old spellings ----------------------------------------------------------------------------------
def _argument_words(config: pytest.Config) -> list[str]:
    """The words pytest parsed options from: ``PYTEST_ADDOPTS``, the ini file's ``addopts`` and the
    command line, each up to a bare ``--``."""
    sources: list[list[str]] = []
    try:
        sources.append(shlex.split(os.environ.get("PYTEST_ADDOPTS", "")))
    except ValueError:
        pass
    try:
        sources.append([str(word) for word in config.getini("addopts")])
    except ValueError:
        pass
    sources.append([str(word) for word in config.invocation_params.args])
    words: list[str] = []
    for source in sources:
        words.extend(source[:source.index("--")] if "--" in source else source)
    return words


def old_spellings_used(config: pytest.Config) -> list[str]:
    """The old spellings among the options given, each once, in the order given."""
    used: list[str] = []
    for word in _argument_words(config):
        name = word.split("=", 1)[0]
        if name in OLD_SPELLINGS and name not in used:
            used.append(name)
    return used


def warn_old_spellings(config: pytest.Config) -> None:
    """One :class:`AgentbenchDeprecationWarning` per old spelling used, naming the new one."""
    if hasattr(config, "workerinput"):  # the controller warned
        return
    for old in old_spellings_used(config):
        new = OLD_SPELLINGS[old].flag
        config_warning(config, AgentbenchDeprecationWarning(
            f"{old} is now spelled {new}; {old} still works in this release and will be removed in the next"))


def only_answers(config: pytest.Config) -> bool:
    """``pytest --help`` or ``--version``: pytest prints and exits without a session, so no setting
    is read, checked or warned about (a broken ini value does not hide the help that documents it)."""
    option = config.option
    return bool(getattr(option, "help", False) or getattr(option, "version", 0))


def configure(config: pytest.Config) -> None:
    """At configure time: old spellings warned about, every setting checked."""
    warn_old_spellings(config)
    check_settings(config)


# -- what the run asks for ------------------------------------------------------------------------
def _listed(values: list[str] | None) -> list[str]:
    """Comma-separated words of a repeatable option, in order."""
    return [part.strip() for text in values or () for part in str(text).split(",") if part.strip()]


def benchmarks_requested(config: pytest.Config) -> list[str]:
    """Benchmark names from --bench or the ini key; empty means the plugin stays inert."""
    return list(dict.fromkeys(_listed(setting(config, "bench"))))


def audit_requested(config: pytest.Config) -> str | None:
    value = setting(config, "audit_verifier")
    return None if value is None else str(value)


def money_setting(config: pytest.Config, name: str, flag: str = "") -> float | None:
    """A dollar amount option (``--bench-max-cost-usd`` and friends): a number > 0, or None."""
    value = setting(config, name)
    return None if value is None else float(value)


#: The settings objects, defined in ``plugin/run_settings.py`` (loaded by benchmark and audit runs only)
#: and importable from here too.
_RUN_SETTINGS = ("Settings", "AuditSettings", "settings_from_config", "audit_settings_from_config")


def __getattr__(name: str) -> Any:
    if name in _RUN_SETTINGS:
        from pytest_agentbench.plugin import run_settings

        return getattr(run_settings, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
