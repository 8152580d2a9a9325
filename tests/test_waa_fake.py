"""The fake WAA server: reply formats, the simulated desktop, and tasks solved end to end."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from pytest_agentbench.benchmark import EvaluationError, InfrastructureError
from pytest_agentbench.benches.waa.client import WAAClient
from pytest_agentbench.model import Action
from pytest_agentbench.testing import FakeWAAServer

EXAMPLES = Path(__file__).parent / "data" / "waa" / "examples"
NOTEPAD = EXAMPLES / "notepad" / "366de66e-cbae-4d72-b042-26390db2b145-WOS.json"
INFEASIBLE = EXAMPLES / "vs_code" / "INF-971cbb5b-3cbf-4ff7-9e24-b5c84fcebfa6-WOS.json"
DRAFT = "C:\\Users\\Docker\\Documents\\draft.txt"


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture
def fake():
    with FakeWAAServer() as server:
        yield server


@pytest.fixture
def client(fake):
    with WAAClient(fake.url, fake.evaluate_url, timeout=5) as c:
        yield c


@pytest.fixture
def notepad_task(fake):
    task = load(NOTEPAD)
    # The gold file is a GitHub URL; the fake serves it offline. Its content is assumed to be the
    # instructed text without a trailing newline (Notepad adds none).
    fake.cloud_files[task["evaluator"]["expected"][1]["path"]] = b"This is a draft."
    return task


SCRIPT = [
    Action(type="key", key="win"),
    Action(type="type", text="notepad"),
    Action(type="key", key="Return"),
    Action(type="click", x=640, y=360),
    Action(type="type", text="This is a draft."),
    Action(type="hotkey", keys=["ctrl", "s"]),
    Action(type="type", text="draft.txt"),
    Action(type="key", key="enter"),
    Action(type="wait", seconds=0.5),
]


def test_notepad_task_solved_end_to_end(fake, client, notepad_task):
    client.reset()
    client.setup(notepad_task["config"])
    first = client.observe()
    assert first.screenshot.startswith(b"\x89PNG") and first.viewport == (1280, 720)
    assert first.window_title is None
    for action in SCRIPT:
        client.act(action)
        obs = client.observe()
    assert obs.window_title == "draft.txt - Notepad"
    assert obs.screenshot != first.screenshot
    edit = obs.accessibility_tree["children"][0]["children"][0]
    assert edit["attrs"]["val:value"] == "This is a draft."
    assert fake.fs[DRAFT] == b"This is a draft."
    verdict = client.evaluate(notepad_task, Action(type="done"))
    assert verdict.score == 1.0 and verdict.passed is True
    assert [c.name for c in verdict.criteria] == ["exact_match", "compare_text_file"]
    # postconfig ran through the fake: the saved file was opened and activated.
    assert fake.windows[-1]["title"] == "draft.txt - Notepad"
    paths = [r["path"] for r in fake.requests]
    assert paths[:2] == ["/setup/close_all", "/probe"] and "/setup/clear_task_files" in paths


def test_do_nothing_scores_zero(fake, client, notepad_task):
    client.reset()
    client.setup(notepad_task["config"])
    client.observe()
    verdict = client.evaluate(notepad_task, Action(type="done"))
    assert verdict.score == 0.0 and verdict.passed is False
    assert [(c.name, c.passed) for c in verdict.criteria] == [("exact_match", False)]  # and short-circuits


def test_wrong_text_scores_zero_and_ignore_case_option_is_passed(fake, client, notepad_task):
    client.act(Action(type="hotkey", keys=["win", "r"]))
    client.act(Action(type="type", text="notepad\n"))
    client.act(Action(type="type", text="THIS IS A DRAFT."))
    client.act(Action(type="hotkey", keys=["ctrl", "s"]))
    client.act(Action(type="type", text="C:\\Users\\Docker\\Documents\\draft\n"))
    assert fake.fs[DRAFT] == b"THIS IS A DRAFT."
    assert client.evaluate(notepad_task, Action(type="done")).score == 0.0
    notepad_task["evaluator"]["options"] = [{}, {"ignore_case": True}]
    assert client.evaluate(notepad_task, Action(type="done")).score == 1.0


def test_infeasible_task_passes_only_with_final_fail(fake, client):
    task = load(INFEASIBLE)
    assert task["evaluator"]["func"] == "infeasible"
    client.sleep = lambda seconds: None
    client.reset()
    client.setup(task["config"])
    assert fake.windows[-1]["title"] == "Visual Studio Code" and client.setup_warnings == []
    assert client.evaluate(task, Action(type="fail", reason="not possible")).passed is True
    assert client.evaluate(task, Action(type="done")).passed is False
    assert client.evaluate(task, None).score == 0.0
    # The fake's evaluate endpoint applies the same rule when asked directly.
    for word, score in (("FAIL", 1.0), ("DONE", 0.0)):
        reply = httpx.post(fake.evaluate_url + "/evaluate", json={**task, "agent_last_action": word}).json()
        assert reply["score"] == score and reply["success"] is (score == 1.0)


def test_unknown_metric_is_cannot_score(fake, client):
    task = {"id": "x", "config": [], "evaluator": {"func": "compare_table", "result": {"type": "vm_file", "path": "C:\\a"},
                                                   "expected": {"type": "rule", "rules": {}}}}
    with pytest.raises(EvaluationError, match="compare_table"):
        client.evaluate(task, Action(type="done"))
    task["evaluator"] = {"func": "exact_match", "result": {"type": "vm_command_line", "command": "x"},
                         "expected": {"type": "rule", "rules": {"expected": ""}}}
    with pytest.raises(EvaluationError, match="vm_command_line"):
        client.evaluate(task, Action(type="done"))
    reply = httpx.post(fake.evaluate_url + "/evaluate", json={"id": "x"})
    assert reply.status_code == 422 and reply.json()["scored"] is False


def test_reply_formats(fake):
    base = fake.url
    assert httpx.get(base + "/probe").json() == {"status": "Probe successful", "message": "Service is operational"}
    assert httpx.get(base + "/platform").text == "Windows"
    r = httpx.post(base + "/setup/close_all", json={})
    assert r.status_code == 200 and r.text == "All windows closed successfully."
    r = httpx.post(base + "/setup/launch", json={"command": ["notepad.exe"], "shell": False})
    assert r.text == "notepad.exe launched successfully" and fake.windows[-1]["title"] == "Untitled - Notepad"
    assert httpx.post(base + "/setup/open_file", json={"path": "C:\\nope.txt"}).status_code == 404
    assert httpx.post(base + "/setup/activate_window", json={"window_name": "Paint"}).status_code == 404
    assert httpx.get(base + "/accessibility", params={"backend": "bogus"}).status_code == 400
    assert "AT" in httpx.get(base + "/accessibility", params={"backend": "uia"}).json()
    # /file takes a form field and returns bytes, or 404 JSON.
    r = httpx.post(base + "/file", data={"file_path": DRAFT})
    assert r.status_code == 404 and r.json() == {"error": "File not found"}
    assert httpx.post(base + "/file", data={}).status_code == 400
    fake.write_file(DRAFT, "hi")
    assert httpx.post(base + "/file", data={"file_path": DRAFT.replace("\\", "/").lower()}).content == b"hi"
    # /setup/upload is multipart; missing fields give 400 JSON.
    r = httpx.post(base + "/setup/upload", data={"file_path": "C:\\Users\\Docker\\Downloads\\a.bin"},
                   files={"file_data": ("a.bin", b"\x00\x01")})
    assert r.text == "File Uploaded" and fake.read_file("C:\\Users\\Docker\\Downloads\\a.bin") == b"\x00\x01"
    assert httpx.post(base + "/setup/upload", data={"file_path": "x"}).status_code == 400
    assert httpx.post(base + "/setup/clear_task_files", json={}).status_code == 200
    assert fake.read_file("C:\\Users\\Docker\\Downloads\\a.bin") is None
    r = httpx.post(base + "/execute", json={"command": ["python", "-c", "import pyautogui; print(pyautogui.position())"],
                                            "shell": False})
    assert r.json() == {"status": "success", "output": "Point(x=640, y=360)\n", "error": "", "returncode": 0}
    assert httpx.post(base + "/screen_size").json() == {"width": 1280, "height": 720}
    assert httpx.post(base + "/setup/create_folder", json={"path": "C:\\work\\x"}).json()["status"] == "success"
    assert fake.folder_exists("c:/work")


def test_setup_steps_against_fake(fake, client):
    client.setup([
        {"type": "create_folder", "parameters": {"path": "C:\\Users\\Docker\\Desktop\\proj"}},
        {"type": "create_file", "parameters": {"path": "C:\\Users\\Docker\\Desktop\\proj\\a.txt", "content": "x"}},
        {"type": "launch", "parameters": {"command": ["notepad.exe", "C:\\Users\\Docker\\Desktop\\proj\\a.txt"]}},
        {"type": "execute", "parameters": {"command": "echo hi", "shell": "true"}},
        {"type": "command", "parameters": {"command": ["cmd", "/c", "dir"]}},
        {"type": "open", "parameters": {"path": "C:\\Users\\Docker\\Desktop\\proj"}},
        {"type": "activate_window", "parameters": {"window_name": "a.txt - Notepad", "strict": True}},
        {"type": "sleep", "parameters": {"seconds": 0.01}},
        {"type": "recycle_file", "parameters": {"path": "C:\\Users\\Docker\\Desktop\\proj\\a.txt"}},
    ])
    assert fake.windows[-1]["title"] == "a.txt - Notepad"
    assert "echo hi" in fake.commands and ["cmd", "/c", "dir"] in fake.commands
    assert fake.read_file("C:\\Users\\Docker\\Desktop\\proj\\a.txt") is None
    # Upstream's SetupController logs a file it cannot open and a window it cannot find, and goes on.
    client.setup([{"type": "open", "parameters": {"path": "C:\\missing.txt"}}])
    client.setup([{"type": "activate_window", "parameters": {"window_name": "Nowhere"}}])
    assert len(client.setup_warnings) == 2 and "HTTP 404" in client.setup_warnings[0]
    assert client.setup_warnings[1] == "activate_window: window 'Nowhere' not found"


def test_unsupported_code_fails_like_a_python_error(client, monkeypatch):
    result = client.run_command(["python", "-c", "import os"])
    assert result["returncode"] == 1 and "not simulated" in result["error"]
    monkeypatch.setattr(client, "action_code", lambda action: "pyautogui.screenshot('x.png')")
    with pytest.raises(InfrastructureError, match="not simulated"):
        client.act(Action(type="key", key="a"))


def test_target_id_click_uses_last_tree(fake, client):
    fake._notepad()
    obs = client.observe()
    edit = obs.accessibility_tree["children"][0]["children"][0]
    assert "pyautogui.click(640, 375)" == client.action_code(Action(type="click", target_id=edit["id"]))
    with pytest.raises(ValueError, match="not in the last observation"):
        client.action_code(Action(type="click", target_id="999"))


def test_latency_is_added_per_call():
    with FakeWAAServer(latency=0.05) as fake, WAAClient(fake.url) as client:
        start = time.monotonic()
        for _ in range(3):
            assert client.probe()
        assert time.monotonic() - start >= 0.15
        assert len(fake.requests) == 3
