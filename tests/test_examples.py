"""The ready-to-copy conftest files in ``conftest_examples/`` work as their docstrings say.

Each test copies an example conftest into a fresh pytester folder, exactly as a user would, and
runs real pytest sessions against it.
"""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import pytest
from conftest import QUIET, results
from PIL import Image

EXAMPLES = Path(__file__).resolve().parents[1] / "conftest_examples"
OWN_AGENT = EXAMPLES / "own_agent" / "conftest.py"
OWN_BENCHMARK = EXAMPLES / "own_benchmark" / "conftest.py"


def docstring_script(path: Path) -> dict:
    """The script.json shown in an example's docstring, so the docstring cannot drift."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    assert doc is not None
    start = doc.index("\n    {\n") + 1
    end = doc.index("\n    }\n", start) + len("\n    }")
    return json.loads(textwrap.dedent(doc[start:end]))


# The script from the own_benchmark docstring: it forgets the bread.
TODO_SCRIPT = docstring_script(OWN_BENCHMARK)


def run_folder(pytester: pytest.Pytester, name: str) -> Path:
    folder = pytester.path / "benchmark_results" / name
    assert folder.is_dir(), sorted(p.name for p in (pytester.path / "benchmark_results").iterdir())
    return folder


def by_task(folder: Path) -> dict[str, dict]:
    return {r["task_id"]: r for r in results(folder)}


# -- own agent -----------------------------------------------------------------------------------
@pytest.fixture
def own_agent(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(OWN_AGENT.read_text(encoding="utf-8"))
    return pytester


def test_own_agent_passes_every_mock_task(own_agent, run):
    result = run("--bench=mock", "--bench-agent", "my-agent", "--bench-limit", "5", "--bench-run-name", "mine")
    result.assert_outcomes(passed=5)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["Success rate: 100.0% (outcomes only)"])
    folder = run_folder(own_agent, "mine")
    records = results(folder)
    assert len(records) == 5
    assert {r["agent"] for r in records} == {"my-agent"}
    assert all(r["num_steps"] == 1 and r["success"] for r in records)
    # The click went by pixel coordinates: the centre of Submit's box (350, 100, 450, 140).
    trajectory = json.loads((folder / records[0]["trajectory"]).read_text())
    click = trajectory["steps"][0]["action"]
    assert click == {"type": "click", "x": 400.0, "y": 120.0, "unit": "px",
                     "reason": "click Submit at the centre of its box"}
    assert trajectory["steps"][-1]["action"]["type"] == "done"


def test_own_agent_is_listed_when_the_name_is_wrong(own_agent, run):
    result = run("--bench=mock", "--bench-agent", "my-agnet", "--bench-limit", "1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown agent 'my-agnet'*available:*my-agent*"])
    assert not (own_agent.path / "benchmark_results").exists()


def test_own_agent_configuration_error_stops_before_any_task(own_agent, run, monkeypatch):
    monkeypatch.setenv("MY_AGENT_TARGET", "")
    result = run("--bench=mock", "--bench-agent", "my-agent", "--bench-limit", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*MY_AGENT_TARGET is set but empty*"])
    result.stdout.no_fnmatch_line("*passed*")


def test_own_agent_checker_decides_not_the_agent(own_agent, run, monkeypatch):
    # Clicking OK instead of Submit: the agent still says done, the mock checker says no.
    monkeypatch.setenv("MY_AGENT_TARGET", "OK")
    result = run("--bench=mock", "--bench-agent", "my-agent", "--bench-limit", "3", "--bench-run-name", "ok")
    result.assert_outcomes(failed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    records = results(run_folder(own_agent, "ok"))
    assert {r["score"] for r in records} == {0.4}  # 0.3 + 0.1 for one distinct element clicked
    assert all(r["final_action"]["type"] == "done" and not r["success"] for r in records)


def test_own_agent_selects_a_domain(own_agent, run):
    result = run("--bench=mock", "--bench-agent", "my-agent", "--bench-limit", "6", "-m", "mock and chrome",
                 "--strict-markers")
    result.assert_outcomes(passed=2, deselected=4)


def test_own_agent_fixture_override(own_agent, run):
    # The docstring's alternative: override the agent fixture instead of choosing --bench-agent.
    own_agent.makeconftest(
        OWN_AGENT.read_text(encoding="utf-8")
        + "\n\n@pytest.fixture\ndef agent():\n    return SubmitByPixelsAgent()\n"
    )
    result = run("--bench=mock", "--bench-agent", "noop", "--bench-limit", "3", "--bench-run-name", "fixture")
    result.assert_outcomes(passed=3)
    assert {r["agent"] for r in results(run_folder(own_agent, "fixture"))} == {"my-agent"}


def test_own_agent_under_xdist(own_agent, run_sub):
    result = run_sub("--bench=mock", "--bench-agent", "my-agent", "--bench-limit", "4", "-n", "2",
                     "--bench-run-name", "par")
    result.assert_outcomes(passed=4)
    records = results(run_folder(own_agent, "par"))
    assert sorted(r["task_id"] for r in records) == sorted(
        ["mock_chrome_001", "mock_chrome_002", "mock_clock_001", "mock_file_explorer_001"])
    assert {r["worker"] for r in records} <= {"gw0", "gw1"}


# -- own benchmark -------------------------------------------------------------------------------
@pytest.fixture
def todo(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(OWN_BENCHMARK.read_text(encoding="utf-8"))
    (pytester.path / "script.json").write_text(json.dumps(TODO_SCRIPT), encoding="utf-8")
    return pytester


def test_todo_collects_its_tasks_by_domain(todo, run):
    result = run("--bench=todo", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([
        "bench/todo::add::add_eggs_bread",
        "bench/todo::add::add_milk",
        "bench/todo::complete::complete_laundry",
        "3 tests collected*",
    ])


def test_todo_own_agent_passes(todo, run):
    result = run("--bench=todo", "--bench-agent", "todo-agent", "--bench-run-name", "own")
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.OK
    records = by_task(run_folder(todo, "own"))
    assert records["add_eggs_bread"]["num_steps"] == 4  # type, click Add, type, click Add; done not counted
    assert records["complete_laundry"]["num_steps"] == 1
    # The example's pytest_agentbench_episode_finished hook adds a key under "extra".
    assert records["add_eggs_bread"]["extra"] == {"criteria_met": 3}


def test_todo_noop_agent_fails_every_task(todo, run):
    result = run("--bench=todo", "--bench-agent", "noop", "--bench-run-name", "noop")
    result.assert_outcomes(failed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*'milk' on the list*FAIL*"])
    records = by_task(run_folder(todo, "noop"))
    # Doing nothing leaves "nothing else changed" true: partial credit, still a failure.
    assert records["add_milk"]["score"] == pytest.approx(0.5)
    assert records["add_eggs_bread"]["score"] == pytest.approx(1 / 3)
    assert not any(r["success"] for r in records.values())


def test_todo_scripted_agent_gets_partial_credit(todo, run):
    result = run("--bench=todo", "--bench-agent", "scripted", "--bench-agent-script", "script.json",
                 "--bench-run-name", "script")
    result.assert_outcomes(passed=2, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*score 0.667 after 2 steps: failed: 'bread' on the list*",
        "Success rate: 66.7% (outcomes only)",
        "Avg score:    0.889 (outcomes only)",
    ])
    folder = run_folder(todo, "script")
    record = by_task(folder)["add_eggs_bread"]
    assert record["score"] == pytest.approx(2 / 3)
    assert record["passed"] is False and record["success"] is False and record["outcome"] is True
    assert [(c["name"], c["passed"]) for c in record["criteria"]] == [
        ("'eggs' on the list", True), ("'bread' on the list", False), ("nothing else changed", True)]
    assert record["criteria"][1]["actual"] == []
    trajectory = json.loads((folder / record["trajectory"]).read_text())
    assert trajectory["verdict"]["score"] == pytest.approx(2 / 3)
    assert [s["label"] for s in trajectory["steps"]] == ["type 'eggs'", "key 'enter'", "done"]
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["by_domain"]["add"]["avg_score"] == pytest.approx((1 + 2 / 3) / 2)
    assert summary["by_domain"]["complete"]["success_rate"] == 1.0


@pytest.mark.parametrize(
    ("expression", "selected"),
    [
        ("add", ["add_eggs_bread", "add_milk"]),
        ("complete", ["complete_laundry"]),
        ("todo and not add", ["complete_laundry"]),
    ],
)
def test_todo_domain_markers_select_under_strict_markers(todo, run, expression, selected):
    result = run("--bench=todo", "--bench-agent", "todo-agent", "-m", expression, "--strict-markers",
                 "--bench-run-name", "sel")
    result.assert_outcomes(passed=len(selected), deselected=3 - len(selected))
    assert sorted(by_task(run_folder(todo, "sel"))) == selected


def test_todo_keyword_and_exact_task_selection(todo, run):
    result = run("--bench=todo", "--bench-agent", "todo-agent", "-k", "eggs or laundry")
    result.assert_outcomes(passed=2, deselected=1)
    result = run("--bench=todo", "--bench-agent", "todo-agent", "-k", "offline")  # a task tag
    result.assert_outcomes(passed=3)
    result = run("--bench=todo", "--bench-agent", "todo-agent", "--bench-task", "complete_laundry")
    result.assert_outcomes(passed=1)
    result = run("--bench=todo", "--bench-task", "complete_dishes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--bench-task 'complete_dishes' matches no task of todo*"])


def test_todo_last_failed_reruns_only_the_partial_task(todo, run):
    run("--bench=todo", "--bench-agent", "scripted",
        "--bench-agent-script", "script.json").assert_outcomes(passed=2, failed=1)
    result = run("--bench=todo", "--bench-agent", "todo-agent", "--lf", "--bench-run-name", "again")
    result.assert_outcomes(passed=1, deselected=2)
    assert list(by_task(run_folder(todo, "again"))) == ["add_eggs_bread"]


def test_todo_from_ini_keys(todo, run):
    todo.makeini(
        """
        [pytest]
        agentbench_benchmarks = todo
        agentbench_agent = scripted
        agentbench_agent_script = script.json
        agentbench_run_name = fromini
        """
    )
    result = run()
    result.assert_outcomes(passed=2, failed=1)
    assert by_task(run_folder(todo, "fromini"))["add_eggs_bread"]["score"] == pytest.approx(2 / 3)


def test_todo_screenshots_are_drawn_when_asked(todo, run):
    result = run("--bench=todo", "--bench-agent", "todo-agent", "--bench-screenshots=on", "--bench-run-name", "shots")
    result.assert_outcomes(passed=3)
    folder = run_folder(todo, "shots")
    record = by_task(folder)["add_milk"]
    assert len(record["screenshots"]) == 4  # three steps (type, click, done) and the end state
    with Image.open(folder / record["screenshots"][-1]) as image:
        assert image.size == (420, 320)


def test_todo_under_xdist(todo, run_sub):
    result = run_sub("--bench=todo", "--bench-agent", "todo-agent", "-n", "2", "--bench-run-name", "par")
    result.assert_outcomes(passed=3)
    assert sorted(by_task(run_folder(todo, "par"))) == ["add_eggs_bread", "add_milk", "complete_laundry"]


def test_examples_do_not_leak_into_plain_runs(todo, pytester):
    # Without --bench the plugin stays inert even with the example conftest present.
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = pytester.runpytest(*QUIET)
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "benchmark_results").exists()
