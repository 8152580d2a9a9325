"""Faults under ``--opencomputer-backend docker``: an image without the desktop stack, a crashed
xdist worker (its item's container goes with it).

The container's maker (``docker_worker.py``, its own session) reads its requests from the xdist
worker's pipe; when the worker is SIGKILLed mid-item the pipe closes and the maker removes the
container, xdist replaces the worker and the run goes on. Needs the container tier (see
test_opencomputer_docker.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_opencomputer_docker import _docker, _ours, plugin_run, setup  # noqa: F401 - setup is a fixture

PID_LABEL = "gui-synth-env.meta.pid"


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as handle:
        return int(handle.read().rsplit(")", 1)[1].split()[1])


def test_a_killed_xdist_worker_leaves_no_container(setup: tuple[Path, str], tmp_path: Path) -> None:  # noqa: F811
    checkout, image = setup
    tasks = ["gedit_reformat_json", "pcmanfm_permission_lockdown", "gedit_log_filter_errors"]
    uid = f"wk{os.getpid()}{tmp_path.name}".replace("_", "")[:16]
    killed: list[int] = []

    def kill_a_worker() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            lines = _docker("ps", "--filter", f"label=gui-synth-env.meta.run_id=agentbench-{uid}", "--format",
                            "{{.Label \"" + PID_LABEL + "\"}}").stdout.split()
            if lines:
                try:
                    worker = _parent(int(lines[0]))  # the container's maker -> the xdist worker that started it
                    os.kill(worker, signal.SIGKILL)
                except (OSError, ValueError):
                    time.sleep(0.5)
                    continue
                killed.append(worker)
                return
            time.sleep(0.5)

    killer = threading.Thread(target=kill_a_worker, daemon=True)
    killer.start()
    records = plugin_run(checkout, image, tmp_path, tasks, "-n", "2", f"--testrunuid={uid}")
    killer.join()
    assert killed, "no container appeared"
    graded = [r for r in records.values() if r["criteria"]]
    assert len(graded) == 2, records  # all but the item the worker died in
    deadline = time.monotonic() + 90
    while _ours(uid) and time.monotonic() < deadline:
        time.sleep(1)
    assert not _ours(uid), _ours(uid)  # without the reaper


def test_an_image_without_the_desktop_stack_is_a_usage_error(setup: tuple[Path, str],  # noqa: F811
                                                             tmp_path: Path) -> None:
    """The test image's Debian base (no entrypoint, no desktop) stands for any image that is not
    OpenComputer's: one usage line at start, no container made."""
    checkout, _ = setup
    bases = _docker("images", "agentbench-debian-minbase", "--format", "{{.Repository}}:{{.Tag}}").stdout.split()
    if not bases:
        pytest.skip("the test image's base is not on this daemon (it was built elsewhere)")
    run = f"plain-{os.getpid()}"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--bench=opencomputer",
                           f"--opencomputer-tasks={checkout}", "--opencomputer-backend=docker",
                           f"--opencomputer-image={bases[0]}", "--bench-task=gedit_reformat_json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "AGENTBENCH_RUN_ID": run})
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-2000:] + done.stderr[-2000:]
    said = f"ERROR: --opencomputer-backend docker: Docker image '{bases[0]}' is not an OpenComputer desktop image"
    assert said + " (its entrypoint is" in done.stderr, done.stderr
    assert not _ours(run)
