"""Collection: one collector per benchmark under the Session, one group per domain, one item per
task, with node ids ``bench/<bench>::<domain>::<task_id>`` (no brackets, see pytest#15045)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

if TYPE_CHECKING:
    from pytest_agentbench.agent import Agent
    from pytest_agentbench.manifest import Suite
    from pytest_agentbench.model import EpisodeRecord

# Imported here, not in the functions that use them: an import statement costs about 10,000
# instructions even for a loaded module, and these run for every task and every item. Only
# benchmark runs load this module, and they load all of these.
from pytest_agentbench.plugin.integrations import PACKAGE_DIR, described, located, source_of
from pytest_agentbench.plugin.markers import claimed, mark
from pytest_agentbench.plugin.outcomes import EpisodeFailed, raise_outcome
from pytest_agentbench.plugin.state import (
    CAUSE_KEY,
    OUTCOME_KEY,
    RECORD_KEY,
    STATE_KEY,
    TASK_KEY,
    config_state,
    is_episode_item,
    task_from_item,
)
from pytest_agentbench.plugin.trials import TRIAL_KEY, task_nodes


def task_nodeid(suite: str, task: dict[str, Any]) -> str:
    """The node id the collectors below give ``task`` of benchmark ``suite``. The controller
    under xdist collects nothing, so it maps the node id of a crashed worker's item back to its
    task with this."""
    return f"bench/{suite}::{task.get('domain', 'default')}::{task['task_id']}"


def run_task(agent: Any) -> None:
    """The function of every benchmark item. Its one fixture is the agent (so a conftest's
    ``agent`` or ``agentbench_agent`` plays); ``BenchItem.setup`` plays the episode once the
    fixtures are set up (so infrastructure errors are setup errors), and ``BenchItem.runtest``
    turns its verdict into the test outcome."""


def benchmark_source(config: pytest.Config, name: str) -> tuple[Any, int] | None:
    """The file and line of the factory benchmark ``name`` was registered with (a conftest.py's or
    a plugin's; None for a built-in's, which sits in this package). Looked up once per name and
    run: ``reportinfo`` asks for every item."""
    known = config.stash.setdefault(_SOURCES_KEY, {})
    if name not in known:
        state = config.stash.get(STATE_KEY, None)
        entry = state.bench_registry.entries.get(name) if state is not None else None
        known[name] = source_of(entry.factory) if entry is not None else None
    return known[name]


_SOURCES_KEY = pytest.StashKey[dict[str, "tuple[Any, int] | None"]]()


def task_source(config: pytest.Config, task: dict[str, Any]) -> tuple[Any, int] | None:
    """The file a task came from, when its benchmark says (an optional ``task_source(task)``
    method; WAA's and OpenComputer's give the task's JSON file) and the file exists."""
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return None
    name = task["benchmark"]
    bench = state.benchmarks.get(name)
    if bench is None:  # a worker, before its first item of this benchmark: made now, leased at setup
        try:
            bench = state.benchmarks[name] = state.bench_registry.create(name, config)
        except Exception:  # noqa: BLE001 - a location never fails an item; setup reports the fault
            return None
    method = getattr(bench, "task_source", None)
    if method is None:
        return None
    from pytest_agentbench.model import Task

    try:
        path = method(Task.model_validate(task))
    except Exception:  # noqa: BLE001 - as above
        return None
    return (path, 0) if path is not None and Path(path).is_file() else None


def play_item(config: pytest.Config, agent: Agent, node: pytest.Item | None = None) -> EpisodeRecord:
    """Play ``node``'s episode (default: the item being set up, which the session notes) unless it
    has played in this setup, and fail the setup when its outcome is an error. ``BenchItem.setup``
    and the ``episode`` fixtures call it."""
    state = config_state(config)
    node = node or state.item
    if node is None or not is_episode_item(node):
        raise pytest.UsageError("the episode fixture plays benchmark items (bench/...) during their setup")
    record = node.stash.get(RECORD_KEY, None)
    if record is not None:
        return record
    task = task_from_item(node)
    bench = state.benchmark(task.benchmark)
    record = node.stash[RECORD_KEY] = state.play(node, task, bench, bench.agent_for(task) or agent)
    outcome = node.stash[OUTCOME_KEY]
    if outcome.kind == "error":
        raise_outcome(outcome, node.stash.get(CAUSE_KEY, None))
    return record


class BenchItem(pytest.Function):
    """One task. A ``pytest.Function`` so fixtures resolve from ``run_task``'s signature."""

    def reportinfo(self) -> tuple[Any, int | None, str]:
        # Name the task in failure headers; locate it at the task's file, else its benchmark's
        # source, else (a built-in's) its node (pytest-sugar and CI annotations show this location).
        source = task_source(self.config, self.task) or benchmark_source(self.config, self.task["benchmark"])
        return located(self, source)

    @property
    def function(self) -> Any:
        """``run_task`` with the task's instruction as its docstring, which report tools show as
        the test's description (allure-pytest; pytest-html's description column recipe).

        Made on each access and not kept: other plugins read every item's function (anyio's, at
        the end of collection), and a copy kept per item would be held for the whole run."""
        instruction = str(self.task.get("instruction") or "").strip()
        return described(run_task, instruction or f"Task {self.task['task_id']} of {self.task['benchmark']}")

    def setup(self) -> None:
        """Set up the fixtures, then play the episode, unless a fixture of the closure asked
        for ``episode`` and played it already (an autouse fixture of a conftest may).

        Played here rather than by an ``episode`` fixture in the closure: a function-scoped
        fixture costs pytest a request, a fixture execution and two finalizers per item, about
        a tenth of what a mock item costs over a bare one (0.17M of 1.8M instructions)."""
        super().setup()
        play_item(self.config, cast("Agent", self.funcargs["agent"]), self)  # returns at once if played

    def runtest(self) -> None:
        super().runtest()
        outcome = self.stash[OUTCOME_KEY]
        del self.stash[OUTCOME_KEY]  # read last here (a rerun plays again and sets it anew): not held to the end
        raise_outcome(outcome, self.stash.get(CAUSE_KEY, None))

    def _traceback_filter(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
        """The traceback of an agent's, environment's or checker's exception shows the user's
        frames: this plugin's own (the episode loop, the outcome) are cut, as pytest cuts its own."""
        traceback = super()._traceback_filter(excinfo)
        return traceback.filter(lambda entry: not str(entry.path).startswith(PACKAGE_DIR))

    def teardown(self) -> None:
        super().teardown()
        release_fixture_finalizers(self)
        if CAUSE_KEY in self.stash:  # its traceback holds every frame's locals: not to the end of the run
            del self.stash[CAUSE_KEY]
        if RECORD_KEY in self.stash:  # a rerun plays again; the reports hold what is kept
            del self.stash[RECORD_KEY]

    @property
    def task(self) -> dict[str, Any]:
        return self.stash[TASK_KEY]


def release_fixture_finalizers(item: pytest.Item) -> None:
    """Drop what the item's function-scoped fixtures left on the wider-scoped ones they asked for.

    pytest adds the ``finish`` of every function-scoped fixture execution to each wider-scoped
    fixture it requests (a conftest's function-scoped fixture asking for the session's ``agent``), so
    that tearing those down first tears it down. The item's own teardown has run
    that ``finish`` by now, yet the wider fixture keeps it, and the request it holds, to the end of
    the session: about 1 KB per item, 2 MB over 2,000 tasks. Run again at the session's end it
    would do nothing (the fixture's value is gone already), so it is dropped here, after the item's
    fixtures were torn down (``teardown`` is the item's first finalizer, so it runs last). Private
    pytest attributes are read defensively: a pytest without them keeps its finalizers."""
    info = getattr(item, "_fixtureinfo", None)
    for defs in getattr(info, "name2fixturedefs", {}).values():
        for fixturedef in defs:
            finalizers = getattr(fixturedef, "_finalizers", None)
            if not finalizers or getattr(fixturedef, "scope", "function") == "function":
                continue
            kept = [fin for fin in finalizers if not _finishes_for(fin, item)]
            if len(kept) != len(finalizers):
                finalizers[:] = kept


def _finishes_for(finalizer: Any, item: pytest.Item) -> bool:
    """Whether ``finalizer`` is the ``finish`` of a function-scoped fixture, bound to a request of
    ``item``. A wider fixture's ``finish`` is kept: that fixture lives on after the item (its
    request names the item it was first set up for)."""
    if not isinstance(finalizer, functools.partial) or getattr(finalizer.func, "__name__", None) != "finish":
        return False
    if getattr(getattr(finalizer.func, "__self__", None), "scope", None) != "function":
        return False
    request = finalizer.keywords.get("request")
    return request is not None and getattr(request, "_pyfuncitem", None) is item


class DomainGroup(pytest.Collector):
    def __init__(self, *args: Any, tasks: list[dict[str, Any]] | None = None, known: dict[str, str] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tasks = tasks or []
        self._known = known or {}
        self._fixtureinfo: Any = None

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        for task in self._tasks:
            yield task_nodes(self, task, self._make_item)

    def _make_item(self, parent: pytest.Collector, name: str, task: dict[str, Any], trial: int) -> pytest.Item:
        """One trial of ``task`` (``parent`` is this group, or the task's collector of trials)."""
        # Every item of the group has the same function and sees the same fixtures (conftest and
        # plugin fixtures are scoped by directory), so the fixture closure is worked out for the
        # first and shared, as pytest shares it between the instances of a parametrized test.
        if self._fixtureinfo is None:
            item = BenchItem.from_parent(parent, name=name, callobj=run_task)
            self._fixtureinfo = item._fixtureinfo
        else:
            item = BenchItem.from_parent(parent, name=name, callobj=run_task, fixtureinfo=self._fixtureinfo)
        item.stash[TASK_KEY] = task
        item.stash[TRIAL_KEY] = trial
        taken = claimed(self.config)
        mark(item, task["benchmark"], taken)
        if task.get("domain"):
            mark(item, task["domain"], taken)
        for tag in task.get("tags", ()):
            item.extra_keyword_matches.add(tag)
        expected = (task.get("raw_config") or {}).get("expect_fail")
        if expected:
            item.add_marker(pytest.mark.xfail(reason=str(expected), strict=True, raises=EpisodeFailed))
        status = self._known.get(f"{task['benchmark']}::{task['task_id']}")
        if status is not None:
            item.add_marker(pytest.mark.xfail(
                reason=f"did not pass in the baseline run ({status})", strict=False, raises=EpisodeFailed))
        return item


class BenchSuite(pytest.Collector):
    """All tasks of one benchmark, grouped by domain."""

    agentbench_suite = True  # kept when the filesystem collectors are dropped

    def __init__(self, *args: Any, suite: Suite | None = None, known: dict[str, str] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        assert suite is not None
        self._suite = suite
        self._known = known or {}

    def collect(self) -> Iterator[pytest.Collector]:
        groups: dict[str, list[dict[str, Any]]] = {}
        for task in self._suite.tasks:
            groups.setdefault(task.get("domain", "default"), []).append(task)
        for domain in sorted(groups):
            yield DomainGroup.from_parent(self, name=domain, tasks=groups[domain], known=self._known)


def suites_for(session: pytest.Session, suites: list[Suite], known: dict[str, str]) -> list[pytest.Collector]:
    return [
        BenchSuite.from_parent(session, name=suite.name, nodeid=f"bench/{suite.name}", suite=suite, known=known)
        for suite in suites
    ]
