"""``--bench-agent replay``: compiled workflows per task id (``--bench-replay-bundles DIR/<task id>/workflow.json``),
replayed against the fake WAA server and the mock benchmark; bundle and script errors name the file
and the line. The MockMed compiled arm is the same agent (its own tests are test_mockmed_*.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import notepad_project, only_run_folder, results

from pytest_agentbench.agents.replay import (
    STEP_TYPES,
    ReplayAgent,
    WorkflowError,
    json_line,
    load_workflow,
    make_agent,
    validate_workflow,
)
from pytest_agentbench.errors import ConfigError
from pytest_agentbench.model import Action, Observation, Task
from pytest_agentbench.testing import NOTEPAD_TASK

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_BUNDLES = REPO / "conftest_examples" / "replay_bundles"
EXAMPLE = EXAMPLE_BUNDLES / NOTEPAD_TASK / "workflow.json"
EXAMPLES = Path(__file__).parent / "data" / "waa" / "examples"
DRAFT = "C:\\Users\\Docker\\Documents\\draft.txt"


@pytest.fixture
def fake():
    from pytest_agentbench.testing import FakeWAAServer, serve_notepad_gold

    with FakeWAAServer(evaluate=True) as server:
        serve_notepad_gold(server, json.loads((EXAMPLES / "notepad" / f"{NOTEPAD_TASK}.json").read_text()))
        yield server


def bundle(root: Path, task_id: str, workflow: dict[str, Any] | str) -> Path:
    """Write ``root/<task_id>/workflow.json`` (a dict is pretty-printed one key per line)."""
    folder = root / task_id
    folder.mkdir(parents=True, exist_ok=True)
    text = workflow if isinstance(workflow, str) else json.dumps(workflow, indent=2)
    (folder / "workflow.json").write_text(text)
    return folder / "workflow.json"


def replay_args(project: list[str], bundles: Path | str) -> list[str]:
    """``notepad_project``'s arguments with its scripted agent swapped for the replay agent."""
    args = project[: project.index("--bench-agent")]
    return [*args, "--bench-agent", "replay", "--bench-replay-bundles", str(bundles)]


def example() -> dict[str, Any]:
    return json.loads(EXAMPLE.read_text())


def error_lines(result: pytest.RunResult) -> list[str]:
    return [line for line in result.stderr.lines if line.startswith("ERROR")]


# -- end to end against the fake WAA server ------------------------------------------------------
def test_the_example_bundle_solves_the_notepad_task(run, pytester, fake):
    result = run("--bench=waa", "--waa-examples", str(EXAMPLES), "--bench-task", NOTEPAD_TASK,
                 "--waa-server", fake.url, "--waa-evaluate-url", fake.evaluate_url, "--bench-agent", "replay",
                 "--bench-replay-bundles", str(EXAMPLE_BUNDLES))
    result.assert_outcomes(passed=1)
    assert fake.read_file(DRAFT) == b"This is a draft."
    (row,) = results(only_run_folder(pytester.path))
    assert row["agent"] == "replay" and row["success"] is True
    assert row["num_steps"] == len(example()["steps"])  # every step executed, then done
    assert row["final_action"]["type"] == "done"


def test_one_bundle_per_task_id_and_a_task_without_one_is_an_agent_error(run, pytester, fake):
    project = notepad_project(pytester.path, 3)
    for task_id in ("t1", "t2"):
        bundle(pytester.path / "bundles", task_id, example())
    # A relative --bench-replay-bundles is relative to the invocation folder.
    run(*replay_args(project, "bundles"), "--waa-server", fake.url,
        "--waa-evaluate-url", fake.evaluate_url).assert_outcomes(passed=2, failed=1)
    rows = {r["task_id"]: r for r in results(only_run_folder(pytester.path))}
    assert rows["t1"]["success"] is True and rows["t2"]["success"] is True
    assert rows["t3"]["error_type"] == "agent" and rows["t3"]["num_steps"] == 0
    assert "no compiled workflow for task t3 in bundles" in rows["t3"]["reason"]


def test_a_failed_expectation_halts_with_the_reason(run, pytester, fake):
    project = notepad_project(pytester.path, 1)
    workflow = example()
    workflow["steps"][0]["expect"] = {"window_title": "Calculator"}
    bundle(pytester.path / "bundles", "t1", workflow)
    result = run(*replay_args(project, pytester.path / "bundles"), "--waa-server", fake.url,
                 "--waa-evaluate-url", fake.evaluate_url)
    result.assert_outcomes(failed=1)
    (row,) = results(only_run_folder(pytester.path))
    assert row["num_steps"] == 1  # the hotkey ran; then the halt
    assert row["final_action"]["type"] == "fail"
    assert row["final_action"]["reason"] == "step 1: expected the window 'Calculator', saw 'Run'; halting"
    assert fake.read_file(DRAFT) is None


def test_a_finish_condition_that_does_not_hold_fails(run, pytester, fake):
    project = notepad_project(pytester.path, 1)
    bundle(pytester.path / "bundles", "t1", {"steps": [{"action": "hotkey", "keys": ["win", "r"]}],
                                             "finish": {"window_title_contains": "Notepad"}})
    run(*replay_args(project, pytester.path / "bundles"), "--waa-server", fake.url,
        "--waa-evaluate-url", fake.evaluate_url).assert_outcomes(failed=1)
    (row,) = results(only_run_folder(pytester.path))
    assert row["final_action"]["reason"] == (
        "finish: expected a window whose title contains 'Notepad', saw 'Run'; halting")


def test_a_targeted_step_matches_a_waa_tree_element(run, pytester, fake):
    """WAA trees have ``tag`` and ``attrs.name``: a target by role and name finds Notepad's editor.
    (Only the first five steps: the checker fails both items; the replay is what is checked.)"""
    project = notepad_project(pytester.path, 2)
    workflow = example()
    workflow["steps"] = workflow["steps"][:5]
    del workflow["finish"]
    workflow["steps"][4]["target"] = {"role": "edit", "name": "Text Editor"}
    bundle(pytester.path / "bundles", "t1", workflow)
    workflow["steps"][4]["target"] = {"role": "edit", "name": "Rich Text Editor"}
    bundle(pytester.path / "bundles", "t2", workflow)
    run(*replay_args(project, "bundles"), "--waa-server", fake.url,
        "--waa-evaluate-url", fake.evaluate_url).assert_outcomes(failed=2)
    rows = {r["task_id"]: r for r in results(only_run_folder(pytester.path))}
    assert (rows["t1"]["num_steps"], rows["t1"]["final_action"]["type"]) == (5, "done")
    assert rows["t2"]["num_steps"] == 4
    assert rows["t2"]["final_action"]["reason"] == (
        "step 5: no element matches 'Rich Text Editor' well enough; halting")


# -- the mock benchmark ------------------------------------------------------------------------------
def test_clicking_submit_by_name_passes_mock_tasks(run, pytester):
    for task_id in ("mock_chrome_001", "mock_clock_001"):
        bundle(pytester.path / "bundles", task_id, {
            "schema": "pytest-agentbench/workflow/v1",
            "steps": [{"action": "click", "target": {"role": "button", "name": "Submit"}}]})
    result = run("--bench=mock", "--bench-limit", "2", "--bench-agent", "replay", "--bench-replay-bundles", "bundles")
    result.assert_outcomes(passed=2)
    rows = results(only_run_folder(pytester.path))
    assert [r["final_action"]["type"] for r in rows] == ["done", "done"]


# -- usage errors ----------------------------------------------------------------------------------
BAD_STEP = """{
  "schema": "pytest-agentbench/workflow/v1",
  "steps": [
    {"action": "hotkey", "keys": ["win", "r"]},
    {"action": "type", "text": "notepad"},
    {
      "note": "an \\"action\\" named in a string does not count",
      "action": "tripleclick",
      "target": {"name": "OK"}
    }
  ]
}
"""


def test_an_unknown_action_in_a_bundle_is_a_usage_error_with_file_and_line(run, pytester):
    bundle(pytester.path / "bundles", "mock_chrome_001", {"steps": [{"action": "key", "key": "enter"}]})
    bundle(pytester.path / "bundles", "mock_clock_001", BAD_STEP)
    result = run("--bench=mock", "--bench-agent", "replay", "--bench-replay-bundles", "bundles")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    known = ", ".join(STEP_TYPES)
    assert error_lines(result) == [
        (f"ERROR: replay bundle bundles/mock_clock_001/workflow.json line 8: unknown action type 'tripleclick' "
         f"(known: {known}) in step 3")]
    assert not (pytester.path / "benchmark_results").exists() or not any(
        (pytester.path / "benchmark_results").rglob("results.jsonl"))


def test_an_unknown_action_in_a_script_is_a_usage_error_with_file_and_line(run, pytester):
    (pytester.path / "script.json").write_text(
        '{\n  "*": [\n    {"type": "click", "x": 1, "y": 2},\n    {"type": "tripleclick", "x": 3, "y": 4}\n  ]\n}\n')
    result = run("--bench=mock", "--bench-agent", "scripted", "--bench-agent-script", "script.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = error_lines(result)
    assert line.startswith("ERROR: --bench-agent-script: agent script script.json line 4: "
                           "*[1] type: Input should be 'click'")
    assert line.endswith("(got 'tripleclick')")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], "*--bench-agent replay needs --bench-replay-bundles DIR*"),
        (["--bench-replay-bundles", "nowhere"], "*--bench-replay-bundles nowhere is not a folder*"),
        (["--bench-replay-bundles", "empty"], "*--bench-replay-bundles empty holds no <task id>/workflow.json*"),
        (["--bench-replay-bundles", "empty/one"],
         ("*--bench-replay-bundles empty/one holds no <task id>/workflow.json "
          "(it is one bundle: give the folder above it)*")),
    ],
)
def test_bad_bundle_folders_are_usage_errors(run, pytester, args, expected):
    (pytester.path / "empty" / "one").mkdir(parents=True)
    (pytester.path / "empty" / "one" / "workflow.json").write_text('{"steps": []}')
    (pytester.path / "empty" / "one" / "manifest.json").write_text("{}")
    if args[-1:] == ["empty"]:
        (pytester.path / "empty" / "one" / "workflow.json").rename(pytester.path / "empty" / "one" / "w.json")
    result = run("--bench=mock", "--bench-agent", "replay", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([expected])


def test_the_ini_key_names_the_folder(run, pytester):
    bundle(pytester.path / "wf", "mock_chrome_001", {"steps": [{"action": "click", "target": {"name": "Submit"}}]})
    pytester.makeini("[pytest]\nagentbench_replay_bundles = wf\n")
    run("--bench=mock", "--bench-limit", "1", "--bench-agent", "replay").assert_outcomes(passed=1)


# -- validation: the message and the line ----------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"steps": [\n{"action": "click"}\n]}', "line 2: a click step needs a target (or at: [x, y] on a "),
        ('{"steps": [\n {"action": "click", "at": [0.5, 1.5]}]}', "line 2: at must be [x, y] as fractions of "),
        ('{"steps": [\n {"action": "click", "at": [0.5]}]}', "line 2: at must be [x, y] as fractions of "),
        ('{"steps": [\n {"action": "click", "at": [true, 0]}]}', "line 2: at must be [x, y] as fractions of "),
        ('{"steps": [{"action": "click", "target": {"name": "OK"},\n "at": [0.5, 0.5]}]}',
         "line 2: a step gives a target or at, not both in step 1"),
        ('{"steps": [{"action": "key", "key": "a",\n "at": [0.5, 0.5]}]}', "line 2: a key step takes no at"),
        ('{"steps": [{"action": "key", "key": "a"},\n {"action": "key"}]}', "line 2: a key step needs key"),
        ('{"steps": [\n {"action": "hotkey",\n  "keys": []}]}', "line 3: a hotkey step needs keys"),
        ('{"steps": [\n {"action": "type"}]}', "line 2: a type step needs text (a string) in step 1"),
        ('{"steps": [\n {"action": "wait", "seconds": -1}]}', "line 2: wait seconds must be a number >= 0"),
        ('{"steps": [\n {"action": "scroll",\n "direction": "sideways"}]}', "line 3: scroll direction must be"),
        ('{"steps": [\n {"action": "click", "target": {\n "label": "OK"}}]}', "line 3: unknown target key 'label'"),
        ('{"steps": [\n {"action": "click", "target": {}}]}', "line 2: target gives no signal"),
        ('{"steps": [\n {"action": "key", "key": "a",\n "expect": {"title": "x"}}]}',
         "line 3: unknown expect key 'title'"),
        ('{"steps": [\n {"action": "key", "key": "a", "wait": 2}]}', "line 2: unknown step key 'wait'"),
        ('{"steps": [\n "click"]}', 'line 2: expected an object with an "action" in step 1'),
        ('{\n"steps": {}}', 'line 2: a workflow needs a "steps" list'),
        ('{\n"schema": "other/v9", "steps": []}', "line 2: unknown schema 'other/v9'"),
        ('{"steps": [],\n "finish": {"banner": "x"}}', "line 2: unknown finish key 'banner'"),
        ('{"steps": [\n  {"action": "key",, }]}', "line 2: not valid JSON"),
    ],
)
def test_bad_workflows_name_the_line(tmp_path, text, message):
    path = tmp_path / "workflow.json"
    path.write_text(text)
    with pytest.raises(WorkflowError) as info:
        load_workflow(path, "replay bundle B")
    assert str(info.value).startswith(f"replay bundle B {message}"), str(info.value)


def test_the_line_is_the_kth_steps_even_when_strings_look_like_keys():
    steps = [{"action": "key", "key": "a", "note": '"action": "click"'} for _ in range(5)]
    text = "{\"steps\": [\n" + ",\n".join(json.dumps(s) for s in steps[:3]) + ", " + json.dumps(steps[3]) + ",\n" \
        + json.dumps({"note": "x\n".join("[{}]"), "action": "zap"}) + "\n]}"
    data = json.loads(text)
    assert [json_line(text, ("steps", k, "action")) for k in range(5)] == [2, 3, 4, 4, 5]
    with pytest.raises(WorkflowError, match=r"^F line 5: unknown action type 'zap'"):
        validate_workflow(data, text, "F")


def test_both_schema_ids_and_none_are_accepted(tmp_path):
    for schema in ("pytest-agentbench/workflow/v1", "pytest-agentbench/mockmed-workflow/v1", None):
        data = {"steps": [{"action": "wait"}]} | ({"schema": schema} if schema else {})
        assert validate_workflow(data, json.dumps(data), "F") is data


# -- the agent on its own ----------------------------------------------------------------------------
TASK = Task(task_id="t1")


def screen(*nodes: dict[str, Any], title: str | None = None) -> Observation:
    return Observation(accessibility_tree={"role": "window", "name": "W", "id": "0", "bbox": [0, 0, 1000, 1000],
                                           "children": list(nodes)}, viewport=(1000, 1000), window_title=title)


def button(node_id: str, name: str, x: int = 0) -> dict[str, Any]:
    return {"role": "button", "name": name, "id": node_id, "bbox": [x, 0, x + 100, 40], "children": []}


def play(workflow: dict[str, Any], observation: Observation) -> list[Action]:
    agent = ReplayAgent({"t1": validate_workflow(workflow, json.dumps(workflow), "F")})
    actions = []
    while not (actions and actions[-1].is_terminal):
        actions.append(agent.act(observation, TASK, []))
    return actions


def test_keyboard_steps_become_actions_then_done():
    workflow = {"steps": [{"action": "hotkey", "keys": ["ctrl", "s"]}, {"action": "key", "key": "enter"},
                          {"action": "type", "text": "hi"}, {"action": "wait", "seconds": 0.5},
                          {"action": "scroll", "direction": "up", "amount": 2}]}
    assert play(workflow, screen()) == [
        Action(type="hotkey", keys=["ctrl", "s"]), Action(type="key", key="enter"), Action(type="type", text="hi"),
        Action(type="wait", seconds=0.5), Action(type="scroll", scroll_direction="up", scroll_amount=2),
        Action(type="done")]


def test_targets_are_found_by_signals_and_ties_halt():
    two = screen(button("a", "Save"), button("b", "Save", x=500))
    by_name = {"steps": [{"action": "double_click", "target": {"name": "Save"}}]}
    assert play(by_name, two)[-1] == Action(
        type="fail", reason="step 1: two elements match 'Save' equally; halting")
    by_id = {"steps": [{"action": "right_click", "target": {"name": "Save", "id": "b"}}]}
    assert play(by_id, two) == [Action(type="right_click", target_id="b"), Action(type="done")]
    by_position = {"steps": [{"action": "click",
                              "target": {"role": "button", "name": "Save", "position": [0.55, 0.02]}}]}
    assert play(by_position, two)[0] == Action(type="click", target_id="b")
    # A full-signal target (as compiled) still needs THRESHOLD: name and role alone are a guess.
    renamed = {"steps": [{"action": "click",
                          "target": {"role": "button", "name": "Store", "id": "z", "position": [0.9, 0.9]}}]}
    assert play(renamed, two)[-1].reason == "step 1: no element matches 'Store' well enough; halting"


def test_type_with_a_target_checks_the_field_and_types_into_the_focused_one():
    workflow = {"steps": [{"action": "type", "text": "x", "target": {"role": "button", "name": "Save"}}]}
    assert play(workflow, screen(button("a", "Save")))[0] == Action(type="type", text="x")
    assert play(workflow, screen(button("a", "Open")))[0].type == "fail"


def test_scroll_on_a_target_gives_its_centre():
    workflow = {"steps": [{"action": "scroll", "target": {"name": "Save"}}]}
    assert play(workflow, screen(button("a", "Save", x=100)))[0] == Action(
        type="scroll", scroll_direction="down", target_id="a", x=150, y=20, unit="px")


def test_a_point_clicks_a_screen_without_a_tree():
    """A desktop seen only through screenshots has no tree to match: ``at`` says where, in
    fractions of the screen, whatever the screen's size; ``[1, 0]`` is a corner, not pixel (1, 0)."""
    workflow = {"steps": [{"action": "click", "at": [0.5, 0.25]}, {"action": "double_click", "at": [1, 0]},
                          {"action": "scroll", "direction": "up", "at": [0.1, 0.9]}]}
    actions = play(workflow, Observation(viewport=(1920, 1080)))
    assert actions == [Action(type="click", x=0.5, y=0.25, unit="fraction"),
                       Action(type="double_click", x=1.0, y=0.0, unit="fraction"),
                       Action(type="scroll", scroll_direction="up", x=0.1, y=0.9, unit="fraction"),
                       Action(type="done")]
    assert [a.to_pixels(1920, 1080) for a in actions[:3]] == [(960, 270), (1920, 0), (192, 972)]


def test_expectations_heading_title_and_banner():
    status = {"role": "status", "name": "Encounter saved for Jane", "id": "s", "children": []}
    title = {"role": "heading", "name": "Patients", "id": "h", "children": []}
    observation = screen(title, status, button("a", "OK"), title="Report - Editor")
    good = {"steps": [{"action": "key", "key": "a", "expect": {
        "heading": "Patients", "window_title": "Report - Editor", "window_title_contains": "Editor",
        "banner_prefix": "Encounter saved"}}], "finish": {"banner_prefix": "Encounter"}}
    assert play(good, observation)[-1] == Action(type="done")
    bad = {"steps": [{"action": "key", "key": "a", "expect": {"heading": "Chart"}}]}
    assert play(bad, observation)[-1].reason == "step 1: expected the screen 'Chart', saw 'Patients'; halting"
    reasoned = {"steps": [], "finish": {"banner_prefix": "Saved", "reason": "nothing was saved"}}
    assert play(reasoned, observation) == [Action(type="fail", reason="nothing was saved; halting")]


def test_no_model_no_cost_and_reset_starts_over():
    agent = ReplayAgent({"t1": {"steps": [{"action": "key", "key": "a"}]}}, source="B")
    assert agent.take_usage() is None and agent.estimate_step((1280, 720)) is None
    assert agent.act(screen(), TASK, []).type == "key"
    agent.reset()
    assert agent.act(screen(), TASK, []).type == "key"
    assert agent.act(screen(), Task(task_id="t2"), []) == Action(
        type="error", reason="no compiled workflow for task t2 in B")


def test_make_agent_without_config_is_a_usage_error():
    with pytest.raises(ConfigError, match="--bench-agent replay needs --bench-replay-bundles DIR"):
        make_agent(None)


def test_the_mockmed_arm_is_the_replay_agent():
    from pytest_agentbench.benches.mockmed.arms import CompiledReplay

    agent = CompiledReplay({"schema": "pytest-agentbench/mockmed-workflow/v1", "steps": []})
    assert isinstance(agent, ReplayAgent) and agent.name == "compiled"
    # A workflow written before ``finish`` existed still checks the saved banner.
    assert agent.act(screen(), Task(task_id="any"), []) == Action(
        type="fail", reason="the saved banner did not appear; halting")


def test_the_example_bundle_folder_validates():
    from pytest_agentbench.agents.replay import load_bundles

    assert list(load_bundles(EXAMPLE_BUNDLES)) == [NOTEPAD_TASK]
    assert (EXAMPLE_BUNDLES / NOTEPAD_TASK / "manifest.json").is_file()  # present and ignored
