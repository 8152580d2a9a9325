"""Redaction of API keys from what a run writes: the key whole, a piece of its body, the key
reversed, and its base64 at every alignment, never anything else."""

from __future__ import annotations

import base64
import json

import pytest

from pytest_agentbench import redact

KEY = "sk-ant-api03-Zq8rT2vLx0pW7nB4kYc1Hs9dFg3JmU6eQa5RtVi0OyPl"
PIECES = redact.pieces_of([KEY])
BODY = KEY[len("sk-ant-api03-"):]


def leaks(text: str) -> list[str]:
    """The 12-character pieces of the key's body (plain or reversed) still in ``text``."""
    return [BODY[i:i + 12] for i in range(len(BODY) - 11) if BODY[i:i + 12] in text or BODY[i:i + 12][::-1] in text]


@pytest.mark.parametrize("form", [
    KEY, BODY, BODY[5:17], BODY[20:], *(f"{'A' * n}{BODY[7:19]}bbbbb" for n in range(1, 5)),
    KEY[::-1], BODY[::-1][3:16],
    *(base64.b64encode(b"x" * n + KEY.encode() + b"tail").decode() for n in range(3)),
    *(base64.urlsafe_b64encode(b"y" * n + KEY.encode()).decode() for n in range(3)),
    base64.b64encode(json.dumps({"note": f"the key is {KEY}"}).encode()).decode(),
], ids=["key", "body", "piece", "tail", "embedded-1", "embedded-2", "embedded-3", "embedded-4", "reversed",
        "reversed-piece", "b64-0", "b64-1", "b64-2", "url-0", "url-1", "url-2", "b64-in-json"])
def test_every_form_of_the_key_is_redacted(form: str):
    text = json.dumps({"reason": f"I found this: {form}, then clicked.", "raw": [form]})
    out = redact.redact(text, PIECES)
    assert form not in out and not leaks(out) and out.count(redact.MARK) == 2
    assert json.loads(out)["reason"] == f"I found this: {redact.MARK}, then clicked."


def test_text_without_the_key_is_left_alone():
    text = json.dumps({"trajectory": "tasks/mock/mock_chrome_001.trajectory.json", "short": BODY[:11],
                       "other": base64.b64encode(b"an unrelated blob of data, long enough").decode(),
                       "words": "Zq8rT2vLx0p is eleven characters of it"})
    assert redact.redact(text, PIECES) == text
    assert redact.redact(text, redact.NONE) == text
    number = json.dumps({"n": int("9" + "".join(c for c in BODY if c.isdigit()) * 3)})  # a number stays JSON
    assert json.loads(redact.redact(number, redact.pieces_of(["".join(c for c in BODY if c.isdigit()) * 3])))


def test_any_anthropic_key_goes_even_unknown_and_keys_register(monkeypatch: pytest.MonkeyPatch):
    for name in [n for n in list(__import__("os").environ) if n.upper().endswith("API_KEY")]:
        monkeypatch.delenv(name)
    monkeypatch.setattr(redact, "_registered", set())
    redact.refresh()
    other = "sk-ant-api03-SomeOtherKeyNobodyRegistered"
    assert redact.redact(f"see {other}.") == f"see {redact.MARK}."
    assert redact.redact(f"a piece: {BODY[10:25]}") == f"a piece: {BODY[10:25]}"
    redact.register(KEY)
    assert redact.redact(f"a piece: {BODY[10:25]}") == f"a piece: {redact.MARK}"
    monkeypatch.setattr(redact, "_registered", set())
    monkeypatch.setenv("OPENAI_API_KEY", "proj-" + BODY)
    redact.refresh()  # as opening a run folder does
    assert redact.redact(f"reversed: {BODY[::-1]}") == f"reversed: {redact.MARK}"
    monkeypatch.setenv("SHORT_API_KEY", "x")  # not a key: nothing of it is looked for
    assert redact.redact("x marks the spot") == "x marks the spot"


def test_run_files_are_redacted_where_they_are_written(tmp_path, monkeypatch: pytest.MonkeyPatch):
    from pytest_agentbench.files import write_atomic
    from pytest_agentbench.record.runfolder import RunFolder
    from pytest_agentbench.record.streamed import json_pieces, write_text_pieces

    monkeypatch.setattr(redact, "_registered", set())
    redact.register(KEY)
    echoed = {"reason": f"reversed {KEY[::-1]}", "raw": base64.b64encode(b"ab" + KEY.encode()).decode()}
    folder = RunFolder.create(tmp_path, "run")
    line = folder.append_result({"task_id": "t", "benchmark": "b", **echoed})
    folder.write_task_json(folder.path / "t.trajectory.json", {"steps": [echoed]})
    write_atomic(folder.path / "log.json", json.dumps(echoed))
    write_text_pieces(folder.path / "summary.json", json_pieces({"tasks": [echoed]}))
    folder.close()
    assert not leaks(line)
    for path in folder.path.iterdir():
        if path.is_file() and path.name != ".lock":
            text = path.read_text()
            assert redact.MARK in text and not leaks(text), path
