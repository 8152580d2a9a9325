"""Budgets (``--bench-max-cost-usd``, ``--bench-max-cost-usd-per-task``), the screenshot scrubber hook and
``--bench-dry-run``, with a conftest agent that reports model usage the way a model-backed agent does."""

from __future__ import annotations

import io
import json

import pytest
from conftest import only_run_folder, results
from PIL import Image

PAID_AGENT = '''
import pytest
from pytest_agentbench import Action, Agent, StepEstimate, Usage


class Paid(Agent):
    """Waits, clicks Submit, says done: three model calls at 10 cents each."""

    def __init__(self):
        self.n = 0
        self.usage = None

    def reset(self):
        self.n = 0

    def act(self, observation, task, history=None):
        self.n += 1
        self.usage = Usage(input_tokens=1000, output_tokens=100, cost_usd=0.10, calls=1, model="fake-1")
        if self.n == 1:
            return Action(type="wait", seconds=0)
        if self.n == 2:
            return Action(type="click", target_id="submit")
        return Action(type="done")

    def take_usage(self):
        usage, self.usage = self.usage, None
        return usage

    def estimate_step(self, screen):
        w, h = screen
        return StepEstimate(cost_usd=0.01, input_tokens=w * h // 750 + 500, output_tokens=300, model="fake-1",
                            how=f"{w}x{h} screenshot + 500 text tokens in, 300 out")


def pytest_agentbench_register_agents(registry):
    registry.register("paid", lambda config: Paid())
'''


@pytest.fixture
def paid(pytester):
    pytester.makeconftest(PAID_AGENT)
    tree = pytester.path
    return tree


def mock_submit_id() -> str:
    from pytest_agentbench.benches.mock.bench import accessibility_tree

    def find(node):
        if node.get("name") == "Submit":
            return node
        for child in node.get("children", ()):
            hit = find(child)
            if hit:
                return hit
        return None

    return str(find(accessibility_tree())["id"])


def test_usage_is_recorded_per_step_and_summed(run, paid):
    paid.joinpath("conftest.py").write_text(PAID_AGENT.replace('"submit"', repr(mock_submit_id())))
    result = run("--bench=mock", "--bench-limit", "2", "--bench-agent", "paid", "--bench-screenshots", "off")
    result.assert_outcomes(passed=2)
    folder = only_run_folder(paid)
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["total_cost_usd"] == pytest.approx(0.60)
    assert summary["budget"] is None
    trajectory = json.loads(next(folder.glob("tasks/mock/*.trajectory.json")).read_text())
    assert [s["usage"]["cost_usd"] for s in trajectory["steps"]] == [0.10, 0.10, 0.10]
    assert trajectory["steps"][0]["usage"] == {"input_tokens": 1000, "output_tokens": 100, "cost_usd": 0.10,
                                               "calls": 1, "model": "fake-1"}


def test_a_spent_task_cap_fails_that_task_as_an_agent_error(run, paid):
    paid.joinpath("conftest.py").write_text(PAID_AGENT.replace('"submit"', repr(mock_submit_id())))
    result = run("--bench=mock", "--bench-limit", "2", "--bench-agent", "paid", "--bench-max-cost-usd-per-task", "0.15")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*per-task budget spent: --bench-max-cost-usd-per-task $0.15 reached ($0.20)*"])
    records = results(only_run_folder(paid))
    assert all(r["error_type"] == "agent" and r["num_steps"] == 2 for r in records)


def test_a_spent_run_cap_skips_the_rest_and_the_summary_says_so(run, paid):
    paid.joinpath("conftest.py").write_text(PAID_AGENT.replace('"submit"', repr(mock_submit_id())))
    result = run("--bench=mock", "--bench-limit", "4", "--bench-agent", "paid", "--bench-max-cost-usd", "$0.50")
    # Task 1 spends 0.30 and passes; task 2 is cut off at 0.50 (not evaluated); 3 and 4 never start.
    result.assert_outcomes(passed=1, skipped=3)
    result.stdout.fnmatch_lines([
        "*Budget: $0.50 spent (caps: run $0.50); the run's budget is spent: 3 item(s) skipped (budget spent)*"])
    summary = json.loads((only_run_folder(paid) / "summary.json").read_text())
    assert summary["budget"] == {"max_cost_usd": 0.5, "max_cost_usd_per_task": None, "spent_usd": pytest.approx(0.5),
                                 "exhausted": True, "budget_skipped": 3}
    assert summary["num_tasks"] == 4 and summary["success_count"] == 1
    reasons = [r["reason"] for r in results(only_run_folder(paid))]
    assert sum("budget spent" in r for r in reasons) == 3


def test_the_run_cap_holds_across_xdist_workers(run_sub, paid):
    paid.joinpath("conftest.py").write_text(PAID_AGENT.replace('"submit"', repr(mock_submit_id())))
    result = run_sub("--bench=mock", "--bench-limit", "8", "--bench-agent", "paid", "--bench-max-cost-usd", "0.9",
                     "-n", "2")
    summary = json.loads((only_run_folder(paid) / "summary.json").read_text())
    budget = summary["budget"]
    assert budget["exhausted"] is True
    # Each worker may finish the call it had started: at most one step (0.10) over per worker.
    assert 0.9 <= budget["spent_usd"] <= 0.9 + 2 * 0.10 + 1e-9
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped", 0) >= 3 and outcomes.get("passed", 0) + outcomes.get("skipped", 0) == 8


@pytest.mark.parametrize("bad", ["nothing", "0", "-1"])
def test_a_bad_cap_is_a_usage_error(run_sub, paid, bad):
    result = run_sub("--bench=mock", "--bench-limit", "1", "--bench-agent", "paid", "--bench-max-cost-usd", bad)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --bench-max-cost-usd must be *"])


SCRUBBERS = '''
import io
from PIL import Image

SEEN = []


def _fill(png, colour):
    image = Image.open(io.BytesIO(png)).convert("RGB")
    image.paste(colour, (0, 0, image.width // 2, image.height))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def pytest_agentbench_scrub_screenshot(png, task):
    # Runs after the plugin registered below (hooks run latest-registered first), on its output.
    image = Image.open(io.BytesIO(png)).convert("RGB")
    assert image.getpixel((1, 1)) == (0, 0, 0), "the scrubbers did not run in turn"
    return None


class Painter:
    def pytest_agentbench_scrub_screenshot(self, png):
        return _fill(png, (0, 0, 0))  # the left half goes black


def pytest_configure(config):
    config.pluginmanager.register(Painter(), "painter-scrubber")
'''

SEEING_AGENT = '''
import io
import json
import os
from PIL import Image
from pytest_agentbench import Action, Agent


class Looks(Agent):
    def act(self, observation, task, history=None):
        image = Image.open(io.BytesIO(observation.screenshot)).convert("RGB")
        with open(os.environ["SEEN_FILE"], "a") as out:
            out.write(json.dumps(image.getpixel((2, 2))) + "\\n")
        return Action(type="done")


def pytest_agentbench_register_agents(registry):
    registry.register("looks", lambda config: Looks())
'''


def test_the_scrubber_runs_before_the_agent_and_before_the_run_folder(run, pytester, monkeypatch):
    pytester.makeconftest(SCRUBBERS + SEEING_AGENT)
    seen = pytester.path / "seen.jsonl"
    monkeypatch.setenv("SEEN_FILE", str(seen))
    result = run("--bench=mock", "--bench-limit", "2", "--bench-agent", "looks", "--bench-screenshots", "on")
    result.assert_outcomes(failed=2)
    assert [json.loads(line) for line in seen.read_text().splitlines()] == [[0, 0, 0], [0, 0, 0]]
    pngs = list(only_run_folder(pytester.path).glob("tasks/mock/*/*.png"))
    assert pngs
    for png in pngs:
        image = Image.open(io.BytesIO(png.read_bytes())).convert("RGB")
        assert (image.getpixel((2, 2)) == (0, 0, 0)
                and image.getpixel((image.width // 4, image.height // 2)) == (0, 0, 0))


def test_dry_run_prices_the_selected_tasks_and_starts_nothing(run, paid, pytester):
    result = run("--bench=mock", "--bench-limit", "5", "--bench-agent", "paid", "--bench-dry-run",
                 "-k", "not chrome_001")
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "Dry run: estimated cost",
        "  4 tasks (agent paid, fake-1):",
        "    VM-hours:              none (no --pool aws|azure: the WAA server is yours)",
        "    Agent token cost:      $0.60  (paid tasks=4, 15 steps each)",
        "    -> TOTAL:              $0.60   ($0.1500/task)",
        "  A step: 1920x1200 screenshot + 500 text tokens in, 300 out. Steps per task are each task's step limit*",
        "  Nothing was started and no model was called.",
    ])
    assert not (pytester.path / "benchmark_results").exists()


WAA_DATA = __import__("pathlib").Path(__file__).parent / "data" / "waa"


def test_dry_run_of_a_replay_has_the_reference_block_with_its_vm_assumptions(run, pytester):
    """The reference tool's replay estimate (154 tasks, one VM-minute each, $0.19/h, one VM) comes
    out to the same VM figures; the baseline is api-claude's own estimate, with no key needed."""
    bundles = pytester.path / "bundles" / "any"
    bundles.mkdir(parents=True)
    (bundles / "workflow.json").write_text('{"schema": "pytest-agentbench/workflow/v1", "steps": []}')
    result = run("--bench=waa", "--waa-examples", str(WAA_DATA), "--bench-agent", "replay", "--bench-replay-bundles",
                 str(pytester.path / "bundles"), "--bench-dry-run", "--pool", "azure", "--pool-hourly-usd", "0.19",
                 "--pool-minutes-per-task", "1")
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "  154 tasks (agent replay):",
        "    Azure VM-hours:        2.82 vm-hours @ $0.1900/hr = $0.54",
        "    Agent token cost:      $0.00  (paid tasks=0, 0 steps each)",
        "    -> TOTAL:              $0.54   ($0.0035/task)",
        "    Pure-agent baseline:   $*   (15 steps/task with api-claude claude-sonnet-4-6, all paid)",
        "    Savings vs baseline:   $*",
        "  Nothing was started and no model was called.",
    ])


def test_dry_run_of_api_claude_needs_no_key(run, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    result = run("--bench=waa", "--waa-examples", str(WAA_DATA), "--bench-agent", "api-claude", "--bench-dry-run",
                 "--bench-max-steps", "22", "-m", "notepad")
    assert result.ret == 0
    # 1920x1080 is sent at 1280x720: 1229 image tokens + 500 text in, 300 out, at $3/$15 per million.
    per_step = (1229 + 500) * 3e-6 + 300 * 15e-6
    lines = [line for line in result.stdout.lines if "Agent token cost" in line]
    tasks = int(next(line for line in result.stdout.lines if "tasks (agent api-claude" in line).split()[0])
    assert lines == [f"    Agent token cost:      ${tasks * 22 * per_step:.2f}  (paid tasks={tasks}, 22 steps each)"]
