"""Benchmark items under the pytest plugins people combine with them, run for real (the dev extra
installs them; nothing is installed at test time).

pytest-rerunfailures: ``--reruns`` plays a failed item again. The run record keeps one record per
item, the final attempt's, with every attempt inside it (each with its own trajectory file); the
summary counts final outcomes; the terminal counts reruns as reruns for every item kind.

pytest-timeout: a hanging agent fails with ``task timeout`` in every way a timeout is given (option,
ini key, marker; ``signal`` and ``thread`` methods; ``timeout_func_only``), and a hanging
environment stays an infrastructure error. pytest-repeat: ``--count`` is refused with a pointer to
``--bench-trials``. allure-pytest: the instruction is the description, the task's files are attachments.
pytest-json-report: one entry per item, with the run record's outcome. Also: item locations, the
pytest-html description recipe, and the warning for a path option whose spaced value chose the
rootdir.
"""

from __future__ import annotations

import html
import json
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import NO_WAA_SETTLE, OUTCOME_BENCH, QUIET, only_run_folder, results
from test_schema import validate_run, validators  # noqa: F401 - the fixture

pytest.importorskip("pytest_rerunfailures", reason="pytest-rerunfailures is part of the dev extra")


@pytest.fixture
def run(pytester: pytest.Pytester):
    """In-process runs with every installed plugin, rerunfailures included: these tests are about
    the plugins (the suite's own ``run`` leaves rerunfailures out unless a run reruns)."""

    def _run(*args: str) -> pytest.RunResult:
        return pytester.runpytest(*args, *QUIET, *NO_WAA_SETTLE)

    return _run


FLAKY = '''
from pytest_agentbench.agents import MockAgent
from pytest_agentbench.model import Action

SEEN = {}


class FirstAttemptGivesUp(MockAgent):
    """Says done at once the first time it sees a task, then plays as the mock agent does."""

    def act(self, observation, task, history=None):
        if not history:
            SEEN[task.task_id] = SEEN.get(task.task_id, 0) + 1
        if SEEN[task.task_id] == 1:
            return Action(type="done")
        return super().act(observation, task, history)


def pytest_agentbench_register_agents(registry):
    registry.register("flaky", lambda config: FirstAttemptGivesUp())
'''


def test_reruns_keep_one_record_per_item_with_every_attempt(run, pytester, validators):  # noqa: F811
    result = run("--bench=mock", "--bench-limit", "3", "--bench-agent", "noop", "--reruns", "1")
    assert result.parseoutcomes() == {"failed": 3, "rerun": 3}
    folder = only_run_folder(pytester.path)
    checked = validate_run(folder, validators)
    records = checked["records"]
    assert len(records) == 3 and {r["status"] for r in records} == {"failed"}
    for record in records:
        first, last = record["attempts"]
        assert (first["status"], last["status"]) == ("rerun", "failed")
        assert last["trajectory"] == record["trajectory"] and first["trajectory"] != last["trajectory"]
        assert (folder / first["trajectory"]).is_file() and (folder / last["trajectory"]).is_file()
    summary = checked["summary"]
    assert (summary["num_attempts"], summary["fail_count"], summary["success_rate"]) == (3, 3, 0.0)


def test_a_rerun_that_passes_counts_as_passed(run, pytester, validators):  # noqa: F811
    pytester.makeconftest(FLAKY)
    result = run("--bench=mock", "--bench-limit", "3", "--bench-agent", "flaky", "--reruns", "2")
    assert result.parseoutcomes() == {"passed": 3, "rerun": 3}
    checked = validate_run(only_run_folder(pytester.path), validators)
    assert [[a["status"] for a in r["attempts"]] for r in checked["records"]] == [["rerun", "passed"]] * 3
    assert checked["summary"]["success_rate"] == 1.0 and checked["summary"]["fail_count"] == 0


def test_reruns_under_xdist_write_each_item_once(run_sub, pytester):
    result = run_sub("--bench=mock", "--bench-limit", "4", "--bench-agent", "noop", "--reruns", "1", "-n", "2")
    assert result.parseoutcomes() == {"failed": 4, "rerun": 4}
    records = results(only_run_folder(pytester.path))
    assert sorted(r["task_id"] for r in records) == sorted({r["task_id"] for r in records}) and len(records) == 4
    assert all(len(r["attempts"]) == 2 for r in records)


def test_audit_and_suite_items_count_reruns_as_reruns(run):
    result = run("--audit-verifier=toy", "--reruns", "1")
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 4 and outcomes["rerun"] == 4, outcomes  # four false accepts, not eight
    result = run("--bench=extradup", "--reruns", "1")
    assert "failed" not in result.parseoutcomes()


def test_a_run_without_reruns_has_no_attempts_field(run, pytester):
    run("--bench=mock", "--bench-limit", "2", "--bench-agent", "noop").assert_outcomes(failed=2)
    assert all("attempts" not in r for r in results(only_run_folder(pytester.path)))
    assert json.loads((only_run_folder(pytester.path) / "summary.json").read_text())["fail_count"] == 2


def test_a_benchmark_or_domain_named_like_a_plugins_marker_never_sets_it(run, pytester):
    """A benchmark named ``flaky`` with a domain named ``skip``: rerunfailures does not rerun its
    items and pytest does not skip them; ``-m agentbench_skip`` and ``-k skip`` select them."""
    pytester.makeconftest('''
from pytest_agentbench import Benchmark, Task, Observation, Verdict


class Named(Benchmark):
    name = "flaky"

    def list_tasks(self, limit=None):
        return [Task(task_id=f"t{i}", instruction="x", domain="skip", benchmark="flaky") for i in range(2)]

    def reset(self, task):
        return Observation()

    def step(self, action):
        return Observation()

    def evaluate(self, task, final_action):
        return Verdict(score=0.0, passed=False, reason="never")


def pytest_agentbench_register_benchmarks(registry):
    registry.register("flaky", lambda config: Named())
''')
    result = run("--bench=flaky", "--bench-agent", "noop")
    assert result.parseoutcomes() == {"failed": 2}  # not skipped, not rerun
    assert [r["status"] for r in results(only_run_folder(pytester.path))] == ["failed", "failed"]
    assert run("--bench=flaky", "-m", "agentbench_skip", "--collect-only", "-q").ret == 0
    listed = run("--bench=flaky", "-k", "skip", "--collect-only", "-q").outlines
    assert sum(line.startswith("bench/flaky::skip::") for line in listed) == 2
    markers = run("--bench=flaky", "--markers").stdout.str()
    assert "@pytest.mark.agentbench_flaky: tasks of benchmark flaky" in markers


# -- pytest-timeout: the episode's deadline --------------------------------------------------------
HANGING = '''
import json
import os
import time

import pytest

from pytest_agentbench import Benchmark, Observation, Task, Verdict
from pytest_agentbench.agents import MockAgent


class Hangs(MockAgent):
    """Plays as the mock agent, except on the clock task, where it blocks for a minute and then
    solves it (without a deadline that item would pass, late)."""

    def act(self, observation, task, history=None):
        if task.domain == "clock" and not history:
            time.sleep(60)
        return super().act(observation, task, history)


class HangingReset(Benchmark):
    name = "hangreset"

    def list_tasks(self, limit=None):
        return [Task(task_id="t1", instruction="x", domain="d")]

    def reset(self, task):
        time.sleep(60)
        return Observation()

    def step(self, action):
        return Observation()

    def evaluate(self, task, final_action):
        return Verdict(score=1.0, passed=True)


def pytest_agentbench_register_agents(registry):
    registry.register("hangs", lambda config: Hangs())


def pytest_agentbench_register_benchmarks(registry):
    registry.register("hangreset", lambda config: HangingReset())


def pytest_collection_modifyitems(config, items):
    spec = os.environ.get("MARK_TIMEOUT")  # @pytest.mark.timeout(**spec) on every item
    if spec:
        for item in items:
            item.add_marker(pytest.mark.timeout(**json.loads(spec)))
'''

TIMEOUT = pytest.importorskip("pytest_timeout", reason="pytest-timeout is part of the dev extra")

#: Every way pytest-timeout is given a timeout, in both its methods, with and without func_only.
TIMEOUT_MODES = {
    "option": (["--timeout=2"], None),
    "option-thread": (["--timeout=2", "--timeout-method=thread"], None),
    "option-thread-xdist": (["--timeout=2", "--timeout-method=thread", "-n", "2"], None),
    "ini": (["-o", "timeout=2"], None),
    "ini-func-only": (["-o", "timeout=2", "-o", "timeout_func_only=true"], None),
    "ini-func-only-thread": (["-o", "timeout=2", "-o", "timeout_func_only=true", "-o", "timeout_method=thread"],
                             None),
    "marker": ([], {"timeout": 2}),
    "marker-func-only-thread": ([], {"timeout": 2, "func_only": True, "method": "thread"}),
}


@pytest.mark.parametrize("mode", list(TIMEOUT_MODES))
def test_pytest_timeout_fails_a_hanging_agent_in_every_mode(run_sub, pytester, monkeypatch, mode):
    args, marker = TIMEOUT_MODES[mode]
    pytester.makeconftest(HANGING)
    monkeypatch.setenv("COLUMNS", "200")  # the short summary shows the whole first line
    if marker is not None:
        monkeypatch.setenv("MARK_TIMEOUT", json.dumps(marker))
    started = time.monotonic()
    result = run_sub("--bench=mock", "--bench-limit", "2", "--bench-agent", "hangs", "-p", "timeout", *args)
    assert time.monotonic() - started < 40, "the episode was not stopped at its deadline"
    assert result.parseoutcomes() == {"passed": 1, "failed": 1}, result.stdout.str()
    message = "agent error: task timeout: 2 s (pytest-timeout) ran out while the agent was acting"
    result.stdout.fnmatch_lines([f"FAILED bench/mock::clock::mock_clock_001 - Failed: {message}"])
    rows = {r["task_id"]: r for r in results(only_run_folder(pytester.path))}
    assert rows["mock_clock_001"]["status"] == "failed" and rows["mock_clock_001"]["error_type"] == "agent"
    assert "while the agent was acting" in rows["mock_clock_001"]["error"]
    assert rows["mock_chrome_001"]["status"] == "passed"


def test_bench_task_timeout_without_pytest_timeout(run_sub, pytester, monkeypatch):
    pytester.makeconftest(HANGING)
    monkeypatch.setenv("COLUMNS", "200")
    result = run_sub("--bench=mock", "--bench-limit", "2", "--bench-agent", "hangs", "-p", "no:timeout",
                     "--bench-task-timeout=1.5")
    assert result.parseoutcomes() == {"passed": 1, "failed": 1}
    result.stdout.fnmatch_lines([("FAILED bench/mock::clock::mock_clock_001 - Failed: agent error: task timeout: "
                                  "1.5 s (--bench-task-timeout) ran out while the agent was acting")])
    again = run_sub("--bench=mock", "--bench-limit", "2", "--bench-agent", "hangs", "-o", "agentbench_task_timeout=1.5")
    assert again.parseoutcomes() == {"passed": 1, "failed": 1}


def test_a_hanging_environment_is_still_an_infrastructure_error(run_sub, pytester):
    pytester.makeconftest(HANGING)
    result = run_sub("--bench=hangreset", "--bench-agent", "noop", "-p", "timeout", "--timeout=1",
                     "--timeout-method=thread")
    assert result.parseoutcomes() == {"errors": 1} or result.parseoutcomes() == {"error": 1}
    result.stdout.fnmatch_lines(["ERROR bench/hangreset::d::t1 - Failed: infrastructure error: task timeout: *"])
    (row,) = results(only_run_folder(pytester.path))
    assert row["status"] == "error" and row["error_type"] == "infrastructure"
    assert row["error"].endswith("while the environment reset")


@pytest.mark.parametrize("value", ["soon", "0", "-3"])
def test_a_bad_task_timeout_is_a_usage_error(run, value):
    result = run("--bench=mock", f"--bench-task-timeout={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--bench-task-timeout must be *seconds*"])


# -- report plugins: descriptions, attachments, locations, one entry per item ----------------------
def test_allure_gets_the_instruction_and_the_task_files(run_sub, pytester):
    pytest.importorskip("allure_pytest", reason="allure-pytest is part of the dev extra")
    result = run_sub("--bench=mock", "--bench-limit", "2", "--bench-agent", "noop", "--bench-screenshots=on",
                     "-p", "allure_pytest",
                     "--alluredir", "allure")
    assert result.parseoutcomes() == {"failed": 2}
    out = pytester.path / "allure"
    tests = [json.loads(p.read_text()) for p in out.glob("*-result.json")]
    assert len(tests) == 2
    folder = only_run_folder(pytester.path)
    records = {r["task_id"]: r for r in results(folder)}
    manifest = json.loads((folder / "manifest.json").read_text())
    instructions = {t["task_id"]: t["instruction"] for t in manifest["suites"][0]["tasks"]}
    for test in tests:
        record = records[test["name"]]
        assert test["description"] == instructions[test["name"]] != ""
        assert test["status"] == "failed" and test["statusDetails"]["message"].startswith("Failed: checker failed: ")
        attached = {a["name"]: a for a in test["attachments"]}
        assert set(attached) == {Path(record["trajectory"]).name, *(Path(s).name for s in record["screenshots"])}
        trajectory = (out / attached[Path(record["trajectory"]).name]["source"]).read_text()
        assert trajectory == (only_run_folder(pytester.path) / record["trajectory"]).read_text()
        shot = attached["final.png"]
        assert shot["type"] == "image/png" and (out / shot["source"]).read_bytes()[:4] == b"\x89PNG"


def test_allure_descriptions_of_audit_items_name_the_run(run_sub, pytester):
    pytest.importorskip("allure_pytest", reason="allure-pytest is part of the dev extra")
    run_sub("--audit-verifier=toy", "-p", "allure_pytest", "--alluredir", "allure")
    descriptions = [json.loads(p.read_text()).get("description") or "" for p in (pytester.path / "allure").glob(
        "*-result.json")]
    assert descriptions and all(d.startswith("Verifier audit, task ") for d in descriptions)
    assert not any("The function of every" in d for d in descriptions)


def test_json_report_has_one_entry_per_item(run_sub, pytester):
    pytest.importorskip("pytest_jsonreport", reason="pytest-json-report is part of the dev extra")
    pytester.makeconftest(OUTCOME_BENCH)
    result = run_sub("--bench=outcomes", "--bench-agent", "outcome-agent", "-p", "pytest_jsonreport", "--json-report",
                     "--json-report-file=report.json")
    result.assert_outcomes(passed=1, failed=4, skipped=1, errors=2)
    report = json.loads((pytester.path / "report.json").read_text())
    outcomes = {t["nodeid"].rsplit("::", 1)[1]: t["outcome"] for t in report["tests"]}
    records = {r["task_id"]: r["status"] for r in results(only_run_folder(pytester.path))}
    assert outcomes == records == {
        "pass": "passed", "fail": "failed", "partial": "failed", "unevaluated": "skipped", "infra": "error",
        "checker_crash": "error", "agent_crash": "failed", "agent_error": "failed"}
    assert report["summary"]["total"] == 8


def test_repeat_count_is_refused_with_a_pointer_to_trials(run_sub):
    pytest.importorskip("pytest_repeat", reason="pytest-repeat is part of the dev extra")
    result = run_sub("--bench=mock", "--bench-limit", "2", "-p", "repeat", "--count", "3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--count 3 does not repeat benchmark items; use --bench-trials 3" in result.stderr.str()
    assert run_sub("--bench=mock", "--bench-limit", "2", "-p", "repeat", "--count", "1").ret == 0


def test_items_are_located_at_their_benchmark_source(run, pytester):
    """pytest-sugar and CI annotations show ``location``: the conftest line that registered the
    benchmark, not ``.:1`` (a built-in's items: tests/test_report_plugins.py)."""
    pytester.makeconftest(OUTCOME_BENCH)
    run("--bench=outcomes", "--bench-agent", "outcome-agent", "--junitxml=out.xml", "-o", "junit_family=xunit1")
    cases = ET.parse(pytester.path / "out.xml").getroot().findall(".//testcase")
    written = (pytester.path / "conftest.py").read_text().splitlines()
    line = next(n for n, text in enumerate(written) if 'registry.register("outcomes"' in text)  # 0-based
    assert {(c.get("file"), c.get("line")) for c in cases} == {("conftest.py", str(line))}


# -- pytest's rootdir and a path option given with a space ----------------------------------------
def test_a_path_option_given_with_a_space_that_chose_the_rootdir_is_warned_about(run, pytester):
    """pytest picks the rootdir and ini file before plugins load, reading ``--bench-agent-script /abs``'s
    value as a test path: the run says so and gives the ``--opt=/abs`` spelling."""
    other = pytester.mkdir("other")
    (other / "pytest.ini").write_text("[pytest]\n")
    script = other / "script.json"
    script.write_text(json.dumps({"*": [{"type": "click", "target_id": "4"}]}))
    spaced = run("--bench=mock", "--bench-limit", "1", "--bench-agent", "scripted", "--bench-agent-script", str(script))
    spaced.assert_outcomes(passed=1)
    assert f"rootdir: {other}" in spaced.stdout.str()
    spaced.stdout.fnmatch_lines([(f"*PytestConfigWarning: pytest chose rootdir {other} and ini file {other}*pytest.ini "
                                  f"from --bench-agent-script {script}: *Write --bench-agent-script={script}")])
    joined = run("--bench=mock", "--bench-limit", "1", "--bench-agent", "scripted", f"--bench-agent-script={script}")
    joined.assert_outcomes(passed=1)
    assert "PytestConfigWarning" not in joined.stdout.str() and f"rootdir: {other}" not in joined.stdout.str()


def test_waa_items_are_located_at_their_task_file(run, pytester):
    from conftest import notepad_project

    args = notepad_project(pytester.path, 2)
    pytester.makeconftest('''
import json

def pytest_collection_modifyitems(config, items):
    with open("locations.json", "w") as out:
        json.dump({item.name: list(item.location) for item in items}, out)
    items[:] = []
''')
    result = run(*args, "--waa-evaluate-url", "http://127.0.0.1:9")  # nothing is scored: items are deselected
    assert (pytester.path / "locations.json").exists(), result.stdout.str() + result.stderr.str()
    locations = json.loads((pytester.path / "locations.json").read_text())
    assert locations == {f"t{n}": [f"examples/notepad/t{n}.json", 0, f"bench/waa::notepad::t{n}"] for n in (1, 2)}


def test_pytest_html_description_recipe_shows_the_instruction(run, pytester):
    """pytest-html's documented Description column reads ``item.function.__doc__``."""
    pytester.makeconftest('''
import pytest

def pytest_html_results_table_header(cells):
    cells.insert(2, "<th>Description</th>")

def pytest_html_results_table_row(report, cells):
    cells.insert(2, f"<td>{report.description}</td>")

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.description = str(item.function.__doc__)
''')
    run("--bench=mock", "--bench-limit", "2", "--html=report.html")
    page = (pytester.path / "report.html").read_text()
    folder = only_run_folder(pytester.path)
    instructions = [t["instruction"] for t in json.loads((folder / "manifest.json").read_text())["suites"][0]["tasks"]]
    assert len(instructions) == 2 and all(f"<td>{text}</td>" in html.unescape(page) for text in instructions)
    assert "The function of every benchmark item" not in page
