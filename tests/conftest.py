"""Shared helpers for the plugin's own tests. Every plugin-facing test runs real pytest sessions
through ``pytester``; nothing here fakes pytest."""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path
from typing import Any

import httpx
import pytest

import pytest_agentbench

# pytester's in-process runs drop the modules a run imported when it ends; a class imported by an
# inner conftest would then differ from the one the plugin checks against in the next run. Importing
# the whole package here keeps one copy of every module for the whole test session.
# The same for httpx: its transport maps httpcore's exceptions through classes it loads on first
# use, so one refused loopback request here loads them before any inner run can drop them.
try:
    httpx.get("http://127.0.0.1:9/", timeout=0.5)
except httpx.HTTPError:
    pass
for _module in pkgutil.walk_packages(pytest_agentbench.__path__, "pytest_agentbench."):
    try:
        importlib.import_module(_module.name)
    except ImportError:  # optional extras (cloud SDKs) that are not installed
        pass

# Plugins that may be installed on a developer machine and would only add noise to inner runs.
QUIET = ("-p", "no:benchmark", "-p", "no:randomly", "-p", "no:hypothesispytest")


@pytest.fixture
def run(pytester: pytest.Pytester):
    """Run pytest in-process in the pytester folder with the noise plugins off."""

    def _run(*args: str) -> pytest.RunResult:
        return pytester.runpytest(*args, *QUIET)

    return _run


@pytest.fixture
def run_sub(pytester: pytest.Pytester):
    """Run pytest in a subprocess (for xdist and for anything that must not share the process)."""

    def _run(*args: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess(*args, *QUIET)

    return _run


def run_folders(root: Path) -> list[Path]:
    base = root / "benchmark_results"
    return sorted(p for p in base.iterdir() if p.is_dir()) if base.exists() else []


def only_run_folder(root: Path) -> Path:
    folders = run_folders(root)
    assert len(folders) == 1, folders
    return folders[0]


def results(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines() if line.strip()]


# A conftest that registers a benchmark whose tasks end in every way an episode can end.
OUTCOME_BENCH = '''
import pytest
from pytest_agentbench import Benchmark, Task, Observation, Verdict, Criterion, Action, Agent

KINDS = ["pass", "fail", "partial", "unevaluated", "infra", "checker_crash", "agent_crash", "agent_error"]

class OutcomeBench(Benchmark):
    name = "outcomes"
    def list_tasks(self, limit=None):
        return [Task(task_id=k, domain="d", instruction=k) for k in KINDS]
    def reset(self, task):
        if task.task_id == "infra":
            raise ConnectionError("VM unreachable")
        self.task = task
        self.final = None
        return Observation(window_title=task.task_id)
    def step(self, action):
        return Observation(window_title="stepped")
    def evaluate(self, task, final_action):
        k = task.task_id
        if k == "checker_crash":
            raise RuntimeError("checker exploded")
        if k == "pass":
            return Verdict(score=1.0, passed=True, reason="ok")
        if k == "fail":
            return Verdict(score=0.0, passed=False, reason="wrong file content")
        if k == "partial":
            return Verdict.from_criteria([Criterion(name="a", passed=True), Criterion(name="b", passed=False)])
        return Verdict(score=0.0, passed=None, reason="needs an LLM judge")

class OutcomeAgent(Agent):
    name = "outcome-agent"
    def act(self, observation, task, history=None):
        if task.task_id == "agent_crash":
            raise ValueError("model returned garbage")
        if task.task_id == "agent_error":
            return Action(type="error", reason="gave up")
        if history:
            return Action(type="done")
        return Action(type="click", x=10, y=10)

def pytest_agentbench_register_benchmarks(registry):
    registry.register("outcomes", lambda config: OutcomeBench())

def pytest_agentbench_register_agents(registry):
    registry.register("outcome-agent", lambda config: OutcomeAgent())
'''


CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--no-first-run"]


def browser_unavailable(reason: str) -> None:
    """Skip a browser test here, but fail it in CI, which must install Debian's chromium."""
    import os

    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI is set, and CI must install it, so this fails instead of skipping")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (Debian's, never a downloaded one) through Playwright, one per module."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        browser_unavailable("browser tests need the playwright package (pip install playwright)")
    if not CHROMIUM.exists():
        browser_unavailable(f"browser tests need Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield chromium
        chromium.close()
