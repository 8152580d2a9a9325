"""The Inspect AI export (``--bench-inspect-log``): a real run's records written as an Inspect eval log.

Every test checks the log's structure itself (the keys and types Inspect's pydantic models require,
the key order its streaming header reader needs, the file name ``inspect view`` lists), so the
file is meaningful without inspect-ai. Where inspect-ai is installed the same logs are also read
back with ``inspect_ai.log.read_eval_log`` and listed with ``list_eval_logs``, and Inspect's own
``accuracy``/``mean`` metrics recomputed over the samples must give the log's results.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import OUTCOME_BENCH, only_run_folder, results

from pytest_agentbench.record.inspect_log import build_log, check_path, log_file_name, write_inspect_log

#: ``inspect view`` lists a .json log only when its name matches this (inspect_ai.log._file).
LISTED_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}[:-]\d{2}[:-]\d{2}.*\.json$")
HEADER_KEYS = ["version", "status", "eval", "plan", "results", "stats"]
MOCK_IDS = ["mock_chrome_001", "mock_clock_001", "mock_file_explorer_001"]


@pytest.fixture(scope="session")
def inspect_ai_log():  # type: ignore[no-untyped-def]
    """``inspect_ai.log`` when inspect-ai is installed, else None.

    Session-scoped so inspect-ai (and the pydantic modules it loads) is imported before any
    pytester run takes its module snapshot: a module first imported inside an in-process run is
    dropped when the run ends, which breaks pydantic's generic models on the next use."""
    try:
        import inspect_ai.log
        import inspect_ai.scorer  # for recomputed()
    except ImportError:
        return None
    return inspect_ai.log


@pytest.fixture
def api(inspect_ai_log):  # type: ignore[no-untyped-def]
    """inspect_ai.log, or a skip here (a failure under CI, whose dev extra installs it)."""
    if inspect_ai_log is None:
        from conftest import browser_unavailable as required_in_ci

        required_in_ci("reading logs back needs inspect-ai (pip install inspect-ai)")
    return inspect_ai_log


def load(folder: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return json.loads((folder / "summary.json").read_text()), results(folder)


def check_structure(log: dict[str, Any]) -> None:
    """What Inspect's models require, checked by hand so the test means something without inspect-ai."""
    keys = list(log)
    assert keys[: len(HEADER_KEYS)] == HEADER_KEYS and keys[-1] == "samples"  # header before samples
    assert log["version"] == 2 and log["status"] in ("started", "success", "cancelled", "error")
    spec = log["eval"]
    for key, kind in (("task", str), ("task_id", str), ("run_id", str), ("created", str), ("model", str),
                      ("dataset", dict), ("config", dict)):
        assert isinstance(spec[key], kind), key
    assert re.fullmatch(r"[A-Za-z0-9]+", spec["task_id"])
    assert spec["created"].endswith("+00:00")
    assert isinstance(log["plan"], dict) and isinstance(log["stats"], dict)
    res = log["results"]
    assert isinstance(res["total_samples"], int) and isinstance(res["completed_samples"], int)
    for score in res["scores"]:
        assert {"name", "scorer", "metrics"} <= set(score)
        for name, metric in score["metrics"].items():
            assert metric["name"] == name and isinstance(metric["value"], (int, float))
    seen = set()
    for sample in log["samples"]:
        assert isinstance(sample["id"], str) and isinstance(sample["epoch"], int)
        assert (sample["id"], sample["epoch"]) not in seen
        seen.add((sample["id"], sample["epoch"]))
        assert isinstance(sample["input"], str) and isinstance(sample["target"], (str, list))
        for message in sample["messages"]:
            assert message["role"] in ("system", "user", "assistant", "tool")
            assert isinstance(message["content"], (str, list))
            for call in message.get("tool_calls") or []:
                assert {"id", "function", "arguments"} <= set(call) and isinstance(call["arguments"], dict)
        for score in (sample.get("scores") or {}).values():
            assert isinstance(score["value"], (str, int, float, bool))
        if "error" in sample:
            assert {"message", "traceback", "traceback_ansi"} <= set(sample["error"])
    assert res["total_samples"] == len(log["samples"])


def recomputed(samples: list[Any], scorer: str, metric: str) -> float:
    """Inspect's own metric over the samples' scores."""
    from inspect_ai.scorer import SampleScore, accuracy, mean

    fn = {"accuracy": accuracy, "mean": mean}[metric]()
    return fn([SampleScore(score=s.scores[scorer], sample_id=s.id) for s in samples if s.scores])


@pytest.fixture
def mock_run(run, pytester: pytest.Pytester) -> Path:
    result = run("--bench=mock", "--bench-limit", "3")
    assert result.ret == 0
    return only_run_folder(pytester.path)


@pytest.fixture
def outcome_run(run, pytester: pytest.Pytester) -> Path:
    """A run of the shared benchmark whose eight tasks end in every way an episode can end."""
    pytester.makeconftest(OUTCOME_BENCH)
    run("--bench=outcomes", "--bench-agent", "outcome-agent")
    return only_run_folder(pytester.path)


# -- a passing mock run -----------------------------------------------------------------------


def test_mock_run_exports_one_sample_per_item(mock_run: Path, tmp_path: Path) -> None:
    summary, records = load(mock_run)
    path = write_inspect_log(tmp_path / "logs", summary, records, mock_run)
    log = json.loads(path.read_text())
    assert path.parent == tmp_path / "logs" and LISTED_NAME.match(path.name)
    assert path.name == log_file_name(log["eval"]["created"], "mock", log["eval"]["task_id"])
    check_structure(log)
    assert log["status"] == "success"
    assert (log["eval"]["task"], log["eval"]["model"]) == ("mock", "agentbench/mock")
    assert log["eval"]["dataset"]["sample_ids"] == MOCK_IDS
    assert [(s["id"], s["epoch"]) for s in log["samples"]] == [(i, 1) for i in MOCK_IDS]
    assert log["results"] == {
        "total_samples": 3, "completed_samples": 3,
        "scores": [
            {"name": "success", "scorer": "success", "scored_samples": 3, "unscored_samples": 0, "params": {},
             "metrics": {"accuracy": {"name": "accuracy", "value": 1.0, "params": {}}}},
            {"name": "score", "scorer": "score", "scored_samples": 3, "unscored_samples": 0, "params": {},
             "metrics": {"mean": {"name": "mean", "value": 1.0, "params": {}}}},
        ]}
    first = log["samples"][0]
    assert first["input"] == "Mock task 1 in chrome domain: click the Submit button."
    assert first["target"] == ""
    # user instruction, the click as a tool call and its result, then the terminal "done"
    assert [m["role"] for m in first["messages"]] == ["user", "assistant", "tool", "assistant"]
    click = first["messages"][1]
    assert click["content"] == "click #4"
    assert click["tool_calls"] == [{"id": "step_0", "function": "click", "arguments": {"target_id": "4"},
                                    "type": "function"}]
    assert first["messages"][2]["tool_call_id"] == "step_0"
    assert first["messages"][3]["content"] == "done" and "tool_calls" not in first["messages"][3]
    assert first["output"]["completion"] == "done"
    assert first["scores"]["success"]["value"] == "C" and first["scores"]["score"]["value"] == 1.0
    assert first["scores"]["success"]["answer"] == "passed"
    assert first["scores"]["score"]["explanation"].splitlines() == [
        "clicked=['4'], typed='', final=done", "- \u2713 form submitted: Submit was clicked"]
    assert first["metadata"]["nodeid"] == "bench/mock::chrome::mock_chrome_001"
    assert first["metadata"]["domain"] == "chrome" and first["metadata"]["num_steps"] == 1
    assert log["eval"]["metadata"]["agentbench"]["run_name"] == mock_run.name


def test_mock_run_reads_back_in_inspect(api, mock_run: Path, tmp_path: Path) -> None:
    summary, records = load(mock_run)
    path = write_inspect_log(tmp_path, summary, records, mock_run)
    log = api.read_eval_log(str(path))
    assert log.status == "success" and log.eval.task == "mock" and log.eval.model == "agentbench/mock"
    assert [s.id for s in log.samples] == MOCK_IDS
    assert [(s.name, s.metrics[next(iter(s.metrics))].value) for s in log.results.scores] == [
        ("success", 1.0), ("score", 1.0)]
    assert log.samples[0].scores["success"].value == "C"
    assert log.samples[0].messages[1].tool_calls[0].function == "click"
    header = api.read_eval_log(str(path), header_only=True)  # the streaming reader inspect view uses
    assert header.samples is None and header.results.total_samples == 3
    listed = api.list_eval_logs(str(tmp_path))
    assert [(Path(i.name).name, i.task, i.task_id) for i in listed] == [(path.name, "mock", log.eval.task_id)]


# -- every way an episode can end -------------------------------------------------------------


def test_outcomes_scored_errors_and_not_evaluated(outcome_run: Path, tmp_path: Path) -> None:
    summary, records = load(outcome_run)
    log = json.loads(write_inspect_log(tmp_path, summary, records, outcome_run).read_text())
    check_structure(log)
    samples = {s["id"]: s for s in log["samples"]}
    scored = {k: (s["scores"]["success"]["value"], s["scores"]["score"]["value"])
              for k, s in samples.items() if "scores" in s}
    assert scored == {"pass": ("C", 1.0), "fail": ("I", 0.0), "partial": ("I", 0.5),
                      "agent_crash": ("I", 0.0), "agent_error": ("I", 0.0)}
    # errors that are not outcomes are Inspect sample errors, unscored
    assert {k: s["error"]["message"] for k, s in samples.items() if "error" in s} == {
        "infra": "environment reset failed: ConnectionError: VM unreachable",
        "checker_crash": "checker failed: RuntimeError: checker exploded"}
    assert samples["infra"]["error"]["traceback"].startswith("infrastructure error: ")
    # not evaluated: neither scored nor an error; the reason stays in the metadata
    assert "scores" not in samples["unevaluated"] and "error" not in samples["unevaluated"]
    assert samples["unevaluated"]["metadata"]["reason"] == "needs an LLM judge"
    assert samples["unevaluated"]["metadata"]["status"] == "skipped"
    # the episode that never ran still gets its instruction, from the manifest
    assert samples["infra"]["input"] == "infra" and [m["role"] for m in samples["infra"]["messages"]] == ["user"]
    assert samples["partial"]["scores"]["score"]["explanation"].splitlines() == ["failed: b", "- \u2713 a",
                                                                                  "- \u2717 b"]
    assert samples["agent_error"]["output"]["completion"] == "error 'gave up'"
    res = log["results"]
    assert (res["total_samples"], res["completed_samples"]) == (8, 6)
    metrics = {s["name"]: next(iter(s["metrics"].values()))["value"] for s in res["scores"]}
    assert metrics == {"success": summary["success_rate"], "score": summary["avg_score"]} == {"success": 0.2,
                                                                                              "score": 0.3}
    assert {s["name"]: (s["scored_samples"], s["unscored_samples"]) for s in res["scores"]} == {
        "success": (5, 3), "score": (5, 3)}


def test_outcomes_read_back_and_inspect_metrics_agree(api, outcome_run: Path, tmp_path: Path) -> None:
    summary, records = load(outcome_run)
    log = api.read_eval_log(str(write_inspect_log(tmp_path, summary, records, outcome_run)))
    assert len(log.samples) == 8
    errors = {s.id: s.error.message for s in log.samples if s.error}
    assert set(errors) == {"infra", "checker_crash"}
    assert recomputed(log.samples, "success", "accuracy") == pytest.approx(0.2)
    assert recomputed(log.samples, "score", "mean") == pytest.approx(0.3)
    by_name = {s.name: s for s in log.results.scores}
    assert by_name["success"].metrics["accuracy"].value == pytest.approx(0.2)
    assert by_name["score"].metrics["mean"].value == pytest.approx(0.3)


def test_no_outcomes_means_no_metrics(tmp_path: Path) -> None:
    """An all-error run has no success rate: Inspect metric values must be numbers, so none is written."""
    record = {"task_id": "t", "benchmark": "b", "agent": "a", "status": "error", "outcome": False,
              "error": "VM unreachable", "error_type": "infrastructure"}
    log = build_log(None, [record])
    check_structure(log)
    assert log["results"]["scores"] == [] and log["results"]["completed_samples"] == 0


# -- inputs: records only, callables, duplicates, usage --------------------------------------


def test_records_alone_without_summary_or_trajectories(mock_run: Path, tmp_path: Path) -> None:
    """Audit and trajectory-check runs pass records only: task, model and metrics come from them."""
    _, records = load(mock_run)
    log = build_log(None, records)
    check_structure(log)
    assert (log["eval"]["task"], log["eval"]["model"]) == ("mock", "agentbench/mock")
    assert [s["input"] for s in log["samples"]] == ["", "", ""]
    assert all([m["role"] for m in s["messages"]] == ["user"] for s in log["samples"])
    assert log["results"]["scores"][0]["metrics"]["accuracy"]["value"] == 1.0


def test_trajectories_from_a_callable_with_usage(inspect_ai_log, tmp_path: Path) -> None:
    steps = [
        {"index": 0, "label": "type 'hi'", "action": {"type": "type", "text": "hi"},
         "reasoning": "the field is focused",
         "usage": {"model": "claude-x", "input_tokens": 100, "output_tokens": 10, "cost_usd": 0.01, "calls": 1}},
        {"index": 1, "label": "answer '42'", "action": {"type": "answer", "answer": "42"},
         "usage": {"model": "claude-x", "input_tokens": 50, "output_tokens": 5, "cost_usd": 0.005, "calls": 1}},
    ]
    trajectory = {"task": {"instruction": "What is 6 x 7?", "evaluation_spec": {"answer": "42"}}, "steps": steps}
    record = {"task_id": "q1", "benchmark": "b", "agent": "api-claude", "status": "passed", "outcome": True,
              "success": True, "score": 1.0, "passed": True, "final_action": {"type": "answer", "answer": "42"}}
    path = write_inspect_log(tmp_path / "run.json", {"agent": "api-claude"}, [record, dict(record, task_id="q2")],
                             lambda r: trajectory if r["task_id"] == "q1" else None)
    assert path == tmp_path / "run.json"
    log = json.loads(path.read_text())
    check_structure(log)
    q1, q2 = log["samples"]
    assert (q1["input"], q1["target"], q1["output"]["completion"]) == ("What is 6 x 7?", '{"answer": "42"}', "42")
    assert q1["messages"][1]["content"] == [{"type": "reasoning", "reasoning": "the field is focused"},
                                            {"type": "text", "text": "type 'hi'"}]
    assert q1["model_usage"] == {"claude-x": {"input_tokens": 150, "output_tokens": 15, "total_tokens": 165,
                                              "total_cost": 0.015}}
    assert q2["model_usage"] == {} and q2["input"] == ""
    assert log["stats"]["model_usage"] == q1["model_usage"]
    if inspect_ai_log is None:
        return  # the structure was checked above; the read-back needs inspect-ai
    back = inspect_ai_log.read_eval_log(str(path))
    assert back.samples[0].model_usage["claude-x"].total_tokens == 165
    assert back.samples[0].messages[1].content[0].reasoning == "the field is focused"


def test_duplicate_ids_become_node_ids_and_repeats_epochs() -> None:
    def rec(bench: str, task_id: str) -> dict[str, Any]:
        return {"task_id": task_id, "benchmark": bench, "nodeid": f"bench/{bench}::d::{task_id}", "agent": "a",
                "status": "passed", "outcome": True, "success": True, "score": 1.0}

    log = build_log(None, [rec("one", "t1"), rec("two", "t1"), rec("one", "t1")])
    check_structure(log)
    assert [(s["id"], s["epoch"]) for s in log["samples"]] == [
        ("bench/one::d::t1", 1), ("bench/two::d::t1", 1), ("bench/one::d::t1", 2)]
    assert log["eval"]["config"] == {"epochs": 2} and log["eval"]["task"] == "one+two"
    assert log["eval"]["dataset"]["sample_ids"] == ["bench/one::d::t1", "bench/two::d::t1"]


# -- paths and arguments ----------------------------------------------------------------------


def test_same_run_exports_to_the_same_file(mock_run: Path, tmp_path: Path) -> None:
    summary, records = load(mock_run)
    first = write_inspect_log(tmp_path, summary, records, mock_run)
    second = write_inspect_log(tmp_path, summary, records, mock_run)
    assert first == second and sorted(p.name for p in tmp_path.iterdir()) == [first.name]


def test_file_path_is_used_as_given(tmp_path: Path) -> None:
    path = write_inspect_log(tmp_path / "deep" / "er" / "my-run.json", None, [], None, status="cancelled")
    assert path == tmp_path / "deep" / "er" / "my-run.json"
    log = json.loads(path.read_text())
    check_structure(log)
    assert log["status"] == "cancelled" and log["samples"] == [] and log["results"]["total_samples"] == 0


def test_check_path_accepts_files_and_directories_and_refuses_the_rest(tmp_path: Path) -> None:
    assert check_path(str(tmp_path / "x.json")) == tmp_path / "x.json"
    assert check_path(str(tmp_path / "logs")) == tmp_path / "logs"
    with pytest.raises(ValueError, match=r"only Inspect's JSON log format .* give a \.json file or a directory"):
        check_path("run.eval")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match=r"existing file that is not \.json"):
        check_path(str(tmp_path / "notes.txt"))
    with pytest.raises(ValueError, match="needs a PATH"):
        check_path(" ")


def test_bad_status_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'done' is not an Inspect eval status"):
        write_inspect_log(tmp_path, None, [], status="done")
    assert list(tmp_path.iterdir()) == []


def test_log_file_name_cleans_parts_as_inspect_does() -> None:
    name = log_file_name("2026-01-02T03:04:05+00:00", "mock+waa_x", "abc")
    assert name == "2026-01-02T03-04-05-00-00_mock-waa-x_abc.json"
    assert LISTED_NAME.match(name) and name[:-5].split("_")[1:] == ["mock-waa-x", "abc"]


# -- the option -------------------------------------------------------------------------------


def test_option_writes_a_listed_log_into_a_directory(run, pytester: pytest.Pytester) -> None:
    result = run("--bench=mock", "--bench-limit", "3", "--bench-inspect-log", "logs")
    assert result.ret == 0
    files = list((pytester.path / "logs").iterdir())
    assert len(files) == 1 and LISTED_NAME.match(files[0].name)
    result.stdout.fnmatch_lines([f"Inspect log:      logs/{files[0].name}"])
    log = json.loads(files[0].read_text())
    check_structure(log)
    assert [s["id"] for s in log["samples"]] == MOCK_IDS
    assert log["eval"]["metadata"]["agentbench"]["run_name"] == only_run_folder(pytester.path).name


def test_ini_key_names_a_file(run, pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nagentbench_inspect_log = out/run.json\n")
    result = run("--bench=mock", "--bench-limit", "2", "--bench-agent", "noop")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    log = json.loads((pytester.path / "out" / "run.json").read_text())
    check_structure(log)
    assert log["status"] == "success"  # the eval ran to the end; its tasks failed
    assert [s["scores"]["success"]["value"] for s in log["samples"]] == ["I", "I"]


def test_option_refuses_the_eval_format(run) -> None:
    result = run("--bench=mock", "--bench-limit", "1", "--bench-inspect-log", "run.eval")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--bench-inspect-log run.eval: only Inspect's JSON log format is written*"])


def test_trials_are_epochs_that_inspect_reads(run, pytester: pytest.Pytester, api, tmp_path: Path) -> None:
    run("--bench=mock", "--bench-limit", "2", "--bench-trials", "3", "--bench-inspect-log", str(tmp_path / "log.json"))
    raw = json.loads((tmp_path / "log.json").read_text())
    check_structure(raw)
    log = api.read_eval_log(str(tmp_path / "log.json"))
    assert log.eval.config.epochs == 3
    assert sorted((s.id, s.epoch) for s in log.samples) == sorted(
        (r["task_id"], r["trial"]) for r in results(only_run_folder(pytester.path)))
    assert raw["eval"]["metadata"]["agentbench"]["statistics"]["max_trials"] == 3
