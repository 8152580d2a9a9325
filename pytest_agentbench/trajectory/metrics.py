"""The seven trajectory metrics as pure functions ``metric(trace, case) -> MetricResult``.

Why one module of over 500 lines: the seven metrics share their comparison rules, and each departure
from the reference sits beside the rule it departs from.

Each follows the reference tool (openeval-core 0.2.1) where its rule is sound and departs from it
where it is not; the user guide's "Differences from the reference" table lists every departure
and ``tests/test_trajectory_metrics.py`` tests both sides of each. Rules common to all seven:

* ``passed`` is ``score == 1.0``, or ``None`` when the metric had nothing to judge (no expected
  calls, no denial, no fingerprint, ...). A not-evaluated result has score 0.0, so a consumer
  that forgets to drop it cannot be lifted by it; it is never counted as passed or failed.
* A metric never raises on odd input. A broken test case (a call without ``"tool"``, ``args``
  that is not an object) gives ``passed=None`` with details naming the problem (``case_problems``
  lists them for a loader to refuse the file); odd trace content (``tool_args`` that is a list,
  a non-string tool name) is evidence about the agent and is judged as unmatched.
* Values are compared as JSON: ``1 == 1.0``, but ``True != 1`` and ``"1" != 1``.

Speed matters (the benchmark scores 1,000 traces of 10 steps with all seven): each metric walks
the steps once, builds no intermediate lists it can avoid, and not-evaluated results for the
common reasons are shared constants (``MetricResult`` is frozen).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice
from types import MemberDescriptorType

from pytest_agentbench.trajectory.model import (
    DIVERGENCE_CHECKED,
    DURATION_SECONDS,
    FINGERPRINT,
    FINGERPRINT_VERDICT,
    VERDICT,
    MetricResult,
    TestCase,
    Trace,
    duration_problem,
    expected_calls_problem,
)

Metric = Callable[[Trace, TestCase], MetricResult]

TOOL_SELECTION = "tool_selection"
ARGUMENT_CORRECTNESS = "argument_correctness"
STEP_EFFICIENCY = "step_efficiency"
GOAL_COMPLETION = "goal_completion"
DENIAL_RECOVERY = "denial_recovery"
DIVERGENCE = "divergence"
FIXTURE_FRESHNESS = "fixture_freshness"

#: id -> the reference tool's display name
NAMES: dict[str, str] = {
    TOOL_SELECTION: "Tool Selection Accuracy",
    ARGUMENT_CORRECTNESS: "Argument Correctness",
    STEP_EFFICIENCY: "Step Efficiency",
    GOAL_COMPLETION: "Goal Completion Rate",
    DENIAL_RECOVERY: "Denial Recovery Rate",
    DIVERGENCE: "Divergence Score",
    FIXTURE_FRESHNESS: "Fixture Freshness",
}

_MISSING = object()

#: How many mismatched names a failure's details list before "...".
_SHOW = 3


# MetricResult is frozen, and a frozen dataclass's __init__ sets each field through
# object.__setattr__: 0.6 us per result, a third of a trace's scoring. Setting the slots through
# their descriptors builds the same object in half the time.
_new = object.__new__


def _slot_setter(name: str) -> Callable[[MetricResult, object], None]:
    """The ``__set__`` of one of MetricResult's slots (read from the class's own namespace, where
    the slot's member descriptor lives)."""
    descriptor: MemberDescriptorType = MetricResult.__dict__[name]
    return descriptor.__set__


_set_metric = _slot_setter("metric")
_set_name = _slot_setter("name")
_set_score = _slot_setter("score")
_set_passed = _slot_setter("passed")
_set_details = _slot_setter("details")


def _make(metric: str, score: float, passed: bool | None, details: str) -> MetricResult:
    result = _new(MetricResult)
    _set_metric(result, metric)
    _set_name(result, NAMES[metric])
    _set_score(result, score)
    _set_passed(result, passed)
    _set_details(result, details)
    return result


def _result(metric: str, score: float, details: str) -> MetricResult:
    result = _new(MetricResult)
    _set_metric(result, metric)
    _set_name(result, NAMES[metric])
    _set_score(result, score)
    _set_passed(result, score == 1.0)
    _set_details(result, details)
    return result


def not_evaluated(metric: str, why: str) -> MetricResult:
    """A result that is neither passed nor failed: the metric had nothing to judge."""
    return _make(metric, 0.0, None, f"NOT EVALUATED: {why}")


_NO_EXPECTED_CALLS = ("the test case expects no tool calls (an empty list cannot tell 'none expected' from "
                      "'not specified'; use max_steps: 0 to forbid tool calls)")
_TOOL_SELECTION_NONE = not_evaluated(TOOL_SELECTION, _NO_EXPECTED_CALLS)
_ARGUMENTS_NONE = not_evaluated(ARGUMENT_CORRECTNESS, _NO_EXPECTED_CALLS)
_STEPS_NONE = not_evaluated(STEP_EFFICIENCY,
                            "the test case has no expected tool calls, no max_steps and no timeout_seconds")
_GOAL_NONE = not_evaluated(GOAL_COMPLETION, "the test case has no expected_final_state and no expected_output_contains")
_DENIAL_NONE = not_evaluated(DENIAL_RECOVERY, "no tool call was denied")
_DIVERGENCE_UNCHECKED = not_evaluated(
    DIVERGENCE, "the trace was not checked for divergence (no step is marked divergent and "
                f"metadata['{DIVERGENCE_CHECKED}'] is not true)")
_DIVERGENCE_EMPTY = not_evaluated(DIVERGENCE, "the trace has no steps")
_FRESHNESS_NONE = not_evaluated(FIXTURE_FRESHNESS,
                                "the trace was not checked for drift (no fingerprint metadata present)")
_FRESHNESS_NO_VERDICT = not_evaluated(
    FIXTURE_FRESHNESS, "the trace has a fingerprint but no drift verdict; run `fixtura check-drift TRACE` and pass "
                       "its verdict as metadata['verdict']")


def json_equal(a: object, b: object) -> bool:
    """Equality of two JSON values: numbers by value (``1 == 1.0``), but a boolean equals only a
    boolean (Python's ``True == 1`` would let ``true`` match ``1``), objects and arrays deeply.

    Iterative, so any depth the JSON reader accepted compares without a ``RecursionError`` (the
    reference's ``==`` compares ~1,000 levels; a recursive walk here stopped near 335); a value
    that contains itself compares as far as it differs."""
    if a is b:
        return True
    ta = type(a)
    if ta is type(b) and (ta is str or ta is int or ta is float):
        return a == b  # the common case, kept out of the loop
    pending = [(a, b)]
    seen: set[tuple[int, int]] = set()  # container pairs already queued: a cycle ends here
    while pending:
        a, b = pending.pop()
        if a is b:
            continue
        leaf = _leaf_equal(a, b)
        if leaf is False:
            return False
        if leaf is True:
            continue
        pair = (id(a), id(b))
        if pair in seen:
            continue
        seen.add(pair)
        if isinstance(a, dict):
            if not isinstance(b, dict) or len(a) != len(b):
                return False
            for key, value in a.items():
                if key not in b:
                    return False
                pending.append((value, b[key]))
        elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):  # always, after _leaf_equal
            if len(a) != len(b):
                return False
            pending.extend(zip(a, b, strict=True))
    return True


def _leaf_equal(a: object, b: object) -> bool | None:
    """``json_equal`` of two values unless both are objects or both arrays: then None (compare
    their members)."""
    ta = type(a)
    tb = type(b)
    if ta is tb:
        if ta is str or ta is int or ta is float:
            return a == b
        if ta is bool or ta is type(None):
            return False  # equal booleans (and None) are the same object, caught by the caller
    elif ta is str or tb is str or ta is bool or tb is bool:
        return False
    if isinstance(a, dict):
        return None if isinstance(b, dict) else False
    if isinstance(a, (list, tuple)):
        return None if isinstance(b, (list, tuple)) else False
    if isinstance(b, (dict, list, tuple)):
        return False
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # an exotic object's __eq__ (an array's): unequal rather than a crash
        return False


class _Expected:
    """A test case's expected calls, checked and indexed once per ``score_all``."""

    __slots__ = ("by_tool", "calls", "counts", "problem")

    def __init__(self, case: TestCase) -> None:
        self.calls: list[tuple[str, dict[str, object]]] = []  # (tool, args); args missing or null: {}
        self.counts: dict[str, int] = {}  # tool -> how many calls expected
        self.by_tool: dict[str, list[dict[str, object]]] = {}  # tool -> the args of each expected call
        self.problem: str | None = None
        calls = case.expected_tool_calls
        if isinstance(calls, list):
            counts = self.counts
            by_tool = self.by_tool
            for call in calls:
                if not isinstance(call, dict):
                    break
                tool = call.get("tool")
                args = call.get("args")
                if not isinstance(tool, str) or not tool:
                    break
                if args is None:
                    args = {}
                elif not isinstance(args, dict):
                    break
                self.calls.append((tool, args))
                group = by_tool.get(tool)
                if group is None:
                    by_tool[tool] = [args]
                    counts[tool] = 1
                else:
                    group.append(args)
                    counts[tool] += 1
            else:
                return
        self.calls, self.counts, self.by_tool = [], {}, {}
        self.problem = expected_calls_problem(calls) or "expected_tool_calls is not usable"


def _names(items: list[str]) -> str:
    shown = ", ".join(items[:_SHOW])
    return shown + (", ..." if len(items) > _SHOW else "")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# -- 1. Tool Selection Accuracy ---------------------------------------------------------------


def tool_selection(trace: Trace, case: TestCase) -> MetricResult:
    """Share of the expected calls that were made: the multiset intersection of expected tool
    names with the names of allowed (not denied) ``tool_call`` steps. Order and arguments are not
    looked at (Argument Correctness does); surplus calls are not penalised here (Step Efficiency
    does)."""
    return _tool_selection(trace, case, _Expected(case))


def _tool_selection(trace: Trace, case: TestCase, expected: _Expected) -> MetricResult:
    if expected.problem:
        return not_evaluated(TOOL_SELECTION, f"test case: {expected.problem}")
    if not expected.calls:
        return _TOOL_SELECTION_NONE
    need = expected.counts.copy()
    correct = 0
    for step in trace.steps:
        if step.type == "tool_call" and not step.denied:
            name = step.tool_name
            if isinstance(name, str):
                left = need.get(name)
                if left:
                    need[name] = left - 1
                    correct += 1
    total = len(expected.calls)
    if correct == total:
        return _result(TOOL_SELECTION, 1.0, f"Correctly called {total} of {total} expected tools.")
    missing = [name for name, left in need.items() if left]
    return _result(TOOL_SELECTION, correct / total,
                   f"Correctly called {correct} of {total} expected tools. Not called: {_names(missing)}.")


# -- 2. Argument Correctness ------------------------------------------------------------------


def _matches(expected: dict[str, object], actual: object) -> int:
    """How many expected arguments the actual ones match: the key must be present (an expected
    null does not match a missing key) and the value equal as JSON."""
    if not isinstance(actual, dict):
        return 0
    n = 0
    for key, value in expected.items():
        got = actual.get(key, _MISSING)
        if got is value or (got is not _MISSING and json_equal(got, value)):
            n += 1
    return n


def _best_pairing(expected: list[dict[str, object]], actual: list[object]) -> list[tuple[dict[str, object], object]]:
    """Pair each expected call with a distinct actual call of the same tool so that the most
    arguments match (weight: the share of a call's expected arguments matched). Exact for up to
    10 calls on the larger side; beyond that greedy, best pairs first."""
    if len(expected) == 1:
        args = expected[0]
        best, best_n = actual[0], -1
        for call in actual:
            n = _matches(args, call)
            if n > best_n:
                best, best_n = call, n
                if n == len(args):
                    break
        return [(args, best)]
    weight = [[(_matches(e, a) / len(e)) if e else 1.0 for a in actual] for e in expected]
    m, n = len(expected), len(actual)
    if max(m, n) <= 10:
        # Max-weight matching of size min(m, n) by dynamic programming over the smaller side,
        # with the used members of the larger side as a bit mask.
        rows_are_expected = m <= n
        rows, cols = (m, n) if rows_are_expected else (n, m)
        w = weight if rows_are_expected else [list(col) for col in zip(*weight, strict=True)]
        memo: dict[tuple[int, int], tuple[float, tuple[int, ...]]] = {}

        def solve(row: int, used: int) -> tuple[float, tuple[int, ...]]:
            if row == rows:
                return 0.0, ()
            key = (row, used)
            if key in memo:
                return memo[key]
            best_total: float = -1.0
            best_cols: tuple[int, ...] = ()
            for col in range(cols):
                if not used & (1 << col):
                    total, chosen = solve(row + 1, used | (1 << col))
                    total += w[row][col]
                    if total > best_total:
                        best_total, best_cols = total, (col, *chosen)
            memo[key] = (best_total, best_cols)
            return memo[key]

        _, chosen = solve(0, 0)
        if rows_are_expected:
            return [(expected[r], actual[c]) for r, c in enumerate(chosen)]
        return [(expected[c], actual[r]) for r, c in enumerate(chosen)]
    # Larger: greedy over all (expected, actual) pairs, best first (ties: expectations with more
    # arguments, then order), so exact matches are never taken away by a poor one.
    order = sorted(((weight[i][j], len(expected[i]), -i, -j) for i in range(m) for j in range(n)), reverse=True)
    pairs = []
    used_e: set[int] = set()
    used_a: set[int] = set()
    for _, _, neg_i, neg_j in order:
        i, j = -neg_i, -neg_j
        if i not in used_e and j not in used_a:
            used_e.add(i)
            used_a.add(j)
            pairs.append((expected[i], actual[j]))
            if len(pairs) == min(m, n):
                break
    return pairs


def argument_correctness(trace: Trace, case: TestCase) -> MetricResult:
    """Share of the expected arguments that the agent's calls had. Each expected call is paired
    with a distinct allowed call of the same tool, the pairing that matches the most arguments
    (so a wrong first try followed by a right retry counts as right, whatever the order, and a
    tool expected twice is supported). Only top-level keys are compared; extra actual keys are
    ignored. Expected calls that were never made are left to Tool Selection; when none was made
    there is nothing to judge (not evaluated)."""
    return _argument_correctness(trace, case, _Expected(case))


def _argument_correctness(trace: Trace, case: TestCase, expected: _Expected) -> MetricResult:
    if expected.problem:
        return not_evaluated(ARGUMENT_CORRECTNESS, f"test case: {expected.problem}")
    if not expected.calls:
        return _ARGUMENTS_NONE
    by_tool = expected.by_tool
    # A tool expected once (the common case) keeps just its best call so far, matched as the
    # steps go by; a tool expected more than once collects its calls for the pairing.
    best: dict[str, tuple[int, object]] = {}  # tool -> (matched arguments, the call's args)
    made: dict[str, list[object]] | None = None
    for step in trace.steps:
        if step.type == "tool_call" and not step.denied:
            name = step.tool_name
            if isinstance(name, str):
                group = by_tool.get(name)
                if group is None:
                    continue
                if len(group) == 1:  # _matches, inlined: this loop is the metric's hot path
                    actual = step.tool_args
                    n = 0
                    if isinstance(actual, dict):
                        for key, value in group[0].items():
                            got = actual.get(key, _MISSING)
                            if got is value or (got is not _MISSING and json_equal(got, value)):
                                n += 1
                    seen = best.get(name)
                    if seen is None or n > seen[0]:
                        best[name] = (n, step.tool_args)
                else:
                    made = made or {}
                    calls = made.get(name)
                    if calls is None:
                        made[name] = [step.tool_args]
                    else:
                        calls.append(step.tool_args)
    if not best and not made:
        return not_evaluated(ARGUMENT_CORRECTNESS,
                             f"none of the {len(expected.calls)} expected tool calls was made "
                             "(Tool Selection counts them)")
    paired = len(best)
    total = correct = 0
    short: list[tuple[str, dict[str, object], object]] | None = None  # (tool, expected args, actual args)
    for tool, (n, actual) in best.items():
        args = by_tool[tool][0]
        if args:
            total += len(args)
            correct += n
            if n < len(args):
                short = short or []
                short.append((tool, args, actual))
    if made:
        for tool, calls in made.items():
            for args, actual in _best_pairing(by_tool[tool], calls):
                paired += 1
                if not args:
                    continue
                total += len(args)
                n = _matches(args, actual)
                correct += n
                if n < len(args):
                    short = short or []
                    short.append((tool, args, actual))
    if total == 0:
        return _result(ARGUMENT_CORRECTNESS, 1.0, "Called tools had no expected arguments to evaluate.")
    details = f"Correctly matched {correct} of {total} expected arguments"
    if paired < len(expected.calls):
        details += f" ({paired} of {len(expected.calls)} expected calls made)"
    details += "."
    if short:
        details += _mismatches(short)
    return _result(ARGUMENT_CORRECTNESS, correct / total, details)


def _mismatches(short: list[tuple[str, dict[str, object], object]]) -> str:
    """The failure details' list of wrong or missing arguments (only built when some are)."""
    wrong: list[str] = []
    odd: list[str] = []
    for tool, args, actual in short:
        if not isinstance(actual, dict):
            if actual is not None:
                odd.append(f"{tool} ({type(actual).__name__})")
            actual = {}
        wrong.extend(f"{tool}.{key}" for key, value in args.items()
                     if key not in actual or not json_equal(actual[key], value))
    text = f" Wrong or missing: {_names(list(dict.fromkeys(wrong)))}."
    if odd:
        text += f" Arguments not an object: {_names(odd)}."
    return text


# -- 3. Step Efficiency -----------------------------------------------------------------------


def trace_seconds(trace: Trace) -> float | None:
    """The trace's duration for ``timeout_seconds``: ``metadata['duration_seconds']`` when the
    adapter knew the wall time, else the sum of the steps' ``latency_ms``, else None (unknown:
    timestamps are not used, their unit differs between recorders). A duration that
    ``duration_problem`` refuses is not used here; Step Efficiency reports it instead."""
    metadata = trace.metadata
    if isinstance(metadata, dict):
        duration = metadata.get(DURATION_SECONDS)
        if duration is not None and duration_problem(metadata) is None:
            return float(duration)
    total = 0.0
    seen = False
    for step in trace.steps:
        latency = step.latency_ms
        if (type(latency) is int or type(latency) is float) and latency >= 0:  # not bool
            total += latency
            seen = True
    return total / 1000.0 if seen else None


def step_efficiency(trace: Trace, case: TestCase) -> MetricResult:
    """How close the number of tool calls is to the expected number, and whether the run kept its
    budgets. Every ``tool_call`` step counts, denied and nameless ones too (each was an attempt).
    Closeness is ``min(taken, optimal) / max(taken, optimal)``, so under-calling costs as much as
    over-calling; ``max_steps`` caps the calls (score ``max_steps / taken`` when over) and
    ``timeout_seconds`` the duration (``timeout / duration`` when over). The score is the lowest
    of the parts that apply."""
    return _step_efficiency(trace, case, _Expected(case))


def _step_efficiency(trace: Trace, case: TestCase, expected_calls: _Expected) -> MetricResult:
    if expected_calls.problem:
        return not_evaluated(STEP_EFFICIENCY, f"test case: {expected_calls.problem}")
    expected = expected_calls.calls
    max_steps = case.max_steps
    timeout = case.timeout_seconds
    if max_steps is not None and (type(max_steps) is not int or max_steps < 0):
        return not_evaluated(STEP_EFFICIENCY,
                             f"test case: max_steps must be a whole number >= 0 or null, got {max_steps!r}")
    if timeout is not None and (type(timeout) not in (int, float) or not timeout > 0):
        return not_evaluated(STEP_EFFICIENCY,
                             f"test case: timeout_seconds must be a number > 0 or null, got {timeout!r}")
    if not expected and max_steps is None and timeout is None:
        return _STEPS_NONE
    taken = 0
    for step in trace.steps:
        if step.type == "tool_call":
            taken += 1
    score = 1.0
    parts = []
    if expected:
        optimal = len(expected)
        if taken == optimal:
            part = 1.0
        elif taken == 0:
            part = 0.0
        else:
            part = min(taken, optimal) / max(taken, optimal)
        score = part
        parts.append(f"Took {_plural(taken, 'tool call')} vs optimal {optimal}.")
    if max_steps is not None:
        if taken <= max_steps:
            parts.append(f"Within max_steps {max_steps}.")
        else:
            score = min(score, max_steps / taken)
            parts.append(f"{_plural(taken, 'tool call')} exceed max_steps {max_steps}.")
    if timeout is not None:
        problem = duration_problem(trace.metadata)
        if problem:  # a wall time the recorder got wrong: the budget cannot be judged
            return not_evaluated(STEP_EFFICIENCY, f"timeout_seconds is set but {problem}")
        seconds = trace_seconds(trace)
        if seconds is None:
            if not parts:
                return not_evaluated(STEP_EFFICIENCY, "timeout_seconds is set but the trace has no timing "
                                                      "(no latency_ms, no metadata['duration_seconds'])")
            parts.append("timeout_seconds not checked: the trace has no timing.")
        elif seconds <= timeout:
            parts.append(f"Took {seconds:.3g} s, within timeout_seconds {timeout:g}.")
        else:
            score = min(score, timeout / seconds)
            parts.append(f"Took {seconds:.3g} s, over timeout_seconds {timeout:g}.")
    return _result(STEP_EFFICIENCY, score, " ".join(parts))


# -- 4. Goal Completion Rate ------------------------------------------------------------------


def goal_completion(trace: Trace, case: TestCase) -> MetricResult:
    """Share of the expected end state that holds: each key of ``expected_final_state`` present
    in ``actual_state`` with an equal value (extra actual keys ignored; an expected null needs the
    key present), and each string of ``expected_output_contains`` found in ``final_output``
    (case-sensitive substring)."""
    expected = case.expected_final_state
    contains = case.expected_output_contains
    if not isinstance(expected, dict):
        return not_evaluated(GOAL_COMPLETION,
                             f"test case: expected_final_state must be an object, got {type(expected).__name__}")
    if not isinstance(contains, list) or not all(isinstance(s, str) for s in contains):
        return not_evaluated(GOAL_COMPLETION, "test case: expected_output_contains must be a list of strings")
    if not expected and not contains:
        return _GOAL_NONE
    parts = []
    correct = 0
    if expected:
        actual = trace.actual_state
        if not isinstance(actual, dict):
            actual = {}
        wrong = None
        for key, value in expected.items():
            got = actual.get(key, _MISSING)
            if got is value or (got is not _MISSING and json_equal(got, value)):
                correct += 1
            else:
                wrong = wrong or []
                wrong.append(str(key))
        part = f"Matched {correct} of {len(expected)} expected state keys."
        if wrong:
            part += f" Wrong or missing: {_names(wrong)}."
        parts.append(part)
    if contains:
        output = trace.final_output
        if not isinstance(output, str):
            output = ""
        absent = [s for s in contains if s not in output]
        found = len(contains) - len(absent)
        correct += found
        part = f"Found {found} of {len(contains)} expected output strings."
        if absent:
            part += f" Missing: {_names([repr(s) for s in absent])}."
        parts.append(part)
    return _result(GOAL_COMPLETION, correct / (len(expected) + len(contains)), " ".join(parts))


# -- 5. Denial Recovery Rate ------------------------------------------------------------------


def denial_recovery(trace: Trace, case: TestCase) -> MetricResult:
    """Share of denied tool calls the agent recovered from. A denial is recovered when the agent
    did not repeat it (a later call with the same tool and arguments that was denied again) and
    went on: a later allowed named call, a later ``output`` step, or a final output (also when the
    denial is the last step)."""
    steps = trace.steps
    has_output = isinstance(trace.final_output, str) and bool(trace.final_output)
    denials = recovered = 0
    for i, denied in enumerate(steps):
        if denied.type != "tool_call" or not denied.denied:
            continue
        denials += 1
        went_on = has_output
        repeated = False
        for later in islice(steps, i + 1, None):
            kind = later.type
            if kind == "tool_call":
                if later.denied:
                    if later.tool_name == denied.tool_name and json_equal(later.tool_args, denied.tool_args):
                        repeated = True
                        break
                elif later.tool_name is not None:
                    went_on = True
            elif kind == "output":
                went_on = True
        if went_on and not repeated:
            recovered += 1
    if not denials:
        return _DENIAL_NONE
    return _result(DENIAL_RECOVERY, recovered / denials,
                   f"Recovered from {recovered} of {_plural(denials, 'denied tool call')}.")


# -- 6. Divergence Score ----------------------------------------------------------------------


def divergence(trace: Trace, case: TestCase) -> MetricResult:
    """Share of the trace before the first step marked divergent (a Verified Replay or a Fixtura
    branch departing from its recording); any divergence fails. Not evaluated unless the trace
    was checked: a step is marked, or ``metadata['divergence_checked']`` is true."""
    steps = trace.steps
    for index, step in enumerate(steps):
        if step.divergent:
            return MetricResult(DIVERGENCE, NAMES[DIVERGENCE], index / len(steps), False,
                                f"Divergence detected at step {index + 1} of {len(steps)}.")
    metadata = trace.metadata
    if not isinstance(metadata, dict) or metadata.get(DIVERGENCE_CHECKED) is not True:
        return _DIVERGENCE_UNCHECKED
    if not steps:
        return _DIVERGENCE_EMPTY
    return _result(DIVERGENCE, 1.0, f"No divergence in {_plural(len(steps), 'step')}.")


# -- 7. Fixture Freshness ---------------------------------------------------------------------


def fixture_freshness(trace: Trace, case: TestCase) -> MetricResult:
    """Whether the recorded fixture still matches the agent, from a drift verdict in the
    metadata (``verdict``, else ``fingerprint_verdict``; case-insensitive): PASS passes, DRIFTED
    and UNVERIFIED fail, any other value fails as unknown. A fingerprint without a verdict was
    never checked: not evaluated (the reference fails it)."""
    metadata = trace.metadata
    if not isinstance(metadata, dict):
        return _FRESHNESS_NONE
    verdict = metadata.get(VERDICT) or metadata.get(FINGERPRINT_VERDICT)
    if not verdict:
        if metadata.get(FINGERPRINT) is not None:
            return _FRESHNESS_NO_VERDICT
        return _FRESHNESS_NONE
    word = str(verdict).upper()
    if word == "PASS":
        return _result(FIXTURE_FRESHNESS, 1.0, "Fixture fingerprint matches current agent spec (PASS).")
    if word == "DRIFTED":
        return _result(FIXTURE_FRESHNESS, 0.0,
                       "DRIFTED: Fixture fingerprint has drifted from current agent spec (genuine drift regression).")
    if word == "UNVERIFIED":
        return _result(FIXTURE_FRESHNESS, 0.0,
                       "UNVERIFIED: check-drift could not verify the fixture against the agent spec "
                       "(test setup or config issue).")
    return _result(FIXTURE_FRESHNESS, 0.0,
                   f"UNVERIFIED: unknown drift verdict {str(verdict)[:60]!r} (expected PASS, DRIFTED or UNVERIFIED).")


#: id -> metric, in report order
METRICS: dict[str, Metric] = {
    TOOL_SELECTION: tool_selection,
    ARGUMENT_CORRECTNESS: argument_correctness,
    STEP_EFFICIENCY: step_efficiency,
    GOAL_COMPLETION: goal_completion,
    DENIAL_RECOVERY: denial_recovery,
    DIVERGENCE: divergence,
    FIXTURE_FRESHNESS: fixture_freshness,
}


def score_all(trace: Trace, case: TestCase, metrics: list[str] | None = None) -> list[MetricResult]:
    """Every metric (or the named ones, in that order) on one trace. The test case's expected
    calls are checked once for the three metrics that read them."""
    expected = _Expected(case)
    if not metrics:
        return [
            _tool_selection(trace, case, expected),
            _argument_correctness(trace, case, expected),
            _step_efficiency(trace, case, expected),
            goal_completion(trace, case),
            denial_recovery(trace, case),
            divergence(trace, case),
            fixture_freshness(trace, case),
        ]
    unknown = [name for name in metrics if name not in METRICS]
    if unknown:
        raise ValueError(f"unknown trajectory metric {unknown[0]!r}; choose from {', '.join(METRICS)}")
    return [_WITH_EXPECTED[name](trace, case, expected) if name in _WITH_EXPECTED else METRICS[name](trace, case)
            for name in metrics]


_WITH_EXPECTED = {
    TOOL_SELECTION: _tool_selection,
    ARGUMENT_CORRECTNESS: _argument_correctness,
    STEP_EFFICIENCY: _step_efficiency,
}
