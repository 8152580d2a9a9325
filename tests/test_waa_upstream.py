"""Scoring WAA tasks with upstream's own evaluator code (``benches/waa/upstream.py``).

Finding the code in a checkout and the usage errors need nothing; everything else runs upstream's
real ``DesktopEnv.evaluate`` from the snapshot named by ``AGENTBENCH_WAA_UPSTREAM`` (skipped without
it, failed under ``AGENTBENCH_REQUIRE_INTEROP=1``)."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import interop
import pytest
from conftest import only_run_folder, results, serve_folder

from pytest_agentbench.benches.waa.upstream import (
    UpstreamEvaluator,
    WAAUpstreamError,
    infer_client,
    locate_client,
)
from pytest_agentbench.benchmark import EvaluationError, InfrastructureError
from pytest_agentbench.testing import NOTEPAD_SOLUTION, NOTEPAD_TASK

DATA = Path(__file__).parent / "data" / "waa"
EXAMPLES = DATA / "examples"
INFEASIBLE = "INF-971cbb5b-3cbf-4ff7-9e24-b5c84fcebfa6-WOS"
DRAFT = "C:\\Users\\Docker\\Documents\\draft.txt"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fake_client_tree(root: Path) -> Path:
    """The two files ``locate_client`` looks for, as a checkout lays them out."""
    client = root / "src" / "win-arena-container" / "client"
    (client / "desktop_env" / "envs").mkdir(parents=True)
    (client / "desktop_env" / "envs" / "desktop_env.py").write_text("")
    (client / "desktop_env" / "evaluators").mkdir()
    (client / "evaluation_examples_windows" / "examples" / "notepad").mkdir(parents=True)
    return client


# -- finding upstream's code ----------------------------------------------------------------------
def test_locate_client_takes_a_checkout_or_its_client_folder(tmp_path):
    client = fake_client_tree(tmp_path / "WindowsAgentArena")
    assert locate_client(tmp_path / "WindowsAgentArena") == client.resolve()
    assert locate_client(client) == client.resolve()
    with pytest.raises(WAAUpstreamError, match="holds no upstream evaluator code") as info:
        locate_client(tmp_path)
    assert "\n" not in str(info.value) and "--waa-upstream" in str(info.value)
    with pytest.raises(WAAUpstreamError, match="does not exist"):
        locate_client(tmp_path / "nowhere")


def test_the_client_is_inferred_from_examples_inside_a_checkout(tmp_path):
    client = fake_client_tree(tmp_path / "WindowsAgentArena")
    examples = client / "evaluation_examples_windows"
    assert infer_client(examples) == client.resolve()
    assert infer_client(examples / "examples") == client.resolve()
    assert infer_client(EXAMPLES) is None  # the test data lies in no checkout


def test_no_scorer_is_a_one_line_usage_error(run, pytester):
    result = run("--bench=waa", "--waa-examples", str(EXAMPLES), "--bench-task", NOTEPAD_TASK)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in result.errlines if line.strip()]
    assert len(lines) == 1 and "no upstream evaluator code found" in lines[0] and "--waa-upstream DIR" in lines[0]
    result = run("--bench=waa", "--waa-examples", str(EXAMPLES), "--waa-upstream", str(pytester.path / "nowhere"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--waa-upstream * does not exist*"])
    # Nothing is scored when only collecting: no scorer needed.
    assert run("--bench=waa", "--waa-examples", str(EXAMPLES), "--collect-only", "-q").ret == pytest.ExitCode.OK


def test_a_bad_waa_python_is_a_usage_error(run, tmp_path):
    client = fake_client_tree(tmp_path / "waa")
    result = run("--bench=waa", "--waa-examples", str(EXAMPLES), "--waa-upstream", str(client),
                 "--waa-python", str(tmp_path / "no-python"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--waa-python * is not an executable Python*"])


@pytest.mark.parametrize("flag", ["--waa-settle", "--waa-command-timeout", "--waa-tree-timeout"])
def test_bad_seconds_are_usage_errors(run, flag):
    result = run("--bench=waa", "--waa-examples", str(EXAMPLES), flag, "soon", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{flag} must be a number of seconds, got 'soon'*"])
    result = run("--bench=waa", "--waa-examples", str(EXAMPLES), flag, "inf", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


# -- upstream's DesktopEnv.evaluate, run from the snapshot --------------------------------------------
@pytest.fixture(scope="module")
def evaluator() -> UpstreamEvaluator:
    return UpstreamEvaluator(locate_client(interop.waa_upstream()))


def rule_task(funcs: list[str], results: list[object], expected: list[object], conj: str = "and") -> dict:
    return {"id": "synthetic", "instruction": "x", "evaluator": {
        "func": funcs, "conj": conj,
        "result": [{"type": "rule", "rules": r} for r in results],
        "expected": [{"type": "rule", "rules": {"expected": e}} for e in expected]}}


def test_the_infeasible_rule_is_upstreams(evaluator):
    task = json.loads((EXAMPLES / "vs_code" / f"{INFEASIBLE}.json").read_text())
    down = f"http://127.0.0.1:{free_port()}"
    assert evaluator.evaluate(task, "FAIL", down).score == 1.0
    assert evaluator.evaluate(task, "DONE", down).score == 0.0
    assert evaluator.evaluate(task, None, down).score == 0.0
    feasible = rule_task(["exact_match"], [1], [1])
    assert evaluator.evaluate(feasible, "FAIL", down).score == 0.0  # a feasible task given up scores 0
    assert evaluator.evaluate(feasible, "DONE", down).score == 1.0


def test_and_is_the_mean_and_or_the_max(evaluator):
    down = f"http://127.0.0.1:{free_port()}"
    # fuzzy_match("abcd", "abce") is 0.75 in upstream's metric: and(1, 0.75) is their mean.
    verdict = evaluator.evaluate(rule_task(["exact_match", "fuzzy_match"], [1, "abcd"], [1, "abce"]), "DONE", down)
    assert verdict.score == pytest.approx(0.875) and verdict.passed is False
    assert [(c.name, c.actual) for c in verdict.criteria] == [("exact_match", 1.0), ("fuzzy_match", 0.75)]
    verdict = evaluator.evaluate(rule_task(["fuzzy_match", "exact_match"], ["abcd", 0], ["abce", 1], "or"),
                                 "DONE", down)
    assert verdict.score == pytest.approx(0.75)
    # and stops at the first 0, as upstream does: the second metric never runs.
    verdict = evaluator.evaluate(rule_task(["exact_match", "fuzzy_match"], [0, "a"], [1, "a"]), "DONE", down)
    assert verdict.score == 0.0 and [c.name for c in verdict.criteria] == ["exact_match"]


def test_what_is_not_a_judgement_is_an_error(evaluator):
    down = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(EvaluationError, match=r"metric or getter that upstream does not have.*no_such_metric"):
        evaluator.evaluate(rule_task(["no_such_metric"], [1], [1]), "DONE", down)
    notepad = json.loads((EXAMPLES / "notepad" / f"{NOTEPAD_TASK}.json").read_text())
    with pytest.raises(InfrastructureError, match=r"scoring could not read the VM: POST .*/file during scoring"):
        evaluator.evaluate(notepad, "DONE", down)
    # compare_audios needs librosa, which upstream imports at the top and the waa extra leaves out.
    audio = {"id": "audio", "instruction": "x",
             "evaluator": {"func": "compare_audios", "result": {"type": "rule", "rules": "a.mp3"},
                           "expected": {"type": "rule", "rules": "b.mp3"}}}
    try:
        verdict = evaluator.evaluate(audio, "DONE", down)
    except EvaluationError as exc:
        assert "'librosa'" in str(exc) and "not installed" in str(exc)
    else:  # librosa is installed here: then upstream scored it (two missing files)
        assert 0.0 <= verdict.score <= 1.0


def test_a_worker_that_cannot_start_or_hangs_is_an_infrastructure_error(tmp_path):
    client = locate_client(interop.waa_upstream())
    hang = tmp_path / "hang"
    hang.write_text("#!/bin/sh\nsleep 30\n")
    hang.chmod(0o755)
    with pytest.raises(InfrastructureError, match=r"did not finish within 0\.5s"):
        UpstreamEvaluator(client, str(hang), timeout=0.5).evaluate(rule_task(["exact_match"], [1], [1]), "DONE", "x")
    silent = tmp_path / "silent"
    silent.write_text("#!/bin/sh\necho broken >&2\nexit 3\n")
    silent.chmod(0o755)
    with pytest.raises(InfrastructureError, match="gave no result: broken"):
        UpstreamEvaluator(client, str(silent)).evaluate(rule_task(["exact_match"], [1], [1]), "DONE", "x")


# -- through pytest: the fake stands for the VM, upstream's code scores --------------------------------
@pytest.fixture
def gold_server(tmp_path):
    (tmp_path / "gold").mkdir()
    (tmp_path / "gold" / "draft.txt").write_text("This is a draft.")
    with serve_folder(tmp_path / "gold") as url:
        yield url


def notepad_tree(root: Path, gold_url: str, options: dict | None = None) -> Path:
    """The notepad task with its gold file served on loopback (upstream fetches it from GitHub)."""
    tree = root / "tree"
    shutil.copytree(DATA, tree)
    path = tree / "examples" / "notepad" / f"{NOTEPAD_TASK}.json"
    task = json.loads(path.read_text())
    task["evaluator"]["expected"][1]["path"] = f"{gold_url}/draft.txt"
    if options is not None:
        task["evaluator"]["options"] = [{}, options]
    path.write_text(json.dumps(task))
    return tree


def test_notepad_on_the_fake_scored_by_upstreams_code(run, pytester, gold_server):
    from pytest_agentbench.testing import FakeWAAServer

    upstream = interop.waa_upstream()
    tree = notepad_tree(pytester.path, gold_server)
    script = pytester.path / "script.json"
    script.write_text(json.dumps({NOTEPAD_TASK: NOTEPAD_SOLUTION}))
    with FakeWAAServer() as fake:
        args = ("--bench=waa", "--waa-examples", str(tree), "--waa-upstream", str(upstream), "--waa-server", fake.url,
                "--bench-task", NOTEPAD_TASK)
        run(*args, "--bench-agent", "noop").assert_outcomes(failed=1)
        run(*args, "--bench-agent", "scripted", "--bench-agent-script", str(script)).assert_outcomes(passed=1)
        assert fake.read_file(DRAFT) == b"This is a draft."
        assert not any(r["path"] == "/evaluate" for r in fake.requests)  # upstream's getters read /file
        assert any(r["path"] == "/file" for r in fake.requests)
    rows = [r for folder in sorted((pytester.path / "benchmark_results").iterdir()) for r in results(folder)]
    assert [(r["agent"], r["score"], r.get("error_type")) for r in rows] == [("noop", 0.0, None),
                                                                               ("scripted", 1.0, None)]


def test_metric_options_reach_upstreams_metric(run, pytester, gold_server):
    """compare_text_file(ignore_case=True) passes a draft typed in lower case; without the option
    the same state fails. The reference evaluate server dropped metric options."""
    from pytest_agentbench.testing import FakeWAAServer

    upstream = interop.waa_upstream()
    lower = [dict(step, text=step["text"].lower()) if step.get("text") == "This is a draft." else step
             for step in NOTEPAD_SOLUTION]
    assert lower != NOTEPAD_SOLUTION
    script = pytester.path / "script.json"
    script.write_text(json.dumps({NOTEPAD_TASK: lower}))
    outcomes = {}
    for name, options in (("plain", {}), ("ignore_case", {"ignore_case": True})):
        folder = pytester.path / name
        folder.mkdir()
        tree = notepad_tree(folder, gold_server, options)
        with FakeWAAServer() as fake:
            result = run("--bench=waa", f"--waa-examples={tree}", f"--waa-upstream={upstream}",
                         "--waa-server", fake.url, "--bench-task", NOTEPAD_TASK, "--bench-agent", "scripted",
                         f"--bench-agent-script={script}", f"--bench-results-dir={folder / 'out'}")
        outcomes[name] = result.parseoutcomes()
    assert outcomes == {"plain": {"failed": 1}, "ignore_case": {"passed": 1}}


def test_an_unreachable_getter_is_an_error_not_a_zero(run, pytester):
    """The gold file's server is down: upstream's getter cannot fetch it, and the item errors."""
    from pytest_agentbench.testing import FakeWAAServer

    upstream = interop.waa_upstream()
    tree = notepad_tree(pytester.path, f"http://127.0.0.1:{free_port()}")
    script = pytester.path / "script.json"
    script.write_text(json.dumps({NOTEPAD_TASK: NOTEPAD_SOLUTION}))
    with FakeWAAServer() as fake:
        result = run("--bench=waa", "--waa-examples", str(tree), "--waa-upstream", str(upstream), "--waa-server",
                     fake.url, "--bench-task", NOTEPAD_TASK, "--bench-agent", "scripted",
                     "--bench-agent-script", str(script))
    result.assert_outcomes(errors=1)
    (row,) = results(only_run_folder(pytester.path))
    assert row["error_type"] == "infrastructure" and "draft.txt during scoring" in row["reason"]
