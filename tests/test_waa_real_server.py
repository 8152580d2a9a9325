"""Smoke tests against upstream's real WAA server (see ``tests/waa_real.py`` for the desktop it runs on).

They go through the project's own ``WAAClient`` transport (``probe``, ``observe``, ``act``, ``upload``,
``run_command``) or raw HTTP, and pin the facts the fake (``pytest_agentbench.testing``) must copy:
reply codes and bodies, error conventions, and what the Linux accessibility tree looks like.
"""

from __future__ import annotations

import io
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image

from pytest_agentbench.benches.waa.client import WAAClient
from pytest_agentbench.model import Action

pytestmark = pytest.mark.waa_real

ST = "{uri:deskat:state.at-spi.gnome.org}"
CP = "{uri:deskat:component.at-spi.gnome.org}"
GTKPAD_TITLE = "Untitled - Notepad"


@pytest.fixture
def client(waa_desktop) -> Any:
    with WAAClient(waa_desktop.url, timeout=60, retries=0) as c:
        yield c


def gtkpad(desktop, save_to: Path) -> None:
    """Start the interop GTK stand-in for Notepad (saving to ``save_to`` on Ctrl+S) and wait for its window."""
    script = desktop.upstream.parent / "gtkpad.py"
    if not script.is_file():
        pytest.fail(f"{script} is missing: the interop snapshot ships it beside upstream/")
    desktop.start_app([desktop.python, str(script), str(save_to)])
    desktop.wait_for_window(GTKPAD_TITLE)


def tree_with_frame(client: WAAClient, title: str, timeout: float = 30.0) -> tuple[ET.Element, str]:
    """Observe until the accessibility tree holds a frame named ``title`` (AT-SPI registers windows
    a little after they map); return the parsed raw XML and the XML text."""
    deadline = time.monotonic() + timeout
    xml = ""
    while time.monotonic() < deadline:
        observation = client.observe()
        xml = observation.raw.get("accessibility_xml", "")
        if xml:
            root = ET.fromstring(xml)
            if any(frame.get("name") == title for frame in root.iter("frame")):
                return root, xml
        time.sleep(0.3)
    raise AssertionError(f"no frame named {title!r} in the accessibility tree within {timeout:g}s: {xml[:2000]}")


def post_json(url: str, payload: Any) -> httpx.Response:
    return httpx.post(url, json=payload, timeout=60)


# ---------------------------------------------------------------- readiness and observation


def test_probe_answers_through_the_client(real_waa_server) -> None:
    with WAAClient(real_waa_server.url, retries=0) as c:
        assert c.probe() is True
    reply = httpx.get(real_waa_server.url + "/probe", timeout=10)
    assert reply.status_code == 200
    assert reply.json() == {"status": "Probe successful", "message": "Service is operational"}
    logged = real_waa_server.log.read_text()
    assert '"path": "/probe"' in logged, "the launcher logs every request to $WAA_LOG"


def test_observe_returns_the_screen_as_png_and_the_at_spi_tree(waa_desktop, client: WAAClient) -> None:
    gtkpad(waa_desktop, waa_desktop.home / "Documents" / "draft.txt")
    root, xml = tree_with_frame(client, GTKPAD_TITLE)

    shot = httpx.get(waa_desktop.url + "/screenshot", timeout=30)
    assert shot.headers["content-type"] == "image/png"
    observation = client.observe()
    assert observation.screenshot is not None and observation.screenshot.startswith(b"\x89PNG")
    image = Image.open(io.BytesIO(observation.screenshot))
    assert image.format == "PNG" and image.size == (1280, 720)
    assert observation.viewport == (1280, 720)
    # The window is drawn: the screenshot is not one flat colour.
    assert image.convert("L").getextrema()[0] != image.convert("L").getextrema()[1]

    # What the Linux (AT-SPI) tree looks like, unlike Windows' UIA tree (where top-level children of
    # <desktop> are the windows, tagged by lower-cased class name, e.g. <notepad st:active="true">):
    # <desktop-frame name="main"> holds one <application name="<program>"> per AT-SPI client, and
    # the windows are <frame name="<title>"> inside it; the foreground window is st:active="true"
    # and the widget with keyboard focus inside it is st:focused="true".
    assert root.tag == "desktop-frame" and root.get("name") == "main"
    assert {child.tag for child in root} == {"application"}
    # (An application whose program ended may linger a moment without windows; the live one has its frame.)
    windowed = [app for app in root if any(child.tag == "frame" for child in app)]
    assert [app.get("name") for app in windowed] == ["gtkpad.py"]
    frames = [child for child in windowed[0] if child.tag == "frame"]
    assert [f.get("name") for f in frames] == [GTKPAD_TITLE]
    frame = frames[0]
    assert frame.get(ST + "active") == "true"
    assert ST + "focused" not in frame.attrib, "a window is st:active, its focused widget st:focused"
    assert frame.get(ST + "showing") == "true" and frame.get(ST + "visible") == "true"
    assert frame.get("{uri:deskat:attributes.at-spi.gnome.org}toolkit") == "gtk"
    assert frame.get(CP + "screencoord", "").startswith("(") and frame.get(CP + "size", "").startswith("(")
    text = next(frame.iter("text"))
    assert text.get(ST + "focused") == "true" and text.get(ST + "editable") == "true"
    # All AT-SPI namespaces are declared on the root, the Windows one (win:) included.
    assert 'xmlns:st="uri:deskat:state.at-spi.gnome.org"' in xml
    assert 'xmlns:win="uri:deskat:uia.windows.microsoft.org"' in xml


def _centre(frame: ET.Element) -> tuple[int, int]:
    x, y = (int(v) for v in frame.get(CP + "screencoord", "").strip("()").split(","))
    w, h = (int(v) for v in frame.get(CP + "size", "").strip("()").split(","))
    return x + w // 2, y + h // 2


def test_act_moves_real_x_state_and_file_reads_the_saved_text(waa_desktop, client: WAAClient) -> None:
    target = waa_desktop.home / "Documents" / "draft.txt"
    gtkpad(waa_desktop, target)
    root, _ = tree_with_frame(client, GTKPAD_TITLE)
    x, y = _centre(next(f for f in root.iter("frame") if f.get("name") == GTKPAD_TITLE))

    client.act(Action(type="click", x=x, y=y, unit="px"))
    client.act(Action(type="type", text="This is a draft."))
    client.act(Action(type="hotkey", keys=["ctrl", "s"]))

    deadline = time.monotonic() + 20
    while not target.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    reply = httpx.post(waa_desktop.url + "/file", data={"file_path": str(target)}, timeout=30)
    assert reply.status_code == 200, reply.text
    assert reply.content == b"This is a draft."
    assert reply.headers["content-disposition"] == "attachment; filename=draft.txt"
    assert reply.headers["content-type"] == "text/plain; charset=utf-8"
    # gtkpad retitles itself after saving: the key press really reached the window.
    waa_desktop.wait_for_window("draft.txt - Notepad")
    root, _ = tree_with_frame(client, "draft.txt - Notepad")


def test_upload_and_run_command_through_the_client(waa_desktop, client: WAAClient) -> None:
    target = waa_desktop.home / "Downloads" / "report.txt"
    client.upload(str(target), b"quarterly numbers")
    assert target.read_bytes() == b"quarterly numbers"
    result = client.run_command(["cat", str(target)])
    assert result == {"status": "success", "output": "quarterly numbers", "error": "", "returncode": 0}
    # Commands run in the desktop's session: $HOME is the desktop's, and "python" has pyautogui.
    result = client.run_command("echo $HOME; python -c 'import pyautogui; print(pyautogui.size())'", shell=True)
    assert result["returncode"] == 0, result
    assert result["output"].splitlines()[0] == str(waa_desktop.home)
    assert result["output"].splitlines()[-1] == "Size(width=1280, height=720)"


# ---------------------------------------------------------------- error conventions


@pytest.mark.parametrize(("method", "path"), [("GET", "/no-such-route"), ("POST", "/evaluate")])
def test_unknown_routes_answer_500_with_a_json_404_message(real_waa_server, method: str, path: str) -> None:
    # Upstream's catch-all errorhandler(Exception) turns werkzeug's NotFound into a 500.
    reply = httpx.request(method, real_waa_server.url + path, json={}, timeout=10)
    assert reply.status_code == 500
    assert reply.headers["content-type"] == "application/json"
    assert reply.json() == {
        "status": "error",
        "message": "404 Not Found: The requested URL was not found on the server. If you entered the URL "
                   "manually please check your spelling and try again.",
    }


@pytest.mark.parametrize(("method", "path"), [("GET", "/execute"), ("POST", "/probe"), ("GET", "/setup/upload")])
def test_wrong_methods_answer_500_with_a_json_405_message(real_waa_server, method: str, path: str) -> None:
    reply = httpx.request(method, real_waa_server.url + path, timeout=10)
    assert reply.status_code == 500
    assert reply.json() == {"status": "error",
                            "message": "405 Method Not Allowed: The method is not allowed for the requested URL."}


def test_json_routes_answer_500_to_other_bodies(real_waa_server) -> None:
    # request.json raises werkzeug's 415 or 400, which the catch-all handler turns into a 500; Flask
    # runs with debug=True, so the 400 carries the decoder's message.
    reply = httpx.post(real_waa_server.url + "/setup/launch", data={"command": "x"}, timeout=10)
    assert reply.status_code == 500
    assert reply.json() == {"status": "error", "message": (
        "415 Unsupported Media Type: Did not attempt to load JSON data because the request Content-Type "
        "was not 'application/json'.")}
    reply = httpx.post(real_waa_server.url + "/execute", content=b"{nope", timeout=10,
                       headers={"Content-Type": "application/json"})
    assert reply.status_code == 500
    assert reply.json() == {"status": "error", "message": (
        "400 Bad Request: Failed to decode JSON object: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)")}


@pytest.mark.parametrize("endpoint", ["/execute", "/setup/execute"])
def test_executing_a_missing_program_answers_500(real_waa_server, endpoint: str) -> None:
    reply = post_json(real_waa_server.url + endpoint, {"command": ["no-such-program-waa"], "shell": False})
    assert reply.status_code == 500
    assert reply.json() == {"status": "error", "message": "[Errno 2] No such file or directory: 'no-such-program-waa'"}
    # Through a shell the shell itself runs: 200, and the shell's 127 in the body.
    reply = post_json(real_waa_server.url + endpoint, {"command": "no-such-program-waa", "shell": True})
    assert reply.status_code == 200
    body = reply.json()
    assert body["status"] == "success" and body["returncode"] == 127 and body["output"] == ""
    assert "no-such-program-waa: not found" in body["error"]


def test_a_failing_program_is_200_with_its_returncode(real_waa_server) -> None:
    reply = post_json(real_waa_server.url + "/execute", {"command": ["sh", "-c", "echo out; echo err >&2; exit 3"]})
    assert reply.status_code == 200
    assert reply.json() == {"status": "success", "output": "out\n", "error": "err\n", "returncode": 3}


def test_upload_into_a_missing_folder_answers_500(waa_desktop) -> None:
    target = waa_desktop.home / "no-such-folder" / "x.txt"
    reply = httpx.post(waa_desktop.url + "/setup/upload", data={"file_path": str(target)},
                       files={"file_data": ("x.txt", b"data")}, timeout=30)
    assert reply.status_code == 500
    assert reply.json() == {"status": "error", "message": f"[Errno 2] No such file or directory: '{target}'"}
    assert not target.parent.exists(), "the real server never creates folders on upload"
    reply = httpx.post(waa_desktop.url + "/setup/upload", data={"file_path": str(target)}, timeout=30)
    assert reply.status_code == 400
    assert reply.json() == {"error": "file_path and file_data are required"}
    ok = waa_desktop.home / "Documents" / "x.txt"
    reply = httpx.post(waa_desktop.url + "/setup/upload", data={"file_path": str(ok)},
                       files={"file_data": ("x.txt", b"data")}, timeout=30)
    assert (reply.status_code, reply.text) == (200, "File Uploaded")


def test_open_file_of_a_missing_file_answers_404_text(waa_desktop) -> None:
    missing = waa_desktop.home / "Documents" / "missing.txt"
    reply = post_json(waa_desktop.url + "/setup/open_file", {"path": str(missing)})
    assert reply.status_code == 404
    assert reply.text == f"File not found: {missing}"
    reply = post_json(waa_desktop.url + "/setup/open_file", {})
    assert (reply.status_code, reply.text) == (400, "Path not supplied!")


def test_launch_of_a_missing_program_answers_200(waa_desktop) -> None:
    # /setup/launch always runs through a shell (upstream forces shell=True), so a missing program
    # only fails in the shell, after the reply.
    reply = post_json(waa_desktop.url + "/setup/launch", {"command": ["no-such-program-waa"], "shell": False})
    assert reply.status_code == 200
    assert reply.text == "['no-such-program-waa'] launched successfully"
    reply = post_json(waa_desktop.url + "/setup/launch", {"command": "no-such-program-waa --flag", "shell": True})
    assert (reply.status_code, reply.text) == (200, "no-such-program-waa --flag launched successfully")


def test_file_of_a_missing_file_answers_404_json(waa_desktop) -> None:
    reply = httpx.post(waa_desktop.url + "/file", data={"file_path": str(waa_desktop.home / "none.txt")}, timeout=30)
    assert reply.status_code == 404
    assert reply.json() == {"error": "File not found"}
    reply = httpx.post(waa_desktop.url + "/file", data={}, timeout=30)
    assert reply.status_code == 400
    assert reply.json() == {"error": "file_path is required"}


# ---------------------------------------------------------------- getters upstream's evaluators use


def test_getter_endpoints_reply_shapes(waa_desktop) -> None:
    url = waa_desktop.url
    reply = httpx.get(url + "/platform", timeout=10)
    assert (reply.status_code, reply.text) == (200, "Linux")
    assert reply.headers["content-type"].startswith("text/html")
    assert httpx.post(url + "/desktop_path", timeout=10).json() == {"desktop_path": str(waa_desktop.home / "Desktop")}
    assert httpx.post(url + "/documents_path", timeout=10).json() == {
        "documents_path": str(waa_desktop.home / "Documents")}
    assert httpx.post(url + "/screen_size", timeout=10).json() == {"width": 1280, "height": 720}

    (waa_desktop.home / "Documents" / "sub").mkdir()
    (waa_desktop.home / "Documents" / "sub" / "a.txt").write_text("a")
    (waa_desktop.home / "Documents" / "b.txt").write_text("b")
    reply = post_json(url + "/list_directory", {"path": str(waa_desktop.home / "Documents")})
    assert reply.status_code == 200
    tree = reply.json()["directory_tree"]
    assert tree["type"] == "directory" and tree["name"] == "Documents"
    children = sorted(tree["children"], key=lambda c: c["name"])
    assert children == [
        {"type": "file", "name": "b.txt"},
        {"type": "directory", "name": "sub", "children": [{"type": "file", "name": "a.txt"}]},
    ]
    reply = post_json(url + "/list_directory", {"path": str(waa_desktop.home / "Documents" / "b.txt")})
    assert (reply.status_code, reply.json()) == (400, {"error": "The provided path is not a directory"})
    reply = post_json(url + "/list_directory", {})
    assert (reply.status_code, reply.json()) == (400, {"error": "Missing 'path' parameter"})


def test_execute_windows_runs_python_with_computer_in_scope(real_waa_server) -> None:
    url = real_waa_server.url + "/execute_windows"
    reply = post_json(url, {"command": "assert computer is not None and human is not None"})
    assert (reply.status_code, reply.json()) == (200, {"status": "success"})
    reply = post_json(url, {"command": "raise ValueError('boom')"})
    assert (reply.status_code, reply.json()) == (500, {"status": "error", "message": "boom"})
    # Printed output that mentions "error" (any case) is turned into a failure carrying that output.
    reply = post_json(url, {"command": "print('an Error happened')"})
    assert (reply.status_code, reply.json()) == (500, {"status": "error", "message": "an Error happened\n"})


def test_clear_task_files_and_close_all(waa_desktop) -> None:
    (waa_desktop.home / "Downloads" / "old.txt").write_text("x")
    reply = httpx.post(waa_desktop.url + "/setup/clear_task_files", timeout=30)
    assert reply.status_code == 200 and reply.text.startswith("All task files (")
    assert list((waa_desktop.home / "Downloads").iterdir()) == []
    reply = httpx.post(waa_desktop.url + "/setup/clear_task_files", timeout=30)
    assert (reply.status_code, reply.text) == (
        200, f"No task files to clear from {str(waa_desktop.home / 'Downloads')!r}.")

    # close_all answers 200, but on Linux it runs `wmctrl -c :ALL:`, and wmctrl reads ":ALL:" as a
    # title to match (only :ACTIVE: and :SELECT: are special): no window closes.
    gtkpad(waa_desktop, waa_desktop.home / "Documents" / "draft.txt")
    reply = httpx.post(waa_desktop.url + "/setup/close_all", timeout=30)
    assert (reply.status_code, reply.text) == (200, "All windows closed successfully.")
    time.sleep(2)
    assert GTKPAD_TITLE in waa_desktop.windows()
