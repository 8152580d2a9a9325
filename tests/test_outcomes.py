"""Every way an episode can end maps to the outcome in DESIGN.md §3.6, and every item is recorded."""

from __future__ import annotations

import json

import pytest
from conftest import OUTCOME_BENCH, only_run_folder, results


@pytest.fixture
def outcome_run(run, pytester):
    pytester.makeconftest(OUTCOME_BENCH)
    result = run("--bench=outcomes", "--bench-agent", "outcome-agent", "-rA")
    return result, only_run_folder(pytester.path)


def test_each_episode_end_gets_its_outcome(outcome_run):
    result, _ = outcome_run
    result.assert_outcomes(passed=1, failed=4, skipped=1, errors=2)
    out = result.stdout.str()
    # The first line names what failed (it is the line short summaries show); details follow.
    expected = {
        "bench/outcomes::d::fail": ["checker failed: wrong file content",
                                    "score 0.000 after 1 step: wrong file content"],
        "bench/outcomes::d::partial": ["checker failed: b", "score 0.500 after 1 step: failed: b"],
        # an exception of the user's own code: its frames first, then the outcome it caused
        "bench/outcomes::d::agent_crash": [">*raise ValueError(*", "E*ValueError: model returned garbage",
                                           "*direct cause*",
                                           "E   Failed: agent error: agent failed: ValueError: model returned garbage",
                                           "    after 0 steps"],
        "bench/outcomes::d::agent_error": ["agent error: agent reported an error: gave up", "after 0 steps"],
        "ERROR at setup of bench/outcomes::d::infra": [
            "E*ConnectionError: VM unreachable", "*direct cause*",
            "E   Failed: infrastructure error: environment reset failed: ConnectionError: VM unreachable"],
        "ERROR at setup of bench/outcomes::d::checker_crash": [
            "E*RuntimeError: checker exploded", "*direct cause*",
            "E   Failed: evaluation error: checker failed: RuntimeError: checker exploded"],
    }
    for header, lines in expected.items():
        result.stdout.fnmatch_lines([f"_* {header} _*", *lines])
    result.stdout.fnmatch_lines(["FAILED bench/outcomes::d::fail - Failed: checker failed: wrong file content",
                                 "FAILED bench/outcomes::d::partial - Failed: checker failed: b"])
    result.stdout.fnmatch_lines(["PASSED bench/outcomes::d::pass"])
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] bench/outcomes::d::unevaluated: not evaluated: needs an LLM judge"])
    # No frames of the plugin's internals (the user's own code shows its frames).
    assert "episode.py" not in out and "pytest_agentbench" not in out and "Traceback" not in out
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_failure_shows_the_criteria_table(outcome_run):
    result, _ = outcome_run
    result.stdout.fnmatch_lines(["*criterion  result  detail*", "*a          pass*", "*b          FAIL*"])


def test_every_item_is_recorded_with_its_status(outcome_run):
    _, folder = outcome_run
    rows = {r["task_id"]: r for r in results(folder)}
    assert {k: v["status"] for k, v in rows.items()} == {
        "pass": "passed", "fail": "failed", "partial": "failed", "unevaluated": "skipped", "infra": "error",
        "checker_crash": "error", "agent_crash": "failed", "agent_error": "failed",
    }
    assert rows["partial"]["score"] == 0.5
    assert rows["infra"]["error_type"] == "infrastructure"
    assert rows["checker_crash"]["error_type"] == "evaluation"
    assert rows["agent_crash"]["error_type"] == "agent"
    assert rows["unevaluated"]["outcome"] is False and rows["unevaluated"]["passed"] is None


def test_summary_counts_outcomes_only(outcome_run):
    result, folder = outcome_run
    summary = json.loads((folder / "summary.json").read_text())
    # 8 attempts; outcomes exclude infra, checker crash and the unevaluated task.
    assert summary["num_attempts"] == 8
    assert summary["num_outcome_tasks"] == 5
    assert summary["success_count"] == 1
    assert summary["success_rate"] == pytest.approx(0.2)
    assert summary["avg_score"] == pytest.approx((1.0 + 0.0 + 0.5 + 0 + 0) / 5)
    assert summary["error_count"] == 4  # infra, evaluation and the two agent errors, as the reference counts
    assert summary["num_not_evaluated"] == 1
    result.stdout.fnmatch_lines([
        "Attempts:     8", "Outcomes:     5",
        "Errors:       4 (2 agent (failed, to pytest), 1 infrastructure, 1 evaluation)",
        "Success rate: 20.0% (outcomes only)", "Avg score:    0.300 (outcomes only)",
    ])


def test_a_raising_fixture_still_writes_a_record(run, pytester):
    pytester.makeconftest(
        """
import pytest

@pytest.fixture
def agent():
    raise RuntimeError("no GPU for the agent")
"""
    )
    result = run("--bench=mock", "--bench-limit", "2")
    result.assert_outcomes(errors=2)
    rows = results(only_run_folder(pytester.path))
    assert [r["status"] for r in rows] == ["error", "error"]
    assert all(r["error_type"] == "infrastructure" and "no GPU" in r["error"] for r in rows)
    result.stdout.fnmatch_lines(["Errors:       2 (2 infrastructure)", "Success rate: n/a (outcomes only)"])


@pytest.mark.parametrize("name", ["agent", "agentbench_agent"])
def test_a_conftest_agent_override_plays_under_either_name(run, pytester, name):
    pytester.makeconftest(f"""
import pytest
from pytest_agentbench import Action, Agent

class GivesUp(Agent):
    name = "gives-up"

    def act(self, observation, task, history=None):
        return Action(type="fail", reason="overridden")

@pytest.fixture(scope="session")
def {name}():
    return GivesUp()
""")
    result = run("--bench=mock", "--bench-limit", "2")
    result.assert_outcomes(failed=2)
    rows = results(only_run_folder(pytester.path))
    assert [r["agent"] for r in rows] == ["gives-up", "gives-up"]


ITEM_FIXTURES = """
def pytest_collection_finish(session):
    print("closure:", ",".join(sorted(session.items[0].fixturenames)))
"""


def test_a_benchmark_item_resolves_only_the_fixtures_it_uses(run, pytester):
    # pytest resolves every name of an item's fixture closure for every item; ``request`` costs a
    # new fixture definition each time (see plugin.RunFixtures), and the episode plays in the
    # item's setup, not in a function-scoped fixture (see BenchItem.setup).
    pytester.makeconftest(ITEM_FIXTURES)
    result = run("--bench=mock", "--bench-limit", "1", "-s")
    result.stdout.fnmatch_lines(["closure: agent,agentbench_agent"])


@pytest.mark.parametrize("name", ["episode", "agentbench_episode"])
def test_a_fixture_asking_for_the_episode_gets_the_record_and_it_plays_once(run, pytester, name):
    pytester.makeconftest(f"""
import pytest

PLAYED = []

@pytest.fixture(autouse=True)
def logs_the_record(request, {name}):
    print("record:", request.node.name, {name}.task_id, {name}.num_steps, {name}.success)
    yield
    print("played so far:", len(PLAYED))

def pytest_agentbench_episode_finished(record, item, payload):
    PLAYED.append(record.task_id)
""")
    result = run("--bench=mock", "--bench-limit", "2", "-s")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*record: mock_chrome_001 mock_chrome_001 1 True", "*played so far: 1",
                                 "*record: mock_clock_001 mock_clock_001 1 True", "*played so far: 2"])
    assert [r["task_id"] for r in results(only_run_folder(pytester.path))] == ["mock_chrome_001", "mock_clock_001"]


def test_the_episode_fixture_outside_a_benchmark_item_is_an_error(pytester):
    pytester.makepyfile(test_own="def test_own(agentbench_episode):\n    pass\n")
    result = pytester.runpytest("-p", "no:randomly", "--bench=mock", "--bench-limit", "1", "test_own.py")
    result.stdout.fnmatch_lines(["*the episode fixture plays benchmark items (bench/...) during their setup*"])


def test_x_stops_after_the_first_failure(run, pytester):
    result = run("--bench=mock", "--bench-limit", "5", "--bench-agent", "noop", "-x")
    result.assert_outcomes(failed=1)
    assert len(results(only_run_folder(pytester.path))) == 1


def test_lf_reruns_only_the_failed_tasks(run, pytester):
    script = pytester.path / "script.json"
    script.write_text(json.dumps({"mock_clock_001": [{"type": "done"}], "*": [{"type": "click", "target_id": "4"}]}))
    first = run("--bench=mock", "--bench-limit", "5", "--bench-agent", "scripted", "--bench-agent-script", str(script))
    first.assert_outcomes(passed=4, failed=1)
    again = run("--bench=mock", "--bench-limit", "5", "--bench-agent", "scripted", "--bench-agent-script", str(script),
                "--lf", "-v")
    again.assert_outcomes(failed=1, deselected=4)
    again.stdout.fnmatch_lines(["*bench/mock::clock::mock_clock_001 FAILED*"])


def test_baseline_turns_known_failures_into_xfail(run, pytester):
    script = pytester.path / "script.json"
    script.write_text(json.dumps({"mock_clock_001": [{"type": "done"}], "mock_chrome_002": [{"type": "done"}],
                                  "*": [{"type": "click", "target_id": "4"}]}))
    run("--bench=mock", "--bench-limit", "5", "--bench-agent", "scripted", "--bench-agent-script", str(script),
        "--bench-run-name", "base")
    baseline = pytester.path / "benchmark_results" / "base" / "results.jsonl"
    # Now chrome_002 is fixed and clock_002 regresses.
    script.write_text(json.dumps({"mock_clock_001": [{"type": "done"}], "mock_clock_002": [{"type": "done"}],
                                  "*": [{"type": "click", "target_id": "4"}]}))
    result = run("--bench=mock", "--bench-limit", "5", "--bench-agent", "scripted", "--bench-agent-script", str(script),
                 "--bench-baseline", str(baseline), "-rxX")
    result.assert_outcomes(passed=2, failed=1, xfailed=1, xpassed=1)
    result.stdout.fnmatch_lines(["*XFAIL*mock_clock_001*did not pass in the baseline run (failed)*",
                                 "*XPASS*mock_chrome_002*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # only the regression fails the build
    rows = {r["task_id"]: r["status"] for r in results(pytester.path / "benchmark_results" / "base-2")} \
        if (pytester.path / "benchmark_results" / "base-2").exists() else None
    assert rows is None  # the second run got its own default-named folder


def test_baseline_does_not_hide_infrastructure_errors(run, pytester):
    pytester.makeconftest(OUTCOME_BENCH)
    (pytester.path / "base.jsonl").write_text(json.dumps({"benchmark": "outcomes", "task_id": "infra",
                                                          "success": False, "status": "failed"}) + "\n")
    result = run("--bench=outcomes", "--bench-agent", "outcome-agent", "--bench-task", "infra",
                 "--bench-baseline", "base.jsonl")
    result.assert_outcomes(errors=1)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("not json\n", "*--bench-baseline: *base.jsonl line 1 is not JSON*"),
        ('{"x": 1}\n', "*--bench-baseline: *base.jsonl line 1 is not a result record (needs task_id and benchmark)*"),
    ],
)
def test_malformed_baseline_is_a_usage_error(run, pytester, content, expected):
    (pytester.path / "base.jsonl").write_text(content)
    result = run("--bench=mock", "--bench-limit", "2", "--bench-baseline", "base.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([expected])


def test_missing_baseline_is_a_usage_error(run):
    result = run("--bench=mock", "--bench-baseline", "nowhere.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--bench-baseline: nowhere.jsonl does not exist*"])


def test_min_success_fails_the_run_below_the_rate(run):
    result = run("--bench=mock", "--bench-limit", "4", "--bench-agent", "noop", "--bench-min-success", "50%",
                 "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["ERROR: success rate 0.0% (outcomes only) is below --bench-min-success 50.0%"])


def test_min_success_turns_a_green_run_red(run, pytester):
    script = pytester.path / "script.json"
    script.write_text(json.dumps({"mock_chrome_001": [{"type": "done"}], "*": [{"type": "click", "target_id": "4"}]}))
    base = ("--bench=mock", "--bench-limit", "4", "--bench-agent", "scripted", "--bench-agent-script", str(script))
    # The failing task is a known failure, so pytest alone would exit 0 ...
    run(*base, "--bench-run-name", "base")
    ok = run(*base, "--bench-baseline", "benchmark_results/base", "--bench-min-success", "0.7")
    assert ok.ret == pytest.ExitCode.OK  # 3/4 = 75% >= 70%
    gated = run(*base, "--bench-baseline", "benchmark_results/base", "--bench-min-success", "0.8")
    assert gated.ret == pytest.ExitCode.TESTS_FAILED
    gated.stdout.fnmatch_lines(["ERROR: success rate 75.0% (outcomes only) is below --bench-min-success 80.0%"])


def test_min_success_passes_at_the_rate(run):
    result = run("--bench=mock", "--bench-limit", "4", "--bench-min-success", "1.0")
    assert result.ret == pytest.ExitCode.OK
    assert "ERROR:" not in result.stdout.str()


def test_verdict_to_outcome_hook_overrides_the_mapping(run, pytester):
    pytester.makeconftest(
        """
from pytest_agentbench import Outcome

def pytest_agentbench_verdict_to_outcome(record, item):
    if record.score == 0.0:
        return Outcome("skipped", "not evaluated: ignored by this project")
"""
    )
    result = run("--bench=mock", "--bench-limit", "2", "--bench-agent", "noop")
    result.assert_outcomes(skipped=2)


def test_skip_markers_on_benchmark_items_are_ordinary_skips(run, pytester):
    pytester.makeconftest(
        """
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        if "clock" in item.nodeid:
            item.add_marker(pytest.mark.skip(reason="clock app not installed"))
"""
    )
    result = run("--bench=mock", "--bench-limit", "3", "-rs")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["*clock app not installed*"])
    row = next(r for r in results(only_run_folder(pytester.path)) if r["domain"] == "clock")
    assert (row["status"] == "skipped" and row["error_type"] is None
            and row["reason"] == "Skipped: clock app not installed")


def test_a_conftest_can_replace_a_built_in_agent(run, pytester):
    pytester.makeconftest(
        """
from pytest_agentbench import Action, Agent

class Lazy(Agent):
    name = "lazy-mock"
    def act(self, observation, task, history=None):
        return Action(type="done")

def pytest_agentbench_register_agents(registry):
    registry.register("mock", lambda config: Lazy())
"""
    )
    result = run("--bench=mock", "--bench-limit", "2")
    result.assert_outcomes(failed=2)
    assert {r["agent"] for r in results(only_run_folder(pytester.path))} == {"lazy-mock"}


def test_a_failures_first_line_names_what_failed_and_stays_short():
    from pytest_agentbench.model import Criterion, EpisodeRecord, Verdict
    from pytest_agentbench.outcomes import HEADLINE_CHARS, default_outcome

    def first_lines(verdict=None, **fields):
        record = EpisodeRecord(task_id="t", benchmark="b", agent="a", num_steps=2, verdict=verdict, **fields)
        return default_outcome(record).message.splitlines()

    one = Verdict.from_criteria([Criterion(name="ok", passed=True),
                                 Criterion(name="file saved", passed=False, detail="no report.txt")])
    assert first_lines(one)[:2] == ["checker failed: file saved: no report.txt",
                                    "score 0.500 after 2 steps: failed: file saved"]
    many = Verdict.from_criteria([Criterion(name=f"c{i}", passed=False) for i in range(5)])
    assert first_lines(many)[0] == "checker failed: c0, c1, c2 and 2 more"
    long_reason = "the spreadsheet's totals row " * 10
    lines = first_lines(Verdict(score=0.0, passed=False, reason=long_reason))
    assert len(lines[0]) == HEADLINE_CHARS and lines[0].endswith("...")
    assert lines[1] == f"score 0.000 after 2 steps: {long_reason}"  # given whole on the next line
    lines = first_lines(error_type="agent", error="step limit reached: the agent took 15 steps without done")
    assert lines == ["agent error: step limit reached: the agent took 15 steps without done", "after 2 steps"]
