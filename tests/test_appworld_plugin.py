"""``pytest --audit-verifier=appworld`` end to end, against the fake AppWorld interpreter in
tests/fake_appworld (AppWorld itself cannot be installed here). The adapter's worker script runs
for real inside that interpreter; only the ``appworld`` package it imports is a fake."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

FAKE = Path(__file__).parent / "fake_appworld"

# The fake interpreter is this Python, and the adapter runs its worker with -P (Python 3.11+, as
# AppWorld itself needs); fake_python is a POSIX shell script.
needs_311 = pytest.mark.skipif(os.name != "posix" or sys.version_info < (3, 11),
                               reason="the fake AppWorld interpreter is this Python, and the worker needs 3.11+ (-P)")


@pytest.fixture
def appworld_args(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    root = tmp_path / "appworld-root"
    shutil.copytree(FAKE / "root", root)  # worlds write experiments/ under the root
    monkeypatch.setenv("FAKE_APPWORLD_REAL_PYTHON", sys.executable)
    monkeypatch.delenv("APPWORLD_PYTHON", raising=False)
    monkeypatch.delenv("APPWORLD_ROOT", raising=False)
    return ["--audit-verifier=appworld", "--appworld-python", str(FAKE / "fake_python"), "--appworld-root", str(root)]


@needs_311
def test_appworld_audit_finds_the_seed_false_accepts(run, appworld_args):
    result = run(*appworld_args, "--audit-tasks", "22cc237_1,396c5a2_1", "-v")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "Verifier audit: appworld, 2 task(s), 2 audited, *s",
        "",
        "The verifier passed 4 edited run(s) whose end state is wrong:",
        "  task       operator  end state compared with the reference run",
        "  ---------  --------  ----------------------------------------------",
        "  22cc237_1  extra     venmo.Notification +1, venmo.PaymentRequest +1",
        "  22cc237_1  extra-ni  venmo.Notification +1, venmo.PaymentRequest +1",
        "  396c5a2_1  extra     spotify.MusicPlayer: queue_song_ids changed",
        "  396c5a2_1  extra-ni  spotify.MusicPlayer: queue_song_ids changed",
    ])
    result.stdout.fnmatch_lines(["*audit/appworld::22cc237_1::extra FALSE-ACCEPT*",
                                 "*audit/appworld::396c5a2_1::partial REFUSED*"])


@needs_311
def test_appworld_unknown_task_is_a_usage_error(run, appworld_args):
    result = run(*appworld_args, "--audit-tasks", "nosuch_1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--audit-tasks 'nosuch_1': no such task in 'appworld'*"])


def test_appworld_without_setup_is_a_usage_error_with_the_install_steps(run, tmp_path, monkeypatch):
    monkeypatch.delenv("APPWORLD_PYTHON", raising=False)
    monkeypatch.delenv("APPWORLD_ROOT", raising=False)
    result = run("--audit-verifier=appworld")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "ERROR:" in err and "appworld download data" in err
    result = run("--audit-verifier=appworld", "--appworld-python", str(tmp_path / "nope"),
                 "--appworld-root", str(tmp_path))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "nope" in result.stderr.str()
