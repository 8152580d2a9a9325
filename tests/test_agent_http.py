"""``--bench-agent http``: the client against the example agent server (``conftest_examples/http_agent``),
started in-process on a loopback port. Nothing of httpx is mocked: every request is real HTTP.

The example server's handler is subclassed here only to record requests and to inject faults
(503s, slow replies, unusable bodies) in front of the example's own routing.
"""

from __future__ import annotations

import email.utils
import importlib.util
import json
import socket
import ssl
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from importlib import resources
from pathlib import Path
from typing import Any, get_args

import pytest
from conftest import notepad_project, only_run_folder, results
from jsonschema import Draft202012Validator

from pytest_agentbench.agents import http as http_agent
from pytest_agentbench.agents.http import HttpAgent, HttpAgentError, check_url, parse_usage, tls_for
from pytest_agentbench.infra.retry import retry_after_seconds
from pytest_agentbench.model import Action, ActionType, Observation, Task

ROOT = Path(__file__).resolve().parents[1]
SERVER_FILE = ROOT / "conftest_examples" / "http_agent" / "server.py"


def _load_example() -> Any:
    spec = importlib.util.spec_from_file_location("agentbench_example_http_server", SERVER_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


example = _load_example()


# -- the schema --------------------------------------------------------------------------------------
def load_schema() -> dict[str, Any]:
    path = resources.files("pytest_agentbench") / "agents" / "schema" / "http_agent.schema.json"
    return json.loads(path.read_text(encoding="utf-8"))


SCHEMA = load_schema()


def validator(name: str) -> Draft202012Validator:
    """A validator for one body kind (``$defs/<name>``) of the protocol schema."""
    sub = {k: v for k, v in SCHEMA.items() if k != "anyOf"}
    sub["$ref"] = f"#/$defs/{name}"
    return Draft202012Validator(sub)


def assert_valid(name: str, body: Any) -> None:
    errors = [f"{e.json_path}: {e.message[:200]}" for e in validator(name).iter_errors(body)]
    assert not errors, errors


def test_schema_is_valid_and_every_property_is_described():
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(SCHEMA)

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.get("properties", {}).items():
                assert "description" in value or "$ref" in value, f"{path}.{key} has no description"
            for key, value in node.items():
                walk(value, f"{path}.{key}")
        elif isinstance(node, list):
            for value in node:
                walk(value, path)

    walk(SCHEMA, "http_agent")


def test_schema_action_and_task_match_the_models_and_the_records():
    trajectory = json.loads((resources.files("pytest_agentbench") / "record" / "schema" / "trajectory.schema.json")
                            .read_text(encoding="utf-8"))
    assert SCHEMA["$defs"]["action"] == trajectory["$defs"]["action"]
    assert set(SCHEMA["$defs"]["action"]["properties"]) == set(Action.model_fields)
    assert SCHEMA["$defs"]["action"]["properties"]["type"]["enum"] == list(get_args(ActionType))
    task = Task(task_id="t", instruction="do it", time_limit_steps=5)
    assert set(SCHEMA["$defs"]["task"]["properties"]) == set(http_agent.task_json(task))
    assert_valid("usage", {"input_tokens": 1, "output_tokens": 2, "cost_usd": 0.5, "calls": 1, "model": "m"})
    assert not validator("usage").is_valid({"cost": 0.5})


# -- an in-process agent server ------------------------------------------------------------------------
class Fault:
    """What to answer instead of the example's reply: ``status``/``body`` (and ``headers``) after
    ``delay`` seconds."""

    def __init__(self, status: int = 200, body: Any = "", *, delay: float = 0.0,
                 headers: dict[str, str] | None = None) -> None:
        self.status, self.body, self.delay, self.headers = status, body, delay, headers or {}


class RecordingHandler(example.Handler):
    def do_GET(self) -> None:
        status = self.server.health_status
        if status != 200 and self.path == "/health":
            self.send_json(status, {"error": "not ready"})
            return
        super().do_GET()

    def post(self, path: str, body: Any) -> None:
        server = self.server
        with server.lock:
            server.requests.append((path, body))
            queue = server.faults.get(path, [])
            fault = queue.pop(0) if queue else None
        if fault is None:
            super().post(path, body)
            return
        time.sleep(fault.delay)
        payload = fault.body if isinstance(fault.body, str) else json.dumps(fault.body)
        try:
            self.send_response(fault.status)
            self.send_header("Content-Length", str(len(payload.encode())))
            for name, value in fault.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload.encode())
        except OSError:  # the client gave up waiting (timeout tests)
            pass


class TestServer(example.AgentServer):
    __test__ = False

    def __init__(self, agent: Any) -> None:
        super().__init__(agent, handler=RecordingHandler)
        self.lock = threading.Lock()
        self.requests: list[tuple[str, Any]] = []
        self.faults: dict[str, list[Fault]] = {}
        self.health_status = 200

    def bodies(self, path: str) -> list[Any]:
        return [body for p, body in self.requests if p == path]


class CostlyAgent(example.SubmitAgent):
    """The example agent, reporting a model call per step."""

    name = "costly"

    def act(self, request: dict[str, Any]) -> dict[str, Any]:
        reply = super().act(request)
        reply["usage"] = {"input_tokens": 1000, "output_tokens": 50, "cost_usd": 0.25, "model": "remote-model"}
        return reply


class NotepadAgent(example.SubmitAgent):
    """Replays WAA's notepad solution, one action per step."""

    name = "notepad-replayer"

    def act(self, request: dict[str, Any]) -> dict[str, Any]:
        from pytest_agentbench.testing import NOTEPAD_SOLUTION

        return {"action": NOTEPAD_SOLUTION[request["step"]]}


def start(agent: Any) -> TestServer:
    server = TestServer(agent)
    server.start()
    return server


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[TestServer] = []

    def _serve(agent: Any = None) -> TestServer:
        servers.append(start(agent or example.SubmitAgent()))
        return servers[-1]

    yield _serve
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def server(serve) -> TestServer:
    return serve()


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(HttpAgent, "backoff_seconds", 0.0)
    monkeypatch.setattr(HttpAgent, "jitter_seconds", 0.0)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http_args(url: str, *extra: str) -> list[str]:
    return ["--bench=mock", "--bench-agent", "http", "--bench-agent-url", url, *extra]


def trajectories(folder: Path) -> dict[str, dict[str, Any]]:
    return {json.loads(p.read_text())["task"]["task_id"]: json.loads(p.read_text())
            for p in folder.glob("tasks/*/*.trajectory.json")}


# -- start-up: bad settings and unhealthy servers are usage errors ------------------------------------
@pytest.mark.parametrize(("how", "expected"), [
    ("down", ("*--bench-agent http: GET http://127.0.0.1:*/health failed: ConnectError*; "
              "start the agent server or fix --bench-agent-url")),
    ("500", ("*--bench-agent http: GET http://127.0.0.1:*/health answered 500; "
             "start the agent server or fix --bench-agent-url")),
    ("no-url", "*--bench-agent http needs --bench-agent-url URL*"),
    ("ftp", "*--bench-agent-url must be an http:// or https:// URL*got 'ftp://host/'*"),
    ("timeout", "*--bench-agent-timeout must be more than 0 and at most 86400 seconds, got '0'"),
])
def test_start_up_problems_are_one_line_usage_errors(run, server, how, expected):
    args = {
        "down": ["--bench-agent-url", f"http://127.0.0.1:{free_port()}"],
        "500": ["--bench-agent-url", server.url],
        "no-url": [],
        "ftp": ["--bench-agent-url", "ftp://host/"],
        "timeout": ["--bench-agent-url", server.url, "--bench-agent-timeout", "0"],
    }[how]
    server.health_status = 500
    result = run("--bench=mock", "--bench-limit", "1", "--bench-agent", "http", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR")]
    assert len(errors) == 1, result.stderr.lines
    result.stderr.fnmatch_lines([expected])
    assert not server.bodies("/act")


# -- the example server passes the mock benchmark ----------------------------------------------------
def test_example_server_passes_mock_tasks_and_speaks_the_schema(run, pytester, server):
    result = run(*http_args(server.url, "--bench-limit", "3", "--bench-run-name", "r"))
    result.assert_outcomes(passed=3)
    rows = results(only_run_folder(pytester.path))
    task_ids = [r["task_id"] for r in rows]
    # One reset per task, sent before that task's first act, with the right task.
    resets = server.bodies("/reset")
    assert [b["task"]["task_id"] for b in resets] == task_ids
    sequence = [(p, b["task"]["task_id"], b.get("step")) for p, b in server.requests]
    assert sequence == [entry for t in task_ids for entry in (("/reset", t, None), ("/act", t, 0), ("/act", t, 1))]
    for body in resets:
        assert_valid("resetRequest", body)
    acts = server.bodies("/act")
    for body in acts:
        assert_valid("actRequest", body)
        assert body["observation"]["screenshot_size"] == [1920, 1200]
        assert body["observation"]["screenshot_png_base64"].startswith("iVBORw0KGgo")  # PNG
        assert "error" not in body
    assert acts[1]["history"] == [{"type": "click", "target_id": "4", "keys": [], "reason": "click Submit"}]
    assert acts[0]["task"]["instruction"].endswith("click the Submit button.")
    assert len({b["session"] for b in acts}) == 1
    # The name the server reports at /health names the agent in the records.
    assert {r["agent"] for r in rows} == {"submit-clicker"}
    assert all(r["cost_usd"] == 0.0 for r in rows)


def test_usage_reported_by_the_server_is_recorded_as_cost(run, pytester, serve):
    server = serve(CostlyAgent())
    run(*http_args(server.url, "--bench-limit", "2", "--bench-run-name", "r")).assert_outcomes(passed=2)
    folder = only_run_folder(pytester.path)
    assert [r["cost_usd"] for r in results(folder)] == [0.5, 0.5]
    steps = next(iter(trajectories(folder).values()))["steps"]
    assert [s["cost_usd"] for s in steps] == [0.25, 0.25]
    assert steps[0]["usage"] == {"input_tokens": 1000, "output_tokens": 50, "cost_usd": 0.25, "calls": 1,
                                 "model": "remote-model"}
    assert_valid("actReply", CostlyAgent().act(server.bodies("/act")[0]))


def test_a_per_task_budget_stops_a_remote_model(run, pytester, serve):
    server = serve(CostlyAgent())
    result = run(*http_args(server.url, "--bench-limit", "1", "--bench-max-cost-usd-per-task", "0.2"))
    result.assert_outcomes(failed=1)
    (row,) = results(only_run_folder(pytester.path))
    assert row["error_type"] == "agent"
    assert len(server.bodies("/act")) == 1  # the budget was checked before the second call


# -- transient failures, hard failures and timeouts ---------------------------------------------------
def test_503s_are_retried_then_the_step_succeeds(run, pytester, server):
    server.faults["/act"] = [Fault(503, "restarting"), Fault(502, "bad gateway")]
    server.faults["/reset"] = [Fault(504, "slow")]
    run(*http_args(server.url, "--bench-limit", "1")).assert_outcomes(passed=1)
    assert [p for p, _ in server.requests] == ["/reset", "/reset", "/act", "/act", "/act", "/act"]


def test_a_client_error_is_an_agent_error_with_status_and_body(run, pytester, server):
    server.faults["/act"] = [Fault(422, "field 'observation' missing " + "x" * 500)]
    result = run(*http_args(server.url, "--bench-limit", "1"))
    result.assert_outcomes(failed=1)
    (row,) = results(only_run_folder(pytester.path))
    assert row["error_type"] == "agent"
    assert "answered 422: field 'observation' missing xxx" in row["error"]
    assert len(server.bodies("/act")) == 1  # not retried
    assert "x" * 201 not in row["error"]


def test_retries_run_out_on_a_server_that_stays_unavailable(run, pytester, server):
    server.faults["/act"] = [Fault(503, "down for maintenance")] * 10
    run(*http_args(server.url, "--bench-limit", "1")).assert_outcomes(failed=1)
    (row,) = results(only_run_folder(pytester.path))
    assert "answered 503 after 4 attempts: down for maintenance" in row["error"]
    assert len(server.bodies("/act")) == HttpAgent.retries + 1


def test_a_server_too_slow_for_the_timeout_is_an_agent_error(run, pytester, server, monkeypatch):
    monkeypatch.setattr(HttpAgent, "retries", 1)
    server.faults["/act"] = [Fault(200, {"action": {"type": "done"}}, delay=0.6)] * 2
    result = run(*http_args(server.url, "--bench-limit", "1", "--bench-agent-timeout", "0.15"))
    result.assert_outcomes(failed=1)
    (row,) = results(only_run_folder(pytester.path))
    assert row["error_type"] == "agent"
    assert "timed out after 0.15 s (2 attempts); raise --bench-agent-timeout" in row["error"]


def _recording_agent(url: str, **kwargs: Any) -> tuple[HttpAgent, list[float]]:
    agent = HttpAgent(url, **kwargs)
    sleeps: list[float] = []
    agent.sleep = sleeps.append
    return agent, sleeps


def test_retry_after_in_seconds_and_as_an_http_date_is_waited_for(server):
    soon = email.utils.format_datetime(datetime.now(timezone.utc) + timedelta(seconds=3), usegmt=True)
    server.faults["/act"] = [Fault(429, "slow down", headers={"Retry-After": "2"}),
                             Fault(503, "restarting", headers={"Retry-After": soon})]
    agent, sleeps = _recording_agent(server.url, timeout=10)
    try:
        assert agent.act(Observation(), Task(task_id="t"), []).type == "fail"  # no Submit button: the real reply
    finally:
        agent.close()
    assert len(server.bodies("/act")) == 3
    assert sleeps[0] == 2.0
    assert 1.5 < sleeps[1] <= 3.0  # the date has whole seconds, so the wait is a little under 3 s


def test_a_retry_after_longer_than_the_timeout_waits_only_the_timeout(server):
    late = email.utils.format_datetime(datetime.now(timezone.utc) + timedelta(hours=2), usegmt=True)
    server.faults["/act"] = [Fault(503, "", headers={"Retry-After": "3600"}),
                             Fault(429, "", headers={"Retry-After": late})]
    agent, sleeps = _recording_agent(server.url, timeout=4)
    try:
        agent.act(Observation(), Task(task_id="t"), [])
    finally:
        agent.close()
    assert sleeps == [4.0, 4.0]
    agent, sleeps = _recording_agent(server.url, timeout=300)
    server.faults["/act"] = [Fault(503, "", headers={"Retry-After": "3600"})]
    try:
        agent.act(Observation(), Task(task_id="t"), [])
    finally:
        agent.close()
    assert sleeps == [http_agent.MAX_RETRY_AFTER]


def test_backoff_doubles_with_jitter_added(server, monkeypatch):
    monkeypatch.setattr(HttpAgent, "backoff_seconds", 0.1)
    monkeypatch.setattr(HttpAgent, "jitter_seconds", 0.05)
    waits: list[list[float]] = []
    for _ in range(5):
        server.faults["/act"] = [Fault(502, "")] * 3
        agent, sleeps = _recording_agent(server.url, timeout=5)
        try:
            agent.act(Observation(), Task(task_id="t"), [])
        finally:
            agent.close()
        assert len(sleeps) == 3
        for base, wait in zip((0.1, 0.2, 0.4), sleeps, strict=True):
            assert base <= wait <= base + 0.05
        waits.append(sleeps)
    assert len({tuple(w) for w in waits}) > 1  # random jitter: five runs never wait exactly alike


@pytest.mark.parametrize(("header", "seconds"), [
    ("7", 7.0), (" 1.5 ", 1.5), ("0", 0.0),
    ("Sun, 06 Nov 1994 08:49:47 GMT", 10.0),  # IMF-fixdate
    ("Sunday, 06-Nov-94 08:49:47 GMT", 10.0),  # obsolete RFC 850
    ("Sun Nov  6 08:49:47 1994", 10.0),  # obsolete asctime, no zone: GMT
    ("Sun, 06 Nov 1994 08:49:27 GMT", 0.0),  # in the past
    ("-3", None), ("soon", None), ("", None), (None, None), ("inf", None),
])
def test_retry_after_header_forms(header, seconds):
    now = datetime(1994, 11, 6, 8, 49, 37, tzinfo=timezone.utc)
    assert retry_after_seconds(header, now=now) == seconds


# -- unusable replies -------------------------------------------------------------------------------
def test_one_unparseable_reply_is_a_wait_step_and_the_next_act_says_why(run, pytester, server):
    server.faults["/act"] = [Fault(200, "I think I should click Submit")]
    run(*http_args(server.url, "--bench-limit", "1", "--bench-run-name", "r")).assert_outcomes(passed=1)
    (trajectory,) = trajectories(only_run_folder(pytester.path)).values()
    first = trajectory["steps"][0]["action"]
    assert first["type"] == "wait" and first["seconds"] == 0.0
    assert first["reason"].startswith("unparseable reply: the reply is not JSON")
    assert first["raw"] == {"unparsed_reply": "I think I should click Submit"}
    assert [s["action"]["type"] for s in trajectory["steps"]] == ["wait", "click", "done"]
    acts = server.bodies("/act")
    assert "error" in acts[1] and "not JSON" in acts[1]["error"]
    assert "error" not in acts[2]  # a good reply clears it
    for body in acts:
        assert_valid("actRequest", body)


@pytest.mark.parametrize("depth", [300, 100_000])
def test_a_reply_nested_too_deep_is_an_unparseable_reply(run, pytester, server, depth):
    server.faults["/act"] = [Fault(200, "[" * depth + "]" * depth)]
    run(*http_args(server.url, "--bench-limit", "1", "--bench-run-name", "r")).assert_outcomes(passed=1)
    (trajectory,) = trajectories(only_run_folder(pytester.path)).values()
    first = trajectory["steps"][0]["action"]
    assert first["type"] == "wait" and first["reason"].startswith("unparseable reply: the reply is not JSON")
    assert [s["action"]["type"] for s in trajectory["steps"]] == ["wait", "click", "done"]


def test_two_unparseable_replies_in_a_row_fail_the_item_with_the_raw_reply(run, pytester, server):
    server.faults["/act"] = [Fault(200, {"thought": "hmm"}), Fault(200, {"action": {"type": "click"}})]
    result = run(*http_args(server.url, "--bench-limit", "1", "--bench-run-name", "r"))
    result.assert_outcomes(failed=1)
    folder = only_run_folder(pytester.path)
    (row,) = results(folder)
    assert row["error_type"] == "agent" and "unparseable reply twice" in row["error"]
    (trajectory,) = trajectories(folder).values()
    last = trajectory["steps"][-1]["action"]
    assert last["type"] == "error"
    assert last["raw"] == {"unparsed_reply": {"action": {"type": "click"}}}
    assert "invalid action: action: Value error, a click action needs x and y or target_id" in last["reason"]
    assert 'the reply has no "action"' in server.bodies("/act")[1]["error"]


# -- the client on its own ------------------------------------------------------------------------------
def test_observation_without_screenshot_and_a_server_without_reset(server):
    server.faults["/reset"] = [Fault(404, "no such endpoint")]
    agent = HttpAgent(server.url + "/", timeout=5)
    try:
        info = agent.check_health()
        assert info == {"status": "ok", "name": "submit-clicker"} and agent.name == "submit-clicker"
        agent.reset()
        task = Task(task_id="t1", instruction="click Submit", benchmark="b")
        tree = {"id": "0", "role": "window", "name": "w", "children": [{"id": "7", "role": "button", "name": "Submit"}]}
        action = agent.act(Observation(accessibility_tree=tree, viewport=(800, 600)), task, [])
        assert action == Action(type="click", target_id="7", reason="click Submit")
        assert agent.take_usage() is None
        body = server.bodies("/act")[0]
        assert_valid("actRequest", body)
        assert "screenshot_png_base64" not in body["observation"] and "screenshot_size" not in body["observation"]
        assert body["observation"]["viewport"] == [800, 600]
        # A new task without reset() still gets its /reset (the task id changed).
        agent.act(Observation(accessibility_tree=tree), Task(task_id="t2"), [])
        assert [b["task"]["task_id"] for b in server.bodies("/reset")] == ["t1", "t2"]
    finally:
        agent.close()


def test_a_server_that_disappears_mid_run_is_an_agent_error(serve):
    server = serve()
    agent = HttpAgent(server.url, timeout=5)
    server.shutdown()
    server.server_close()
    try:
        with pytest.raises(HttpAgentError, match=r"POST http://127\.0\.0\.1:\d+/reset failed \(4 attempts\): Connect"):
            agent.act(Observation(), Task(task_id="t"), [])
    finally:
        agent.close()


@pytest.mark.parametrize(("usage", "message"), [
    ({"cost": 1}, "usage has unknown key(s) 'cost'"),
    ({"input_tokens": -1}, "usage.input_tokens must be a whole number >= 0"),
    ({"cost_usd": "1"}, "usage.cost_usd must be a number >= 0"),
    ({"cost_usd": True}, "usage.cost_usd must be a number >= 0"),
    ({"model": 3}, "usage.model must be a string"),
    ([1], "usage must be a JSON object"),
])
def test_bad_usage_is_rejected(usage, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_usage(usage)


def test_check_url():
    assert check_url(" http://host:1/agent/ ") == "http://host:1/agent"
    for bad in ("host:1", "file:///x", "http://", "http://h/?q=1"):
        with pytest.raises(ValueError):
            check_url(bad)


def test_an_http_server_loads_no_ca_bundle_and_its_context_trusts_nothing(monkeypatch):
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    context = tls_for("http://127.0.0.1:8765")
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.get_ca_certs() == [] and context.cert_store_stats()["x509_ca"] == 0
    assert tls_for("https://agent.example:443") is True
    monkeypatch.setenv("HTTPS_PROXY", "https://proxy.example:3128")  # TLS to the proxy: checked as usual
    assert tls_for("http://127.0.0.1:8765") is True


# -- WAA against the fake WAA server --------------------------------------------------------------------
def test_waa_notepad_task_through_the_http_agent(run, pytester, serve):
    from pytest_agentbench.testing import NOTEPAD_SOLUTION, FakeWAAServer, serve_notepad_gold

    args = notepad_project(pytester.path, 1)
    args = args[:args.index("--bench-agent")]
    task = json.loads((pytester.path / "examples" / "notepad" / "t1.json").read_text())
    agent_server = serve(NotepadAgent())
    with FakeWAAServer(evaluate=True) as waa:
        serve_notepad_gold(waa, task)
        result = run(*args, "--waa-server", waa.url, "--waa-evaluate-url", waa.evaluate_url, "--bench-agent", "http",
                     "--bench-agent-url", agent_server.url)
        result.assert_outcomes(passed=1)
        assert waa.read_file("C:\\Users\\Docker\\Documents\\draft.txt") == b"This is a draft."
    acts = agent_server.bodies("/act")
    assert len(acts) == len(NOTEPAD_SOLUTION)
    assert [b["task"]["task_id"] for b in agent_server.bodies("/reset")] == ["t1"]
    assert acts[0]["task"]["benchmark"] == "waa" and acts[0]["task"]["domain"] == "notepad"
    assert acts[0]["observation"]["screenshot_size"] == [1280, 720]  # the fake WAA server's screen
    assert acts[0]["observation"]["accessibility_tree"] is not None
    for body in acts:
        assert_valid("actRequest", body)
