"""``--bench-agent api-openai``: the openai SDK against a fake Responses API on loopback (tests/fake_openai.py).

The fake refuses what the real API refuses (an unanswered computer_call, unacknowledged safety
checks, an unknown previous_response_id, no key) and validates its replies with the SDK's own
``Response`` model, so the agent is checked against the wire contract, not against itself. No
test talks to OpenAI."""

from __future__ import annotations

import json
import re
import sys

import pytest
from agent_starter import agent_starter
from conftest import only_run_folder, results, solid_png
from fake_openai import (
    FakeResponsesAPI,
    api_error,
    call,
    mock_benchmark,
    ok,
    preview_call,
    reasoning,
    refuse,
    response,
    say,
    screenshot_size,
)

from pytest_agentbench.agents import openai_computer  # imports no SDK at module level
from pytest_agentbench.agents.openai_computer import OpenAIAPIError, OpenAIComputerAgent
from pytest_agentbench.budget import Budget, BudgetSpent
from pytest_agentbench.errors import ConfigError
from pytest_agentbench.extras import install_hint
from pytest_agentbench.model import Action, Observation, Task
from pytest_agentbench.plugin.bridge import ConfigSettings

openai = pytest.importorskip("openai")  # imported here, before any inner pytest run

KEY = "sk-proj-test0123456789abcdefSECRET"
TASK = Task(task_id="t1", instruction="Press the Submit button.")


def screen(width: int = 1920, height: int = 1200) -> Observation:
    return Observation(screenshot=solid_png(width, height))


@pytest.fixture
def api():
    """start(replies or script, **agent options) -> (agent, fake); replies are answered in order."""

    def make(script, **kwargs):
        if isinstance(script, list):
            replies = list(script)
            script = lambda request, turn: replies.pop(0)  # noqa: E731
        fake = FakeResponsesAPI(script).__enter__()
        return OpenAIComputerAgent(api_key=KEY, base_url=fake.url, **kwargs), fake

    yield from agent_starter(make)


def play(agent: OpenAIComputerAgent, count: int, obs: Observation | None = None) -> list[Action]:
    history: list[tuple[Observation, Action]] = []
    for _ in range(count):
        observation = obs or screen()
        action = agent.act(observation, TASK, history)
        history.append((observation, action))
    return [a for _, a in history]


# ------------------------------------------------------------------ requests, screen, batches
def test_the_first_request_declares_the_computer_tool_and_sends_a_scaled_screenshot(api):
    agent, fake = api([ok(response(say("Clicking Submit."), call({"type": "click", "button": "left", "x": 267,
                                                                    "y": 80})))])
    (action,) = play(agent, 1)
    request, headers = fake.requests[0], fake.headers[0]
    assert request["model"] == "gpt-5.4" and request["tools"] == [{"type": "computer"}]
    assert request["truncation"] == "auto" and "previous_response_id" not in request
    assert "DONE" in request["instructions"] and "FAIL" in request["instructions"]
    assert headers["authorization"] == f"Bearer {KEY}"
    (message,) = request["input"]
    assert [p["type"] for p in message["content"]] == ["input_text", "input_image"]
    assert screenshot_size(message["content"][1]["image_url"]) == (1280, 800)
    # (267, 80) in the 1280x800 screenshot is (400, 120) on the 1920x1200 screen.
    assert (action.type, action.x, action.y, action.unit, action.reason) == ("click", 400, 120, "px",
                                                                             "Clicking Submit.")


def test_a_batch_plays_one_action_per_step_then_answers_the_call_with_the_new_screenshot(api):
    batch = call({"type": "click", "button": "left", "x": 10, "y": 10}, {"type": "type", "text": "hello"},
                 {"type": "keypress", "keys": ["CTRL", "S"]})
    agent, fake = api([ok(response(reasoning(), batch)), ok(response(say("Saved.\nDONE")))])
    actions = play(agent, 4, screen(1280, 720))
    assert [a.type for a in actions] == ["click", "type", "hotkey", "done"]
    assert actions[2].keys == ["ctrl", "s"]
    assert len(fake.requests) == 2  # the batch cost one request
    second = fake.requests[1]
    assert second["previous_response_id"] == next(iter(fake.given))  # the first reply's id
    (answer,) = second["input"]
    assert (answer["type"], answer["call_id"]) == ("computer_call_output", batch["call_id"])
    assert screenshot_size(answer["output"]["image_url"]) == (1280, 720)  # sent unchanged: small enough


@pytest.mark.parametrize(("action", "expected"), [
    ({"type": "click", "button": "right", "x": 640, "y": 400}, {"type": "right_click", "x": 960, "y": 600}),
    ({"type": "double_click", "x": 0, "y": 0}, {"type": "double_click", "x": 0, "y": 0}),
    ({"type": "click", "button": "left", "x": 1280, "y": 800}, {"type": "click", "x": 1919, "y": 1199}),
    ({"type": "drag", "path": [{"x": 100, "y": 100}, {"x": 150, "y": 120}, {"x": 200, "y": 300}]},
     {"type": "drag", "x": 150, "y": 150, "end_x": 300, "end_y": 450}),
    ({"type": "keypress", "keys": ["ENTER"]}, {"type": "key", "key": "enter"}),
    ({"type": "keypress", "keys": ["ARROWDOWN"]}, {"type": "key", "key": "down"}),
    ({"type": "keypress", "keys": ["CTRL", "ALT", "DELETE"]}, {"type": "hotkey", "keys": ["ctrl", "alt", "delete"]}),
    ({"type": "type", "text": "hello"}, {"type": "type", "text": "hello"}),
    ({"type": "scroll", "x": 640, "y": 400, "scroll_x": 0, "scroll_y": 300},
     {"type": "scroll", "x": 960, "y": 600, "scroll_direction": "down", "scroll_amount": 3}),
    ({"type": "scroll", "x": 640, "y": 400, "scroll_x": -100, "scroll_y": 0},
     {"type": "scroll", "scroll_direction": "left", "scroll_amount": 1}),
    ({"type": "move", "x": 5, "y": 5}, {"type": "wait", "seconds": 0.0}),
    ({"type": "screenshot"}, {"type": "wait", "seconds": 0.0}),
    ({"type": "wait"}, {"type": "wait", "seconds": 2.0}),
])
def test_computer_actions_map_to_core_actions(api, action, expected):
    agent, _ = api([ok(response(call(action)))])
    (got,) = play(agent, 1)
    assert {k: getattr(got, k) for k in expected} == expected


def test_the_preview_model_gets_the_preview_tool_with_a_display(api):
    agent, fake = api([ok(response(preview_call({"type": "click", "button": "left", "x": 640, "y": 400}),
                                   model="computer-use-preview")), ok(response(say("DONE")))],
                      model="computer-use-preview", environment="windows")
    click, done = play(agent, 2)
    assert fake.requests[0]["tools"] == [{"type": "computer_use_preview", "display_width": 1280,
                                          "display_height": 800, "environment": "windows"}]
    assert (click.type, click.x, click.y, done.type) == ("click", 960, 600, "done")


# ------------------------------------------------------------------ endings, refusals, mistakes
@pytest.mark.parametrize(("reply", "kind"), [
    ("The form is sent.\nDONE", "done"), ("There is no such app here.\nFAIL", "fail"),
    ("This task is impossible on this machine.", "fail"),
])
def test_a_reply_without_a_call_ends_the_episode(api, reply, kind):
    agent, _ = api([ok(response(say(reply)))])
    (action,) = play(agent, 1)
    assert (action.type, action.reason) == (kind, reply)


def test_a_refusal_fails_the_task_with_its_text(api):
    agent, _ = api([ok(response(refuse("I can't help with that.")))])
    (action,) = play(agent, 1)
    assert (action.type, action.reason) == ("fail", "I can't help with that.")


def test_a_malformed_reply_is_told_to_the_model_then_ends_the_episode_the_second_time(api):
    agent, fake = api([ok(response(call({"type": "click", "button": "left", "x": 5000, "y": 5}))),
                       ok(response(call({"type": "teleport"}), validate=False))])  # newer than the SDK
    first, second = play(agent, 2)
    assert first.type == "wait" and "outside the 1280x800 screenshot" in first.reason
    output, note = fake.requests[1]["input"]
    assert output["type"] == "computer_call_output"  # the call is still answered, as the API requires
    assert note["role"] == "user" and "could not be used" in note["content"][0]["text"]
    assert second.type == "error" and "unknown computer action 'teleport'" in second.reason


def test_an_incomplete_reply_without_a_call_counts_as_unusable(api):
    agent, _ = api([ok(response(reasoning(), status="incomplete", incomplete="max_output_tokens")),
                    ok(response(say("DONE")))])
    first, second = play(agent, 2)
    assert first.type == "wait" and "max_output_tokens" in first.reason
    assert second.type == "done"


SAFETY = [{"id": "cu_sc_1", "code": "malicious_instructions", "message": "The page asks to ignore the task."}]


def test_a_pending_safety_check_ends_the_task_unless_acknowledged(api):
    agent, fake = api([ok(response(call({"type": "click", "button": "left", "x": 5, "y": 5}, safety=SAFETY)))])
    (action,) = play(agent, 1)
    assert action.type == "error" and "malicious_instructions" in action.reason
    assert "--bench-agent-acknowledge-safety-checks" in action.reason
    assert len(fake.requests) == 1


def test_an_acknowledged_safety_check_is_sent_back_with_the_output(api):
    flagged = call({"type": "click", "button": "left", "x": 5, "y": 5}, safety=SAFETY)
    agent, fake = api([ok(response(flagged)), ok(response(say("DONE")))], acknowledge_safety_checks=True)
    click, done = play(agent, 2)
    assert click.type == "click" and "malicious_instructions" in click.reason
    assert fake.requests[1]["input"][0]["acknowledged_safety_checks"] == SAFETY  # the fake refuses anything else
    assert done.type == "done"


# ------------------------------------------------------------------ retries and errors
def test_429_and_5xx_are_retried_through_the_retry_policy_honouring_retry_after(api):
    agent, fake = api([api_error(429, "Rate limit reached", "rate_limit_exceeded", {"retry-after": "7"}),
                       api_error(503, "Service unavailable", "server_error", {"retry-after-ms": "1500"}),
                       ok(response(call({"type": "wait"})))])
    (action,) = play(agent, 1)
    assert action.type == "wait" and len(fake.requests) == 3
    assert api.sleeps[0] == pytest.approx(7.0) and api.sleeps[1] >= 1.5
    assert all(h.get("x-stainless-retry-count", "0") == "0" for h in fake.headers)  # the SDK's own retries are off


def test_after_the_retries_the_act_raises_one_line_without_the_key(api):
    agent, fake = api([api_error(500, f"The server had an error (key {KEY})", "server_error")] * 5)
    with pytest.raises(OpenAIAPIError) as info:
        play(agent, 1)
    text = str(info.value)
    assert len(fake.requests) == 5 and "\n" not in text and "HTTP 500 (after 5 attempts)" in text
    assert KEY not in text and info.value.error_type == "agent"


def test_a_bad_request_is_not_retried(api):
    agent, fake = api([api_error(400, "Invalid value for 'tools'")])
    with pytest.raises(OpenAIAPIError, match=r"HTTP 400: invalid_request_error: Invalid value for 'tools'"):
        play(agent, 1)
    assert len(fake.requests) == 1


def test_the_key_never_leaks_into_actions(api):
    agent, _ = api([ok(response(say(f"my key is {KEY}"), call({"type": "type", "text": KEY})))])
    (action,) = play(agent, 1)
    assert KEY not in action.model_dump_json() and KEY not in repr(agent)


# ------------------------------------------------------------------ usage, cost, budget
def test_usage_and_cost_come_from_the_reply_and_the_price_table(api):
    agent, _ = api([ok(response(call({"type": "wait"}), input_tokens=10_000, cached_tokens=4_000,
                                output_tokens=500))])
    play(agent, 1)
    usage = agent.take_usage()
    assert (usage.input_tokens, usage.output_tokens, usage.calls, usage.model) == (10_000, 500, 1, "gpt-5.4")
    assert usage.cost_usd == pytest.approx((6_000 * 2.50 + 4_000 * 0.25 + 500 * 15.00) / 1e6)
    assert agent.take_usage() is None


def test_an_unpriced_model_records_tokens_at_cost_zero_and_warns(api):
    openai_computer._warned.discard("price:gpt-9")
    agent, _ = api([ok(response(call({"type": "wait"}), model="gpt-9"))], model="gpt-9")
    with pytest.warns(UserWarning, match="no list price for model 'gpt-9'"):
        play(agent, 1)
    assert agent.take_usage().cost_usd == 0.0


def test_the_budget_is_checked_before_each_call(api):
    agent, fake = api([ok(response(call({"type": "wait"})))] * 2)
    checks: list[float] = []

    class Spy(Budget):
        def check(self, pending: float = 0.0) -> None:
            checks.append(pending)
            super().check(pending)

    agent.budget = Spy(task_limit=1.0)
    play(agent, 2)
    assert checks[0] == 0 and checks[1] == pytest.approx((1500 * 2.50 + 50 * 15) / 1e6)
    agent.budget = Budget(task_limit=0.000001)
    agent.budget.task_spent = 1.0
    with pytest.raises(BudgetSpent):
        play(agent, 1)
    assert len(fake.requests) == 2


# ------------------------------------------------------------------ configuration
def _config(pytester, *args: str) -> ConfigSettings:
    return ConfigSettings(pytester.parseconfig(*args))


def test_make_agent_needs_the_key_and_the_sdk(pytester, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"--bench-agent api-openai needs OPENAI_API_KEY"):
        openai_computer.make_agent(_config(pytester))
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(ConfigError, match=re.escape(install_hint("openai"))):
        openai_computer.make_agent(_config(pytester))


def test_make_agent_reads_model_timeout_and_acknowledgement(pytester, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    agent = openai_computer.make_agent(_config(pytester, "--bench-agent-model", "gpt-5.4-mini",
                                               "--bench-agent-timeout", "7.5",
                                               "--bench-agent-acknowledge-safety-checks"))
    assert (agent.model, agent._client.timeout, agent.acknowledge_safety_checks) == ("gpt-5.4-mini", 7.5, True)
    agent.close()
    default = openai_computer.make_agent(_config(pytester))
    assert (default.model, default.acknowledge_safety_checks) == ("gpt-5.4", False)
    default.close()
    with pytest.raises(ConfigError, match=r"must be an OpenAI model id"):
        openai_computer.make_agent(_config(pytester, "--bench-agent-model", "claude-sonnet-4-6"))


# ------------------------------------------------------------------ end to end
@pytest.fixture
def openai_env(monkeypatch):
    fake = FakeResponsesAPI(mock_benchmark).__enter__()
    monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    yield fake
    fake.__exit__()


def test_end_to_end_mock_benchmark_under_xdist(run, pytester, openai_env):
    result = run("--bench=mock", "--bench-limit", "2", "--bench-agent", "api-openai", "-n", "2")
    result.assert_outcomes(passed=2)
    assert len(openai_env.requests) == 4
    folder = only_run_folder(pytester.path)
    rows = results(folder)
    assert all(r["success"] and r["cost_usd"] > 0 for r in rows)
    trajectory = json.loads(next((folder / "tasks" / "mock").glob("*.trajectory.json")).read_text())
    click, done = trajectory["steps"]
    assert click["action"]["type"] == "click" and done["action"]["type"] == "done"
    assert click["usage"]["model"] == "gpt-5.4" and click["cost_usd"] > 0
    assert json.loads((folder / "summary.json").read_text())["total_cost_usd"] > 0
    assert KEY.encode() not in b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def test_missing_key_is_a_usage_error(run, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = run("--bench=mock", "--bench-limit", "1", "--bench-agent", "api-openai")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert any("--bench-agent api-openai needs OPENAI_API_KEY" in line for line in result.errlines)
