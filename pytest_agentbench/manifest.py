"""Resolve the selected benchmarks into a sorted, frozen list of tasks.

Under pytest-xdist every worker must collect the identical list, so the controller resolves the
manifest once, writes it as JSON and hands its path to the workers, which build their items from
that file alone and never enumerate tasks themselves.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pytest_agentbench.errors import ConfigError
from pytest_agentbench.names import name_problem, shown
from pytest_agentbench.shared_values import SharedValues
from pytest_agentbench.text import one_line, shorten

if TYPE_CHECKING:
    from pytest_agentbench.benchmark import Benchmark
    from pytest_agentbench.registry import BenchmarkRegistry

SCHEMA = "pytest-agentbench/manifest/v1"


@dataclass
class Suite:
    name: str
    tasks: list[dict[str, Any]]
    description: str = ""


@dataclass
class Manifest:
    suites: list[Suite] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "suites": [{"name": s.name, "description": s.description, "tasks": s.tasks} for s in self.suites],
        }

    def write(self, path: Path) -> Path:
        from pytest_agentbench.files import write_atomic

        return write_atomic(path, json.dumps(self.to_json(), sort_keys=True), tmp=path.with_suffix(".tmp"), mkdir=True)

    @classmethod
    def read(cls, path: str | Path) -> Manifest:
        from pytest_agentbench.untrusted import load_file

        try:
            data = load_file(path)
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read the manifest {path}: {getattr(exc, 'strerror', None) or exc}") from None
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise ValueError(f"{path} is not a pytest-agentbench manifest")
        shared = SharedTaskValues()
        for suite in data["suites"]:
            for task in suite["tasks"]:
                shared.share(task)
        return cls([Suite(s["name"], s["tasks"], s.get("description", "")) for s in data["suites"]])

    @property
    def task_count(self) -> int:
        return sum(len(s.tasks) for s in self.suites)


class SharedTaskValues(SharedValues):
    """One object for the equal values of a manifest's tasks: their domain and benchmark names and
    their config, tags and evaluation spec when equal (a generated benchmark gives every task the
    same ``raw_config``). Every item holds its task to the end of the run. The manifest's task
    dicts are only read: an item gives its benchmark a Task with containers of its own
    (``plugin.state.task_from_item``)."""

    WORDS = ("domain", "benchmark")
    NESTED = ("raw_config", "tags", "evaluation_spec")


def _first_problem(exc: Exception) -> str:
    """One line for ``exc``: a pydantic ValidationError's first problem, where it is and what is wrong (its
    own text spans several lines and lists every problem), else ``str(exc)`` on one line."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            message = one_line(str(first.get("msg", exc)).removeprefix("Value error, "))
            where = ".".join(str(part) for part in first.get("loc", ()))
            return message if not where or message.startswith(where) else f"{where}: {message}"
        except (IndexError, TypeError, AttributeError):
            pass
    return one_line(exc)


class Selection(Protocol):
    """What the run asks for (the plugin's run settings have these fields)."""

    @property
    def benchmarks(self) -> tuple[str, ...]: ...

    @property
    def task_ids(self) -> tuple[str, ...]: ...

    @property
    def tasks(self) -> int | None: ...


def _check_task(benchmark: str, task: Any) -> None:
    """Every task a benchmark lists is a Task whose id and domain may become node names (also
    when a benchmark built it without validation)."""
    from pytest_agentbench.model import Task  # here: a run of suite benchmarks never loads the models

    if not isinstance(task, Task):
        raise ConfigError(f"benchmark {benchmark!r} listed a {type(task).__name__}, not a Task; "
                                "list_tasks must return pytest_agentbench.Task objects")
    for attr in ("task_id", "domain"):
        value = getattr(task, attr)
        problem = name_problem(value)
        if problem is not None:
            raise ConfigError(f"benchmark {benchmark!r}: {attr} {shown(value)} {problem}")


def _task_data(bench: Any, limit: int | None) -> list[dict[str, Any]] | None:
    """The benchmark's ``list_task_data`` (a Benchmark's optional shortcut past the models), or None."""
    method = getattr(bench, "list_task_data", None)
    return method(limit) if callable(method) else None


def _check_task_data(benchmark: str, data: Any) -> None:
    """A task from ``list_task_data``: a dict whose id and domain may become node names."""
    if not isinstance(data, dict) or not isinstance(data.get("task_id"), str) or not data["task_id"]:
        raise ConfigError(f"benchmark {benchmark!r}: list_task_data gave {shorten(repr(data), 80)}, not a task dict "
                          "with a non-empty task_id (a Task's model_dump(mode='json', exclude_defaults=True))")
    for attr in ("task_id", "domain"):
        value = data.get(attr, "default")
        problem = name_problem(value) if isinstance(value, str) else "is not a string"
        if problem is not None:
            raise ConfigError(f"benchmark {benchmark!r}: {attr} {shown(value)} {problem}")


def _check_unique(benchmark: str, task_id: str, seen: dict[str, Any]) -> None:
    if task_id in seen:
        raise ConfigError(f"benchmark {benchmark!r} has two tasks with id {task_id!r}; ids must be unique")


def _sort_key(task: dict[str, Any]) -> tuple[str, str]:
    return (task.get("domain", "default"), task["task_id"])


def resolve(
    settings: Selection,
    registry: BenchmarkRegistry,
    instances: dict[str, Benchmark],
    config: Any,
) -> Manifest:
    """Build the manifest. Unknown benchmarks and task ids are :class:`ConfigError` that name them.
    ``config`` goes to the benchmarks' factories as it is (the ``pytest.Config`` under pytest).

    ``instances`` receives the benchmark objects created on the way, so an in-process run can
    reuse them instead of creating them twice.
    """
    unknown = [name for name in settings.benchmarks if name not in registry]
    if unknown:
        raise ConfigError(
            f"unknown benchmark {', '.join(map(repr, unknown))} in --bench; available: {', '.join(registry.names())}"
        )
    manifest = Manifest()
    wanted = list(dict.fromkeys(settings.task_ids))
    found: set[str] = set()
    shared = SharedTaskValues()
    for name in registry.episode_names(settings.benchmarks):
        entry = registry.get(name)
        try:
            bench = instances.get(name) or registry.checked(entry, entry.factory(config))
            instances[name] = bench
            listed = None if wanted else _task_data(bench, settings.tasks)
            tasks = bench.list_tasks(None if wanted else settings.tasks) if listed is None else []
        except ConfigError:
            raise
        except (ValueError, KeyError, OSError) as exc:
            raise ConfigError(f"benchmark {name!r} could not list its tasks: {_first_problem(exc)}") from None
        by_id: dict[str, Any] = {}
        for task in tasks:
            _check_task(name, task)
            _check_unique(name, task.task_id, by_id)
            by_id[task.task_id] = task
        if wanted:
            selected = []
            for task_id in wanted:
                chosen = by_id.get(task_id)
                if chosen is None:
                    try:
                        chosen = bench.load_task(task_id)
                    except KeyError:
                        continue
                selected.append(chosen)
                found.add(task_id)
            tasks = selected
        dumped = []
        for data in listed if listed is not None else (t.model_dump(mode="json", exclude_defaults=True) for t in tasks):
            if listed is not None:
                _check_task_data(name, data)
                _check_unique(name, data["task_id"], by_id)
                by_id[data["task_id"]] = data
                data = dict(data)
            data["benchmark"] = name
            data.setdefault("domain", "default")
            shared.share(data)
            dumped.append(data)
        dumped.sort(key=_sort_key)
        if settings.tasks is not None:
            dumped = dumped[: settings.tasks]
        manifest.suites.append(Suite(name, dumped, entry.description))
    missing = [task_id for task_id in wanted if task_id not in found]
    if missing and registry.episode_names(settings.benchmarks):
        raise ConfigError(
            f"--bench-task {', '.join(map(repr, missing))} matches no task of {', '.join(settings.benchmarks)}; "
            "check the id (use --collect-only -q to list ids)"
        )
    return manifest
