"""The contract a benchmark implements: list tasks, reset, step, check.

It mirrors the reference tool's ``BenchmarkAdapter`` (list, reset, step, evaluate, close) so that
adapters port with few changes, with one difference that fixes a known fault: ``evaluate`` receives
the agent's final action (done, fail or answer), because some checkers need the agent's last word.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is 3.11+; typing_extensions comes with pydantic

    from pytest_agentbench.model import Action, Observation, Task, Verdict


class InfrastructureError(RuntimeError):
    """The environment could not be reached or reset (a VM down, a server gone).

    Items that hit it are errors, not failures, and are left out of the success rate.
    """

    error_type = "infrastructure"


class EvaluationError(RuntimeError):
    """The checker could not produce a verdict (it crashed, or its server said it cannot score)."""

    error_type = "evaluation"


class Benchmark(ABC):
    """A set of tasks plus an environment the agent acts in and a checker that scores the result.

    One instance serves one process (one xdist worker) and runs its episodes one after the other:
    ``reset`` must bring the environment to the task's start state whatever ran before.
    """

    #: Registry name; also the pytest marker and the node id prefix ``bench/<name>``.
    name: str = "benchmark"

    @abstractmethod
    def list_tasks(self, limit: int | None = None) -> list[Task]:
        """All tasks, or at least the first ``limit`` of them (the caller sorts and slices)."""

    def list_task_data(self, limit: int | None = None) -> list[dict[str, Any]] | None:
        """Optional: ``list_tasks`` as the run's manifest holds them, each a ``Task``'s
        ``model_dump(mode="json", exclude_defaults=True)``, for a benchmark that reads them from
        files and can give them without building a ``Task`` each. Collection then never imports
        the models, which costs more than listing a hundred tasks. ``None`` (the default): the
        manifest is made from ``list_tasks``. The dicts are checked as Tasks' ids and domains are."""
        return None

    def load_task(self, task_id: str) -> Task:
        """The task with this id. Raises ``KeyError`` naming the id when there is none."""
        for task in self.list_tasks():
            if task.task_id == task_id:
                return task
        raise KeyError(task_id)

    @abstractmethod
    def reset(self, task: Task) -> Observation:
        """Bring the environment to the task's start state and return the first observation."""

    @abstractmethod
    def step(self, action: Action) -> Observation:
        """Execute one non-terminal action and return the next observation."""

    @abstractmethod
    def evaluate(self, task: Task, final_action: Action | None) -> Verdict:
        """Score the end state with the benchmark's own checker."""

    def agent_for(self, task: Task) -> Any:
        """The agent this task must be played by, or None for the ``--bench-agent`` agent.

        Benchmarks whose tasks are (environment, agent) pairs, such as a comparison of arms,
        return the task's own agent here."""
        return None

    @property
    def player(self) -> str | None:
        """What plays every task when it is not the ``--bench-agent`` agent (``"arms"``, ``"end-state"``),
        for names the run shows, such as the run folder's; None when the ``--bench-agent`` agent plays."""
        return None

    def close(self) -> None:  # noqa: B027 - an optional hook: benchmarks holding nothing keep this no-op
        """Release what the benchmark holds (servers, temporary files). Called once per process."""

    def describe(self) -> dict[str, Any]:
        """Facts about this benchmark for the run record (versions, server URLs, ...)."""
        return {"name": self.name}

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
