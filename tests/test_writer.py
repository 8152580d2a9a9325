"""The background writer of per-task files: every job runs, in order, errors are reported at
flush, and no more than its bound of jobs ever waits (a busy machine once queued hundreds)."""

from __future__ import annotations

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

