"""Trajectory test cases (``*.case.json`` next to a trace) collected and run as pytest items.

Every run here is a real pytest session (pytester). The reference tool's five-case example suite
(tests/data/trajectory_cases, see its SOURCE.md) runs with the real metrics and is compared with
the reference CLI's results; the outcome rules (not evaluated, min_score, the gate) are pinned
with two toy metrics whose results a trace's metadata dictates, so each combination is exact.
"""

from __future__ import annotations

import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_agentbench.trajectory import cases
from pytest_agentbench.trajectory.cases import (
    CaseError,
    CaseSyntaxError,
    find_trace,
    load_trace,
    parse_case,
    read_case_file,
    trace_from_json,
)

DATA = Path(__file__).parent / "data" / "trajectory_cases"



#: Two toy metrics: a trace's ``metadata["toy_a"] = [score, passed]`` is what toy_a returns;
#: ``toy_boom`` raises. Registered for the run only (in-process runs share the registry).
TOY_METRICS = '''
from pytest_agentbench.trajectory import metrics as _metrics
from pytest_agentbench.trajectory.model import MetricResult

def _toy(metric_id):
    def metric(trace, case):
        score, passed = trace.metadata.get(metric_id, [0.0, None])
        return MetricResult(metric_id, metric_id.replace("_", " ").title(), score, passed, f"{metric_id} says {passed}")
    return metric

def _boom(trace, case):
    raise ZeroDivisionError("toy metric broke")

_TOYS = {"toy_a": _toy("toy_a"), "toy_b": _toy("toy_b"), "toy_boom": _boom}

def pytest_configure(config):
    _metrics.METRICS.update(_TOYS)

def pytest_unconfigure(config):
    for name in _TOYS:
        _metrics.METRICS.pop(name, None)
'''

#: The reference CLI's scores for the example suite (research notes §4.2), the four metrics it runs.
REFERENCE_SCORES = {
    "case1_pass": {"tool_selection": 1.0, "argument_correctness": 1.0, "step_efficiency": 1.0, "goal_completion": 1.0},
    "case2_wrong_args": {"tool_selection": 1.0, "argument_correctness": 0.75, "step_efficiency": 1.0,
                         "goal_completion": 1.0},
    "case3_inefficient": {"tool_selection": 1.0, "argument_correctness": 1.0, "step_efficiency": 0.25,
                          "goal_completion": 0.5},
    "case4_denied": {"tool_selection": 1.0, "argument_correctness": 1.0, "step_efficiency": 0.5,
                     "goal_completion": 1.0},
}
#: Where the semantics differ on purpose (the metrics' documented differences): the reference scores
#: an empty expected_final_state 1.0 ("No expected state to match."); here there is nothing to judge.
DIFFERENT = {("case4_denied", "goal_completion"): None}
REFERENCE_STATUS = {"case1_pass": "passed", "case2_wrong_args": "failed", "case3_inefficient": "failed",
                    "case4_denied": "failed", "case5_missing_trace": "error"}


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    return pytester


@pytest.fixture
def toys(project: pytest.Pytester) -> pytest.Pytester:
    """A project whose runs also have the toy metrics (cases name them in "metrics")."""
    project.makeconftest(TOY_METRICS)
    return project


@pytest.fixture
def suite(project: pytest.Pytester) -> Path:
    """The reference's example suite, in this plugin's format, under ``cases/``."""
    folder = project.path / "cases"
    folder.mkdir()
    for path in DATA.glob("*.json"):
        shutil.copy(path, folder / path.name)
    return folder


def toy_pair(folder: Path, name: str, toys: dict[str, list], **case: object) -> Path:
    """A case scored by the toy metrics, with a trace whose metadata dictates their results."""
    folder.mkdir(exist_ok=True)
    body = {"task_id": name, "metrics": list(toys), **case}
    (folder / f"{name}.case.json").write_text(json.dumps(body))
    (folder / f"{name}.trace.json").write_text(json.dumps({"task_id": name, "steps": [], "metadata": toys}))
    return folder / f"{name}.case.json"


def junit_cases(path: Path) -> dict[str, dict[str, str]]:
    root = ET.parse(path).getroot()
    out = {}
    for case in root.iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        props["_outcome"] = ("error" if case.find("error") is not None else "failed" if case.find("failure") is not None
                             else "skipped" if case.find("skipped") is not None else "passed")
        out[case.get("name")] = props
    return out


# -- the reference's example suite, with the real metrics ---------------------------------------------
def test_the_example_suite_matches_the_reference_outcomes(suite, run):
    result = run("cases")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=3, errors=1)
    result.stdout.fnmatch_lines_random([
        "case2_wrong_args: 1 of 4 evaluated metric(s) failed (mean score 0.938); 3 not evaluated",
        "Argument Correctness     0.750  FAILED         Correctly matched 3 of 4 expected arguments.*book.seat*",
        "Denial Recovery Rate         -  not evaluated  NOT EVALUATED: no tool call was denied",
        "case3_inefficient: 2 of 4 evaluated metric(s) failed*",
        "Step Efficiency          0.250  FAILED*",
        "Goal Completion Rate     0.500  FAILED*",
        "case4_denied: 1 of 5 evaluated metric(s) failed*",
        "Fixture Freshness        1.000  passed         Fixture fingerprint matches current agent spec (PASS).",
        ("cases/case5_missing_trace.case.json: no trace for this case; put one of case5_missing_trace.trace.json, "
         "case5_missing_trace.openai.json, case5_missing_trace.langchain.json, case5_missing_trace.trace next to it, "
         "or name the file with a \"trace\" key"),
    ])
    result.stdout.fnmatch_lines([
        "*= trajectory checks =*",
        "Cases: 5 (1 passed, 3 failed, 0 not evaluated, 1 error)",
        "",
        "metric                   evaluated  passed  failed  not evaluated  mean score",
        "-----------------------  ---------  ------  ------  -------------  ----------",
        "Tool Selection Accuracy          4       4       0              0       1.000",
        "Argument Correctness             4       3       1              0       0.938",
        "Step Efficiency                  4       2       2              0       0.688",
        "Goal Completion Rate             3       2       1              1       0.833",
        "Denial Recovery Rate             1       1       0              3       1.000",
        "Divergence Score                 0       0       0              4           -",
        "Fixture Freshness                1       1       0              3       1.000",
        "all metrics                     17      13       4             11       0.882",
    ])
    assert "During handling" not in result.stdout.str()


def test_per_case_scores_agree_with_the_reference_cli(suite, run, pytester):
    run("cases", "--junitxml", "out.xml")
    cases = junit_cases(pytester.path / "out.xml")
    assert {name: props["_outcome"] for name, props in cases.items()} == REFERENCE_STATUS
    for task_id, scores in REFERENCE_SCORES.items():
        for metric, reference in scores.items():
            props = cases[task_id]
            if (task_id, metric) in DIFFERENT:
                assert props[f"{metric}.result"] == "not evaluated" and f"{metric}.score" not in props
                continue
            assert float(props[f"{metric}.score"]) == reference, (task_id, metric)
            assert props[f"{metric}.result"] == ("passed" if reference == 1.0 else "failed")


def test_junit_properties_per_metric(suite, run, pytester):
    run("cases", "--junitxml", "out.xml")
    cases = junit_cases(pytester.path / "out.xml")
    two = cases["case2_wrong_args"]
    assert two["task_id"] == "case2_wrong_args"
    assert two["case_file"] == "cases/case2_wrong_args.case.json"
    assert two["trace_file"] == "cases/case2_wrong_args.trace.json"
    assert (two["score"], two["result"]) == ("0.938", "failed")
    assert (two["argument_correctness.score"], two["argument_correctness.result"]) == ("0.750", "failed")
    assert two["argument_correctness.details"].startswith("Correctly matched 3 of 4 expected arguments.")
    assert two["fixture_freshness.result"] == "not evaluated" and "fixture_freshness.score" not in two
    assert cases["case5_missing_trace"]["error"].startswith("cases/case5_missing_trace.case.json: no trace")


def test_node_ids_are_the_file_and_the_task_id(suite, run):
    result = run("cases", "--collect-only", "-q")
    ids = [line for line in result.outlines if "::" in line]
    assert ids == [f"cases/{name}.case.json::{name}" for name in REFERENCE_STATUS]


def test_k_selects_by_task_id_and_m_by_marker(suite, run):
    result = run("cases", "-k", "wrong_args")
    result.assert_outcomes(failed=1)
    result = run("cases", "-m", "trajectory", "--strict-markers")
    result.assert_outcomes(passed=1, failed=3, errors=1)
    case = suite / "case1_pass.case.json"
    case.write_text(json.dumps({**json.loads(case.read_text()), "marks": ["smoke"]}))
    result = run("cases", "-m", "smoke")
    result.assert_outcomes(passed=1)


def test_last_failed_reruns_the_failed_and_errored_cases(suite, run):
    run("cases")
    result = run("cases", "--lf")
    result.assert_outcomes(failed=3, errors=1)
    assert "case1_pass" not in "\n".join(line for line in result.outlines if line.startswith(("PASSED", "FAILED")))


def test_xdist_runs_the_same_cases_and_counts_each_once(suite, run_sub):
    result = run_sub("cases", "-n", "2", "--trajectory-min", "0.9")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=3, errors=1)
    result.stdout.fnmatch_lines([
        "Cases: 5 (1 passed, 3 failed, 0 not evaluated, 1 error)",
        "*",
        "all metrics                     17      13       4             11       0.882",
        "*",
        "ERROR: mean trajectory score 0.882 (17 evaluated metric results) is below --trajectory-min 0.900",
    ])


# -- outcomes: not evaluated, min_score, errors -------------------------------------------------------
def test_not_evaluated_metrics_never_count_as_passed_or_failed(toys, run):
    folder = toys.path / "c"
    toy_pair(folder, "all_none", {"toy_a": [1.0, None], "toy_b": [0.0, None]})
    toy_pair(folder, "pass_and_none", {"toy_a": [1.0, True], "toy_b": [0.0, None]})
    toy_pair(folder, "fail_and_none", {"toy_a": [0.25, False], "toy_b": [1.0, None]})
    result = run("c", "-rs")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    result.stdout.fnmatch_lines_random([
        "SKIPPED [1] c/all_none.case.json: not evaluated: Toy A: toy_a says None; Toy B: toy_b says None",
        "fail_and_none: 1 of 1 evaluated metric(s) failed (mean score 0.250); 1 not evaluated",
        "metric  score  result         details",
        "Toy A   0.250  FAILED         toy_a says False",
        "Toy B       -  not evaluated  toy_b says None",
    ])
    result.stdout.fnmatch_lines([
        "Cases: 3 (1 passed, 1 failed, 1 not evaluated, 0 errors)",
        "",
        "metric       evaluated  passed  failed  not evaluated  mean score",
        "-----------  ---------  ------  ------  -------------  ----------",
        "Toy A                2       1       1              1       0.625",
        "Toy B                0       0       0              3           -",
        "all metrics          2       1       1              4       0.625",
    ])


def test_min_score_passes_a_case_on_its_mean(toys, run):
    folder = toys.path / "c"
    toy_pair(folder, "enough", {"toy_a": [0.5, False], "toy_b": [1.0, True]}, min_score=0.75)
    toy_pair(folder, "short", {"toy_a": [0.5, False], "toy_b": [0.9, False]}, min_score=0.75)
    toy_pair(folder, "none_count", {"toy_a": [0.8, False], "toy_b": [0.0, None]}, min_score=0.75)
    result = run("c")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["short: mean score 0.700 of 2 evaluated metric(s) is below min_score 0.750"])


def test_a_metric_that_raises_is_an_error_of_its_case_only(toys, run):
    folder = toys.path / "c"
    toy_pair(folder, "ok", {"toy_a": [1.0, True]})
    toy_pair(folder, "broken", {"toy_a": [1.0, True], "toy_boom": [0, None]})
    result = run("c")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["c/broken.case.json: metric 'toy_boom' raised ZeroDivisionError: toy metric broke"])


BAD_CASES = {
    # name: (case file content or None for the raw text below, trace file content or None, message)
    "a_list": ([1, 2], {}, "c/a_list.case.json: a case file holds one JSON object, got a list"),
    "typo": ({"expected_tool_call": []}, {}, "c/typo.case.json: unknown key 'expected_tool_call'; known keys: *"),
    "arg_typo": ({"expected_tool_calls": [{"tool": "a", "arg": {"x": 1}}]}, {},
                 "c/arg_typo.case.json: expected_tool_calls[0] has unknown key 'arg'; known: tool, args"),
    "no_tool": ({"expected_tool_calls": [{"args": {}}]}, {},
                "c/no_tool.case.json: expected_tool_calls[0] has no 'tool' name (a non-empty string)"),
    "bad_min": ({"min_score": 2}, {}, "c/bad_min.case.json: min_score must be a number between 0 and 1, got 2"),
    "unknown_metric": ({"metrics": ["nope"]}, {}, "c/unknown_metric.case.json: unknown metric 'nope'; known: *"),
    "trace_not_json": ({}, "{oops", "c/trace_not_json.trace.json:1:2: trace file is not valid JSON (*)"),
    "trace_bad_step": ({}, {"task_id": "t", "steps": [{"step_id": 1}]},
                       ("c/trace_bad_step.trace.json: steps[[]0].type must be one of thought, tool_call, "
                        "tool_result, output, got None")),
    "trace_missing": ({"trace": "elsewhere/t.json"}, None,
                      "c/trace_missing.case.json: its \"trace\" file c/elsewhere/t.json does not exist"),
}


def test_bad_case_and_trace_files_are_errors_of_their_own_items(toys, run):
    folder = toys.path / "c"
    toy_pair(folder, "fine", {"toy_a": [1.0, True]})
    for name, (case, trace, _) in BAD_CASES.items():
        body = {"task_id": name, **case} if isinstance(case, dict) else case
        (folder / f"{name}.case.json").write_text(json.dumps(body))
        if trace is not None:
            (folder / f"{name}.trace.json").write_text(trace if isinstance(trace, str) else json.dumps(trace))
    (folder / "two.case.json").write_text(json.dumps({"task_id": "two"}))
    (folder / "two.trace.json").write_text("{}")
    (folder / "two.openai.json").write_text("[]")
    result = run("c")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, errors=len(BAD_CASES) + 1)
    result.stdout.fnmatch_lines_random([message for _, _, message in BAD_CASES.values()] + [
        ("c/two.case.json: more than one trace for this case (two.trace.json, two.openai.json); keep one, or "
         "choose with a \"trace\" key")])
    # a case file that is valid JSON but not an object is named by its file
    assert "c/a_list.case.json::a_list" in result.stdout.str()


def test_a_case_file_that_is_not_json_is_a_collection_error_naming_file_and_line(toys, run):
    folder = toys.path / "c"
    toy_pair(folder, "fine", {"toy_a": [1.0, True]})
    (folder / "broken.case.json").write_text('{"task_id": "x",\n  "input": oops}\n')
    result = run("c")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting c/broken.case.json*",
                                 "c/broken.case.json:2:12: not valid JSON (Expecting value); fix the case file"])


# -- the gate ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("args", "ini", "ret", "line"), [
    (("--trajectory-min", "0.8"), "", 0,
     "Mean trajectory score 0.800 (3 evaluated metric results) meets --trajectory-min 0.800"),
    (("--trajectory-min", "0.81"), "", 1,
     "ERROR: mean trajectory score 0.800 (3 evaluated metric results) is below --trajectory-min 0.810"),
    (("--trajectory-min", "81%"), "", 1, "ERROR: mean trajectory score 0.800 * below --trajectory-min 0.810"),
    ((), "agentbench_trajectory_min = 0.9", 1, "ERROR: mean trajectory score 0.800 * below --trajectory-min 0.900"),
    (("--trajectory-min", "0.5"), "agentbench_trajectory_min = 0.9", 0,
     "Mean trajectory score 0.800 * meets --trajectory-min 0.500"),
])
def test_trajectory_min_gates_on_the_mean_of_evaluated_scores(toys, run, args, ini, ret, line):
    toys.makeini(f"[pytest]\n{ini}\n")
    folder = toys.path / "c"
    toy_pair(folder, "full", {"toy_a": [1.0, True], "toy_b": [1.0, True]})
    toy_pair(folder, "partial", {"toy_a": [0.4, False], "toy_b": [0.0, None]}, min_score=0.4)
    result = run("c", *args)
    result.assert_outcomes(passed=2)
    assert result.ret == ret
    result.stdout.fnmatch_lines([line])


def test_the_gate_fails_when_nothing_was_evaluated(toys, run):
    toy_pair(toys.path / "c", "none", {"toy_a": [1.0, None]})
    result = run("c", "--trajectory-min", "0")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["ERROR: no trajectory metric was evaluated, so --trajectory-min 0.000 cannot be met"])


def test_the_gate_ignores_runs_without_trajectory_items(project, run):
    project.makeini("[pytest]\nagentbench_trajectory_min = 0.9\n")
    project.makepyfile(test_plain="def test_plain(): pass")
    result = run()
    assert result.ret == pytest.ExitCode.OK
    assert "trajectory checks" not in result.stdout.str() and "trajectory score" not in result.stdout.str()


@pytest.mark.parametrize(("args", "ini", "message"), [
    (("--trajectory-min", "1.5"), "", "*--trajectory-min must be between 0 and 1, got '1.5'*"),
    (("--trajectory-min", "high"), "", "*--trajectory-min must be a score between 0 and 1, such as 0.8, got 'high'*"),
    ((), "agentbench_trajectory_min = lots", "*ini agentbench_trajectory_min: --trajectory-min must be a score*"),
    (("--trajectory-failures-shown", "some"), "", "*--trajectory-failures-shown must be a whole number of cases*"),
    ((), "agentbench_trajectory_failures_shown = -1", "*agentbench_trajectory_failures_shown*shown must be*"),
])
def test_a_bad_gate_or_failure_limit_value_is_a_usage_error(project, run, args, ini, message):
    project.makeini(f"[pytest]\n{ini}\n")
    result = run(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


# -- other trace formats, through the adapters --------------------------------------------------------
WEATHER_CASE = {"task_id": "weather", "expected_tool_calls": [{"tool": "get_weather", "args": {"city": "Tokyo"}}],
                "expected_final_state": {"answered": True}, "expected_output_contains": ["20F"],
                "metrics": ["tool_selection", "argument_correctness", "goal_completion"]}
OPENAI = {"messages": [
    {"role": "user", "content": "weather in Tokyo?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Tokyo\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "20F"},
    {"role": "assistant", "content": "It is 20F in Tokyo."},
], "actual_state": {"answered": True}}
LANGCHAIN = {"run_type": "chain", "name": "agent", "inputs": {"input": "Tokyo"}, "outputs": {"output": "20F in Tokyo"},
             "child_runs": [{"run_type": "tool", "name": "get_weather", "inputs": {"city": "Tokyo"},
                             "outputs": {"output": "20F"}, "child_runs": []}]}
FIXTURA_LINES = [
    {"event_type": "trace_header", "schema_version": 2, "fingerprint": {"tools": {"get_weather": "sha256:0"}}},
    {"event_type": "tool_call", "step_id": "step-000001", "timestamp": 1.0, "tool_name": "get_weather",
     "arguments": {"city": "Tokyo"}, "permission_decision": "allowed", "permission_reason": None,
     "rate_limit_decision": "allowed", "rate_limit_reason": None, "response": {"t": "20F"}, "latency_ms": 5},
]


@pytest.mark.parametrize(("name", "content"), [
    ("weather.openai.json", json.dumps(OPENAI)),
    ("weather.langchain.json", json.dumps(LANGCHAIN)),
    ("weather.trace", "\n".join(json.dumps(line) for line in FIXTURA_LINES)),  # uncompressed JSON lines
], ids=["openai", "langchain", "fixtura"])
def test_openai_langchain_and_fixtura_traces_are_read_by_the_adapters(project, run, name, content):
    folder = project.path / "c"
    folder.mkdir()
    case = dict(WEATHER_CASE)
    if name.endswith(".langchain.json"):  # a run tree holds no end state
        case["trace_fields"] = {"actual_state": {"answered": True}}
    if name.endswith(".trace"):  # a Fixtura trace holds no end state or answer, nor a drift verdict
        case["trace_fields"] = {"actual_state": {"answered": True}, "final_output": "20F",
                                "metadata": {"verdict": "PASS"}}
        case["metrics"] = [*case["metrics"], "fixture_freshness"]
    (folder / "weather.case.json").write_text(json.dumps(case))
    (folder / name).write_text(content)
    result = run("c", "--junitxml", "out.xml")
    result.assert_outcomes(passed=1)
    props = junit_cases(project.path / "out.xml")["weather"]
    assert props["trace_file"] == f"c/{name}"
    assert props["argument_correctness.score"] == "1.000" and props["goal_completion.score"] == "1.000"
    if name.endswith(".trace"):
        assert props["fixture_freshness.result"] == "passed"


def test_a_bad_adapter_input_is_an_error_naming_the_file(project, run):
    folder = project.path / "c"
    folder.mkdir()
    (folder / "w.case.json").write_text(json.dumps({"task_id": "w"}))
    (folder / "w.trace").write_text("not json at all\n")
    # a LangChain run saved with run.model_dump() alone, which leaves out its children (tool calls)
    (folder / "l.case.json").write_text(json.dumps({"task_id": "l", "expected_tool_calls": [{"tool": "get_weather"}]}))
    lossy = {key: value for key, value in LANGCHAIN.items() if key != "child_runs"}
    (folder / "l.langchain.json").write_text(json.dumps({**lossy, "dotted_order": "20260101T000000000000Z1"}))
    # JSON nested deeper than the reader goes: the file is named, no RecursionError traceback
    (folder / "d.case.json").write_text(json.dumps({"task_id": "d"}))
    (folder / "d.trace.json").write_text('{"task_id": "d", "actual_state": ' + "[" * 50_000 + "]" * 50_000 + "}")
    result = run("c")
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(["c/d.trace.json:1:*: trace file is not valid JSON (nested more than 200 levels deep)"])
    assert "RecursionError" not in result.stdout.str()
    result.stdout.fnmatch_lines(["c/w.trace:1: not a JSON line (*)"])
    result.stdout.fnmatch_lines([("c/l.langchain.json: run 'agent' has no 'child_runs': run.model_dump() leaves a "
                                  "run's children (its tool calls) out; save the tree with *langchain_run_dict(run)")])


def test_a_benchmark_run_can_be_checked_afterwards_from_its_run_record(project, run):
    assert run("--bench=mock", "--bench-limit", "1").ret == 0
    record = next((project.path / "benchmark_results").glob("*/tasks/mock/*.trajectory.json"))
    folder = project.path / "checks"
    folder.mkdir()
    (folder / "chrome.case.json").write_text(json.dumps({
        "task_id": "chrome", "trace": f"../{record.relative_to(project.path)}",
        "expected_tool_calls": [{"tool": "click"}], "expected_final_state": {"outcome": "passed"},
        "metrics": ["tool_selection", "goal_completion"]}))
    result = run("checks", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["checks/chrome.case.json::chrome PASSED*"])


# -- the file format, without pytest ------------------------------------------------------------------
def test_a_case_without_task_id_is_named_by_its_file(tmp_path):
    path = tmp_path / "my_case.case.json"
    path.write_text('{"expected_tool_calls": [{"tool": "a"}]}')
    parsed = read_case_file(path)
    assert parsed.name == "my_case" and parsed.case is not None and parsed.case.case.task_id == "my_case"
    assert parsed.case.case.max_steps is None and parsed.case.metrics is None


def test_an_unusable_task_id_names_the_item_by_its_file_and_is_an_error(tmp_path):
    path = tmp_path / "x.case.json"
    path.write_text('{"task_id": "a::b"}')
    parsed = read_case_file(path)
    assert parsed.name == "x" and parsed.case is None
    assert "task_id must be a non-empty string without '::'" in parsed.problem


def test_not_json_raises_with_the_line(tmp_path):
    path = tmp_path / "x.case.json"
    path.write_text('{\n\n  "a": 1,\n}')
    with pytest.raises(CaseSyntaxError, match=r"x.case.json:4:1: not valid JSON \(Expecting property name"):
        read_case_file(path)
    # nested deeper than the JSON reader goes: named, not a RecursionError out of collection
    path.write_text('{"task_id": "x", "expected_final_state": {"k": ' + "[" * 50_000 + "]" * 50_000 + "}}")
    with pytest.raises(CaseSyntaxError, match=r"x.case.json:1:\d+: not valid JSON \(nested more than 200 levels"):
        read_case_file(path)


@pytest.mark.parametrize(("name", "content", "fmt"), [
    ("run/trajectory.json", {"schema": "pytest-agentbench/trajectory/v1"}, "agentbench"),
    ("run/t1.trajectory.json", {}, "agentbench"),
    ("other/msgs.json", [{"role": "user", "content": "hi"}], "openai"),
    ("other/wrapped.json", {"messages": []}, "openai"),
    ("other/rec.json", {"schema": "pytest-agentbench/trajectory/v1", "steps": []}, "agentbench"),
    ("other/plain.json", {"task_id": "t", "steps": []}, "openeval"),
    ("other/x.trace", None, "fixtura"),
    ("other/x.openai.json", [], "openai"),
    ("other/x.langchain.json", {}, "langchain"),
    ("other/run.json", {"run_type": "chain", "child_runs": []}, "langchain"),
])
def test_the_trace_key_finds_the_format_by_name_then_content(tmp_path, name, content, fmt):
    target = tmp_path / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"" if content is None else json.dumps(content).encode())
    case = parse_case({"task_id": "t", "trace": name}, tmp_path / "t.case.json")
    assert find_trace(case) == (target, fmt)
    forced = parse_case({"task_id": "t", "trace": name, "trace_format": "openeval"}, tmp_path / "t.case.json")
    assert find_trace(forced)[1] == "openeval"


def test_traces_are_found_with_one_listing_of_their_folder(tmp_path, monkeypatch):
    for n in range(5):
        (tmp_path / f"c{n}.trace.json").write_text(json.dumps({"steps": []}))
    listings, probes = [], []
    real_scandir, real_isfile = cases.os.scandir, cases.os.path.isfile
    monkeypatch.setattr(cases.os, "scandir", lambda p: listings.append(p) or real_scandir(p))
    monkeypatch.setattr(cases.os.path, "isfile", lambda p: probes.append(p) or real_isfile(p))
    for n in range(5):
        case = parse_case({"task_id": f"c{n}"}, tmp_path / f"c{n}.case.json")
        assert find_trace(case) == (tmp_path / f"c{n}.trace.json", "openeval")
    assert len(listings) == 1 and probes == []
    # A trace added or removed later is seen: the folder's time moves, and the listing with it.
    (tmp_path / "c0.trace.json").unlink()
    (tmp_path / "c0.openai.json").write_text("[]")
    os.utime(tmp_path, ns=(1, 1))  # even where folder times are coarse, a changed time is a new listing
    found = find_trace(parse_case({"task_id": "c0"}, tmp_path / "c0.case.json"))
    assert found == (tmp_path / "c0.openai.json", "openai")
    assert len(listings) == 2


def test_a_stale_listing_falls_back_to_asking_the_file_system(tmp_path):
    (tmp_path / "a.trace.json").write_text("{}")
    find_trace(parse_case({"task_id": "a"}, tmp_path / "a.case.json"))
    before = os.stat(tmp_path).st_mtime_ns
    (tmp_path / "b.trace.json").write_text("{}")
    os.utime(tmp_path, ns=(before, before))  # as if the folder's time had not moved (a coarse clock)
    assert find_trace(parse_case({"task_id": "b"}, tmp_path / "b.case.json")) == (tmp_path / "b.trace.json", "openeval")


def test_a_trace_whose_format_is_read_from_its_content_is_read_once(tmp_path, monkeypatch):
    (tmp_path / "msgs.json").write_text(json.dumps([{"role": "user", "content": "hi"}]))
    reads = []
    real = cases._read_text
    monkeypatch.setattr(cases, "_read_text", lambda path, error: reads.append(path) or real(path, error))
    trace, path = load_trace(parse_case({"task_id": "t", "trace": "msgs.json"}, tmp_path / "t.case.json"))
    assert path == tmp_path / "msgs.json" and trace.input == "hi"
    assert reads == [tmp_path / "msgs.json"]


def test_trace_fields_fill_in_what_the_trace_lacks(tmp_path):
    (tmp_path / "t.trace.json").write_text(json.dumps({"steps": [], "metadata": {"fingerprint": "f"}}))
    case = parse_case({"task_id": "t", "trace_fields": {"actual_state": {"done": True}, "final_output": "ok",
                                                        "metadata": {"verdict": "PASS"}}}, tmp_path / "t.case.json")
    trace, path = load_trace(case)
    assert path == tmp_path / "t.trace.json"
    assert trace.task_id == "t"  # a trace without task_id takes the case's
    assert (trace.actual_state, trace.final_output) == ({"done": True}, "ok")
    assert trace.metadata == {"fingerprint": "f", "verdict": "PASS"}


@pytest.mark.parametrize(("body", "message"), [
    ({"trace_fields": {"state": {}}},
     "trace_fields has unknown key 'state'; known: input, final_output, actual_state, metadata"),
    ({"trace_fields": {"actual_state": []}}, "trace_fields.actual_state must be an object, got a list"),
    ({"trace_format": "xml"},
     "trace_format must be one of openeval, openai, langchain, fixtura, agentbench, got 'xml'"),
    ({"marks": ["not a name"]}, "marks must be a list of marker names (identifiers)"),
    ({"metrics": []}, "metrics must be a non-empty list of metric ids"),
    ({"max_steps": -1}, "max_steps must be a whole number >= 0 or null, got -1"),
    ({"timeout_seconds": 0}, "timeout_seconds must be a number > 0 or null, got 0"),
    ({"input": 3}, "input must be a string, got a number"),
])
def test_case_keys_are_checked(tmp_path, body, message):
    with pytest.raises(CaseError) as info:
        parse_case({"task_id": "t", **body}, tmp_path / "t.case.json")
    assert message in str(info.value)


def test_reference_trace_json_reads_the_extended_step_fields(tmp_path):
    """The reference's single-run CLI drops denied/divergent/error; its suite runner (and this) keep them."""
    data = json.loads((DATA / "case4_denied.trace.json").read_text())
    trace = trace_from_json(data, tmp_path / "x.trace.json")
    assert trace.steps[0].denied is True and trace.steps[0].error == "permission denied"
    assert trace.metadata == {"verdict": "PASS"}


def test_a_run_without_case_files_loads_and_registers_nothing(project, run_sub):
    """The plugin's per-file check is a suffix test: no case file, no trajectory module, no hooks.
    (Run in a subprocess: this test process has imported the whole package.)"""
    project.makeconftest('''
import sys

def pytest_sessionfinish(session):
    loaded = sorted(m for m in sys.modules if m.startswith("pytest_agentbench.trajectory."))
    hooks = [n for n in ("agentbench-trajectory-items", "agentbench-trajectory-reporter")
             if session.config.pluginmanager.has_plugin(n)]
    print("TRAJECTORY-LOADED", loaded, hooks)
''')
    project.makepyfile(test_plain="def test_plain(): pass")
    (project.path / "data.trace.json").write_text("{}")
    result = run_sub("-s", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*TRAJECTORY-LOADED [[][]] [[][]]*"])


FREEZE_PROBE = """
import gc

def pytest_runtest_setup(item):
    print(f"frozen at {item.name}: {gc.get_freeze_count() > 0}")
"""


def test_a_run_of_case_files_alone_keeps_its_collection_out_of_the_gc_walks(run_sub, pytester):
    # a run of cases alone freezes what collection built (plugin/heap.py), a run with other tests does not
    toy_pair(pytester.path / "cases", "c1", {"toy_a": [1.0, True]})
    pytester.makeconftest(FREEZE_PROBE)
    alone = run_sub("cases", "-s", "-p", "no:xdist")
    alone.stdout.fnmatch_lines(["*frozen at c1: True*"])
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    mixed = run_sub("cases", "test_plain.py", "-s", "-p", "no:xdist")
    mixed.stdout.fnmatch_lines(["*frozen at c1: False*", "*frozen at test_plain: False*"])


# -- many failing cases: pytest's failure summary costs failures x items --------------------------------
def failing_cases(folder: Path, count: int) -> None:
    for i in range(count):
        toy_pair(folder, f"bad{i:02d}", {"toy_a": [0.0, False]})
    toy_pair(folder, "good", {"toy_a": [1.0, True]})


def sections(result: pytest.RunResult) -> list[str]:
    """The failure sections pytest printed, by their headers (``____ c/bad00.case.json::bad00 ____``)."""
    return [line for line in result.outlines if line.startswith("_") and "bad" in line]


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_failing_cases_past_the_limit_are_left_out_of_the_failure_summary_only(toys, run_sub, workers):
    failing_cases(toys.path / "c", 23)
    result = run_sub("c", "--junitxml=junit.xml", *workers)
    result.assert_outcomes(failed=23, passed=1)
    assert len(sections(result)) == 20
    result.stdout.fnmatch_lines(["3 more failing cases are not shown in full above (--trajectory-failures-shown 20; *"])
    assert len([line for line in result.outlines if line.startswith("FAILED c/bad")]) == 23  # the short summary
    failures = ET.parse(toys.path / "junit.xml").getroot().iter("failure")
    assert len([f for f in failures if "toy_a says False" in (f.text or "")]) == 23  # every report whole


@pytest.mark.parametrize(("args", "ini", "shown", "note"), [
    (("--trajectory-failures-shown", "all"), "", 5, False),
    (("--trajectory-failures-shown", "0"), "", 0, True),
    ((), "agentbench_trajectory_failures_shown = 2", 2, True),
    (("--tb=no",), "agentbench_trajectory_failures_shown = 2", 0, False),
])
def test_the_failure_summary_limit_is_an_option_and_an_ini_key(toys, run, args, ini, shown, note):
    toys.makeini(f"[pytest]\n{ini}\n")
    failing_cases(toys.path / "c", 5)
    result = run("c", *args)
    result.assert_outcomes(failed=5, passed=1)
    assert len(sections(result)) == shown
    assert ("not shown in full above" in result.stdout.str()) is note
