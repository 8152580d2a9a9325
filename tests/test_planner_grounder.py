"""``--bench-agent planner-grounder``: api-claude plans, api-vlm grounds, each against its loopback fake."""

from __future__ import annotations

import json

import pytest
from conftest import only_run_folder, results
from fake_anthropic import FakeMessagesServer, message, ok, text, tool_use, turns
from fake_chat import FakeChatAPI
from fake_chat import ok as chat_ok

from pytest_agentbench.agent import Agent, Usage
from pytest_agentbench.agents.planner_grounder import PlannerGrounderAgent
from pytest_agentbench.benches.mock.bench import ELEMENTS, SCREEN
from pytest_agentbench.model import Action, Observation, Task

pytest.importorskip("anthropic")
pytest.importorskip("openai")

KEY = "sk-ant-test-planner-0123456789"
SUBMIT = next(e for e in ELEMENTS if e.name == "Submit")


def planner_script(request, headers):
    """Claude says what it does in words but points at the wrong place (the top-left corner)."""
    if turns(request) == 0:
        return ok(message(text("Click the Submit button."), tool_use("left_click", coordinate=[1, 1])))
    return ok(message(text("The form is submitted.\nDONE")))


def grounder_script(request, headers):
    """The grounder clicks Submit's centre when the instruction names it (pixels of the sent image)."""
    instruction = request["messages"][1]["content"][0]["text"]
    if "Submit" not in instruction:
        return chat_ok('{"type": "fail", "reason": "I do not know what to click"}')
    left, top, right, bottom = SUBMIT.box
    scale = 1280 / SCREEN[0] if SCREEN[0] > 1280 else 1.0
    return chat_ok(json.dumps({"type": "click", "x": round((left + right) / 2 * scale),
                               "y": round((top + bottom) / 2 * scale)}), prompt_tokens=900, completion_tokens=12)


def test_the_grounder_places_the_planners_click_and_both_costs_are_recorded(run, pytester, monkeypatch):
    with FakeMessagesServer(planner_script) as claude, FakeChatAPI(grounder_script) as vlm:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", claude.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        result = run("--bench=mock", "--bench-limit", "2", "--bench-agent", "planner-grounder",
                     "--bench-planner", "api-claude", "--bench-grounder", "api-vlm",
                     "--bench-planner-model", "claude-sonnet-4-6", "--bench-grounder-model", "served-vlm",
                     "--bench-agent-url", vlm.url, "--bench-agent-dialect", "json", "-n", "2")
    result.assert_outcomes(passed=2)  # the planner's own point (the corner) would have missed Submit
    assert len(claude.requests) == 4 and len(vlm.requests) == 2
    assert {r["model"] for r in claude.requests} == {"claude-sonnet-4-6"}
    assert {r["model"] for r in vlm.requests} == {"served-vlm"}
    assert "Click the Submit button." in vlm.requests[0]["messages"][1]["content"][0]["text"]
    folder = only_run_folder(pytester.path)
    assert all(r["success"] for r in results(folder))
    trajectory = json.loads(next((folder / "tasks" / "mock").glob("*.trajectory.json")).read_text())
    click, done = trajectory["steps"]
    split = click["action"]["raw"]["planner_grounder"]
    assert split["planner"]["model"] == "claude-sonnet-4-6" and split["planner"]["cost_usd"] > 0
    assert split["grounder"]["model"] == "served-vlm" and split["grounder"]["input_tokens"] == 900
    assert split["planned"]["x"] == 2 and split["planned"]["y"] == 2  # what the planner alone would have clicked
    assert click["usage"]["model"] == "claude-sonnet-4-6 + served-vlm"
    assert click["usage"]["input_tokens"] == 2000 + 900
    assert done["action"]["raw"]["planner_grounder"]["grounder"] is None  # done needs no grounding


class _Scripted(Agent):
    def __init__(self, *actions: Action, model: str = "m") -> None:
        self.actions, self.model, self.seen = list(actions), model, []
        self._used = False

    def act(self, observation, task, history=None):
        self.seen.append(task.instruction)
        self._used = True
        return self.actions.pop(0)

    def take_usage(self):
        used, self._used = self._used, False
        return Usage(input_tokens=10, calls=1, cost_usd=0.5, model=self.model) if used else None


def test_without_a_point_from_the_grounder_the_planners_target_is_played_and_noted():
    planner = _Scripted(Action(type="click", x=5, y=6, unit="px", reason="press OK"))
    grounder = _Scripted(Action(type="error", reason="unparseable"))
    agent = PlannerGrounderAgent(planner, grounder)
    action = agent.act(Observation(), Task(task_id="t"), [])
    assert (action.type, action.x, action.y) == ("click", 5, 6)
    assert "the grounder gave no point (error: unparseable)" in action.raw["planner_grounder"]["note"]
    assert grounder.seen == ["On the current screen, do exactly this one step and nothing else: press OK"]
    assert agent.take_usage().cost_usd == 1.0 and agent.take_usage() is None


def test_non_pointing_steps_and_wordless_points_are_not_grounded():
    planner = _Scripted(Action(type="type", text="hello"), Action(type="click", x=1, y=1, unit="px"))
    grounder = _Scripted()
    agent = PlannerGrounderAgent(planner, grounder)
    typed = agent.act(Observation(), Task(task_id="t"), [])
    click = agent.act(Observation(), Task(task_id="t"), [])
    assert typed.text == "hello" and grounder.seen == []
    assert "no words" in click.raw["planner_grounder"]["note"]


@pytest.mark.parametrize(("args", "message_"), [
    ((), "needs --bench-planner NAME"),
    (("--bench-planner", "mock"), "needs --bench-grounder NAME"),
    (("--bench-planner", "mock", "--bench-grounder", "nope"), "--bench-grounder 'nope' is not an agent to compose"),
    (("--bench-planner", "planner-grounder", "--bench-grounder", "mock"), "is not an agent to compose"),
])
def test_bad_compositions_are_usage_errors(run, args, message_):
    result = run("--bench=mock", "--bench-limit", "1", "--bench-agent", "planner-grounder", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message_ in result.stderr.str()
