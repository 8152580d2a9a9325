"""``pytest --bench=opencomputer``: OpenComputer task files as items, graded in a sandbox by
verifier scripts that follow OpenComputer's CLI contract, with partial credit.

The task files and the two check-result files are OpenComputer's (``tests/data/opencomputer``,
see its SOURCE.md); the verifiers are this project's own, written to the documented contract
(OpenComputer's code is not here). The draw.io verifier gives the same output as OpenComputer's on
both recorded end states, so the criteria here are compared check by check with the reference's.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest
from conftest import only_run_folder, results

from pytest_agentbench.benches.opencomputer import desktop
from pytest_agentbench.benches.opencomputer.results import criteria_from_details, read_check_results, reference_reward
from pytest_agentbench.benches.opencomputer.tasks import OpenComputerTaskError, read_task
from pytest_agentbench.infra.sandbox import probe_bwrap
from pytest_agentbench.model import Action, Criterion

DATA = Path(__file__).parent / "data" / "opencomputer"
TASKS = DATA / "tasks"
VERIFIERS = DATA / "verifiers"
SOLVED = DATA / "end_states" / "solved"
DRAWIO = "drawio_aws_cloud_arch"
IDS = ["bench/opencomputer::audacity::audacity_export_segment_wav",
       f"bench/opencomputer::drawio::{DRAWIO}",
       "bench/opencomputer::libreoffice_calc::calc_inventory_sort_filter"]


def reference(name: str) -> dict[str, Any]:
    return json.loads((DATA / "check_results" / f"check_results_{DRAWIO}_{name}.json").read_text())


def ids(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if line.startswith("bench/")]


def oc(*args: str, tasks: Path = TASKS) -> tuple[str, ...]:
    return ("--bench=opencomputer", "--opencomputer-tasks", str(tasks), *args)


def graded(end_state: Path, *args: str, tasks: Path = TASKS) -> tuple[str, ...]:
    return oc("--opencomputer-verifiers", str(VERIFIERS), "--opencomputer-end-state", str(end_state), *args,
              tasks=tasks)


def record(root: Path, task_id: str) -> dict[str, Any]:
    return next(r for r in results(only_run_folder(root)) if r["task_id"] == task_id)


# -- collection and selection ---------------------------------------------------------------------------
def test_one_item_per_task_with_the_app_as_domain(run):
    result = run(*oc("--collect-only", "-q"))
    assert result.ret == pytest.ExitCode.OK
    assert ids(result) == IDS


def test_select_by_app_marker_keyword_and_id(run):
    assert ids(run(*oc("-k", "drawio", "--collect-only", "-q"))) == [IDS[1]]
    assert ids(run(*oc("-m", "libreoffice_calc", "--collect-only", "-q"))) == [IDS[2]]
    assert ids(run(*oc("-m", "opencomputer and not audacity", "--collect-only", "-q"))) == IDS[1:]
    assert ids(run(*oc("-k", "llm_judged", "--collect-only", "-q"))) == [IDS[1]]  # the task with LLM checks
    assert ids(run(*oc("--bench-task", "calc_inventory_sort_filter", "--collect-only", "-q"))) == [IDS[2]]


def test_an_openComputer_checkout_is_accepted(run, pytester: pytest.Pytester):
    shutil.copytree(TASKS, pytester.path / "OpenComputer" / "task_generator" / "tasks")
    assert ids(run(*oc("--collect-only", "-q", tasks=pytester.path / "OpenComputer"))) == IDS


@pytest.mark.filterwarnings("ignore::pytest_agentbench.benches.opencomputer.tasks.OpenComputerWarning")
def test_an_invalid_task_file_is_one_item_error_naming_it_and_the_others_still_run(run, pytester: pytest.Pytester):
    tasks = pytester.path / "tasks"
    shutil.copytree(TASKS, tasks)
    bad = tasks / DRAWIO / "task.json"
    data = json.loads(bad.read_text())
    data["verification"][3] = {"command": "check-label-exists x EC2", "description": "no key, no eval"}
    bad.write_text(json.dumps(data))
    (tasks / "calc_inventory_sort_filter" / "task.json").write_text("{not json")
    (tasks / "bad [name]").mkdir()
    (tasks / "bad [name]" / "task.json").write_text("{}")
    collected = run(*oc("--collect-only", "-q", tasks=tasks))
    assert collected.ret == pytest.ExitCode.OK
    assert ids(collected) == [IDS[0], IDS[1], "bench/opencomputer::invalid_task::calc_inventory_sort_filter"]
    from pytest_agentbench.benches.opencomputer.bench import OpenComputerBenchmark
    from pytest_agentbench.benches.opencomputer.tasks import OpenComputerWarning

    with pytest.warns(OpenComputerWarning, match=r"left out: OpenComputer task folder .*bad \[name\]: its name"):
        assert len(OpenComputerBenchmark(tasks).list_tasks()) == 3  # reported once, then left out
    # selection still works: the good task alone runs, the broken ones are not touched
    assert ids(run(*oc("--bench-task", "audacity_export_segment_wav", "--collect-only", "-q", tasks=tasks))) == IDS[:1]
    result = run(*graded(SOLVED, "-m", "drawio or invalid_task", tasks=tasks))
    result.assert_outcomes(errors=2)
    out = result.stdout.str()
    assert f"OpenComputer task file {bad}: verification[3]: a check needs 'key' and 'expected'" in out
    assert f"OpenComputer task file {tasks / 'calc_inventory_sort_filter' / 'task.json'}: not valid JSON" in out


def test_with_bench_task_only_the_named_task_files_are_read(run, pytester: pytest.Pytester):
    """A whole checkout's 900 task files cost every pytest process 0.2 s or more; a run of one
    named task reads its file alone (no warning about a folder it never looked at)."""
    tasks = pytester.path / "tasks"
    shutil.copytree(TASKS, tasks)
    (tasks / "bad [name]").mkdir()
    (tasks / "bad [name]" / "task.json").write_text("{}")
    chosen = run(*oc("--bench-task", "audacity_export_segment_wav", "--collect-only", "-q", "-W",
                     "error::UserWarning", tasks=tasks))
    assert chosen.ret == pytest.ExitCode.OK, chosen.stdout.str()
    assert ids(chosen) == IDS[:1]
    unknown = run(*oc("--bench-task", "bad [name]", "--bench-task", "nope", "--collect-only", "-q", tasks=tasks))
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR
    assert "--bench-task 'bad [name]', 'nope' matches no task of opencomputer" in unknown.stderr.str()
    from pytest_agentbench.benches.opencomputer.bench import OpenComputerBenchmark
    from pytest_agentbench.benches.opencomputer.tasks import OpenComputerWarning

    with pytest.warns(OpenComputerWarning, match="left out"):  # the control: listing them all reads that folder
        assert len(OpenComputerBenchmark(tasks).list_tasks()) == 3


def test_env_files_in_subfolders_are_accepted(tmp_path: Path):
    path = tmp_path / DRAWIO / "task.json"
    path.parent.mkdir()
    path.write_text(json.dumps(_task(env={"files": [{"filename": "project/src/Main.java",
                                                     "sandbox_path": "/home/user/project/src/Main.java"}]})))
    assert read_task(path).raw_config["env"]["files"][0]["filename"] == "project/src/Main.java"


def _task(**changes: Any) -> dict[str, Any]:
    data = json.loads((TASKS / DRAWIO / "task.json").read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


@pytest.mark.parametrize(("data", "message"), [
    ("[1, 2]", "the top level must be an object"),
    (_task(id="other"), "'id' 'other' differs from its folder name 'drawio_aws_cloud_arch'"),
    (_task(app="draw io"), "'app' must be an app name"),
    (_task(task=""), "'task' (the instruction) must be a non-empty string"),
    (_task(verification=[]), "'verification' must be a non-empty list of checks"),
    (_task(verification=[{"command": "x", "key": "ok"}]), "verification[0]: a 'key' check needs 'expected'"),
    (_task(verification=[{"command": "x"}]), "verification[0]: a check needs 'key' and 'expected', an 'eval'"),
    (_task(verification=[{"command": "x", "eval": "result ="}]), "verification[0]: 'eval' is not a Python expression"),
    (_task(verification=[{"command": "x 'unclosed", "key": "a", "expected": 1}]), "'command' cannot be split"),
    (_task(verification=[{"judge": "gpt", "prompt": "p"}]), "'judge' must be \"llm\""),
    (_task(verification=[{"judge": "llm"}]), "an LLM-judged check needs a 'prompt'"),
    (_task(env={"files": [{"filename": "a.drawio", "sandbox_path": "/etc/a.drawio"}]}),
     "'sandbox_path' '/etc/a.drawio' must be a file under /home/user or /tmp"),
    (_task(env={"files": [{"filename": "../a", "sandbox_path": "/home/user/a"}]}),
     "'filename' must be a relative path"),
    (_task(env={"files": [{"filename": "/etc/passwd", "sandbox_path": "/home/user/a"}]}),
     "'filename' must be a relative"),
])
def test_task_file_checks(tmp_path: Path, data: Any, message: str):
    path = tmp_path / DRAWIO / "task.json"
    path.parent.mkdir()
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    with pytest.raises(OpenComputerTaskError) as caught:
        read_task(path)
    assert str(caught.value).startswith(f"OpenComputer task file {path}: ")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_split_check_agrees_with_shlex():
    """The regular expression that stands in for ``shlex.split`` accepts exactly the commands
    ``shlex`` can split, on strings made of every character that matters to it."""
    import random
    import shlex

    from pytest_agentbench.benches.opencomputer.tasks import _SPLITS

    def splits(command: str) -> bool:
        try:
            shlex.split(command)
        except ValueError:
            return False
        return True

    rng = random.Random(17)
    alphabet = "ab '\"\\\n\t#;|$"
    commands = ["", "\\", "'", '"', "a\\ b", "'a\\'", '"a\\"', '"a\\""', "'it''s'", 'x "a b" \'c d\'']
    commands += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 10))) for _ in range(20_000)]
    disagree = [c for c in commands if (_SPLITS.fullmatch(c) is not None) != splits(c)]
    assert disagree == []
    assert {splits(c) for c in commands} == {True, False}


def test_sandbox_path_check_agrees_with_pathlib():
    """``inside_sandbox`` gives ``PurePosixPath``'s answer: absolute, no ``..``, strictly below
    /home/user or /tmp, with pathlib's empty parts, ``.`` parts and ``//`` root."""
    import random
    from pathlib import PurePosixPath

    from pytest_agentbench.benches.opencomputer.tasks import SANDBOX_ROOTS, inside_sandbox

    def by_pathlib(value: str) -> bool:
        pure = PurePosixPath(value)
        return pure.is_absolute() and ".." not in pure.parts and any(
            pure != root and root in pure.parents for root in SANDBOX_ROOTS)

    rng = random.Random(5)
    starts = ["", "/", "//", "///", "/home/user", "/home//user/", "/home/./user", "//tmp", "/tmp", "tmp", "/home"]
    words = ["/", "/", ".", "..", "home", "user", "tmp", "x", ""]
    values = [rng.choice(starts) + "".join(rng.choice(words) for _ in range(rng.randint(0, 6)))
              for _ in range(20_000)]
    assert [v for v in values if inside_sandbox(v) != by_pathlib(v)] == []
    assert 1_000 < sum(map(by_pathlib, values)) < 19_000


def test_oversized_task_file_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from pytest_agentbench.benches.opencomputer import tasks

    monkeypatch.setattr(tasks, "MAX_TASK_BYTES", 100)
    path = tmp_path / DRAWIO / "task.json"
    path.parent.mkdir()
    path.write_text(json.dumps(_task()))
    with pytest.raises(OpenComputerTaskError, match=rf"{path.stat().st_size} bytes, more than the 100 allowed"):
        read_task(path)


def test_real_task_files_read_as_tasks():
    task = read_task(TASKS / DRAWIO / "task.json")
    assert (task.task_id, task.domain, task.benchmark, task.tags) == (DRAWIO, "drawio", "opencomputer", ["llm_judged"])
    assert task.instruction.startswith("/home/user/Documents/aws_arch.drawio already contains")
    assert task.raw_config == json.loads((TASKS / DRAWIO / "task.json").read_text())
    assert task.time_limit_steps == 100
    assert read_task(TASKS / "audacity_export_segment_wav" / "task.json").tags == []


@pytest.mark.parametrize(("args", "message"), [
    (("--bench=opencomputer",), "--bench=opencomputer needs --opencomputer-tasks DIR"),
    (oc(tasks=Path("nowhere")), "/nowhere does not exist (--opencomputer-tasks wants a folder of <id>/task.json"),
    (oc("--opencomputer-end-state", str(SOLVED)), "--opencomputer-end-state needs --opencomputer-verifiers DIR"),
    (oc("--opencomputer-verifiers", "nowhere"), ("--opencomputer-verifiers /", "/nowhere does not exist")),
    (graded(SOLVED, "--opencomputer-judge", "nomodule"), "use module:callable"),
    (graded(SOLVED, "--opencomputer-judge", "no_such_module_here:judge"), "cannot load --opencomputer-judge"),
    (oc("--opencomputer-timeout", "0"), "--opencomputer-timeout must be a finite number of seconds > 0"),
])
def test_bad_options_are_usage_errors(run, args: tuple[str, ...], message: str | tuple[str, ...]):
    result = run(*args, "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    for part in (message,) if isinstance(message, str) else message:
        assert part in result.stderr.str()


# -- grading end states ---------------------------------------------------------------------------------
def _passes(criteria: list[dict[str, Any]] | list[Criterion]) -> list[bool | None]:
    return [c["passed"] if isinstance(c, dict) else c.passed for c in criteria]


def test_solved_end_state_is_not_fully_evaluated_without_a_judge_and_scores_as_the_reference(run, pytester):
    result = run(*graded(SOLVED, "-k", "drawio", "-rs"))
    result.assert_outcomes(skipped=1)  # 12 of 14 passed, the 2 LLM-judged checks not run: it cannot pass
    assert ("not evaluated: not fully evaluated: 12 of 14 checks passed (reward 0.8571); 2 LLM-judged checks not "
            "run (no judge: --opencomputer-judge); every other check passed") in result.stdout.str()
    rec = record(pytester.path, DRAWIO)
    ref = reference("solved_offline")
    assert (rec["score"], rec["passed"], rec["agent"], rec["num_steps"]) == (ref["reward"], None, "end-state", 0)
    expected = [None if e.get("judge") == "llm" else e["passed"] for e in ref["verification_details"]]
    assert _passes(rec["criteria"]) == expected
    assert [c["name"] for c in rec["criteria"]] == [
        c.get("description") for c in json.loads((TASKS / DRAWIO / "task.json").read_text())["verification"]]
    assert reference_reward([Criterion(**c) for c in rec["criteria"]]) == ref["reward"] == 0.8571


def test_start_state_fails_with_the_reference_reward_and_every_criterion_shown(run, pytester: pytest.Pytester):
    (pytester.path / "noop" / DRAWIO).mkdir(parents=True)  # the agent changed nothing
    result = run(*graded(pytester.path / "noop", "-k", "drawio"))
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "score 0.286 after 0 steps: 4 of 14 checks passed (reward 0.2857); failed:" in out
    for check in json.loads((TASKS / DRAWIO / "task.json").read_text())["verification"]:
        assert check["description"] in out
    assert "Page 0 has exactly 10 vertices" in out and "match=false, expected true" in out
    assert "n/a     LLM-judged: not evaluated" in out
    rec = record(pytester.path, DRAWIO)
    ref = reference("initial_state")
    assert rec["score"] == ref["reward"] == 0.2857 and rec["passed"] is False
    assert _passes(rec["criteria"]) == [None if e.get("judge") == "llm" else e["passed"]
                                        for e in ref["verification_details"]]
    vertices = rec["criteria"][1]
    assert (vertices["expected"], vertices["actual"]) == (True, False)


JUDGE = '''
def judge(check, output):
    """Reads the verifier output the way the prompts ask; no model."""
    if check["command"].startswith("vertices"):
        fills = {v["value"]: v["style"] for v in output}
        blue = all("fillColor=#dae8fc" in fills.get(name, "") for name in ("Web1", "Web2"))
        green = all("fillColor=#d5e8d4" in fills.get(name, "") for name in ("App1", "App2"))
        return blue and green, "colours read from the styles"
    if check["command"].startswith("connections"):
        return any(e["source"] == "6" and e["target"] == "7" for e in output)
    return None
'''


def test_a_configured_judge_evaluates_the_llm_checks(run, pytester: pytest.Pytester):
    pytester.makepyfile(myjudge=JUDGE)
    result = run(*graded(SOLVED, "-k", "drawio", "--opencomputer-judge", "myjudge:judge"))
    result.assert_outcomes(passed=1)
    rec = record(pytester.path, DRAWIO)
    assert _passes(rec["criteria"]) == [True] * 14 and rec["score"] == 1.0
    assert rec["criteria"][12]["detail"] == "LLM-judged: colours read from the styles"
    assert rec["criteria"][13]["actual"] == [{"id": "20", "source": "6", "target": "7", "value": ""}]


# -- the sandbox: env files, setup scripts, end states, checks ------------------------------------------
def notes_task(root: Path, task_id: str, checks: list[dict[str, Any]],
               files: dict[str, tuple[str, str]] | None = None, end: dict[str, str] | None = None) -> None:
    """A task for the "notes" app (plain text files): env files ``{filename: (sandbox path, text)}``
    and an end state ``{path under /home/user: text}``."""
    folder = root / "tasks" / task_id
    (folder / "env").mkdir(parents=True)
    env = []
    for filename, (where, text) in (files or {}).items():
        (folder / "env" / filename).write_text(text)
        env.append({"filename": filename, "sandbox_path": where})
    task = {"id": task_id, "app": "notes", "task": "Edit the notes.", "env": {"files": env}, "verification": checks}
    (folder / "task.json").write_text(json.dumps(task))
    state = root / "end" / task_id
    state.mkdir(parents=True)
    for where, text in (end or {}).items():
        (state / where).parent.mkdir(parents=True, exist_ok=True)
        (state / where).write_text(text)


def notes(root: Path, *args: str) -> tuple[str, ...]:
    return graded(root / "end", *args, tasks=root / "tasks")


TODO = "/home/user/notes/todo.txt"
SEED = {"todo.txt": (TODO, "buy milk\n"),
        "setup_notes.sh": ("/home/user/setup_notes.sh", "printf 'one\\ntwo\\n' > /home/user/notes/from_setup.txt\n")}


def test_env_files_setup_scripts_and_end_state_all_reach_the_checks(run, pytester: pytest.Pytester):
    notes_task(pytester.path, "notes_ok", [
        {"command": "check-file-exists /home/user/notes/from_setup.txt", "key": "exists", "expected": True,
         "description": "the setup script ran in the sandbox"},
        {"command": f"check-line {TODO} 1 'buy milk'", "key": "match", "expected": True, "description": "seed kept"},
        {"command": f"check-line {TODO} 2 'call mom'", "key": "match", "expected": True, "description": "line added"},
        {"command": f"lines {TODO}", "eval": "len(result) == 2 and all(x in result for x in ['call mom'])",
         "description": "eval over a list, using result inside a comprehension"},
        {"command": f"word-count {TODO}", "eval": "result['words'] == 4", "expected": False,
         "description": "eval wins over expected"},
    ], files=SEED, end={"notes/todo.txt": "buy milk\ncall mom\n"})
    result = run(*notes(pytester.path))
    result.assert_outcomes(passed=1)
    rec = record(pytester.path, "notes_ok")
    assert _passes(rec["criteria"]) == [True] * 5
    assert rec["criteria"][3]["actual"] == ["buy milk", "call mom"]
    assert rec["criteria"][3]["detail"].startswith("eval -> True: ")


def test_partial_credit_is_passed_over_all_checks(run, pytester: pytest.Pytester):
    notes_task(pytester.path, "notes_half", [
        {"command": f"check-line {TODO} 1 'buy milk'", "key": "match", "expected": True, "description": "first line"},
        {"command": f"check-line {TODO} 2 'call mom'", "key": "match", "expected": True, "description": "second line"},
        {"command": f"lines {TODO}", "eval": "result[5] == 'x'", "description": "an eval that raises fails"},
        {"judge": "llm", "prompt": "Is the list polite?", "description": "judged"},
    ], files=SEED)
    result = run(*notes(pytester.path))
    result.assert_outcomes(failed=1)
    rec = record(pytester.path, "notes_half")
    assert _passes(rec["criteria"]) == [True, False, False, None]
    assert rec["score"] == 0.25  # the unjudged check counts as failed, as in OpenComputer
    assert rec["criteria"][2]["detail"] == "eval raised IndexError: list index out of range: result[5] == 'x'"


def test_only_llm_checks_and_no_judge_is_skipped_as_not_evaluated(run, pytester: pytest.Pytester):
    notes_task(pytester.path, "notes_llm", [{"judge": "llm", "prompt": "Is it nice?", "command": f"lines {TODO}"}],
               files=SEED)
    result = run(*notes(pytester.path), "-rs")
    result.assert_outcomes(skipped=1)
    assert "not evaluated: not fully evaluated: 0 of 1 checks passed (reward 0.0000)" in result.stdout.str()


ERRORING = [
    {"command": f"check-line {TODO} 1 'buy milk'", "key": "match", "expected": True, "description": "fine"},
    {"command": "no-such-command x", "key": "match", "expected": True, "description": "unknown command"},
    {"command": "no-such-command y", "eval": "'error' in result", "description": "eval on the error reply"},
]


def test_a_verifier_error_fails_its_check_and_eval_still_runs_on_the_reply(run, pytester: pytest.Pytester):
    notes_task(pytester.path, "notes_error", ERRORING, files=SEED)
    result = run(*notes(pytester.path))
    result.assert_outcomes(failed=1)
    rec = record(pytester.path, "notes_error")
    assert _passes(rec["criteria"]) == [True, False, True]  # as verify_task: the eval passes on {"error": ...}
    assert rec["score"] == 0.6667
    assert rec["criteria"][1]["detail"].startswith("verifier error: Unknown command: no-such-command")
    assert rec["criteria"][2]["actual"]["error"].startswith("Unknown command: no-such-command.")


def test_strict_mode_makes_a_verifier_error_an_evaluation_error(run, pytester: pytest.Pytester):
    notes_task(pytester.path, "notes_error", ERRORING, files=SEED)
    result = run(*notes(pytester.path, "--opencomputer-verifier-errors", "error"))
    result.assert_outcomes(errors=1)
    assert ("evaluation error: checker failed: EvaluationError: 2 of 3 checks could not run: verification[1] "
            "`no-such-command x`: verifier error: Unknown command: no-such-command.") in result.stdout.str()
    rec = record(pytester.path, "notes_error")
    assert (rec["error_type"], rec["outcome"]) == ("evaluation", False)


def test_a_hanging_checker_is_killed_at_the_timeout_and_fails_its_check(run, pytester: pytest.Pytester):
    notes_task(pytester.path, "notes_hang", [{"command": "wait 60", "key": "waited", "expected": 60}], files=SEED)
    result = run(*notes(pytester.path, "--opencomputer-timeout", "0.5"))
    result.assert_outcomes(failed=1)
    assert "verifier error: Command timed out after 0.5s (wait 60)" in result.stdout.str()
    strict = run(*notes(pytester.path, "--opencomputer-timeout", "0.5", "--opencomputer-verifier-errors", "error"))
    strict.assert_outcomes(errors=1)
    assert "verification[0] `wait 60`: timed out after 0.5 s (killed)" in strict.stdout.str()


def test_a_missing_env_file_or_failing_setup_is_an_infrastructure_error(run, pytester: pytest.Pytester):
    notes_task(pytester.path, "notes_missing", ERRORING[:1], files=SEED)
    (pytester.path / "tasks" / "notes_missing" / "env" / "todo.txt").unlink()
    notes_task(pytester.path, "notes_setup", ERRORING[:1],
               files={**SEED, "setup_bad.sh": ("/home/user/setup_bad.sh", "echo broken >&2; exit 3\n")})
    result = run(*notes(pytester.path))
    result.assert_outcomes(errors=2)
    out = result.stdout.str()
    assert "task notes_missing: env file" in out and "there is no env/create_env.py to make it" in out
    assert "task notes_setup: setup script /home/user/setup_bad.sh exited 3: broken" in out


def test_create_env_makes_missing_seed_files(run, pytester: pytest.Pytester):
    notes_task(pytester.path, "notes_made", ERRORING[:1], files={"todo.txt": (TODO, "")})
    env = pytester.path / "tasks" / "notes_made" / "env"
    (env / "todo.txt").unlink()
    (env / "create_env.py").write_text(f"open({TODO!r}, 'w').write('buy milk\\n')\n")
    run(*notes(pytester.path)).assert_outcomes(passed=1)


def test_checks_run_without_network(run, pytester: pytest.Pytester):
    if probe_bwrap()[0] is None:
        pytest.skip("needs bubblewrap (without it, checks are not isolated)")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    try:
        port = server.getsockname()[1]
        notes_task(pytester.path, "notes_net", [
            {"command": f"connect 127.0.0.1 {port}", "key": "connected", "expected": False},
            {"command": f"lines {TODO}", "eval": f"not __import__('os').path.exists({str(pytester.path)!r})",
             "description": "eval runs in the sandbox, where the host's folders are not"},
        ], files=SEED)
        result = run(*notes(pytester.path), "--sandbox-isolation", "bwrap")
    finally:
        server.close()
    result.assert_outcomes(passed=1)


def test_end_states_under_xdist(run_sub):
    result = run_sub(*graded(SOLVED, "-n", "2"))
    result.assert_outcomes(skipped=3)  # drawio not fully evaluated, the others without an end state


# -- agents and the desktop -----------------------------------------------------------------------------
def test_without_a_desktop_agent_items_are_skipped_with_the_reason(run, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    result = run(*oc("--opencomputer-verifiers", str(VERIFIERS), "-rs"))
    result.assert_outcomes(skipped=3)
    assert ("not evaluated: app 'drawio' cannot run: no desktop here: DISPLAY is not set (OpenComputer apps "
            "need an X display); grade end states instead with --opencomputer-end-state DIR") in result.stdout.str()


def test_desktop_availability(tmp_path: Path):
    x11 = tmp_path / "x11"
    x11.mkdir()
    assert "DISPLAY is not set" in desktop.unavailable("drawio", environ={}, x11_dir=x11)
    assert "not a local X display" in desktop.unavailable("drawio", environ={"DISPLAY": "host:0"}, x11_dir=x11)
    assert "X0 does not exist" in desktop.unavailable("drawio", environ={"DISPLAY": ":0"}, x11_dir=x11)
    (x11 / "X0").touch()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    assert desktop.unavailable("libreoffice_calc", environ={"DISPLAY": ":0.0"}, x11_dir=x11, search_path=str(bin_dir)) \
        == "app 'libreoffice_calc' is not installed for the sandbox (soffice is not on its PATH)"
    (bin_dir / "soffice").write_text("#!/bin/sh\n")
    (bin_dir / "soffice").chmod(0o755)
    found = desktop.unavailable("libreoffice_calc", environ={"DISPLAY": ":0"}, x11_dir=x11, search_path=str(bin_dir))
    assert found is None


@pytest.mark.parametrize(("action", "code"), [
    (Action(type="click", x=0.5, y=0.5), "pyautogui.click(960, 540)"),
    (Action(type="double_click", x=10, y=20), "pyautogui.doubleClick(10, 20)"),
    (Action(type="type", text="it's"), "pyautogui.write(\"it's\", interval=0.02)"),
    (Action(type="hotkey", keys=["ctrl", "s"]), "pyautogui.hotkey('ctrl', 's')"),
    (Action(type="scroll", scroll_direction="down", scroll_amount=2), "pyautogui.scroll(-2)"),
    (Action(type="drag", x=1, y=2, end_x=3, end_y=4),
     "pyautogui.moveTo(1, 2); pyautogui.dragTo(3, 4, duration=0.5, button='left')"),
    (Action(type="wait"), "time.sleep(5)"),
])
def test_actions_become_opencomputer_pyautogui_code(action: Action, code: str):
    assert desktop.to_pyautogui(action) == code


def test_actions_the_desktop_cannot_do():
    with pytest.raises(desktop.UnsupportedAction, match="target_id"):
        desktop.to_pyautogui(Action(type="click", target_id="7"))
    with pytest.raises(desktop.UnsupportedAction, match="end an episode"):
        desktop.to_pyautogui(Action(type="done"))


# -- the reference's result files ------------------------------------------------------------------------
def test_reference_check_results_parse_and_score_both_ways():
    for name, passed, outcome in (("initial_state", 4, False), ("solved_offline", 12, None)):
        data = reference(name)
        as_recorded = read_check_results(data)
        assert sum(1 for c in as_recorded.criteria if c.passed) == passed == data["checks_passed"]
        assert (as_recorded.score, as_recorded.passed) == (data["reward"], False)
        ours = read_check_results(data, llm="not-evaluated")
        assert (ours.score, ours.passed) == (data["reward"], outcome)  # solved: only the unjudged checks miss
        assert _passes(ours.criteria)[-2:] == [None, None]
        assert reference_reward(ours.criteria) == data["reward"]
    kinds = [c.detail.split(" ")[0] for c in criteria_from_details(reference("solved_offline")["verification_details"])]
    assert kinds == ["exists"] + ["match"] + ["exists"] * 10 + ["LLM-judged:"] * 2


def test_reference_results_whose_counts_disagree_are_refused():
    data = reference("initial_state")
    with pytest.raises(ValueError, match="checks_passed is 5 but 4 entries passed"):
        read_check_results({**data, "checks_passed": 5})
    with pytest.raises(ValueError, match="no 'verification_details'"):
        read_check_results({"reward": 1})


# -- the Python API -------------------------------------------------------------------------------------
def test_the_python_api_grades_an_end_state_and_keeps_the_sandbox_until_the_next_reset():
    from pytest_agentbench.agents import NoopAgent
    from pytest_agentbench.api import evaluate_agent_on_benchmark
    from pytest_agentbench.benches.opencomputer.bench import OpenComputerBenchmark
    from pytest_agentbench.infra.sandbox import Isolation

    bench = OpenComputerBenchmark(TASKS, verifiers_dir=VERIFIERS, end_state_dir=SOLVED, isolation=Isolation("none"))
    [rec] = evaluate_agent_on_benchmark(NoopAgent(), bench, [DRAWIO])
    assert (rec.verdict.score, rec.verdict.passed, rec.error) == (0.8571, None, None)
    box = bench.sandbox
    solved = SOLVED / DRAWIO / "Documents" / "aws_arch.drawio"
    assert (box.home / "Documents" / "aws_arch.drawio").read_bytes() == solved.read_bytes()
    assert (box.home / "verifiers" / "drawio.py").is_file()
    bench.close()
    assert bench.sandbox is None and not box.root.exists()


# -- end states that remove files -------------------------------------------------------------------------
OTHER = "/home/user/notes/other.txt"
GONE = [{"command": f"check-file-exists {OTHER}", "key": "exists", "expected": False, "description": "other.txt gone"},
        {"command": f"check-line {TODO} 1 'buy milk'", "key": "match", "expected": True, "description": "todo kept"}]
TWO = {**SEED, "other.txt": (OTHER, "scratch\n")}


def test_a_deleted_list_removes_what_the_agent_removed(run, pytester: pytest.Pytester):
    notes_task(pytester.path, "notes_deleted", GONE, files=TWO, end={".deleted": "# removed\nnotes/other.txt\n\n"})
    notes_task(pytester.path, "notes_kept", GONE, files=TWO)  # an overlay alone cannot remove it
    result = run(*notes(pytester.path))
    result.assert_outcomes(passed=1, failed=1)
    assert record(pytester.path, "notes_deleted")["passed"] is True
    assert _passes(record(pytester.path, "notes_kept")["criteria"]) == [False, True]


def test_whole_home_snapshots_folder_or_tar_drop_what_they_lack(run, pytester: pytest.Pytester):
    import tarfile

    notes_task(pytester.path, "notes_snap", GONE, files=TWO, end={".snapshot": "", "notes/todo.txt": "buy milk\n"})
    notes_task(pytester.path, "notes_tar", GONE, files=TWO)
    shutil.rmtree(pytester.path / "end" / "notes_tar")
    with tarfile.open(pytester.path / "end" / "notes_tar.tar.gz", "w:gz") as tar:
        tar.add(pytester.path / "end" / "notes_snap" / "notes", arcname="./notes")
    result = run(*notes(pytester.path))
    result.assert_outcomes(passed=2)


def test_end_states_never_write_or_delete_through_a_link_the_sandbox_planted(run, pytester: pytest.Pytester):
    outside = pytester.path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("keep me")
    plant = {**SEED, "setup_link.sh": ("/home/user/setup_link.sh", f"ln -s {outside} /home/user/escape\n")}
    notes_task(pytester.path, "notes_link", ERRORING[:1], files=plant,
               end={"escape/pwned.txt": "x", ".deleted": "escape/victim.txt\n"})
    run(*notes(pytester.path)).assert_outcomes(passed=1)
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]


def test_a_deleted_list_that_climbs_out_is_an_error_naming_it(run, pytester: pytest.Pytester):
    notes_task(pytester.path, "notes_climb", ERRORING[:1], files=SEED, end={".deleted": "../../etc/passwd\n"})
    result = run(*notes(pytester.path))
    result.assert_outcomes(errors=1)
    assert "is not a path relative to /home/user (no '..')" in result.stdout.str()


@pytest.mark.parametrize(("args", "message"), [
    (("--opencomputer-harness", "opencomputer"),
     "--opencomputer-harness opencomputer needs --opencomputer-tasks to name"),
    (("--opencomputer-python", "/no/such/python"), "--opencomputer-python /no/such/python: not an executable file"),
])
def test_bad_harness_and_python_options_are_usage_errors(run, args: tuple[str, ...], message: str):
    result = run(*oc(*args), "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


# -- the image: uid 1000, its environment, its python3 --------------------------------------------------
def test_sandboxes_run_as_the_images_user_with_its_python_also_under_a_login_shell():
    import sys

    from pytest_agentbench.benches.opencomputer.bench import OpenComputerBenchmark
    from pytest_agentbench.benches.opencomputer.image import missing_packages
    from pytest_agentbench.infra.sandbox import choose_isolation

    if probe_bwrap()[0] is None:
        pytest.skip("needs bubblewrap (the image's user and python3 are bubblewrap binds)")
    if missing_packages():
        pytest.skip("this interpreter lacks the image's packages (pip install -e '.[opencomputer]' in the checkout)")
    bench = OpenComputerBenchmark(TASKS, isolation=choose_isolation("bwrap"), python="current")
    box = bench._new_sandbox()
    try:
        probe = "import os, sys, PIL, openpyxl, pptx, docx; print(os.getuid(), os.getgid(), sys.prefix)"
        done = box.run(["bash", "-lc", f"python3 -c '{probe}'; echo $HOME $USER $SHELL $LC_ALL $XDG_RUNTIME_DIR"],
                       timeout=60)
        assert done.ok, done.stderr
        ids, env = done.stdout.splitlines()
        assert ids == f"1000 1000 {sys.prefix}"  # /etc/profile reset PATH; /usr/local/bin/python3 is this one
        assert env == "/home/user user /bin/bash C.UTF-8 /tmp/runtime-user"
        system = OpenComputerBenchmark(TASKS, isolation=choose_isolation("bwrap"), python="system")._new_sandbox()
        try:
            done = system.run(["bash", "-lc", "command -v python3"], timeout=60)
            assert done.stdout.strip() in ("/usr/bin/python3", "/bin/python3")
        finally:
            system.close()
    finally:
        bench.close()


def test_a_virtualenvs_interpreter_is_the_sandboxs_python3_with_the_venvs_packages(tmp_path):
    """``--opencomputer-python`` naming a venv's interpreter: the sandbox's ``python3`` runs in that
    venv (its own packages importable), also under a login shell, not as the base interpreter."""
    import subprocess
    import sys
    import sysconfig

    from pytest_agentbench.benches.opencomputer.bench import OpenComputerBenchmark
    from pytest_agentbench.benches.opencomputer.image import missing_packages
    from pytest_agentbench.infra.sandbox import choose_isolation

    if probe_bwrap()[0] is None:
        pytest.skip("needs bubblewrap (the image's python3 is a bubblewrap bind)")
    if missing_packages():
        pytest.skip("this interpreter lacks the image's packages (pip install -e '.[opencomputer]' in the checkout)")
    venv = tmp_path / "oc-venv"
    # --system-site-packages: the image's packages come from this interpreter; the marker module
    # lives in the venv's own site-packages, which only an interpreter running in the venv sees
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    assert purelib != sysconfig.get_path("purelib")
    Path(purelib, "agentbench_venv_marker.py").write_text("WHERE = 'venv'\n")
    bench = OpenComputerBenchmark(TASKS, isolation=choose_isolation("bwrap"), python=str(python))
    box = bench._new_sandbox()
    try:
        probe = "import sys, PIL, agentbench_venv_marker as m; print(m.WHERE, sys.prefix)"
        for argv in (["python3", "-c", probe], ["bash", "-lc", f"python3 -c '{probe}'"]):
            done = box.run(argv, timeout=60)
            assert done.ok, done.stderr
            assert done.stdout.split() == ["venv", str(venv)]
    finally:
        bench.close()


def test_an_end_state_cannot_make_the_verifier_copy_write_outside(run, pytester: pytest.Pytester):
    outside = pytester.path / "outside"
    outside.mkdir()
    notes_task(pytester.path, "notes_verifiers_link", ERRORING[:1], files=SEED)
    (pytester.path / "end" / "notes_verifiers_link" / "verifiers").symlink_to(outside)
    run(*notes(pytester.path)).assert_outcomes(passed=1)  # graded by the real verifier, copied in again
    assert list(outside.iterdir()) == []


def test_a_symlink_in_a_task_folder_never_copies_a_host_file_in(run, pytester: pytest.Pytester):
    """A tasks folder that is not a checkout (the built-in setup copies its env files): an env file
    that is a link to a host file is an error naming it, and the host file's content reaches
    neither the sandbox nor the run's records."""
    secret = pytester.path / "host-secret.txt"
    secret.write_text("HOST-SECRET-CONTENT\n")
    os.chmod(secret, 0o600)
    notes_task(pytester.path, "notes_link", [
        {"command": f"lines {TODO}", "eval": "False", "description": "the env file's lines"}],
        files={"todo.txt": (TODO, "placeholder\n")})
    env_file = pytester.path / "tasks" / "notes_link" / "env" / "todo.txt"
    env_file.unlink()
    env_file.symlink_to(secret)
    result = run(*notes(pytester.path))
    result.assert_outcomes(errors=1)
    assert "must be a regular file in the task folder, not a symlink" in result.stdout.str()
    folder = only_run_folder(pytester.path)
    assert all("HOST-SECRET-CONTENT" not in p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file())


def test_items_that_cannot_run_here_are_named_in_the_summary_not_only_under_rs(run, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    result = run("--bench=opencomputer", f"--opencomputer-tasks={TASKS}", "--opencomputer-harness=builtin")
    assert result.ret == pytest.ExitCode.OK
    skipped = result.parseoutcomes()["skipped"]
    result.stdout.fnmatch_lines([f"OpenComputer: {skipped} of {skipped} item(s) were not run here (skipped):",
                                 "  1 x app * cannot run: no desktop here: DISPLAY is not set*"])
