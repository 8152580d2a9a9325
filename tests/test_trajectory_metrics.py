"""The seven trajectory metrics against the reference tool (openeval-core 0.2.1).

Where our rule is the reference's, the case and the reference's value come from the research
notes' probe output (§2.8 of openeval.md, copied here as constants); where it differs, each test
shows the case where the reference's answer is wrong, with the reference's value as ``REF`` next
to ours. Nothing here runs the reference tool.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from pytest_agentbench.trajectory.metrics import (
    METRICS,
    NAMES,
    argument_correctness,
    denial_recovery,
    divergence,
    fixture_freshness,
    goal_completion,
    json_equal,
    score_all,
    step_efficiency,
    tool_selection,
)
from pytest_agentbench.trajectory.model import (
    MetricResult,
    TestCase,
    Trace,
    TraceFormatError,
    TraceStep,
    case_problems,
)

# -- builders ---------------------------------------------------------------------------------


def call(name: str | None, args: object = None, denied: bool = False, divergent: bool = False,
         latency_ms: float | None = None) -> TraceStep:
    return TraceStep(step_id=0, type="tool_call", tool_name=name, tool_args=args, denied=denied,
                     divergent=divergent, latency_ms=latency_ms)


def step(kind: str, divergent: bool = False, denied: bool = False) -> TraceStep:
    return TraceStep(step_id=0, type=kind, divergent=divergent, denied=denied)


def trace(*steps: TraceStep, final_output: str = "", state: dict | None = None, metadata: dict | None = None) -> Trace:
    for number, s in enumerate(steps, start=1):
        s.step_id = number
    return Trace(task_id="t", steps=list(steps), final_output=final_output, actual_state=state or {},
                 metadata=metadata or {})


def case(*calls: object, state: dict | None = None, contains: list | None = None, max_steps: object = None,
         timeout: object = None) -> TestCase:
    expected = [{"tool": c} if isinstance(c, str) else c for c in calls]
    return TestCase(task_id="t", expected_tool_calls=expected, expected_final_state=state or {},
                    expected_output_contains=contains or [], max_steps=max_steps, timeout_seconds=timeout)


def check(result: MetricResult, score: float, passed: bool | None, details: str | None = None) -> None:
    assert (result.score, result.passed) == (pytest.approx(score), passed), result
    if details is not None:
        assert details in result.details, result.details


def not_evaluated(result: MetricResult, why: str) -> None:
    assert result.passed is None and result.score == 0.0, result
    assert result.details.startswith("NOT EVALUATED: ") and why in result.details, result.details


# -- the registry and score_all ----------------------------------------------------------------


def test_ids_names_and_order_are_the_references() -> None:
    assert list(METRICS) == ["tool_selection", "argument_correctness", "step_efficiency", "goal_completion",
                             "denial_recovery", "divergence", "fixture_freshness"]
    assert list(NAMES.values()) == ["Tool Selection Accuracy", "Argument Correctness", "Step Efficiency",
                                    "Goal Completion Rate", "Denial Recovery Rate", "Divergence Score",
                                    "Fixture Freshness"]
    results = score_all(trace(call("a")), case("a"))
    assert [(r.metric, r.name) for r in results] == list(NAMES.items())


def test_score_all_takes_named_metrics_in_the_given_order_and_refuses_unknown_ones() -> None:
    t, c = trace(call("a", {"x": 1})), case({"tool": "a", "args": {"x": 2}})
    assert [r.metric for r in score_all(t, c, ["divergence", "argument_correctness"])] == [
        "divergence", "argument_correctness"]
    assert [r.metric for r in score_all(t, c, [])] == list(METRICS)
    with pytest.raises(ValueError, match="unknown trajectory metric 'speed'; choose from tool_selection"):
        score_all(t, c, ["speed"])


def _synthetic() -> list[tuple[Trace, TestCase]]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("trajectory_metrics_bench",
                                                  Path(__file__).parents[1] / "benchmarks" / "trajectory_metrics.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [module.synthetic_case(i) for i in range(300)]


def test_score_all_equals_each_metric_alone_on_the_benchmark_workload() -> None:
    pairs = _synthetic()
    seen = set()
    for t, c in pairs:
        together = score_all(t, c)
        alone = [fn(t, c) for fn in METRICS.values()]
        assert together == alone
        seen.update((r.metric, r.passed) for r in together)
    # the workload exercises both outcomes of most metrics (3 calls for 3 expected: Step Efficiency always passes)
    for metric in ("tool_selection", "argument_correctness", "goal_completion", "fixture_freshness"):
        assert {(metric, True), (metric, False)} <= seen, metric
    assert {("fixture_freshness", None), ("denial_recovery", None), ("denial_recovery", True)} <= seen


# -- never raises -----------------------------------------------------------------------------

ODD_VALUES = [None, 0, 1, 1.5, True, False, "", "x", [], [1, "a"], {}, {"x": 1}, {"x": None}, {"x": [1, {"y": 2}]},
              {"tool": "a"}, {"tool": "a", "args": None}, {"tool": "a", "args": [1]}, {"tool": None}, {"tool": 3},
              {"args": {"x": 1}}, ("a",), {1: 2}, float("nan"), -1, 10**6]


def _odd_trace(rng: random.Random) -> Trace:
    steps = []
    for number in range(rng.randrange(7)):
        steps.append(TraceStep(
            step_id=number,
            type=rng.choice(["tool_call", "tool_call", "thought", "tool_result", "output", "", "weird"]),
            tool_name=rng.choice(["a", "b", None, "", ["a"], 3]), tool_args=rng.choice(ODD_VALUES),
            denied=rng.choice([False, False, True, 1, None]), divergent=rng.choice([False, False, True, "yes"]),
            latency_ms=rng.choice([None, 5.0, -1, "7", True])))
    return Trace(task_id="odd", steps=steps, final_output=rng.choice(["", "done", None, 3, ["x"]]),
                 actual_state=rng.choice(ODD_VALUES), metadata=rng.choice([
                     *ODD_VALUES, {"fingerprint": None}, {"verdict": True}, {"verdict": ["PASS"]},
                     {"fingerprint": "f", "verdict": ""}, {"divergence_checked": True}, {"duration_seconds": "3"},
                     {"duration_seconds": 2.5}, {"duration_seconds": -3}, {"duration_seconds": float("inf")}]))


def _odd_case(rng: random.Random) -> TestCase:
    calls = rng.choice([[], [rng.choice(ODD_VALUES) for _ in range(rng.randrange(4))],
                        [{"tool": rng.choice("ab"), "args": rng.choice(ODD_VALUES)} for _ in range(rng.randrange(4))],
                        rng.choice(ODD_VALUES)])
    return TestCase(task_id="odd", expected_tool_calls=calls, expected_final_state=rng.choice(ODD_VALUES),
                    expected_output_contains=rng.choice([[], ["do"], ["x", 3], "done", None]),
                    max_steps=rng.choice([None, 0, 2, -1, 2.5, True, "3"]),
                    timeout_seconds=rng.choice([None, 1, 0.001, 0, -2, "1", float("nan")]))


def test_no_metric_raises_on_odd_input_and_every_result_is_well_formed() -> None:
    rng = random.Random(7)
    outcomes = set()
    for _ in range(3000):
        t, c = _odd_trace(rng), _odd_case(rng)
        for result in score_all(t, c):
            assert isinstance(result, MetricResult)
            assert 0.0 <= result.score <= 1.0 and isinstance(result.details, str) and result.details
            if result.passed is None:
                assert result.score == 0.0 and result.details.startswith("NOT EVALUATED: ")
            else:
                assert result.passed is (result.score == 1.0)
            outcomes.add(result.passed)
        assert score_all(t, c) == [fn(t, c) for fn in METRICS.values()]
    assert outcomes == {True, False, None}


def test_a_broken_test_case_is_not_evaluated_with_the_problem_named() -> None:
    # REF: run_eval turns the KeyError into 0.0 / False "Metric raised an error: 'tool'" for both
    REF_DETAILS = "Metric raised an error: 'tool'"
    t = trace(call("a", {"x": 1}))
    broken = case({"args": {"x": 1}})
    for metric in (tool_selection, argument_correctness, step_efficiency):
        result = metric(t, broken)
        not_evaluated(result, "test case: expected_tool_calls[0] has no 'tool' name")
        assert result.details != REF_DETAILS
    assert case_problems(broken) == ["expected_tool_calls[0] has no 'tool' name (a non-empty string)"]
    not_evaluated(argument_correctness(t, case({"tool": "a", "args": [1]})),
                  "expected_tool_calls[0].args must be an object or null, got a list")
    not_evaluated(step_efficiency(t, case("a", max_steps=-1)), "max_steps must be a whole number >= 0")
    not_evaluated(goal_completion(t, case(contains=["x", 3])), "expected_output_contains must be a list of strings")


def test_json_equal_compares_as_json() -> None:
    assert json_equal(1, 1.0) and json_equal({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]})
    assert json_equal([1, 2], (1, 2))
    assert not json_equal(True, 1) and not json_equal(1, True) and not json_equal(False, 0)
    assert not json_equal("1", 1) and not json_equal(None, 0) and not json_equal({"a": 1}, {"a": 1, "b": 2})
    assert not json_equal({"a": True}, {"a": 1}) and not json_equal([True], [1])



def nested(depth: int, leaf: object = 1) -> object:
    value = leaf
    for level in range(depth):
        value = {"k": value} if level % 2 else [value]
    return value


def test_json_equal_and_the_metrics_take_any_depth() -> None:
    # A recursive comparison raised RecursionError from about 335 levels; REF (Python's ==) scores
    # 1.0 there. A value read from a trace file is as deep as the JSON reader allows (~1,000).
    for depth in (340, 990, 20_000):
        assert json_equal(nested(depth), nested(depth))
        assert not json_equal(nested(depth), nested(depth, leaf=2))
        assert not json_equal(nested(depth), nested(depth, leaf=True))
    deep = json.loads(json.dumps({"x": nested(900)}))
    t = trace(call("a", deep, denied=True), call("a", deep, denied=True), call("a", deep), state={"s": deep})
    results = {r.metric: r for r in score_all(t, case({"tool": "a", "args": deep}, state={"s": deep}))}
    assert results["argument_correctness"].score == 1.0  # REF 1.0
    assert results["goal_completion"].score == 1.0  # REF 1.0
    check(results["denial_recovery"], 0.5, False)  # the first denial was repeated; REF 0.5
    cyclic: list[object] = [1]
    cyclic.append(cyclic)
    same: list[object] = [1]
    same.append(same)
    assert json_equal(cyclic, same) and not json_equal(cyclic, [1, [2]])

# -- 1. Tool Selection Accuracy -----------------------------------------------------------------


@pytest.mark.parametrize(("steps", "expected", "score", "details"), [
    # the reference's own values (probe output), which we share
    ([call("b"), call("a")], ["a", "b"], 1.0, "Correctly called 2 of 2 expected tools."),
    ([call("a"), call("a"), call("a"), call("x")], ["a"], 1.0, "Correctly called 1 of 1 expected tools."),
    ([call("a")], ["a", "a"], 0.5, "Correctly called 1 of 2 expected tools."),
    ([call("a")], ["a", "b", "c"], 1 / 3, "Correctly called 1 of 3 expected tools. Not called: b, c."),
    ([TraceStep(0, "tool_result", tool_name="a")], ["a"], 0.0, "Correctly called 0 of 1"),
    ([call("a", denied=True)], ["a"], 0.0, "Correctly called 0 of 1"),
    ([call("a", {"wrong": 1})], [{"tool": "a", "args": {"x": 1}}], 1.0, "Correctly called 1 of 1"),
])
def test_tool_selection_agrees_with_the_reference(steps, expected, score, details) -> None:
    check(tool_selection(trace(*steps), case(*expected)), score, score == 1.0, details)


def test_tool_selection_with_no_expected_calls_is_not_evaluated() -> None:
    # REF: "no expected, no calls" -> 1.0 / True, "no expected, 2 calls" -> 0.0 / False. An empty
    # list cannot tell "no tools allowed" from "tools not specified" (a test case that checks only
    # the end state); the reference passes or fails a metric that had nothing to judge.
    REF = {"no calls": (1.0, True), "two calls": (0.0, False)}
    for label, t in (("no calls", trace()), ("two calls", trace(call("a"), call("b")))):
        result = tool_selection(t, case(state={"done": True}))
        assert (result.score, result.passed) != REF[label]
        not_evaluated(result, "expects no tool calls")
    # "no tools allowed" is said with max_steps: 0, and Step Efficiency judges it
    check(step_efficiency(trace(call("a"), call("b")), case(max_steps=0)), 0.0, False, "exceed max_steps 0")
    check(step_efficiency(trace(), case(max_steps=0)), 1.0, True, "Within max_steps 0.")


# -- 2. Argument Correctness ---------------------------------------------------------------------


@pytest.mark.parametrize(("steps", "expected", "score", "details"), [
    ([call("a", {"x": 1, "y": 2})], [{"tool": "a", "args": {"x": 1}}], 1.0,
     "Correctly matched 1 of 1 expected arguments."),
    ([call("a", {"x": 1})], [{"tool": "a", "args": {"x": 1, "y": 2}}], 0.5,
     "Correctly matched 1 of 2 expected arguments."),
    ([call("a", {"x": 1.0})], [{"tool": "a", "args": {"x": 1}}], 1.0, "1 of 1"),
    ([call("a", {"x": 1})], [{"tool": "a", "args": {"x": "1"}}], 0.0, "0 of 1"),
    ([call("a", {"x": {"k": [1, 2]}})], [{"tool": "a", "args": {"x": {"k": [1, 2]}}}], 1.0, "1 of 1"),
    ([call("a", {"x": 1})], [{"tool": "a", "args": {"x": 1}}, {"tool": "b", "args": {"y": 2}}], 1.0,
     "Correctly matched 1 of 1 expected arguments (1 of 2 expected calls made)."),
    ([call("a", {"x": 1})], [{"tool": "a"}], 1.0, "Called tools had no expected arguments to evaluate."),
    ([call("a", {"x": 1})], [{"tool": "a", "args": {}}], 1.0, "Called tools had no expected arguments to evaluate."),
    ([call("a", None)], [{"tool": "a", "args": {"x": 1}}], 0.0, "Wrong or missing: a.x."),
    ([call("b")], [{"tool": "a", "args": {"x": 1}}, {"tool": "b"}], 1.0, "Called tools had no expected arguments"),
])
def test_argument_correctness_agrees_with_the_reference(steps, expected, score, details) -> None:
    check(argument_correctness(trace(*steps), case(*expected)), score, score == 1.0, details)


def test_argument_correctness_judges_the_best_call_not_the_last() -> None:
    # REF: the last call of a name wins: a{x:9} then a{x:1} -> 1.0 / True, a{x:1} then a{x:9} ->
    # 0.0 / False (its own code comment says "first instance"). Order must not decide whether the
    # agent made the right call; the extra wrong call is Step Efficiency's business.
    REF_RIGHT_THEN_WRONG = (0.0, False)
    expected = case({"tool": "a", "args": {"x": 1}})
    right_then_wrong = trace(call("a", {"x": 1}), call("a", {"x": 9}))
    result = argument_correctness(right_then_wrong, expected)
    assert (result.score, result.passed) != REF_RIGHT_THEN_WRONG
    check(result, 1.0, True, "Correctly matched 1 of 1")
    check(argument_correctness(trace(call("a", {"x": 9}), call("a", {"x": 1})), expected), 1.0, True)  # REF agrees
    check(step_efficiency(right_then_wrong, expected), 0.5, False, "Took 2 tool calls vs optimal 1.")


def test_argument_correctness_supports_a_tool_expected_twice() -> None:
    # REF: raises ValueError("ArgumentCorrectness (v0.1) does not support duplicate tool names in
    # expected_tool_calls"), which run_eval turns into 0.0 / False for any such test case.
    REF = (0.0, False)
    expected = case({"tool": "a", "args": {"x": 1}}, {"tool": "a", "args": {"x": 2, "y": 3}})
    both = argument_correctness(trace(call("a", {"x": 2, "y": 3}), call("a", {"x": 1})), expected)
    assert (both.score, both.passed) != REF
    check(both, 1.0, True, "Correctly matched 3 of 3 expected arguments.")
    # each expected call is paired with a distinct actual call, the pairing that matches most
    check(argument_correctness(trace(call("a", {"x": 1}), call("a", {"x": 2, "y": 0})), expected), 2 / 3, False,
          "Wrong or missing: a.y.")
    check(argument_correctness(trace(call("a", {"x": 2, "y": 3})), expected), 1.0, True,
          "Correctly matched 2 of 2 expected arguments (1 of 2 expected calls made).")
    # a greedy pairing in expectation order would give 2/3 here
    greedy_trap = case({"tool": "a", "args": {"x": 1}}, {"tool": "a", "args": {"x": 1, "y": 2}})
    check(argument_correctness(trace(call("a", {"x": 1, "y": 2}), call("a", {"x": 1})), greedy_trap), 1.0, True)


def test_argument_correctness_pairs_many_calls() -> None:
    expected = case(*[{"tool": "a", "args": {"i": i}} for i in range(14)])
    calls = [call("a", {"i": i}) for i in reversed(range(14))]
    check(argument_correctness(trace(*calls), expected), 1.0, True, "14 of 14")  # greedy beyond 10
    check(argument_correctness(trace(*calls[:10]), expected), 1.0, True, "10 of 14 expected calls made")


def test_argument_correctness_a_missing_key_does_not_match_an_expected_null() -> None:
    # REF: 1.0 / True (actual.get(k) == None). An argument the agent never sent is not null.
    REF = (1.0, True)
    result = argument_correctness(trace(call("a", {})), case({"tool": "a", "args": {"x": None}}))
    assert (result.score, result.passed) != REF
    check(result, 0.0, False, "Wrong or missing: a.x.")
    check(argument_correctness(trace(call("a", {"x": None})), case({"tool": "a", "args": {"x": None}})), 1.0, True)


def test_argument_correctness_true_is_not_one() -> None:
    # REF: 1.0 / True (Python's True == 1). JSON true and 1 are different arguments.
    REF = (1.0, True)
    result = argument_correctness(trace(call("a", {"x": True})), case({"tool": "a", "args": {"x": 1}}))
    assert (result.score, result.passed) != REF
    check(result, 0.0, False)


def test_argument_correctness_with_no_expected_call_made_is_not_evaluated() -> None:
    # REF: 0.0 / False "0 of 1 expected tool calls occurred; argument correctness cannot be
    # assessed — treated as failed." If it cannot be assessed it is not evaluated; Tool Selection
    # already fails the missing call.
    REF = (0.0, False)
    for steps in ([], [call("b", {"x": 1})], [call("a", {"x": 1}, denied=True)]):
        t = trace(*steps)
        result = argument_correctness(t, case({"tool": "a", "args": {"x": 1}}))
        assert (result.score, result.passed) != REF
        not_evaluated(result, "none of the 1 expected tool calls was made")
        check(tool_selection(t, case({"tool": "a", "args": {"x": 1}})), 0.0, False)
    not_evaluated(argument_correctness(trace(call("a")), case()), "expects no tool calls")  # REF: 1.0 / True


def test_argument_correctness_non_object_arguments_are_unmatched_not_an_error() -> None:
    # REF: AttributeError "'list' object has no attribute 'get'" -> 0.0 / False "Metric raised an error: ..."
    REF_DETAILS = "Metric raised an error: 'list' object has no attribute 'get'"
    result = argument_correctness(trace(call("a", ["x"])), case({"tool": "a", "args": {"x": 1}}))
    check(result, 0.0, False, "Arguments not an object: a (list).")
    assert REF_DETAILS not in result.details


def test_argument_correctness_null_args_in_a_test_case_means_no_arguments() -> None:
    # REF: "args": null on a called tool -> TypeError -> 0.0 / False "Metric raised an error: ..."
    REF = (0.0, False)
    result = argument_correctness(trace(call("a", {"x": 1})), case({"tool": "a", "args": None}))
    assert (result.score, result.passed) != REF
    check(result, 1.0, True, "Called tools had no expected arguments to evaluate.")


# -- 3. Step Efficiency --------------------------------------------------------------------------


@pytest.mark.parametrize(("steps", "expected", "score"), [
    ([], ["a", "b"], 0.0),
    ([call("a") for _ in range(4)], ["a", "b"], 0.5),
    ([call("a"), call("a", denied=True)], ["a"], 0.5),  # denied calls count
    ([call(None)], ["a"], 1.0),  # nameless calls count
    ([call("a"), step("tool_result"), step("thought")], ["a"], 1.0),  # results and thoughts do not
    ([call("a") for _ in range(7)], ["a", "b", "c"], 3 / 7),
])
def test_step_efficiency_agrees_with_the_reference(steps, expected, score) -> None:
    check(step_efficiency(trace(*steps), case(*expected)), score, score == 1.0)


def test_step_efficiency_under_calling_is_not_efficient() -> None:
    # REF: 3 expected, 1 call -> min(1, 3/1) = 1.0 / True. Doing a third of the work is not efficient.
    REF = (1.0, True)
    result = step_efficiency(trace(call("a")), case("a", "b", "c"))
    assert (result.score, result.passed) != REF
    check(result, 1 / 3, False, "Took 1 tool call vs optimal 3.")


def test_step_efficiency_enforces_max_steps() -> None:
    # REF: max_steps is never read: 3 expected, 3 calls, max_steps 2 -> 1.0 / True.
    REF = (1.0, True)
    result = step_efficiency(trace(call("a"), call("b"), call("c")), case("a", "b", "c", max_steps=2))
    assert (result.score, result.passed) != REF
    check(result, 2 / 3, False, "3 tool calls exceed max_steps 2.")
    check(step_efficiency(trace(call("a"), call("b")), case("a", "b", max_steps=2)), 1.0, True, "Within max_steps 2.")
    check(step_efficiency(trace(call("a"), call("b")), case(max_steps=5)), 1.0, True)  # a budget alone is evaluated


def test_step_efficiency_enforces_timeout_seconds() -> None:
    # REF: timeout_seconds is never read: 1 expected, 1 call of 5 s, timeout 2 s -> 1.0 / True.
    REF = (1.0, True)
    slow = trace(call("a", latency_ms=5000))
    result = step_efficiency(slow, case("a", timeout=2))
    assert (result.score, result.passed) != REF
    check(result, 0.4, False, "Took 5 s, over timeout_seconds 2.")
    check(step_efficiency(slow, case("a", timeout=10)), 1.0, True, "within timeout_seconds 10")
    # the run's wall time, when the adapter knows it, beats the sum of the steps
    timed = trace(call("a", latency_ms=5000), metadata={"duration_seconds": 1.0})
    check(step_efficiency(timed, case("a", timeout=2)), 1.0, True)
    # without timing the budget is not checked, and says so
    check(step_efficiency(trace(call("a")), case("a", timeout=2)), 1.0, True, "timeout_seconds not checked")
    not_evaluated(step_efficiency(trace(call("a")), case(timeout=2)), "the trace has no timing")


def test_step_efficiency_refuses_a_wall_time_the_recorder_got_wrong() -> None:
    # A negative duration_seconds was ignored: the steps' latencies stood in for it (passing here),
    # or the budget was "not checked" as if the trace had no timing. REF reads neither (timeout
    # is never read). Now the budget cannot be judged, and the result names the field.
    quick = trace(call("a", latency_ms=500), metadata={"duration_seconds": -30.0})
    for bad in (-30.0, float("nan"), float("inf"), "3", True):
        quick.metadata["duration_seconds"] = bad
        not_evaluated(step_efficiency(quick, case("a", timeout=2)),
                      f"timeout_seconds is set but metadata['duration_seconds'] must be a number of seconds >= 0, "
                      f"got {bad!r}")
    check(step_efficiency(quick, case("a")), 1.0, True)  # without a timeout the duration is not read
    quick.metadata["duration_seconds"] = None  # null: unknown, the steps' latencies count
    check(step_efficiency(quick, case("a", timeout=2)), 1.0, True, "Took 0.5 s, within timeout_seconds 2.")


def test_step_efficiency_without_expectations_or_budgets_is_not_evaluated() -> None:
    # REF: 0 expected, 0 calls -> 1.0 / True; 0 expected, 3 calls -> 0.0 / False.
    REF = {0: (1.0, True), 3: (0.0, False)}
    for n in (0, 3):
        result = step_efficiency(trace(*[call("a") for _ in range(n)]), case(state={"x": 1}))
        assert (result.score, result.passed) != REF[n]
        not_evaluated(result, "no expected tool calls, no max_steps and no timeout_seconds")


# -- 4. Goal Completion Rate ---------------------------------------------------------------------


@pytest.mark.parametrize(("actual", "expected", "score"), [
    ({"a": 1, "b": "x"}, {"a": 1, "b": "x"}, 1.0),
    ({"a": 1, "extra": 2}, {"a": 1}, 1.0),
    ({"a": 1, "b": 0, "c": 0}, {"a": 1, "b": 2, "c": 3}, 1 / 3),
    ({}, {"x": None}, 0.0),  # the key must be there, even for an expected null
    ({"n": {"k": [1, 2]}}, {"n": {"k": [1, 2]}}, 1.0),
])
def test_goal_completion_agrees_with_the_reference(actual, expected, score) -> None:
    check(goal_completion(trace(state=actual), case(state=expected)), score, score == 1.0)


def test_goal_completion_names_what_is_wrong() -> None:
    result = goal_completion(trace(state={"a": 1, "b": 0}), case(state={"a": 1, "b": 2, "c": 3}))
    check(result, 1 / 3, False, "Matched 1 of 3 expected state keys. Wrong or missing: b, c.")


def test_goal_completion_without_expectations_is_not_evaluated() -> None:
    # REF: empty expected_final_state -> 1.0 / True "No expected state to match."
    REF = (1.0, True)
    result = goal_completion(trace(state={"a": 1}), case("a"))
    assert (result.score, result.passed) != REF
    not_evaluated(result, "no expected_final_state and no expected_output_contains")


def test_goal_completion_checks_expected_output_contains() -> None:
    # REF: expected_output_contains is never read: with no expected state -> 1.0 / True.
    REF = (1.0, True)
    t = trace(final_output="Booked UA1, seat 12A.")
    result = goal_completion(t, case(contains=["UA1", "Confirmation"]))
    assert (result.score, result.passed) != REF
    check(result, 0.5, False, "Found 1 of 2 expected output strings. Missing: 'Confirmation'.")
    check(goal_completion(t, case(state={"booked": True}, contains=["UA1"])), 0.5, False,
          "Matched 0 of 1 expected state keys. Wrong or missing: booked. Found 1 of 1 expected output strings.")
    check(goal_completion(t, case(contains=["ua1"])), 0.0, False)  # case-sensitive


def test_goal_completion_true_is_not_one() -> None:
    # REF: expected {x: 1}, actual {x: True} -> 1.0 / True.
    REF = (1.0, True)
    result = goal_completion(trace(state={"x": True}), case(state={"x": 1}))
    assert (result.score, result.passed) != REF
    check(result, 0.0, False)


# -- 5. Denial Recovery Rate ---------------------------------------------------------------------

def denied_a() -> TraceStep:
    return call("a", {"p": 1}, denied=True)


@pytest.mark.parametrize(("steps", "final_output", "score"), [
    ([denied_a, lambda: call("b")], "", 1.0),
    ([denied_a], "", 0.0),
    ([denied_a, lambda: step("thought")], "done", 1.0),
    ([denied_a, lambda: step("thought")], "", 0.0),
    ([denied_a, lambda: step("output")], "", 1.0),
    ([denied_a, denied_a, lambda: call("b")], "", 0.5),  # the first was repeated and denied again
    ([denied_a, lambda: call("a", {"p": 1})], "", 1.0),  # an allowed retry is not a repeat
    ([denied_a, lambda: call("a", {"p": 2}, denied=True), lambda: call("b")], "", 1.0),
    ([denied_a, lambda: call(None)], "", 0.0),  # a nameless call is not going on
    ([denied_a, lambda: step("tool_result")], "", 0.0),
])
def test_denial_recovery_agrees_with_the_reference(steps, final_output, score) -> None:
    check(denial_recovery(trace(*[make() for make in steps], final_output=final_output), case()), score, score == 1.0)


def test_denial_recovery_without_a_denial_is_not_evaluated() -> None:
    # REF: no denials -> 1.0 / True "No permission denials or validation errors encountered."
    # (also when a step of another type is marked denied, which the reference ignores as we do)
    REF = (1.0, True)
    for t in (trace(call("a")), trace(step("tool_result", denied=True))):
        result = denial_recovery(t, case())
        assert (result.score, result.passed) != REF
        not_evaluated(result, "no tool call was denied")


def test_denial_recovery_a_final_answer_after_a_last_step_denial_is_recovery() -> None:
    # REF: "denied a as LAST step, final_output set" -> 0.0 / False: final_output only counts when
    # some step follows the denial, against its own README ("... or producing output").
    REF = (0.0, False)
    result = denial_recovery(trace(denied_a(), final_output="I may not read that file; here is why."), case())
    assert (result.score, result.passed) != REF
    check(result, 1.0, True, "Recovered from 1 of 1 denied tool call.")


# -- 6. Divergence Score -------------------------------------------------------------------------


@pytest.mark.parametrize(("marked", "n", "score", "details"), [
    ([0], 4, 0.0, "Divergence detected at step 1 of 4."),
    ([2], 4, 0.5, "Divergence detected at step 3 of 4."),
    ([3], 4, 0.75, "Divergence detected at step 4 of 4."),
    ([1, 3], 4, 0.25, "Divergence detected at step 2 of 4."),
])
def test_divergence_agrees_with_the_reference(marked, n, score, details) -> None:
    steps = [step("thought", divergent=i in marked) if i % 2 else call("a", divergent=i in marked) for i in range(n)]
    check(divergence(trace(*steps), case()), score, False, details)


def test_divergence_of_an_unchecked_trace_is_not_evaluated() -> None:
    # REF: zero steps -> 1.0 / True; no divergent step -> 1.0 / True "No Verified Replay divergence
    # detected." for any trace, replayed or not (an OpenAI conversation "passes" a replay it never had).
    REF = (1.0, True)
    for t in (trace(), trace(call("a"), step("output"))):
        result = divergence(t, case())
        assert (result.score, result.passed) != REF
        not_evaluated(result, "not checked for divergence")
    checked = {"divergence_checked": True}
    check(divergence(trace(call("a"), step("output"), metadata=checked), case()), 1.0, True,
          "No divergence in 2 steps.")
    not_evaluated(divergence(trace(metadata=checked), case()), "the trace has no steps")


# -- 7. Fixture Freshness ------------------------------------------------------------------------


@pytest.mark.parametrize(("metadata", "score", "passed", "details"), [
    ({"verdict": "PASS"}, 1.0, True, "(PASS)"),
    ({"verdict": "pass"}, 1.0, True, "(PASS)"),
    ({"verdict": "DRIFTED"}, 0.0, False, "DRIFTED: "),
    ({"verdict": "UNVERIFIED"}, 0.0, False, "UNVERIFIED: "),
    ({"verdict": "garbage"}, 0.0, False, "unknown drift verdict 'garbage'"),
    ({"fingerprint_verdict": "PASS"}, 1.0, True, "(PASS)"),
    ({"verdict": "", "fingerprint_verdict": "PASS"}, 1.0, True, "(PASS)"),
    ({"verdict": "DRIFTED", "fingerprint_verdict": "PASS"}, 0.0, False, "DRIFTED"),
    ({"verdict": True}, 0.0, False, "unknown drift verdict 'True'"),
    ({"fingerprint": {"tools": {}}, "verdict": "PASS"}, 1.0, True, "(PASS)"),
])
def test_fixture_freshness_agrees_with_the_reference(metadata, score, passed, details) -> None:
    check(fixture_freshness(trace(metadata=metadata), case()), score, passed, details)


def test_fixture_freshness_without_fingerprint_is_not_evaluated_with_score_zero() -> None:
    # REF: 1.0 / None. Same verdict; our not-evaluated score is 0.0 so that an average that forgets
    # to drop it is not lifted (the reference's `report --fail-under` averages it in as 1.0).
    REF = (1.0, None)
    result = fixture_freshness(trace(), case())
    assert result.passed is REF[1] and result.score != REF[0]
    not_evaluated(result, "no fingerprint metadata present")


@pytest.mark.parametrize("metadata", [{"fingerprint": {"tools": {"a": "sha256:0"}}}, {"fingerprint": None},
                                      {"verdict": None}, {"verdict": ""}])
def test_fixture_freshness_never_checked_is_not_evaluated_not_failed(metadata) -> None:
    # REF: 0.0 / False "UNVERIFIED: Fixture fingerprint status is UNVERIFIED (...)". Fixtura never
    # writes a verdict, so the reference fails every fingerprinted Fixtura trace, and it treats a
    # key that is present but null or empty as a failed check. Nothing was checked in any of these.
    REF = (0.0, False)
    result = fixture_freshness(trace(metadata=metadata), case())
    assert (result.score, result.passed) != REF
    assert result.passed is None
    if metadata.get("fingerprint"):
        assert "run `fixtura check-drift TRACE` and pass its verdict as metadata['verdict']" in result.details


# -- the reference's example suite (research notes §4.1/4.2), the four CLI metrics ------------

EXAMPLE_SUITE = {
    # name: (testcase, trace, the reference's scores for tool sel, arg corr, step eff, goal comp)
    "case1_pass": (
        {"task_id": "case1_pass", "input": "weather in Tokyo?",
         "expected_tool_calls": [{"tool": "search", "args": {"query": "weather Tokyo"}}],
         "expected_final_state": {"answered": True}},
        {"task_id": "case1_pass", "input": "weather in Tokyo?",
         "steps": [{"step_id": 1, "type": "thought", "content": "step 1", "tool_name": None, "tool_args": None,
                    "tool_result": None, "timestamp": 1.0},
                   {"step_id": 2, "type": "tool_call", "content": "step 2", "tool_name": "search",
                    "tool_args": {"query": "weather Tokyo"}, "tool_result": None, "timestamp": 2.0},
                   {"step_id": 3, "type": "tool_result", "content": "step 3", "tool_name": "search", "tool_args": None,
                    "tool_result": "sunny", "timestamp": 3.0}], "final_output": "Sunny.",
         "actual_state": {"answered": True}, "metadata": {}},
        (1.0, 1.0, 1.0, 1.0)),
    "case2_wrong_args": (
        {"task_id": "case2_wrong_args", "input": "book a flight",
         "expected_tool_calls": [{"tool": "search_flights", "args": {"from": "SFO", "to": "JFK"}},
                                 {"tool": "book", "args": {"flight": "UA1", "seat": "12A"}}],
         "expected_final_state": {"booked": True}, "max_steps": 4},
        {"task_id": "case2_wrong_args", "input": "book a flight",
         "steps": [{"step_id": 1, "type": "tool_call", "content": "step 1", "tool_name": "search_flights",
                    "tool_args": {"from": "SFO", "to": "JFK"}, "tool_result": None, "timestamp": 1.0},
                   {"step_id": 2, "type": "tool_call", "content": "step 2", "tool_name": "book",
                    "tool_args": {"flight": "UA1", "seat": "12C"}, "tool_result": None, "timestamp": 2.0}],
         "final_output": "Booked.", "actual_state": {"booked": True}},
        (1.0, 0.75, 1.0, 1.0)),
    "case3_inefficient": (
        {"task_id": "case3_inefficient", "input": "create file",
         "expected_tool_calls": [{"tool": "write_file", "args": {"path": "a.txt"}}],
         "expected_final_state": {"file_exists": True, "size": 5}},
        {"task_id": "case3_inefficient", "input": "create file",
         "steps": [{"step_id": 1, "type": "tool_call", "content": "step 1", "tool_name": "ls", "tool_args": {},
                    "tool_result": None, "timestamp": 1.0},
                   {"step_id": 2, "type": "tool_call", "content": "step 2", "tool_name": "ls", "tool_args": {},
                    "tool_result": None, "timestamp": 2.0},
                   {"step_id": 3, "type": "tool_call", "content": "step 3", "tool_name": "ls", "tool_args": {},
                    "tool_result": None, "timestamp": 3.0},
                   {"step_id": 4, "type": "tool_call", "content": "step 4", "tool_name": "write_file",
                    "tool_args": {"path": "a.txt"}, "tool_result": None, "timestamp": 4.0}], "final_output": "",
         "actual_state": {"file_exists": True, "size": 0}},
        (1.0, 1.0, 0.25, 0.5)),
    "case4_denied": (
        {"task_id": "case4_denied", "input": "read secrets",
         "expected_tool_calls": [{"tool": "read_file", "args": {"path": "./notes.txt"}}], "expected_final_state": {}},
        {"task_id": "case4_denied", "input": "read secrets",
         "steps": [{"step_id": 1, "type": "tool_call", "content": "step 1", "tool_name": "read_file",
                    "tool_args": {"path": "/etc/shadow"}, "tool_result": None, "timestamp": 1.0, "denied": True,
                    "error": "permission denied"},
                   {"step_id": 2, "type": "tool_call", "content": "step 2", "tool_name": "read_file",
                    "tool_args": {"path": "./notes.txt"}, "tool_result": "ok", "timestamp": 2.0}],
         "final_output": "Could not read /etc/shadow; read notes instead.", "actual_state": {},
         "metadata": {"verdict": "PASS"}},
        (1.0, 1.0, 0.5, 1.0)),
}


@pytest.mark.parametrize("name", EXAMPLE_SUITE)
def test_the_references_example_suite_scores_the_same(name) -> None:
    testcase, trace_json, ref_scores = EXAMPLE_SUITE[name]
    t = Trace.from_dict(trace_json)
    c = TestCase.from_dict(testcase)
    results = score_all(t, c, ["tool_selection", "argument_correctness", "step_efficiency", "goal_completion"])
    ours = tuple(r.score for r in results)
    if name == "case4_denied":
        # REF Goal Completion: 1.0 / True "No expected state to match."; ours: not evaluated
        assert results[3].passed is None
        ours = (*ours[:3], 1.0)
    assert ours == pytest.approx(ref_scores)
    assert [r.passed for r in results[:3]] == [s == 1.0 for s in ref_scores[:3]]


def test_the_denied_demo_fails_as_the_references_suite_runner_says() -> None:
    # REF, transcript step 8: `run --suite` (which reads `denied`) -> Tool Selection 0.0 / False;
    # `run --trace/--testcase` drops `denied` and passes it. We read `denied` always.
    t = Trace.from_dict({"task_id": "only_denied", "steps": [
        {"type": "tool_call", "tool_name": "read_file", "tool_args": {"path": "x"}, "denied": True}]})
    c = TestCase.from_dict({"task_id": "only_denied",
                            "expected_tool_calls": [{"tool": "read_file", "args": {"path": "x"}}]})
    check(tool_selection(t, c), 0.0, False)
    check(step_efficiency(t, c), 1.0, True)


# -- model: reading the reference's JSON ----------------------------------------------------------


def test_trace_and_case_round_trip_through_json() -> None:
    t = Trace.from_dict(EXAMPLE_SUITE["case4_denied"][1])
    assert t.steps[0].denied and t.steps[0].error == "permission denied" and t.metadata == {"verdict": "PASS"}
    again = Trace.from_dict(json.loads(json.dumps(t.to_dict())))
    assert again == t
    c = TestCase.from_dict(EXAMPLE_SUITE["case2_wrong_args"][0])
    assert c.max_steps == 4 and c.timeout_seconds is None
    assert TestCase.from_dict(json.loads(json.dumps(c.to_dict()))) == c
    # step_id, content and timestamp may be left out
    short = Trace.from_dict({"task_id": "s", "steps": [{"type": "tool_call", "tool_name": "a"}, {"type": "output"}]})
    assert [(s.step_id, s.content, s.timestamp) for s in short.steps] == [(1, "", 0.0), (2, "", 0.0)]


@pytest.mark.parametrize(("data", "message"), [
    ([], "trace: expected a JSON object, got a list"),
    ({"input": "x"}, "trace: 'task_id' must be a non-empty string, got null"),
    ({"task_id": "t", "steps": {}}, "trace: 'steps' must be a list, got an object"),
    # REF refuses it too ("Failed to parse task files: 'NoneType' object is not iterable"); it was
    # read as a trace with no steps, scored as a run that did nothing
    ({"task_id": "t", "steps": None}, "trace: 'steps' must be a list, got null"),
    ({"task_id": "t", "metadata": {"duration_seconds": -1}},
     "trace: metadata['duration_seconds'] must be a number of seconds >= 0, got -1"),
    ({"task_id": "t", "steps": [{"tool_name": "a"}]}, "trace: steps[0].type must be one of thought, tool_call"),
    ({"task_id": "t", "steps": [{"type": "tool_call", "tool_name": ["a"]}]},
     "steps[0].tool_name must be a string or null"),
    ({"task_id": "t", "steps": [{"type": "tool_call", "denied": "yes"}]}, "steps[0].denied must be true or false"),
    ({"task_id": "t", "actual_state": []}, "'actual_state' must be an object, got a list"),
])
def test_trace_from_dict_names_the_bad_field(data, message) -> None:
    with pytest.raises(TraceFormatError, match=message.replace("(", r"\(").replace("[", r"\[")):
        Trace.from_dict(data)


@pytest.mark.parametrize(("data", "message"), [
    ({"task_id": "c", "expected_tool_calls": [{"args": {}}]}, "test case: expected_tool_calls[0] has no 'tool' name"),
    ({"task_id": "c", "expected_tool_calls": {"tool": "a"}},
     "test case: expected_tool_calls must be a list, got an object"),
    ({"task_id": "c", "expected_final_state": [1]}, "test case: expected_final_state must be an object"),
    ({"task_id": "c", "max_steps": 2.5}, "test case: max_steps must be a whole number >= 0 or null, got 2.5"),
    ({"task_id": "c", "timeout_seconds": 0}, "test case: timeout_seconds must be a number > 0 or null, got 0"),
])
def test_case_from_dict_refuses_a_broken_case(data, message) -> None:
    with pytest.raises(TraceFormatError, match=message.replace("(", r"\(").replace("[", r"\[")):
        TestCase.from_dict(data)


def test_trace_from_dict_keeps_odd_tool_args_as_evidence() -> None:
    t = Trace.from_dict({"task_id": "w", "steps": [{"type": "tool_call", "tool_name": "a", "tool_args": ["x"]}]})
    assert t.steps[0].tool_args == ["x"]
    check(argument_correctness(t, case({"tool": "a", "args": {"x": 1}})), 0.0, False, "Arguments not an object")
