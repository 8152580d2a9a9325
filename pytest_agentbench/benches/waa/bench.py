"""The live Windows Agent Arena benchmark: WAA tasks played on a WAA server, scored by upstream's code.

Tasks come from ``tasks.py`` (``examples/<domain>/<stem>.json``, the stem is the id). Each episode,
as upstream's ``DesktopEnv`` plays it for a remote VM:

* ``reset``: ``client.reset()`` (close every window, settle, clear the task files), then
  ``client.setup(<the task's "config" steps>)``, settle, then ``client.observe()``;
* ``step``: ``client.act(action)`` (then the step pause) and ``client.observe()``;
* ``evaluate``: by default :class:`.upstream.UpstreamEvaluator` runs upstream's own
  ``DesktopEnv.evaluate`` (postconfig, getters, metrics with their options, the and/or and
  infeasible rules) from the user's WAA checkout (``--waa-upstream``); with ``--waa-evaluate-url``
  a user's own evaluate server scores instead (``client.evaluate``).

The client (``client.WAAClient``) is created on first use in each process (each xdist worker). A VM
pool points a worker's benchmark at its own VM with :meth:`WAABenchmark.use_server`. A server that
cannot be reached raises ``InfrastructureError``: the item is an error, not a failure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pytest_agentbench.benches.waa import scoring
from pytest_agentbench.benches.waa.settings import DEFAULT_SERVER, WAASettings
from pytest_agentbench.benches.waa.tasks import DEFAULT_INDEX, TaskSet, WAATaskError
from pytest_agentbench.benches.waa.upstream import (
    HOW_TO_POINT,
    UpstreamEvaluator,
    WAAUpstreamError,
    infer_client,
    locate_client,
)
from pytest_agentbench.benchmark import Benchmark, InfrastructureError
from pytest_agentbench.errors import ConfigError
from pytest_agentbench.settings import from_settings, settings_of

if TYPE_CHECKING:
    from pytest_agentbench.model import Action, Observation, Task, Verdict
    from pytest_agentbench.settings import Settings

#: ``client_factory(settings, upstream)`` returns an object with the ``WAAClient`` methods.
ClientFactory = Callable[[WAASettings, "UpstreamEvaluator | None"], Any]


def _default_client(settings: WAASettings, upstream: UpstreamEvaluator | None) -> Any:
    from pytest_agentbench.benches.waa.client import WAAClient  # httpx loads only when a WAA run plays an episode

    upstream_setup = None
    if upstream is not None:
        def upstream_setup(steps: list[dict[str, Any]]) -> list[str]:
            return upstream.setup(steps, settings.server_url, settings.cdp_url)

    return WAAClient(
        settings.server_url, settings.evaluate_url, cdp_url=settings.cdp_url, command_timeout=settings.command_timeout,
        tree_timeout=settings.tree_timeout, settle=settings.settle, step_pause=settings.step_pause,
        open_wait=settings.open_wait, evaluate_timeout=settings.evaluate_timeout,
        download_allow=settings.download_allow, download_max_bytes=int(settings.download_max_mb * 1024 * 1024),
        upstream_setup=upstream_setup)


class WAABenchmark(Benchmark):
    name = "waa"

    def __init__(
        self,
        examples: str | Path | None = None,
        index: str | Path = DEFAULT_INDEX,
        server_url: str = DEFAULT_SERVER,
        evaluate_url: str | None = None,
        ready_timeout: float | None = None,
        *,
        settings: WAASettings | None = None,
        upstream: UpstreamEvaluator | None = None,
        client_factory: ClientFactory | None = None,
        base_dir: Path | None = None,
    ) -> None:
        self.taskset = TaskSet(examples, index, base=base_dir)
        base = settings or WAASettings()
        if settings is None:
            base = dataclasses.replace(base, server_url=server_url, evaluate_url=evaluate_url,
                                       ready_timeout=ready_timeout)
        self.settings = dataclasses.replace(base, server_url=base.server_url.rstrip("/"),
                                            evaluate_url=base.evaluate_url.rstrip("/") if base.evaluate_url else None)
        self.upstream = upstream
        self._client_factory = client_factory or _default_client
        self._client: Any = None
        self._ready = False
        self._waited = False

    @property
    def ready_timeout(self) -> float | None:
        return self.settings.ready_timeout

    @ready_timeout.setter
    def ready_timeout(self, value: float | None) -> None:
        self.settings = dataclasses.replace(self.settings, ready_timeout=value)

    @classmethod
    def from_config(cls, settings: Settings | None, **kwargs: Any) -> WAABenchmark:
        """Build from ``--waa-*`` options (the command line wins over the ``agentbench_waa_*`` ini keys;
        relative paths come resolved, see :mod:`pytest_agentbench.settings`). Without an evaluate
        server, upstream's evaluator code must be found (``--waa-upstream``, or inferred from
        ``--waa-examples``): else a usage error, except for runs that score nothing
        (``--collect-only``, ``--bench-dry-run``)."""
        settings = settings_of(settings)
        if settings is None:
            return cls(**kwargs)

        def get(name: str) -> Any:
            return settings.get(f"waa_{name}")

        def path(name: str) -> Path | None:
            value = get(name)
            return None if value in (None, "") else Path(str(value))

        examples = path("examples")
        if examples is not None and not examples.is_dir():
            what = "does not exist" if not examples.exists() else "is not a folder"
            raise ConfigError(f"--waa-examples {examples} {what}: pass the evaluation_examples_windows folder of a "
                              "WindowsAgentArena checkout (ini agentbench_waa_examples)")
        waa = from_settings(WAASettings, settings)
        upstream = None
        try:
            upstream_dir = path("upstream")
            client_dir = locate_client(upstream_dir) if upstream_dir is not None else infer_client(examples)
            if client_dir is not None:
                upstream = UpstreamEvaluator(client_dir, get("python") or None, timeout=waa.evaluate_timeout)
        except WAAUpstreamError as exc:
            raise ConfigError(str(exc)) from None
        scores_nothing = bool(settings.get("collectonly") or settings.get("dry_run") or settings.get("pool_dry_run"))
        if upstream is None and waa.evaluate_url is None and not scores_nothing:
            looked = f" (looked beside --waa-examples {examples})" if examples is not None else ""
            raise ConfigError(f"--bench=waa cannot score: no upstream evaluator code found{looked}; {HOW_TO_POINT}")
        return cls(examples, get("index") or DEFAULT_INDEX, settings=waa, upstream=upstream,
                   base_dir=settings.invocation_dir, **kwargs)

    # -- tasks ---------------------------------------------------------------------------------
    def list_tasks(self, limit: int | None = None) -> list[Task]:
        return self.taskset.tasks(limit)

    def list_task_data(self, limit: int | None = None) -> list[dict[str, Any]]:
        return self.taskset.task_data(limit)

    def task_source(self, task: Task) -> Path:
        """The task's JSON file: reports locate its item there."""
        return self.taskset.tree.task_file(task.domain, task.task_id)

    def load_task(self, task_id: str) -> Task:
        try:
            return self.taskset.find(task_id)
        except WAATaskError as exc:  # the stem's file exists but is broken: say so, not "no such task"
            raise ConfigError(str(exc)) from None

    # -- the server ------------------------------------------------------------------------------
    @property
    def server_url(self) -> str:
        """The WAA server this process's client talks to (``--waa-server``, or a leased VM's)."""
        return self.settings.server_url

    @property
    def evaluate_url(self) -> str | None:
        """A user's evaluate server, when scoring goes there instead of upstream's code."""
        return self.settings.evaluate_url

    @property
    def cdp_url(self) -> str | None:
        return self.settings.cdp_url

    @property
    def scorer(self) -> str:
        """``upstream`` (upstream's own evaluator code) or ``evaluate-server`` (``--waa-evaluate-url``)."""
        return "evaluate-server" if self.settings.evaluate_url else "upstream"

    def use_server(self, server_url: str, evaluate_url: str | None = None, cdp_url: str | None = None) -> None:
        """Point this process at another WAA server (a VM leased for this worker). The current
        client, if any, is closed; the next episode creates one for the new server."""
        self._close_client()
        self.settings = dataclasses.replace(
            self.settings, server_url=server_url.rstrip("/"),
            evaluate_url=evaluate_url.rstrip("/") if evaluate_url else self.settings.evaluate_url,
            cdp_url=cdp_url.rstrip("/") if cdp_url else self.settings.cdp_url)

    @property
    def client(self) -> Any:
        """The client, created on first use and checked ready once (``--waa-ready-timeout`` waits
        that long the first time; afterwards, or without it, one probe)."""
        if self._client is None:
            try:
                self._client = self._client_factory(self.settings, self.upstream)
            except InfrastructureError:
                raise
            except ImportError as exc:
                raise InfrastructureError(f"the WAA client cannot be loaded: {exc}") from exc
            self._ready = False
        if not self._ready:
            if self.ready_timeout and not self._waited:
                self._waited = True
                self._client.wait_ready(self.ready_timeout)
            elif not self._client.probe():
                raise InfrastructureError(
                    f"WAA server at {self.server_url} is not reachable (GET /probe failed); start it, "
                    "check --waa-server, or wait for it with --waa-ready-timeout SECONDS")
            self._ready = True
        return self._client

    def _close_client(self) -> None:
        client, self._client = self._client, None
        self._ready = self._waited = False
        if client is not None:
            client.close()

    # -- episodes --------------------------------------------------------------------------------
    def reset(self, task: Task) -> Observation:
        client = self.client
        config = task.raw_config.get("config", [])
        try:
            client.reset()
            client.setup(config)
            after_setup = getattr(client, "after_setup", None)
            if after_setup is not None:
                after_setup()
            return cast("Observation", client.observe())
        except InfrastructureError:
            self._ready = False  # probe again before the next episode
            raise

    def step(self, action: Action) -> Observation:
        client = self.client
        try:
            client.act(action)
            return cast("Observation", client.observe())
        except InfrastructureError:
            self._ready = False
            raise

    def evaluate(self, task: Task, final_action: Action | None) -> Verdict:
        if self.settings.evaluate_url is not None:
            return cast("Verdict", self.client.evaluate(task.raw_config, final_action))
        if self.upstream is None:
            from pytest_agentbench.benchmark import EvaluationError

            raise EvaluationError(f"no upstream evaluator code to score with; {HOW_TO_POINT}")
        return self.upstream.evaluate(task.raw_config, scoring.last_action_word(final_action), self.server_url,
                                      self.settings.cdp_url)

    def close(self) -> None:
        self._close_client()

    def describe(self) -> dict[str, Any]:
        facts: dict[str, Any] = {"name": self.name, "server_url": self.server_url,
                                 "evaluate_url": self.evaluate_url, "scorer": self.scorer,
                                 "index": self.taskset.index_arg}
        if self.upstream is not None:
            facts.update(self.upstream.describe())
        try:
            facts["index_path"] = str(self.taskset.index_path)
            facts["examples"] = str(self.taskset.tree.examples)
            facts["task_count"] = self.taskset.count()
        except (WAATaskError, OSError):
            facts["task_count"] = None
        return facts
