"""MockMed's ``agent`` arm played by every model agent through its real SDK and a loopback fake.

Each fake answers as its provider would, one step per call: a click at a MockMed control (from
``mockmed_play``, scaled to the screenshot the request carries, in the agent's own coordinates),
typing, then the agent's way of saying it is done. The run is real: the app, the headless driver's
screenshots, ``-n 2``, and MockMed's own checker reading the stored record back from SQLite. No
real model is called. A fake that opens the wrong patient must fail by the checker."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest
from conftest import only_run_folder, results
from fake_anthropic import FakeMessagesServer, member, message, text, tool_use
from fake_anthropic import images as claude_images
from fake_anthropic import ok as claude_ok
from fake_chat import FakeChatAPI
from fake_chat import images as chat_images
from fake_chat import ok as chat_ok
from fake_openai import FakeResponsesAPI, call, reasoning, response, say
from fake_openai import ok as openai_ok
from mockmed_play import WRONG_ROW, Replayer, ScreenStep, screen_steps

pytest.importorskip("anthropic")
pytest.importorskip("openai")

KEY = "sk-test-mockmed-agents-0123456789"
#: One MockMed item: the agent arm, one condition, one run; on two workers.
MOCKMED = ("--bench=mockmed", "--mockmed-arm", "agent", "--mockmed-condition", "clean", "--mockmed-runs", "1",
           "-n", "2")
STEPS = 11  # the workflow's clicks and typing, as the scripted arms play it (a model call each, then DONE)


def assert_passed_with_cost(result: pytest.RunResult, pytester: pytest.Pytester, agent: str) -> dict[str, Any]:
    """The checker passed the one item, its record names ``agent`` and has a cost; returns the record."""
    result.assert_outcomes(passed=1)
    folder = only_run_folder(pytester.path)
    (row,) = results(folder)
    assert row["success"] and row["agent"] == agent and row["cost_usd"] > 0, row
    assert row["task_id"] == "clean-agent-run1" and row["benchmark"] == "mockmed"
    assert json.loads((folder / "summary.json").read_text())["total_cost_usd"] > 0
    assert folder.name.startswith(f"mockmed_{agent}_")  # the run's agent played, not the arms
    trajectory = json.loads(next((folder / "tasks" / "mockmed").glob("*.trajectory.json")).read_text())
    kinds = [s["action"]["type"] for s in trajectory["steps"]]
    assert kinds == [s.kind for s in screen_steps()] + ["done"], kinds
    result.stdout.fnmatch_lines(["Condition *The run's agent*", "clean *1/1*", "wrong writes: 0"])
    return row


# ------------------------------------------------------------------ api-claude
def claude_script(replayer: Replayer, toolset: bool):
    """Claude's computer tool (``toolset``: the 5.5 models' member calls), points in the pixels of
    the screenshot it was last sent."""
    def use(action: str, **params: Any) -> dict[str, Any]:
        return member(action, **params) if toolset else tool_use(action, **params)

    def script(request: dict[str, Any], headers: dict[str, str]):
        step = replayer.next()
        if step is None:
            return claude_ok(message(text("The encounter is saved.\nDONE"), model=request["model"]))
        if step.kind == "type":
            return claude_ok(message(use("type", text=step.text), model=request["model"]))
        width, height = claude_images(request)[-1]
        return claude_ok(message(text(step.words), use("left_click", coordinate=step.pixels(width, height)),
                                 model=request["model"]))

    return script


@pytest.fixture
def anthropic_env(monkeypatch):
    def start(script):
        server = started.append(FakeMessagesServer(script).__enter__()) or started[-1]
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        return server

    started: list[FakeMessagesServer] = []
    yield start
    for server in started:
        server.__exit__()


@pytest.mark.parametrize(("model", "tool"), [("claude-sonnet-4-5", "computer_20250124"),
                                             ("claude-sonnet-5-5", "computer_toolset_20260801")])
def test_api_claude_plays_mockmed_to_a_pass(run, pytester, anthropic_env, model, tool):
    replayer = Replayer()
    server = anthropic_env(claude_script(replayer, toolset=tool.startswith("computer_toolset")))
    result = run(*MOCKMED, "--bench-agent", "api-claude", "--bench-agent-model", model)
    assert_passed_with_cost(result, pytester, "api-claude")
    assert len(server.requests) == STEPS + 1
    assert {r["tools"][0]["type"] for r in server.requests} == {tool}
    assert "nurse.demo" in json.dumps(server.requests[0]["messages"][0])  # the sign-in is in the instruction
    assert claude_images(server.requests[0]) == [(1280, 800)]  # MockMed's screenshot, at its viewport


def test_a_wrong_click_fails_by_the_checker(run, pytester, anthropic_env):
    anthropic_env(claude_script(Replayer(WRONG_ROW), toolset=False))
    result = run(*MOCKMED, "--bench-agent", "api-claude")
    result.assert_outcomes(failed=1)
    (row,) = results(only_run_folder(pytester.path))
    assert not row["success"] and row["agent"] == "api-claude" and row["cost_usd"] > 0
    assert row["reason"].startswith("wrong write: Triage for p2"), row["reason"]
    result.stdout.fnmatch_lines(["clean *0/1*", "wrong writes: 1: *"])


# ------------------------------------------------------------------ api-openai
def last_screenshot(request: dict[str, Any]) -> tuple[int, int]:
    """The size of the newest screenshot a Responses API request carries (the task message's on
    the first turn, a ``computer_call_output``'s after)."""
    from PIL import Image

    urls = [part["image_url"] for item in request["input"] if isinstance(item, dict)
            for part in (item.get("content") if isinstance(item.get("content"), list) else [])
            if part.get("type") == "input_image"]
    urls += [item["output"]["image_url"] for item in request["input"]
             if isinstance(item, dict) and item.get("type") == "computer_call_output"]
    data = urls[-1].split(",", 1)[1]
    with Image.open(io.BytesIO(base64.b64decode(data))) as image:
        return image.size


def openai_script(replayer: Replayer):
    def script(request: dict[str, Any], turn: int):
        step = replayer.next()
        if step is None:
            return openai_ok(response(say("The encounter is saved.\nDONE")))
        if step.kind == "type":
            return openai_ok(response(call({"type": "type", "text": step.text})))
        x, y = step.pixels(*last_screenshot(request))
        return openai_ok(response(reasoning(), call({"type": "click", "button": "left", "x": x, "y": y})))

    return script


def test_api_openai_plays_mockmed_to_a_pass(run, pytester, monkeypatch):
    with FakeResponsesAPI(openai_script(Replayer())) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        result = run(*MOCKMED, "--bench-agent", "api-openai")
    assert_passed_with_cost(result, pytester, "api-openai")
    assert len(fake.requests) == STEPS + 1


# ------------------------------------------------------------------ api-vlm
def vlm_reply(dialect: str, step: ScreenStep | None, size: tuple[int, int]) -> str:
    if dialect == "qwen3vl":
        if step is None:
            args: dict[str, Any] = {"action": "terminate", "status": "success"}
        elif step.kind == "type":
            args = {"action": "type", "text": step.text}
        else:
            args = {"action": "left_click", "coordinate": step.thousandths()}
        return f"<tool_call>\n{json.dumps({'name': 'computer_use', 'arguments': args})}\n</tool_call>"
    if step is None:
        return '{"type": "done"}'
    if step.kind == "type":
        return json.dumps({"type": "type", "text": step.text})
    x, y = step.pixels(*size)
    return json.dumps({"type": "click", "x": x, "y": y})


def vlm_script(replayer: Replayer, dialect: str):
    def script(request: dict[str, Any], headers: dict[str, str]):
        # The endpoint reports its charge (as OpenRouter does): a served model has no list price.
        return chat_ok(vlm_reply(dialect, replayer.next(), chat_images(request)[-1]), cost=0.0004)

    return script


@pytest.mark.parametrize("dialect", ["json", "qwen3vl"])
def test_api_vlm_plays_mockmed_to_a_pass(run, pytester, dialect):
    with FakeChatAPI(vlm_script(Replayer(), dialect)) as fake:
        result = run(*MOCKMED, "--bench-agent", "api-vlm", "--bench-agent-url", fake.url, "--bench-agent-model",
                     "served-vlm", "--bench-agent-dialect", dialect)
    row = assert_passed_with_cost(result, pytester, "api-vlm")
    assert len(fake.requests) == STEPS + 1
    assert row["cost_usd"] == pytest.approx(0.0004 * (STEPS + 1))
    assert chat_images(fake.requests[0]) == [(1280, 800)]


# ------------------------------------------------------------------ planner-grounder
def planner_script(replayer: Replayer):
    """Claude plans in words, pointing at the top-left corner: only the grounder's point can hit."""
    def script(request: dict[str, Any], headers: dict[str, str]):
        step = replayer.next()
        if step is None:
            return claude_ok(message(text("The encounter is saved.\nDONE")))
        if step.kind == "type":
            return claude_ok(message(tool_use("type", text=step.text)))
        return claude_ok(message(text(step.words), tool_use("left_click", coordinate=[1, 1])))

    return script


def grounder_script(replayer: Replayer):
    """The grounder finds the control the planner's words name, in the pixels of the image sent."""
    def script(request: dict[str, Any], headers: dict[str, str]):
        words = request["messages"][1]["content"][0]["text"]
        step = replayer.grounding(words)
        if step is None:
            return chat_ok('{"type": "fail", "reason": "I do not see that"}')
        x, y = step.pixels(*chat_images(request)[-1])
        return chat_ok(json.dumps({"type": "click", "x": x, "y": y}), prompt_tokens=900, completion_tokens=12)

    return script


def test_planner_grounder_plays_mockmed_to_a_pass(run, pytester, monkeypatch):
    replayer = Replayer()
    with FakeMessagesServer(planner_script(replayer)) as claude, FakeChatAPI(grounder_script(replayer)) as vlm:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", claude.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        result = run(*MOCKMED, "--bench-agent", "planner-grounder", "--bench-planner", "api-claude",
                     "--bench-grounder", "api-vlm", "--bench-planner-model", "claude-sonnet-4-6",
                     "--bench-grounder-model", "served-vlm", "--bench-agent-url", vlm.url,
                     "--bench-agent-dialect", "json")
    assert_passed_with_cost(result, pytester, "planner-grounder")
    clicks = sum(1 for s in replayer.steps if s.kind == "click")
    assert len(claude.requests) == STEPS + 1 and len(vlm.requests) == clicks
