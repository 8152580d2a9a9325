"""The upstream WAA/OSWorld scoring rule (``DesktopEnv.evaluate``), as pure functions.

Shared by the live client (which decides infeasible tasks and feasible tasks ended with FAIL itself,
and reads per-metric replies) and by the fake evaluate server in ``pytest_agentbench.testing``.

The rule (research ``benchmarks.md`` §3):

1. ``func == "infeasible"``: 1 when the agent's last action is exactly ``"FAIL"``, else 0.
2. Any other task whose last action is ``"FAIL"`` scores 0.
3. One func: ``metric(result, expected, **options)`` (or ``metric(result, **options)`` without
   ``expected``).
4. A list of funcs (``conj`` defaults to ``"and"``), evaluated in order: ``and`` returns 0 as soon as a
   metric is 0 and otherwise the mean; ``or`` returns 1 as soon as a metric is 1 and otherwise the max.
   ``result``/``expected``/``options`` are then lists of the same length (``expected`` entries may be
   null; ``options`` defaults to ``{}`` per func).

Nothing here talks to a network. Problems that make a task unscorable raise :class:`CannotScore`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

FAIL = "FAIL"
DONE = "DONE"


class CannotScore(Exception):
    """The evaluator config cannot be scored (malformed, or a metric/getter nobody implements)."""


@dataclass(frozen=True)
class MetricSpec:
    """One metric call: ``func(result_state, expected_state, **options)``."""

    func: str
    result: dict[str, Any] | None
    expected: dict[str, Any] | None
    options: dict[str, Any]


@dataclass
class MetricResult:
    func: str
    score: float
    detail: str = ""


@dataclass
class ScoreResult:
    score: float
    reason: str
    metrics: list[MetricResult] = field(default_factory=list)
    #: True when the rule stopped before evaluating every metric.
    short_circuit: bool = False

    @property
    def success(self) -> bool:
        return self.score >= 1.0


def last_action_word(action: Any) -> str | None:
    """The upstream "last action" string for a core :class:`~pytest_agentbench.model.Action` (or None).

    ``fail`` becomes ``"FAIL"``, ``done`` ``"DONE"``, ``answer`` its answer text, ``error`` ``"ERROR"``;
    any other (non-terminal) action its upper-case type.
    """
    if action is None:
        return None
    kind = getattr(action, "type", None)
    if kind == "fail":
        return FAIL
    if kind == "done":
        return DONE
    if kind == "answer":
        return getattr(action, "answer", None) or getattr(action, "text", None) or ""
    return str(kind).upper() if kind else None


def is_infeasible(evaluator: dict[str, Any]) -> bool:
    return evaluator.get("func") == "infeasible"


def metric_specs(evaluator: dict[str, Any]) -> tuple[list[MetricSpec], str]:
    """Normalise an evaluator into metric calls and the conjunction; raise CannotScore when malformed."""
    if not isinstance(evaluator, dict) or "func" not in evaluator:
        raise CannotScore("task has no evaluator func")
    func = evaluator["func"]
    conj = evaluator.get("conj", "and")
    if conj not in ("and", "or"):
        raise CannotScore(f"unknown evaluator conj {conj!r} (expected 'and' or 'or')")
    if isinstance(func, str):
        options = evaluator.get("options") or {}
        if not isinstance(options, dict):
            raise CannotScore(f"options for a single func must be an object, got {options!r}")
        return [MetricSpec(func, evaluator.get("result"), evaluator.get("expected"), options)], conj
    if not isinstance(func, list) or not func or not all(isinstance(f, str) for f in func):
        raise CannotScore(f"evaluator func must be a name or a non-empty list of names, got {func!r}")
    n = len(func)

    def as_list(key: str, default: Any) -> list[Any]:
        value = evaluator.get(key)
        if value is None:
            return [default] * n
        if not isinstance(value, list) or len(value) != n:
            raise CannotScore(f"evaluator {key!r} must be a list of {n} entries to match func, got {value!r}")
        return value

    results = as_list("result", None)
    expected = as_list("expected", None)
    options = [o or {} for o in as_list("options", {})]
    return [MetricSpec(f, r, e, o) for f, r, e, o in zip(func, results, expected, options, strict=True)], conj


def combine(values: Sequence[Callable[[], float]] | Sequence[float],
            conj: str = "and") -> tuple[float, list[float], bool]:
    """Apply the list rule to metric values (or thunks, evaluated lazily in order).

    Returns ``(score, values_evaluated, short_circuited)``.
    """
    if conj not in ("and", "or"):
        raise CannotScore(f"unknown conj {conj!r}")
    if not values:
        raise CannotScore("no metric to combine")
    seen: list[float] = []
    for item in values:
        value = float(item() if callable(item) else item)
        seen.append(value)
        if conj == "and" and value == 0.0:
            return 0.0, seen, len(seen) < len(values)
        if conj == "or" and value == 1.0:
            return 1.0, seen, len(seen) < len(values)
    score = sum(seen) / len(seen) if conj == "and" else max(seen)
    return score, seen, False


def precheck(evaluator: dict[str, Any], last_action: str | None) -> ScoreResult | None:
    """Steps 1-2 of the rule, which need no VM state: infeasible tasks and FAIL on a feasible task."""
    if is_infeasible(evaluator):
        passed = last_action == FAIL
        why = "infeasible task: the agent answered FAIL" if passed else (
            f"infeasible task: the final action must be FAIL, got {last_action or 'none'}"
        )
        return ScoreResult(1.0 if passed else 0.0, why, [MetricResult("infeasible", 1.0 if passed else 0.0)])
    if last_action == FAIL:
        return ScoreResult(0.0, "the agent gave up (FAIL) on a feasible task")
    return None


def score_task(
    evaluator: dict[str, Any],
    last_action: str | None,
    run_metric: Callable[[MetricSpec], float],
) -> ScoreResult:
    """The whole upstream rule. ``run_metric`` resolves the getters and calls one metric.

    ``run_metric`` raises :class:`CannotScore` for unknown metrics or getters; a ``FileNotFoundError``
    from it scores that metric 0 (as upstream does for a missing result file).
    """
    early = precheck(evaluator, last_action)
    if early is not None:
        return early
    specs, conj = metric_specs(evaluator)
    results: list[MetricResult] = []

    def thunk(spec: MetricSpec) -> Callable[[], float]:
        def call() -> float:
            try:
                value = run_metric(spec)
            except FileNotFoundError as exc:
                results.append(MetricResult(spec.func, 0.0, f"result file not found: {exc}"))
                return 0.0
            try:
                value = float(value)
            except (TypeError, ValueError):
                value = 0.0  # WAA: a non-numeric metric value scores 0
            value = min(1.0, max(0.0, value))
            results.append(MetricResult(spec.func, value))
            return value

        return call

    score, _, short = combine([thunk(s) for s in specs], conj)
    if len(specs) == 1:
        reason = f"{specs[0].func}: {score:g}"
    else:
        parts = ", ".join(f"{r.func}={r.score:g}" for r in results)
        reason = f"{conj}({parts})" + (" [short-circuit]" if short else "") + f" -> {score:g}"
    return ScoreResult(score, reason, results, short)
