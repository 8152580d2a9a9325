"""The MockMed UI-change benchmark: conditions x arms x runs, each an episode on a fresh app.

Each task is one run of one arm under one condition, ``bench/mockmed::<condition>::<arm>-run<k>``.
``reset`` starts a fresh app (its own SQLite file in its own temporary folder, its own server on
an ephemeral loopback port) and signs nothing in; the arm is the task's agent, except the
``agent`` arm's, which the run's ``--bench-agent`` plays (its instruction gives the sign-in). The checker reads
the stored records back from SQLite (the right patient, type and note, exactly one new record)
and checks that the final screen shows the saved banner. A record for the wrong patient or of the
wrong type is a *wrong write* and is named in the verdict.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentbench.agents.replay import banner
from pytest_agentbench.benches.mockmed.arms import (
    AGENT_ARM,
    ALL_ARMS,
    ARMS,
    GOLD_NOTE,
    GOLD_PATIENT,
    GOLD_TYPE,
    PASSWORD,
    USERNAME,
    CompiledReplay,
    record_workflow,
    script_by_name,
    script_by_position,
)
from pytest_agentbench.benchmark import Benchmark, InfrastructureError
from pytest_agentbench.model import Action, Criterion, Observation, Task, Verdict

if TYPE_CHECKING:
    from pytest_agentbench.benches.mockmed.app import MockMedServer
    from pytest_agentbench.benches.mockmed.driver import Driver
    from pytest_agentbench.benches.mockmed.store import Store

CONDITIONS = ("clean", "theme", "rename")
RUNS = 3
#: Under ``rename`` a script that finds buttons by their label cannot succeed: the comparison
#: expects it to stop, so those items are strict xfail (a pass would be news, and fails the run).
EXPECTED_TO_STOP = {("rename", "by-position"), ("rename", "by-name")}
INSTRUCTION = f"Record a {GOLD_TYPE} encounter for Jane Sample with the note {GOLD_NOTE!r}."
#: What the ``agent`` arm is told: a model cannot guess the sign-in the scripts carry.
AGENT_INSTRUCTION = (f"In the MockMed web app, sign in with username {USERNAME!r} and password {PASSWORD!r}, then "
                     f"record a {GOLD_TYPE} encounter for Jane Sample with the note {GOLD_NOTE!r} and save it.")


class MockMedBenchmark(Benchmark):
    name = "mockmed"

    def __init__(self, conditions: tuple[str, ...] = CONDITIONS, arms: tuple[str, ...] = ARMS, runs: int = RUNS,
                 driver: str = "headless", workflow_path: str | Path | None = None) -> None:
        bad = [c for c in conditions if c not in CONDITIONS]
        if bad:
            raise ValueError(f"unknown MockMed condition {', '.join(map(repr, bad))}; valid: {', '.join(CONDITIONS)}")
        bad = [a for a in arms if a not in ALL_ARMS]
        if bad:
            raise ValueError(f"unknown MockMed arm {', '.join(map(repr, bad))}; valid: {', '.join(ALL_ARMS)}")
        if driver not in ("headless", "browser"):
            raise ValueError(f"unknown MockMed driver {driver!r}; valid: headless, browser")
        if driver == "browser":
            from pytest_agentbench.benches.mockmed.driver import browser_problem

            problem = browser_problem()
            if problem:
                raise ValueError(problem)
        self.conditions, self.arms, self.runs, self.driver_kind = conditions, arms, runs, driver
        self._folder: Path | None = None
        self._server: MockMedServer | None = None
        self._store: Store | None = None
        self._driver: Driver | None = None
        self._last: Observation | None = None
        self._workflow: dict[str, Any] | None = None
        self._agents: dict[str, Any] = {}
        self.workflow_path = Path(workflow_path) if workflow_path else None
        self._workflow_tmp: Path | None = None
        if self.workflow_path is not None and self.workflow_path.exists() and "compiled" in arms:
            # A given workflow is read now: a broken file is one usage line, not an error per item.
            self._agents["compiled"] = CompiledReplay.load(self.workflow_path)

    # -- tasks ---------------------------------------------------------------------------------
    def list_tasks(self, limit: int | None = None) -> list[Task]:
        tasks = []
        for condition in self.conditions:
            for arm in self.arms:
                for run in range(1, self.runs + 1):
                    raw: dict[str, Any] = {"condition": condition, "arm": arm, "run": run}
                    if (condition, arm) in EXPECTED_TO_STOP:
                        raw["expect_fail"] = (f"the {arm} script finds buttons by label, and {condition} "
                                              "renames them: it is expected to stop before writing")
                    tasks.append(Task(
                        task_id=f"{condition}-{arm}-run{run}", domain=condition, benchmark=self.name,
                        time_limit_steps=30, instruction=AGENT_INSTRUCTION if arm == AGENT_ARM else INSTRUCTION,
                        tags=[arm], raw_config=raw))
        return tasks

    @property
    def player(self) -> str | None:
        """The arms play every task (compiled replay or a script), unless the ``agent`` arm is run:
        then the ``--bench-agent`` agent plays some, and names the run."""
        return None if AGENT_ARM in self.arms else "arms"

    def agent_for(self, task: Task) -> Any:
        arm = task.raw_config["arm"]
        if arm == AGENT_ARM:
            return None  # the run's --bench-agent agent
        if arm not in self._agents:
            if arm == "compiled":
                self._agents[arm] = CompiledReplay.load(self.compiled_workflow())
            elif arm == "by-position":
                self._agents[arm] = script_by_position()
            else:
                self._agents[arm] = script_by_name()
        return self._agents[arm]

    def compiled_workflow(self) -> Path:
        """The compiled workflow file: ``workflow_path`` when it exists; otherwise recorded once per
        process from a demonstration on ``clean`` and written there (or to a temporary folder)."""
        import json

        if self.workflow_path is not None and self.workflow_path.exists():
            return self.workflow_path
        if self.workflow_path is None:
            self._workflow_tmp = Path(tempfile.mkdtemp(prefix="agentbench-mockmed-workflow-"))
            path = self._workflow_tmp / "workflow.json"
        else:
            path = self.workflow_path
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.workflow(), indent=2), encoding="utf-8")
        self.workflow_path = path
        return path

    def workflow(self) -> dict[str, Any]:
        """The workflow compiled from a demonstration on ``clean`` (recorded once per process)."""
        if self._workflow is None:
            def play(agent: Any) -> list[Observation]:
                demo_task = Task(task_id="demo", domain="clean", benchmark=self.name)
                observation = self._start("clean")
                observations = []
                try:
                    agent.reset()
                    for _ in range(40):
                        action = agent.act(observation, demo_task, [])
                        if action.is_terminal:
                            break
                        observation = self._running().act(action)
                        observations.append(observation)
                finally:
                    self._stop()
                return observations

            self._workflow = record_workflow(play)
        return self._workflow

    # -- environment -----------------------------------------------------------------------------
    def _start(self, condition: str) -> Observation:
        from pytest_agentbench.benches.mockmed.app import serve
        from pytest_agentbench.benches.mockmed.store import Store

        self._stop()
        self._folder = Path(tempfile.mkdtemp(prefix="agentbench-mockmed-"))
        try:
            self._store = Store(self._folder / "mockmed.sqlite")
            self._server = serve(self._folder / "mockmed.sqlite", condition=condition)
            self._driver = self._make_driver(self._server.url)
            return self._driver.observe()
        except OSError as exc:
            self._stop()
            raise InfrastructureError(f"MockMed did not start: {exc}") from exc

    def _make_driver(self, url: str) -> Driver:
        from pytest_agentbench.benches.mockmed import driver

        if self.driver_kind == "browser":
            return driver.PlaywrightDriver(url)
        return driver.HeadlessDriver(url)

    def _stop(self) -> None:
        for thing, method in ((self._driver, "close"), (self._server, "stop"), (self._store, "close")):
            if thing is not None and hasattr(thing, method):
                with contextlib.suppress(Exception):  # best effort; the folder goes next
                    getattr(thing, method)()
        self._driver = self._server = self._store = None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    def reset(self, task: Task) -> Observation:
        self._last = self._start(task.raw_config["condition"])
        return self._last

    def step(self, action: Action) -> Observation:
        self._last = self._running().act(action)
        return self._last

    def _running(self) -> Driver:
        if self._driver is None:
            raise InfrastructureError("MockMed is not running; reset first")
        return self._driver

    # -- checker -----------------------------------------------------------------------------
    def evaluate(self, task: Task, final_action: Action | None) -> Verdict:
        if self._store is None:
            raise InfrastructureError("MockMed's store is gone")
        records = self._store.encounters()
        shown = banner(self._last.accessibility_tree if self._last else None)
        wrong = [r for r in records if r["patient_id"] != GOLD_PATIENT or r["type"] != GOLD_TYPE]
        right = [r for r in records if r not in wrong]
        criteria = [
            Criterion(name="exactly one new record", passed=len(records) == 1, actual=len(records)),
            Criterion(name="right patient",
                      passed=bool(records) and all(r["patient_id"] == GOLD_PATIENT for r in records),
                      actual=[r["patient_id"] for r in records]),
            Criterion(name="right type", passed=bool(records) and all(r["type"] == GOLD_TYPE for r in records),
                      actual=[r["type"] for r in records]),
            Criterion(name="right note", passed=bool(right) and all(r["note"] == GOLD_NOTE for r in right),
                      detail="the note matches" if right and all(r["note"] == GOLD_NOTE for r in right) else
                      "no record with the note"),
            Criterion(name="saved banner on screen", passed=bool(shown and shown.startswith("Encounter saved")),
                      actual=shown),
        ]
        verdict = Verdict.from_criteria(criteria)
        if wrong:
            names = ", ".join(f"{r['type']} for {r['patient_id']}" for r in wrong)
            verdict.reason = f"wrong write: {names}; " + verdict.reason
        elif not records and final_action is not None and final_action.type == "fail":
            verdict.reason = f"wrote nothing; the arm stopped: {final_action.reason}"
        return verdict

    def close(self) -> None:
        self._stop()
        if self._workflow_tmp is not None:
            shutil.rmtree(self._workflow_tmp, ignore_errors=True)
            self._workflow_tmp = None

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "conditions": list(self.conditions), "arms": list(self.arms), "runs": self.runs,
                "driver": self.driver_kind}
