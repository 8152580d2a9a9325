"""The contract an agent implements: one action per observation."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import Action, Observation, Task


class Agent(ABC):
    """Looks at an observation and returns the next action.

    ``history`` holds the (observation, action) pairs of the episode so far. Return ``done`` when
    the task is complete, ``fail`` when it cannot be done, ``answer`` for a question, ``error`` when
    the agent itself broke. Whatever the agent claims, the benchmark's checker decides the score.
    """

    #: The name used for records and reports; the registry name when built from ``--agent``.
    name: str = "agent"

    @abstractmethod
    def act(
        self,
        observation: Observation,
        task: Task,
        history: list[tuple[Observation, Action]] | None = None,
    ) -> Action:
        """Return one action."""

    def reset(self) -> None:
        """Forget the previous episode. Called before each task."""

    def close(self) -> None:
        """Release clients and connections. Called once per process."""
