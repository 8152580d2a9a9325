"""pytest11 entry point. Inert unless a benchmark is requested (``--bench`` or the ini key).

Installed plugins load in every pytest run of every project, so this module imports only pytest
and the standard library at startup; pydantic models, httpx and pillow load when a run asks for a
benchmark.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from pytest_agentbench.plugin import hookspecs, options

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from pytest_agentbench.agent import Agent
    from pytest_agentbench.benchmark import Benchmark
    from pytest_agentbench.infra.sandbox import Sandbox
    from pytest_agentbench.model import EpisodeRecord, Task
    from pytest_agentbench.record.runfolder import RunFolder
    from pytest_agentbench.registry import AdapterRegistry, AgentRegistry, BenchmarkRegistry
    from pytest_agentbench.settings import Settings


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    options.addoption(parser)  # every option and ini key, from the table in options.py


def pytest_agentbench_terminal_summary(terminalreporter: object, records: list[dict[str, Any]]) -> None:
    mockmed = [r for r in records if r.get("benchmark") == "mockmed"]
    if mockmed:
        from pytest_agentbench.benches.mockmed.report import render

        terminalreporter.write_line("")  # type: ignore[attr-defined]
        for line in render(mockmed):
            terminalreporter.write_line(line)  # type: ignore[attr-defined]
    not_run = [r for r in records if r.get("benchmark") == "opencomputer" and r.get("status") == "skipped"]
    if not_run:
        # Items that cannot run here (no display, an app not installed, no end state) are skipped,
        # which exits 0: say why without -rs, so a run that graded nothing does not read as green.
        from collections import Counter

        from pytest_agentbench.text import shorten

        total = sum(1 for r in records if r.get("benchmark") == "opencomputer")
        why = Counter(shorten(r.get("reason") or "no reason given", 160) for r in not_run)
        terminalreporter.write_line("")  # type: ignore[attr-defined]
        terminalreporter.write_line(  # type: ignore[attr-defined]
            f"OpenComputer: {len(not_run)} of {total} item(s) were not run here (skipped):", yellow=True)
        for reason, count in why.most_common(3):
            terminalreporter.write_line(f"  {count} x {reason}")  # type: ignore[attr-defined]
        if len(why) > 3:
            terminalreporter.write_line(f"  ... and {len(why) - 3} other reason(s) (-rs lists every item)")  # type: ignore[attr-defined]


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """``--agentbench-reap`` runs instead of a session; ``--pool-dry-run`` only collects (so
    ``-k`` and ``-m`` choose the tasks it prices) and never starts a worker or a VM. ``--help`` and
    ``--version`` answer first: nothing is read for them."""
    if options.only_answers(config):
        return None
    from pytest_agentbench.plugin import heap

    # before configure, so that a thaw follows pytest's cleanups (see plugin/heap.py); it freezes
    # nothing itself: benchmark runs and runs of case files alone freeze after collection
    heap.reserve(config)
    if options.setting(config, "agentbench_reap"):
        from pytest_agentbench.plugin.pools import run_reaper

        try:
            return run_reaper(config)
        except pytest.UsageError as exc:
            print(f"ERROR: {exc}")
            return int(pytest.ExitCode.USAGE_ERROR)
    dry_run = options.setting(config, "dry_run")
    if options.setting(config, "pool_dry_run") and not dry_run:
        if not options.setting(config, "pool"):
            raise pytest.UsageError("--pool-dry-run needs --pool static|aws|azure (the pool to price)")
        config.option.collectonly = True
        _count_only(config)
    if dry_run:
        config.option.collectonly = True
        _count_only(config)
    return None


def _count_only(config: pytest.Config) -> None:
    """A dry run collects to count the tasks; the estimate, not a list of every item, is the
    answer. Without -v the collection is shown as one count per benchmark (as ``-qq``)."""
    if config.option.verbose == 0:
        config.option.verbose = -2


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Trajectory test cases: one item per ``*.case.json`` file. A suffix check; nothing loads for
    any other file."""
    if not file_path.name.endswith(".case.json"):
        return None
    from pytest_agentbench.plugin.trajectory import collect_case_file

    return collect_case_file(file_path, parent)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Node id arguments of benchmark and audit items select them (``plugin/node_args.py``); an
    attribute look-up in any other run."""
    if getattr(config.option, "agentbench_node_ids", None):
        from pytest_agentbench.plugin import node_args

        node_args.select(config, items, ("bench/", "audit/"))


@pytest.hookimpl(tryfirst=True)
def pytest_exception_interact(node: pytest.Item | pytest.Collector, call: pytest.CallInfo[Any],
                              report: pytest.TestReport | pytest.CollectReport) -> None:
    """Before ``--pdb`` (or another interactive hook) looks at a benchmark item's failure, put the
    exception of the user's agent, environment or checker in its place (the outcome was raised
    from it): the debugger then stops in the user's frame that raised, not in this plugin."""
    excinfo = call.excinfo
    if (excinfo is not None and node.nodeid.startswith("bench/") and isinstance(excinfo.value, pytest.fail.Exception)
            and excinfo.value.__cause__ is not None):
        call.excinfo = pytest.ExceptionInfo.from_exception(excinfo.value.__cause__)


def pytest_report_from_serializable(config: pytest.Config, data: dict[str, Any]) -> None:
    """Under xdist the controller collects nothing: the first trajectory result a worker sends
    loads the trajectory summary and the ``--trajectory-min`` gate."""
    if "agentbench_trajectory" in data:
        from pytest_agentbench.plugin.trajectory import ensure_reporter

        ensure_reporter(config)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if options.only_answers(config):  # ``pytest --help`` configures too, then prints and exits
        return
    options.configure(config)  # old spellings warned about; every value checked (a usage error)
    benchmarks = options.benchmarks_requested(config)
    audit = options.audit_requested(config)
    if benchmarks:
        _warn_unused_mockmed_options(config)
    else:
        _warn_unused_bench_options(config)
    options.apply_settings(config)  # from here config.getoption(dest) sees ini values and defaults too
    if benchmarks or audit:
        from pytest_agentbench.plugin import node_args

        # copied node ids (bench/mock::chrome::mock_chrome_001) select items instead of naming files
        node_args.take(config, ("bench/",) * bool(benchmarks) + ("audit/",) * bool(audit))
        from pytest_agentbench.plugin.bridge import attach

        attach(config)  # config.agentbench_settings: what library code reads the options through
        config.pluginmanager.register(ShortFixtureNames, "agentbench-fixture-names")
        config.pluginmanager.register(run_fixtures(config), "agentbench-run-fixtures")
    if audit:
        _configure_audit(config)
    _register_report_plugins(config, items_requested=bool(benchmarks or audit))
    if not benchmarks:
        return
    from pytest_agentbench.plugin.run_settings import settings_from_config
    from pytest_agentbench.plugin.session import AgentbenchPlugin, is_worker
    from pytest_agentbench.plugin.state import STATE_KEY

    state = AgentbenchPlugin(config, settings_from_config(config))
    from pytest_agentbench.plugin.trials import configure_trials

    configure_trials(config, controller=not is_worker(config))  # --bench-trials, --bench-compare, --bench-resume
    if is_worker(config):
        from pytest_agentbench.plugin.resume import register_on_worker

        register_on_worker(config)  # a resumed run's workers deselect the items already done
    config.stash[STATE_KEY] = state
    config.pluginmanager.register(state, "agentbench-session")
    if not is_worker(config):
        from pytest_agentbench.plugin.controller import RunController

        config.pluginmanager.register(RunController(state), "agentbench-controller")
        if config.pluginmanager.hasplugin("xdist"):
            from pytest_agentbench.plugin.xdist import XdistController

            config.pluginmanager.register(XdistController(state), "agentbench-xdist")


def _register_report_plugins(config: pytest.Config, *, items_requested: bool) -> None:
    """What third-party report plugins show of this plugin's items, the same for every item kind:
    pytest-html's columns and links, allure's attachments and status, GitHub annotations of setup
    errors. Each is loaded only when its tool is active in this run."""
    pluginmanager = config.pluginmanager
    if pluginmanager.hasplugin("html") and getattr(config.option, "htmlpath", None):
        from pytest_agentbench.plugin.html import HtmlColumns, wanted

        if wanted(config, items_requested=items_requested):
            pluginmanager.register(HtmlColumns(config), "agentbench-html")
    if not hasattr(config, "workerinput") and pluginmanager.hasplugin("xdist") and \
            getattr(config.option, "count", None) not in (None, 1):
        from pytest_agentbench.plugin.repeat import CaseRepeatGuard

        pluginmanager.register(CaseRepeatGuard(), "agentbench-case-repeat")
    if getattr(config.option, "allure_report_dir", None):  # allure-pytest writes results (its listener
        # may register after this plugin's configure: AllureReports looks it up for each report)
        from pytest_agentbench.plugin.integrations import AllureReports

        pluginmanager.register(AllureReports(config), "agentbench-allure")
    if os.environ.get("GITHUB_ACTIONS") == "true" and not hasattr(config, "workerinput"):
        from pytest_agentbench.plugin.integrations import SetupErrorAnnotations

        pluginmanager.register(SetupErrorAnnotations(config), "agentbench-github-annotations")


def _warn_unused_bench_options(config: pytest.Config) -> None:
    """Options that only act on benchmark items do nothing without ``--bench``: say so once, rather
    than let ``pytest --pool aws`` look like it ran on a pool."""
    given = [opt.flag for opt in options.OPTIONS if opt.bench_only and options.given_on_command_line(config, opt.dest)]
    if given and not hasattr(config, "workerinput"):
        options.config_warning(config, pytest.PytestConfigWarning(
            f"{', '.join(given)} given without --bench: nothing uses it "
            "(name a benchmark with --bench NAME)"))


def _warn_unused_mockmed_options(config: pytest.Config) -> None:
    """MockMed's options do nothing for another benchmark: say so once."""
    if "mockmed" in options.benchmarks_requested(config) or hasattr(config, "workerinput"):
        return
    given = [opt.flag for opt in options.OPTIONS
             if opt.group == "agentbench-mockmed" and options.given_on_command_line(config, opt.dest)]
    if given:
        options.config_warning(config, pytest.PytestConfigWarning(
            f"{', '.join(given)} given, but --bench has no mockmed: nothing uses it"))


def _configure_audit(config: pytest.Config) -> None:
    from pytest_agentbench.plugin.repeat import refuse_repeat

    refuse_repeat(config, "verifier-audit items", "each task is audited once per run; run without --count")
    from pytest_agentbench.plugin.audit import AUDIT_KEY, AuditSession, AuditXdist
    from pytest_agentbench.plugin.run_settings import audit_settings_from_config

    session = AuditSession(config, audit_settings_from_config(config))
    config.stash[AUDIT_KEY] = session
    config.pluginmanager.register(session, "agentbench-audit")
    if not hasattr(config, "workerinput") and config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(AuditXdist(session), "agentbench-audit-xdist")
    config.addinivalue_line("markers", "audit: verifier-audit items (pytest-agentbench)")


# -- the built-ins, registered through the same hooks a conftest.py uses ------------------------
# tryfirst: the built-ins register before any conftest or installed plugin, so those can replace
# a built-in by registering the same name.
@pytest.hookimpl(tryfirst=True)
def pytest_agentbench_register_benchmarks(registry: BenchmarkRegistry) -> None:
    from pytest_agentbench.plugin.bridge import builtin, settings_for, usage_errors

    def mock(config: pytest.Config | None) -> Benchmark:
        from pytest_agentbench.benches.mock import MockBenchmark

        return MockBenchmark()

    def mockmed(config: pytest.Config | None) -> Benchmark:
        from pytest_agentbench.benches.mockmed.arms import ARMS
        from pytest_agentbench.benches.mockmed.bench import CONDITIONS, MockMedBenchmark

        def listed(name: str, default: tuple[str, ...]) -> tuple[str, ...]:
            raw = config.getoption(name) if config is not None else None
            values = [v.strip() for text in (raw or []) for v in str(text).split(",") if v.strip()]
            return tuple(dict.fromkeys(values)) or default

        runs = config.getoption("mockmed_runs") if config is not None else None
        driver = config.getoption("mockmed_driver") if config is not None else None
        workflow = config.getoption("mockmed_workflow") if config is not None else None
        return MockMedBenchmark(listed("mockmed_condition", CONDITIONS), listed("mockmed_arm", ARMS),
                                runs or 3, driver or "headless", workflow)

    registry.register("mock", mock, description="offline synthetic window; tests the harness, no VM or key")
    registry.register("mockmed", mockmed,
                      description="a local medical-records web app: does a workflow survive a UI change?")

    @builtin
    def waa(settings: Settings | None) -> Benchmark:
        from pytest_agentbench.benches.waa.bench import WAABenchmark

        return WAABenchmark.from_config(settings)

    registry.register("waa", waa,
                      description="Windows Agent Arena tasks on a live WAA server (--waa-examples, --waa-server)")

    def extradup(config: pytest.Config | None) -> object:
        from pytest_agentbench.plugin.suites import ExtraDup

        if config is None:
            raise ValueError("the extradup benchmark needs a pytest config")
        with usage_errors():
            return ExtraDup(config)

    def opencomputer(config: pytest.Config | None) -> Benchmark:
        from pytest_agentbench.benches.opencomputer.bench import OpenComputerBenchmark
        from pytest_agentbench.plugin.isolation import session_isolation, session_limits

        if config is None:
            raise ValueError("the opencomputer benchmark needs its options (--opencomputer-tasks DIR)")
        import warnings

        with usage_errors(), warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            bench = OpenComputerBenchmark.from_config(settings_for(config), isolation=lambda: session_isolation(config),
                                                      limits=session_limits(config),
                                                      runs=not config.option.collectonly)
        if not hasattr(config, "workerinput"):  # what it says about the setup, once, through pytest's filters
            for note in said:
                message = note.message
                options.config_warning(config, message if isinstance(message, Warning) else UserWarning(message))
        return bench

    registry.register("opencomputer", opencomputer,
                      description="OpenComputer tasks, set up and graded by its own harness code in a sandbox "
                                  "(--opencomputer-tasks CHECKOUT)")

    registry.register_suite("extradup", extradup, description="does a reward pay for wrong writes? (MockMed records)")


@pytest.hookimpl(tryfirst=True)
def pytest_agentbench_register_agents(registry: AgentRegistry) -> None:
    from pytest_agentbench.plugin.bridge import builtin, settings_for, usage_errors

    def mock(config: pytest.Config | None) -> Agent:
        from pytest_agentbench.agents import MockAgent

        return MockAgent()

    def noop(config: pytest.Config | None) -> Agent:
        from pytest_agentbench.agents import NoopAgent

        return NoopAgent()

    def scripted(config: pytest.Config | None) -> Agent:
        from pytest_agentbench.agents import ScriptedAgent, load_script

        path = None
        if config is not None:
            from pytest_agentbench.plugin.state import STATE_KEY

            state = config.stash.get(STATE_KEY, None)
            path = state.settings.agent_script if state is not None else config.getoption("agent_script")
        if not path:
            raise pytest.UsageError("--bench-agent scripted needs --bench-agent-script FILE (a JSON object of actions "
                                    "per task id)")
        try:
            return ScriptedAgent(load_script(path))
        except ValueError as exc:
            raise pytest.UsageError(f"--bench-agent-script: {exc}") from None

    def made_by(module: str) -> Callable[[pytest.Config | None], Agent]:
        """The factory of an agent whose module has ``make_agent(settings)``, imported on first use."""
        def make(settings: Settings | None) -> Agent:
            import importlib

            return cast("Agent", importlib.import_module(module).make_agent(settings))

        return builtin(make)

    api_claude = made_by("pytest_agentbench.agents.claude")
    api_openai = made_by("pytest_agentbench.agents.openai_computer")
    api_vlm = made_by("pytest_agentbench.agents.vlm")
    http = made_by("pytest_agentbench.agents.http")
    replay = made_by("pytest_agentbench.agents.replay")

    registry.register("mock", mock, description="clicks the button the mock checker looks for, then done")
    registry.register("noop", noop, description="says done at once; fails every task")
    registry.register("scripted", scripted, description="plays actions per task id from --bench-agent-script FILE")
    def api_claude_estimate(config: pytest.Config | None, screen: tuple[int, int]) -> object:
        from pytest_agentbench.agents.claude import estimate_for  # needs neither the SDK nor a key

        return estimate_for(settings_for(config), screen)

    registry.register("api-claude", api_claude,
                      description="Claude with the computer-use tool (ANTHROPIC_API_KEY; extra: claude)",
                      estimate=api_claude_estimate)
    registry.register("api-openai", api_openai,
                      description="an OpenAI model with the Responses API's computer tool "
                                  "(OPENAI_API_KEY; extra: openai)")
    registry.register("api-vlm", api_vlm,
                      description="a VLM behind an OpenAI-compatible chat endpoint: --bench-agent-url, "
                                  "--bench-agent-model, --bench-agent-dialect qwen3vl|uitars|json (extra: openai)")
    def planner_grounder(config: pytest.Config | None) -> Agent:
        from pytest_agentbench.agents.planner_grounder import PlannerGrounderAgent, RoleConfig, RoleSettings
        from pytest_agentbench.plugin.state import config_state

        if config is None:
            raise pytest.UsageError("--bench-agent planner-grounder needs a benchmark run")
        settings = settings_for(config)
        names = {role: options.setting(config, role) for role in ("planner", "grounder")}
        missing = [role for role, name in names.items() if not name]
        if missing:
            raise pytest.UsageError(f"--bench-agent planner-grounder needs --bench-{missing[0]} NAME, an agent "
                                    "name such as api-claude or api-vlm")
        registry = config_state(config).agent_registry
        made: dict[str, Agent] = {}
        try:
            for role, name in names.items():
                if name == "planner-grounder" or name not in registry:
                    known = ", ".join(n for n in registry.names() if n != "planner-grounder")
                    raise pytest.UsageError(f"--bench-{role} {name!r} is not an agent to compose; one of {known}")
                role_config = RoleConfig(config, RoleSettings(settings, options.setting(config, f"{role}_model")))
                with usage_errors():
                    made[role] = registry.create(name, role_config)
                if not getattr(made[role], "name", None) or made[role].name == "agent":
                    made[role].name = name
        except BaseException:
            for agent in made.values():
                agent.close()
            raise
        return PlannerGrounderAgent(made["planner"], made["grounder"])

    registry.register("planner-grounder", planner_grounder,
                      description="a planner agent says what to do, a grounder agent where: --bench-planner NAME "
                                  "--bench-grounder NAME (--bench-planner-model, --bench-grounder-model)")
    registry.register("http", http,
                      description="an agent served elsewhere: --bench-agent-url URL (POST /act, /reset; GET /health)")
    registry.register("replay", replay, description="replays a compiled workflow per task: "
                                                    "--bench-replay-bundles DIR/<task id>/workflow.json")


@pytest.hookimpl(tryfirst=True)
def pytest_agentbench_register_audit_adapters(registry: AdapterRegistry) -> None:
    def toy(config: pytest.Config | None) -> object:
        from pytest_agentbench.audit.adapters.toy import ToyAdapter

        return ToyAdapter()

    def appworld(config: pytest.Config | None) -> object:
        from pytest_agentbench.audit.adapters.appworld import AppWorldAdapter, AppWorldSetupError

        python = options.setting(config, "appworld_python") if config is not None else None
        root = options.setting(config, "appworld_root") if config is not None else None
        try:
            return AppWorldAdapter.from_env(python=python, root=root)
        except AppWorldSetupError as exc:
            raise pytest.UsageError(str(exc)) from None

    registry.register("toy", toy, description="five synthetic tasks in memory; two checkers have a loophole")
    registry.register("appworld", appworld, description="AppWorld in its own interpreter")


# -- fixtures ------------------------------------------------------------------------------------
# Every fixture of the plugin has a name of its own (``agentbench_*``): installed plugins load in
# every project, and a plain ``agent`` or ``vm`` fixture would shadow or collide with a project's.
# The short names (``agent``, ``vm``, ``sandbox``, ``episode``, ``bench_task``, ``bench_env``,
# ``run_record``, ``audit_run``) exist only in runs that ask for a benchmark or an audit
# (``ShortFixtureNames``, registered in ``pytest_configure``).
def bench_task(request: pytest.FixtureRequest) -> Task:
    """The task of the current benchmark item (``bench_task`` in benchmark runs)."""
    from pytest_agentbench.plugin.state import task_from_item

    return task_from_item(request.node)


# Fixtures take ``pytestconfig`` rather than ``request`` where they can: each ``request`` look-up
# costs pytest a new fixture definition per item, which is measurable at hundreds of tasks.
agentbench_task = pytest.fixture(name="agentbench_task")(bench_task)


def bench_env(agentbench_task: Task, pytestconfig: pytest.Config) -> Benchmark:
    """The benchmark (environment and checker) of the current item; one instance per process
    (``bench_env`` in benchmark runs)."""
    from pytest_agentbench.plugin.state import config_state

    return config_state(pytestconfig).benchmark(agentbench_task.benchmark)


agentbench_env = pytest.fixture(name="agentbench_env")(bench_env)


@pytest.fixture(scope="session")
def agentbench_agent(pytestconfig: pytest.Config) -> Agent:
    """The ``--bench-agent`` agent; one instance per process (the episode loop calls its ``reset``
    before each task). Override it, or ``agent`` in benchmark runs, in a conftest.py, with any
    scope, to test your own agent object without registering it."""
    from pytest_agentbench.plugin.state import config_state

    return config_state(pytestconfig).agent()


@pytest.fixture(scope="session")
def agentbench_vm(pytestconfig: pytest.Config) -> dict[str, Any] | None:
    """The cloud VM this process leased (``--pool aws|azure``), as a dict: ``name``,
    ``resource_id``, ``public_ip``, ``private_ip``, ``ssh_user``, ``host_key``, ``created_at``.
    Without xdist the first use creates the run's one VM. None with a static pool or no pool."""
    from pytest_agentbench.plugin.state import config_state

    pools = config_state(pytestconfig).pools
    return pools.vm() if pools is not None else None


def run_record(pytestconfig: pytest.Config) -> RunFolder | None:
    """The run folder (None under --collect-only)."""
    from pytest_agentbench.plugin.state import config_state

    return config_state(pytestconfig).run_folder


agentbench_run_record = pytest.fixture(name="agentbench_run_record")(run_record)


def episode(pytestconfig: pytest.Config, agent: Agent) -> EpisodeRecord:
    """The item's episode record: the episode plays here when a fixture of the item asks for it
    (an autouse fixture of a conftest that wants the record), else in ``BenchItem.setup`` after
    the fixtures; either way once per run of the item (``run_fixtures`` has the one benchmark runs
    use).

    Infrastructure and evaluation errors fail here, so pytest reports them as errors (setup),
    not as failures of the agent. The task and benchmark come from the item directly (the same
    objects the ``bench_task`` and ``bench_env`` fixtures give); the item is the one being set
    up, which the session notes (it takes no ``request``, see above).
    """
    from pytest_agentbench.plugin.episodes import play_item

    return play_item(pytestconfig, agent)


#: The episode fixture, for a conftest fixture that wants the record: it asks for ``agent``, so a
#: conftest override of ``agent`` (short name) or of ``agentbench_agent`` (which the short ``agent``
#: returns) is the agent that plays, as in ``BenchItem.setup``.
agentbench_episode = pytest.fixture(name="agentbench_episode")(episode)


def sandbox(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Iterator[Sandbox]:
    """A fresh sandbox folder for this test: ``sandbox.run(argv, timeout=...)`` runs a command in it
    with ``/home/user`` and ``/tmp`` as its only writable folders and no network (bubblewrap), or
    in a plain folder with a warning when bubblewrap is missing or unusable (--sandbox-isolation)."""
    from pytest_agentbench.infra.sandbox import Sandbox
    from pytest_agentbench.plugin.isolation import session_isolation, session_limits

    box = Sandbox(tmp_path_factory.mktemp("sandbox"), session_isolation(pytestconfig),
                  limits=session_limits(pytestconfig))
    try:
        yield box
    finally:
        box.close()


def audit_run(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The audit item's run result: its task is audited (once per task per process) here when a
    fixture of the item asks for it, else in ``AuditItem.setup`` after the fixtures. Runs that
    could not be judged (error, invalid control, no reference) fail the setup, so pytest reports
    them as errors."""
    from pytest_agentbench.plugin.audit import run_audit

    return run_audit(request.node)


agentbench_sandbox = pytest.fixture(name="agentbench_sandbox")(sandbox)
agentbench_audit_run = pytest.fixture(name="agentbench_audit_run")(audit_run)


def _short_agent(agentbench_agent: Agent) -> Agent:
    return agentbench_agent


def _short_vm(agentbench_vm: dict[str, Any] | None) -> dict[str, Any] | None:
    return agentbench_vm


def run_fixtures(config: pytest.Config) -> type:
    """The fixtures every benchmark item resolves, bound to the run's config, as a class registered
    as a plugin in runs that ask for a benchmark or an audit; they take the place of the module's
    fixtures of the same names (a conftest.py override still wins over both).

    Why bound: a fixture that takes ``pytestconfig`` puts ``pytestconfig`` and ``request`` in
    every item's fixture closure, and pytest resolves each name of the closure per item, building
    a new fixture definition (with ``inspect.signature``) for each ``request``. Bound to the
    config, an item's closure is ``episode``, ``agent`` and ``agentbench_agent``: the fixtures it
    uses, and nothing for the plumbing.

    Why a class of closures made per config, not methods of an instance: pytest 9.2 deprecates
    session-scoped fixtures that are instance methods (``PytestRemovedIn10Warning``, an error
    under ``-W error``). Functions stored in a class that is itself the plugin are looked up
    unbound, as the module's fixtures are, and each pytest run in one process (``pytester``) gets
    a class of its own."""

    def agentbench_agent() -> Agent:
        """The ``--bench-agent`` agent; one instance per process (see the module's fixture)."""
        from pytest_agentbench.plugin.state import config_state

        return config_state(config).agent()

    def agentbench_episode(agent: Agent) -> EpisodeRecord:
        """Plays the item's episode during setup and returns its record (see ``episode``)."""
        from pytest_agentbench.plugin.episodes import play_item

        return play_item(config, agent)

    def episode(agent: Agent) -> EpisodeRecord:
        """Plays the item's episode during setup and returns its record (see ``episode``)."""
        from pytest_agentbench.plugin.episodes import play_item

        return play_item(config, agent)

    return type("RunFixtures", (), {
        "__doc__": run_fixtures.__doc__,
        "agentbench_agent": pytest.fixture(scope="session", name="agentbench_agent")(agentbench_agent),
        "agentbench_episode": pytest.fixture(name="agentbench_episode")(agentbench_episode),
        "episode": pytest.fixture(name="episode")(episode),
    })


class ShortFixtureNames:
    """The short fixture names, registered as a plugin only in runs that ask for a benchmark or an
    audit. ``agent`` and ``vm`` return the ``agentbench_`` fixture (so overriding either name
    wins); the function-scoped ones are the same fixture function under a second name, which adds
    no fixture layer per item."""

    agent = pytest.fixture(scope="session", name="agent")(_short_agent)
    vm = pytest.fixture(scope="session", name="vm")(_short_vm)
    sandbox = pytest.fixture(name="sandbox")(sandbox)
    audit_run = pytest.fixture(name="audit_run")(audit_run)
    bench_task = pytest.fixture(name="bench_task")(bench_task)
    bench_env = pytest.fixture(name="bench_env")(bench_env)
    run_record = pytest.fixture(name="run_record")(run_record)
