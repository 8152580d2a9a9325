"""Fault injection on the run record: a worker killed with SIGKILL under its item, a disk that
fills up mid-run (an injected ENOSPC at the writer, and a real size-limited tmpfs when mount
works), and a torn last line in results.jsonl. Every complete record stays, the dead item counts
as an error, and the run ends with one ERROR: line."""

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


def test_a_sigkilled_workers_item_is_recorded_as_an_error(run_sub, pytester, monkeypatch):
    monkeypatch.setenv("KILL_MARK", str(pytester.path / "killed"))
    pytester.makeconftest(KILL_WORKER)
    result = run_sub("--bench=mock", "--bench-limit", "5", "-n", "2")
    assert (pytester.path / "killed").exists()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    folder = only_run_folder(pytester.path)
    rows = {r["task_id"]: r for r in results(folder)}
    assert len(rows) == 5
    dead = rows["mock_clock_001"]
    assert dead["status"] == "error" and dead["error_type"] == "infrastructure"
    assert "crashed while running" in dead["error"] and dead["worker"].startswith("gw")
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["statuses"] == {"error": 1, "passed": 4}
    assert summary["num_attempts"] == 5 and summary["num_infrastructure_failures"] == 1
    result.stdout.fnmatch_lines(["Errors:       1 (1 infrastructure)"])


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
