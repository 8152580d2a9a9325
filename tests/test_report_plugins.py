"""Every item kind shown alike by the report plugins people use, each run for real (the dev extra
installs them): benchmark tasks, verifier-audit runs and trajectory cases.

allure-pytest: a setup error (an item that could not be judged) is ``broken``, as an ordinary
test's fixture error is; each kind's files are attachments. pytest-html: Score / Steps / Verdict
columns and file links on every kind's row, the verdict naming the layer's outcome (a false
accept says so where pytest-html's Result says only "Failed"). pytest-github-actions-annotate-
failures: setup errors are annotated as call failures are. Locations never point into this
plugin's installed source. pytest-repeat: ``--count`` is refused for every kind.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import OUTCOME_BENCH
from test_audit_plugin import BROKEN_CONFTEST

CASES = Path(__file__).parent / "data" / "trajectory_cases"


def copy_cases(root: Path, *names: str) -> Path:
    """The reference's example cases ``names`` (with their traces) under ``root/cases``."""
    folder = root / "cases"
    folder.mkdir(exist_ok=True)
    for name in names:
        for path in CASES.glob(f"{name}.*.json"):
            shutil.copy(path, folder / path.name)
    return folder


def allure_results(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in folder.glob("*-result.json")]


def by_name(tests: list[dict]) -> dict[str, dict]:
    named = {test["name"]: test for test in tests}
    assert len(named) == len(tests)
    return named


# -- allure-pytest ----------------------------------------------------------------------------------
@pytest.fixture
def allure_run(run_sub, pytester):
    pytest.importorskip("allure_pytest", reason="allure-pytest is part of the dev extra")

    def _run(out: str, *args: str) -> list[dict]:
        run_sub(*args, "-p", "allure_pytest", "--alluredir", out)
        return allure_results(pytester.path / out)

    return _run


def test_allure_marks_setup_errors_of_every_kind_broken(allure_run, pytester):
    pytester.makeconftest(OUTCOME_BENCH)
    bench = by_name(allure_run("bench", "--bench=outcomes", "--bench-agent", "outcome-agent", "-k", "infra or fail"))
    assert {name: test["status"] for name, test in bench.items()} == {"infra": "broken", "fail": "failed"}
    assert bench["infra"]["statusDetails"]["message"].startswith("Failed: infrastructure error: ")
    pytester.makeconftest(BROKEN_CONFTEST)
    audit = allure_run("audit", "--audit-verifier=broken", "--audit-tasks", "split-bill,no-ref",
                       "--audit-operators", "extra")
    assert sorted(test["status"] for test in audit) == ["broken", "failed"]  # no-ref's error, split-bill's false accept
    copy_cases(pytester.path, "case2_wrong_args", "case5_missing_trace")
    cases = by_name(allure_run("cases", "cases"))
    assert {name: test["status"] for name, test in cases.items()} == {
        "case2_wrong_args": "failed", "case5_missing_trace": "broken"}


def test_allure_attaches_the_files_of_cases_and_the_run_of_audits(allure_run, pytester):
    folder = copy_cases(pytester.path, "case1_pass", "case2_wrong_args")
    cases = by_name(allure_run("cases", "cases"))
    out = pytester.path / "cases"
    for name in ("case1_pass", "case2_wrong_args"):
        attached = {a["name"]: a for a in cases[name]["attachments"]}
        assert set(attached) == {f"{name}.case.json", f"{name}.trace.json"}
        for file, attachment in attached.items():
            assert attachment["type"] == "application/json"
            assert (out / attachment["source"]).read_text() == (folder / file).read_text()
    audit = allure_run("audit", "--audit-verifier=toy", "--audit-tasks", "queue-songs", "--audit-operators", "extra")
    (test,) = audit
    (attachment,) = test["attachments"]
    run = json.loads((pytester.path / "audit" / attachment["source"]).read_text())
    assert (attachment["name"], run["run_class"], run["summary"]) == ("audit-run.json", "false-accept",
                                                                      "toy.QueueEntry +1")


# -- pytest-html ------------------------------------------------------------------------------------
def html_rows(page: str) -> dict[str, dict[str, str]]:
    """The report's rows by test id: each column's text and the links' targets."""
    data = json.loads(html.unescape(re.search(r'data-jsonblob="([^"]*)"', page).group(1)))
    rows = {}
    for tests in data["tests"].values():
        for test in tests:
            cells = {m.group(1): re.sub(r"<[^>]+>", "", m.group(2))
                     for m in re.finditer(r'<td class="col-(\w+)"[^>]*>(.*?)</td>', "".join(test["resultsTableRow"]))}
            cells["links"] = " ".join(e["content"] for e in test["extras"])
            rows[test["testId"]] = cells
    return rows


def test_html_columns_and_links_for_audit_items(run, pytester):
    result = run("--audit-verifier=toy", "--audit-tasks", "queue-songs,split-bill", "--audit-operators",
                 "extra,omit", "--audit-out", "out/audit.json", "--html=report/report.html")
    result.assert_outcomes(passed=2, failed=2)
    rows = html_rows((pytester.path / "report" / "report.html").read_text())
    accept = rows["audit/toy::queue-songs::extra"]
    assert (accept["result"], accept["score"], accept["steps"]) == ("Failed", "", "")
    assert accept["verdict"] == "FALSE-ACCEPT: toy.QueueEntry +1"
    assert accept["links"] == "../out/audit.json"
    assert rows["audit/toy::queue-songs::omit"]["verdict"].startswith("KILLED")


def test_html_columns_and_links_for_case_items(run, pytester):
    copy_cases(pytester.path, "case1_pass", "case2_wrong_args", "case5_missing_trace")
    run("cases", "--html=report.html").assert_outcomes(passed=1, failed=1, errors=1)
    rows = html_rows((pytester.path / "report.html").read_text())
    passed = rows["cases/case1_pass.case.json::case1_pass"]
    failed = rows["cases/case2_wrong_args.case.json::case2_wrong_args"]
    assert (passed["score"], passed["verdict"]) == ("1.000", "PASSED")
    assert passed["links"] == "cases/case1_pass.case.json cases/case1_pass.trace.json"
    steps = len(json.loads((CASES / "case2_wrong_args.trace.json").read_text())["steps"])
    assert (failed["score"], failed["steps"]) == ("0.938", str(steps))
    assert failed["verdict"] == "FAILED: Argument Correctness 0.750"
    error = rows["cases/case5_missing_trace.case.json::case5_missing_trace::setup"]
    assert error["verdict"].startswith("ERROR: cases/case5_missing_trace.case.json: no trace for this case")


def test_html_report_of_plain_tests_has_no_agentbench_columns(run, pytester):
    pytester.makepyfile(test_plain="def test_plain(): pass")
    run("--html=report.html").assert_outcomes(passed=1)
    page = (pytester.path / "report.html").read_text()
    assert "col-verdict" not in page and 'data-column-type="score"' not in page


# -- GitHub annotations (pytest-github-actions-annotate-failures) -----------------------------------
@pytest.fixture
def github(run_sub, monkeypatch):
    pytest.importorskip("pytest_github_actions_annotate_failures", reason="part of the dev extra")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)

    def _run(*args: str) -> list[str]:
        result = run_sub(*args, "-n", "0")  # the annotator loads by its entry point
        return [line for line in result.stderr.lines if line.startswith("::error ")]

    return _run


def test_setup_errors_of_every_kind_are_annotated_like_failures(github, pytester):
    pytester.makeconftest(OUTCOME_BENCH)
    bench = github("--bench=outcomes", "--bench-agent", "outcome-agent", "-k", "infra or fail")
    line = OUTCOME_BENCH.splitlines().index('    registry.register("outcomes", lambda config: OutcomeBench())')
    assert [entry.split("::", 2)[1] for entry in bench] == [f"error file=conftest.py,line={line}"] * 2
    (infra,) = [line for line in bench if "infra" in line]
    assert infra.endswith("::infra%0A%0AFailed: infrastructure error: environment reset failed: ConnectionError: "
                          "VM unreachable")
    pytester.makeconftest(BROKEN_CONFTEST)
    audit = github("--audit-verifier=broken", "--audit-tasks", "no-ref", "--audit-operators", "extra")
    assert len(audit) == 1 and "not audited: the reference run raised RuntimeError: the solution crashed" in audit[0]
    copy_cases(pytester.path, "case5_missing_trace")
    (case,) = github("cases")
    assert case.startswith("::error file=cases/case5_missing_trace.case.json,line=1::case5_missing_trace%0A%0A")


def test_no_annotations_outside_github_actions(github, monkeypatch, pytester):
    monkeypatch.setenv("GITHUB_ACTIONS", "false")
    copy_cases(pytester.path, "case5_missing_trace")
    assert github("cases") == []


# -- locations ----------------------------------------------------------------------------------------
def test_builtin_items_are_located_at_their_node_not_the_installed_source(run, pytester):
    """pytest's location is what JUnit's ``file``/``line``, CI annotations and ``-vv`` show: a
    built-in benchmark's or audit adapter's item names its node's path at line 0, never a file
    of this plugin's installed package (which no one reading the report can open)."""
    run("--bench=mock", "--bench-limit", "1", "--junitxml=mock.xml", "-o", "junit_family=xunit1")
    (case,) = ET.parse(pytester.path / "mock.xml").getroot().findall(".//testcase")
    assert (case.get("file"), case.get("line")) == ("bench/mock", "0")
    run("--audit-verifier=toy", "--audit-tasks", "queue-songs", "--audit-operators", "extra",
        "--junitxml=audit.xml", "-o", "junit_family=xunit1")
    (case,) = ET.parse(pytester.path / "audit.xml").getroot().findall(".//testcase")
    assert (case.get("file"), case.get("line")) == ("audit/toy", "0")
    pytester.makeconftest(BROKEN_CONFTEST)  # an adapter of the user's: located where it is registered
    run("--audit-verifier=broken", "--audit-tasks", "split-bill", "--audit-operators", "extra",
        "--junitxml=own.xml", "-o", "junit_family=xunit1")
    (case,) = ET.parse(pytester.path / "own.xml").getroot().findall(".//testcase")
    written = (pytester.path / "conftest.py").read_text().splitlines()
    line = next(n for n, text in enumerate(written) if 'registry.register("broken"' in text)  # 0-based
    assert (case.get("file"), case.get("line")) == ("conftest.py", str(line))
    run("--bench=extradup", "-k", "record and control", "--junitxml=extradup.xml", "-o", "junit_family=xunit1")
    cells = ET.parse(pytester.path / "extradup.xml").getroot().findall(".//testcase")
    assert cells and {(c.get("file"), c.get("line")) for c in cells} == {("bench/extradup", "0")}
    verbose = run("--bench=mock", "--bench-limit", "1", "-vv")
    assert "site-packages" not in verbose.stdout.str() and "pytest_agentbench/benches" not in verbose.stdout.str()


# -- pytest-repeat ------------------------------------------------------------------------------------
def test_repeat_count_is_refused_for_audit_and_case_items(run_sub, pytester):
    pytest.importorskip("pytest_repeat", reason="pytest-repeat is part of the dev extra")
    audit = run_sub("--audit-verifier=toy", "-p", "repeat", "--count", "3")
    assert audit.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in audit.stderr.lines if line.startswith("ERROR:")] == [
        "ERROR: --count 3 does not repeat verifier-audit items; each task is audited once per run; run without --count"]
    copy_cases(pytester.path, "case1_pass")
    pytester.makepyfile(test_plain="def test_plain(): pass")
    cases = run_sub("-p", "repeat", "--count", "3")
    assert cases.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in cases.stderr.lines if line.startswith("ERROR:")] == [(
        "ERROR: --count 3 does not repeat trajectory cases (*.case.json); a case scores a saved trace, the same "
        "each time; deselect them to repeat the other tests (-m 'not trajectory')")]
    repeated = run_sub("-p", "repeat", "--count", "3", "-m", "not trajectory")
    repeated.assert_outcomes(passed=3)
    spread = run_sub("-p", "repeat", "--count", "3", "-n", "2")  # the controller collects nothing itself
    assert spread.ret == pytest.ExitCode.USAGE_ERROR
    assert "ERROR: --count 3 does not repeat trajectory cases (*.case.json); " in spread.stdout.str()
    assert "passed" not in spread.stdout.lines[-1]
    assert run_sub("-p", "repeat", "--count", "1").ret == 0
