"""The contract an agent implements: one action per observation."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_agentbench.budget import Budget
    from pytest_agentbench.model import Action, Observation, Task


@dataclass
class Usage:
    """Model usage of one step: what an agent with a model reports through ``take_usage``."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    model: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class StepEstimate:
    """What one step is expected to cost (for ``--bench-dry-run``); ``how`` says how it was worked out."""

    cost_usd: float
    input_tokens: int
    output_tokens: int
    model: str
    how: str


class Agent(ABC):
    """Looks at an observation and returns the next action.

    ``history`` holds the (observation, action) pairs of the episode so far. Return ``done`` when
    the task is complete, ``fail`` when it cannot be done, ``answer`` for a question, ``error`` when
    the agent itself broke. Whatever the agent claims, the benchmark's checker decides the score.
    """

    #: The name used for records and reports; the registry name when built from ``--bench-agent``.
    name: str = "agent"
    #: Set by the runner before each episode when ``--bench-max-cost-usd`` caps spending. An agent that
    #: calls a model more than once per ``act`` should call ``self.budget.check(pending=...)``
    #: before each call; the runner itself checks before every ``act``.
    budget: Budget | None = None
    #: Set by the runner before each episode: which trial of the task this is (1..K with
    #: ``--bench-trials K``) and a seed for it, stable across reruns with the same ``--bench-trial-seed``. An
    #: agent that samples may seed its sampler with it, so trials differ and reruns repeat.
    trial: int = 1
    seed: int | None = None

    @abstractmethod
    def act(
        self,
        observation: Observation,
        task: Task,
        history: list[tuple[Observation, Action]] | None = None,
    ) -> Action:
        """Return one action."""

    def reset(self) -> None:  # noqa: B027 - an optional hook: agents without state keep this no-op
        """Forget the previous episode. Called before each task."""

    def close(self) -> None:  # noqa: B027 - an optional hook: agents holding nothing keep this no-op
        """Release clients and connections. Called once per process."""

    def take_usage(self) -> Usage | None:
        """The model usage since the last call, then reset to nothing. The runner calls it after
        every ``act`` and records it on that step (tokens, ``cost_usd``) and against the budget.
        Agents without a model return None."""
        return None

    def estimate_step(self, screen: tuple[int, int]) -> StepEstimate | None:
        """The expected cost of one step on a screen of ``screen`` pixels, for ``--bench-dry-run``.
        None: a step costs nothing (no model)."""
        return None
