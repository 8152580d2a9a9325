"""Fault injection on the run record: a worker killed with SIGKILL under its item, a disk that
fills up mid-run (an injected ENOSPC at the writer, and a real size-limited tmpfs when mount
works), and a torn last line in results.jsonl. Every complete record stays, the dead item counts
as the phase it died in says (the agent's failure, or an infrastructure or evaluation error), and
the run ends with one ERROR: line."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest
from conftest import only_run_folder, results

KILL_WORKER = """
import os, signal
from pathlib import Path

def pytest_runtest_call(item):
    mark = Path(os.environ["KILL_MARK"])
    if item.name == "mock_clock_001" and os.environ.get("PYTEST_XDIST_WORKER") and not mark.exists():
        mark.write_text("x")
        os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_worker_killed_after_its_episode_is_the_failure_pytest_reports(run_sub, pytester, monkeypatch):
    # Killed in the test call, after the episode ended: the plugin cannot tell whose fault it is,
    # so it follows pytest, which reports the item failed, and counts it in the success rate.
    monkeypatch.setenv("KILL_MARK", str(pytester.path / "killed"))
    pytester.makeconftest(KILL_WORKER)
    result = run_sub("--bench=mock", "--bench-limit", "5", "-n", "2")
    assert (pytester.path / "killed").exists()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.parseoutcomes() == {"failed": 1, "passed": 4}
    folder = only_run_folder(pytester.path)
    rows = {r["task_id"]: r for r in results(folder)}
    assert len(rows) == 5
    dead = rows["mock_clock_001"]
    assert dead["status"] == "failed" and dead["error_type"] == "agent" and dead["outcome"] is True
    assert "crashed while running" in dead["error"] and "after its episode ended" in dead["error"]
    assert dead["worker"].startswith("gw")
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["statuses"] == {"failed": 1, "passed": 4}
    assert summary["num_attempts"] == 5 and summary["num_infrastructure_failures"] == 0
    assert summary["success_rate"] == 0.8
    result.stdout.fnmatch_lines(["Success rate: 80.0% (outcomes only)"])


CRASHING_PHASES = """
import os, signal
import pytest
from pytest_agentbench.agents.builtin import MockAgent
from pytest_agentbench.benches.mock.bench import MockBenchmark

def die(how):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os._exit(1) if how == "exit" else os.kill(os.getpid(), signal.SIGKILL)

class Crashes(MockAgent):
    name = "crashes"
    def act(self, observation, task, history=None):
        if task.task_id in ("mock_chrome_001", "mock_file_explorer_001", "mock_clock_002"):
            die("exit" if task.task_id != "mock_clock_002" else "kill")
        return super().act(observation, task, history)

_reset, _evaluate = MockBenchmark.reset, MockBenchmark.evaluate

def reset(self, task):
    if task.task_id == "mock_clock_001":
        die("kill")
    return _reset(self, task)

def evaluate(self, task, final_action):
    if task.task_id == "mock_chrome_002":
        die("exit")
    return _evaluate(self, task, final_action)

MockBenchmark.reset, MockBenchmark.evaluate = reset, evaluate

@pytest.fixture(scope="session")
def agent():
    return Crashes()
"""


def test_a_worker_crash_is_typed_by_the_phase_it_died_in(run_sub, pytester):
    # 3 of 6 agents kill their worker while acting: the agent's failures, as pytest reports them;
    # a worker dying in the environment's reset or in the checker is an error, for pytest too.
    pytester.makeconftest(CRASHING_PHASES)
    result = run_sub("--bench=mock", "--bench-limit", "6", "-n", "2", "-rfE")
    assert result.parseoutcomes() == {"failed": 3, "errors": 2, "passed": 1}, result.stdout.str()
    folder = only_run_folder(pytester.path)
    rows = {r["task_id"]: r for r in results(folder)}
    for task_id in ("mock_chrome_001", "mock_file_explorer_001", "mock_clock_002"):
        row = rows[task_id]
        assert (row["status"], row["error_type"], row["outcome"]) == ("failed", "agent", True), row
        assert "crashed while running 'bench/mock::" in row["reason"], row
        assert row["reason"].endswith("while the agent was acting: the agent's failure"), row
    reset, checker = rows["mock_clock_001"], rows["mock_chrome_002"]
    assert (reset["status"], reset["error_type"], reset["outcome"]) == ("error", "infrastructure", False)
    assert "while the environment reset: an infrastructure error" in reset["reason"]
    assert (checker["status"], checker["error_type"], checker["outcome"]) == ("error", "evaluation", False)
    assert "while the checker ran: an evaluation error" in checker["reason"]
    assert rows["mock_file_explorer_002"]["status"] == "passed"
    # the conftest's agent, noted by the worker, not --bench-agent's (the worker never sent its record)
    assert {row["agent"] for row in rows.values()} == {"crashes"}
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["agent"] == summary["player"] == "crashes"
    assert summary["statuses"] == {"failed": 3, "error": 2, "passed": 1}
    assert summary["success_rate"] == 0.25  # 1 of the 4 outcomes: the errors are left out
    result.stdout.fnmatch_lines([
        "Errors:       5 (3 agent (failed, to pytest), 1 infrastructure, 1 evaluation)",
        "Success rate: 25.0% (outcomes only)",
    ])
    result.stdout.fnmatch_lines(["ERROR bench/mock::clock::mock_clock_001 - worker 'gw*' crashed while running *"])


TORN_WRITES = """
import errno, os

_write = os.write
_lines = []

def torn_write(fd, data):
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        target = ""
    if target.endswith("results.jsonl"):
        _lines.append(1)
        if len(_lines) > 3:
            _write(fd, data[: len(data) // 2])  # the disk takes half the line, then is full
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return _write(fd, data)

os.write = torn_write
"""


def check_disk_full_run(result, results_dir: Path) -> Path:
    assert result.ret != pytest.ExitCode.INTERNAL_ERROR, result.stdout.str()
    out = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out, out
    errors = [line for line in out.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1 and "[Errno 28]" in errors[0], errors
    (folder,) = [p for p in results_dir.iterdir() if p.is_dir()]
    raw = (folder / "results.jsonl").read_bytes()
    assert raw.endswith(b"\n")
    rows = [json.loads(line) for line in raw.splitlines()]  # every line whole
    assert rows and all(r["status"] == "passed" for r in rows)
    return folder


def test_a_full_disk_at_the_writer_stops_the_run_with_one_error_line(run_sub, pytester):
    pytester.makeconftest(TORN_WRITES)
    result = run_sub("--bench=mock", "--bench-limit", "20")
    folder = check_disk_full_run(result, pytester.path / "benchmark_results")
    assert len(results(folder)) == 3
    assert result.ret == pytest.ExitCode.INTERRUPTED  # stopped: later items had nowhere to go


@pytest.fixture
def small_disk(tmp_path):
    """A real 400 KB tmpfs (root only, where mount works)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a size-limited tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", f"tmpfs-{uuid.uuid4().hex[:6]}", str(disk)],
                             check=False, capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.mark.parametrize("xdist", [False, True], ids=["single", "xdist"])
def test_a_really_full_disk_keeps_every_complete_record_and_the_folder_is_a_baseline(run_sub, pytester, small_disk,
                                                                                       xdist):
    args = ["--bench=mock", "--bench-limit", "800", "--bench-screenshots", "off",
            "--bench-results-dir", str(small_disk),
            "-p", "no:cacheprovider", *(["-n", "2"] if xdist else [])]
    result = run_sub(*args)
    folder = check_disk_full_run(result, small_disk)
    kept = len(results(folder))
    assert 0 < kept < 800
    # The folder of a run the disk stopped is a valid --bench-baseline.
    again = run_sub("--bench=mock", "--bench-limit", "3", "--bench-baseline", str(folder), "--bench-run-name", "next")
    assert again.ret == 0, again.stdout.str()


def test_a_torn_last_line_is_tolerated_when_reading_a_run_folder(run_sub, pytester):
    first = run_sub("--bench=mock", "--bench-limit", "3", "--bench-agent", "noop", "--bench-run-name", "old")
    assert first.ret == pytest.ExitCode.TESTS_FAILED
    folder = pytester.path / "benchmark_results" / "old"
    with (folder / "results.jsonl").open("a") as handle:
        handle.write('{"benchmark":"mock","task_id":"mock_chrome_00')  # the write the disk cut short
    again = run_sub("--bench=mock", "--bench-limit", "3", "--bench-baseline", str(folder), "--bench-run-name", "new")
    assert again.ret == 0, again.stdout.str()
    again.assert_outcomes(xfailed=0, xpassed=3)
    # A malformed line in the middle is still an error that names the line.
    lines = (folder / "results.jsonl").read_text().splitlines(keepends=True)
    (folder / "results.jsonl").write_text(lines[0] + "{oops\n" + "".join(lines[1:]))
    bad = run_sub("--bench=mock", "--bench-limit", "3", "--bench-baseline", str(folder))
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["ERROR: --bench-baseline: *results.jsonl line 2 is not JSON*"])


def _open_results_files() -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.endswith("results.jsonl"):
            found.append(target)
    return found


RECORD_WHILE_RUNNING = """
import json, os

def pytest_runtest_teardown(item):
    # Each record is on disk as its item ends: the file is read here through another handle.
    folder = item.config.stash[__import__("pytest_agentbench.plugin.session", fromlist=["x"]).STATE_KEY].run_folder
    lines = open(folder.results_path, encoding="utf-8").read().splitlines()
    with open(os.environ["SEEN_LINES"], "a") as out:
        out.write(f"{len(lines)}\\n")
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_results_jsonl_is_written_line_by_line_through_one_descriptor_closed_at_the_end(run, pytester, monkeypatch):
    seen = pytester.path / "seen.txt"
    monkeypatch.setenv("SEEN_LINES", str(seen))
    pytester.makeconftest(RECORD_WHILE_RUNNING)
    assert not _open_results_files()
    run("--bench=mock", "--bench-limit", "4").assert_outcomes(passed=4)
    # The call report of item n is recorded before its teardown: n lines, one per item, as they ran.
    assert seen.read_text().split() == ["1", "2", "3", "4"]
    assert len(results(only_run_folder(pytester.path))) == 4
    assert not _open_results_files(), "results.jsonl must be closed when the session ends"


def test_one_descriptor_for_every_line_and_a_reopen_after_close(tmp_path):
    from pytest_agentbench.record.runfolder import RunFolder

    folder = RunFolder(tmp_path)
    folder.append_result({"task_id": "a", "benchmark": "b"})
    fd = folder._results_fd
    folder.append_result({"task_id": "c", "benchmark": "b"})
    assert folder._results_fd == fd is not None
    folder.close()
    folder.close()  # twice is fine
    with pytest.raises(OSError):
        os.fstat(fd)
    folder.append_result({"task_id": "d", "benchmark": "b"})  # reopens, appends after the others
    folder.close()
    assert [r["task_id"] for r in folder.read_results()] == ["a", "c", "d"]


def test_a_phase_note_is_read_for_its_own_item_only(tmp_path):
    from pytest_agentbench.phases import ENDED, PhaseNote, crash_cause, read_note, read_phase

    note = PhaseNote(tmp_path / "gw0")
    note.write("bench/mock::chrome::a_long_task_id_first", "evaluate", "a-long-agent-name")
    note.write("bench/mock::chrome::t2", "act", "my\nagent")  # shorter: the rest of the earlier note is never read
    assert read_phase(tmp_path / "gw0", "bench/mock::chrome::t2") == "act"
    assert read_note(tmp_path / "gw0", "bench/mock::chrome::t2") == ("act", "my agent")
    note.write("bench/mock::chrome::t2", "setup")  # before the agent is known
    assert read_note(tmp_path / "gw0", "bench/mock::chrome::t2") == ("setup", None)
    assert read_phase(tmp_path / "gw0", "bench/mock::chrome::a_long_task_id_first") is None
    assert read_phase(tmp_path / "gw1", "bench/mock::chrome::t2") is None
    note.close()
    (tmp_path / "link").symlink_to(tmp_path / "gw0")
    assert read_phase(tmp_path / "link", "bench/mock::chrome::t2") is None  # a link is not followed
    assert crash_cause("act")[0] == "agent" and crash_cause("reset")[0] == "infrastructure"
    assert crash_cause(ENDED)[0] == crash_cause(None)[0] == "agent"
