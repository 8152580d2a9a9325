"""The plugin object registered when a benchmark is requested: it resolves the manifest, builds
the collectors, plays episodes for the fixtures and attaches each item's record to its reports.

Controller-only work (the run folder's results.jsonl, summary, terminal report, thresholds) lives in
``record/controller.py``; xdist wiring in ``xdist_support.py``.
"""

from __future__ import annotations

import functools
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_agentbench.outcomes import default_outcome
from pytest_agentbench.phases import ENDED
from pytest_agentbench.plugin import reporting
from pytest_agentbench.plugin.artifacts import save_episode
from pytest_agentbench.plugin.bridge import usage_errors
from pytest_agentbench.plugin.episodes import BenchItem, suites_for
from pytest_agentbench.plugin.state import (  # noqa: F401 - re-exported: conftests reach the run's state here
    CAUSE_KEY,
    OUTCOME_KEY,
    PAYLOAD_ATTR,
    PAYLOAD_KEY,
    STATE_KEY,
    TASK_KEY,
    config_state,
    is_episode_item,
    task_from_item,
)
from pytest_agentbench.plugin.task_timeout import episode_deadline, own_timeout
from pytest_agentbench.plugin.trials import record_fields

if TYPE_CHECKING:
    from collections.abc import Callable, Generator

    from pytest_agentbench.agent import Agent
    from pytest_agentbench.benchmark import Benchmark
    from pytest_agentbench.budget import Budget
    from pytest_agentbench.manifest import Manifest
    from pytest_agentbench.model import EpisodeRecord, Observation, Task
    from pytest_agentbench.phases import PhaseNote
    from pytest_agentbench.plugin.pools import PoolManager
    from pytest_agentbench.plugin.run_settings import Settings
    from pytest_agentbench.record.runfolder import RunFolder
    from pytest_agentbench.registry import AgentRegistry, BenchmarkRegistry

MANIFEST_INPUT = "agentbench_manifest"
RUNFOLDER_INPUT = "agentbench_run_folder"
LEASE_INPUT = "agentbench_lease"
#: The folder where each worker notes the phase of its item (``phases.py``), for the controller.
PHASES_INPUT = "agentbench_phases"


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def report_view(config: pytest.Config, payload: dict[str, Any]) -> reporting.View:
    """What report plugins show of a benchmark item: its score, steps and verdict (the error or
    the checker's reason), and its trajectory and screenshots in the run folder."""
    state = config.stash.get(STATE_KEY, None)
    folder = state.run_folder.path.absolute() if state is not None and state.run_folder is not None else None
    names = [payload.get("trajectory"), *payload.get("screenshots", ())] if folder is not None else []
    files = tuple((folder / name, Path(name).name) for name in names if name and folder is not None)
    return reporting.View(score=float(payload["score"]), steps=int(payload["num_steps"]),
                          verdict=str(payload.get("reason") or ""), files=files,
                          settle=state.writer.flush if state is not None else None)


class AgentbenchPlugin:
    """State of one pytest process (controller or worker) for a benchmark run."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.manifest: Manifest | None = None
        self.known_failures: dict[str, str] = {}
        self.run_folder: RunFolder | None = None
        self.benchmarks: dict[str, Benchmark] = {}
        self.suites: dict[str, Any] = {}
        self._agent: Agent | None = None
        self._bench_registry: BenchmarkRegistry | None = None
        self._agent_registry: AgentRegistry | None = None
        from pytest_agentbench.record.writer import BackgroundWriter

        self.writer = BackgroundWriter()
        #: The machine pool (``--pool``): leases, connections, VM lifecycle. None without it.
        self.pools: PoolManager | None = None
        self._pointed: set[str] = set()
        self._budget: Budget | bool | None = None
        self._estimate: list[str] = []
        self._scrub_impls: list[Any] | None = None
        #: the items' shared user properties (see ``_shared_property``)
        self._properties: dict[tuple[tuple[str, Any], type], tuple[str, Any]] = {}
        #: The item being set up, for the ``episode`` fixture (see ``pytest_runtest_setup``).
        self.item: pytest.Item | None = None
        #: ``--bench-task-timeout`` (None: pytest-timeout's timeout for the item, if any).
        self.task_timeout = own_timeout(config)
        #: An xdist worker's note of where its item is, read by the controller if the worker dies.
        self.phase_note: PhaseNote | None = None
        from pytest_agentbench.plugin.rootdir_check import warn_spaced_path_options

        warn_spaced_path_options(config)
        # Benchmark markers are known now (``pytest --markers`` lists them); domain markers are
        # registered once the manifest is resolved at session start.
        for name in settings.benchmarks:
            self._register_marker(name, f"tasks of benchmark {name}")

    # -- registries ------------------------------------------------------------------------
    @property
    def bench_registry(self) -> BenchmarkRegistry:
        if self._bench_registry is None:
            from pytest_agentbench.registry import BenchmarkRegistry

            self._bench_registry = BenchmarkRegistry()
            self.config.hook.pytest_agentbench_register_benchmarks(registry=self._bench_registry)
        return self._bench_registry

    @property
    def agent_registry(self) -> AgentRegistry:
        if self._agent_registry is None:
            from pytest_agentbench.registry import AgentRegistry

            self._agent_registry = AgentRegistry()
            self.config.hook.pytest_agentbench_register_agents(registry=self._agent_registry)
        return self._agent_registry

    def make_agent(self) -> Agent:
        """Build the ``--bench-agent`` agent. Unknown names and factory errors are usage errors."""
        registry = self.agent_registry
        name = self.settings.agent
        if name not in registry:
            raise pytest.UsageError(f"unknown agent {name!r} in --bench-agent; "
                                    f"available: {', '.join(registry.names())}")
        try:
            with usage_errors():  # a ConfigError from the factory is a usage error as it is
                agent = registry.create(name, self.config)
        except pytest.UsageError:
            raise
        except (ValueError, OSError) as exc:
            raise pytest.UsageError(f"agent {name!r} could not start: {exc}") from None
        if not getattr(agent, "name", None) or agent.name == "agent":
            agent.name = name
        return self._redacting(agent)

    def _redacting(self, agent: Agent) -> Agent:
        """``agent`` behind the ``--bench-redact-region`` / ``--bench-redact-text`` wrapper when any is given."""
        from pytest_agentbench.plugin.options import setting

        regions, patterns = setting(self.config, "redact_region"), setting(self.config, "redact_text")
        if not regions and not patterns:
            return agent
        from pytest_agentbench.agents.redact import wrap

        try:
            return wrap(agent, regions, patterns)
        except ValueError as exc:
            agent.close()
            raise pytest.UsageError(str(exc)) from None

    # -- session start: resolve (controller) or load (worker) ----------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        from pytest_agentbench.manifest import Manifest, resolve
        from pytest_agentbench.record.runfolder import RunFolder

        config = self.config
        if is_worker(config):
            data = config.workerinput  # type: ignore[attr-defined]
            if MANIFEST_INPUT in data:
                self.manifest = Manifest.read(data[MANIFEST_INPUT])
                self.run_folder = RunFolder(data[RUNFOLDER_INPUT])
                if data.get(PHASES_INPUT):
                    from pytest_agentbench.phases import PhaseNote

                    self.phase_note = PhaseNote(Path(data[PHASES_INPUT]) / data["workerid"])
            else:  # the controller had no episodes to play (only suite benchmarks)
                self.manifest = Manifest()
            self.known_failures = dict(data.get("agentbench_known", {}))
            if data.get(LEASE_INPUT) is not None:
                from pytest_agentbench.plugin.pools import PoolManager, pool_kind

                self.pools = PoolManager(config, pool_kind(config) or "static")
                self.pools.lease = data[LEASE_INPUT]
                config.pluginmanager.register(self.pools, "agentbench-pool")
        else:
            with usage_errors():
                self.manifest = resolve(self.settings, self.bench_registry, self.benchmarks, config)
            if self.settings.baseline is not None:
                from pytest_agentbench.baseline import load_baseline

                try:
                    self.known_failures = load_baseline(self.settings.baseline)
                except ValueError as exc:
                    raise pytest.UsageError(f"--bench-baseline: {exc}") from None
            # Fail fast on a bad --bench-agent (unknown name, missing API key) before anything starts;
            # a dry run calls no model, so it needs no key.
            if not config.getoption("dry_run", False):
                self.make_agent().close()
            self._start_pool()
        self._start_suites()
        for suite in self.manifest.suites:
            self._register_marker(suite.name, f"tasks of benchmark {suite.name}")
            for domain in sorted({t.get("domain", "default") for t in suite.tasks}):
                self._register_marker(domain, f"tasks in domain {domain}")

    def _start_pool(self) -> None:
        """Controller: ``--pool`` given: check it and register the pool's deletion (see
        ``infra/pool_plugin.py``; VMs are created later, per worker or on first use)."""
        from pytest_agentbench.plugin.pools import PoolManager, pool_kind

        kind = pool_kind(self.config)
        if kind is None:
            return
        self.pools = PoolManager(self.config, kind)
        self.config.pluginmanager.register(self.pools, "agentbench-pool")
        self.pools.start()

    def _apply_lease(self, bench: Benchmark) -> None:
        if self.pools is not None:
            self.pools.apply(bench)

    def _start_suites(self) -> None:
        """Create the suite providers (benchmarks that collect their own items) in this process."""
        registry = self.bench_registry
        for name in self.settings.benchmarks:
            entry = registry.entries.get(name)
            if entry is None or entry.kind != "suite" or name in self.suites:
                continue
            try:
                with usage_errors():
                    provider = entry.factory(self.config)
            except pytest.UsageError:
                raise
            except (ValueError, KeyError, OSError) as exc:
                raise pytest.UsageError(f"benchmark {name!r} could not start: {exc}") from None
            self.suites[name] = provider
            self.config.pluginmanager.register(provider, f"agentbench-suite-{name}")

    def _register_marker(self, name: str, text: str) -> None:
        from pytest_agentbench.plugin.markers import OWN, claimed, marker_name

        line = f"{marker_name(name, claimed(self.config))}: {text} {OWN}"
        if line not in self.config.getini("markers"):
            self.config.addinivalue_line("markers", line)

    # -- collection ----------------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Generator[None, pytest.CollectReport,
                                                                                   pytest.CollectReport]:
        report = yield
        if isinstance(collector, pytest.Session) and self.manifest is not None:
            if self.config.args_source != pytest.Config.ArgsSource.ARGS:
                # No paths given: run the benchmarks only, not the project's own test files.
                report.result = [r for r in report.result if getattr(r, "agentbench_suite", False)]
            report.result.extend(suites_for(collector, self.manifest.suites, self.known_failures))
            for provider in self.suites.values():
                report.result.append(provider.collect(collector))
        return report

    # -- per-process objects -------------------------------------------------------------------
    def benchmark(self, name: str) -> Benchmark:
        bench = self.benchmarks.get(name)
        if bench is None:
            bench = self.bench_registry.create(name, self.config)
            self.benchmarks[name] = bench
        if name not in self._pointed and self.pools is not None:
            self._apply_lease(bench)  # may raise InfrastructureError: the item errors, we retry next item
        self._pointed.add(name)
        return bench

    def agent(self) -> Agent:
        if self._agent is None:
            self._agent = self.make_agent()
        return self._agent

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        errors = self.writer.close()
        if self.phase_note is not None:
            self.phase_note.close()
        if errors and is_worker(self.config):
            self.config.workeroutput["agentbench_write_errors"] = errors  # type: ignore[attr-defined]
        for bench in self.benchmarks.values():
            try:
                bench.close()
            except Exception as exc:  # noqa: BLE001 - closing one must not stop closing the rest
                warnings.warn(pytest.PytestWarning(f"closing benchmark {bench.name!r} failed: {exc}"), stacklevel=1)
        self.benchmarks.clear()
        if self._agent is not None:
            self._agent.close()
            self._agent = None

    # -- playing one item ----------------------------------------------------------------------
    def play(self, item: pytest.Item, task: Task, bench: Benchmark, agent: Agent) -> EpisodeRecord:
        """Run the episode, decide the outcome, write the task's files, attach the record."""
        # Here, not at the top: it loads the models (pydantic), which a run of suite benchmarks
        # (ExtraDup's) never needs.
        from pytest_agentbench.episode import run_episode

        agent_name = getattr(agent, "name", None) or self.settings.agent
        budget = self.budget
        if budget is not None and budget.run_exhausted():
            pytest.skip(budget.run_message())
        trial = record_fields(item, item.stash[TASK_KEY])
        agent.trial, agent.seed = trial["trial"], trial["seed"]
        started = time.perf_counter()
        note = self.phase_note
        on_phase = functools.partial(note.write, item.nodeid, agent=agent_name) if note is not None else None
        with episode_deadline(item, self.task_timeout) as deadline:
            record = run_episode(agent, bench, task, max_steps=self.settings.max_steps, agent_name=agent_name,
                                 budget=budget, scrub=self._scrubber(task), deadline=deadline, on_phase=on_phase)
        if note is not None:
            note.write(item.nodeid, ENDED, agent_name)
        outcome = (item.config.hook.pytest_agentbench_verdict_to_outcome(record=record, item=item)
                   or default_outcome(record))
        item.stash[OUTCOME_KEY] = outcome
        cause = record.take_exception()
        if cause is not None and outcome.kind in ("failed", "error"):
            item.stash[CAUSE_KEY] = cause
        payload = save_episode(self, item, task, record, outcome, time.perf_counter() - started)
        payload.update(trial)
        item.config.hook.pytest_agentbench_episode_finished(record=record, item=item, payload=payload)
        item.stash[PAYLOAD_KEY] = payload
        shared = self._shared_property
        item.user_properties.extend([
            ("task_id", record.task_id),
            shared(("benchmark", record.benchmark)),
            shared(("domain", record.domain)),
            shared(("agent", record.agent)),
            shared(("score", f"{record.score:.3f}")),
            shared(("steps", record.num_steps)),
            shared(("verdict", payload["reason"] or "")),
            shared(("duration", f"{record.total_time_seconds:.3f}")),
            shared(("trial", trial["trial"])),
        ])
        return record

    def _shared_property(self, prop: tuple[str, Any]) -> tuple[str, Any]:
        """One tuple for every item with the same property (most items of a run share their
        benchmark, agent, score and verdict): the item and each of its three reports hold them
        to the end of the run. Up to 4,096 distinct ones are kept. Keyed with the value's type,
        as ``1 == 1.0 == True`` would otherwise share one tuple."""
        key = (prop, type(prop[1]))
        kept = self._properties.get(key)
        if kept is not None:
            return kept
        if len(self._properties) < 4096:
            self._properties[key] = prop
        return prop

    @property
    def budget(self) -> Budget | None:
        """The spending caps (``--bench-max-cost-usd``, ``--bench-max-cost-usd-per-task``); None without them.
        Every process charges one ledger in the run folder, so the run's cap holds across workers."""
        if self._budget is False:
            return None
        if self._budget is None:
            from pytest_agentbench.budget import Budget
            from pytest_agentbench.plugin.options import money_setting

            run = money_setting(self.config, "max_cost_usd", "--bench-max-cost-usd")
            task = money_setting(self.config, "max_cost_usd_per_task", "--bench-max-cost-usd-per-task")
            if run is None and task is None:
                self._budget = False  # looked up once: no caps
                return None
            ledger = self.run_folder.path / "budget.ledger" if self.run_folder is not None else None
            self._budget = Budget(run, task, ledger)
        assert not isinstance(self._budget, bool)
        return self._budget

    def _scrubber(self, task: Task) -> Callable[[Observation], Observation] | None:
        """Every ``pytest_agentbench_scrub_screenshot`` implementation, in turn, lazily on read."""
        if self._scrub_impls is None:
            self._scrub_impls = self.config.hook.pytest_agentbench_scrub_screenshot.get_hookimpls()
        impls = self._scrub_impls
        if not impls:
            return None
        config = self.config

        def scrub_png(png: bytes) -> bytes:
            for impl in reversed(impls):  # pluggy's order: later-registered first, as a hook call runs them
                given = {"png": png, "task": task, "config": config}
                result = impl.function(*[given[name] for name in impl.argnames])
                if result is not None:
                    png = bytes(result)  # type: ignore[arg-type]  # the hook returns PNG bytes
            return png

        def scrub(observation: Observation) -> Observation:
            if not observation.has_screenshot:
                return observation
            from pytest_agentbench.model import Observation as Obs

            return Obs(renderer=lambda: scrub_png(observation.screenshot or b""),
                       accessibility_tree=observation.accessibility_tree, window_title=observation.window_title,
                       url=observation.url, app_name=observation.app_name, viewport=observation.viewport,
                       raw=observation.raw)

        return scrub

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Note the item before its fixtures are set up: the ``episode`` fixture takes it from here
        rather than from ``request``, which costs pytest a new fixture definition (and a signature
        inspection) per look-up, four per item."""
        self.item = item
        if self.phase_note is not None and is_episode_item(item):
            self.phase_note.write(item.nodeid, "setup")

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """``--bench-dry-run``: price the selected items now, while the benchmarks are still open."""
        from pytest_agentbench.plugin import heap

        heap.freeze(self.config)  # what collection built lives to the end: out of the collector's walks
        if is_worker(self.config) or not self.config.getoption("dry_run", False):
            return
        from pytest_agentbench.plugin.estimate import lines

        self._estimate = lines(self.config, self, list(session.items))

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self._estimate:
            terminalreporter.write_line("")
            terminalreporter.write_line("Dry run: estimated cost")
            for line in self._estimate:
                terminalreporter.write_line(line)

    # -- reports -------------------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if not isinstance(item, BenchItem):
            return report
        if not reporting.carries_payload(report):
            return report
        payload = item.stash.get(PAYLOAD_KEY, None)
        if payload is None:
            payload = self._payload_without_episode(item, report)
        else:
            del item.stash[PAYLOAD_KEY]  # the report carries it now; a rerun plays anew
        reporting.attach(report, PAYLOAD_ATTR, payload, item.nodeid)  # the skip points at the task
        return report

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if is_worker(self.config):
            # xdist has sent the record to the controller, which writes it: the worker's report
            # (kept to the end of the run) need not hold it as well.
            report.__dict__.pop(PAYLOAD_ATTR, None)

    def _payload_without_episode(self, item: pytest.Item, report: pytest.TestReport) -> dict[str, Any]:
        """A record for an item that failed before its episode could run (a fixture raised)."""
        from pytest_agentbench.record.run_files import base_payload

        task = item.stash[TASK_KEY]
        crash = getattr(report.longrepr, "reprcrash", None)
        if crash is not None:
            message = crash.message.splitlines()[0]
        else:
            message = str(report.longrepr).strip().splitlines()[-1] if report.longrepr else "setup failed"
        payload = base_payload(item.nodeid, task, self.settings.agent)
        payload.update(record_fields(item, task))
        if report.skipped:  # a skip or skipif marker: nothing ran, nothing failed
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else message
            payload.update(reason=str(reason), outcome=False)
        else:
            payload.update(error=message, error_type="infrastructure", reason=message, outcome=False)
        return payload


