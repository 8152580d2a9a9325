"""The OpenComputer benchmark: tasks as items, each graded by OpenComputer's own checks in a fresh
sandbox.

Each item (``bench/opencomputer::<app>::<task id>``) plays one episode:

* ``reset``: a fresh sandbox (``infra/sandbox.py``), the task's start state laid out in it
  (``environment.prepare``: env files, ``create_env.py``, setup scripts), then either
  - **end-state mode** (``--opencomputer-end-state DIR``): ``DIR/<id>/`` is copied over the home
    folder and the benchmark's own stand-in agent says done at once (no model is called); or
  - **agent mode**: the app is launched on the desktop and the ``--agent`` agent plays it
    (``desktop.py``). Where the app cannot run (no desktop here), nothing is set up, a stand-in
    agent stops at once and the item is skipped with the reason;
* ``evaluate``: the app's verifier is copied into the sandbox and every check runs
  (``checks.grade``); the score is passed over evaluated checks, every check is a criterion.

A sandbox lives until the next ``reset`` (or ``close``), so a test can look at it after the
episode; it is then deleted.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...agent import Agent
from ...benchmark import Benchmark, EvaluationError, InfrastructureError
from ...model import Action, Observation, Verdict
from .checks import DEFAULT_TIMEOUT, Grading, Judge, grade, install_verifier, verifier_script
from .results import reference_reward
from .tasks import BENCHMARK, OpenComputerTaskError, load_tasks, read_task, resolve_tasks_dir

if TYPE_CHECKING:
    import pytest

    from ...infra.sandbox import Isolation, Sandbox
    from ...model import Task
    from .desktop import Desktop


class StandIn(Agent):
    """The benchmark's own agent for items no real agent plays: it says done at once."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason

    def act(self, observation: Observation, task: Task,
            history: list[tuple[Observation, Action]] | None = None) -> Action:
        return Action(type="done", reason=self.reason)


def verdict_for(grading: Grading) -> Verdict:
    """Passed over evaluated checks, with a reason that counts them and names the failed ones."""
    criteria = grading.criteria
    evaluated = [c for c in criteria if c.passed is not None]
    passed = sum(1 for c in evaluated if c.passed)
    parts = [f"{passed} of {len(evaluated)} evaluated checks passed"]
    skipped = len(criteria) - len(evaluated)
    if skipped:
        total = len(criteria)
        parts.append(f"{skipped} not evaluated (LLM-judged, no judge); the reference harness would count them "
                     f"as failed: {passed}/{total} = {reference_reward(criteria):.4f}")
    failed = [c.name for c in evaluated if not c.passed]
    if failed:
        parts.append("failed: " + "; ".join(failed))
    return Verdict.from_criteria(criteria, reason=", ".join(parts))


class OpenComputerBenchmark(Benchmark):
    name = BENCHMARK
    #: OpenComputer's display: what a step's screenshot is priced at by ``--dry-run``
    screen_size = (1920, 1080)

    def __init__(
        self,
        tasks_dir: str | Path,
        *,
        verifiers_dir: str | Path | None = None,
        end_state_dir: str | Path | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        judge: Judge | None = None,
        on_error: str = "error",
        isolation: Isolation | Callable[[], Isolation] | None = None,
        sandbox_base: str | Path | None = None,
    ) -> None:
        self.tasks_arg = Path(tasks_dir)
        self.verifiers_dir = Path(verifiers_dir) if verifiers_dir is not None else None
        self.end_state_dir = Path(end_state_dir) if end_state_dir is not None else None
        self.timeout = timeout
        self.judge = judge
        self.on_error = on_error
        self._isolation_source = isolation
        self._isolation: Isolation | None = None
        self.sandbox_base = sandbox_base
        self._tasks_dir: Path | None = None
        self._tasks: list[Task] | None = None
        #: the current item's sandbox (kept until the next reset)
        self.sandbox: Sandbox | None = None
        self._desktop: Desktop | None = None
        self._skip: str | None = None
        self._unavailable: dict[str, str | None] = {}
        self._end_state_agent = StandIn("end-state", "end state given by --opencomputer-end-state")

    @classmethod
    def from_config(cls, config: pytest.Config | None) -> OpenComputerBenchmark:
        """Build from the ``--opencomputer-*`` options; missing or bad ones are usage errors."""
        import pytest

        if config is None:
            raise ValueError("the opencomputer benchmark needs its options (--opencomputer-tasks DIR)")
        from ...infra.sandbox import isolation_mode, session_isolation
        from .checks import load_judge
        from .options import opencomputer_settings

        settings = opencomputer_settings(config)
        if settings.tasks is None:
            raise pytest.UsageError("--bench=opencomputer needs --opencomputer-tasks DIR (a folder of <id>/task.json, "
                                    "e.g. OpenComputer's task_generator/tasks) or the ini key "
                                    "agentbench_opencomputer_tasks")
        for flag, folder in (("--opencomputer-verifiers", settings.verifiers),
                             ("--opencomputer-end-state", settings.end_state)):
            if folder is not None and not folder.is_dir():
                what = "is not a folder" if folder.exists() else "does not exist"
                raise pytest.UsageError(f"{flag} {folder} {what}")
        if settings.end_state is not None and settings.verifiers is None:
            raise pytest.UsageError("--opencomputer-end-state needs --opencomputer-verifiers DIR (the verifier scripts "
                                    "that grade the end states: OpenComputer's verifiers/ folder)")
        judge = None
        if settings.judge:
            try:
                judge = load_judge(settings.judge, str(config.rootpath))
            except ValueError as exc:
                raise pytest.UsageError(str(exc)) from None
        if isolation_mode(config) != "auto":
            session_isolation(config)  # decided now: an unusable required bwrap stops the run (exit 4)
        return cls(settings.tasks, verifiers_dir=settings.verifiers, end_state_dir=settings.end_state,
                   timeout=settings.timeout, judge=judge, on_error=settings.verifier_errors,
                   isolation=lambda: session_isolation(config))

    # -- tasks ---------------------------------------------------------------------------------
    @property
    def tasks_dir(self) -> Path:
        if self._tasks_dir is None:
            self._tasks_dir = resolve_tasks_dir(self.tasks_arg)
        return self._tasks_dir

    def list_tasks(self, limit: int | None = None) -> list[Task]:
        if self._tasks is None:
            self._tasks = load_tasks(self.tasks_dir)
        return list(self._tasks)

    def load_task(self, task_id: str) -> Task:
        path = self.tasks_dir / task_id / "task.json"
        if "/" in task_id or task_id in (".", "..") or not path.is_file():
            raise KeyError(task_id)
        try:
            return read_task(path)
        except OpenComputerTaskError as exc:  # the file exists but is broken: say so, not "no such task"
            import pytest

            raise pytest.UsageError(str(exc)) from None

    # -- sandboxes -----------------------------------------------------------------------------
    @property
    def isolation(self) -> Isolation:
        """Decided on first use (a trial run of bubblewrap); without a pytest session the fallback
        warns once per benchmark."""
        if self._isolation is None:
            source = self._isolation_source
            if callable(source):
                self._isolation = source()
            elif source is not None:
                self._isolation = source
            else:
                from ...infra.sandbox import SandboxWarning, choose_isolation

                self._isolation = choose_isolation("auto")
                if self._isolation.reason:
                    warnings.warn(SandboxWarning(f"OpenComputer sandboxes are not isolated: {self._isolation.reason}"),
                                  stacklevel=2)
        return self._isolation

    def _new_sandbox(self, **options: Any) -> Sandbox:
        from ...infra.sandbox import Sandbox

        self._close_sandbox()
        self.sandbox = Sandbox.create(self.isolation, self.sandbox_base, **options)
        return self.sandbox

    def _close_sandbox(self) -> None:
        box, self.sandbox = self.sandbox, None
        self._desktop = None
        if box is not None:
            box.close()

    def app_unavailable(self, app: str) -> str | None:
        """Why an agent cannot play ``app`` here (None when it can); looked up once per app."""
        if app not in self._unavailable:
            from ...infra.sandbox import SANDBOX_PATH
            from .desktop import unavailable

            path = SANDBOX_PATH if self.isolation.isolated else None
            reason = unavailable(app, search_path=path)
            if reason is not None:
                reason += "; grade end states instead with --opencomputer-end-state DIR"
            self._unavailable[app] = reason
        return self._unavailable[app]

    # -- episodes --------------------------------------------------------------------------------
    def agent_for(self, task: Task) -> Any:
        if self.end_state_dir is not None:
            return self._end_state_agent
        reason = self.app_unavailable(task.domain)
        if reason is not None:
            return StandIn("", reason)  # an empty name: the record keeps the --agent name
        return None

    def reset(self, task: Task) -> Observation:
        self._skip = None
        self._close_sandbox()
        data = task.raw_config
        if self.end_state_dir is not None:
            end_state = self.end_state_dir / task.task_id
            if not end_state.is_dir():
                self._skip = f"no end state for this task: {end_state} does not exist"
                return Observation(app_name=task.domain)
        else:
            self._skip = self.app_unavailable(task.domain)
            if self._skip is not None:
                return Observation(app_name=task.domain)
        from . import environment

        if self.end_state_dir is not None:
            sandbox = self._new_sandbox()
            environment.prepare(sandbox, self.tasks_dir / task.task_id, data)
            environment.lay_end_state(sandbox, self.end_state_dir / task.task_id)
            return Observation(app_name=task.domain, raw={"end_state": str(self.end_state_dir / task.task_id)})
        from .desktop import Desktop, sandbox_options

        sandbox = self._new_sandbox(**sandbox_options())
        environment.prepare(sandbox, self.tasks_dir / task.task_id, data)
        self._desktop = Desktop(task.domain, self.screen_size)
        self._desktop.launch(sandbox, data)
        return self._desktop.observe(sandbox)

    def step(self, action: Action) -> Observation:
        if self._desktop is None or self.sandbox is None:
            raise InfrastructureError(self._skip or "no desktop app is running for this task (reset first)")
        self._desktop.act(self.sandbox, action)
        return self._desktop.observe(self.sandbox)

    def evaluate(self, task: Task, final_action: Action | None) -> Verdict:
        if self._skip is not None:
            return Verdict(score=0.0, passed=None, reason=self._skip)
        if self.sandbox is None:
            raise EvaluationError(f"task {task.task_id} has no sandbox to grade (reset was not called)")
        app = task.raw_config["app"]
        if self.verifiers_dir is None:
            raise EvaluationError("no verifiers to grade with: pass --opencomputer-verifiers DIR (OpenComputer's "
                                  "verifiers/ folder)")
        script = verifier_script(self.verifiers_dir, app)
        if script is None:
            raise EvaluationError(f"no verifier for app {app!r}: neither {self.verifiers_dir / app / (app + '.py')} "
                                  f"nor {self.verifiers_dir / (app + '.py')} exists")
        verifier = install_verifier(self.sandbox, script, app)
        checks = task.raw_config["verification"]
        grading = grade(self.sandbox, verifier, checks, timeout=self.timeout, judge=self.judge,
                        on_error=self.on_error)
        if grading.errors and self.on_error == "error":
            more = f" (and {len(grading.errors) - 1} more)" if len(grading.errors) > 1 else ""
            raise EvaluationError(f"{len(grading.errors)} of {len(checks)} checks could not run: "
                                  f"{grading.errors[0]}{more}")
        return verdict_for(grading)

    def close(self) -> None:
        self._close_sandbox()

    def describe(self) -> dict[str, Any]:
        facts: dict[str, Any] = {
            "name": self.name, "tasks": str(self.tasks_arg),
            "verifiers": str(self.verifiers_dir) if self.verifiers_dir else None,
            "end_state": str(self.end_state_dir) if self.end_state_dir else None,
            "timeout": self.timeout, "verifier_errors": self.on_error, "judge": self.judge is not None,
        }
        if self._isolation is not None:
            facts["sandbox"] = self._isolation.describe()
        return facts
