"""WAAClient: action -> pyautogui mapping, retries, setup step types, evaluate replies, scoring rule."""

from __future__ import annotations

import email.utils
import http.server
import json
import socket
import threading
from datetime import datetime, timedelta, timezone

import httpx
import pytest

from pytest_agentbench.benches.waa import scoring
from pytest_agentbench.benches.waa.client import PYAUTOGUI_PREFIX, WAAClient
from pytest_agentbench.benchmark import EvaluationError, InfrastructureError
from pytest_agentbench.model import Action
from pytest_agentbench.sockets import HTTPServer
from pytest_agentbench.testing import FakeWAAServer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Recorder:
    """An httpx MockTransport that records requests and replies from a handler."""

    def __init__(self, handler=None):
        self.requests: list[httpx.Request] = []
        self.handler = handler or (lambda r: httpx.Response(200, text="ok"))

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.handler(request)

    def client(self, **kw) -> WAAClient:
        kw.setdefault("jitter", 0.0)  # exact waits; jitter has tests of its own
        client = WAAClient("http://vm:5000", "http://vm:5050", transport=httpx.MockTransport(self), **kw)
        client.sleeps = []
        client.sleep = client.sleeps.append
        return client


# ---------------------------------------------------------------- actions
@pytest.fixture
def mapper() -> WAAClient:
    client = WAAClient("http://vm:5000", transport=httpx.MockTransport(lambda r: httpx.Response(500)))
    client.viewport = (1000, 500)
    return client


@pytest.mark.parametrize(
    ("action", "code"),
    [
        (Action(type="click", x=10, y=20), "pyautogui.click(10, 20)"),
        (Action(type="click", x=0.5, y=0.25), "pyautogui.click(500, 125)"),
        (Action(type="click", x=1, y=1, unit="px"), "pyautogui.click(1, 1)"),
        (Action(type="double_click", x=3, y=4), "pyautogui.doubleClick(3, 4)"),
        (Action(type="right_click", x=3, y=4), "pyautogui.rightClick(3, 4)"),
        (Action(type="type", text="it's\n"), "pyautogui.typewrite(\"it's\\n\", interval=0.02)"),
        (Action(type="type", text="a", x=5, y=6), "pyautogui.click(5, 6); pyautogui.typewrite('a', interval=0.02)"),
        (Action(type="key", key="Return"), "pyautogui.press('enter')"),
        (Action(type="key", key="ctrl+s"), "pyautogui.hotkey('ctrl', 's')"),
        (Action(type="key", key="+"), "pyautogui.press('+')"),
        (Action(type="hotkey", keys=["Control", "Shift", "s"]), "pyautogui.hotkey('ctrl', 'shift', 's')"),
        (Action(type="scroll", scroll_direction="down", scroll_amount=5), "pyautogui.scroll(-5)"),
        (Action(type="scroll", scroll_direction="up"), "pyautogui.scroll(3)"),
        (Action(type="scroll", scroll_direction="right", scroll_amount=2, x=7, y=8), "pyautogui.hscroll(2, x=7, y=8)"),
        (Action(type="scroll", scroll_direction="left", scroll_amount=2), "pyautogui.hscroll(-2)"),
        (Action(type="drag", x=1, y=2, end_x=30, end_y=40),
         "pyautogui.moveTo(1, 2); pyautogui.dragTo(30, 40, duration=0.5, button='left')"),
        (Action(type="wait", seconds=2), "time.sleep(2.0)"),
        (Action(type="wait"), "time.sleep(1.0)"),
    ],
)
def test_action_code(mapper, action, code):
    assert mapper.action_code(action) == code


@pytest.mark.parametrize("kind", ["done", "fail", "answer", "error"])
def test_terminal_actions_are_refused(mapper, kind):
    with pytest.raises(ValueError, match="terminal"):
        mapper.act(Action(type=kind))


def test_act_sends_python_c_over_execute():
    rec = Recorder(lambda r: httpx.Response(200, json={"status": "success", "output": "", "error": "",
                                                       "returncode": 0}))
    client = rec.client()
    client.act(Action(type="click", x=10, y=20))
    (req,) = rec.requests
    assert req.url.path == "/execute"
    body = json.loads(req.content)
    assert body == {"command": ["python", "-c", PYAUTOGUI_PREFIX + "pyautogui.click(10, 20)"], "shell": False}


def test_act_failure_in_vm_is_infrastructure_error():
    rec = Recorder(lambda r: httpx.Response(200, json={"status": "success", "output": "", "error": "boom",
                                                       "returncode": 1}))
    with pytest.raises(InfrastructureError, match="boom"):
        rec.client().act(Action(type="key", key="a"))


def test_fraction_without_viewport_asks_screen_size():
    def handler(r):
        if r.url.path == "/screen_size":
            return httpx.Response(200, json={"width": 200, "height": 100})
        return httpx.Response(200, json={"status": "success", "output": "", "error": "", "returncode": 0})

    client = Recorder(handler).client()
    assert client.action_code(Action(type="click", x=0.5, y=0.5)) == "pyautogui.click(100, 50)"


# ---------------------------------------------------------------- retries
def test_server_down_retries_with_backoff_then_infrastructure_error():
    url = f"http://127.0.0.1:{free_port()}"
    client = WAAClient(url, retries=3, backoff=0.5, jitter=0.0, timeout=2)
    sleeps: list[float] = []
    client.sleep = sleeps.append
    with pytest.raises(InfrastructureError, match=f"{url}/screenshot failed after 4 attempt"):
        client.observe()
    assert sleeps == [0.5, 1.0, 2.0]
    assert client.probe() is False
    with pytest.raises(InfrastructureError, match=url):
        client.wait_ready(0.01)


@pytest.mark.parametrize("status", [502, 503, 504])
def test_transient_status_is_retried(status):
    replies = iter([httpx.Response(status), httpx.Response(status), httpx.Response(200, text="All windows closed")])
    rec = Recorder(lambda r: next(replies))
    client = rec.client(retries=3, backoff=0.1)
    client.setup([{"type": "close_all", "parameters": {}}])
    assert len(rec.requests) == 3 and client.sleeps == [0.1, 0.2]


class Unavailable(http.server.BaseHTTPRequestHandler):
    """A real loopback server answering each request with the next of ``server.replies`` (status,
    Retry-After header or None), then 200."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.paths.append(self.path)
        status, retry_after = self.server.replies.pop(0) if self.server.replies else (200, None)
        body = b"All windows closed" if status == 200 else b"busy"
        self.send_response(status)
        if retry_after is not None:
            self.send_header("Retry-After", retry_after)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def unavailable():
    httpd = HTTPServer(("127.0.0.1", 0), Unavailable)
    httpd.replies, httpd.paths = [], []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _real_client(httpd, **kw) -> WAAClient:
    client = WAAClient(f"http://127.0.0.1:{httpd.server_address[1]}", **kw)
    client.sleeps = []
    client.sleep = client.sleeps.append
    return client


def test_retry_after_in_seconds_and_as_an_http_date_is_waited_for(unavailable):
    soon = email.utils.format_datetime(datetime.now(timezone.utc) + timedelta(seconds=3), usegmt=True)
    unavailable.replies[:] = [(503, "2"), (503, soon), (502, "garbage")]
    with _real_client(unavailable, backoff=0.25, jitter=0.0, timeout=10) as client:
        client.setup([{"type": "close_all", "parameters": {}}])
    assert unavailable.paths == ["/setup/close_all"] * 4 and client.setup_warnings == []
    assert client.sleeps[0] == 2.0
    assert 1.5 < client.sleeps[1] <= 3.0  # the date has whole seconds
    assert client.sleeps[2] == 1.0  # an unreadable Retry-After leaves the backoff (0.25 * 2**2)


def test_retry_after_is_capped_by_the_request_timeout(unavailable):
    unavailable.replies[:] = [(503, "3600"), (503, "Sun, 06 Nov 2094 08:49:37 GMT")]
    with _real_client(unavailable, backoff=0.0, jitter=0.0, timeout=3) as client:
        client.setup([{"type": "close_all", "parameters": {}}])
    assert client.sleeps == [3.0, 3.0]


def test_retries_run_out_with_retry_after_too(unavailable):
    unavailable.replies[:] = [(503, "1")] * 5
    with _real_client(unavailable, retries=2, backoff=0.0, jitter=0.0) as client, \
            pytest.raises(InfrastructureError, match=r"failed after 3 attempt.*HTTP 503"):
        client.setup([{"type": "close_all", "parameters": {}}])
    assert client.sleeps == [1.0, 1.0] and len(unavailable.paths) == 3


def test_429_is_not_a_transient_status_for_the_waa_server(unavailable):
    unavailable.replies[:] = [(429, "1")]
    with _real_client(unavailable) as client:
        client.setup([{"type": "close_all", "parameters": {}}])
    assert client.sleeps == [] and len(unavailable.paths) == 1
    assert client.setup_warnings and "HTTP 429" in client.setup_warnings[0]


def test_backoff_doubles_with_jitter_added():
    runs: set[tuple[float, ...]] = set()
    for _ in range(5):
        rec = Recorder(lambda r: httpx.Response(503))
        client = rec.client(retries=3, backoff=0.1, jitter=0.05)
        with pytest.raises(InfrastructureError, match="failed after 4 attempt"):
            client.setup([{"type": "close_all", "parameters": {}}])
        assert len(client.sleeps) == 3
        for base, wait in zip((0.1, 0.2, 0.4), client.sleeps, strict=True):
            assert base <= wait <= base + 0.05
        runs.add(tuple(client.sleeps))
    assert len(runs) > 1  # random jitter: five runs never wait exactly alike


def test_server_error_500_is_not_retried():
    rec = Recorder(lambda r: httpx.Response(500, json={"status": "error", "message": "nope"}))
    with pytest.raises(InfrastructureError, match="HTTP 500"):
        rec.client().run_command(["python", "-c", "1"])
    assert len(rec.requests) == 1


@pytest.mark.parametrize(("step", "status", "body"), [
    # What upstream's real server answers, and upstream's SetupController logs and goes on from.
    ({"type": "execute", "parameters": {"command": ["no-such-program"]}}, 500,
     {"status": "error", "message": "[Errno 2] No such file or directory: 'no-such-program'"}),
    ({"type": "open", "parameters": {"path": "C:\\missing.txt"}}, 404, "File not found: C:\\missing.txt"),
    ({"type": "activate_window", "parameters": {"window_name": "Nowhere"}}, 404, "Window Nowhere not found"),
    ({"type": "launch", "parameters": {"command": "x"}}, 500, {"status": "error", "message": "boom"}),
    ({"type": "create_folder", "parameters": {"path": "C:\\x"}}, 400, {"status": "error"}),
    ({"type": "close_all", "parameters": {}}, 500, "Currently not supported on Linux."),
])
def test_setup_steps_upstream_tolerates_are_warnings(step, status, body):
    reply = (lambda r: httpx.Response(status, json=body)) if isinstance(body, dict) else (
        lambda r: httpx.Response(status, text=body))
    rec = Recorder(reply)
    client = rec.client()
    client.setup([step, {"type": "sleep", "parameters": {"seconds": 1}}])
    assert len(client.setup_warnings) == 1, client.setup_warnings
    assert client.sleeps == [1.0]  # setup went on; a failed open does not wait for the file
    assert len(rec.requests) == 1  # refusals are not retried


def test_setup_errors_where_upstream_raises():
    client = Recorder().client()
    for step in ({"type": "open", "parameters": {"path": ""}}, {"type": "launch", "parameters": {"command": []}},
                 {"type": "execute", "parameters": {"command": ""}}):
        with pytest.raises(ValueError, match="is empty"):
            client.setup([step])
    down = WAAClient(f"http://127.0.0.1:{free_port()}", retries=0)
    with pytest.raises(InfrastructureError, match="failed after 1 attempt"):
        down.setup([{"type": "open", "parameters": {"path": "C:\\a.txt"}}])


def test_execute_until_repeats_as_upstream_does():
    replies = iter([1, 1, 0])
    rec = Recorder(lambda r: httpx.Response(200, json={"status": "success", "output": "", "error": "",
                                                        "returncode": next(replies)}))
    client = rec.client()
    client.setup([{"type": "execute", "parameters": {"command": ["check"], "until": {"returncode": 0}}}])
    assert len(rec.requests) == 3 and client.sleeps == [0.3, 0.3] and client.setup_warnings == []


def test_chrome_steps_wait_for_devtools_as_upstream_does():
    rec = Recorder(lambda r: httpx.Response(503))
    client = rec.client(cdp_url="http://vm:9222", retries=0)
    with pytest.raises(InfrastructureError, match="did not answer after 15 tries 5s apart"):
        client.setup([{"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["https://a.example/"]}}])
    assert client.sleeps == [5.0] * 14


def test_wait_ready_and_probe_against_fake():
    with FakeWAAServer() as fake:
        client = WAAClient(fake.url)
        assert client.probe() is True
        client.wait_ready(1)
        client.close()


# ---------------------------------------------------------------- setup steps
def test_setup_step_types_use_the_real_endpoints():
    def handler(r):
        if r.url.path == "/setup/execute":
            return httpx.Response(200, json={"status": "success", "output": "", "error": "", "returncode": 0})
        if r.url.path == "/json/list":
            return httpx.Response(200, json=[{"id": "T1", "type": "page", "url": "https://a.example/"},
                                             {"id": "T2", "type": "page", "url": "https://b.example/"}])
        return httpx.Response(200, text="ok")

    rec = Recorder(handler)
    client = rec.client(cdp_url="http://vm:9222")
    client.setup([
        {"type": "launch", "parameters": {"command": ["notepad.exe", "C:\\a.txt"]}},
        {"type": "launch", "parameters": {"command": "start chrome", "shell": True}},
        {"type": "execute", "parameters": {"command": "echo hi", "shell": "true"}},
        {"type": "command", "parameters": {"command": ["python", "-c", "print(1)"]}},
        {"type": "sleep", "parameters": {"seconds": 2}},
        {"type": "open", "parameters": {"path": "C:\\a.txt"}},
        {"type": "activate_window", "parameters": {"window_name": "a.txt - Notepad", "strict": "true"}},
        {"type": "create_folder", "parameters": {"path": "C:\\new"}},
        {"type": "recycle_file", "parameters": {"path": "C:\\old.txt"}},
        {"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["https://a.example/"]}},
        {"type": "chrome_close_tabs", "parameters": {"urls_to_close": ["https://b.example"]}},
    ])
    seen = [(r.method, r.url.path, json.loads(r.content) if r.content else None) for r in rec.requests]
    assert seen[0] == ("POST", "/setup/launch", {"command": ["notepad.exe", "C:\\a.txt"], "shell": False})
    assert seen[1] == ("POST", "/setup/launch", {"command": "start chrome", "shell": True})
    assert seen[2] == ("POST", "/setup/execute", {"command": "echo hi", "shell": True})
    assert seen[3] == ("POST", "/setup/execute", {"command": ["python", "-c", "print(1)"], "shell": False})
    assert client.sleeps == [2.0, 2.0, 5.0]  # the sleep step, after opening a file, before closing tabs
    assert seen[4] == ("POST", "/setup/open_file", {"path": "C:\\a.txt"})
    assert seen[5] == ("POST", "/setup/activate_window", {"window_name": "a.txt - Notepad", "strict": True,
                                                          "by_class": False})
    assert seen[6] == ("POST", "/setup/create_folder", {"path": "C:\\new"})
    assert seen[7] == ("POST", "/setup/recycle", {"path": "C:\\old.txt"})
    assert seen[8][1] == "/json/list"
    assert (seen[9][0], seen[9][1]) == ("PUT", "/json/new")
    assert rec.requests[9].url.query.decode() == "https://a.example/"
    # Upstream closes the default tab after opening the first one, then closes the tabs asked for.
    assert [s[1] for s in seen[10:]] == ["/json/close/T1", "/json/list", "/json/close/T2"]


def test_setup_rejects_unknown_and_unsupported_types():
    client = Recorder().client()
    with pytest.raises(ValueError, match="unknown type 'frobnicate'"):
        client.setup([{"type": "frobnicate", "parameters": {}}])
    with pytest.raises(InfrastructureError, match="update_browse_history"):
        client.setup([{"type": "update_browse_history", "parameters": {"history": []}}])


def test_every_setup_type_in_the_154_tasks_is_handled(pytestconfig):
    from pathlib import Path

    from pytest_agentbench.benches.waa.client import SETUP_TYPES, UNSUPPORTED_SETUP_TYPES

    root = Path(__file__).parent / "data" / "waa" / "examples"
    kinds = set()
    for path in root.glob("*/*.json"):
        task = json.loads(path.read_text(encoding="utf-8"))
        for step in task.get("config", []) + task.get("evaluator", {}).get("postconfig", []):
            kinds.add(step["type"])
    assert kinds, "no task files found"
    assert kinds <= SETUP_TYPES | UNSUPPORTED_SETUP_TYPES


@pytest.fixture
def file_server(tmp_path):
    (tmp_path / "book.xlsx").write_bytes(b"PK\x03\x04 fake spreadsheet")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(tmp_path), **kw)

        def log_message(self, *a):
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_download_is_fetched_by_the_harness_and_uploaded(file_server):
    target = "C:\\Users\\Docker\\Downloads\\book.xlsx"
    with FakeWAAServer() as fake:
        client = WAAClient(fake.url, download_allow=frozenset({"127.0.0.1"}))
        client.sleep = lambda s: None
        client.setup([{"type": "download",
                       "parameters": {"files": [{"url": f"{file_server}/book.xlsx", "path": target}]}}])
        assert fake.fs[target] == b"PK\x03\x04 fake spreadsheet"
        upload = [r for r in fake.requests if r["path"] == "/setup/upload"]
        assert len(upload) == 1 and upload[0]["form"] == {"file_path": target}
        assert not any(r["path"] == "/setup/download_file" for r in fake.requests)
        with pytest.raises(InfrastructureError, match=r"failed after 3 attempts: .*HTTP 404"):
            client.setup([{"type": "download",
                           "parameters": {"files": [{"url": f"{file_server}/missing", "path": target}]}}])
        client.close()


def test_a_task_file_cannot_make_the_harness_fetch_a_private_address(file_server):
    from pytest_agentbench.benches.waa.downloads import DownloadRefused

    def step(url: str) -> list[dict]:
        return [{"type": "download", "parameters": {"files": [{"url": url, "path": "C:\\f"}]}}]

    with FakeWAAServer() as fake:
        client = WAAClient(fake.url)
        for url in (f"{file_server}/book.xlsx", "http://169.254.169.254/latest/meta-data/", "http://10.1.2.3/x",
                    "http://[::1]/x", "file:///etc/passwd", "ftp://example.com/x"):
            with pytest.raises(DownloadRefused):
                client.setup(step(url))
        assert not [r for r in fake.requests if r["path"] == "/setup/upload"]
        client.close()


def test_download_redirects_are_checked_hop_by_hop_and_sizes_capped():
    from pytest_agentbench.benches.waa.downloads import DownloadRefused, fetch

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/hop":
            return httpx.Response(302, headers={"location": "http://169.254.169.254/latest/user-data"})
        if request.url.path == "/loop":
            return httpx.Response(302, headers={"location": "/loop"})
        return httpx.Response(200, content=b"x" * 2048)

    def public(host):
        return ["93.184.216.34"] if host == "files.example" else ["169.254.169.254"]
    http = httpx.Client(transport=httpx.MockTransport(handler))
    with pytest.raises(DownloadRefused, match=r"169\.254\.169\.254, a non-public address"):
        fetch(http, "http://files.example/hop", resolve=public)
    with pytest.raises(DownloadRefused, match="more than 5 redirects"):
        fetch(http, "http://files.example/loop", resolve=public)
    with pytest.raises(DownloadRefused, match="1024-byte cap"):
        fetch(http, "http://files.example/big", resolve=public, max_bytes=1024)
    assert fetch(http, "http://files.example/big", resolve=public) == b"x" * 2048


# ---------------------------------------------------------------- evaluate replies
TASK = {"id": "t", "evaluator": {"func": "exact_match", "result": {"type": "rule", "rules": {}},
                                 "expected": {"type": "rule", "rules": {"expected": 1}}}}


def eval_client(status, body):
    rec = Recorder(lambda r: httpx.Response(status, json=body) if body is not None
                   else httpx.Response(status, text="x"))
    return rec, rec.client()


def test_evaluate_posts_task_and_last_action():
    rec, client = eval_client(200, {"success": True, "score": 1.0, "reason": "ok"})
    verdict = client.evaluate(TASK, Action(type="done"))
    assert verdict.score == 1.0 and verdict.passed is True
    (req,) = rec.requests
    assert str(req.url) == "http://vm:5050/evaluate"
    sent = json.loads(req.content)
    assert sent["agent_last_action"] == "DONE" and sent["evaluator"] == TASK["evaluator"]


def test_evaluate_partial_score_and_metric_criteria():
    _, client = eval_client(200, {"success": False, "score": 0.5, "reason": "half",
                                  "metrics": [{"metric": "a", "score": 1.0}, {"metric": "b", "score": 0.0}]})
    verdict = client.evaluate(TASK, None)
    assert verdict.score == 0.5 and verdict.passed is False
    assert [(c.name, c.passed) for c in verdict.criteria] == [("a", True), ("b", False)]


@pytest.mark.parametrize(
    ("status", "body", "error"),
    [
        (422, {"success": False, "score": None, "scored": False, "reason": "cannot score: metric"}, EvaluationError),
        (200, {"success": False, "score": 0.0, "scored": False, "error_type": "evaluation", "reason": "x"},
         EvaluationError),
        (200, {"success": False, "score": 0.0, "reason": "No evaluator config"}, EvaluationError),
        (500, {"success": False, "score": 0.0, "reason": "Error: getter crashed"}, EvaluationError),
        (200, {"success": True, "score": 7}, EvaluationError),
        (200, {"success": True, "score": "1"}, EvaluationError),
        (200, None, EvaluationError),
        (404, None, InfrastructureError),
        (500, None, InfrastructureError),
        (200, {"success": False, "score": 0.0, "scored": False, "error_type": "infrastructure", "reason": "vm"},
         InfrastructureError),
    ],
)
def test_evaluate_cannot_score_is_an_error_not_zero(status, body, error):
    _, client = eval_client(status, body)
    with pytest.raises(error):
        client.evaluate(TASK, Action(type="done"))


def test_evaluate_without_evaluator_is_evaluation_error():
    rec, client = eval_client(200, {"score": 1.0})
    with pytest.raises(EvaluationError, match="no evaluator"):
        client.evaluate({"id": "x"}, None)
    assert rec.requests == []


def test_infeasible_and_fail_are_decided_locally():
    rec, client = eval_client(500, None)
    inf = {"id": "INF-x", "evaluator": {"func": "infeasible"}}
    assert client.evaluate(inf, Action(type="fail")).passed is True
    for last in (Action(type="done"), Action(type="answer", answer="no"), None):
        verdict = client.evaluate(inf, last)
        assert verdict.score == 0.0 and verdict.passed is False
    assert client.evaluate(TASK, Action(type="fail")).score == 0.0
    assert rec.requests == []


# ---------------------------------------------------------------- scoring rule
def test_and_short_circuits_on_zero_then_averages():
    calls = []

    def metric(v):
        return lambda: calls.append(v) or v

    assert scoring.combine([metric(1.0), metric(0.0), metric(1.0)], "and") == (0.0, [1.0, 0.0], True)
    assert calls == [1.0, 0.0]
    assert scoring.combine([1.0, 0.5], "and") == (0.75, [1.0, 0.5], False)


def test_or_short_circuits_on_one_then_max():
    assert scoring.combine([0.2, 1.0, 0.0], "or") == (1.0, [0.2, 1.0], True)
    assert scoring.combine([0.2, 0.6, 0.0], "or") == (0.6, [0.2, 0.6, 0.0], False)


def test_score_task_passes_options_and_handles_lists():
    seen = []

    def run(spec):
        seen.append((spec.func, spec.options, spec.expected))
        return {"a": 1.0, "b": 0.5}[spec.func]

    evaluator = {"func": ["a", "b"], "result": [{}, {}], "expected": [{"type": "rule"}, None],
                 "options": [{"x": 1}, {}]}
    result = scoring.score_task(evaluator, "DONE", run)
    assert result.score == 0.75 and not result.success
    assert seen == [("a", {"x": 1}, {"type": "rule"}), ("b", {}, None)]
    single = scoring.score_task({"func": "a", "options": {"y": 2}}, None, run)
    assert single.score == 1.0 and seen[-1][1] == {"y": 2}


def test_score_task_rules():
    assert scoring.score_task({"func": "infeasible"}, "FAIL", None).score == 1.0
    assert scoring.score_task({"func": "infeasible"}, "DONE", None).score == 0.0
    assert scoring.score_task({"func": "x"}, "FAIL", lambda s: 1.0).score == 0.0

    def missing(spec):
        raise FileNotFoundError("gone")

    assert scoring.score_task({"func": ["x", "y"]}, None, missing).score == 0.0
    assert scoring.score_task({"func": "x"}, None, lambda s: "not a number").score == 0.0
    with pytest.raises(scoring.CannotScore, match="list of 2"):
        scoring.score_task({"func": ["a", "b"], "result": [{}]}, None, lambda s: 1.0)
    with pytest.raises(scoring.CannotScore, match="conj"):
        scoring.score_task({"func": ["a"], "conj": "xor"}, None, lambda s: 1.0)
    assert scoring.score_task({"func": ["a", "b"], "conj": "or"}, None,
                              lambda s: {"a": 0.0, "b": 1.0}[s.func]).score == 1.0
