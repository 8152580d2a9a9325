"""pytest-agentbench: agent-benchmark tasks as pytest items, scored by each benchmark's checker.

The names below load on first use (PEP 562), so installing the plugin costs a plain ``pytest`` run
nothing. The ``Benchmark*`` names and ``WAAMockAdapter``, ``evaluate_agent_on_benchmark`` and
``compute_metrics`` are the reference tool's API, for code written against openadapt-evals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Action": "model", "Observation": "model", "Task": "model", "Step": "model", "Criterion": "model",
    "Verdict": "model", "EpisodeRecord": "model", "TERMINAL_ACTIONS": "model",
    "Agent": "agent", "Usage": "agent", "StepEstimate": "agent", "Budget": "budget", "BudgetSpent": "budget",
    "Benchmark": "benchmark", "InfrastructureError": "benchmark",
    "EvaluationError": "benchmark", "run_episode": "episode", "step_limit": "episode",
    "Outcome": "outcomes", "BenchmarkRegistry": "registry", "AgentRegistry": "registry",
    "MockBenchmark": "benches.mock", "MockAgent": "agents", "NoopAgent": "agents", "ScriptedAgent": "agents",
    "WAAMockAdapter": "api", "evaluate_agent_on_benchmark": "api", "compute_metrics": "api",
}
_ALIASES = {
    "BenchmarkAction": "Action", "BenchmarkObservation": "Observation", "BenchmarkTask": "Task",
    "BenchmarkAgent": "Agent", "BenchmarkAdapter": "Benchmark", "BenchmarkResult": "EpisodeRecord",
}

# Built from the lazy-export tables, so it cannot drift from them.
__all__ = sorted([*_EXPORTS, *_ALIASES, "__version__"])  # noqa: PLE0605 - a list, computed


def __getattr__(name: str) -> Any:
    target = _ALIASES.get(name, name)
    module = _EXPORTS.get(target)
    if module is None:
        raise AttributeError(f"module 'pytest_agentbench' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), target)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from pytest_agentbench.agent import Agent as Agent
    from pytest_agentbench.agent import Agent as BenchmarkAgent  # noqa: F401 - an old name, re-exported through _ALIASES
    from pytest_agentbench.agents import MockAgent as MockAgent
    from pytest_agentbench.agents import NoopAgent as NoopAgent
    from pytest_agentbench.agents import ScriptedAgent as ScriptedAgent
    from pytest_agentbench.api import WAAMockAdapter as WAAMockAdapter
    from pytest_agentbench.api import compute_metrics as compute_metrics
    from pytest_agentbench.api import evaluate_agent_on_benchmark as evaluate_agent_on_benchmark
    from pytest_agentbench.benches.mock import MockBenchmark as MockBenchmark
    from pytest_agentbench.benchmark import Benchmark as Benchmark
    from pytest_agentbench.benchmark import Benchmark as BenchmarkAdapter  # noqa: F401 - an old name, re-exported through _ALIASES
    from pytest_agentbench.benchmark import EvaluationError as EvaluationError
    from pytest_agentbench.benchmark import InfrastructureError as InfrastructureError
    from pytest_agentbench.episode import run_episode as run_episode
    from pytest_agentbench.episode import step_limit as step_limit
    from pytest_agentbench.model import Action as Action
    from pytest_agentbench.model import Action as BenchmarkAction  # noqa: F401 - an old name, re-exported through _ALIASES
    from pytest_agentbench.model import Criterion as Criterion
    from pytest_agentbench.model import EpisodeRecord as BenchmarkResult  # noqa: F401 - an old name, re-exported through _ALIASES
    from pytest_agentbench.model import EpisodeRecord as EpisodeRecord
    from pytest_agentbench.model import Observation as BenchmarkObservation  # noqa: F401 - an old name, re-exported through _ALIASES
    from pytest_agentbench.model import Observation as Observation
    from pytest_agentbench.model import Step as Step
    from pytest_agentbench.model import Task as BenchmarkTask  # noqa: F401 - an old name, re-exported through _ALIASES
    from pytest_agentbench.model import Task as Task
    from pytest_agentbench.model import Verdict as Verdict
    from pytest_agentbench.outcomes import Outcome as Outcome
    from pytest_agentbench.registry import AgentRegistry as AgentRegistry
    from pytest_agentbench.registry import BenchmarkRegistry as BenchmarkRegistry
