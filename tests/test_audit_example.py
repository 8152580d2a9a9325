"""The ready-to-copy audit adapter in ``conftest_examples/own_audit/`` works as its README says.

Each test copies the example's files into a fresh pytester folder, exactly as a user would, and runs
real pytest sessions against them: by ``module:Attr`` (no conftest.py at all), by the name the
example's conftest.py registers, under ``-n 2``, and with the checker's loophole fixed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "conftest_examples" / "own_audit"
ADAPTER = EXAMPLE / "counter_audit.py"
CONFTEST = EXAMPLE / "conftest.py"
README = EXAMPLE / "README.md"

OPERATORS = ("claim-only", "omit", "partial", "wrong-value", "extra", "extra-ni")
# The class of every task x operator run, as the README explains them.
EXPECTED = {
    "add-to-cart": {"claim-only": "KILLED", "omit": "KILLED", "partial": "KILLED", "wrong-value": "KILLED",
                    "extra": "FALSE-ACCEPT", "extra-ni": "FALSE-ACCEPT"},
    "change-quantity": {"claim-only": "KILLED", "omit": "KILLED", "partial": "REFUSED", "wrong-value": "KILLED",
                        "extra": "EQUIVALENT", "extra-ni": "KILLED"},
    "remove-soap": {"claim-only": "KILLED", "omit": "KILLED", "partial": "REFUSED", "wrong-value": "REFUSED",
                    "extra": "EQUIVALENT", "extra-ni": "REFUSED"},
}
FALSE_ACCEPTS = ["audit/counter::add-to-cart::extra", "audit/counter::add-to-cart::extra-ni"]

# The loophole and its fix, as README.md shows them.
LOOPHOLE = '    return {line["sku"]: line["qty"] for line in app.new_lines()} == {"apple": 3, "bread": 1}\n'
FIXED = '    return sorted((line["sku"], line["qty"]) for line in app.new_lines()) == [("apple", 3), ("bread", 1)]\n'


def readme_report() -> list[str]:
    """The report lines README.md shows for the unfixed checker, from the first one to the legend."""
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    start = lines.index("Verifier audit: counter, 3 task(s), 3 audited, 0s")
    end = lines.index("equivalent: the edit left the end state unchanged, so the pass is correct.", start)
    return lines[start:end + 1]


def assert_contiguous(output: list[str], expected: list[str]) -> None:
    for i in range(len(output) - len(expected) + 1):
        if output[i:i + len(expected)] == expected:
            return
    pytest.fail("the report is not in the output:\n" + "\n".join(expected) + "\n--- output ---\n" + "\n".join(output))


def statuses(result: pytest.RunResult) -> dict[str, dict[str, str]]:
    """``{task: {operator: status word}}`` from a ``-v`` run."""
    out: dict[str, dict[str, str]] = {}
    for line in result.stdout.lines:
        match = re.match(r"(?:\[gw\d+\] \[ *\d+%\] )?(?P<word>[A-Z-]+) audit/counter::(?P<task>[\w-]+)::(?P<op>[\w-]+)"
                         r"|audit/counter::(?P<task2>[\w-]+)::(?P<op2>[\w-]+) (?P<word2>[A-Z-]+)", line)
        if match:
            task = match.group("task") or match.group("task2")
            op = match.group("op") or match.group("op2")
            out.setdefault(task, {})[op] = match.group("word") or match.group("word2")
    return out


def copy_example(pytester: pytest.Pytester, *, conftest: bool, fixed: bool = False) -> None:
    source = ADAPTER.read_text(encoding="utf-8")
    assert source.count(LOOPHOLE) == 1, "the loophole line changed; update the README and this test"
    if fixed:
        source = source.replace(LOOPHOLE, FIXED)
    (pytester.path / "counter_audit.py").write_text(source, encoding="utf-8")
    if conftest:
        (pytester.path / "conftest.py").write_text(CONFTEST.read_text(encoding="utf-8"), encoding="utf-8")


def test_readme_shows_the_loophole_and_the_fix():
    text = README.read_text(encoding="utf-8")
    assert LOOPHOLE.strip() in text and FIXED.strip() in text
    assert "pytest --audit-verifier=counter_audit:CounterAdapter" in text
    assert "pytest --audit-verifier=counter" in text


def test_module_attr_without_conftest(pytester, run):
    copy_example(pytester, conftest=False)
    result = run("--audit-verifier=counter_audit:CounterAdapter", "-v")
    result.assert_outcomes(failed=2, passed=12, skipped=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert statuses(result) == EXPECTED
    assert_contiguous(result.stdout.lines, readme_report())
    result.stdout.fnmatch_lines([f"FALSE-ACCEPT {node} - *counter.CartLine +1" for node in FALSE_ACCEPTS])


def test_registered_name(pytester, run):
    copy_example(pytester, conftest=True)
    result = run("--audit-verifier=counter", "-rs")
    result.assert_outcomes(failed=2, passed=12, skipped=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert_contiguous(result.stdout.lines, readme_report())
    result.stdout.fnmatch_lines([
        "*audit/counter::change-quantity::partial: refused: NO_REPEATED_WRITE",
        "*audit/counter::remove-soap::partial: refused: NO_REPEATED_WRITE",
        "*audit/counter::remove-soap::wrong-value: refused: NO_CHANGEABLE_VALUE",
        "*audit/counter::remove-soap::extra-ni: refused: ALL_REPEATS_IDEMPOTENT",
    ])


def test_both_ways_collect_the_same_items(pytester, run):
    copy_example(pytester, conftest=True)
    by_name = run("--audit-verifier=counter", "--collect-only", "-q")
    by_module = run("--audit-verifier=counter_audit:CounterAdapter", "--collect-only", "-q")
    ids = [line for line in by_name.stdout.lines if line.startswith("audit/")]
    assert ids == [f"audit/counter::{t}::{op}" for t in EXPECTED for op in OPERATORS]
    assert [line for line in by_module.stdout.lines if line.startswith("audit/")] == ids


def test_fixed_checker_passes_the_build(pytester, run):
    copy_example(pytester, conftest=True, fixed=True)
    result = run("--audit-verifier=counter", "-v")
    result.assert_outcomes(passed=14, skipped=4)
    assert result.ret == pytest.ExitCode.OK
    fixed = {task: dict(ops) for task, ops in EXPECTED.items()}
    fixed["add-to-cart"].update({"extra": "KILLED", "extra-ni": "KILLED"})
    assert statuses(result) == fixed
    result.stdout.fnmatch_lines(["No confirmed false accepts.",
                                 "  extra        frame             3       1             0           2*"])


def test_selection_and_report_file(pytester, run):
    copy_example(pytester, conftest=True)
    result = run("--audit-verifier=counter", "--audit-operators", "extra,omit", "-k", "add-to-cart",
                 "--audit-out", "out/report.json")
    result.assert_outcomes(failed=1, passed=1, deselected=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    report = json.loads((pytester.path / "out" / "report.json").read_text())
    assert report["summary"]["false_accepts"] == 1
    # Items and rows follow the order --audit-operators gives.
    assert [(r["operator"], r["run_class"]) for t in report["tasks"] for r in t["runs"]] == [
        ("extra", "false-accept"), ("omit", "killed")]
    text = json.dumps(report)
    for value in ("apple", "bread", "counter-token"):  # record values never reach the report
        assert value not in text


def test_unknown_task_id_is_a_usage_error(pytester, run):
    copy_example(pytester, conftest=True)
    result = run("--audit-verifier=counter", "--audit-tasks", "add-to-cart,add-to-kart")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--audit-tasks 'add-to-kart': no such task in 'counter'*"])


def test_under_xdist(pytester, run_sub):
    copy_example(pytester, conftest=True)
    result = run_sub("--audit-verifier=counter", "-n", "2", "-v")
    result.assert_outcomes(failed=2, passed=12, skipped=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert statuses(result) == EXPECTED
    assert_contiguous(result.stdout.lines, readme_report())


def test_last_failed_reruns_only_the_false_accepts(pytester, run):
    copy_example(pytester, conftest=True)
    run("--audit-verifier=counter").assert_outcomes(failed=2, passed=12, skipped=4)
    result = run("--audit-verifier=counter", "--lf", "-v")
    result.assert_outcomes(failed=2, deselected=16)
    assert statuses(result) == {"add-to-cart": {"extra": "FALSE-ACCEPT", "extra-ni": "FALSE-ACCEPT"}}
