"""``pytest --bench=mockmed``: 3 conditions x 3 arms x 3 runs on a real local app, scored by
reading SQLite back. The expected table is the published comparison's."""

from __future__ import annotations

import json

import pytest
from conftest import CHROMIUM, browser_unavailable, only_run_folder, results

EXPECTED_TABLE = [
    "Condition     Compiled replay  Script, by position  Script, by name",
    "------------  ---------------  -------------------  ---------------",
    "clean         3/3              3/3                  3/3",
    "theme         3/3              3/3                  3/3",
    "rename        3/3              0/3                  0/3",
]


def test_the_matrix_reproduces_the_published_table(run, pytester):
    result = run("--bench=mockmed", "-rx")
    result.assert_outcomes(passed=21, xfailed=6)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(EXPECTED_TABLE)
    result.stdout.fnmatch_lines(["median s/run  *", "wrong writes: 0"])
    rows = results(only_run_folder(pytester.path))
    assert len(rows) == 27
    stopped = [r for r in rows if r["domain"] == "rename" and "compiled" not in r["task_id"]]
    assert len(stopped) == 6
    for row in stopped:
        assert row["status"] == "xfailed" and row["success"] is False
        assert row["reason"].startswith("wrote nothing; the arm stopped: no button named 'Open'")
    compiled = [r for r in rows if "-compiled-" in r["task_id"]]
    assert all(r["success"] for r in compiled)


def test_node_ids_and_selection(run):
    result = run("--bench=mockmed", "--collect-only", "-q")
    ids = [line for line in result.outlines if line.startswith("bench/")]
    assert len(ids) == 27
    assert "bench/mockmed::rename::rename-compiled-run1" in ids
    result = run("--bench=mockmed", "-k", "rename and compiled", "--collect-only", "-q")
    assert [line for line in result.outlines if line.startswith("bench/")] == [
        f"bench/mockmed::rename::rename-compiled-run{k}" for k in (1, 2, 3)]


def test_rename_under_xdist(run_sub):
    result = run_sub("--bench=mockmed", "-k", "rename", "-n", "2")
    result.assert_outcomes(passed=3, xfailed=6)
    result.stdout.fnmatch_lines(["rename        3/3              0/3                  0/3"])


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--mockmed-condition", "dark"], "*unknown MockMed condition 'dark'; valid: clean, theme, rename*"),
        (["--mockmed-arm", "vision"], "*unknown MockMed arm 'vision'; valid: compiled, by-position, by-name, agent"),
    ],
)
def test_bad_condition_or_arm_is_a_usage_error(run, args, expected):
    result = run("--bench=mockmed", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([expected])


def test_the_compiled_workflow_is_a_file_that_is_reused(run, pytester):
    path = pytester.path / "wf" / "workflow.json"
    run("--bench=mockmed", "--mockmed-arm", "compiled", "--mockmed-condition", "clean", "--mockmed-runs", "1",
        "--mockmed-workflow", str(path)).assert_outcomes(passed=1)
    workflow = json.loads(path.read_text())
    assert workflow["recorded_on"] == "clean"
    open_step = next(s for s in workflow["steps"] if s["target"]["name"] == "Open")
    assert open_step["target"]["id"] == "open-p1" and open_step["target"]["row"] == "Jane Sample"
    run("--bench=mockmed", "--mockmed-arm", "compiled", "--mockmed-condition", "rename", "--mockmed-runs", "1",
        "--mockmed-workflow", str(path)).assert_outcomes(passed=1)


def test_a_write_to_the_wrong_patient_is_reported_as_a_wrong_write(run, pytester):
    pytester.makeconftest(
        """
from pytest_agentbench.benches.mockmed.arms import ScriptAgent, Step, _steps
from pytest_agentbench.benches.mockmed.bench import MockMedBenchmark

class WrongRow(MockMedBenchmark):
    def agent_for(self, task):
        return ScriptAgent("wrong-row", _steps(Step("button", "Open", within_row="Alex Testcase")))

def pytest_agentbench_register_benchmarks(registry):
    registry.register("mockmed", lambda config: WrongRow(conditions=("clean",), arms=("by-name",), runs=1))
"""
    )
    result = run("--bench=mockmed")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*wrong write: Triage for p2*", "wrong writes: 1: *"])


def test_the_browser_driver_gives_the_same_result(run_sub):
    try:
        import playwright  # noqa: F401
    except ImportError:
        browser_unavailable("the browser driver needs the playwright package (pip install playwright)")
    if not CHROMIUM.exists():
        browser_unavailable(f"the browser driver needs Chromium at {CHROMIUM} (apt-get install chromium)")
    result = run_sub("--bench=mockmed", "--mockmed-driver", "browser", "--mockmed-condition", "rename",
                 "--mockmed-runs", "1")
    result.assert_outcomes(passed=1, xfailed=2)
    result.stdout.fnmatch_lines(["rename        1/1              0/1                  0/1"])


def test_the_run_folder_names_the_arms_not_the_agent(run, pytester):
    run("--bench=mockmed", "--mockmed-runs", "1", "--mockmed-condition", "clean")
    (folder,) = (pytester.path / "benchmark_results").iterdir()
    assert folder.name.startswith("mockmed_arms_")


def test_the_agent_arm_is_the_runs_agent_and_is_told_how_to_sign_in():
    from pytest_agentbench.benches.mockmed.arms import PASSWORD, USERNAME
    from pytest_agentbench.benches.mockmed.bench import MockMedBenchmark

    bench = MockMedBenchmark(conditions=("clean",), arms=("by-name", "agent"), runs=1)
    scripted, agent = bench.list_tasks()
    assert (scripted.task_id, agent.task_id) == ("clean-by-name-run1", "clean-agent-run1")
    assert bench.agent_for(agent) is None and bench.agent_for(scripted) is not None
    assert USERNAME in agent.instruction and PASSWORD in agent.instruction
    assert USERNAME not in scripted.instruction  # the arms' task is the published one
    assert bench.player is None  # the --bench-agent agent plays some items: it names the run
    assert MockMedBenchmark(arms=("compiled",)).player == "arms"
    assert [t.raw_config.get("expect_fail") for t in MockMedBenchmark(conditions=("rename",), arms=("agent",),
                                                                        runs=1).list_tasks()] == [None]
