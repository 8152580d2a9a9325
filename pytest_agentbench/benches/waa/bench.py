"""The live Windows Agent Arena benchmark: WAA tasks played on a WAA server.

Tasks come from ``tasks.py`` (``examples/<domain>/<stem>.json``, the stem is the id). Each episode:

* ``reset``: ``client.reset()`` (close the task's windows, clear its files), then
  ``client.setup(<the task's "config" steps>)``, then ``client.observe()``;
* ``step``: ``client.act(action)`` then ``client.observe()``;
* ``evaluate``: ``client.evaluate(<the whole task JSON>, <the agent's final action>)``, scored by the
  evaluate server on the upstream rule (infeasible tasks pass only on a final FAIL).

The client (``client.WAAClient``) is created on first use in each process (each xdist worker), from
``--waa-server`` / ``--waa-evaluate-url``. A VM pool points a worker's benchmark at its own VM with
:meth:`WAABenchmark.use_server`; :attr:`WAABenchmark.server_url` is what the client talks to.
A server that cannot be reached raises ``InfrastructureError``: the item is an error, not a failure.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...benchmark import Benchmark, InfrastructureError
from ...options import waa_ready_timeout
from .tasks import DEFAULT_INDEX, TaskSet, WAATaskError

if TYPE_CHECKING:
    import pytest

    from ...model import Action, Observation, Task, Verdict

DEFAULT_SERVER = "http://localhost:5001"

#: ``client_factory(server_url, evaluate_url)`` returns an object with the ``WAAClient`` methods.
ClientFactory = Callable[[str, "str | None"], Any]


def _default_client(server_url: str, evaluate_url: str | None) -> Any:
    from .client import WAAClient  # httpx loads only when a WAA run plays an episode

    return WAAClient(server_url, evaluate_url)


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
        client_factory: ClientFactory | None = None,
        base_dir: Path | None = None,
    ) -> None:
        self.taskset = TaskSet(examples, index, base=base_dir)
        self._server_url = server_url.rstrip("/")
        self._evaluate_url = evaluate_url.rstrip("/") if evaluate_url else None
        self.ready_timeout = ready_timeout
        self._client_factory = client_factory or _default_client
        self._client: Any = None
        self._ready = False
        self._waited = False

    @classmethod
    def from_config(cls, config: pytest.Config | None, **kwargs: Any) -> WAABenchmark:
        """Build from ``--waa-*`` options (the command line wins over the ``agentbench_waa_*`` ini keys).
        Relative paths on the command line are taken from the invocation folder, in the ini file
        from the ini file's folder."""
        if config is None:
            return cls(**kwargs)
        import pytest

        def pick(option: str, ini: str) -> tuple[Any, Path | None]:
            value = config.getoption(option)
            if value not in (None, ""):
                return value, Path(config.invocation_params.dir)
            raw = str(config.getini(ini)).strip()
            if raw:
                return raw, Path(config.inipath).parent if config.inipath else Path(config.rootpath)
            return None, None

        examples, examples_base = pick("waa_examples", "agentbench_waa_examples")
        if examples is not None and examples_base is not None and not Path(examples).is_absolute():
            examples = examples_base / examples
        index, index_base = pick("waa_index", "agentbench_waa_index")
        server, _ = pick("waa_server", "agentbench_waa_server")
        evaluate, _ = pick("waa_evaluate_url", "agentbench_waa_evaluate_url")
        timeout, _ = pick("waa_ready_timeout", "agentbench_waa_ready_timeout")
        if isinstance(timeout, str):
            try:
                timeout = waa_ready_timeout(timeout)
            except argparse.ArgumentTypeError as exc:
                raise pytest.UsageError(f"ini agentbench_waa_ready_timeout: {exc}") from None
        return cls(examples, index or DEFAULT_INDEX, server or DEFAULT_SERVER, evaluate or None, timeout,
                   base_dir=index_base, **kwargs)

    # -- tasks ---------------------------------------------------------------------------------
    def list_tasks(self, limit: int | None = None) -> list[Task]:
        return self.taskset.tasks(limit)

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
        return self._server_url

    @property
    def evaluate_url(self) -> str | None:
        return self._evaluate_url

    def use_server(self, server_url: str, evaluate_url: str | None = None) -> None:
        """Point this process at another WAA server (a VM leased for this worker). The current
        client, if any, is closed; the next episode creates one for the new server."""
        self._close_client()
        self._server_url = server_url.rstrip("/")
        self._evaluate_url = evaluate_url.rstrip("/") if evaluate_url else None

    @property
    def client(self) -> Any:
        """The client, created on first use and checked ready once (``--waa-ready-timeout`` waits
        that long the first time; afterwards, or without it, one probe)."""
        if self._client is None:
            try:
                self._client = self._client_factory(self._server_url, self._evaluate_url)
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
                    f"WAA server at {self._server_url} is not reachable (GET /probe failed); start it, "
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
        return self.client.evaluate(task.raw_config, final_action)

    def close(self) -> None:
        self._close_client()

    def describe(self) -> dict[str, Any]:
        facts: dict[str, Any] = {"name": self.name, "server_url": self._server_url,
                                 "evaluate_url": self._evaluate_url, "index": self.taskset.index_arg}
        try:
            facts["index_path"] = str(self.taskset.index_path)
            facts["examples"] = str(self.taskset.tree.examples)
            facts["task_count"] = self.taskset.count()
        except (WAATaskError, OSError):
            facts["task_count"] = None
        return facts
