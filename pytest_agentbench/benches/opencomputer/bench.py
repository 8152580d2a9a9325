"""The OpenComputer benchmark: tasks as items, each set up and graded as OpenComputer does, in a
fresh sandbox.

Each item (``bench/opencomputer::<app>::<task id>``) plays one episode:

* ``reset``: a fresh sandbox (``infra/sandbox.py``: uid 1000, the image's environment and
  ``python3``, ``image.py``) holding the task's start state, laid by OpenComputer's own harness
  code when ``--opencomputer-tasks`` names a checkout (``harness.py``: verifier upload, env files,
  the app's prepare hooks, setup scripts), else by ``environment.prepare``; then either
  - **end-state mode** (``--opencomputer-end-state DIR``): ``DIR/<id>`` (an overlay with an
    optional ``.deleted`` list, or a whole-home snapshot) is laid over the home and the benchmark's
    own stand-in agent says done at once (no model is called); or
  - **agent mode**: the app is launched on the desktop and the ``--bench-agent`` agent plays it
    (``desktop.py``). Where the app cannot run (no desktop here), nothing is set up, a stand-in
    agent stops at once and the item is skipped with the reason;
* ``evaluate``: the app's verifier is copied in again and every check runs (OpenComputer's
  ``verify_task``, or ``checks.run_checks``); ``grading.verdict`` scores it as OpenComputer does
  (reward = passed over all checks; the item passes only when every check passed).

A task file that cannot be used is an item that errors with the reason. A sandbox lives until
the next ``reset`` (or ``close``), so a test can look at it after the episode; it is then deleted.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentbench.agent import Agent
from pytest_agentbench.benches.opencomputer.checks import (
    DEFAULT_TIMEOUT,
    Judge,
    install_verifier,
    run_checks,
    verifier_script,
)
from pytest_agentbench.benches.opencomputer.tasks import (
    BENCHMARK,
    BROKEN,
    OpenComputerTaskError,
    broken_task,
    load_tasks,
    read_task,
    resolve_tasks_dir,
    usable_id,
)
from pytest_agentbench.benchmark import Benchmark, EvaluationError, InfrastructureError
from pytest_agentbench.errors import ConfigError
from pytest_agentbench.model import Action, Observation, Verdict
from pytest_agentbench.settings import settings_of

if TYPE_CHECKING:
    from pytest_agentbench.benches.opencomputer.container import ContainerSession, DockerOptions
    from pytest_agentbench.benches.opencomputer.desktop import Desktop
    from pytest_agentbench.benches.opencomputer.harness import Harness
    from pytest_agentbench.benches.opencomputer.image import ImagePython
    from pytest_agentbench.infra.docker_hosts import DockerHost
    from pytest_agentbench.infra.sandbox import Isolation, Limits, Sandbox
    from pytest_agentbench.model import Task
    from pytest_agentbench.settings import Settings


def _isolation(mode: str) -> Isolation:
    """``--sandbox-isolation`` decided here, outside a pytest session."""
    from pytest_agentbench.infra.sandbox import SandboxError, choose_isolation

    try:
        return choose_isolation(mode)
    except SandboxError as exc:
        raise ConfigError(str(exc)) from None


def _docker_options(options: Any, checkout: Path | None, runs: bool) -> DockerOptions | None:
    """``--opencomputer-backend docker``'s settings, checked now (daemon, image) when items run on
    this process's ``DOCKER_HOST`` (a ``--pool docker`` checks each of its hosts instead)."""
    if options.backend != "docker":
        return None
    from pytest_agentbench.benches.opencomputer.container import ContainerError, DockerOptions, check_docker

    if checkout is None:
        raise ConfigError(f"--opencomputer-backend docker runs OpenComputer's own Docker backend from its checkout: "
                          f"--opencomputer-tasks {options.tasks} is not in one (name it with --opencomputer-checkout)")
    docker = DockerOptions(image=options.image, shm_size=options.docker_shm_size, memory=options.docker_memory,
                           cpus=options.docker_cpus, ready_timeout=max(1, round(options.docker_ready_timeout)))
    if runs and not options.pooled:
        try:
            check_docker(docker.image)
        except ContainerError as exc:
            raise ConfigError(f"--opencomputer-backend docker: {exc}") from None
    return docker


class StandIn(Agent):
    """The benchmark's own agent for items no real agent plays: it says done at once."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason

    def act(self, observation: Observation, task: Task,
            history: list[tuple[Observation, Action]] | None = None) -> Action:
        return Action(type="done", reason=self.reason)


class OpenComputerBenchmark(Benchmark):
    name = BENCHMARK
    #: OpenComputer's display: what a step's screenshot is priced at by ``--bench-dry-run``
    screen_size = (1920, 1080)

    def __init__(
        self,
        tasks_dir: str | Path,
        *,
        checkout: str | Path | None = None,
        verifiers_dir: str | Path | None = None,
        end_state_dir: str | Path | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        judge: Judge | None = None,
        on_error: str = "fail",
        harness: str = "auto",
        python: str = "auto",
        isolation: Isolation | Callable[[], Isolation] | None = None,
        sandbox_base: str | Path | None = None,
        limits: Limits | None = None,
        only: Sequence[str] = (),
        docker: DockerOptions | None = None,
    ) -> None:
        from pytest_agentbench.benches.opencomputer.harness import find_checkout

        self.tasks_arg = Path(tasks_dir)
        #: the OpenComputer checkout whose harness sets up and grades: ``checkout``
        #: (--opencomputer-checkout), else the one --opencomputer-tasks lies in (None for a bare folder)
        self.checkout = Path(checkout) if checkout is not None else find_checkout(self.tasks_arg)
        if verifiers_dir is None and self.checkout is not None and (self.checkout / "verifiers").is_dir():
            verifiers_dir = self.checkout / "verifiers"
        self.verifiers_dir = Path(verifiers_dir) if verifiers_dir is not None else None
        self.end_state_dir = Path(end_state_dir) if end_state_dir is not None else None
        self.timeout = timeout
        self.judge = judge
        self.on_error = on_error
        if harness not in ("auto", "opencomputer", "builtin"):
            raise ValueError(f"harness must be auto, opencomputer or builtin, got {harness!r}")
        if harness == "opencomputer" and self.checkout is None:
            raise ValueError(f"--opencomputer-harness opencomputer needs --opencomputer-tasks to name an OpenComputer "
                             f"checkout (or its task_generator/tasks); {self.tasks_arg} is not in one")
        self.harness_choice = harness
        self.python_choice = python
        self._python: ImagePython | None = None
        self._isolation_source = isolation
        self._isolation: Isolation | None = None
        self.sandbox_base = sandbox_base
        #: what each sandboxed command may use (memory, processes, output); None: the defaults
        self.limits = limits
        self._tasks_dir: Path | None = None
        self._tasks: list[Task] | None = None
        #: the task ids the run plays (``--bench-task``): then only their files are read (a whole
        #: checkout's 900 cost every pytest process 0.2 s or more)
        self.only = tuple(only)
        self._left_out: list[str] = []
        #: the current item's sandbox (kept until the next reset)
        self.sandbox: Sandbox | None = None
        #: what the last reset did: harness steps run, end-state paths removed
        self.last_setup: list[str] = []
        self.last_removed: list[str] = []
        self._desktop: Desktop | None = None
        self._skip: str | None = None
        self._unavailable: dict[str, str | None] = {}
        self._end_state_agent = StandIn("end-state", "end state given by --opencomputer-end-state")
        #: --opencomputer-backend docker: the image and resources (None: bubblewrap sandboxes)
        self.docker = docker
        if docker is not None and self.checkout is None:
            raise ValueError("--opencomputer-backend docker runs OpenComputer's own Docker backend from its checkout: "
                             f"--opencomputer-tasks {self.tasks_arg} is not in one (name it with "
                             "--opencomputer-checkout DIR)")
        self.container: ContainerSession | None = None
        #: the Docker host a ``--pool docker`` leased this process (None: this process's DOCKER_HOST)
        self.docker_host: DockerHost | None = None
        self._app: str | None = None
        self._image_apps: frozenset[str] | None = None

    def use_docker_host(self, host: DockerHost) -> None:
        """Run this process's containers on ``host`` (``--pool docker``, see ``plugin/pools.py``)."""
        self.docker_host = host
        self._image_apps = None

    @classmethod
    def from_config(cls, settings: Settings | None, *, isolation: Callable[[], Isolation] | None = None,
                    limits: Limits | None = None, runs: bool = True) -> OpenComputerBenchmark:
        """Build from the ``--opencomputer-*`` options; missing or bad ones are :class:`ConfigError`.

        ``isolation()`` decides the sandboxes' isolation (the plugin decides it once per session);
        without it, ``--sandbox-isolation`` is tried here. ``runs=False`` (``--collect-only``)
        leaves that decision to the first item, as no item will run: the trial run of bubblewrap
        costs a process start."""
        settings = settings_of(settings)
        if settings is None:
            raise ValueError("the opencomputer benchmark needs its options (--opencomputer-tasks DIR)")
        from pytest_agentbench.benches.opencomputer.checks import load_judge
        from pytest_agentbench.benches.opencomputer.harness import MARKERS, find_checkout, is_checkout
        from pytest_agentbench.benches.opencomputer.image import ImageError, choose_python
        from pytest_agentbench.benches.opencomputer.options import opencomputer_settings

        options = opencomputer_settings(settings)
        if options.tasks is None:
            raise ConfigError("--bench=opencomputer needs --opencomputer-tasks DIR (an OpenComputer checkout, "
                              "its task_generator/tasks, or a folder of <id>/task.json) or the ini key "
                              "agentbench_opencomputer_tasks")
        for flag, folder in (("--opencomputer-verifiers", options.verifiers),
                             ("--opencomputer-end-state", options.end_state)):
            if folder is not None and not folder.is_dir():
                what = "is not a folder" if folder.exists() else "does not exist"
                raise ConfigError(f"{flag} {folder} {what}")
        if options.checkout is not None:
            if not is_checkout(options.checkout):
                raise ConfigError(f"--opencomputer-checkout {options.checkout} is not an OpenComputer checkout (it "
                                  f"lacks {', '.join(MARKERS)})")
            checkout: Path | None = options.checkout
        else:
            checkout = find_checkout(options.tasks) if options.tasks.is_dir() else None
        if checkout is None and options.harness == "auto" and runs:
            from pytest_agentbench.benches.opencomputer.tasks import OpenComputerWarning

            warnings.warn(OpenComputerWarning(
                f"--opencomputer-tasks {options.tasks} is not in an OpenComputer checkout: this plugin's built-in "
                "checker sets up and grades (no prepare or profile hooks), which differs from OpenComputer's harness "
                "for some tasks; name the checkout with --opencomputer-checkout DIR, or choose the built-in "
                "checker with --opencomputer-harness builtin"), stacklevel=2)
        if options.end_state is not None and options.verifiers is None and checkout is None:
            raise ConfigError("--opencomputer-end-state needs --opencomputer-verifiers DIR (the verifier scripts "
                              "that grade the end states: OpenComputer's verifiers/ folder), or "
                              "--opencomputer-tasks naming an OpenComputer checkout")
        judge = None
        if options.judge:
            try:
                judge = load_judge(options.judge, str(settings.rootdir))
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        if options.python != "auto":
            try:
                choose_python(options.python)
            except ImageError as exc:
                raise ConfigError(str(exc)) from None
        mode = settings.get("sandbox_isolation") or "auto"
        decide = isolation or (lambda: _isolation(mode))
        docker = _docker_options(options, checkout, runs)
        wants_harness = options.harness == "opencomputer" or (options.harness == "auto" and checkout is not None)
        if runs and docker is None and (mode != "auto" or wants_harness):
            decided = decide()  # decided now: an unusable required bwrap stops the run (exit 4)
            if options.harness == "opencomputer" and not decided.isolated:
                raise ConfigError("--opencomputer-harness opencomputer runs OpenComputer's harness code in a "
                                  f"bubblewrap sandbox, which is not available: {decided.describe()}")
        try:
            return cls(options.tasks, checkout=checkout, verifiers_dir=options.verifiers,
                       end_state_dir=options.end_state, timeout=options.timeout, judge=judge,
                       on_error=options.verifier_errors, harness=options.harness, python=options.python,
                       isolation=decide, limits=limits, docker=docker,
                       only=settings.get("bench_task") or ())
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    # -- tasks ---------------------------------------------------------------------------------
    @property
    def tasks_dir(self) -> Path:
        if self._tasks_dir is None:
            self._tasks_dir = resolve_tasks_dir(self.tasks_arg)
        return self._tasks_dir

    def task_source(self, task: Task) -> Path:
        """The task's ``task.json``: reports locate its item there."""
        return self.tasks_dir / task.task_id / "task.json"

    def list_tasks(self, limit: int | None = None) -> list[Task]:
        if self._tasks is None and self.only:
            self._tasks = []
            for task_id in dict.fromkeys(self.only):
                try:
                    self._tasks.append(self.load_task(task_id))
                except KeyError:
                    continue  # another benchmark's, or none's: the run says which ids match nothing
        if self._tasks is None:
            self._tasks, self._left_out = load_tasks(self.tasks_dir)
            if self._left_out:
                from pytest_agentbench.benches.opencomputer.tasks import OpenComputerWarning

                more = f" (and {len(self._left_out) - 1} more)" if len(self._left_out) > 1 else ""
                warnings.warn(OpenComputerWarning(f"left out: {self._left_out[0]}{more}"), stacklevel=2)
        return list(self._tasks)

    def load_task(self, task_id: str) -> Task:
        path = self.tasks_dir / task_id / "task.json"
        if "/" in task_id or not usable_id(task_id) or not path.is_file():
            raise KeyError(task_id)
        try:
            return read_task(path)
        except OpenComputerTaskError as exc:  # the file exists but is broken: an item that says so
            return broken_task(path, str(exc))

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
                from pytest_agentbench.infra.sandbox import SandboxWarning, choose_isolation

                self._isolation = choose_isolation("auto")
                if self._isolation.reason:
                    warnings.warn(SandboxWarning(f"OpenComputer sandboxes are not isolated: {self._isolation.reason}"),
                                  stacklevel=2)
        return self._isolation

    @property
    def harness(self) -> Harness | None:
        """OpenComputer's own harness code, when it sets up and grades (see ``harness.py``)."""
        if self.checkout is None or self.harness_choice == "builtin":
            return None
        if self.harness_choice == "auto" and not self.isolation.isolated:
            return None  # its commands need the sandbox's /home/user: the built-in checker instead
        from pytest_agentbench.benches.opencomputer.harness import Harness

        return Harness(self.checkout, self.verifiers_dir or self.checkout / "verifiers")

    @property
    def python(self) -> ImagePython:
        """The sandbox's ``python3`` (``image.py``), chosen once."""
        if self._python is None:
            from pytest_agentbench.benches.opencomputer.image import choose_python

            self._python = choose_python(self.python_choice)
        return self._python

    def _new_sandbox(self, **options: Any) -> Sandbox:
        from pytest_agentbench.benches.opencomputer.image import ENV, UID
        from pytest_agentbench.infra.sandbox import Sandbox

        self._close_sandbox()
        files = options.pop("files", [])
        if self.isolation.isolated:  # the image's user, environment and python3 (bubblewrap only)
            env = {**ENV, **options.pop("env", {})}
            binds = [*self.python.binds, *options.pop("ro_binds", [])]
            options.update(env=env, ro_binds=binds, uid=UID)
        self.sandbox = Sandbox.create(self.isolation, self.sandbox_base, limits=self.limits, **options)
        if self.isolation.isolated:
            self.sandbox.mkdir("/tmp/runtime-user", 0o700)
        for source, target in files:
            self.sandbox.place(source, target)
        return self.sandbox

    def _close_sandbox(self) -> None:
        box, self.sandbox = self.sandbox, None
        self._desktop = None
        container, self.container = self.container, None
        if container is not None:
            container.close()
        if box is not None:
            box.close()

    def app_unavailable(self, app: str) -> str | None:
        """Why an agent cannot play ``app`` here (None when it can); looked up once per app."""
        if self.docker is not None:
            return self._image_lacks(app)
        if app not in self._unavailable:
            from pytest_agentbench.benches.opencomputer.desktop import unavailable
            from pytest_agentbench.infra.sandbox import SANDBOX_PATH

            path = SANDBOX_PATH if self.isolation.isolated else None
            reason = unavailable(app, search_path=path)
            if reason is not None:
                reason += "; grade end states instead with --opencomputer-end-state DIR"
            self._unavailable[app] = reason
        return self._unavailable[app]

    # -- episodes --------------------------------------------------------------------------------
    @property
    def player(self) -> str | None:
        """With ``--opencomputer-end-state`` the end states play, not the ``--bench-agent`` agent."""
        return "end-state" if self.end_state_dir is not None else None

    def agent_for(self, task: Task) -> Any:
        if BROKEN in task.raw_config:
            return StandIn("", "the task file cannot be used")
        if self.end_state_dir is not None:
            return self._end_state_agent
        reason = self.app_unavailable(task.domain)
        if reason is not None:
            return StandIn("", reason)  # an empty name: the record keeps the --bench-agent name
        return None

    def _prepare(self, sandbox: Sandbox, task: Task) -> None:
        """The start state: OpenComputer's setup code, or the built-in one."""
        data = task.raw_config
        harness = self.harness
        if harness is None:
            from pytest_agentbench.benches.opencomputer import environment

            environment.prepare(sandbox, self.tasks_dir / task.task_id, data)
            self.last_setup = ["builtin prepare"]
            return
        from pytest_agentbench.benches.opencomputer.harness import HarnessError

        try:
            self.last_setup = harness.setup(sandbox, self.tasks_dir / task.task_id, data)
        except HarnessError as exc:
            raise InfrastructureError(str(exc)) from None

    def _note_disk(self, exc: Exception) -> None:
        """Name the disk cap in ``exc``'s message when the item's sandbox filled it: a full disk
        shows up as whichever step or check failed next, and the cap is what to raise."""
        note = self.sandbox.disk_note() if self.sandbox is not None else None
        if note is not None:
            exc.args = (f"{exc} ({note})",)

    def _image_lacks(self, app: str) -> str | None:
        """Why the docker image cannot play ``app``: its label lists the apps it holds (this
        project's test image); an image without the label (OpenComputer's own) holds them all."""
        if self._image_apps is None:
            from pytest_agentbench.benches.opencomputer.container import image_apps

            assert self.docker is not None
            self._image_apps = image_apps(self.docker.image, self.docker_host.env() if self.docker_host else None)
        if self._image_apps and app not in self._image_apps:
            return (f"app {app!r} is not in the image {self.docker.image if self.docker else ''} (it holds "
                    f"{', '.join(sorted(self._image_apps))})")
        return None

    def _end_state(self, task: Task) -> Path | None:
        """The task's end state in ``--opencomputer-end-state``; None (the item is skipped, saying
        why) when it has none."""
        from pytest_agentbench.benches.opencomputer import environment

        assert self.end_state_dir is not None
        end_state = environment.find_end_state(self.end_state_dir, task.task_id)
        if end_state is None:
            self._skip = (f"no end state for this task: neither {self.end_state_dir / task.task_id} nor "
                          f"{self.end_state_dir / task.task_id}.tar[.gz] exists")
        return end_state

    def _reset_container(self, task: Task) -> Observation:
        from pytest_agentbench.benches.opencomputer.container import ContainerError, ContainerSession, run_id

        assert self.docker is not None and self.checkout is not None
        self._skip = self._image_lacks(task.domain)
        if self._skip is not None:
            return Observation(app_name=task.domain)

        end_state = None
        if self.end_state_dir is not None:
            end_state = self._end_state(task)
            if end_state is None:
                return Observation(app_name=task.domain)
            end_state = end_state.resolve()
        self._app = task.domain
        self.container = ContainerSession(self.checkout, self.tasks_dir, self.docker, run_id(), self.docker_host)
        try:
            self.container.create(task.raw_config)
            if end_state is not None:
                self.last_removed = self._lay_in_container(end_state)
            png = self.container.screenshot()
        except ContainerError as exc:
            raise InfrastructureError(str(exc)) from None
        self.last_setup = ["setup_sandbox_session (docker)"]
        return Observation(screenshot=png, app_name=task.domain, viewport=self.screen_size,
                           raw={"container": self.container.container_id,
                                "create_seconds": self.container.create_seconds})

    def _lay_in_container(self, end_state: Path) -> list[str]:
        """An end state in the container's home, as :func:`environment.lay_end_state` lays it in a
        sandbox: an overlay and its ``.deleted`` paths, or a whole-home snapshot (the home emptied,
        then the snapshot laid; a tar is first extracted on the host by the sandbox's rules)."""
        from pytest_agentbench.benches.opencomputer import environment

        assert self.container is not None
        try:
            if environment.is_snapshot(end_state):
                with environment.snapshot_tree(end_state) as folder:
                    self.container.empty_home()
                    self.container.lay_overlay(folder, [])
                return []
            removals = [str(rel) for rel in environment.deleted_paths(end_state)]
        except environment.EndStateError as exc:
            raise InfrastructureError(f"end state {exc}") from None
        return self.container.lay_overlay(end_state, removals)

    def reset(self, task: Task) -> Observation:
        try:
            return self._reset(task)
        except (InfrastructureError, EvaluationError) as exc:
            self._note_disk(exc)
            raise

    def _reset(self, task: Task) -> Observation:
        self._skip = None
        self._close_sandbox()
        if self.docker is not None:
            data = task.raw_config
            if BROKEN in data:
                raise InfrastructureError(str(data[BROKEN]))
            return self._reset_container(task)
        self.last_setup, self.last_removed = [], []
        data = task.raw_config
        if BROKEN in data:
            raise InfrastructureError(str(data[BROKEN]))
        if self.end_state_dir is not None:
            from pytest_agentbench.benches.opencomputer import environment

            end_state = self._end_state(task)
            if end_state is None:
                return Observation(app_name=task.domain)
            sandbox = self._new_sandbox()
            self._prepare(sandbox, task)
            try:
                self.last_removed = environment.lay_end_state(sandbox, end_state)
            except environment.EndStateError as exc:
                raise InfrastructureError(f"end state {exc}") from None
            return Observation(app_name=task.domain, raw={"end_state": str(end_state), "removed": self.last_removed})
        self._skip = self.app_unavailable(task.domain)
        if self._skip is not None:
            return Observation(app_name=task.domain)
        from pytest_agentbench.benches.opencomputer.desktop import Desktop, sandbox_options

        sandbox = self._new_sandbox(**sandbox_options())
        self._prepare(sandbox, task)
        self._desktop = Desktop(task.domain, self.screen_size)
        command = None
        harness = self.harness
        if harness is not None:
            from pytest_agentbench.benches.opencomputer.harness import HarnessError

            try:
                command = harness.launch_command(sandbox, self.tasks_dir / task.task_id, data)
            except HarnessError as exc:
                raise InfrastructureError(str(exc)) from None
        self._desktop.launch(sandbox, data, command=command)
        return self._desktop.observe(sandbox)

    def step(self, action: Action) -> Observation:
        if self.container is not None:
            import shlex

            from pytest_agentbench.benches.opencomputer.container import ContainerError
            from pytest_agentbench.benches.opencomputer.desktop import ACTION_TIMEOUT, PREAMBLE, to_pyautogui

            code = PREAMBLE + to_pyautogui(action, self.screen_size)
            try:
                status, _, err = self.container.run(f"python3 -c {shlex.quote(code)}", timeout=ACTION_TIMEOUT)
                if status != 0:
                    raise InfrastructureError(f"action {action.describe()} failed in the container (exit {status}): "
                                              f"{err.strip().splitlines()[-1] if err.strip() else 'no output'}")
                png = self.container.screenshot()
            except ContainerError as exc:
                raise InfrastructureError(str(exc)) from None
            return Observation(screenshot=png, app_name=self._app, viewport=self.screen_size)
        if self._desktop is None or self.sandbox is None:
            raise InfrastructureError(self._skip or "no desktop app is running for this task (reset first)")
        self._desktop.act(self.sandbox, action)
        return self._desktop.observe(self.sandbox)

    def evaluate(self, task: Task, final_action: Action | None) -> Verdict:
        try:
            judged = self._evaluate(task)
        except (InfrastructureError, EvaluationError) as exc:
            self._note_disk(exc)
            raise
        note = self.sandbox.disk_note() if self.sandbox is not None else None
        if note is not None:
            judged = judged.model_copy(update={"reason": f"{judged.reason} ({note})"})
        return judged

    def _evaluate(self, task: Task) -> Verdict:
        if self._skip is not None:
            return Verdict(score=0.0, passed=None, reason=self._skip)
        if self.docker is not None:
            return self._evaluate_container(task)
        if self.sandbox is None:
            raise EvaluationError(f"task {task.task_id} has no sandbox to grade (reset was not called)")
        from pytest_agentbench.benches.opencomputer.grading import verdict

        app = task.raw_config["app"]
        if self.verifiers_dir is None:
            raise EvaluationError("no verifiers to grade with: pass --opencomputer-verifiers DIR (OpenComputer's "
                                  "verifiers/ folder)")
        script = verifier_script(self.verifiers_dir, app)
        if script is None:
            raise EvaluationError(f"no verifier for app {app!r}: neither {self.verifiers_dir / app / (app + '.py')} "
                                  f"nor {self.verifiers_dir / (app + '.py')} exists")
        verifier = install_verifier(self.sandbox, script, app)  # again: the end state cannot bring its own
        checks = task.raw_config["verification"]
        harness = self.harness
        if harness is not None:
            from pytest_agentbench.benches.opencomputer.harness import HarnessError

            try:
                details = harness.verify(self.sandbox, self.tasks_dir / task.task_id, task.raw_config,
                                         sleep=self._desktop is not None, save=self._desktop is not None)
            except HarnessError as exc:
                raise EvaluationError(str(exc)) from None
            return verdict(checks, details, judge=self.judge, on_error=self.on_error)
        run = run_checks(self.sandbox, verifier, checks, timeout=self.timeout)
        return verdict(checks, run.details, judge=self.judge, on_error=self.on_error, errors=run.errors)

    def _evaluate_container(self, task: Task) -> Verdict:
        from pytest_agentbench.benches.opencomputer.container import ContainerError
        from pytest_agentbench.benches.opencomputer.grading import verdict

        if self.container is None:
            raise EvaluationError(f"task {task.task_id} has no container to grade (reset was not called)")
        assert self.checkout is not None
        checks = task.raw_config["verification"]
        try:
            answer = self.container.verify(self.verifiers_dir or self.checkout / "verifiers",
                                           self.tasks_dir / task.task_id, task.raw_config,
                                           save=self.end_state_dir is None)  # an end state is already saved
        except ContainerError as exc:
            raise EvaluationError(str(exc)) from None
        details = answer.get("details")
        if answer.get("error") or not isinstance(details, list) or len(details) != len(checks) or not all(
                isinstance(d, dict) and isinstance(d.get("passed"), bool) for d in details):
            raise EvaluationError(f"task {task.task_id}: OpenComputer's verify_task in the container: "
                                  f"{answer.get('error') or 'a malformed result'}")
        return verdict(checks, details, judge=self.judge, on_error=self.on_error)

    def close(self) -> None:
        self._close_sandbox()

    def describe(self) -> dict[str, Any]:
        facts: dict[str, Any] = {
            "name": self.name, "tasks": str(self.tasks_arg),
            "checkout": str(self.checkout) if self.checkout else None,
            "verifiers": str(self.verifiers_dir) if self.verifiers_dir else None,
            "end_state": str(self.end_state_dir) if self.end_state_dir else None,
            "timeout": self.timeout, "verifier_errors": self.on_error, "judge": self.judge is not None,
            "harness_option": self.harness_choice,
        }
        if self.docker is not None:
            facts["backend"] = {"name": "docker", "image": self.docker.image, "shm_size": self.docker.shm_size,
                                "memory": self.docker.memory, "cpus": self.docker.cpus,
                                "ready_timeout": self.docker.ready_timeout,
                                "docker_host": self.docker_host.docker_host if self.docker_host is not None
                                else os.environ.get("DOCKER_HOST")}
            facts["harness"] = "opencomputer"
            return facts
        if self._isolation is not None:
            facts["sandbox"] = self._isolation.describe()
            facts["harness"] = "opencomputer" if self.harness is not None else "builtin"
            if self._isolation.isolated and self._python is not None:
                facts["python"] = self._python.describe()
        if self.checkout is None and self.harness_choice == "auto":
            facts["harness_note"] = ("no OpenComputer checkout (--opencomputer-tasks is not in one): the built-in "
                                     "checker sets up and grades, without OpenComputer's prepare and profile hooks")
        return facts
