"""Test helpers shipped with the package, so users can try agents offline.

``FakeWAAServer`` is a WAA-compatible fake server (see ``pytest_agentbench.testing.waa_server`` for
what it models and what it does not). ``NOTEPAD_TASK``, ``NOTEPAD_SOLUTION`` and
``serve_notepad_gold`` make the WAA notepad task solvable against ``FakeWAAServer(evaluate=True)`` end
to end: the task's gold file would otherwise be fetched from the network.
"""

from __future__ import annotations

from typing import Any

from pytest_agentbench.testing.waa_server import FakeWAAServer

#: WAA's notepad task: write "This is a draft." and save it as Documents\draft.txt.
NOTEPAD_TASK = "366de66e-cbae-4d72-b042-26390db2b145-WOS"
#: Its gold file's content (the evaluator compares the saved file with it).
NOTEPAD_GOLD = b"This is a draft."
#: What a person does: open Notepad with Win+R, type the text, save with Ctrl+S, then say done.
NOTEPAD_SOLUTION: list[dict[str, Any]] = [
    {"type": "hotkey", "keys": ["win", "r"]},
    {"type": "type", "text": "notepad"},
    {"type": "key", "key": "enter"},
    {"type": "type", "text": "This is a draft."},
    {"type": "hotkey", "keys": ["ctrl", "s"]},
    {"type": "type", "text": "C:\\Users\\Docker\\Documents\\draft.txt"},
    {"type": "key", "key": "enter"},
    {"type": "done"},
]


def serve_notepad_gold(server: FakeWAAServer, task: dict[str, Any]) -> None:
    """Serve the notepad task's gold file from ``server``'s evaluate endpoint (``task`` is the task's JSON)."""
    gold = task["evaluator"]["expected"][1]
    if gold.get("type") != "cloud_file":
        raise ValueError(f"expected the notepad task's gold to be a cloud_file, got {gold.get('type')!r}")
    server.cloud_files[gold["path"]] = NOTEPAD_GOLD


__all__ = ["NOTEPAD_GOLD", "NOTEPAD_SOLUTION", "NOTEPAD_TASK", "FakeWAAServer", "serve_notepad_gold"]
