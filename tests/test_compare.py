"""``--bench-compare RUN``, ``--bench-fail-on-regression`` and ``agentbench-view A B``: hand-computed tables
through the library, then real runs through pytester."""

from __future__ import annotations

import json
from math import comb

import pytest
from conftest import results

from pytest_agentbench import stats
from pytest_agentbench.compare import compare_records, compared, grep_line, load_run
from pytest_agentbench.record.viewer import main as view_main


def rec(task: str, success: bool | None, trial: int = 1, domain: str = "d") -> dict:
    """A results.jsonl record; ``success=None`` is an infrastructure error (not an outcome)."""
    return {"benchmark": "mock", "domain": domain, "task_id": task, "trial": trial, "outcome": success is not None,
            "success": bool(success), "score": 1.0 if success else 0.0,
            "error_type": "infrastructure" if success is None else None}


def paired_runs():
    # 10 paired tasks: 3 pass/pass, 5 pass->fail, 1 fail->pass, 1 fail/fail; plus one task only in
    # the new run, one only in the old, and one whose new trial was an infrastructure error.
    table = ([("pp", True, True)] * 3 + [("pf", True, False)] * 5 + [("fp", False, True)] + [("ff", False, False)])
    before, after = [], []
    for i, (kind, old, new) in enumerate(table):
        before.append(rec(f"{kind}{i}", old))
        after.append(rec(f"{kind}{i}", new))
    after.append(rec("only_new", True))
    before.append(rec("only_old", False))
    before.append(rec("broken_now", True))
    after.append(rec("broken_now", None))
    return before, after


def test_one_trial_comparison_matches_the_hand_computation():
    before, after = paired_runs()
    out = compare_records(before, after, before_name="A", after_name="B")
    assert out["counts"] == {"regressed": 5, "improved": 1, "unchanged": 4, "new": 1, "gone": 2}
    assert out["paired_tasks"] == 10
    assert out["before_rate"] == pytest.approx(0.8) and out["after_rate"] == pytest.approx(0.4)
    assert out["difference"] == pytest.approx(-0.4)
    # Exact McNemar, b = 5, c = 1: 2 * (C(6,0) + C(6,1)) / 2^6 = 14/64.
    assert out["method"] == "mcnemar-exact"
    assert out["p_value"] == pytest.approx(14 / 64)
    assert out["ci95"] == pytest.approx(list(stats.newcombe_paired_interval(3, 5, 1, 1)))
    assert out["ci95"][0] < -0.4 < out["ci95"][1]
    assert out["verdict"] == "no significant change" and out["significant"] is False
    rows = {r["task_id"]: r["status"] for r in out["tasks"]}
    assert rows["only_new"] == "new" and rows["only_old"] == "gone" and rows["broken_now"] == "gone"
    assert grep_line(out) == ("agentbench-compare: verdict=no-significant-change diff=-40.0pts "
                              f"ci95=[{out['ci95'][0] * 100:+.1f},{out['ci95'][1] * 100:+.1f}]pts p=0.2188 alpha=0.05 "
                              "method=mcnemar-exact paired=10 regressed=5 improved=1 unchanged=4 new=1 gone=2 "
                              "baseline=A")


def test_a_larger_regression_is_significant_and_alpha_moves_the_line():
    before = [rec(f"t{i}", True) for i in range(20)]
    after = [rec(f"t{i}", i >= 8) for i in range(20)]  # 8 regressions, no improvement
    out = compare_records(before, after)
    assert out["p_value"] == pytest.approx(2 * comb(8, 0) / 2 ** 8)
    assert out["verdict"] == "regression"
    assert compare_records(before, after, alpha=0.001)["verdict"] == "no significant change"
    assert compare_records(after, before)["verdict"] == "improvement"


def test_trials_use_the_sign_test_over_tasks():
    before = [rec(f"t{i}", True, trial) for i in range(30) for trial in (1, 2, 3)]
    after = [rec(f"t{i}", not (i < 15 and trial > 1), trial) for i in range(30) for trial in (1, 2, 3)]
    out = compare_records(before, after)
    assert out["method"] == "sign-test-tasks"
    assert out["difference"] == pytest.approx(60 / 90 - 1)
    assert out["p_value"] == pytest.approx(2 / 2 ** 15)  # 15 tasks fell, none rose
    assert out["ci95"][1] < 0 and out["p_value"] < 0.01 and out["verdict"] == "regression"
    assert out["counts"]["regressed"] == 15 and out["counts"]["unchanged"] == 15
    same = compare_records(before, before)
    assert same["difference"] == 0 and same["p_value"] == 1.0 and same["verdict"] == "no significant change"


def test_load_run_reads_a_folder_or_a_file(tmp_path):
    folder = tmp_path / "run1"
    folder.mkdir()
    (folder / "results.jsonl").write_text(json.dumps(rec("a", True)) + "\n")
    assert load_run(folder) == ("run1", [compared(rec("a", True))])
    assert load_run(folder / "results.jsonl")[0] == "run1"
    with pytest.raises(ValueError, match="does not exist"):
        load_run(tmp_path / "missing")
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    with pytest.raises(ValueError, match="line 1 is not JSON"):
        load_run(tmp_path / "bad.jsonl")


def test_a_compared_run_keeps_only_what_the_comparison_reads(tmp_path):
    """A reference run is read keeping a few fields per record (a run of 20,000 tasks held whole
    was most of a comparison's memory); the comparison is the same as of the whole records."""
    def full(task: str, success: bool | None, trial: int = 1) -> dict:
        record = rec(task, success, trial)
        record.update(steps=[{"action": {"type": "click", "x": i}} for i in range(50)], reason=f"why {task}",
                      criteria=[{"name": "ok", "passed": True, "detail": "x" * 500},
                                {"name": "form", "passed": False, "detail": f"{task} not saved"},
                                {"name": "later", "passed": False, "detail": "y"}], final_action={"type": "done"})
        if success is None:
            record["error"] = "VM gone"
        return record

    before = [full("a", True), full("b", False), full("c", None), full("d", False, 1), full("d", True, 2)]
    after = [full("a", False), full("b", True), full("c", True), full("d", True, 1), full("d", True, 2)]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in before))
    _, kept = load_run(tmp_path / "results.jsonl")
    assert all("steps" not in r and "final_action" not in r and len(r.get("criteria", ())) <= 1 for r in kept)
    assert compare_records(kept, after) == compare_records(before, after)
    assert compare_records(kept, after)["tasks"][0]["after"]["reason"] == "form: a not saved"


def test_tasks_only_in_a_bigger_reference_run_are_counted_beyond_the_first_rows(monkeypatch):
    """Compared with a much bigger reference run, the tasks it has and this run lacks are gone: the
    first GONE_ROWS of the tasks absent here get a row each, the others are only counted, so the
    comparison holds this run's tasks (read as a stream, never the reference whole). Every figure
    is the one of the comparison that lists them all."""
    import pytest_agentbench.compare as compare

    before, after = paired_runs()
    # Absent here: five gone tasks (one with two trials, apart), one never an outcome (not gone).
    before += [rec("gone0", True), rec("gone1", False), rec("errors_only", None), rec("gone2", True),
               rec("gone3", False, 1), rec("gone4", True), rec("gone3", True, 2)]
    whole = compare_records(before, after)
    assert whole["counts"]["gone"] == 7 and whole["unlisted_gone"] == 0
    monkeypatch.setattr(compare, "GONE_ROWS", 3)  # only_old, gone0 and gone1 get their rows
    out = compare_records(iter(before), after)
    assert {k: v for k, v in out.items() if k not in ("tasks", "unlisted_gone")} == \
        {k: v for k, v in whole.items() if k not in ("tasks", "unlisted_gone")}
    assert out["unlisted_gone"] == 3  # gone2, gone3 (two trials, one task) and gone4
    listed = {"only_old", "gone0", "gone1"}
    assert out["tasks"] == [r for r in whole["tasks"] if r["status"] != "gone" or r["after"] is not None
                            or r["task_id"] in listed]
    assert [r["task_id"] for r in out["tasks"] if r["status"] == "gone"] == ["only_old", "broken_now", "gone0",
                                                                              "gone1"]
    from pytest_agentbench.record.compare_view import render

    page = render(out)
    assert "3 more gone task(s), in before but not in after, are counted above without a row" in page
    assert "7 gone" in page and "more gone task" not in render(whole)


# -- through pytest ------------------------------------------------------------------------------
MOCK = ("--bench=mock", "--bench-limit", "6")


def test_compare_prints_the_block_and_writes_comparison_json(run, pytester):
    run(*MOCK, "--bench-run-name", "good").assert_outcomes(passed=6)
    result = run(*MOCK, "--bench-run-name", "same", "--bench-compare", "benchmark_results/good")
    assert result.ret == 0
    text = result.stdout.str()
    assert "Compared with good (6 paired task(s))" in text
    # All six pass on both sides: no discordant task, p = 1; Newcombe's limits are the Wilson
    # half-width of 6 of 6, z^2 / (6 + z^2) = 0.390, on either side of 0.
    assert ("agentbench-compare: verdict=no-significant-change diff=+0.0pts ci95=[-39.0,+39.0]pts p=1 alpha=0.05 "
            "method=mcnemar-exact paired=6 regressed=0 improved=0 unchanged=6 new=0 gone=0 baseline=good") in text
    out = json.loads((pytester.path / "benchmark_results" / "same" / "comparison.json").read_text())
    assert out["counts"]["unchanged"] == 6 and out["before_run"] == "good" and out["after_run"] == "same"


def test_fail_on_regression_gates_on_significant_regressions_only(run, pytester):
    run(*MOCK, "--bench-run-name", "good").assert_outcomes(passed=6)
    run(*MOCK, "--bench-agent", "noop", "--bench-run-name", "bad").assert_outcomes(failed=6)
    # --bench-baseline makes the known failures xfail, so the items alone would pass the run: the gate
    # is what fails it (6 of 6 regressed: exact McNemar p = 2/64).
    gated = run(*MOCK, "--bench-agent", "noop", "--bench-baseline", "benchmark_results/bad",
                "--bench-run-name", "gated",
                "--bench-compare", "benchmark_results/good", "--bench-fail-on-regression")
    gated.assert_outcomes(xfailed=6)
    assert gated.ret == pytest.ExitCode.TESTS_FAILED
    assert "ERROR: significant regression against good: success rate -100.0 points, p = 0.03125" in gated.stdout.str()
    lenient = run(*MOCK, "--bench-agent", "noop", "--bench-baseline", "benchmark_results/bad",
                  "--bench-run-name", "lenient",
                  "--bench-compare", "benchmark_results/good", "--bench-fail-on-regression",
                  "--bench-regression-alpha", "0.01")
    assert lenient.ret == 0
    assert "verdict=no-significant-change" in lenient.stdout.str()
    ungated = run(*MOCK, "--bench-agent", "noop", "--bench-baseline", "benchmark_results/bad",
                  "--bench-run-name", "ungated",
                  "--bench-compare", "benchmark_results/good")
    assert ungated.ret == 0 and "verdict=regression" in ungated.stdout.str()
    assert len(results(pytester.path / "benchmark_results" / "gated")) == 6  # results stay written


def test_a_malformed_reference_run_is_a_usage_error_before_anything_runs(run, pytester):
    (pytester.path / "bad.jsonl").write_text('{"task_id": "x"}\n')
    result = run(*MOCK, "--bench-compare", "bad.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--bench-compare bad.jsonl: bad.jsonl line 1 is not a result record" in result.stderr.str()
    assert not (pytester.path / "benchmark_results").exists()


def test_a_reference_run_broken_during_the_run_fails_it_with_one_line(run, pytester):
    """The reference run is checked at the start and read again at the end (keeping only what this
    run's tasks need): a line broken in between is an ERROR line and exit status 1, not a crash."""
    run(*MOCK, "--bench-run-name", "good").assert_outcomes(passed=6)
    reference = pytester.path / "benchmark_results" / "good" / "results.jsonl"
    pytester.makeconftest(f"""
def pytest_runtest_teardown(item):
    with open({str(reference)!r}, "a") as handle:
        handle.write("{{not json\\n")
""")
    result = run(*MOCK, "--bench-run-name", "later", "--bench-compare", "benchmark_results/good")
    result.assert_outcomes(passed=6)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert ("ERROR: --bench-compare benchmark_results/good: benchmark_results/good/results.jsonl line 7 is not JSON"
            in result.stdout.str())
    assert not (pytester.path / "benchmark_results" / "later" / "comparison.json").exists()


def test_compare_with_trials_uses_the_sign_test_over_tasks(run, pytester):
    run(*MOCK, "--bench-trials", "2", "--bench-run-name", "k2a")
    result = run(*MOCK, "--bench-trials", "2", "--bench-run-name", "k2b", "--bench-compare", "benchmark_results/k2a")
    assert "method=sign-test-tasks" in result.stdout.str()


def test_agentbench_view_writes_a_comparison_page(run, pytester, capsys):
    run(*MOCK, "--bench-run-name", "good")
    run(*MOCK, "--bench-agent", "noop", "--bench-run-name", "bad")
    base = pytester.path / "benchmark_results"
    capsys.readouterr()
    assert view_main([str(base / "good"), str(base / "bad")]) == 0
    page = (base / "bad" / "compare-good.html").read_text()
    assert capsys.readouterr().out.strip() == str(base / "bad" / "compare-good.html")
    assert "Verdict: <b>regression</b>" in page and page.count('<td class="regressed">') == 6
    assert "agentbench-compare: verdict=regression" in page and "<script" not in page
    # Each task links to its row in both runs' viewers, with its score and reason on both sides.
    assert '<a href="../good/viewer.html">viewer of good</a> &middot; <a href="viewer.html">viewer of bad</a>' in page
    assert ('<td>mock_chrome_001</td><td class="num"><a href="../good/viewer.html#mock%2Fmock_chrome_001">1/1</a></td>'
            '<td class="num">1.000</td><td class="why"></td>'
            '<td class="num"><a href="viewer.html#mock%2Fmock_chrome_001">0/1</a></td><td class="num">0.000</td>'
            '<td class="why">form submitted: neither Submit clicked nor text typed and OK clicked</td>') in page
    assert view_main([str(base / "good"), str(base / "nowhere")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_when_both_runs_are_malformed_the_first_one_named_is_reported(tmp_path, capsys):
    for name in ("A", "B"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.jsonl").write_text('{"task_id": "t1"}\n{not json\n')
    assert view_main([str(tmp_path / "A"), str(tmp_path / "B")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agentbench-view: ") and str(tmp_path / "A") in err and str(tmp_path / "B") not in err, err


def test_a_p_value_is_never_printed_as_0():
    from pytest_agentbench.compare import format_p, grep_line

    before = [rec(f"t{i}", True) for i in range(2000)]
    after = [rec(f"t{i}", False) for i in range(2000)]
    out = compare_records(before, after)
    assert out["verdict"] == "regression"
    assert "p<0.0001" in grep_line(out) and "p=0 " not in grep_line(out)
    assert format_p(0.0) == "< 0.0001" and format_p(0.03125) == "= 0.03125"


def test_the_viewer_shows_the_comparison_and_both_viewers_open_each_tasks_row(run, pytester, browser):
    """--bench-compare: the run's viewer shows the comparison and links its page; the page links
    each task to its row in the viewer of either run, and to both viewers."""
    run(*MOCK, "--bench-run-name", "good")
    run(*MOCK, "--bench-agent", "noop", "--bench-run-name", "bad", "--bench-compare", "benchmark_results/good")
    base = pytester.path / "benchmark_results"
    assert (base / "bad" / "comparison.json").is_file() and (base / "bad" / "compare-good.html").is_file()
    errors: list[str] = []
    page = browser.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    try:
        page.goto((base / "bad" / "viewer.html").as_uri())
        section = page.locator("#comparison")
        assert section.is_visible()
        text = section.inner_text()
        assert "Compared with good: regression" in text and "Tasks: 6 regressed, 0 improved" in text
        # A changed task's link opens its row in this viewer.
        section.get_by_role("link", name="mock_clock_001").click()
        page.wait_for_selector("tr.detail")
        assert page.locator("tr.row.open .task").inner_text() == "mock_clock_001"
        section.locator("#comparison-page").click()
        page.wait_for_url("**/bad/compare-good.html")
        row = page.locator("tr").filter(has=page.get_by_role("cell", name="mock_chrome_002", exact=True))
        assert [c.strip() for c in row.locator("td").all_inner_texts()] == [
            "regressed", "mock", "chrome", "mock_chrome_002", "1/1", "1.000", "", "0/1", "0.000",
            "form submitted: neither Submit clicked nor text typed and OK clicked"]
        row.get_by_role("link", name="1/1").click()  # the reference run's row
        page.wait_for_url("**/good/viewer.html#mock%2Fmock_chrome_002")
        page.wait_for_selector("tr.detail")
        assert page.locator("tr.row.open .task").inner_text() == "mock_chrome_002"
        assert page.locator("tr.row.open .status").inner_text() == "passed"
        page.go_back()
        row.get_by_role("link", name="0/1").click()  # this run's row
        page.wait_for_url("**/bad/viewer.html#mock%2Fmock_chrome_002")
        page.wait_for_selector("tr.detail")
        assert page.locator("tr.row.open .status").inner_text() == "failed"
        page.go_back()
        page.get_by_role("link", name="viewer of good").click()
        page.wait_for_url("**/good/viewer.html")
        assert page.locator("#run-name").inner_text() == "good" and page.locator("#comparison").is_hidden()
    finally:
        page.close()
    assert errors == []


def test_a_broken_or_planted_comparison_is_a_note_not_a_crash_or_a_link(tmp_path):
    from pytest_agentbench.record.viewer_data import collect

    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text(json.dumps(rec("a", True)) + "\n")
    for bad in ('{"before_run": "x"}', "[1, 2]", '{"before_run": "x", "counts": "nope"}', "[" * 100_000):
        (run / "comparison.json").write_text(bad)
        view = collect(run)
        assert view.data["comparison"] is None
        assert any(note.startswith("comparison.json could not be read") for note in view.data["notes"])
    good = compare_records([rec("a", False)], [rec("a", True)], before_name="ref", after_name="run")
    (run / "comparison.json").write_text(json.dumps(good))
    (tmp_path / "elsewhere.html").write_text("not the run's")
    (run / "compare-ref.html").symlink_to(tmp_path / "elsewhere.html")
    shown = collect(run).data["comparison"]
    assert shown["page"] is None  # a link planted in the folder is not offered as the page
    assert shown["changed"] == [{"status": "improved", "anchor": "mock/a", "task_id": "a"}]
    (run / "compare-ref.html").unlink()
    (run / "compare-ref.html").write_text("<html></html>")
    assert collect(run).data["comparison"]["page"] == "compare-ref.html"
