"""The body of the model-agent tests' fixtures: agents started against a fake API, their backoff
sleeps recorded instead of slept, every agent and fake closed when the test ends."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any


def agent_starter(make: Callable[..., tuple[Any, Any]]) -> Iterator[Callable[..., tuple[Any, Any]]]:
    """Yields ``start(...) -> (agent, fake)``, made by ``make(...)``; ``start.sleeps`` lists the
    seconds the agents would have slept. Use as ``yield from agent_starter(make)`` in a fixture."""
    started: list[tuple[Any, Any]] = []
    sleeps: list[float] = []

    def start(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        agent, fake = make(*args, **kwargs)
        agent.sleep = sleeps.append
        started.append((agent, fake))
        return agent, fake

    start.sleeps = sleeps  # type: ignore[attr-defined]
    yield start
    for agent, fake in started:
        agent.close()
        fake.__exit__()
