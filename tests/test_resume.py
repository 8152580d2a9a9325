"""``--bench-resume RUN``: an interrupted run continued in its folder ends as an uninterrupted one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest
from conftest import QUIET, only_run_folder, results
from test_trials import FLAKY

PROBS = {f"task{i}": p for i, p in enumerate([0.5, 1.0, 0.0, 0.3, 0.8, 0.6, 0.2, 0.9])}
SLOW_FLAKY = FLAKY.replace("    def act(self, observation, task, history=None):\n",
                           "    def act(self, observation, task, history=None):\n"
                           "        import time; time.sleep(0.15)\n")
ARGS = ("--bench=flaky", "--bench-agent=flaky-agent", "--bench-trials", "3", "--bench-trial-seed", "5",
        "-p", "no:cacheprovider")


def keys(records):
    return sorted((r["task_id"], r["trial"]) for r in records)


def interrupt(pytester: pytest.Pytester, *args: str, after: int) -> None:
    """Start a run, let ``after`` records land, then SIGTERM its process group (as a CI runner
    cancelling a job does) and wait for it to die."""
    proc = subprocess.Popen([sys.executable, "-m", "pytest", *ARGS, *QUIET, "--bench-run-name", "run", *args],
                            cwd=pytester.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    path = pytester.path / "benchmark_results" / "run" / "results.jsonl"
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if path.exists() and len(path.read_text().splitlines()) >= after:
                break
            if proc.poll() is not None:
                pytest.fail("the run ended before it could be interrupted")
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    time.sleep(0.3)  # xdist workers notice their controller is gone


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_resume_after_sigterm_matches_an_uninterrupted_run(pytester, run_sub, xdist):
    pytester.makeconftest(SLOW_FLAKY.format(P=PROBS))
    interrupt(pytester, *xdist, after=5)
    folder = pytester.path / "benchmark_results" / "run"
    before = results(folder)
    assert 5 <= len(before) < 24 and not (folder / "summary.json").exists()
    started = json.loads((folder / "run.json").read_text())["created_at"]
    time.sleep(1.1)  # the resumed session starts in a later second
    resumed = run_sub(*ARGS, *xdist, "--bench-resume", str(folder), "--junitxml", "resumed.xml")
    assert resumed.ret == 1  # task2 fails every trial
    after = results(folder)
    assert keys(after) == sorted((t, n) for t in PROBS for n in (1, 2, 3))  # one record per (task, trial)
    finished = [r for r in before if r["error_type"] != "infrastructure"]
    assert finished
    for record in finished:  # finished items were not played again: their records are the same lines
        assert record in after
    # The terminal counts the whole run: the items played now, and the done ones from their records.
    played = resumed.parseoutcomes()
    assert played.get("passed", 0) + played.get("failed", 0) == 24 and "deselected" not in played
    run_sub(*ARGS, *xdist, "--bench-run-name", "straight", "--junitxml", "straight.xml")
    straight = json.loads((pytester.path / "benchmark_results" / "straight" / "summary.json").read_text())
    assert (played.get("passed", 0), played.get("failed", 0)) == (straight["success_count"],
                                                                  24 - straight["success_count"])
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["statistics"] == straight["statistics"]
    assert summary["success_count"] == straight["success_count"] and summary["num_attempts"] == 24
    assert summary["created_at"] == started == json.loads((folder / "run.json").read_text())["created_at"]
    assert len(list((folder / "tasks" / "flaky").glob("*.trajectory.json"))) == 24
    # The JUnit XML has every item with the outcome an uninterrupted run gives it; the ones done
    # before say so and were not played again.
    xml, straight_xml = junit(pytester.path / "resumed.xml"), junit(pytester.path / "straight.xml")
    assert len(xml) == 24 and {k: v[0] for k, v in xml.items()} == {k: v[0] for k, v in straight_xml.items()}
    note = f"from run {folder}, not replayed"
    done = {(r["task_id"], r["trial"]) for r in finished}
    assert {k for k, v in xml.items() if v[1] == note} == {f"{t}::trial-{n}" for t, n in done}


def junit(path):
    """{task::trial: (outcome, the agentbench_resumed property or None)} of a JUnit XML file."""
    cases = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
        prop = case.find("properties/property[@name='agentbench_resumed']")
        name = case.get("name")
        classname = case.get("classname").rsplit(".", 1)[-1]
        cases[f"{classname}::{name}"] = (outcome, None if prop is None else prop.get("value"))
    return cases


CRASHY = FLAKY.replace('''        if task.raw_config["p"] < 0:''', '''        import os
        if task.raw_config["p"] < 0 and os.environ.get("VM_DOWN"):''')


def test_infrastructure_errors_are_played_again_and_their_records_replaced(pytester, run, monkeypatch):
    pytester.makeconftest(CRASHY.format(P={"good": 1.0, "flaky_vm": -1.0}))
    monkeypatch.setenv("VM_DOWN", "1")
    run(*ARGS, "--bench-run-name", "run")
    folder = only_run_folder(pytester.path)
    first = results(folder)
    assert sum(r["error_type"] == "infrastructure" for r in first) == 3
    monkeypatch.delenv("VM_DOWN")
    result = run(*ARGS, "--bench-resume", str(folder))
    result.assert_outcomes(passed=3, failed=3)  # "good" from its records; p < 0 never wins once the VM is up
    after = results(folder)
    assert keys(after) == sorted((t, n) for t in ("good", "flaky_vm") for n in (1, 2, 3))
    assert not any(r["error_type"] == "infrastructure" for r in after)
    replaced = [json.loads(line) for line in (folder / "results.replaced.jsonl").read_text().splitlines()]
    assert len(replaced) == 3 and all(r["error_type"] == "infrastructure" for r in replaced)
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["statistics"]["outcome_trials"] == 6 and summary["statistics"]["excluded_trials"] == 0
    assert summary["num_attempts"] == 6
    # The page embeds the kept records (encoded) and the new ones (their lines as written) alike:
    # it is the page read back from the folder.
    from pytest_agentbench.record.viewer import write_viewer

    written = (folder / "viewer.html").read_bytes()
    write_viewer(folder)
    assert (folder / "viewer.html").read_bytes() == written


def test_resume_of_a_finished_run_plays_nothing(pytester, run):
    pytester.makeconftest(FLAKY.format(P={"good": 1.0}))
    run(*ARGS, "--bench-run-name", "run")
    folder = only_run_folder(pytester.path)
    result = run(*ARGS, "--bench-resume", str(folder))
    result.assert_outcomes(passed=3)  # reported from the records, not played
    assert result.ret == pytest.ExitCode.OK
    assert len(results(folder)) == 3
    assert json.loads((folder / "summary.json").read_text())["statistics"]["passes"] == 3


def test_kept_records_hold_their_keys_and_repeated_values_once(pytester, run):
    """A resumed run holds every kept record to its end, each decoded from its line: their keys and
    repeated values (benchmark, status, criteria) are one object each, the records unchanged."""
    from pytest_agentbench.plugin.resume import Resume
    from pytest_agentbench.record.runfolder import read_results

    pytester.makeconftest(FLAKY.format(P={"good": 1.0}))
    run(*ARGS, "--bench-run-name", "run")
    folder = only_run_folder(pytester.path)
    first, *rest = kept = Resume(folder).records()
    assert kept == read_results(folder / "results.jsonl") and len(rest) == 2
    for record in rest:
        assert all(a is b for a, b in zip(record, first, strict=True))  # the same key objects
        assert record["benchmark"] is first["benchmark"] and record["status"] is first["status"]


@pytest.mark.parametrize(("args", "message"), [
    (("--bench-trials", "2"), "(--bench-trials was 3 there, 2 here)"),
    (("--bench-trial-seed", "6"), "(--bench-trial-seed was 5 there, 6 here)"),
    (("--bench-agent", "noop"), "(agent was 'flaky-agent' there, 'noop' here)"),
    (("--bench-limit", "1"), "(the task list differs: 1 of its task(s) not selected here (first flaky::two))"),
])
def test_resume_refuses_another_selection(pytester, run, args, message):
    pytester.makeconftest(FLAKY.format(P={"one": 1.0, "two": 1.0}))
    run(*ARGS, "--bench-run-name", "run")
    folder = only_run_folder(pytester.path)
    before = (folder / "results.jsonl").read_text()
    argv = list(ARGS)
    for flag in ("--bench-trials", "--bench-trial-seed", "--bench-agent=flaky-agent"):
        if flag in args or (flag.startswith("--bench-agent") and "--bench-agent" in args):
            index = argv.index(flag)
            del argv[index:index + (1 if "=" in flag else 2)]
    result = run(*argv, *args, "--bench-resume", str(folder))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"--bench-resume {folder}: this selection is not that run's {message}" in result.stderr.str()
    assert (folder / "results.jsonl").read_text() == before  # results already written stay written


def test_resume_needs_a_run_folder(pytester, run):
    pytester.makeconftest(FLAKY.format(P={"one": 1.0}))
    result = run(*ARGS, "--bench-resume", "nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--bench-resume nowhere: not a run folder (no manifest.json)" in result.stderr.str()


def test_the_budget_ledger_continues(pytester, run):
    from test_budget_and_privacy import PAID_AGENT

    pytester.makeconftest(PAID_AGENT)  # three model calls of 10 cents per task
    args = ("--bench=mock", "--bench-limit", "4", "--bench-agent", "paid", "-p", "no:cacheprovider")
    run(*args, "--bench-max-cost-usd", "10", "--bench-run-name", "run")
    folder = only_run_folder(pytester.path)
    lines = (folder / "results.jsonl").read_text().splitlines()
    (folder / "results.jsonl").write_text("\n".join(lines[:2]) + "\n")  # the last two never reported
    # $1.20 is in the ledger already (the two lost items were paid for too): a $1.20 cap is spent.
    capped = run(*args, "--bench-max-cost-usd", "1.20", "--bench-resume", str(folder))
    capped.assert_outcomes(failed=2, skipped=2)  # two from their records (the agent fails), two skipped now
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["budget"]["spent_usd"] == pytest.approx(1.20) and summary["budget"]["budget_skipped"] == 2
    # Budget skips are not final: a larger cap plays them, and the ledger keeps adding up.
    more = run(*args, "--bench-max-cost-usd", "2", "--bench-resume", str(folder))
    more.assert_outcomes(failed=4)
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["budget"]["spent_usd"] == pytest.approx(1.80)
    assert keys(results(folder)) == keys(summary["tasks"]) and len(results(folder)) == 4


def test_done_items_reach_the_last_failed_cache(pytester, run):
    """``--lf`` after a resume reruns the failures of the whole run, including the ones not replayed."""
    import shutil

    pytester.makeconftest(FLAKY.format(P={"good": 1.0, "bad": 0.0}))
    args = [a for a in ARGS if a not in ("-p", "no:cacheprovider")]
    run(*args, "--bench-run-name", "run")
    folder = only_run_folder(pytester.path)
    shutil.rmtree(pytester.path / ".pytest_cache")
    result = run(*args, "--bench-resume", str(folder))
    result.assert_outcomes(passed=3, failed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    lastfailed = json.loads((pytester.path / ".pytest_cache" / "v" / "cache" / "lastfailed").read_text())
    assert sorted(lastfailed) == [f"bench/flaky::odd::bad::trial-{n}" for n in (1, 2, 3)]
    assert "from run " in result.stdout.str() and "not replayed: gave up" in result.stdout.str()


def test_a_torn_last_line_is_cut_before_the_resumed_run_appends(pytester, run):
    """A run killed mid-write leaves half a line; the resumed run's first record starts a line of
    its own, so every line of the folder parses and a later resume or comparison reads it."""
    pytester.makeconftest(FLAKY.format(P={"one": 1.0, "two": 1.0}))
    run(*ARGS, "--bench-run-name", "run", "-k", "one")
    folder = only_run_folder(pytester.path)
    path = folder / "results.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:2]) + "\n" + lines[2][: len(lines[2]) // 2])  # the third record torn
    result = run(*ARGS, "--bench-resume", str(folder), "-k", "one")
    assert result.ret == pytest.ExitCode.OK
    parsed = [json.loads(line) for line in path.read_text().splitlines()]
    assert keys(parsed) == [("one", 1), ("one", 2), ("one", 3)]


def test_a_second_resume_of_a_folder_being_resumed_is_refused(pytester, run):
    import fcntl

    pytester.makeconftest(FLAKY.format(P={"one": 1.0}))
    run(*ARGS, "--bench-run-name", "run")
    folder = only_run_folder(pytester.path)
    with open(folder / ".lock", "w") as held:  # as the first resume holds it
        fcntl.flock(held, fcntl.LOCK_EX)
        result = run(*ARGS, "--bench-resume", str(folder))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --bench-resume {folder}: {folder} is being written by another run*"])
