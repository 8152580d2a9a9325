"""Collection: node ids, selection with -k/-m/--bench-task, --collect-only, inertness, ini keys."""

from __future__ import annotations

import pytest
from conftest import run_folders

MOCK5 = [
    "bench/mock::chrome::mock_chrome_001",
    "bench/mock::chrome::mock_chrome_002",
    "bench/mock::clock::mock_clock_001",
    "bench/mock::clock::mock_clock_002",
    "bench/mock::file_explorer::mock_file_explorer_001",
]


def test_collect_only_lists_node_ids_in_manifest_order(run, pytester):
    result = run("--bench=mock", "--bench-limit", "5", "--collect-only", "-q")
    assert result.ret == 0
    assert [line for line in result.outlines if line.startswith("bench/")] == MOCK5
    assert not run_folders(pytester.path), "--collect-only must not create a run folder"


def test_collect_only_tree_shows_suite_domain_item(run):
    result = run("--bench=mock", "--bench-limit", "3", "--collect-only")
    result.stdout.fnmatch_lines(["*<BenchSuite mock>*", "*<DomainGroup chrome>*", "*<BenchItem mock_chrome_001>*"])


def test_without_paths_only_benchmark_items_are_collected(run, pytester):
    pytester.makepyfile(test_unrelated="def test_unrelated(): pass")
    result = run("--bench=mock", "--bench-limit", "2", "--collect-only", "-q")
    assert "test_unrelated" not in result.stdout.str()
    result = run("--bench=mock", "--bench-limit", "2", "--collect-only", "-q", "test_unrelated.py")
    result.stdout.fnmatch_lines(["test_unrelated.py::test_unrelated", "bench/mock::*"])


def test_plugin_is_inert_without_a_benchmark(run, pytester):
    pytester.makepyfile(test_plain="def test_plain(): pass")
    result = run()
    result.assert_outcomes(passed=1)
    assert "= agentbench =" not in result.stdout.str()
    assert "Evaluation Results" not in result.stdout.str()
    assert not (pytester.path / "benchmark_results").exists()


def test_k_selects_one_task_by_id(run):
    result = run("--bench=mock", "--bench-limit", "5", "-k", "mock_clock_002", "-v")
    result.assert_outcomes(passed=1, deselected=4) if hasattr(result, "assert_outcomes") else None
    result.stdout.fnmatch_lines(["*bench/mock::clock::mock_clock_002 PASSED*"])


def test_a_k_that_matches_nothing_leaves_no_run_folder(run, pytester):
    result = run("--bench=mock", "--bench-limit", "5", "-k", "no_such_task")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert run_folders(pytester.path) == [] and "Results saved to" not in result.stdout.str()


@pytest.mark.parametrize(("node_id", "expected"), [
    ("bench/mock::clock::mock_clock_002", ["bench/mock::clock::mock_clock_002"]),
    ("bench/mock::clock", ["bench/mock::clock::mock_clock_001", "bench/mock::clock::mock_clock_002"]),
    ("bench/mock", MOCK5),
])
def test_a_copied_node_id_selects_its_items(run, node_id, expected):
    result = run(node_id, "--bench=mock", "--bench-limit", "5", "-v")
    assert [line.split()[0] for line in result.outlines if line.startswith("bench/") and "PASSED" in line] == expected


def test_a_node_id_that_names_no_item_is_a_usage_error_and_leaves_no_run_folder(run, pytester):
    result = run("bench/mock::clock::mock_clock_077", "--bench=mock", "--bench-limit", "5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: not found: bench/mock::clock::mock_clock_077 (no benchmark item*"])
    assert run_folders(pytester.path) == []


def test_an_audit_node_id_selects_its_items(run):
    result = run("audit/toy::split-bill", "--audit-verifier=toy", "-v")
    ran = [line.split()[0] for line in result.outlines if line.startswith("audit/") and "%]" in line]
    assert len(ran) == 6 and all(node.startswith("audit/toy::split-bill::") for node in ran)


def test_k_matches_domain_and_benchmark_names(run):
    result = run("--bench=mock", "--bench-limit", "5", "-k", "clock or file_explorer", "--collect-only", "-q")
    ids = [line for line in result.outlines if line.startswith("bench/")]
    assert ids == MOCK5[2:]


def test_markers_select_under_strict_markers_without_warnings(run):
    result = run("--bench=mock", "--bench-limit", "5", "-m", "mock and chrome", "--strict-markers", "-W", "error")
    result.assert_outcomes(passed=2, deselected=3)
    assert "PytestUnknownMarkWarning" not in result.stdout.str()


def test_markers_are_listed(run):
    result = run("--bench=mock", "--bench-limit", "3", "--markers")
    result.stdout.fnmatch_lines(["*@pytest.mark.mock: tasks of benchmark mock*"])


def test_bench_task_selects_exact_ids(run):
    result = run("--bench=mock", "--bench-task", "mock_clock_001", "--bench-task", "mock_chrome_007", "-q",
                 "--collect-only")
    ids = [line for line in result.outlines if line.startswith("bench/")]
    assert ids == ["bench/mock::chrome::mock_chrome_007", "bench/mock::clock::mock_clock_001"]


def test_ini_keys_configure_the_run(run, pytester):
    pytester.makeini("[pytest]\nagentbench_benchmarks = mock\nagentbench_tasks = 3\nagentbench_agent = noop\n")
    result = run("--collect-only", "-q")
    assert len([line for line in result.outlines if line.startswith("bench/")]) == 3
    # The command line beats the ini file.
    result = run("--bench-limit", "4", "--collect-only", "-q")
    assert len([line for line in result.outlines if line.startswith("bench/")]) == 4


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--bench=nope"], "*unknown benchmark 'nope' in --bench; available: extradup, mock, mockmed*"),
        (["--bench=mock", "--bench-agent", "nope"],
         ("*unknown agent 'nope' in --bench-agent; available: api-claude, api-openai, api-vlm, http, mock, noop, "
          "planner-grounder, replay, scripted*")),
        (["--bench=mock", "--bench-limit", "0"], "*--bench-limit must be >= 1, got 0*"),
        (["--bench=mock", "--bench-limit", "-3"], "*--bench-limit must be >= 1, got -3*"),
        (["--bench=mock", "--bench-limit", "many"], "*--bench-limit must be a whole number >= 1, got 'many'*"),
        (["--bench=mock", "--bench-max-steps", "0"], "*--bench-max-steps must be >= 1, got 0*"),
        (["--bench=mock", "--bench-min-success", "1.5"], "*--bench-min-success must be between 0 and 1*"),
        (["--bench=mock", "--bench-task", "notepad_1"], "*--bench-task 'notepad_1' matches no task of mock*"),
        (["--bench=mock", "--bench-agent", "scripted"], "*--bench-agent scripted needs --bench-agent-script FILE*"),
        (["--bench=mock", "--bench-run-name", "a/b"], "*--bench-run-name must be a plain folder name*got 'a/b'*"),
    ],
)
def test_bad_input_is_a_usage_error_naming_the_value(run, args, expected):
    result = run(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([expected])


def test_bad_ini_value_is_a_usage_error(run, pytester):
    pytester.makeini("[pytest]\nagentbench_benchmarks = mock\nagentbench_tasks = zero\n")
    result = run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini agentbench_tasks: --bench-limit must be a whole number >= 1, got 'zero'*"])


def test_conftest_benchmark_registers_through_the_same_hook(run, pytester):
    pytester.makeconftest(
        """
from pytest_agentbench import Benchmark, Task, Observation, Verdict

class Tiny(Benchmark):
    name = "tiny"
    def list_tasks(self, limit=None):
        return [Task(task_id=f"t{i}", domain="z" if i % 2 else "a") for i in range(4)]
    def reset(self, task): return Observation()
    def step(self, action): return Observation()
    def evaluate(self, task, final_action):
        return Verdict(score=1.0, passed=True)

def pytest_agentbench_register_benchmarks(registry):
    registry.register("tiny", lambda config: Tiny(), description="four tasks")
"""
    )
    result = run("--bench=tiny", "--bench=mock", "--bench-limit", "2", "--collect-only", "-q")
    ids = [line for line in result.outlines if line.startswith("bench/")]
    # --bench-limit applies per benchmark; mock spreads its tasks over domains like the reference tool.
    assert ids == ["bench/tiny::a::t0", "bench/tiny::a::t2", "bench/mock::chrome::mock_chrome_001",
                   "bench/mock::clock::mock_clock_001"]


SUITE_PROVIDER = """
import pytest

def check(value):
    assert value % 2 == 0, f"{value} is odd"

class Numbers(pytest.Collector):
    def collect(self):
        for value in range(4):
            yield pytest.Function.from_parent(self, name=f"n{value}", callobj=lambda value=value: check(value))

class Provider:
    def collect(self, session):
        return Numbers.from_parent(session, name="numbers", nodeid="bench/numbers")
    def pytest_terminal_summary(self, terminalreporter):
        terminalreporter.write_line("NUMBERS SUMMARY")

def pytest_agentbench_register_benchmarks(registry):
    registry.register_suite("numbers", lambda config: Provider(), description="four items")
"""


def test_a_suite_benchmark_collects_its_own_items(run, pytester):
    pytester.makeconftest(SUITE_PROVIDER)
    result = run("--bench=numbers", "--bench=mock", "--bench-limit", "1", "-v")
    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines(["*bench/numbers::n1 FAILED*", "NUMBERS SUMMARY"])
    alone = run("--bench=numbers")
    assert "Evaluation Results" not in alone.stdout.str()


def test_a_benchmark_can_name_the_agent_of_each_task(run, pytester):
    pytester.makeconftest(
        """
from pytest_agentbench import Action, Agent, MockBenchmark

class Quitter(Agent):
    name = "quitter"
    def act(self, observation, task, history=None):
        return Action(type="done")

class Arms(MockBenchmark):
    name = "arms"
    def agent_for(self, task):
        return Quitter() if task.domain == "clock" else None

def pytest_agentbench_register_benchmarks(registry):
    registry.register("arms", lambda config: Arms())
"""
    )
    result = run("--bench=arms", "--bench-limit", "3")
    result.assert_outcomes(passed=2, failed=1)
