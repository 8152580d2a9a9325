"""``pytest --bench=waa``: WAA tasks as items (``bench/waa::<domain>::<stem>``), selection, usage
errors, the episode wiring to the client, and end-to-end runs against the fake WAA server."""

from __future__ import annotations

import importlib.util
import json
import shutil
import socket
from pathlib import Path

import pytest
from conftest import only_run_folder, results

from pytest_agentbench.benches.waa.bench import DEFAULT_SERVER, WAABenchmark
from pytest_agentbench.benchmark import InfrastructureError
from pytest_agentbench.model import Action
from pytest_agentbench.testing import NOTEPAD_SOLUTION

DATA = Path(__file__).parent / "data" / "waa"
EXAMPLES = DATA / "examples"
NOTEPAD = "366de66e-cbae-4d72-b042-26390db2b145-WOS"
NOTEPAD2 = "a7d4b6c5-569b-452e-9e1d-ffdb3d431d15-WOS"
INFEASIBLE = "INF-971cbb5b-3cbf-4ff7-9e24-b5c84fcebfa6-WOS"


def _have(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the parent package is missing
        return False


HAVE_FAKE_SERVER = _have("pytest_agentbench.testing.waa_server")
needs_fake_server = pytest.mark.skipif(
    not HAVE_FAKE_SERVER, reason="pytest_agentbench.testing.waa_server (FakeWAAServer) does not exist yet")


def ids(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if line.startswith("bench/")]


def waa(*args: str) -> tuple[str, ...]:
    return ("--bench=waa", "--waa-examples", str(EXAMPLES), *args)


# -- collection and selection ------------------------------------------------------------------------
def test_collect_lists_every_task_by_domain_and_stem(run):
    result = run(*waa("--collect-only", "-q"))
    assert result.ret == pytest.ExitCode.OK
    listed = ids(result)
    assert len(listed) == 154
    expected = sorted(f"bench/waa::{p.parent.name}::{p.stem}" for p in EXAMPLES.glob("*/*.json"))
    assert listed == expected
    assert f"bench/waa::notepad::{NOTEPAD}" in listed
    assert "bench/waa::vlc::INF-0d95d28a-9587-433b-a805-1fbe5467d598-WOS" in listed  # internal id differs


def test_select_by_keyword_marker_and_bench_task(run):
    assert ids(run(*waa("-k", NOTEPAD, "--collect-only", "-q"))) == [f"bench/waa::notepad::{NOTEPAD}"]
    assert ids(run(*waa("-m", "notepad", "--collect-only", "-q"))) == [
        f"bench/waa::notepad::{NOTEPAD}", f"bench/waa::notepad::{NOTEPAD2}"]
    assert len(ids(run(*waa("-m", "waa and (clock or settings)", "--collect-only", "-q")))) == 9
    assert ids(run(*waa("--bench-task", INFEASIBLE, "--collect-only", "-q"))) == [f"bench/waa::vs_code::{INFEASIBLE}"]
    assert len(ids(run(*waa("--bench-limit", "3", "--collect-only", "-q")))) == 3


def test_small_index(run):
    listed = ids(run(*waa("--waa-index", "small", "--collect-only", "-q")))
    assert len(listed) == 6
    assert {i.split("::")[1] for i in listed} == {"chrome", "libreoffice_calc"}


def test_custom_index_relative_to_the_invocation_folder(run, pytester):
    pytester.path.joinpath("mine.json").write_text(json.dumps({"notepad": [NOTEPAD], "vs_code": [INFEASIBLE]}))
    assert ids(run(*waa("--waa-index", "mine.json", "--collect-only", "-q"))) == [
        f"bench/waa::notepad::{NOTEPAD}", f"bench/waa::vs_code::{INFEASIBLE}"]


def test_the_evaluation_examples_folder_and_ini_keys(run, pytester):
    tree = pytester.path / "evaluation_examples_windows"
    shutil.copytree(DATA, tree)
    pytester.makeini("[pytest]\nagentbench_waa_examples = evaluation_examples_windows\nagentbench_waa_index = small\n")
    assert len(ids(run("--bench=waa", "--collect-only", "-q"))) == 6
    # The command line wins over the ini key.
    assert len(ids(run("--bench=waa", "--waa-index", "all", "--collect-only", "-q"))) == 154


# -- bad input: usage errors, one line -----------------------------------------------------------------
def usage_error(result: pytest.RunResult, *needles: str) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.outlines + result.errlines
    lines = [line for line in result.errlines if line.strip()]
    assert len(lines) == 1, lines
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_missing_examples_folder(run, pytester):
    usage_error(run("--bench=waa", "--waa-examples", str(pytester.path / "nowhere"), "--collect-only"),
                "nowhere does not exist", "--waa-examples")
    usage_error(run("--bench=waa", "--collect-only"), "needs --waa-examples PATH")


def test_invalid_task_file(run, pytester):
    tree = pytester.path / "tree"
    shutil.copytree(DATA, tree)
    bad = tree / "examples" / "notepad" / f"{NOTEPAD}.json"
    data = json.loads(bad.read_text())
    del data["evaluator"]
    bad.write_text(json.dumps(data))
    usage_error(run("--bench=waa", "--waa-examples", str(tree), "--collect-only"),
                str(bad), "is not valid WAA JSON: 'evaluator' must be an object")
    bad.write_text("{")
    usage_error(run("--bench=waa", "--waa-examples", str(tree), "--collect-only"), str(bad), "is not valid WAA JSON")


def test_index_naming_a_missing_file(run, pytester):
    pytester.path.joinpath("idx.json").write_text(json.dumps({"notepad": [NOTEPAD, "no-such-task-WOS"]}))
    usage_error(run(*waa("--waa-index", "idx.json", "--collect-only")),
                "idx.json lists notepad/no-such-task-WOS", "no-such-task-WOS.json does not exist")


@pytest.mark.parametrize("task_id", ["notepad_1", "foo", "notepad"])
def test_unknown_bench_task(run, task_id):
    usage_error(run(*waa("--bench-task", task_id, "--collect-only")),
                f"--bench-task '{task_id}' matches no task of waa")


def test_bad_ready_timeout(run):
    result = run(*waa("--waa-ready-timeout", "soon", "--collect-only"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--waa-ready-timeout must be a number of seconds, got 'soon'*"])


# -- the benchmark against a stub client --------------------------------------------------------------
# The stub client is source text so that inner pytest runs (in-process and subprocess) define the
# same class in their conftest.py without importing this module.
STUB_SOURCE = '''
from __future__ import annotations
from typing import Any

from pytest_agentbench.benchmark import EvaluationError, InfrastructureError
from pytest_agentbench.model import Action, Observation, Verdict


class StubClient:
    """Records calls; a one-file notepad: typed text is saved by ctrl+s, and the checker reads it."""

    instances: list[StubClient] = []

    def __init__(self, settings: Any, upstream: Any = None, *, up: bool = True) -> None:
        self.server_url, self.evaluate_url, self.up = settings.server_url, settings.evaluate_url, up
        self.settings = settings
        self.calls: list[tuple[str, Any]] = []
        self.typed = ""
        self.saved: str | None = None
        StubClient.instances.append(self)

    def probe(self) -> bool:
        self.calls.append(("probe", None))
        return self.up

    def wait_ready(self, timeout: float) -> None:
        self.calls.append(("wait_ready", timeout))
        if not self.up:
            raise InfrastructureError(f"WAA server at {self.server_url} did not answer /probe within {timeout:g}s")

    def setup(self, config: list[dict]) -> None:
        self.calls.append(("setup", config))

    def reset(self) -> None:
        self.calls.append(("reset", None))
        self.typed, self.saved = "", None

    def observe(self) -> Observation:
        self.calls.append(("observe", None))
        return Observation(window_title="Notepad", viewport=(1280, 720))

    def act(self, action: Action) -> None:
        self.calls.append(("act", action.type))
        if action.type == "type":
            self.typed += action.text or ""
        elif action.type == "hotkey" and action.keys == ["ctrl", "s"]:
            self.saved = self.typed

    def evaluate(self, task: dict, last_action: Action | None) -> Verdict:
        self.calls.append(("evaluate", (task["id"], last_action.type if last_action else None)))
        if task["evaluator"]["func"] == "crash":
            raise EvaluationError("no metric 'crash'")
        ok = self.saved == "This is a draft."
        return Verdict(score=float(ok), passed=ok, reason="saved" if ok else f"saved {self.saved!r}")

    def close(self) -> None:
        self.calls.append(("close", None))
'''
_stub_module: dict = {}
exec(STUB_SOURCE, _stub_module)
StubClient = _stub_module["StubClient"]


@pytest.fixture
def stub_bench():
    StubClient.instances.clear()
    # The stub client scores, as a user's evaluate server would (--waa-evaluate-url).
    bench = WAABenchmark(EXAMPLES, evaluate_url="http://stub-evaluate", client_factory=StubClient)
    yield bench
    bench.close()


def test_reset_step_evaluate_drive_the_client(stub_bench):
    assert StubClient.instances == []  # created lazily
    task = stub_bench.load_task(NOTEPAD2)
    stub_bench.reset(task)
    (client,) = StubClient.instances
    assert client.server_url == DEFAULT_SERVER and client.evaluate_url == "http://stub-evaluate"
    assert [c[0] for c in client.calls] == ["probe", "reset", "setup", "observe"]
    assert client.calls[2][1] == task.raw_config["config"] and client.calls[2][1][0]["type"] == "download"
    client.calls.clear()
    stub_bench.step(Action(type="type", text="This is a draft."))
    stub_bench.step(Action(type="hotkey", keys=["ctrl", "s"]))
    verdict = stub_bench.evaluate(task, Action(type="done"))
    assert verdict.passed is True
    assert client.calls == [("act", "type"), ("observe", None), ("act", "hotkey"), ("observe", None),
                            ("evaluate", (task.raw_config["id"], "done"))]
    stub_bench.reset(stub_bench.load_task(NOTEPAD))  # no second probe, no second client
    assert StubClient.instances == [client] and ("probe", None) not in client.calls
    stub_bench.close()
    assert client.calls[-1] == ("close", None)


def test_a_server_that_is_down_is_an_infrastructure_error():
    bench = WAABenchmark(EXAMPLES, server_url="http://vm:5001/",
                         client_factory=lambda settings, upstream: StubClient(settings, upstream, up=False))
    task = bench.load_task(NOTEPAD)
    with pytest.raises(InfrastructureError, match="WAA server at http://vm:5001 is not reachable"):
        bench.reset(task)
    bench = WAABenchmark(EXAMPLES, ready_timeout=2.5,
                         client_factory=lambda settings, upstream: StubClient(settings, upstream, up=False))
    with pytest.raises(InfrastructureError, match=r"did not answer /probe within 2\.5s"):
        bench.reset(task)
    with pytest.raises(InfrastructureError, match="not reachable"):  # waits once, then probes
        bench.reset(task)


def test_use_server_is_the_seam_for_a_leased_vm(stub_bench):
    task = stub_bench.load_task(NOTEPAD)
    stub_bench.reset(task)
    first = StubClient.instances[0]
    stub_bench.use_server("http://10.0.0.7:5000/", "http://10.0.0.7:5050")
    assert first.calls[-1] == ("close", None)
    assert stub_bench.server_url == "http://10.0.0.7:5000"
    stub_bench.reset(task)
    assert StubClient.instances[-1].server_url == "http://10.0.0.7:5000"
    assert StubClient.instances[-1].evaluate_url == "http://10.0.0.7:5050"


def test_describe(stub_bench):
    facts = stub_bench.describe()
    assert facts["name"] == "waa" and facts["server_url"] == DEFAULT_SERVER
    assert facts["index"] == "all" and facts["task_count"] == 154
    assert facts["index_path"].endswith("test_all.json")


STUB_CONFTEST = STUB_SOURCE + '''
from pytest_agentbench.benches.waa.bench import WAABenchmark

def factory(settings, upstream):
    return StubClient(settings, upstream, up="down" not in settings.server_url)

def pytest_agentbench_register_benchmarks(registry):
    registry.register("waa", lambda config: WAABenchmark.from_config(config, client_factory=factory))
'''

#: The stub client scores as a user's evaluate server would; no upstream code is involved.
STUB_SCORES = ("--waa-evaluate-url", "http://stub-evaluate")

NOTEPAD_STUB_SCRIPT = {NOTEPAD: [{"type": "type", "text": "This is a draft."},
                                 {"type": "hotkey", "keys": ["ctrl", "s"]},
                                 {"type": "done"}]}


def test_items_pass_fail_and_error_through_the_plugin(run, pytester):
    pytester.makeconftest(STUB_CONFTEST)
    script = pytester.path / "script.json"
    script.write_text(json.dumps(NOTEPAD_STUB_SCRIPT))
    run(*waa("--bench-task", NOTEPAD, "--bench-agent", "scripted", "--bench-agent-script", str(script), *STUB_SCORES)
        ).assert_outcomes(passed=1)
    run(*waa("--bench-task", NOTEPAD, "--bench-agent", "noop", *STUB_SCORES)).assert_outcomes(failed=1)
    result = run(*waa("--bench-task", NOTEPAD, "--bench-agent", "noop", "--waa-server", "http://down:1", *STUB_SCORES))
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*WAA server at http://down:1 is not reachable*"])


# -- end to end: the real client against the fake WAA server -------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_server_that_is_down_makes_the_item_an_error(run, pytester):
    pytest.importorskip("pytest_agentbench.benches.waa.client")
    result = run(*waa("--bench-task", NOTEPAD, "--bench-agent", "noop", "--waa-server", f"http://127.0.0.1:{free_port()}",
                      *STUB_SCORES))
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*not reachable*"])
    (row,) = results(only_run_folder(pytester.path))
    assert row["error_type"] == "infrastructure"


@pytest.fixture
def fake_server():
    from pytest_agentbench.testing import FakeWAAServer, serve_notepad_gold

    with FakeWAAServer(evaluate=True) as server:
        # The notepad task's gold file, served offline (the fake server would otherwise fetch it).
        serve_notepad_gold(server, json.loads((EXAMPLES / "notepad" / f"{NOTEPAD}.json").read_text()))
        yield server


#: Open Notepad, type the text, save as Documents\\draft.txt: what a person would do.
NOTEPAD_SCRIPT = {NOTEPAD: NOTEPAD_SOLUTION}


@needs_fake_server
def test_end_to_end_notepad_against_the_fake_server(run, pytester, fake_server):
    script = pytester.path / "script.json"
    script.write_text(json.dumps(NOTEPAD_SCRIPT))
    server = ("--waa-server", fake_server.url, "--waa-evaluate-url", fake_server.evaluate_url)
    # noop first: WAA's reset (close all windows, clear Downloads) does not revert a snapshot, so a
    # draft.txt saved in Documents by an earlier episode would survive into the next one.
    result = run(*waa(*server, "--bench-task", NOTEPAD, "--bench-agent", "noop"))
    result.assert_outcomes(failed=1)
    result = run(*waa(*server, "--bench-task", NOTEPAD, "--bench-agent", "scripted",
                      "--bench-agent-script", str(script)))
    result.assert_outcomes(passed=1)
    assert fake_server.read_file("C:\\Users\\Docker\\Documents\\draft.txt") == b"This is a draft."
    rows = [r for folder in sorted((pytester.path / "benchmark_results").iterdir()) for r in results(folder)]
    assert [(r["agent"], r["success"]) for r in rows] == [("noop", False), ("scripted", True)]


@needs_fake_server
def test_infeasible_task_passes_only_on_fail(run, pytester, fake_server):
    # The task launches VS Code and activates its window, which the fake server does not simulate;
    # its setup is emptied here so that the test is about the infeasible rule alone.
    tree = pytester.path / "tree"
    shutil.copytree(DATA, tree)
    path = tree / "examples" / "vs_code" / f"{INFEASIBLE}.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "config": []}))
    script = pytester.path / "script.json"
    script.write_text(json.dumps({INFEASIBLE: [{"type": "fail", "reason": "cannot be done"}]}))
    args = ("--bench=waa", "--waa-examples", str(tree), "--waa-server", fake_server.url,
            "--waa-evaluate-url", fake_server.evaluate_url, "--bench-task", INFEASIBLE)
    run(*args, "--bench-agent", "scripted", "--bench-agent-script", str(script)).assert_outcomes(passed=1)
    run(*args, "--bench-agent", "noop").assert_outcomes(failed=1)

def test_workers_play_tasks_from_the_manifest(run_sub, pytester):
    pytester.makeconftest(STUB_CONFTEST)
    script = pytester.path / "script.json"
    script.write_text(json.dumps({**NOTEPAD_STUB_SCRIPT, "*": [{"type": "done"}]}))
    result = run_sub(*waa("-m", "notepad", "-n", "2", "--bench-agent", "scripted", "--bench-agent-script", str(script),
                          *STUB_SCORES))
    result.assert_outcomes(passed=1, failed=1)
    rows = {r["task_id"]: r for r in results(only_run_folder(pytester.path))}
    assert rows[NOTEPAD]["success"] is True and rows[NOTEPAD2]["success"] is False
