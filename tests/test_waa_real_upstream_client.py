"""Our client and upstream's own client read the real server alike.

Upstream's ``desktop_env.controllers.python.PythonController`` (the snapshot's ``client/``) runs in a
subprocess with this interpreter, pointed at the real server by setting ``http_server`` after
construction, and reads what our ``WAAClient`` reads. It needs ``requests``, ``psutil`` and ``tqdm``
(imported by upstream's ``desktop_env.envs``), which the dev extra installs.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import httpx
import pytest
from waa_real import interop_unavailable

from pytest_agentbench.benches.waa.client import WAAClient, parse_accessibility

pytestmark = pytest.mark.waa_real

TITLE = "Untitled - Notepad"

#: Runs in a subprocess: ``argv[1]`` is upstream's client folder, ``argv[2]`` a JSON list of calls.
UPSTREAM_CALLS = r"""
import base64, json, sys
sys.path.insert(0, sys.argv[1])
from desktop_env.controllers.python import PythonController
url, calls = json.loads(sys.argv[2])
controller = PythonController("127.0.0.1")
controller.http_server = url
out = []
for name, args in calls:
    value = getattr(controller, name)(*args)
    out.append({"bytes": base64.b64encode(value).decode()} if isinstance(value, bytes) else value)
print(json.dumps(out))
"""


def upstream(desktop, *calls: tuple[str, list]) -> list:
    """Call ``PythonController`` methods against the real server; return their results in order."""
    missing = [m for m in ("requests", "psutil", "tqdm") if importlib.util.find_spec(m) is None]
    if missing:
        interop_unavailable(f"interop: upstream's client needs {', '.join(missing)} (pip install -e '.[dev]')")
    result = subprocess.run(
        [sys.executable, "-c", UPSTREAM_CALLS, str(desktop.client_dir), json.dumps([desktop.url, list(calls)])],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def start_gtkpad(desktop) -> None:
    desktop.start_app([desktop.python, str(desktop.upstream.parent / "gtkpad.py"),
                       str(desktop.home / "Documents" / "draft.txt")])
    desktop.wait_for_window(TITLE)


def wait_for_tree_with(client: WAAClient, title: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        xml = client.observe().raw.get("accessibility_xml", "")
        if f'name="{title}"' in xml:
            return xml
        time.sleep(0.3)
    raise AssertionError(f"no {title!r} in the accessibility tree within {timeout:g}s")


def test_parse_accessibility_reads_the_linux_tree(waa_desktop) -> None:
    start_gtkpad(waa_desktop)
    with WAAClient(waa_desktop.url, timeout=60, retries=0) as client:
        xml = wait_for_tree_with(client, TITLE)
        observation = client.observe()
    assert "accessibility_error" not in observation.raw
    tree = parse_accessibility(xml)
    assert tree["tag"] == "desktop-frame" and tree["attrs"]["name"] == "main"

    def walk(node):
        yield node
        for child in node["children"]:
            yield from walk(child)

    nodes = list(walk(tree))
    assert [n["id"] for n in nodes] == [str(i) for i in range(len(nodes))], "ids are preorder indices"
    frame = next(n for n in nodes if n["tag"] == "frame" and n["attrs"].get("name") == TITLE)
    # The namespaced attributes keep upstream's prefixes.
    assert frame["attrs"]["st:active"] == "true"
    assert frame["attrs"]["cp:size"].startswith("(") and frame["attrs"]["attr:toolkit"] == "gtk"
    text = next(n for n in walk(frame) if n["tag"] == "text")
    assert text["attrs"]["st:focused"] == "true"
    # The observation's parsed tree is the same parse of the same kind of tree.
    assert observation.accessibility_tree is not None
    assert observation.accessibility_tree["tag"] == "desktop-frame"


def test_upstreams_controller_reads_what_our_client_reads(waa_desktop) -> None:
    target = waa_desktop.home / "Documents" / "report.txt"
    content = "quarterly numbers: 12 % up, naïve café\n".encode()
    start_gtkpad(waa_desktop)
    with WAAClient(waa_desktop.url, timeout=60, retries=0) as client:
        client.upload(str(target), content)
        ours = httpx.post(waa_desktop.url + "/file", data={"file_path": str(target)}, timeout=30).content
        our_xml = wait_for_tree_with(client, TITLE)
        our_size = client.observe().viewport
        our_run = client.run_command(["python", "-c", "print('hi')"])

    theirs, missing, size, tree, run = upstream(
        waa_desktop,
        ("get_file", [str(target)]),
        ("get_file", [str(target.with_name("missing.txt"))]),
        ("get_vm_screen_size", []),
        ("get_accessibility_tree", []),
        ("execute_python_command", ["print('hi')"]),
    )
    assert base64.b64decode(theirs["bytes"]) == ours == content
    assert missing is None, "upstream's get_file gives None for a missing file (our /file sees the 404)"
    assert (size["width"], size["height"]) == our_size == (1280, 720)
    their_frames = {f.get("name") for f in ET.fromstring(tree).iter("frame")}
    our_frames = {f.get("name") for f in ET.fromstring(our_xml).iter("frame")}
    assert TITLE in their_frames and their_frames == our_frames
    # Upstream's controller prefixes pyautogui's import, as ours does; the reply is the same object.
    assert sorted(run) == sorted(our_run) == ["error", "output", "returncode", "status"]
    assert (run["output"], run["returncode"]) == (our_run["output"], our_run["returncode"]) == ("hi\n", 0)
