"""Hostile task ids and domains: markup, quotes, terminal escapes, brackets. They are refused at
collection with one usage line (they would become node ids, which pytest-html renders as HTML),
and the text that does reach pytest-html's report (verdicts, errors) stays inert, checked in
headless Chromium."""

from __future__ import annotations

import pytest

HOSTILE = r'''
import os
from pytest_agentbench import Benchmark, Task, Observation, Verdict

class Hostile(Benchmark):
    name = "hostile"
    def list_tasks(self, limit=None):
        value = os.environ["HOSTILE_VALUE"]
        field = os.environ["HOSTILE_FIELD"]
        if os.environ.get("HOSTILE_UNVALIDATED"):
            return [Task.model_construct(**{"task_id": "t1", "domain": "d", field: value})]
        return [Task(**{"task_id": "t1", "domain": "d", field: value})]
    def list_task_data(self, limit=None):
        if os.environ.get("HOSTILE_DATA"):
            return [{"task_id": "t1", "domain": "d", os.environ["HOSTILE_FIELD"]: os.environ["HOSTILE_VALUE"]}]
        return None
    def reset(self, task):
        return Observation(window_title="w")
    def step(self, action):
        return Observation(window_title="w")
    def evaluate(self, task, final_action):
        return Verdict(score=0.0, passed=False, reason=os.environ.get("HOSTILE_REASON", ""))

def pytest_agentbench_register_benchmarks(registry):
    registry.register("hostile", lambda config: Hostile())
'''

VALUES = ['<img src=x onerror="window.pwned=1">', "<script>window.pwned=1</script>", "a&amp;b", 'x"onmouseover="y',
          "x'y", "a`b", "red\x1b[31m", "two\nlines", "a[1]", "a::b", "tab\there", "bell\x07", "x" * 201, ""]


@pytest.mark.parametrize("field", ["task_id", "domain"])
@pytest.mark.parametrize("listed", ["Task", "model_construct", "list_task_data"])
@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_a_hostile_id_or_domain_is_one_usage_line(run, pytester, monkeypatch, field, value, listed):
    pytester.makeconftest(HOSTILE)
    monkeypatch.setenv("HOSTILE_FIELD", field)
    monkeypatch.setenv("HOSTILE_VALUE", value)
    if listed == "model_construct":
        monkeypatch.setenv("HOSTILE_UNVALIDATED", "1")
    elif listed == "list_task_data":  # the shortcut past the models (a Benchmark's list_task_data)
        monkeypatch.setenv("HOSTILE_DATA", "1")
    result = run("--bench=hostile")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    errors = [line for line in result.stderr.lines if line.startswith("ERROR")]
    assert len(errors) == 1 and field in errors[0] and "benchmark 'hostile'" in errors[0], result.stderr.lines
    assert "Traceback" not in result.stderr.str()
    assert "\x1b" not in result.stderr.str()


def test_a_benchmark_listing_something_else_than_tasks(run, pytester, monkeypatch):
    pytester.makeconftest(HOSTILE.replace('return [Task(**{"task_id": "t1", "domain": "d", field: value})]',
                                          'return [{"task_id": "t1"}]'))
    monkeypatch.setenv("HOSTILE_FIELD", "instruction")
    monkeypatch.setenv("HOSTILE_VALUE", "x")
    result = run("--bench=hostile")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: benchmark 'hostile' listed a dict, not a Task*"])


def test_markup_that_reaches_pytest_html_stays_text_in_chromium(run, pytester, monkeypatch, browser):
    pytester.makeconftest(HOSTILE)
    monkeypatch.setenv("HOSTILE_FIELD", "instruction")
    monkeypatch.setenv("HOSTILE_VALUE", '<img src=x onerror="window.pwned=1">')
    monkeypatch.setenv("HOSTILE_REASON", '<img src=x onerror="window.pwned=2"><script>window.pwned=3</script>')
    result = run("--bench=hostile", "--html=report.html", "--self-contained-html")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    page = browser.new_page()
    try:
        page.goto((pytester.path / "report.html").as_uri())
        page.wait_for_selector("#results-table")
        page.wait_for_timeout(300)
        assert page.evaluate("window.pwned") is None
        assert page.locator("td.col-verdict img").count() == 0
        assert "onerror" in page.locator("td.col-verdict").first.inner_text()
        assert page.locator("td.col-testId").first.inner_text() == "bench/hostile::d::t1"
    finally:
        page.close()
