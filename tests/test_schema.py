"""The run record matches its published JSON Schemas (``pytest_agentbench/record/schema``) and the
models they are generated from (``pytest_agentbench/record/models.py``).

Real runs through pytester (every way an episode can end, xdist, screenshots, baselines, a
fixture that fails before the episode) and through ``evaluate_agent_on_benchmark``; every
results.jsonl line, summary.json, trajectory.json and manifest.json they write is validated
against both.
"""

from __future__ import annotations

import copy
import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import Any, Literal, get_args

import pytest
from conftest import OUTCOME_BENCH, results
from jsonschema import Draft202012Validator
from pydantic import ValidationError

from pytest_agentbench import MockAgent, NoopAgent, WAAMockAdapter, evaluate_agent_on_benchmark
from pytest_agentbench.manifest import SCHEMA as MANIFEST_SCHEMA
from pytest_agentbench.metrics import Attempt, metrics
from pytest_agentbench.model import Action, ActionType, Criterion, Step, Task, Verdict
from pytest_agentbench.plugin.controller import ATTEMPT_FIELDS
from pytest_agentbench.record import schemas
from pytest_agentbench.record.models import RECORD_MODELS, AttemptSummary, ResultRecord, Status
from pytest_agentbench.record.run_files import RESULT_SCHEMA, SUMMARY_SCHEMA, TRAJECTORY_SCHEMA, base_payload

EXAMPLES = Path(__file__).resolve().parents[1] / "conftest_examples"
KINDS = ("result", "summary", "trajectory", "manifest")


def load_schema(kind: str) -> dict[str, Any]:
    path = resources.files("pytest_agentbench") / "record" / "schema" / f"{kind}.schema.json"
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def validators() -> dict[str, Draft202012Validator]:
    return {
        kind: Draft202012Validator(load_schema(kind), format_checker=Draft202012Validator.FORMAT_CHECKER)
        for kind in KINDS
    }


def problems(validator: Draft202012Validator, data: Any, where: str) -> list[str]:
    """What the published schema and the record model (the schema's source) find wrong with ``data``."""
    found = [f"{where} {e.json_path}: {e.message[:300]}" for e in validator.iter_errors(data)]
    kind = str(validator.schema["$id"]).rsplit(":", 1)[-1].removesuffix(".schema.json")
    try:
        RECORD_MODELS[kind].model_validate(data)
    except ValidationError as exc:
        found.append(f"{where} (model {RECORD_MODELS[kind].__name__}): {str(exc)[:300]}")
    return found


def validate_run(folder: Path, validators: dict[str, Draft202012Validator], *, manifest: bool = True) -> dict[str, Any]:
    """Validate every file of a run folder; return what was read, for further checks."""
    errors: list[str] = []
    records = results(folder)
    assert records, f"{folder} has no results"
    for number, record in enumerate(records, 1):
        errors += problems(validators["result"], record, f"results.jsonl line {number}")
    summary = json.loads((folder / "summary.json").read_text())
    errors += problems(validators["summary"], summary, "summary.json")
    trajectories = sorted(folder.glob("tasks/*/*.trajectory.json"))
    for path in trajectories:
        errors += problems(validators["trajectory"], json.loads(path.read_text()), str(path.relative_to(folder)))
    if manifest:
        errors += problems(validators["manifest"], json.loads((folder / "manifest.json").read_text()), "manifest.json")
    else:
        assert not (folder / "manifest.json").exists()
    assert not errors, "\n".join(errors)
    # Every path a record names exists in the folder.
    for record in records:
        for rel in [record["trajectory"], *record["screenshots"]]:
            if rel is not None:
                assert (folder / rel).is_file(), rel
    assert len(summary["tasks"]) == len(records)
    return {"records": records, "summary": summary, "trajectories": trajectories}


def the_run(pytester: pytest.Pytester, name: str) -> Path:
    folder = pytester.path / "benchmark_results" / name
    assert folder.is_dir()
    return folder


# -- the schemas themselves ------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_shipped_schema_is_what_the_models_generate(kind):
    shipped = (resources.files("pytest_agentbench") / "record" / "schema" / f"{kind}.schema.json").read_text(
        encoding="utf-8")
    assert shipped == schemas.schema_text(kind), (
        f"{kind}.schema.json differs from record/models.py: run python -m pytest_agentbench.record.schemas --write")


def test_schema_check_catches_a_stale_file(tmp_path, capsys):
    assert schemas.main(["--dir", str(tmp_path)]) == 1 and not list(tmp_path.iterdir())  # only --write writes
    assert schemas.main(["--write", "--dir", str(tmp_path)]) == 0
    assert schemas.main(["--check", "--dir", str(tmp_path)]) == 0 and not schemas.stale(tmp_path)
    assert schemas.main(["--dir", str(tmp_path)]) == 0
    path = tmp_path / "result.schema.json"
    edited = json.loads(path.read_text())
    edited["properties"]["status"]["enum"].append("rerun")  # the drift the generation exists to prevent
    path.write_text(json.dumps(edited, indent=2) + "\n")
    (tmp_path / "summary.schema.json").unlink()
    assert schemas.stale(tmp_path) == [path, tmp_path / "summary.schema.json"]
    assert schemas.main(["--check", "--dir", str(tmp_path)]) == 1
    assert "result.schema.json is out of date: run python -m pytest_agentbench.record.schemas --write" in \
        capsys.readouterr().err


def test_models_reject_what_the_schemas_reject(pytester, run):
    run("--bench=mock", "--bench-limit", "1", "--bench-run-name", "one").assert_outcomes(passed=1)
    record = results(the_run(pytester, "one"))[0]
    ResultRecord.model_validate(record)
    for broken in (dict(record, surprise=1), {k: v for k, v in record.items() if k != "status"},
                   dict(record, score=1.5), dict(record, error_type="network"), dict(record, status="PASSED"),
                   dict(record, trial=None), dict(record, attempts=[{"status": "passed"}])):
        with pytest.raises(ValidationError):
            ResultRecord.model_validate(broken)


def test_record_models_match_the_writers():
    assert set(AttemptSummary.model_fields) == set(ATTEMPT_FIELDS)
    assert get_args(AttemptSummary.model_fields["status"].annotation)[-1] == Literal["rerun"]
    assert set(get_args(Status)) == {"passed", "failed", "skipped", "error", "xfailed", "xpassed"}
    fields = {f.alias or name for name, f in ResultRecord.model_fields.items()}
    assert fields == set(load_schema("result")["properties"])


@pytest.mark.parametrize("kind", KINDS)
def test_schema_is_valid_draft_2020_12(kind):
    schema = load_schema(kind)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.get("properties", {}).items():
                assert "description" in value or "$ref" in value, f"{kind} {path}.{key} has no description"
            for key, value in node.items():
                walk(value, f"{path}.{key}")
        elif isinstance(node, list):
            for value in node:
                walk(value, path)

    walk(schema, kind)


def test_schema_ids_match_the_writers():
    assert load_schema("result")["properties"]["schema"]["const"] == RESULT_SCHEMA
    assert load_schema("trajectory")["properties"]["schema"]["const"] == TRAJECTORY_SCHEMA
    assert load_schema("summary")["properties"]["schema"]["const"] == SUMMARY_SCHEMA
    assert load_schema("manifest")["properties"]["schema"]["const"] == MANIFEST_SCHEMA


def test_schema_fields_match_the_models():
    result, trajectory, manifest = load_schema("result"), load_schema("trajectory"), load_schema("manifest")
    defs = trajectory["$defs"]
    # Shared definitions are copies; keep them identical.
    assert result["$defs"]["action"] == defs["action"]
    assert result["$defs"]["criterion"] == defs["criterion"]
    assert manifest["$defs"]["task"]["properties"] == defs["task"]["properties"]
    assert set(defs["action"]["properties"]) == set(Action.model_fields)
    assert defs["action"]["properties"]["type"]["enum"] == list(get_args(ActionType))
    assert set(defs["criterion"]["properties"]) == set(Criterion.model_fields)
    assert set(defs["verdict"]["properties"]) == set(Verdict.model_fields)
    assert set(defs["task"]["properties"]) == set(Task.model_fields)
    assert set(defs["step"]["properties"]) == (set(Step.model_fields) - {"observation"}) | {"label"}
    # The result record is base_payload plus what the writers add.
    payload = base_payload("bench/x::d::t", {"benchmark": "x", "task_id": "t"}, "a")
    assert set(result["properties"]) == set(payload) | {"expected_outcome", "status", "duration", "trial", "seed",
                                                        "attempts"}
    # The summary's metric keys are exactly what metrics() returns.
    keys = set(metrics([Attempt(True, 1.0, 1, 0.1, None, True)]))
    summary_metrics = load_schema("summary")["$defs"]["metricFields"]
    assert set(summary_metrics["properties"]) == set(summary_metrics["required"]) == keys


def test_schemas_are_strict(validators, pytester, run):
    run("--bench=mock", "--bench-limit", "1", "--bench-run-name", "one").assert_outcomes(passed=1)
    folder = the_run(pytester, "one")
    record = results(folder)[0]
    assert validators["result"].is_valid(record)
    for broken in (dict(record, surprise=1), {k: v for k, v in record.items() if k != "status"},
                   dict(record, score=1.5), dict(record, error_type="network"), dict(record, status="PASSED")):
        assert not validators["result"].is_valid(broken)
    summary = json.loads((folder / "summary.json").read_text())
    assert not validators["summary"].is_valid(dict(summary, surprise=1))
    bad = copy.deepcopy(summary)
    bad["by_domain"]["chrome"]["surprise"] = 1
    assert not validators["summary"].is_valid(bad)
    trajectory = json.loads((folder / record["trajectory"]).read_text())
    bad = copy.deepcopy(trajectory)
    bad["steps"][0]["action"]["type"] = "teleport"
    assert not validators["trajectory"].is_valid(bad)


# -- runs through pytest ---------------------------------------------------------------------------
def test_mock_agent_with_every_screenshot(validators, pytester, run):
    run("--bench=mock", "--bench-limit", "4", "--bench-screenshots=on",
        "--bench-run-name", "r").assert_outcomes(passed=4)
    seen = validate_run(the_run(pytester, "r"), validators)
    assert all(len(r["screenshots"]) == 3 for r in seen["records"])  # step 0, step 1 (done), final
    assert seen["summary"]["statuses"] == {"passed": 4}


def test_noop_agent(validators, pytester, run):
    run("--bench=mock", "--bench-limit", "3", "--bench-agent", "noop",
        "--bench-run-name", "r").assert_outcomes(failed=3)
    seen = validate_run(the_run(pytester, "r"), validators)
    assert {r["status"] for r in seen["records"]} == {"failed"}


def test_xdist_run(validators, pytester, run_sub):
    run_sub("--bench=mock", "--bench-limit", "4", "-n", "2", "--bench-run-name", "r").assert_outcomes(passed=4)
    seen = validate_run(the_run(pytester, "r"), validators)
    assert {r["worker"] for r in seen["records"]} <= {"gw0", "gw1"}


def test_scripted_agent_with_partial_credit_and_step_limit(validators, pytester, run):
    script = {
        "*": [{"type": "type", "text": "hello"}],  # typed, no OK: 0.3 + 0.2 = 0.5
        "mock_chrome_001": [{"type": "click", "target_node_id": "4"}],
        "mock_clock_001": [{"type": "click", "x": 0.1, "y": 0.1}, {"type": "hotkey", "keys": ["ctrl", "s"]},
                           {"type": "scroll", "scroll_direction": "down", "scroll_amount": 3}],
        "mock_file_explorer_001": [{"type": "drag", "x": 1, "y": 1, "end_x": 5, "end_y": 5, "unit": "px"},
                                   {"type": "wait", "seconds": 0}],
    }
    (pytester.path / "script.json").write_text(json.dumps(script))
    result = run("--bench=mock", "--bench-limit", "6", "--bench-agent", "scripted",
                 "--bench-agent-script", "script.json",
                 "--bench-max-steps", "2", "--bench-run-name", "r")
    result.assert_outcomes(passed=1, failed=5)
    seen = validate_run(the_run(pytester, "r"), validators)
    by_id = {r["task_id"]: r for r in seen["records"]}
    assert by_id["mock_chrome_002"]["score"] == pytest.approx(0.5)
    assert by_id["mock_clock_001"]["error_type"] == "agent"  # ran out of steps
    assert "step limit" in by_id["mock_clock_001"]["error"]
    assert seen["summary"]["max_steps"] == 2


def test_every_episode_end(validators, pytester, run):
    pytester.makeconftest(OUTCOME_BENCH)
    run("--bench=outcomes", "--bench-agent", "outcome-agent", "--bench-run-name", "r").assert_outcomes(
        passed=1, failed=4, skipped=1, errors=2)
    seen = validate_run(the_run(pytester, "r"), validators)
    statuses = {r["task_id"]: r["status"] for r in seen["records"]}
    assert statuses["infra"] == "error" and statuses["unevaluated"] == "skipped"
    kinds = {r["error_type"] for r in seen["records"]}
    assert kinds == {None, "agent", "infrastructure", "evaluation"}


def test_fixture_error_before_the_episode(validators, pytester, run):
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture(autouse=True)
        def database(request):
            if request.node.name.endswith("_002"):
                raise RuntimeError("database down")
        """
    )
    run("--bench=mock", "--bench-limit", "4", "--bench-run-name", "r").assert_outcomes(passed=3, errors=1)
    seen = validate_run(the_run(pytester, "r"), validators)
    broken = [r for r in seen["records"] if r["status"] == "error"]
    assert len(broken) == 1 and broken[0]["trajectory"] is None and broken[0]["error_type"] == "infrastructure"


def test_baseline_xfail_and_xpass(validators, pytester, run):
    run("--bench=mock", "--bench-limit", "2", "--bench-agent", "noop",
        "--bench-run-name", "base").assert_outcomes(failed=2)
    run("--bench=mock", "--bench-limit", "2", "--bench-agent", "noop", "--bench-baseline", "benchmark_results/base",
        "--bench-run-name", "known").assert_outcomes(xfailed=2)
    run("--bench=mock", "--bench-limit", "2", "--bench-baseline", "benchmark_results/base/results.jsonl",
        "--bench-run-name", "fixed").assert_outcomes(xpassed=2)
    for name, status in (("base", "failed"), ("known", "xfailed"), ("fixed", "xpassed")):
        seen = validate_run(the_run(pytester, name), validators)
        assert seen["summary"]["statuses"] == {status: 2}


def test_own_benchmark_example_with_extra_keys(validators, pytester, run):
    pytester.makeconftest((EXAMPLES / "own_benchmark" / "conftest.py").read_text(encoding="utf-8"))
    run("--bench=todo", "--bench-agent", "todo-agent", "--bench-screenshots=on",
        "--bench-run-name", "r").assert_outcomes(passed=3)
    seen = validate_run(the_run(pytester, "r"), validators)
    assert all(r["extra"]["criteria_met"] >= 2 for r in seen["records"])


def test_min_success_gate_still_writes_a_valid_record(validators, pytester, run):
    result = run("--bench=mock", "--bench-limit", "2", "--bench-agent", "noop", "--bench-min-success", "50%",
                 "--bench-run-name", "r")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    validate_run(the_run(pytester, "r"), validators)


# -- runs through the Python API -----------------------------------------------------------------
def test_python_api_writes_valid_records(validators, tmp_path):
    evaluate_agent_on_benchmark(MockAgent(), WAAMockAdapter(num_tasks=3), results_dir=tmp_path, run_name="mock")
    evaluate_agent_on_benchmark(NoopAgent(), WAAMockAdapter(num_tasks=3), results_dir=tmp_path, run_name="noop")
    evaluate_agent_on_benchmark(MockAgent(), WAAMockAdapter(num_tasks=3), results_dir=tmp_path, run_name="ids",
                                task_ids=["mock_chrome_001", "no_such_task"])
    for name in ("mock", "noop", "ids"):
        validate_run(tmp_path / name, validators, manifest=False)
    unknown = [r for r in results(tmp_path / "ids") if r["task_id"] == "no_such_task"]
    assert unknown[0]["error_type"] == "infrastructure" and unknown[0]["trajectory"] is not None


def test_python_api_every_episode_end(validators, tmp_path):
    namespace: dict[str, Any] = {}
    exec(compile(OUTCOME_BENCH, "outcome_bench", "exec"), namespace)
    records = evaluate_agent_on_benchmark(namespace["OutcomeAgent"](), namespace["OutcomeBench"](),
                                          results_dir=tmp_path, run_name="ends")
    assert {r.error_type for r in records} == {None, "agent", "infrastructure", "evaluation"}
    validate_run(tmp_path / "ends", validators, manifest=False)


def test_python_api_writes_nothing_without_results_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    evaluate_agent_on_benchmark(MockAgent(), WAAMockAdapter(num_tasks=2))
    assert list(tmp_path.iterdir()) == []


def test_runs_with_trials_and_a_resume_match_the_schemas(validators, pytester, run):
    run("--bench=mock", "--bench-limit", "2", "--bench-trials", "3", "--bench-run-name", "r")
    seen = validate_run(the_run(pytester, "r"), validators)
    assert {r["trial"] for r in seen["records"]} == {1, 2, 3} and len(seen["trajectories"]) == 6
    assert seen["summary"]["statistics"]["ci_method"] == "wilson-clustered"
    folder = the_run(pytester, "r")
    lines = (folder / "results.jsonl").read_text().splitlines()
    (folder / "results.jsonl").write_text("\n".join(lines[:3]) + "\n")
    run("--bench=mock", "--bench-limit", "2", "--bench-trials", "3", "--bench-resume", str(folder))
    seen = validate_run(folder, validators)
    assert len(seen["records"]) == 6


# -- the fast record builders write what the models would dump ------------------------------------
ACTIONS = [
    Action(type="click", target_node_id="4"),
    Action(type="click", x=0.5, y=0.25, unit="fraction", reason="the OK button"),
    Action(type="hotkey", keys=["ctrl", "s"]),
    Action(type="scroll", x=3, y=4, scroll_direction="down", scroll_amount=3),
    Action(type="drag", x=1, y=1, end_x=5, end_y=5, unit="px"),
    Action(type="type", text=""),
    Action(type="wait", seconds=0),
    Action(type="answer", answer="42", raw={"when": (1, 2), "blob": b"png", "nested": {"k": [1.5, None]}}),
    Action(type="done"),
]


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: a.type)
def test_action_json_is_the_models_dump(action):
    from pytest_agentbench.record.run_files import action_json

    assert action_json(action) == action.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    assert set(vars(action)) == set(Action.model_fields)  # the builder reads the fields from __dict__


def test_criterion_json_is_the_models_dump():
    from pytest_agentbench.record.run_files import criterion_json

    for criterion in (Criterion(name="a", passed=True), Criterion(name="b", passed=None, detail="d", expected=3,
                                                                   actual={"x": (1, 2), "when": b"x"})):
        assert criterion_json(criterion) == criterion.model_dump(mode="json")
    assert set(Criterion.model_fields) == {"name", "passed", "detail", "expected", "actual"}
    assert set(Verdict.model_fields) == {"score", "passed", "criteria", "reason"}  # the trajectory's verdict keys


def test_task_from_item_builds_the_validated_task():
    from pytest_agentbench.plugin.state import _TASK_DEFAULTS, TASK_KEY, task_from_item

    assert set(_TASK_DEFAULTS) == set(Task.model_fields) - {"task_id"}
    for name, default in _TASK_DEFAULTS.items():
        expected = Task.model_fields[name].get_default(call_default_factory=True)
        assert (list(default) if isinstance(default, tuple) else default) == expected, name

    class Item:
        stash = pytest.Stash()

    for data in ({"task_id": "t", "benchmark": "b", "domain": "default"},
                 {"task_id": "t", "benchmark": "b", "domain": "d", "tags": ["x"], "time_limit_steps": 3,
                  "raw_config": {"a": [1]}, "evaluation_spec": {"e": 1}, "instruction": "do"}):
        Item.stash[TASK_KEY] = data
        task = task_from_item(Item())  # type: ignore[arg-type]
        assert task == Task.model_validate(data) and task.model_fields_set == set(data)
        task.tags.append("changed")
        task.raw_config["b"] = 2
        assert "changed" not in data.get("tags", []) and "b" not in data.get("raw_config", {})


def test_task_files_take_values_json_has_no_form_for(tmp_path):
    from pytest_agentbench.record.runfolder import RunFolder

    folder = RunFolder(tmp_path)
    digest = hashlib.sha1(b"a b").hexdigest()[:8]
    assert folder.task_files("mock", "a b", ".trial-2") == (f"tasks/mock/a_b-{digest}.trial-2",
                                                             f"tasks/mock/a_b-{digest}.trial-2.trajectory.json")
    assert folder.task_files("mock", "t")[1] == folder.relative(folder.trajectory_path("mock", "t"))
    assert folder.task_files("mock", "t")[0] == folder.relative(folder.task_dir("mock", "t"))
    folder.write_task_json(folder.absolute("x.json"), {"task": {"raw_config": {"path": Path("a/b"), "blob": b"y"}}})
    assert json.loads((tmp_path / "x.json").read_text()) == {"task": {"raw_config": {"path": "a/b", "blob": "y"}}}
