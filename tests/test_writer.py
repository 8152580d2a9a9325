"""The background writer of per-task files: every job runs, in order, errors are reported at
flush, and no more than its bound of jobs ever waits (a busy machine once queued hundreds)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from pytest_agentbench.record.writer import BackgroundWriter


def test_every_job_runs_in_order_and_the_queue_stays_bounded():
    writer = BackgroundWriter(pending=4)
    done: list[int] = []
    most = 0

    def job(n: int) -> None:
        time.sleep(0.001)  # slower than submitting: the bound must hold the caller back
        done.append(n)

    for n in range(100):
        writer.submit(lambda n=n: job(n))
        most = max(most, writer._queue.qsize())
    assert most <= 5  # the bound, plus the job just submitted before the caller waits
    assert writer.flush() == []
    assert done == list(range(100))


def test_a_failed_job_is_reported_at_flush_and_the_rest_still_run():
    writer = BackgroundWriter(pending=2)
    done: list[int] = []

    def fail() -> None:
        raise OSError(28, "No space left on device")

    writer.submit(fail)
    for n in range(10):
        writer.submit(lambda n=n: done.append(n))
    assert writer.flush() == ["OSError: [Errno 28] No space left on device"]
    assert done == list(range(10))



# -- text files through the child process -----------------------------------------------------------
def _wait_for(condition, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def test_text_files_go_to_a_child_process_that_makes_missing_folders(tmp_path):
    writer = BackgroundWriter()
    paths = [tmp_path / "tasks" / f"b{n % 3}" / f"t{n}.json" for n in range(50)]
    for n, path in enumerate(paths):
        writer.submit_text(str(path), f'{{"n":{n},"text":"caf\u00e9"}}')
    process = writer._process
    assert process is not None and writer._thread is None  # nothing went to the thread
    assert writer.flush() == []
    assert all(p.read_text(encoding="utf-8") == f'{{"n":{n},"text":"caf\u00e9"}}' for n, p in enumerate(paths))
    assert writer._process is process  # a flush keeps the child for the next files
    assert writer.close() == []
    assert process._proc.returncode == 0


def test_a_file_the_child_cannot_write_is_one_error_and_the_others_are_written(tmp_path):
    (tmp_path / "plain").write_text("a file, not a folder")
    writer = BackgroundWriter()
    writer.submit_text(str(tmp_path / "ok1.json"), "1")
    writer.submit_text(str(tmp_path / "plain" / "x.json"), "2")
    writer.submit_text(str(tmp_path / "ok2.json"), "3")
    errors = writer.flush()
    assert len(errors) == 1 and errors[0].startswith("NotADirectoryError: [Errno 20]"), errors
    assert str(tmp_path / "plain" / "x.json") in errors[0]
    assert (tmp_path / "ok1.json").read_text() == "1" and (tmp_path / "ok2.json").read_text() == "3"
    assert writer.close() == errors  # counted once


def test_the_thread_writes_the_same_error_when_there_is_no_child(tmp_path):
    (tmp_path / "plain").write_text("a file, not a folder")
    writer = BackgroundWriter(use_process=False)
    writer.submit_text(str(tmp_path / "plain" / "x.json"), "2")
    writer.submit_text(str(tmp_path / "new" / "ok.json"), "1")
    errors = writer.close()
    assert len(errors) == 1 and errors[0].startswith("NotADirectoryError: [Errno 20]"), errors
    assert (tmp_path / "new" / "ok.json").read_text() == "1"


def test_without_a_python_to_start_the_thread_writes_the_files(tmp_path, monkeypatch):
    monkeypatch.setattr("sys.executable", "")
    writer = BackgroundWriter()
    writer.submit_text(str(tmp_path / "a" / "t.json"), "x")
    assert writer._process is None and writer.close() == []
    assert (tmp_path / "a" / "t.json").read_text() == "x"


def test_a_killed_child_is_reported_and_later_files_fall_back_to_the_thread(tmp_path):
    writer = BackgroundWriter()
    writer.submit_text(str(tmp_path / "before.json"), "b")
    writer.flush()
    process = writer._process
    assert process is not None
    process._proc.kill()
    process._proc.wait()
    for n in range(5):
        writer.submit_text(str(tmp_path / f"after{n}.json"), str(n))
    errors = writer.close()
    assert len(errors) == 1 and "killed by signal 9" in errors[0], errors
    assert (tmp_path / "before.json").read_text() == "b"
    assert all((tmp_path / f"after{n}.json").read_text() == str(n) for n in range(5))


def test_the_child_runs_in_its_own_session_so_ctrl_c_leaves_it_to_finish(tmp_path):
    writer = BackgroundWriter()
    writer.submit_text(str(tmp_path / "t.json"), "x")
    process = writer._process
    assert process is not None
    try:
        assert os.getsid(process._proc.pid) != os.getsid(0)
    finally:
        writer.close()


PARENT_DIES = """
import os, sys
from pytest_agentbench.record.writer import BackgroundWriter

writer = BackgroundWriter()
for n in range(300):
    writer.submit_text(os.path.join(sys.argv[1], f"t{n}.json"), "x" * 2000 + str(n))
os.kill(os.getpid(), 9)  # no flush, no close: the child must still write every file it was handed
"""


def test_files_handed_to_the_child_are_written_when_the_parent_is_killed(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run([sys.executable, "-c", PARENT_DIES, str(out)], check=False, timeout=60)
    assert done.returncode == -signal.SIGKILL
    assert _wait_for(lambda: len(list(out.iterdir())) == 300), len(list(out.iterdir()))
    assert _wait_for(lambda: (out / "t299.json").read_text().endswith("299"))
