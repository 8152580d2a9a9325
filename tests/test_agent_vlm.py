"""``--bench-agent api-vlm``: the openai SDK's chat.completions against a fake OpenAI-compatible endpoint
on loopback (tests/fake_chat.py), in each dialect. No model is called."""

from __future__ import annotations

import json

import pytest
from agent_starter import agent_starter
from conftest import only_run_folder, results, solid_png
from fake_chat import FakeChatAPI, api_error, images, ok, play_mock

from pytest_agentbench.agents import vlm
from pytest_agentbench.agents.vlm import VLMAgent, VLMAPIError, guess_dialect, smart_resize
from pytest_agentbench.errors import ConfigError
from pytest_agentbench.model import Action, Observation, Task
from pytest_agentbench.plugin.bridge import ConfigSettings

openai = pytest.importorskip("openai")  # imported here, before any inner pytest run

TASK = Task(task_id="t1", instruction="Press the Submit button.")
SCREEN = Observation(screenshot=solid_png(1920, 1200))


@pytest.fixture
def endpoint():
    def make(script, dialect, **kwargs):
        fake = FakeChatAPI(script).__enter__()
        return VLMAgent(base_url=fake.url, model=kwargs.pop("model", "some-vlm"), dialect=dialect, **kwargs), fake

    yield from agent_starter(make)


def play(agent: VLMAgent, count: int) -> list[Action]:
    history: list[tuple[Observation, Action]] = []
    for _ in range(count):
        history.append((SCREEN, agent.act(SCREEN, TASK, history)))
    return [a for _, a in history]


def qwen(*arguments: dict) -> str:
    return "\n".join(f'<tool_call>\n{json.dumps({"name": "computer_use", "arguments": a})}\n</tool_call>'
                     for a in arguments)


# ------------------------------------------------------------------ the worked examples of the docs
@pytest.mark.parametrize(("dialect", "reply", "sent", "expected"), [
    ("qwen3vl", "I will submit the form.\n" + qwen({"action": "left_click", "coordinate": [208, 150]}),
     (1280, 800), (399, 180)),
    ("uitars", "Thought: The Submit button is at the top left; I click it.\nAction: click(start_box='(269,151)')",
     (1932, 1204), (267, 150)),
    ("json", '{"type": "click", "x": 267, "y": 100, "reason": "the Submit button"}', (1280, 800), (400, 150)),
])
def test_the_documented_examples(endpoint, dialect, reply, sent, expected):
    agent, fake = endpoint([ok(reply)], dialect)
    (action,) = play(agent, 1)
    assert images(fake.requests[0]) == [sent]
    assert (action.type, action.x, action.y, action.unit) == ("click", *expected, "px")
    system = fake.requests[0]["messages"][0]
    assert system["role"] == "system" and fake.requests[0]["model"] == "some-vlm"


def test_smart_resize_follows_ui_tars():
    assert smart_resize(1920, 1200) == (1932, 1204)
    assert smart_resize(1280, 720) == (1288, 728)
    assert smart_resize(100, 100) == (280, 280)  # up to the minimum pixel count
    width, height = smart_resize(8000, 6000)
    assert width % 28 == height % 28 == 0 and width * height <= 16384 * 28 * 28


# ------------------------------------------------------------------ corners and several actions
@pytest.mark.parametrize(("dialect", "top_left", "bottom_right"), [
    ("qwen3vl", qwen({"action": "left_click", "coordinate": [0, 0]}),
     qwen({"action": "left_click", "coordinate": [1000, 1000]})),
    ("uitars", "Action: click(start_box='<|box_start|>(0,0)<|box_end|>')",
     "Action: click(point='<point>1932 1204</point>')"),
    ("json", '{"type": "click", "x": 0, "y": 0}', '```json\n{"type": "click", "x": 1280, "y": 800}\n```'),
])
def test_the_screen_corners_land_on_the_corner_pixels(endpoint, dialect, top_left, bottom_right):
    agent, _ = endpoint([ok(top_left), ok(bottom_right)], dialect)
    first, second = play(agent, 2)
    assert (first.x, first.y) == (0, 0) and (second.x, second.y) == (1919, 1199)


@pytest.mark.parametrize(("dialect", "reply"), [
    ("qwen3vl", qwen({"action": "left_click", "coordinate": [500, 500]}, {"action": "type", "text": "hello"})),
    ("uitars", "Thought: two steps.\nAction: click(start_box='(966,602)')\n\ntype(content='hello')"),
    ("json", '[{"type": "click", "x": 640, "y": 400}, {"type": "type", "text": "hello"}]'),
])
def test_a_reply_with_two_actions_plays_both_before_asking_again(endpoint, dialect, reply):
    agent, fake = endpoint([ok(reply), ok({"qwen3vl": qwen({"action": "terminate", "status": "success"}),
                                           "uitars": "Action: finished(content='ok')",
                                           "json": '{"type": "done"}'}[dialect])], dialect)
    click, typed, done = play(agent, 3)
    assert (click.type, click.x, click.y) == ("click", 960, 600)
    assert (typed.type, typed.text, done.type) == ("type", "hello", "done")
    assert len(fake.requests) == 2
    roles = [m["role"] for m in fake.requests[1]["messages"]]
    assert roles == ["system", "user", "assistant", "user"]


@pytest.mark.parametrize(("dialect", "arguments", "expected"), [
    ("qwen3vl", {"action": "right_click", "coordinate": [500, 500]}, {"type": "right_click", "x": 960}),
    ("qwen3vl", {"action": "double_click", "coordinate": [500, 500]}, {"type": "double_click"}),
    ("qwen3vl", {"action": "key", "keys": ["ctrl", "s"]}, {"type": "hotkey", "keys": ["ctrl", "s"]}),
    ("qwen3vl", {"action": "key", "keys": ["Return"]}, {"type": "key", "key": "enter"}),
    ("qwen3vl", {"action": "scroll", "pixels": -5}, {"type": "scroll", "scroll_direction": "down",
                                                     "scroll_amount": 5}),
    ("qwen3vl", {"action": "wait", "time": 2}, {"type": "wait", "seconds": 2.0}),
    ("qwen3vl", {"action": "terminate", "status": "failure"}, {"type": "fail"}),
    ("qwen3vl", {"action": "answer", "text": "42"}, {"type": "done", "reason": "answer: 42"}),
    ("uitars", "left_double(start_box='(966,602)')", {"type": "double_click", "x": 960}),
    ("uitars", "right_single(start_box='[900,560,1032,644]')", {"type": "right_click", "x": 960, "y": 600}),
    ("uitars", "drag(start_box='(0,0)', end_box='(966,602)')", {"type": "drag", "end_x": 960, "end_y": 600}),
    ("uitars", "hotkey(key='ctrl c')", {"type": "hotkey", "keys": ["ctrl", "c"]}),
    ("uitars", "type(content='it\\'s done\\n')", {"type": "type", "text": "it's done\n"}),
    ("uitars", "scroll(start_box='(966,602)', direction='down')", {"type": "scroll", "scroll_direction": "down"}),
    ("uitars", "wait()", {"type": "wait", "seconds": 5.0}),
    ("uitars", "call_user()", {"type": "fail"}),
    ("json", {"type": "hotkey", "keys": ["ctrl", "s"]}, {"type": "hotkey", "keys": ["ctrl", "s"]}),
    ("json", {"type": "drag", "x": 0, "y": 0, "end_x": 640, "end_y": 400}, {"type": "drag", "end_x": 960}),
    ("json", {"type": "fail", "reason": "no such app"}, {"type": "fail", "reason": "no such app"}),
])
def test_dialect_actions_map_to_core_actions(endpoint, dialect, arguments, expected):
    reply = {"qwen3vl": lambda a: qwen(a), "uitars": lambda a: f"Thought: go.\nAction: {a}",
             "json": json.dumps}[dialect](arguments)
    agent, _ = endpoint([ok(reply)], dialect)
    (action,) = play(agent, 1)
    assert {k: getattr(action, k) for k in expected} == expected


# ------------------------------------------------------------------ unparseable replies
@pytest.mark.parametrize(("dialect", "reply", "why"), [
    ("qwen3vl", "I think I should click Submit.\nMaybe later.", "no <tool_call> block"),
    ("qwen3vl", "<tool_call>\n{not json}\n</tool_call>", "holds no JSON object"),
    ("qwen3vl", qwen({"action": "left_click", "coordinate": [1200, 5]}), "outside the 1000x1000"),
    ("qwen3vl", qwen({"action": "fly"}), "unknown action 'fly'"),
    ("uitars", "Thought: hmm", "no 'Action:' line"),
    ("uitars", "Thought: x\nAction: click(start_box=__import__('os'))", "arguments must be plain strings"),
    ("uitars", "Thought: x\nAction: teleport(start_box='(1,1)')", "unknown action 'teleport'"),
    ("json", "Sure! I will click the button.", "no JSON object"),
    ("json", '{"type": "click", "x": 5}', "needs two numbers"),
    ("json", '{"type": "explode"}', "unknown action 'explode'"),
])
def test_an_unparseable_reply_is_an_agent_error_with_its_first_line(endpoint, dialect, reply, why):
    agent, _ = endpoint([ok(reply)], dialect)
    (action,) = play(agent, 1)
    first_line = reply.strip().splitlines()[0]
    assert action.type == "error" and why in action.reason
    assert action.reason.startswith(f"unparseable {dialect} reply")
    assert action.reason.endswith(f"; its first line: {first_line!r}")  # all these lines are short


# ------------------------------------------------------------------ endpoint errors, usage, history
def test_429_and_503_are_retried_honouring_retry_after(endpoint):
    agent, fake = endpoint([api_error(429, "busy", {"retry-after": "3"}), api_error(503, "loading model"),
                            ok('{"type": "wait", "seconds": 0}')], "json")
    (action,) = play(agent, 1)
    assert action.type == "wait" and len(fake.requests) == 3 and endpoint.sleeps[0] == pytest.approx(3.0)


def test_an_endpoint_that_keeps_failing_raises_one_line(endpoint):
    agent, _ = endpoint([api_error(500, "CUDA out of memory")] * 5, "json")
    with pytest.raises(VLMAPIError, match=r"^VLM endpoint HTTP 500 \(after 5 attempts\): server_error: CUDA out"):
        play(agent, 1)


def test_tokens_are_recorded_and_old_screenshots_become_text(endpoint):
    agent, fake = endpoint([ok('{"type": "wait", "seconds": 0}', prompt_tokens=1000, completion_tokens=10)] * 5,
                           "json", keep_images=2)
    play(agent, 5)
    usage = agent.take_usage()
    assert (usage.input_tokens, usage.output_tokens, usage.calls, usage.cost_usd) == (5000, 50, 5, 0.0)
    last = fake.requests[-1]["messages"]
    assert len(images(fake.requests[-1])) == 2
    assert sum(1 for m in last for p in (m["content"] if isinstance(m["content"], list) else [])
               if p.get("text") == vlm.IMAGE_PLACEHOLDER) == 3


# ------------------------------------------------------------------ configuration
def _config(pytester, *args: str) -> ConfigSettings:
    return ConfigSettings(pytester.parseconfig(*args))


@pytest.mark.parametrize(("args", "match"), [
    ((), r"needs --bench-agent-url URL"),
    (("--bench-agent-url", "http://127.0.0.1:9/v1"), r"needs --bench-agent-model MODEL"),
    (("--bench-agent-url", "http://127.0.0.1:9/v1", "--bench-agent-model", "my-model"),
     r"cannot tell the dialect of model 'my-model': give --bench-agent-dialect qwen3vl\|uitars\|json"),
])
def test_make_agent_needs_url_model_and_a_dialect(pytester, args, match):
    with pytest.raises(ConfigError, match=match):
        vlm.make_agent(_config(pytester, *args))


def test_the_dialect_is_guessed_from_the_model_or_given(pytester, monkeypatch):
    assert guess_dialect("Qwen/Qwen3-VL-8B-Instruct") == "qwen3vl"
    assert guess_dialect("ByteDance-Seed/UI-TARS-1.5-7B") == "uitars"
    monkeypatch.setenv(vlm.API_KEY_ENV, "secret-vlm-key")
    agent = vlm.make_agent(_config(pytester, "--bench-agent-url", "http://127.0.0.1:9/v1", "--bench-agent-model",
                                   "my-model", "--bench-agent-dialect", "json"))
    assert (agent.dialect_name, agent._client.api_key) == ("json", "secret-vlm-key")
    agent.close()


# ------------------------------------------------------------------ end to end
@pytest.mark.parametrize("dialect", ["qwen3vl", "uitars", "json"])
def test_end_to_end_mock_benchmark_under_xdist(run, pytester, dialect):
    with FakeChatAPI(play_mock(dialect)) as fake:
        result = run("--bench=mock", "--bench-limit", "2", "--bench-agent", "api-vlm", "--bench-agent-url",
                     fake.url, "--bench-agent-model", "served-vlm", "--bench-agent-dialect", dialect, "-n", "2")
    result.assert_outcomes(passed=2)
    assert len(fake.requests) == 4
    rows = results(only_run_folder(pytester.path))
    assert all(r["success"] for r in rows)


def test_a_bad_dialect_is_a_usage_error(run):
    result = run("--bench=mock", "--bench-agent", "api-vlm", "--bench-agent-dialect", "klingon")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert any("--bench-agent-dialect" in line and "klingon" in line for line in result.errlines)
