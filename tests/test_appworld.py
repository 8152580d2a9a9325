"""The AppWorld audit adapter, against the FAKE AppWorld interpreter in tests/fake_appworld.

The fake stands in for AppWorld's own Python (AppWorld cannot be installed here); the adapter runs
the real worker script with it, so the whole path adapter -> subprocess -> worker -> "AppWorld" ->
JSON files -> adapter is exercised. Python API only.
"""

from __future__ import annotations

import ast
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pytest_agentbench.audit import audit_task
from pytest_agentbench.audit.adapters.appworld import (
    SETUP_STEPS,
    WORKER,
    AppWorldAdapter,
    AppWorldSetupError,
    AppWorldWorkerError,
)
from pytest_agentbench.audit.effects import Ignore, compare
from pytest_agentbench.audit.model import DEFAULT_POLICY, Run

FAKE = Path(__file__).parent / "fake_appworld"
FAKE_PYTHON = str(FAKE / "fake_python")
VENMO, SPOTIFY, NO_SOLUTION = "22cc237_1", "396c5a2_1", "a3f0e6e_1"

pytestmark = pytest.mark.skipif(os.name != "posix" or sys.version_info < (3, 11),
                                reason="the fake interpreter is a POSIX shell script and -P needs Python 3.11")


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """The fake runs this Python; every temp folder the adapter makes must be gone afterwards."""
    monkeypatch.setenv("FAKE_APPWORLD_REAL_PYTHON", sys.executable)
    for name in ("FAKE_APPWORLD_SLEEP", "FAKE_APPWORLD_CRASH", "APPWORLD_PYTHON", "APPWORLD_ROOT"):
        monkeypatch.delenv(name, raising=False)
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    yield
    assert not list(temp.iterdir()), "the adapter left a temp folder behind"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "appworld"
    shutil.copytree(FAKE / "root", path)
    return path


@pytest.fixture
def adapter(root: Path) -> AppWorldAdapter:
    return AppWorldAdapter(FAKE_PYTHON, str(root))


def _edit(calls: list[dict], index: int, **data) -> list[dict]:
    calls = [dict(c, data=dict(c["data"])) for c in calls]
    calls[index]["data"].update(data)
    return calls


def _last_write(calls: list[dict]) -> int:
    return max(i for i, c in enumerate(calls) if DEFAULT_POLICY.is_effectful(c))


# -- probe, describe, tasks --------------------------------------------------------------------

def test_probe_and_describe(adapter: AppWorldAdapter) -> None:
    assert adapter.name == "appworld"
    assert adapter.ignore_fields == frozenset({"id", "created_at", "updated_at", "record_hash"})
    assert adapter.policy is DEFAULT_POLICY
    assert adapter.describe() == {"name": "appworld", "appworld": "0.1.3.post1+fake", "data": "0.1.0",
                                  "python": platform.python_version()}


def test_task_ids_split_and_limit(adapter: AppWorldAdapter) -> None:
    assert adapter.task_ids(None, None) == [VENMO, SPOTIFY]  # train by default
    assert adapter.task_ids("train", 1) == [VENMO]
    assert adapter.task_ids("train", 0) == [VENMO, SPOTIFY]  # 0 = all
    assert adapter.task_ids("test_normal", None) == [NO_SOLUTION]  # the ":tag" suffix is dropped
    with pytest.raises(AppWorldWorkerError, match="Dataset 'nosuch' not found"):
        adapter.task_ids("nosuch", None)


def test_has_task(adapter: AppWorldAdapter) -> None:
    assert adapter.has_task(VENMO) and adapter.has_task(NO_SOLUTION)
    for bad in ("nosuch_1", "", ".", "..", "../appworld", "22cc237_1/dbs"):
        assert not adapter.has_task(bad), bad


# -- reference ---------------------------------------------------------------------------------

def test_reference_venmo(adapter: AppWorldAdapter, root: Path) -> None:
    ref = adapter.reference(VENMO)
    assert ref.task_id == VENMO and ref.error is None
    assert [(c["method"], c["url"]) for c in ref.calls] == [
        ("post", "/venmo/auth/token"), ("get", "/venmo/friends"),
        *[("post", "/venmo/payment_requests")] * 3, ("post", "/supervisor/complete_task")]
    assert ref.calls[2]["data"] == {"user_email": "ana@example.com", "amount": 20.0, "description": "Dinner",
                                    "access_token": "venmo-token-1"}
    assert sorted(ref.effect) == ["supervisor.Task", "venmo.Notification", "venmo.PaymentRequest"]
    added = ref.effect["venmo.PaymentRequest"]["added"]
    assert [(r["id"], r["receiver_id"], r["amount"]) for r in added] == [("2", "2", "20.0"), ("3", "3", "20.0"),
                                                                        ("4", "4", "20.0")]
    assert ref.effect["venmo.PaymentRequest"]["removed"] == ref.effect["venmo.PaymentRequest"]["updated"] == []
    assert len(ref.effect["venmo.Notification"]["added"]) == 3
    assert ref.effect["supervisor.Task"]["updated"][0]["after"]["status"] == "success"
    assert ref.detail == {"claimed_success": True, "write_counters": {
        "supervisor.Task": 1, "venmo.Notification": 3, "venmo.PaymentRequest": 3}}
    assert not list((root / "experiments" / "outputs").iterdir())  # the experiment folder is deleted


def test_reference_spotify(adapter: AppWorldAdapter) -> None:
    ref = adapter.reference(SPOTIFY)
    assert ref.error is None
    assert [(c["method"], c["url"]) for c in ref.calls] == [
        ("post", "/spotify/auth/token"), ("get", "/spotify/albums/4"), ("post", "/spotify/queue"),
        ("post", "/supervisor/complete_task")]
    (update,) = ref.effect["spotify.MusicPlayer"]["updated"]
    assert (update["before"]["queue_song_ids"], update["after"]["queue_song_ids"]) == ("[12, 15]", "[12, 15, 23]")


def test_reference_errors(adapter: AppWorldAdapter, root: Path) -> None:
    ref = adapter.reference(NO_SOLUTION)
    assert ref.calls == [] and "ships no solution" in ref.error

    solution = root / "data/tasks" / VENMO / "ground_truth/solution.py"
    text = solution.read_text()
    solution.write_text(text.replace('status="success"', 'status="fail"'))
    ref = adapter.reference(VENMO)
    assert ref.error == "the shipped solution did not report success" and ref.detail["claimed_success"] is False
    assert len(ref.calls) == 6  # the calls and the effect are still reported

    solution.write_text(text.replace("share = ", "share = 1 / 0 + "))
    ref = adapter.reference(VENMO)
    assert ref.error == "the shipped solution raised ZeroDivisionError: division by zero"
    assert [c["url"] for c in ref.calls] == ["/venmo/auth/token", "/venmo/friends"]

    with pytest.raises(AppWorldWorkerError, match="does not exist"):
        adapter.reference("0000000_1")
    assert not list((root / "experiments" / "outputs").iterdir())


# -- deliver -----------------------------------------------------------------------------------

def test_deliver_control_and_edits_venmo(adapter: AppWorldAdapter, root: Path) -> None:
    ref = adapter.reference(VENMO)
    calls, last = ref.calls, _last_write(ref.calls)
    runs = [
        Run("control", calls),
        Run("extra", [*calls[:last + 1], calls[last], *calls[last + 1:]]),
        Run("omit", [*calls[:last], *calls[last + 1:]]),
        Run("wrong", _edit(calls, last, user_email="chen@example.comx")),
        Run("scan", [*calls[:last + 1], calls[last], *calls[last + 1:]], grade=False),
    ]
    got = {d.run_id: d for d in adapter.deliver(VENMO, runs)}
    assert list(got) == ["control", "extra", "omit", "wrong", "scan"]
    ignore = Ignore(adapter.ignore_fields)

    control = got["control"]
    assert control.error is None and control.verdict == "PASS" and control.statuses == [200] * 6
    assert compare(ref.effect, control.effect, ignore).same  # the replay reproduces the reference
    assert control.detail["num_tests"] == 3 and control.detail["num_failed"] == 0
    assert control.detail["write_counters"] == ref.detail["write_counters"]

    extra = got["extra"]  # the checker never counts the requests: a false accept
    assert extra.verdict == "PASS" and extra.statuses == [200] * 7
    assert compare(control.effect, extra.effect, ignore).summarize() == "venmo.Notification +1, venmo.PaymentRequest +1"

    assert got["omit"].verdict == "FAIL" and got["omit"].detail["num_failed"] == 1
    assert compare(control.effect, got["omit"].effect, ignore).shape == "removes"

    wrong = got["wrong"]
    assert wrong.verdict == "FAIL" and wrong.statuses[last] == 422

    scan = got["scan"]  # grade=False: replayed and read back, never graded
    assert scan.verdict is None and scan.error is None and "num_tests" not in scan.detail
    assert compare(control.effect, scan.effect, ignore).summarize() == "venmo.Notification +1, venmo.PaymentRequest +1"
    assert not list((root / "experiments" / "outputs").iterdir())


def test_deliver_spotify_extra(adapter: AppWorldAdapter) -> None:
    ref = adapter.reference(SPOTIFY)
    calls, last = ref.calls, _last_write(ref.calls)
    control, extra = adapter.deliver(SPOTIFY, [Run("control", calls),
                                               Run("extra", [*calls[:last + 1], calls[last], *calls[last + 1:]])])
    assert (control.verdict, extra.verdict) == ("PASS", "PASS")  # the queue is compared as a set
    diff = compare(control.effect, extra.effect, Ignore(adapter.ignore_fields))
    assert diff.summarize() == "spotify.MusicPlayer: queue_song_ids changed"


def test_deliver_statuses(adapter: AppWorldAdapter) -> None:
    token = {"access_token": "venmo-token-1"}
    calls = [
        {"method": "post", "url": "/venmo/auth/token", "data": {"username": "joyce@example.com",
                                                                "password": "joyce-venmo-pw"}},
        {"method": "get", "url": "/venmo/friends", "data": {}},  # no token
        {"method": "get", "url": "/venmo/nowhere", "data": token},
        {"method": "put", "url": "/venmo/friends", "data": token},  # put needs the client passed explicitly
        {"method": "frobnicate", "url": "/venmo/friends", "data": token},  # the call cannot be made at all
        {"method": "post", "url": "/venmo/payment_requests", "data": {**token, "user_email": "ana@example.com",
                                                                      "amount": "lots"}},
    ]
    (delivery,) = adapter.deliver(VENMO, [Run("odd", calls)])
    assert delivery.error is None and delivery.verdict == "FAIL"
    assert delivery.statuses == [200, 401, 404, 404, -1, 422]
    assert delivery.crashed_calls == 1 and delivery.effect == {}


def test_deliver_per_run_errors_and_empty_batch(adapter: AppWorldAdapter) -> None:
    assert adapter.deliver(VENMO, []) == []
    runs = [Run("a", [{"method": "get", "url": "/venmo/friends", "data": {}}]), Run("b", [])]
    out = adapter.deliver("0000000_1", runs)  # every world fails to start: each run says why
    assert [d.run_id for d in out] == ["a", "b"]
    assert all(d.verdict is None and "does not exist" in d.error for d in out)


def test_audit_matches_the_seed_table(adapter: AppWorldAdapter) -> None:
    """The whole engine over both tasks: extra and extra-ni are false accepts, as in the README."""
    classes = {}
    for task_id in (VENMO, SPOTIFY):
        result = audit_task(adapter, task_id)
        assert result.status == "audited", result.reason
        classes[task_id] = {r.operator: (r.run_class, r.summary) for r in result.runs}
    assert classes[VENMO] == {
        "claim-only": ("killed", "venmo.Notification -3, venmo.PaymentRequest -3"),
        "omit": ("killed", "venmo.Notification -1, venmo.PaymentRequest -1"),
        "partial": ("killed", "venmo.Notification -2, venmo.PaymentRequest -2"),
        "wrong-value": ("killed", "venmo.Notification -1, venmo.PaymentRequest -1"),
        "extra": ("false-accept", "venmo.Notification +1, venmo.PaymentRequest +1"),
        "extra-ni": ("false-accept", "venmo.Notification +1, venmo.PaymentRequest +1"),
    }
    spotify = classes[SPOTIFY]
    assert {op: c for op, (c, _) in spotify.items()} == {
        "claim-only": "killed", "omit": "killed", "partial": "refused", "wrong-value": "killed",
        "extra": "false-accept", "extra-ni": "false-accept"}
    assert spotify["extra"][1] == spotify["extra-ni"][1] == "spotify.MusicPlayer: queue_song_ids changed"


def test_keep_evidence(root: Path, tmp_path: Path) -> None:
    evidence = tmp_path / "evidence"
    adapter = AppWorldAdapter(FAKE_PYTHON, str(root), keep_evidence=str(evidence))
    ref = adapter.reference(VENMO)
    adapter.deliver(VENMO, [Run("control", ref.calls)])
    adapter.deliver(VENMO, [Run("control", ref.calls)])
    adapter.task_ids("train", None)
    assert sorted(p.name for p in evidence.iterdir()) == [
        "deliver_22cc237_1.json", "deliver_22cc237_1_2.json", "list_train.json", "probe.json",
        "reference_22cc237_1.json"]


# -- setup errors ------------------------------------------------------------------------------

def _setup_error(*args, **kwargs) -> AppWorldSetupError:
    with pytest.raises(AppWorldSetupError) as info:
        AppWorldAdapter(*args, **kwargs)
    err = info.value
    assert isinstance(err, ValueError)
    first, rest = str(err).split("\n", 1)
    assert first == err.problem and "\n" not in err.problem  # one line naming the problem ...
    assert rest.strip() == SETUP_STEPS.strip()  # ... then the install steps
    return err


def test_setup_steps_text() -> None:
    for step in ("uv venv --python 3.11 ~/.cache/appworld/venv",
                 "uv pip install --python ~/.cache/appworld/venv/bin/python appworld==0.1.3.post1",
                 "~/.cache/appworld/venv/bin/appworld install",
                 "~/.cache/appworld/venv/bin/appworld download data --root ~/.cache/appworld"):
        assert step in SETUP_STEPS


def test_setup_errors(root: Path, tmp_path: Path) -> None:
    assert "not set" in _setup_error("", str(root)).problem
    assert "not found" in _setup_error(str(tmp_path / "no" / "python"), str(root)).problem
    assert "not found on PATH" in _setup_error("no-such-python-agentbench", str(root)).problem
    assert "not set" in _setup_error(FAKE_PYTHON, "").problem
    assert "does not exist" in _setup_error(FAKE_PYTHON, str(tmp_path / "nowhere")).problem
    (tmp_path / "empty").mkdir()
    assert "no data/tasks" in _setup_error(FAKE_PYTHON, str(tmp_path / "empty")).problem
    plain = tmp_path / "plain-file"
    plain.write_text("")
    assert "not executable" in _setup_error(str(plain), str(root)).problem


def test_python_older_than_311(root: Path, tmp_path: Path) -> None:
    old = tmp_path / "python3.9"  # what an older Python says about -P
    old.write_text("#!/bin/sh\necho 'Unknown option: -P' >&2\necho 'usage: python3.9 [option] ...' >&2\n"
                   "echo \"Try 'python -h' for more information.\" >&2\nexit 2\n")
    old.chmod(0o755)
    err = _setup_error(str(old), str(root))
    assert err.problem == "AppWorld did not load: its Python is older than 3.11 (it does not know -P)"


def test_python_without_appworld(root: Path) -> None:
    err = _setup_error(sys.executable, str(root))  # this Python has no appworld package
    assert err.problem == "AppWorld did not load: ModuleNotFoundError: No module named 'appworld'"


def test_from_env(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AppWorldSetupError, match="APPWORLD_PYTHON"):
        AppWorldAdapter.from_env()
    monkeypatch.setenv("APPWORLD_PYTHON", FAKE_PYTHON)
    monkeypatch.setenv("APPWORLD_ROOT", str(root))
    adapter = AppWorldAdapter.from_env(timeout=60)
    assert (adapter.root, adapter.timeout) == (str(root), 60.0)
    with pytest.raises(AppWorldSetupError, match="no data/tasks"):
        AppWorldAdapter.from_env(root=str(root / "data"))  # an argument wins over the environment


# -- worker failures ---------------------------------------------------------------------------

def test_worker_timeout(adapter: AppWorldAdapter, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_APPWORLD_SLEEP", "60")
    adapter.timeout = 0.5
    started = time.monotonic()
    with pytest.raises(AppWorldWorkerError, match=r"^AppWorld worker reference timed out after 0\.5s$"):
        adapter.reference(VENMO)
    assert time.monotonic() - started < 15


def test_worker_crash(adapter: AppWorldAdapter, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_APPWORLD_CRASH", "1")  # the worker dies without a traceback or a result
    with pytest.raises(AppWorldWorkerError) as info:
        adapter.deliver(VENMO, [Run("control", [])])
    err = info.value
    assert err.stderr_tail == [f"fake appworld crash line {n}" for n in range(4, 9)]  # the last 5 lines
    assert str(err) == ("AppWorld worker deliver failed (exit status 70): "
                        + " | ".join(err.stderr_tail))


def test_worker_script_stays_portable() -> None:
    """The worker runs in AppWorld's interpreter: Python 3.9 syntax, no import of this package."""
    tree = ast.parse(WORKER.read_text(), feature_version=(3, 9))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= set(sys.stdlib_module_names) | {"appworld", "munch"}, imported
