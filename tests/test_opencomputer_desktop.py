"""The desktop path for real: an agent plays an OpenComputer task on gedit under Xvfb.

The task, its setup and its verifier are OpenComputer's own (the checkout named by
``AGENTBENCH_OPENCOMPUTER_UPSTREAM``); gedit is Debian's; the agent's actions are real X input
events (pyautogui code run in the sandbox, as OpenComputer runs them); screenshots are taken with
``scrot`` as OpenComputer's Docker backend takes them and land in the run folder. Needs Xvfb,
openbox, gedit, scrot and the image's Python packages (``.ci/run`` installs them); without them the
tests skip with the reason, and fail instead under ``AGENTBENCH_REQUIRE_INTEROP=1``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from interop import unavailable as _unavailable

from pytest_agentbench.infra.sandbox import probe_bwrap

TASK = "gedit_sort_lines_manually"
SORTED = "Apple\nBanana\nCherry\nDate\nElderberry\nFig\nGrape\nMango"
#: focus the editor, select all, type the sorted lines, save
SCRIPT = [{"type": "wait", "seconds": 2}, {"type": "click", "x": 960, "y": 540},
          {"type": "hotkey", "keys": ["ctrl", "a"]}, {"type": "type", "text": SORTED},
          {"type": "hotkey", "keys": ["ctrl", "s"]}, {"type": "wait", "seconds": 2}]
#: the same as a replay bundle: the click by a point (no accessibility tree on this screen)
WORKFLOW = {"steps": [{"action": "wait", "seconds": 2}, {"action": "click", "at": [0.5, 0.5]},
                      {"action": "hotkey", "keys": ["ctrl", "a"]},
                      {"action": "type", "text": SORTED}, {"action": "hotkey", "keys": ["ctrl", "s"]},
                      {"action": "wait", "seconds": 2}]}


@pytest.fixture(scope="module")
def upstream() -> Path:
    value = os.environ.get("AGENTBENCH_OPENCOMPUTER_UPSTREAM")
    if not value or not (Path(value) / "task_generator" / "tasks" / TASK / "task.json").is_file():
        _unavailable(f"AGENTBENCH_OPENCOMPUTER_UPSTREAM does not name an OpenComputer checkout with {TASK}")
    for tool in ("Xvfb", "openbox", "gedit", "scrot"):
        if shutil.which(tool) is None:
            _unavailable(f"{tool} is not installed (Debian: apt-get install xvfb openbox gedit scrot)")
    if probe_bwrap()[0] is None:
        _unavailable(f"bubblewrap cannot run here: {probe_bwrap()[1]}")
    from pytest_agentbench.benches.opencomputer.image import missing_packages

    # Found, not imported: importing pyautogui needs a display and leaves pipes open (pyscreeze).
    if importlib.util.find_spec("pyautogui") is None:
        _unavailable("pyautogui is not installed (pip install -e '.[opencomputer]' in the checkout)")
    if missing_packages():
        _unavailable("this interpreter lacks the image's packages (pip install -e '.[opencomputer]' in the checkout)")
    return Path(value)


@pytest.fixture(scope="module")
def display(upstream: Path) -> Iterator[str]:
    """A fresh Xvfb display at OpenComputer's 1920x1080 with openbox; both stopped afterwards."""
    read, write = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1920x1080x24", "-nolisten", "tcp"],
                            pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    os.close(write)
    with os.fdopen(read) as pipe:
        number = pipe.readline().strip()
    if not number:
        xvfb.kill()
        _unavailable("Xvfb did not start")
    name = f":{number}"
    wm = subprocess.Popen(["openbox"], env={**os.environ, "DISPLAY": name}, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        yield name
    finally:
        for proc in (wm, xvfb):
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)


def play(upstream: Path, display: str, folder: Path, *agent: str) -> tuple[dict[str, Any], Path]:
    env = {**os.environ, "DISPLAY": display}
    env.pop("XAUTHORITY", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs",
                           "--bench=opencomputer", "--opencomputer-tasks", str(upstream), "--bench-task", TASK,
                           "--bench-screenshots", "on", "--bench-results-dir", str(folder / "results"), *agent],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=300, check=False)
    [run] = list((folder / "results").iterdir())
    [record] = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]
    assert record["error"] is None, done.stdout[-3000:]
    return record, run


def _screenshots(run: Path) -> list[Path]:
    return sorted((run / "tasks" / "opencomputer" / TASK).glob("*.png"))


def test_the_scripted_agent_solves_a_gedit_task_through_real_input_events(upstream: Path, display: str,
                                                                          tmp_path: Path):
    (tmp_path / "script.json").write_text(json.dumps({TASK: SCRIPT}))
    record, run = play(upstream, display, tmp_path, "--bench-agent", "scripted", "--bench-agent-script",
                       str(tmp_path / "script.json"))
    assert (record["passed"], record["score"], record["num_steps"]) == (True, 1.0, len(SCRIPT))
    assert [c["passed"] for c in record["criteria"]] == [True] * 10  # OpenComputer's verifier, every check
    from PIL import Image, ImageChops

    shots = _screenshots(run)
    assert len(shots) == len(SCRIPT) + 2  # the screen before each step, before "done", and the final one
    folder = run / "tasks" / "opencomputer" / TASK
    with Image.open(folder / "step_000.png") as first, Image.open(folder / "final.png") as final:
        assert first.size == final.size == (1920, 1080)
        assert final.convert("L").getextrema() == (0, 255)  # a rendered window, not a blank screen
        assert ImageChops.difference(first.convert("RGB"), final.convert("RGB")).getbbox() is not None


def test_the_replay_agent_solves_it_too(upstream: Path, display: str, tmp_path: Path):
    (tmp_path / "bundles" / TASK).mkdir(parents=True)
    (tmp_path / "bundles" / TASK / "workflow.json").write_text(json.dumps(WORKFLOW, indent=1))
    record, run = play(upstream, display, tmp_path, "--bench-agent", "replay",
                       "--bench-replay-bundles", str(tmp_path / "bundles"))
    assert (record["passed"], record["score"]) == (True, 1.0)
    assert _screenshots(run)


def test_an_agent_that_does_nothing_fails_with_the_start_state_score(upstream: Path, display: str, tmp_path: Path):
    record, _ = play(upstream, display, tmp_path, "--bench-agent", "noop")
    assert record["passed"] is False and 0 < record["score"] < 1  # the file exists, the order is wrong
