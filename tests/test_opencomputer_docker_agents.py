"""Agents of other kinds play an OpenComputer task in a container, unchanged: an agent behind the
HTTP protocol (the project's example server, its act replaced by a script) and api-claude against
a fake Messages API on loopback (``fake_anthropic.py``; no model is reachable here). Each sees the
container's 1920x1080 screenshots and solves ``gedit_sort_lines_manually`` through X input in the
container, as the scripted agent does. Needs the container tier (see test_opencomputer_docker.py).
"""

from __future__ import annotations

import base64
import importlib.util
import io
import threading
from pathlib import Path
from typing import Any

from fake_anthropic import FakeMessagesServer, message, ok, text, tool_use, turns
from test_opencomputer_desktop import SORTED, TASK
from test_opencomputer_docker import _ours, _run_id, plugin_run, setup  # noqa: F401 - setup is a fixture

EXAMPLE = Path(__file__).resolve().parent.parent / "conftest_examples" / "http_agent" / "server.py"
#: XFCE opens gedit unmaximized at the top left: its text area is around here
EDITOR = (400, 400)


def _png_size(b64: str) -> tuple[int, int]:
    from PIL import Image

    with Image.open(io.BytesIO(base64.b64decode(b64))) as image:
        return image.size


def test_an_http_agent_plays_in_the_container(setup: tuple[Path, str], tmp_path: Path) -> None:  # noqa: F811
    checkout, image = setup
    spec = importlib.util.spec_from_file_location("agentbench_example_http_server_oc", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    steps = [{"type": "click", "x": EDITOR[0], "y": EDITOR[1]}, {"type": "hotkey", "keys": ["ctrl", "a"]},
             {"type": "type", "text": SORTED}, {"type": "hotkey", "keys": ["ctrl", "s"]},
             {"type": "wait", "seconds": 2}, {"type": "done", "reason": "sorted and saved"}]
    seen: list[tuple[int, int]] = []
    lock = threading.Lock()

    class Scripted(example.SubmitAgent):  # type: ignore[misc,name-defined]
        def act(self, request: dict[str, Any]) -> dict[str, Any]:
            with lock:
                seen.append(_png_size(request["observation"]["screenshot_png_base64"]))
            return {"action": steps[len(request["history"])]}

    server = example.AgentServer(Scripted())
    server.start()
    try:
        run = _run_id(tmp_path)
        records = plugin_run(checkout, image, tmp_path, [TASK], f"--bench-agent-url={server.url}", agent="http",
                             run=run)
    finally:
        server.shutdown()
        server.server_close()
    record = records[TASK]
    assert record["error"] is None, record
    assert (record["passed"], record["score"]) == (True, 1.0), record["reason"]
    assert seen == [(1920, 1080)] * len(steps)  # every step saw the container's own screen
    assert not _ours(run), _ours(run)


def test_api_claude_plays_in_the_container(setup: tuple[Path, str], tmp_path: Path,  # noqa: F811
                                           monkeypatch: Any) -> None:
    checkout, image = setup
    requests: list[dict[str, Any]] = []

    def script(request: dict[str, Any], headers: dict[str, str]) -> Any:
        requests.append(request)
        tool = request["tools"][0]
        scale = tool["display_width_px"] / 1920, tool["display_height_px"] / 1080
        turn = turns(request)
        if turn == 0:
            point = [round(EDITOR[0] * scale[0]), round(EDITOR[1] * scale[1])]
            return ok(message(text("Focus the editor."), tool_use("left_click", coordinate=point)))
        plan = [tool_use("key", text="ctrl+a"), tool_use("type", text=SORTED), tool_use("key", text="ctrl+s"),
                tool_use("wait", duration=2)]
        if turn <= len(plan):
            return ok(message(plan[turn - 1]))
        return ok(message(text("The lines are sorted and saved.\nDONE")))

    with FakeMessagesServer(script) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-" + "x" * 24)
        run = _run_id(tmp_path)
        records = plugin_run(checkout, image, tmp_path, [TASK], agent="api-claude", run=run)
        monkeypatch.undo()
    record = records[TASK]
    assert record["error"] is None, record
    assert (record["passed"], record["score"]) == (True, 1.0), record["reason"]
    assert len(requests) == 6
    last = requests[-1]["messages"]
    shots = [block for msg in last if isinstance(msg.get("content"), list) for block in msg["content"]
             if block.get("type") == "tool_result"]
    assert shots, "the model was given the container's screenshots"
    assert not _ours(run), _ours(run)
