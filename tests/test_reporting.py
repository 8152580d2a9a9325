"""plugin/reporting.py, the reporting base of the four item layers, on real pytest reports."""

from __future__ import annotations

import pytest

from pytest_agentbench.plugin import reporting


def _report(when: str, outcome: str, longrepr: object = None, nodeid: str = "bench/x::t") -> pytest.TestReport:
    return pytest.TestReport(nodeid, ("plugin.py", 10, "t"), {}, outcome, longrepr, when)  # type: ignore[arg-type]


def test_attach_only_on_the_call_or_a_setup_that_did_not_pass():
    payload = {"n": 1}
    assert reporting.attach(_report("call", "passed"), "agentbench_x", payload, "bench/x::t")
    assert reporting.attach(_report("setup", "failed"), "agentbench_x", payload, "bench/x::t")
    passed_setup, teardown = _report("setup", "passed"), _report("teardown", "failed")
    assert not reporting.attach(passed_setup, "agentbench_x", payload, "bench/x::t")
    assert not reporting.attach(teardown, "agentbench_x", payload, "bench/x::t")
    assert not hasattr(passed_setup, "agentbench_x") and not hasattr(teardown, "agentbench_x")


def test_a_skip_points_at_the_given_location_without_a_line_and_an_xfail_is_left_alone():
    skipped = _report("call", "skipped", ("plugin.py", 99, "Skipped: not evaluated"))
    reporting.attach(skipped, "agentbench_x", {}, "cases/a.case.json")
    assert skipped.longrepr == ("cases/a.case.json", None, "Skipped: not evaluated")
    xfailed = _report("call", "skipped", ("plugin.py", 99, "reason"))
    xfailed.wasxfail = "reason"  # type: ignore[attr-defined]
    reporting.point_skip_at(xfailed, "elsewhere")
    assert xfailed.longrepr == ("plugin.py", 99, "reason")


def test_own_status_skips_setup_xfail_and_rerun_reports():
    assert reporting.own_status(_report("call", "failed"))
    assert not reporting.own_status(_report("setup", "failed"))
    assert not reporting.own_status(_report("call", "rerun"))
    xfailed = _report("call", "skipped")
    xfailed.wasxfail = ""  # type: ignore[attr-defined]
    assert not reporting.own_status(xfailed)


def test_payloads_keep_the_last_attempt_per_node_id_in_first_report_order():
    kept = reporting.Payloads("agentbench_x")
    assert not kept
    for nodeid, attempt in (("a", 1), ("b", 1), ("a", 2)):
        report = _report("call", "failed", nodeid=nodeid)
        report.agentbench_x = {"nodeid": nodeid, "attempt": attempt}  # type: ignore[attr-defined]
        kept.add(report)
    assert kept.add(_report("call", "passed", nodeid="c")) is None  # no payload: nothing kept
    assert kept.values() == [{"nodeid": "a", "attempt": 2}, {"nodeid": "b", "attempt": 1}]


def test_fail_session_fails_a_passing_run_and_keeps_a_worse_exit_status(pytester):
    pytester.makeconftest("""
        from pytest_agentbench.plugin import reporting

        def pytest_sessionfinish(session):
            reporting.fail_session(session)
    """)
    pytester.makepyfile("def test_ok(): pass\n")
    assert pytester.runpytest("-p", "no:agentbench", "-p", "no:benchmark").ret == pytest.ExitCode.TESTS_FAILED
    pytester.makepyfile("def test_ok(): raise KeyboardInterrupt\n")
    assert pytester.runpytest_subprocess("-p", "no:agentbench", "-p", "no:benchmark").ret == pytest.ExitCode.INTERRUPTED
