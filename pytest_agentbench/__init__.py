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

__all__ = sorted([*_EXPORTS, *_ALIASES, "__version__"])


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
    from .agent import Agent as Agent
    from .agent import Agent as BenchmarkAgent
    from .agents import MockAgent as MockAgent
    from .agents import NoopAgent as NoopAgent
    from .agents import ScriptedAgent as ScriptedAgent
    from .api import WAAMockAdapter as WAAMockAdapter
    from .api import compute_metrics as compute_metrics
    from .api import evaluate_agent_on_benchmark as evaluate_agent_on_benchmark
    from .benches.mock import MockBenchmark as MockBenchmark
    from .benchmark import Benchmark as Benchmark
    from .benchmark import Benchmark as BenchmarkAdapter
    from .benchmark import EvaluationError as EvaluationError
    from .benchmark import InfrastructureError as InfrastructureError
    from .episode import run_episode as run_episode
    from .episode import step_limit as step_limit
    from .model import Action as Action
    from .model import Action as BenchmarkAction
    from .model import Criterion as Criterion
    from .model import EpisodeRecord as BenchmarkResult
    from .model import EpisodeRecord as EpisodeRecord
    from .model import Observation as BenchmarkObservation
    from .model import Observation as Observation
    from .model import Step as Step
    from .model import Task as BenchmarkTask
    from .model import Task as Task
    from .model import Verdict as Verdict
    from .outcomes import Outcome as Outcome
    from .registry import AgentRegistry as AgentRegistry
    from .registry import BenchmarkRegistry as BenchmarkRegistry
