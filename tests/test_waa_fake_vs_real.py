"""The fake WAA server against the real one: the same requests to both, the same replies.

Each case sends one request to upstream's server (on its Linux desktop, ``tests/waa_real.py``) and
to ``FakeWAAServer``, with paths under each machine's home, and compares status codes, content
types and bodies. Where the two platforms differ by nature (the text of a missing-program error,
path spelling) the case compares the shape and says so. A difference here means the fake lies.
Not compared: what upstream does differently on Linux by design (``/accessibility`` ignores
``backend`` there and builds the AT-SPI tree; ``close_all`` and ``activate_window`` go through
wmctrl), which the fake, a Windows machine, does the Windows way.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from pytest_agentbench.testing import FakeWAAServer
from pytest_agentbench.testing.waa_server import HOME

pytestmark = pytest.mark.waa_real


@dataclass
class Side:
    """One server and how paths are spelt on its machine."""

    url: str
    home: str
    sep: str

    def path(self, *parts: str) -> str:
        return self.sep.join([self.home, *parts])

    def send(self, method: str, route: str, **kwargs: Any) -> httpx.Response:
        return httpx.request(method, self.url + route, timeout=60, **kwargs)


@pytest.fixture
def sides(waa_desktop) -> Iterator[tuple[Side, Side]]:
    """The real server and a fake, each with the same Documents: ``b.txt`` and ``sub/a.txt``."""
    documents = waa_desktop.home / "Documents"
    (documents / "sub").mkdir()
    (documents / "sub" / "a.txt").write_text("a")
    (documents / "b.txt").write_text("b")
    with FakeWAAServer() as fake:
        fake.make_folder(HOME + "\\Documents\\sub")
        fake.write_file(HOME + "\\Documents\\sub\\a.txt", "a")
        fake.write_file(HOME + "\\Documents\\b.txt", "b")
        yield Side(waa_desktop.url, str(waa_desktop.home), os.sep), Side(fake.url, HOME, "\\")


def body(reply: httpx.Response) -> Any:
    return reply.json() if reply.headers.get("content-type", "").startswith("application/json") else reply.text


def ctype(reply: httpx.Response) -> str:
    return reply.headers.get("content-type", "").split(";")[0]


Request = Callable[[Side], tuple[str, str, dict[str, Any]]]

#: Requests whose replies must be equal byte for byte (after the JSON is parsed).
SAME: dict[str, Request] = {
    "unknown route": lambda s: ("GET", "/no-such-route", {}),
    "no /evaluate": lambda s: ("POST", "/evaluate", {"json": {"id": "x"}}),
    "wrong method GET": lambda s: ("GET", "/execute", {}),
    "wrong method POST": lambda s: ("POST", "/probe", {}),
    "probe": lambda s: ("GET", "/probe", {}),
    "screen size": lambda s: ("POST", "/screen_size", {}),
    "form body to a JSON route": lambda s: ("POST", "/setup/launch", {"data": {"command": "x"}}),
    "bad JSON": lambda s: ("POST", "/execute", {"content": b"{nope", "headers": {"Content-Type": "application/json"}}),
    "launch of a missing program": lambda s: ("POST", "/setup/launch", {"json": {"command": ["no-such-program-waa"]}}),
    "launch without a shell flag, as a string": lambda s: ("POST", "/setup/launch",
                                                           {"json": {"command": "no-such-x -a"}}),
    "open_file without a path": lambda s: ("POST", "/setup/open_file", {"json": {}}),
    "file of a missing file": lambda s: ("POST", "/file", {"data": {"file_path": s.path("none.txt")}}),
    "file without file_path": lambda s: ("POST", "/file", {"data": {}}),
    "upload without file_data": lambda s: ("POST", "/setup/upload", {"data": {"file_path": s.path("x")}}),
    "list_directory without a path": lambda s: ("POST", "/list_directory", {"json": {}}),
    "list_directory of a file": lambda s: ("POST", "/list_directory", {"json": {"path": s.path("Documents", "b.txt")}}),
    "list_directory": lambda s: ("POST", "/list_directory", {"json": {"path": s.path("Documents")}}),
    "file_exists without a name": lambda s: ("POST", "/file_exists", {"json": {"path": s.home}}),
    "folder_exists without a path": lambda s: ("POST", "/folder_exists", {"json": {"folder_name": "x"}}),
    "execute_windows success": lambda s: ("POST", "/execute_windows", {"json": {"command": "import time"}}),
    "execute_windows of an unknown name": lambda s: ("POST", "/execute_windows",
                                                     {"json": {"command": "pyautogui.press('a')"}}),
    "create_folder without a path": lambda s: ("POST", "/setup/create_folder", {"json": {}}),
    "recycle without a path": lambda s: ("POST", "/setup/recycle", {"json": {}}),
    "activate_window without a name": lambda s: ("POST", "/setup/activate_window", {"json": {}}),
}


@pytest.mark.parametrize("case", sorted(SAME))
def test_the_same_request_gets_the_same_reply(sides, case: str) -> None:
    real, fake = sides
    method, route, kwargs = SAME[case](real)
    real_reply = real.send(method, route, **kwargs)
    method, route, kwargs = SAME[case](fake)
    fake_reply = fake.send(method, route, **kwargs)
    assert (fake_reply.status_code, ctype(fake_reply)) == (real_reply.status_code, ctype(real_reply))
    real_body, fake_body = body(real_reply), body(fake_reply)
    if case == "list_directory":  # the order of entries is the file system's on the real machine
        for tree in (real_body, fake_body):
            tree["directory_tree"]["children"].sort(key=lambda c: c["name"])
    assert fake_body == real_body


def test_path_replies_match_up_to_the_machines_paths(sides) -> None:
    real, fake = sides
    for route, key in (("/desktop_path", "desktop_path"), ("/documents_path", "documents_path")):
        replies = [side.send("POST", route) for side in sides]
        assert [r.status_code for r in replies] == [200, 200]
        assert replies[0].json() == {key: real.path(key.split("_")[0].title())}
        assert replies[1].json() == {key: fake.path(key.split("_")[0].title())}
    missing = {side.sep: side.path("Documents", "missing.txt") for side in sides}
    for side in sides:
        reply = side.send("POST", "/setup/open_file", json={"path": missing[side.sep]})
        assert (reply.status_code, ctype(reply), reply.text) == (404, "text/html",
                                                                 f"File not found: {missing[side.sep]}")
        target = side.path("no-such-folder", "x.txt")
        reply = side.send("POST", "/setup/upload", data={"file_path": target}, files={"file_data": ("x.txt", b"x")})
        assert (reply.status_code, reply.json()) == (
            500, {"status": "error", "message": f"[Errno 2] No such file or directory: {target!r}"})
        downloads = side.path("Downloads")
        reply = side.send("POST", "/setup/clear_task_files")
        assert (reply.status_code, reply.text) == (200, f"No task files to clear from {downloads!r}.")
        folder = side.path("Documents", "made")
        replies = [side.send("POST", "/setup/create_folder", json={"path": folder}) for _ in range(2)]
        assert [r.json()["message"] for r in replies] == [f"{folder} created.", f"{folder} already exists."]
        made = side.path("Documents", "made", "note.txt")
        reply = side.send("POST", "/setup/create_file", json={"path": made, "content": "n"})
        assert (reply.status_code, reply.json()) == (200, {"status": "success", "message": f"{made} created."})
        reply = side.send("POST", "/file_exists", json={"path": side.path("Documents", "made"),
                                                        "file_name": "note.txt"})
        assert (reply.status_code, reply.json()) == (
            200, {"status": "success", "message": f"File note.txt exists in {side.path('Documents', 'made')}."})
        reply = side.send("POST", "/setup/recycle", json={"path": made})
        assert (reply.status_code, reply.json()) == (200, {"status": "success", "message": f"{made} recycled"})
        reply = side.send("POST", "/setup/recycle", json={"path": made})
        assert (reply.status_code, reply.json()) == (400, {"status": "error", "message": f"Failed to recycle {made}"})
        reply = side.send("POST", "/folder_exists", json={"path": side.path("Documents"), "folder_name": "nope"})
        assert (reply.status_code, reply.json()) == (
            400, {"status": "error", "message": f"Folder nope does not exist in {side.path('Documents')}."})


def test_a_missing_program_fails_alike(sides) -> None:
    # Same code and shape; the message is the platform's (Errno 2 on Linux, WinError 2 on Windows).
    replies = [side.send("POST", "/setup/execute", json={"command": ["no-such-program-waa"]}) for side in sides]
    assert [r.status_code for r in replies] == [500, 500]
    assert [sorted(r.json()) for r in replies] == [["message", "status"], ["message", "status"]]
    assert [r.json()["status"] for r in replies] == ["error", "error"]
    assert replies[0].json()["message"] == "[Errno 2] No such file or directory: 'no-such-program-waa'"
    assert replies[1].json()["message"] == "[WinError 2] The system cannot find the file specified"
    # Through a shell both answer 200 with the shell's failure in the body (127 from sh, 1 from cmd).
    replies = [side.send("POST", "/execute", json={"command": "no-such-program-waa", "shell": True}) for side in sides]
    assert [r.status_code for r in replies] == [200, 200]
    assert [(r.json()["status"], r.json()["output"]) for r in replies] == [("success", ""), ("success", "")]
    assert [r.json()["returncode"] for r in replies] == [127, 1]


def test_the_fakes_tree_declares_the_real_namespaces(sides) -> None:
    declared = []
    for side in sides:
        xml = side.send("GET", "/accessibility", params={"backend": "uia"}).json()["AT"]
        head = xml[: xml.index(">")]
        declared.append(sorted(part.split("=")[0] for part in head.split() if part.startswith("xmlns:")))
        ET.fromstring(xml)
    assert declared[0] == declared[1]


def test_execute_replies_have_the_same_keys(sides) -> None:
    real, fake = sides
    real_reply = real.send("POST", "/execute", json={"command": ["python", "-c", "import pyautogui"]})
    fake_reply = fake.send("POST", "/execute", json={"command": ["python", "-c", "import pyautogui"]})
    assert real_reply.status_code == fake_reply.status_code == 200
    assert sorted(real_reply.json()) == sorted(fake_reply.json()) == ["error", "output", "returncode", "status"]
    assert real_reply.json()["returncode"] == fake_reply.json()["returncode"] == 0
