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
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    import pytest

    from pytest_agentbench.model import Action, Observation, Task, Verdict

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
    def from_config(cls, config: pytest.Config | None, **kwargs: Any) -> WAABenchmark:
        """Build from ``--waa-*`` options (the command line wins over the ``agentbench_waa_*`` ini keys).
        Relative paths on the command line are taken from the invocation folder, in the ini file
        from the ini file's folder. Without an evaluate server, upstream's evaluator code must be
        found (``--waa-upstream``, or inferred from ``--waa-examples``): else a usage error, except
        for runs that score nothing (``--collect-only``, ``--bench-dry-run``)."""
        if config is None:
            return cls(**kwargs)
        import pytest

        from pytest_agentbench.plugin.options import WAA_SECONDS, parse_number

        def pick(option: str, ini: str) -> tuple[Any, Path | None]:
            value = config.getoption(option, None)
            if value not in (None, "", []):
                return value, Path(config.invocation_params.dir)
            raw = str(config.getini(ini)).strip()
            if raw:
                return raw, Path(config.inipath).parent if config.inipath else Path(config.rootpath)
            return None, None

        def path(option: str) -> Path | None:
            value, base = pick(f"waa_{option}", f"agentbench_waa_{option}")
            if value is None:
                return None
            value = Path(str(value)).expanduser()
            return value if value.is_absolute() or base is None else base / value

        def seconds(name: str, default: float | None) -> float | None:
            value, _ = pick(f"waa_{name}", f"agentbench_waa_{name}")
            if value is None:
                return default
            if isinstance(value, float):
                return value
            try:
                return parse_number(f"ini agentbench_waa_{name}", value, positive=name.endswith("timeout"),
                                    unit="megabytes" if name.endswith("_mb") else "seconds")
            except ValueError as exc:
                raise pytest.UsageError(str(exc)) from None

        examples = path("examples")
        index, index_base = pick("waa_index", "agentbench_waa_index")
        server, _ = pick("waa_server", "agentbench_waa_server")
        evaluate, _ = pick("waa_evaluate_url", "agentbench_waa_evaluate_url")
        cdp, _ = pick("waa_cdp_url", "agentbench_waa_cdp_url")
        allow, _ = pick("waa_download_allow", "agentbench_waa_download_allow")
        allow_list = allow if isinstance(allow, list) else [allow] if allow else []
        defaults = WAASettings()
        fields: dict[str, Any] = {n.replace("-", "_"): seconds(n.replace("-", "_"), getattr(defaults, n.replace("-", "_")))
                                  for n in WAA_SECONDS}
        settings = WAASettings(
            server_url=str(server or DEFAULT_SERVER), evaluate_url=str(evaluate) if evaluate else None,
            cdp_url=str(cdp) if cdp else None, ready_timeout=seconds("ready_timeout", None),
            download_allow=frozenset(h.strip().lower() for text in allow_list for h in str(text).split(",") if h.strip()),
            download_max_mb=seconds("download_max_mb", defaults.download_max_mb) or defaults.download_max_mb,
            **fields)
        upstream = None
        try:
            upstream_dir = path("upstream")
            client_dir = locate_client(upstream_dir) if upstream_dir is not None else infer_client(examples)
            if client_dir is not None:
                python, _ = pick("waa_python", "agentbench_waa_python")
                upstream = UpstreamEvaluator(client_dir, str(python) if python else None,
                                             timeout=settings.evaluate_timeout)
        except WAAUpstreamError as exc:
            raise pytest.UsageError(str(exc)) from None
        scores_nothing = bool(config.getoption("collectonly", False) or config.getoption("dry_run", False)
                              or config.getoption("pool_dry_run", False))
        if upstream is None and settings.evaluate_url is None and not scores_nothing:
            raise pytest.UsageError(f"--bench=waa cannot score: no upstream evaluator code found; {HOW_TO_POINT}")
        return cls(examples, index or DEFAULT_INDEX, settings=settings, upstream=upstream,
                   base_dir=index_base, **kwargs)

    # -- tasks ---------------------------------------------------------------------------------
    def list_tasks(self, limit: int | None = None) -> list[Task]:
        return self.taskset.tasks(limit)

    def task_source(self, task: Task) -> Path:
        """The task's JSON file: reports locate its item there."""
        return self.taskset.tree.task_file(task.domain, task.task_id)

    def load_task(self, task_id: str) -> Task:
        try:
            return self.taskset.find(task_id)
        except WAATaskError as exc:  # the stem's file exists but is broken: say so, not "no such task"
            import pytest

            raise pytest.UsageError(str(exc)) from None

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
            return client.observe()
        except InfrastructureError:
            self._ready = False  # probe again before the next episode
            raise

    def step(self, action: Action) -> Observation:
        client = self.client
        try:
            client.act(action)
            return client.observe()
        except InfrastructureError:
            self._ready = False
            raise

    def evaluate(self, task: Task, final_action: Action | None) -> Verdict:
        if self.settings.evaluate_url is not None:
            return self.client.evaluate(task.raw_config, final_action)
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
