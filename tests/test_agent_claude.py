"""``--bench-agent api-claude``: Claude with the computer-use tool, against a fake Messages API.

Unit tests drive :class:`ClaudeAgent` through the SDK's own mock transport and read the requests it
sent (tool declaration, beta flag, image sizes, history, pairing, retries); end-to-end tests run
pytest with ``ANTHROPIC_BASE_URL`` pointing at a real loopback server (the mock benchmark and the
fake WAA server's notepad task)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from conftest import notepad_project, only_run_folder, results, solid_png
from fake_anthropic import (
    FakeMessagesServer,
    Recorder,
    api_error,
    images,
    member,
    message,
    ok,
    pairing_problems,
    sent_key,
    text,
    tool_use,
    turns,
)

anthropic = pytest.importorskip("anthropic")  # imported here, before any inner pytest run

from pytest_agentbench.agent import StepEstimate  # noqa: E402 - after the importorskip: the SDK is imported first
from pytest_agentbench.agents import claude  # noqa: E402 - after the importorskip: the SDK is imported first
from pytest_agentbench.agents.claude import ClaudeAgent, ClaudeAPIError, declared_size, key_action  # noqa: E402 - after the importorskip: the SDK is imported first
from pytest_agentbench.budget import Budget, BudgetSpent  # noqa: E402 - after the importorskip: the SDK is imported first
from pytest_agentbench.errors import ConfigError  # noqa: E402 - after the importorskip: the SDK is imported first
from pytest_agentbench.extras import install_hint  # noqa: E402 - after the importorskip: the SDK is imported first
from pytest_agentbench.model import Action, Observation, Task  # noqa: E402 - after the importorskip: the SDK is imported first
from pytest_agentbench.plugin.bridge import ConfigSettings  # noqa: E402 - after the importorskip: the SDK is imported first

KEY = "sk-ant-test-0123456789abcdefSECRET"
TASK = Task(task_id="t1", instruction="Press the Submit button.")


def screen(width: int = 1920, height: int = 1200) -> Observation:
    return Observation(screenshot=solid_png(width, height))


def agent_for(replies, **kwargs) -> tuple[ClaudeAgent, Recorder]:
    recorder = Recorder(replies)
    kwargs.setdefault("max_retries", 0)
    return ClaudeAgent(api_key=KEY, http_client=recorder.client(), **kwargs), recorder


def play(agent: ClaudeAgent, count: int, obs: Observation | None = None) -> list[Action]:
    """``count`` acts of one episode, passing the history as the runner does."""
    history: list[tuple[Observation, Action]] = []
    for _ in range(count):
        observation = obs or screen()
        action = agent.act(observation, TASK, history)
        history.append((observation, action))
    return [a for _, a in history]


# ------------------------------------------------------------------ tool, screen, coordinates
def test_the_request_declares_the_tool_for_the_model_and_a_scaled_screen():
    agent, rec = agent_for([ok(message(text("Clicking Submit."), tool_use("left_click", coordinate=[267, 80])))])
    (action,) = play(agent, 1)
    request, headers = rec.requests[0], rec.headers[0]
    assert request["model"] == "claude-sonnet-4-6"
    assert request["tools"] == [{"type": "computer_20251124", "name": "computer",
                                 "display_width_px": 1280, "display_height_px": 800}]
    assert "computer-use-2025-11-24" in headers["anthropic-beta"].split(",")
    assert sent_key(headers) == KEY
    assert images(request) == [(1280, 800)]
    assert "DONE" in request["system"] and "FAIL" in request["system"]
    # (267, 80) on the 1280x800 display is (400, 120) on the 1920x1200 screen: the Submit centre.
    assert (action.type, action.x, action.y, action.unit) == ("click", 400, 120, "px")
    assert action.reason == "Clicking Submit."
    assert action.raw["tool_use"]["input"] == {"action": "left_click", "coordinate": [267, 80]}


@pytest.mark.parametrize(("model", "tool", "beta"), [
    ("claude-sonnet-4-6", "computer_20251124", "computer-use-2025-11-24"),
    ("claude-opus-4-5-20251101", "computer_20251124", "computer-use-2025-11-24"),
    ("claude-sonnet-4-5", "computer_20250124", "computer-use-2025-01-24"),
    ("claude-haiku-4-5-20251001", "computer_20250124", "computer-use-2025-01-24"),
    ("claude-opus-4-1", "computer_20250124", "computer-use-2025-01-24"),
    ("claude-sonnet-4-20250514", "computer_20250124", "computer-use-2025-01-24"),
    ("claude-3-7-sonnet-20250219", "computer_20250124", "computer-use-2025-01-24"),
])
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the SDK's notice for retiring models
def test_tool_version_follows_the_model_family(model, tool, beta):
    agent, rec = agent_for([ok(message(text("DONE"), model=model))], model=model)
    play(agent, 1)
    assert rec.requests[0]["tools"][0]["type"] == tool
    assert rec.headers[0]["anthropic-beta"] == beta


def test_an_unknown_model_gets_the_newest_tool_with_a_warning():
    claude._warned.discard("tool:claude-future-9")
    with pytest.warns(UserWarning, match="not in the computer-use tool table"):
        agent, _ = agent_for([], model="claude-future-9")
    assert (agent.tool_type, agent.beta) == ("computer_20251124", "computer-use-2025-11-24")


# ------------------------------------------------------------------ the computer toolset (claude-*-5-5)
def _toolset_problems(request: dict) -> list[str]:
    """What the API would reject in a toolset request, after the SDK's types: the tools entry carries
    only type/configs/cache_control, configs keys are members, every tool_result of a member call
    echoes its toolset_name, and no beta flag names an older computer tool."""
    from anthropic.types.beta import BetaComputerToolsetConfigsParam

    problems = []
    (entry,) = request["tools"]
    if set(entry) - {"type", "configs", "cache_control"}:
        problems.append(f"toolset entry has {sorted(set(entry) - {'type', 'configs', 'cache_control'})}")
    if set(entry.get("configs") or {}) - set(BetaComputerToolsetConfigsParam.__annotations__):
        problems.append(f"unknown members in configs {sorted(entry['configs'])}")
    calls = {b["id"]: b for m in request["messages"] if m["role"] == "assistant" for b in m["content"]
             if b["type"] == "tool_use"}
    for m in request["messages"]:
        for block in m["content"]:
            if block.get("type") == "tool_result" and block.get("toolset_name") != calls[block["tool_use_id"]].get(
                    "toolset_name"):
                problems.append(f"tool_result {block['tool_use_id']} does not echo toolset_name")
    return problems + pairing_problems(request)


@pytest.mark.parametrize("model", ["claude-sonnet-5-5", "claude-opus-5-5-20260922"])
def test_the_newest_models_get_the_toolset_without_a_display_or_beta(model):
    agent, rec = agent_for([ok(message(text("Submitting."), member("left_click", coordinate=[267, 80]), model=model)),
                            ok(message(text("DONE"), model=model))], model=model)
    click, done = play(agent, 2)
    first, second = rec.requests
    assert first["tools"] == [{"type": "computer_toolset_20260801", "configs": {
        "middle_click": {"enabled": False}, "hold_key": {"enabled": False}, "zoom": {"enabled": False}}}]
    assert "anthropic-beta" not in rec.headers[0]
    assert images(first) == [(1280, 800)]  # coordinates are in the screenshot's pixels: it is scaled as before
    assert (click.type, click.x, click.y, click.unit) == ("click", 400, 120, "px")
    assert done.type == "done"
    (answer,) = second["messages"][2]["content"]
    assert (answer["type"], answer["toolset_name"]) == ("tool_result", "computer")
    assert second["messages"][1]["content"][1]["toolset_name"] == "computer"  # the call goes back as received
    assert _toolset_problems(first) == [] and _toolset_problems(second) == []


@pytest.mark.parametrize(("name", "params", "expected"), [
    ("double_click", {"coordinate": [640, 400]}, [("double_click", 960, 600)]),
    ("right_click", {"coordinate": [0, 0]}, [("right_click", 0, 0)]),
    ("left_click_drag", {"start_coordinate": [100, 100], "coordinate": [200, 300]}, [("drag", 150, 150)]),
    ("type", {"text": "hello"}, [("type", None, None)]),
    ("key", {"text": "ctrl+s"}, [("hotkey", None, None)]),
    ("key", {"text": "Down", "repeat": 3}, [("key", None, None)] * 3),
    ("scroll", {"coordinate": [640, 400], "scroll_direction": "down", "scroll_amount": 5}, [("scroll", 960, 600)]),
    ("wait", {"duration": 2}, [("wait", None, None)]),
    ("screenshot", {}, [("wait", None, None)]),
])
def test_toolset_members_map_like_the_single_tools_actions(name, params, expected):
    agent, _ = agent_for([ok(message(member(name, **params))), ok(message(text("DONE")))], model="claude-sonnet-5-5")
    actions = play(agent, len(expected) + 1)
    assert [(a.type, a.x, a.y) for a in actions[:-1]] == expected
    assert actions[-1].type == "done"


def test_toolset_mistakes_are_answered_as_errors():
    """A member of another family, an unsupported member and a bad repeat are answered with is_error,
    each echoing toolset_name; two unusable replies in a row end the episode."""
    wrong = dict(member("left_click", coordinate=[1, 1]), toolset_name="browser")
    agent, rec = agent_for([ok(message(member("zoom", region=[0, 0, 10, 10]))), ok(message(wrong)),
                            ok(message(member("key", text="a", repeat=0)))], model="claude-sonnet-5-5")
    unsupported, first_strike, second_strike = play(agent, 3)
    assert unsupported.type == "wait" and "zoom is not supported" in unsupported.reason
    assert first_strike.type == "wait" and "unknown tool 'left_click'" in first_strike.reason
    assert second_strike.type == "error" and "key repeat must be a whole number" in second_strike.reason
    for request in rec.requests[1:]:
        (answer,) = request["messages"][-1]["content"][:1]
        assert answer["is_error"] is True
    assert rec.requests[2]["messages"][-1]["content"][0]["toolset_name"] == "browser"


def test_the_newest_models_are_priced():
    agent, _ = agent_for([ok(message(text("DONE"), input_tokens=1_000_000, output_tokens=100_000,
                                     cache_read_input_tokens=1_000_000))], model="claude-opus-5-5")
    play(agent, 1)
    usage = agent.take_usage()
    assert usage is not None and usage.cost_usd == pytest.approx(4.00 + 2.00 + 0.20)


@pytest.mark.parametrize(("size", "declared"), [
    ((1920, 1200), (1280, 800)), ((1280, 720), (1280, 720)), ((2560, 1440), (1280, 720)),
    ((1024, 768), (1024, 768)), ((1920, 1080), (1280, 720)), ((1080, 1920), (720, 1280)), ((3000, 1000), (1280, 426)),
])
def test_declared_display_size(size, declared):
    assert declared_size(*size) == declared


def test_a_screen_already_small_enough_is_sent_unchanged():
    agent, rec = agent_for([ok(message(tool_use("left_click", coordinate=[1279, 719])))])
    (action,) = play(agent, 1, screen(1280, 720))
    assert rec.requests[0]["tools"][0]["display_width_px"] == 1280
    assert images(rec.requests[0]) == [(1280, 720)]
    assert (action.x, action.y) == (1279, 719)


# ------------------------------------------------------------------ the action mapping
@pytest.mark.parametrize(("params", "expected"), [
    ({"action": "double_click", "coordinate": [640, 400]}, {"type": "double_click", "x": 960, "y": 600}),
    ({"action": "right_click", "coordinate": [0, 0]}, {"type": "right_click", "x": 0, "y": 0}),
    ({"action": "triple_click", "coordinate": [640, 400]}, {"type": "double_click", "x": 960, "y": 600}),
    ({"action": "left_click_drag", "start_coordinate": [100, 100], "coordinate": [200, 300]},
     {"type": "drag", "x": 150, "y": 150, "end_x": 300, "end_y": 450}),
    ({"action": "type", "text": "hello"}, {"type": "type", "text": "hello"}),
    ({"action": "key", "text": "Return"}, {"type": "key", "key": "enter"}),
    ({"action": "key", "text": "ctrl+s"}, {"type": "hotkey", "keys": ["ctrl", "s"]}),
    ({"action": "key", "text": "super+r"}, {"type": "hotkey", "keys": ["win", "r"]}),
    ({"action": "key", "text": "ctrl+shift+Escape"}, {"type": "hotkey", "keys": ["ctrl", "shift", "esc"]}),
    ({"action": "key", "text": "Page_Down"}, {"type": "key", "key": "pagedown"}),
    ({"action": "scroll", "coordinate": [640, 400], "scroll_direction": "down", "scroll_amount": 5},
     {"type": "scroll", "x": 960, "y": 600, "scroll_direction": "down", "scroll_amount": 5}),
    ({"action": "wait", "duration": 2}, {"type": "wait", "seconds": 2.0}),
    ({"action": "screenshot"}, {"type": "wait", "seconds": 0.0}),
    ({"action": "mouse_move", "coordinate": [10, 10]}, {"type": "wait", "seconds": 0.0}),
])
def test_computer_actions_map_to_core_actions(params, expected):
    agent, _ = agent_for([ok(message(tool_use(**params)))])
    (action,) = play(agent, 1)
    assert {k: getattr(action, k) for k in expected} == expected
    if "x" in expected:
        assert action.unit == "px"


def test_a_click_without_coordinate_clicks_where_the_pointer_was_moved():
    agent, _ = agent_for([ok(message(tool_use("mouse_move", coordinate=[100, 50]))),
                          ok(message(tool_use("left_click"))),
                          ok(message(tool_use("cursor_position")))])
    moved, clicked, _ = play(agent, 3)
    assert "mouse_move" in moved.reason
    assert (clicked.type, clicked.x, clicked.y) == ("click", 150, 75)
    last_call = agent._messages[-1]["content"][0]["id"]
    assert agent._results == [{"id": last_call, "text": "X=100,Y=50"}]  # answered in the next request


def test_mouse_down_then_up_is_a_drag():
    agent, _ = agent_for([ok(message(tool_use("left_mouse_down", coordinate=[10, 10]))),
                          ok(message(tool_use("left_mouse_up", coordinate=[20, 30])))])
    down, up = play(agent, 2)
    assert down.type == "wait"
    assert (up.type, up.x, up.y, up.end_x, up.end_y) == ("drag", 15, 15, 30, 45)


@pytest.mark.parametrize(("reply", "kind"), [
    ("I pressed Submit and the form is sent.\nDONE", "done"),
    ("All set.", "done"),
    ("There is no such setting on this machine.\nFAIL", "fail"),
    ("This task is infeasible: the app is not installed.", "fail"),
    ("INFEASIBLE", "fail"),
])
def test_end_turn_ends_the_episode_with_done_or_fail(reply, kind):
    agent, _ = agent_for([ok(message(text(reply)))])
    (action,) = play(agent, 1)
    assert action.type == kind
    assert action.reason == reply


def test_key_names_follow_the_core():
    assert key_action("KP_Enter") == Action(type="key", key="enter")
    assert key_action("F5") == Action(type="key", key="f5")
    assert key_action("alt+Tab") == Action(type="hotkey", keys=["alt", "tab"])
    assert key_action("+") == Action(type="key", key="+")


# ------------------------------------------------------------------ conversation and history
def test_every_tool_use_gets_a_tool_result_with_the_new_screenshot():
    agent, rec = agent_for([ok(message(text("first"), tool_use("left_click", coordinate=[1, 1]))),
                            ok(message(tool_use("type", text="abc"))),
                            ok(message(text("DONE")))])
    play(agent, 3)
    second = rec.requests[1]
    first_id = rec.requests[1]["messages"][1]["content"][1]["id"]
    result = second["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == first_id
    assert [b["type"] for b in result["content"]] == ["image"]
    assert not pairing_problems(second) and not pairing_problems(rec.requests[2])
    assert images(rec.requests[2]) == [(1280, 800)] * 3


def test_only_the_newest_screenshots_are_sent_and_text_is_kept():
    replies = [ok(message(text(f"step {n}"), tool_use("wait", duration=0))) for n in range(7)]
    agent, rec = agent_for(replies)
    play(agent, 7)
    last = rec.requests[-1]
    assert len(images(last)) == 3
    dumped = json.dumps(last)
    assert dumped.count(claude.IMAGE_PLACEHOLDER) == 4
    assert all(f"step {n}" in dumped for n in range(6))
    assert not pairing_problems(last)


def test_the_history_budget_drops_the_oldest_turns_and_keeps_pairs_valid():
    replies = [ok(message(text("x" * 2000), tool_use("wait", duration=0))) for _ in range(8)]
    agent, rec = agent_for(replies, keep_images=1, history_tokens=3000)
    play(agent, 8)
    last = rec.requests[-1]
    assert last["messages"][0]["content"][0]["text"] == f"Task: {TASK.instruction}"
    assert "dropped" in last["messages"][0]["content"][-1]["text"]
    assert len(last["messages"]) < 2 * 8 + 1
    assert not pairing_problems(last)
    assert all(not pairing_problems(r) for r in rec.requests)


def test_reset_starts_a_new_conversation():
    agent, rec = agent_for([ok(message(tool_use("wait", duration=0))), ok(message(tool_use("wait", duration=0)))])
    play(agent, 1)
    agent.reset()
    play(agent, 1)
    assert len(rec.requests[1]["messages"]) == 1


# ------------------------------------------------------------------ bad replies
def test_an_unparseable_reply_is_answered_with_an_error_then_fails_the_second_time():
    agent, rec = agent_for([ok(message(tool_use("fly_to_moon"))),
                            ok(message(tool_use("left_click", coordinate=[640, 400]))),
                            ok(message(tool_use("scroll", scroll_direction="sideways"))),
                            ok(message(tool_use("left_click", coordinate=[99999, 1])))])
    first, good, third, fourth = play(agent, 4)
    assert (first.type, first.seconds) == ("wait", 0.0)
    assert "unknown computer action 'fly_to_moon'" in first.reason
    assert first.raw["unparsed_reply"][0]["input"] == {"action": "fly_to_moon"}
    error = rec.requests[1]["messages"][2]["content"][0]
    assert error["is_error"] is True and "fly_to_moon" in error["content"][0]["text"]
    assert good.type == "click"  # a good reply in between resets the count
    assert third.type == "wait" and "scroll_direction" in third.reason
    assert fourth.type == "error" and fourth.reason.startswith("unparseable reply twice")
    assert "outside the 1280x800 screen" in fourth.reason


def test_a_click_without_a_known_pointer_is_unparseable():
    agent, _ = agent_for([ok(message(tool_use("left_click")))])
    (action,) = play(agent, 1)
    assert action.type == "wait" and "needs coordinate" in action.reason


def test_a_reply_cut_off_without_a_tool_call_gets_a_text_follow_up():
    agent, rec = agent_for([ok(message(text("Let me think"), stop_reason="max_tokens")),
                            ok(message(text("DONE")))])
    first, second = play(agent, 2)
    assert first.type == "wait" and "no tool call" in first.reason
    follow_up = rec.requests[1]["messages"][2]["content"]
    assert [b["type"] for b in follow_up] == ["text", "image"] and "could not be used" in follow_up[0]["text"]
    assert second.type == "done"


def test_unsupported_actions_are_answered_with_an_error_but_do_not_count():
    agent, rec = agent_for([ok(message(tool_use("middle_click", coordinate=[5, 5]))),
                            ok(message(tool_use("hold_key", text="shift", duration=1))),
                            ok(message(text("DONE")))])
    one, two, three = play(agent, 3)
    assert one.type == two.type == "wait" and "not supported" in one.reason
    assert rec.requests[1]["messages"][2]["content"][0]["is_error"] is True
    assert three.type == "done"


# ------------------------------------------------------------------ retries and errors
def test_rate_limit_then_overload_then_success_is_retried_by_the_sdk():
    agent, rec = agent_for([api_error(429, "rate_limit_error", "Number of requests has exceeded your rate limit"),
                            api_error(529, "overloaded_error", "Overloaded"),
                            ok(message(tool_use("left_click", coordinate=[640, 400])))], max_retries=3)
    (action,) = play(agent, 1)
    assert action.type == "click"
    assert len(rec.requests) == 3
    assert [h.get("x-stainless-retry-count") for h in rec.headers] == ["0", "1", "2"]


def test_after_the_retries_the_act_raises_one_line_without_the_key():
    agent, rec = agent_for([api_error(529, "overloaded_error", f"Overloaded (key {KEY})")] * 3, max_retries=2)
    with pytest.raises(ClaudeAPIError) as info:
        play(agent, 1)
    message_ = str(info.value)
    assert len(rec.requests) == 3
    assert "\n" not in message_ and "529" in message_ and "overloaded_error" in message_
    assert KEY not in message_ and "sk-ant-" not in message_
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert info.value.error_type == "agent"


def test_a_bad_request_is_not_retried():
    agent, rec = agent_for([api_error(400, "invalid_request_error", "tools.0: unknown tool type", None)], max_retries=3)
    with pytest.raises(ClaudeAPIError, match=r"HTTP 400: invalid_request_error: tools.0: unknown tool type"):
        play(agent, 1)
    assert len(rec.requests) == 1


def test_the_key_never_leaks_into_actions_or_repr():
    agent, _ = agent_for([ok(message(text(f"my key is {KEY}"), tool_use("type", text=f"{KEY}")))])
    (action,) = play(agent, 1)
    assert KEY not in action.model_dump_json() and KEY not in repr(agent) and KEY not in str(vars(agent).get("name"))


# ------------------------------------------------------------------ usage, cost, budget
def test_usage_and_cost_come_from_the_response_and_the_price_table():
    reply = message(tool_use("wait", duration=0), input_tokens=1000, output_tokens=100,
                    cache_creation_input_tokens=200, cache_read_input_tokens=400)
    agent, _ = agent_for([ok(reply)])
    play(agent, 1)
    usage = agent.take_usage()
    assert (usage.input_tokens, usage.output_tokens, usage.calls, usage.model) == (1600, 100, 1, "claude-sonnet-4-6")
    assert usage.cost_usd == pytest.approx((1000 * 3 + 100 * 15 + 200 * 3.75 + 400 * 0.30) / 1e6)
    assert agent.take_usage() is None


def test_an_unpriced_model_records_tokens_at_cost_zero_and_warns_once():
    claude._warned.discard("price:claude-sonnet-4-6-preview")
    with pytest.warns(UserWarning, match="not in the computer-use tool table"):
        agent, _ = agent_for([ok(message(tool_use("wait", duration=0)))] * 2, model="claude-sonnet-4-6-preview")
    with pytest.warns(UserWarning, match="no list price for model 'claude-sonnet-4-6-preview'"):
        play(agent, 1)
    usage = agent.take_usage()
    assert (usage.input_tokens, usage.cost_usd) == (2000, 0.0)


def test_estimate_step_prices_the_declared_screenshot():
    agent, _ = agent_for([])
    estimate = agent.estimate_step((1920, 1200))
    assert isinstance(estimate, StepEstimate)
    assert (estimate.input_tokens, estimate.output_tokens, estimate.model) == (1365 + 500, 300, "claude-sonnet-4-6")
    assert estimate.cost_usd == pytest.approx((1865 * 3 + 300 * 15) / 1e6)
    assert "1280x800" in estimate.how and "w*h/750" in estimate.how


def test_the_dry_run_estimator_needs_no_key_or_sdk(pytester, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setitem(sys.modules, "anthropic", None)
    assert claude.estimate_for(None, (1920, 1200)).model == claude.DEFAULT_MODEL
    estimate = claude.estimate_for(_config(pytester, "--bench-agent-model", "claude-opus-4-1"), (1280, 720))
    assert (estimate.model, estimate.input_tokens) == ("claude-opus-4-1", round(1280 * 720 / 750) + 500)
    assert estimate.cost_usd == pytest.approx(((1229 + 500) * 15 + 300 * 75) / 1e6)
    unpriced = claude.estimate_for(_config(pytester, "--bench-agent-model", "claude-x-1"), (1280, 720))
    assert unpriced.cost_usd == 0 and "no list price" in unpriced.how


def test_the_budget_is_checked_before_each_model_call_with_the_unreported_cost():
    agent, rec = agent_for([ok(message(tool_use("wait", duration=0)))] * 2)
    checks: list[float] = []

    class Spy(Budget):
        def check(self, pending: float = 0.0) -> None:
            checks.append(pending)
            super().check(pending)

    agent.budget = Spy(task_limit=1.0)
    play(agent, 2)  # no take_usage in between: the first call's cost is still pending
    assert checks[0] == 0 and checks[1] == pytest.approx((2000 * 3 + 60 * 15) / 1e6)
    agent.budget = Budget(task_limit=0.000001)
    agent.budget.task_spent = 1.0
    with pytest.raises(BudgetSpent):
        play(agent, 1)
    assert len(rec.requests) == 2  # no call once the budget is spent


# ------------------------------------------------------------------ make_agent
def _config(pytester, *args: str) -> ConfigSettings:
    return ConfigSettings(pytester.parseconfig(*args))


def test_make_agent_needs_the_api_key(pytester, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"--bench-agent api-claude needs ANTHROPIC_API_KEY"):
        claude.make_agent(_config(pytester))


def test_make_agent_needs_the_sdk(pytester, monkeypatch):
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(ConfigError, match=re.escape(install_hint("claude"))):
        claude.make_agent(_config(pytester))


def test_make_agent_reads_model_and_timeout(pytester, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    agent = claude.make_agent(_config(pytester, "--bench-agent-model", "claude-haiku-4-5",
                                      "--bench-agent-timeout", "7.5"))
    assert (agent.model, agent.tool_type, agent._client.timeout) == ("claude-haiku-4-5", "computer_20250124", 7.5)
    agent.close()
    default = claude.make_agent(None)
    assert (default.model, default._client.timeout) == (claude.DEFAULT_MODEL, 120.0)
    default.close()


@pytest.mark.parametrize(("args", "match"), [
    # the option table's messages (the reader gives only checked values), as at configure time
    (("--bench-agent-timeout", "soon"), r"--bench-agent-timeout must be a number of seconds, got 'soon'"),
    (("--bench-agent-timeout", "0"), r"--bench-agent-timeout must be more than 0 and at most 86400 seconds, got '0'"),
])
def test_make_agent_rejects_bad_settings(pytester, monkeypatch, args, match):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with pytest.raises(ConfigError, match=match):
        claude.make_agent(_config(pytester, *args))


# ------------------------------------------------------------------ end to end
def _submit_centre() -> tuple[int, int]:
    from pytest_agentbench.benches.mock.bench import ELEMENTS

    left, top, right, bottom = next(e.box for e in ELEMENTS if e.name == "Submit")
    return (left + right) // 2, (top + bottom) // 2


def mock_script(request, headers):
    """Click Submit's centre (scaled to the declared display), then say DONE. It quotes the API key
    it received back in its text, so a leak anywhere downstream would show."""
    from pytest_agentbench.benches.mock.bench import SCREEN

    tool = request["tools"][0]
    if turns(request) == 0:
        x, y = _submit_centre()
        point = [round(x * tool["display_width_px"] / SCREEN[0]), round(y * tool["display_height_px"] / SCREEN[1])]
        return ok(message(text(f"Clicking Submit (credentials seen: {sent_key(headers)})."),
                          tool_use("left_click", coordinate=point)))
    return ok(message(text("The form is submitted.\nDONE"), input_tokens=3000, output_tokens=20))


@pytest.fixture
def claude_env(monkeypatch):
    def start(script):
        server = FakeMessagesServer(script).__enter__()
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        started.append(server)
        return server

    started: list[FakeMessagesServer] = []
    yield start
    for server in started:
        server.__exit__()


def test_end_to_end_mock_benchmark(run, pytester, claude_env):
    server = claude_env(mock_script)
    result = run("--bench=mock", "--bench-limit", "2", "--bench-agent", "api-claude")
    result.assert_outcomes(passed=2)
    assert len(server.requests) == 4
    folder = only_run_folder(pytester.path)
    rows = results(folder)
    assert all(r["success"] and r["cost_usd"] > 0 for r in rows)
    trajectory = json.loads(next((folder / "tasks" / "mock").glob("*.trajectory.json")).read_text())
    click, done = trajectory["steps"]
    assert click["action"]["type"] == "click" and done["action"]["type"] == "done"
    assert click["usage"]["input_tokens"] == 2000 and click["usage"]["model"] == "claude-sonnet-4-6"
    assert click["cost_usd"] > 0
    assert json.loads((folder / "summary.json").read_text())["total_cost_usd"] > 0


def toolset_script(request, headers):
    """The mock task through the toolset: the screenshot's own pixels, a member call, then DONE."""
    from pytest_agentbench.benches.mock.bench import SCREEN

    problems = _toolset_problems(request)
    if problems:
        return api_error(400, "invalid_request_error", "; ".join(problems), None)
    if turns(request) == 0:
        (width, height), (x, y) = images(request)[0], _submit_centre()
        point = [round(x * width / SCREEN[0]), round(y * height / SCREEN[1])]
        return ok(message(member("left_click", coordinate=point), model=request["model"]))
    return ok(message(text("DONE"), model=request["model"]))


def test_end_to_end_mock_benchmark_with_the_toolset(run, pytester, claude_env):
    server = claude_env(toolset_script)
    result = run("--bench=mock", "--bench-limit", "2", "--bench-agent", "api-claude", "--bench-agent-model",
                 "claude-sonnet-5-5", "-n", "2")
    result.assert_outcomes(passed=2)
    assert len(server.requests) == 4
    assert {r["tools"][0]["type"] for r in server.requests} == {"computer_toolset_20260801"}
    rows = results(only_run_folder(pytester.path))
    assert all(r["success"] and r["cost_usd"] > 0 for r in rows)


def _notepad_script():
    from pytest_agentbench.testing import NOTEPAD_SOLUTION

    xdotool = {"win": "super", "enter": "Return"}
    steps = []
    for action in NOTEPAD_SOLUTION:
        if action["type"] == "hotkey":
            steps.append(tool_use("key", text="+".join(xdotool.get(k, k) for k in action["keys"])))
        elif action["type"] == "key":
            steps.append(tool_use("key", text=xdotool.get(action["key"], action["key"])))
        elif action["type"] == "type":
            steps.append(tool_use("type", text=action["text"]))
    assert NOTEPAD_SOLUTION[-1]["type"] == "done"

    def script(request, headers):
        n = turns(request)
        return ok(message(steps[n]) if n < len(steps) else message(text("Saved the draft.\nDONE")))

    return script, len(steps)


def test_end_to_end_waa_notepad(run, pytester, claude_env):
    from pytest_agentbench.testing import NOTEPAD_TASK, FakeWAAServer, serve_notepad_gold

    script, count = _notepad_script()
    server = claude_env(script)
    args = notepad_project(pytester.path, 1)[:-4]  # without the scripted agent
    task = json.loads((Path(__file__).parent / "data" / "waa" / "examples" / "notepad"
                       / f"{NOTEPAD_TASK}.json").read_text())
    with FakeWAAServer(evaluate=True) as waa:
        serve_notepad_gold(waa, task)
        result = run(*args, "--waa-server", waa.url, "--waa-evaluate-url", waa.evaluate_url,
                     "--bench-agent", "api-claude")
        result.assert_outcomes(passed=1)
        assert waa.read_file("C:\\Users\\Docker\\Documents\\draft.txt") == b"This is a draft."
    assert len(server.requests) == count + 1
    assert {r["tools"][0]["display_width_px"] for r in server.requests} == {1280}  # the fake's 1280x720 screen
    assert all(not pairing_problems(r) for r in server.requests)


def test_missing_api_key_is_a_usage_error(run, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    result = run("--bench=mock", "--bench-limit", "1", "--bench-agent", "api-claude")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.startswith("ERROR")]
    assert errors == [errors[0]] and "--bench-agent api-claude needs ANTHROPIC_API_KEY" in errors[0]


def echoed_forms(key: str) -> list[str]:
    """What a model echoing its key would write instead of the key itself: a piece of its body,
    the key reversed, and its base64 and URL-safe base64 inside longer encoded data."""
    import base64

    body = key[len("sk-ant-test-"):]
    return [body[2:16], key[::-1], base64.b64encode(b"token=" + key.encode()).decode(),
            base64.urlsafe_b64encode(b"k:" + key.encode() + b";").decode()]


def leaky_script(request, headers):
    """``mock_script``, quoting its key in the echoed forms instead of whole."""
    status, reply_headers, reply = mock_script(request, headers)
    forms = " ".join(echoed_forms(sent_key(headers)))
    for block in reply["content"]:
        if block.get("type") == "text":
            block["text"] = block["text"].replace(f"(credentials seen: {sent_key(headers)})", f"(seen: {forms})")
            block["text"] = block["text"].replace("The form is submitted.", f"The form is submitted ({forms}).")
    return status, reply_headers, reply


def test_an_echoed_key_in_pieces_reversed_or_base64_is_in_no_file(run, pytester, claude_env):
    claude_env(leaky_script)
    log = pytester.path / "inspect.eval.json"
    result = run("--bench=mock", "--bench-limit", "1", "--bench-agent", "api-claude", "--bench-inspect-log", str(log))
    result.assert_outcomes(passed=1)
    folder = only_run_folder(pytester.path)
    files = [p for p in folder.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".html")] + [log]
    names = {p.name for p in files}
    assert {"results.jsonl", "summary.json", "viewer.html", log.name} <= names and any(
        n.endswith(".trajectory.json") for n in names)
    body = KEY[len("sk-ant-test-"):]
    for path in files:
        text = path.read_text()
        for form in echoed_forms(KEY):
            assert form not in text, (path, form)
        assert not [body[i:i + 12] for i in range(len(body) - 11) if body[i:i + 12] in text], path
    assert "[redacted]" in next(folder.rglob("*.trajectory.json")).read_text()


def test_the_key_appears_in_no_output_file_report_or_stream(run, pytester, claude_env):
    claude_env(mock_script)
    junit = pytester.path / "junit.xml"
    result = run("--bench=mock", "--bench-limit", "1", "--bench-agent", "api-claude", "--bench-screenshots", "on",
                 "--junitxml", str(junit), "-rA")
    result.assert_outcomes(passed=1)
    folder = only_run_folder(pytester.path)
    files = [p for p in folder.rglob("*") if p.is_file()] + [junit]
    assert len(files) > 4
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path
    assert "[redacted]" in (next(folder.rglob("*.trajectory.json")).read_text())
    assert KEY not in result.stdout.str() and KEY not in result.stderr.str()
