"""The reference tool's Python API: the README snippet runs unchanged and prints 0.0."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from pytest_agentbench import (
    Action,
    Agent,
    MockAgent,
    WAAMockAdapter,
    compute_metrics,
    evaluate_agent_on_benchmark,
)

SNIPPET = textwrap.dedent(
    """
    from pytest_agentbench import (
        BenchmarkAction,
        BenchmarkAgent,
        WAAMockAdapter,
        compute_metrics,
        evaluate_agent_on_benchmark,
    )


    class MyAgent(BenchmarkAgent):
        def act(self, observation, task, history=None):
            # observation.screenshot holds PNG bytes; task.instruction says what to do.
            # Return one action per step. This agent gives up at once.
            return BenchmarkAction(type="done")


    results = evaluate_agent_on_benchmark(MyAgent(), WAAMockAdapter(num_tasks=5))
    print(compute_metrics(results)["success_rate"])
    """
)

REFERENCE_KEYS = {
    "num_tasks", "num_attempts", "num_outcome_tasks", "error_count", "success_rate", "avg_score", "avg_steps",
    "avg_time_seconds", "success_count", "fail_count", "num_infrastructure_failures", "num_evaluation_failures",
    "num_agent_failures", "num_tasks_excluding_infra", "success_rate_excluding_infra",
}


def test_readme_snippet_runs_unchanged_and_prints_zero(tmp_path):
    done = subprocess.run([sys.executable, "-c", SNIPPET], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "0.0\n"
    assert list(tmp_path.iterdir()) == [], "nothing is written unless results_dir is given"


def test_compute_metrics_has_the_reference_keys():
    results = evaluate_agent_on_benchmark(MockAgent(), WAAMockAdapter(num_tasks=5))
    metrics = compute_metrics(results)
    assert set(metrics) >= REFERENCE_KEYS
    assert metrics["success_rate"] == 1.0 and metrics["avg_steps"] == 1.0 and metrics["num_outcome_tasks"] == 5
    assert [r.task_id for r in results] == ["mock_chrome_001", "mock_chrome_002", "mock_clock_001",
                                            "mock_clock_002", "mock_file_explorer_001"]


def test_no_outcomes_means_no_success_rate():
    assert compute_metrics([])["success_rate"] is None
    results = evaluate_agent_on_benchmark(MockAgent(), WAAMockAdapter(num_tasks=2), task_ids=["nope"])
    metrics = compute_metrics(results)
    assert metrics["num_attempts"] == 1 and metrics["num_outcome_tasks"] == 0
    assert metrics["success_rate"] is None and metrics["avg_score"] is None


def test_unknown_task_id_is_an_error_for_that_task_only():
    results = evaluate_agent_on_benchmark(MockAgent(), WAAMockAdapter(num_tasks=2),
                                          task_ids=["mock_chrome_001", "foo", "mock_clock_001"])
    assert [r.success for r in results] == [True, False, True]
    assert results[1].error_type == "infrastructure" and "unknown task id 'foo'" in results[1].error
    assert compute_metrics(results)["success_rate"] == 1.0


def test_explicit_max_steps_beats_task_limit_in_the_api():
    class Forever(Agent):
        def act(self, observation, task, history=None):
            return Action(type="click", target_id="1")

    [record] = evaluate_agent_on_benchmark(Forever(), WAAMockAdapter(num_tasks=1), max_steps=3)
    assert record.num_steps == 3 and record.error_type == "agent"
    [record] = evaluate_agent_on_benchmark(Forever(), WAAMockAdapter(num_tasks=1), max_steps=None)
    assert record.num_steps == 15  # the mock task's own limit


def test_results_dir_writes_a_run_folder(tmp_path):
    evaluate_agent_on_benchmark(MockAgent(), WAAMockAdapter(num_tasks=3), results_dir=tmp_path, run_name="api")
    folder = tmp_path / "api"
    assert (folder / "summary.json").exists() and (folder / "viewer.html").exists()
    assert len((folder / "results.jsonl").read_text().splitlines()) == 3


def test_aliases_are_the_same_classes():
    import pytest_agentbench as pab

    assert pab.BenchmarkAction is pab.Action and pab.BenchmarkAgent is pab.Agent
    assert pab.BenchmarkTask is pab.Task and pab.BenchmarkObservation is pab.Observation
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        pab.Nope  # noqa: B018
