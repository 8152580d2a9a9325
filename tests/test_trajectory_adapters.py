"""The trace adapters on real recordings (tests/data/trajectory/SOURCE.md): a Fixtura 2.0.1
canonical trace and its branch, a LangChain 1.8 run tree, OpenAI chat messages and this plugin's
own run record, plus a live ``--bench=mock`` run read back. Where an adapter departs from the
reference tool's (openeval-core 0.2.1), the test quotes the reference's result from the research
notes as ``REF``."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from uuid import UUID, uuid4

import pytest
from pydantic import BaseModel, Field

from pytest_agentbench.trajectory.adapters import (
    from_fixtura_trace,
    from_langchain_run,
    from_openai_messages,
    from_run_record,
    langchain_run_dict,
    verdict_from_check_drift,
)
from pytest_agentbench.trajectory.metrics import score_all
from pytest_agentbench.trajectory.model import TestCase, TraceFormatError

DATA = Path(__file__).parent / "data" / "trajectory"


def by_metric(trace, case) -> dict[str, tuple[float, bool | None]]:
    return {r.metric: (round(r.score, 4), r.passed) for r in score_all(trace, case)}


def shape(trace) -> list[tuple]:
    return [(s.step_id, s.type, s.tool_name, s.tool_args, s.denied, s.divergent) for s in trace.steps]


@pytest.fixture
def zstd():
    """The zstandard module. Skipped without it, except under CI, which installs the dev extra."""
    try:
        import zstandard
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("zstandard is not installed; CI installs the dev extra, which must carry it")
        pytest.skip("reading zstd-compressed Fixtura traces needs zstandard (pip install zstandard)")
    return zstandard


# -- OpenAI chat messages ---------------------------------------------------------------------


def test_openai_conversation() -> None:
    messages = json.loads((DATA / "openai_messages.json").read_text())
    trace = from_openai_messages(messages, task_id="flight")
    assert trace.task_id == "flight"
    assert trace.input.startswith("Book me the cheapest flight")
    assert trace.final_output == "Booked UA1, seat 12A, for $289. Confirmation X7K2P."
    assert [(s.type, s.tool_name, s.source_id) for s in trace.steps] == [
        ("thought", None, None),  # REF: the assistant's text sent with tool calls is dropped
        ("tool_call", "search_flights", "call_9Qm2"),
        ("tool_result", "search_flights", "call_9Qm2"),
        ("tool_call", "book", "call_4Hx8"),
        ("tool_call", "send_email", "call_7Kp1"),
        ("tool_result", "send_email", "call_7Kp1"),  # answered out of order, attributed by id
        ("tool_result", "book", "call_4Hx8"),
        ("output", None, None),  # REF: no output step
    ]
    assert trace.steps[3].tool_args == {"flight": "UA1", "seat": "12A"}
    assert trace.steps[6].tool_result == '{"confirmation": "X7K2P"}'
    case = TestCase(task_id="flight", expected_tool_calls=[
        {"tool": "search_flights", "args": {"from": "SFO", "to": "JFK"}}, {"tool": "book", "args": {"flight": "UA1"}}],
        expected_output_contains=["X7K2P"], max_steps=3)
    assert by_metric(trace, case) == {
        "tool_selection": (1.0, True), "argument_correctness": (1.0, True),
        "step_efficiency": (0.6667, False),  # send_email was not needed: 3 calls for 2
        "goal_completion": (1.0, True), "denial_recovery": (0.0, None), "divergence": (0.0, None),
        "fixture_freshness": (0.0, None)}


def test_openai_accepts_a_request_body_and_sdk_objects() -> None:
    class Message:  # what the openai SDK returns: a pydantic model with model_dump()
        def __init__(self, **data):
            self.data = data

        def model_dump(self):
            return self.data

    body = {"model": "gpt-x", "messages": [
        Message(role="user", content="hi"),
        Message(role="assistant", content=None,
                tool_calls=[{"id": "c1", "function": {"name": "a", "arguments": "{}"}}])]}
    trace = from_openai_messages(body)
    assert trace.input == "hi" and shape(trace) == [(1, "tool_call", "a", {}, False, False)]


def test_openai_arguments_that_are_already_an_object_are_taken() -> None:
    # REF: TypeError "the JSON object must be str, bytes or bytearray, not dict", uncaught
    trace = from_openai_messages([{"role": "assistant", "tool_calls": [
        {"id": "c1", "function": {"name": "a", "arguments": {"x": 1}}}]}])
    assert trace.steps[0].tool_args == {"x": 1} and trace.steps[0].error is None


def test_openai_arguments_that_are_not_an_object_are_an_error_on_the_step() -> None:
    # REF: valid JSON that is not an object passes through as tool_args=[1, 2] (which then crashes
    # ArgumentCorrectness); invalid JSON becomes tool_args={"raw": "..."}, an argument named "raw".
    trace = from_openai_messages([{"role": "assistant", "tool_calls": [
        {"id": "c1", "function": {"name": "a", "arguments": "[1, 2]"}},
        {"id": "c2", "function": {"name": "b", "arguments": "{not json"}},
        {"id": "c3", "function": {"name": "c"}}]}])
    first, second, third = trace.steps
    assert first.tool_args is None and first.error == "tool arguments are a JSON list, not an object"
    assert first.content == "[1, 2]"
    assert second.tool_args is None and second.error.startswith("tool arguments are not valid JSON: ")
    assert third.tool_args == {} and third.error is None


def test_openai_calls_sharing_an_id_are_answered_in_order() -> None:
    # REF: the second call overwrites the first in its id map: the first result is attributed to
    # the second call's tool and the second result to none.
    REF = [("b", "r1"), (None, "r2")]
    trace = from_openai_messages([
        {"role": "assistant", "tool_calls": [{"id": "dup", "function": {"name": "a", "arguments": "{}"}},
                                             {"id": "dup", "function": {"name": "b", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "dup", "content": "r1"},
        {"role": "tool", "tool_call_id": "dup", "content": "r2"},
        {"role": "tool", "tool_call_id": "unknown", "content": "r3"}])
    results = [(s.tool_name, s.tool_result) for s in trace.steps if s.type == "tool_result"]
    assert results[:2] != REF
    assert results == [("a", "r1"), ("b", "r2"), (None, "r3")]


def test_openai_results_without_a_call_id_are_attributed_to_no_call() -> None:
    # Two parallel calls without ids, answered out of order: position pairing (as before) gave
    # "rb" to a and "ra" to b. REF attributes an id-less result to no call: tool_name None.
    REF = [(None, "rb"), (None, "ra"), (None, "rx")]
    trace = from_openai_messages([
        {"role": "assistant", "tool_calls": [{"function": {"name": "a", "arguments": "{}"}},
                                             {"id": "", "function": {"name": "b", "arguments": "{}"}}]},
        {"role": "tool", "content": "rb"},
        {"role": "tool", "tool_call_id": "", "content": "ra"},
        {"role": "tool", "tool_call_id": None, "name": "x", "content": "rx"}])
    results = [(s.tool_name, s.tool_result) for s in trace.steps if s.type == "tool_result"]
    # the same, except that a result naming its own tool keeps that name
    assert results[:2] == REF[:2] and results[2] == ("x", "rx")


def test_openai_legacy_function_call_and_multimodal_content() -> None:
    # REF: function_call is ignored; a list content becomes its Python repr as the input.
    REF_INPUT = "[{'type': 'text', 'text': 'multimodal'}]"
    trace = from_openai_messages([
        {"role": "user", "content": [{"type": "text", "text": "multimodal"},
                                     {"type": "image_url", "image_url": {"url": "x"}}]},
        {"role": "assistant", "content": None, "function_call": {"name": "lookup", "arguments": "{\"q\": 1}"}},
        {"role": "function", "name": "lookup", "content": "found"},
        {"role": "assistant", "content": [{"type": "text", "text": "the answer"}]}])
    assert trace.input != REF_INPUT and trace.input == "multimodal"
    assert shape(trace)[:2] == [(1, "tool_call", "lookup", {"q": 1}, False, False),
                                (2, "tool_result", "lookup", None, False, False)]
    assert trace.final_output == "the answer"
    assert from_openai_messages([], final_output="given", input_text="q").final_output == "given"


@pytest.mark.parametrize(("messages", "message"), [
    ({"role": "user"}, "OpenAI messages must be a list of message objects, got dict"),
    (["hello"], r"OpenAI messages\[0\] must be an object, got str"),
    ([{"role": "assistant", "tool_calls": {"id": 1}}], r"OpenAI messages\[0\].tool_calls must be a list, got dict"),
])
def test_openai_unreadable_messages_are_named(messages, message) -> None:
    with pytest.raises(TraceFormatError, match=message):
        from_openai_messages(messages)


# -- LangChain run trees ----------------------------------------------------------------------


def langchain_run() -> dict:
    return json.loads((DATA / "langchain_run.json").read_text())


def test_langchain_real_run_tree_as_a_dict() -> None:
    trace = from_langchain_run(langchain_run())
    assert trace.input == "Tokyo" and trace.final_output == "done: 20F in Tokyo"
    assert [(s.type, s.tool_name, s.tool_args, s.tool_result, s.error) for s in trace.steps] == [
        ("thought", None, None, None, None),  # REF: llm runs are dropped
        ("tool_call", "get_weather", {"city": "Tokyo", "units": "F"}, None, None),
        ("tool_result", "get_weather", None, "20F in Tokyo", None),
        # REF: the error only on the result step, as the exception repr plus the whole traceback
        ("tool_call", "explode", {"x": 1}, None, "ValueError('kaboom')"),
        ("tool_result", "explode", None, None, "ValueError('kaboom')"),
    ]
    assert trace.steps[0].content == "I will look up the weather."
    assert trace.metadata["run_id"] == langchain_run()["id"]
    assert 0 < trace.metadata["duration_seconds"] < 5
    assert trace.steps[1].timestamp <= trace.steps[2].timestamp <= trace.steps[3].timestamp
    assert all(s.latency_ms is not None and s.latency_ms >= 0 for s in trace.steps if s.type == "tool_result")
    case = TestCase(task_id="lc", expected_tool_calls=[{"tool": "get_weather", "args": {"city": "Tokyo"}}],
                    expected_output_contains=["20F"], timeout_seconds=5)
    scores = by_metric(trace, case)
    assert scores["tool_selection"] == (1.0, True) and scores["goal_completion"] == (1.0, True)
    assert scores["step_efficiency"] == (0.5, False)  # explode was one call too many


def test_langchain_run_objects_are_read_by_attribute() -> None:
    def obj(data: dict) -> SimpleNamespace:
        return SimpleNamespace(**{**data, "child_runs": [obj(c) for c in data.get("child_runs") or []]})

    assert shape(from_langchain_run(obj(langchain_run()))) == shape(from_langchain_run(langchain_run()))


def test_langchain_run_saved_with_model_dump_alone_is_refused_not_read_as_no_calls() -> None:
    # langchain-core 1.8.3: run.model_dump(mode="json") of a run that called get_weather holds no
    # child_runs (RunTree excludes them). Read as it was, the run "called no tool": Tool Selection
    # failed it with "Not called: get_weather" while REF, given the run object, counts the call.
    saved = json.loads((DATA / "langchain_model_dump.json").read_text())
    assert saved["run_type"] == "chain" and "child_runs" not in saved
    with pytest.raises(TraceFormatError, match=r"^LangChain run: run 'agent' has no 'child_runs': run.model_dump\(\) "
                                               r"leaves a run's children \(its tool calls\) out; save the tree with "
                                               r"pytest_agentbench.trajectory.adapters.langchain_run_dict\(run\)$"):
        from_langchain_run(saved)
    # A LangSmith export that lists children it does not hold is refused the same way
    export = {**langchain_run(), "child_runs": None, "child_run_ids": ["a", "b"]}
    with pytest.raises(TraceFormatError, match="lists 2 child runs in child_run_ids but child_runs holds none"):
        from_langchain_run(export, where="run.json")


class PydanticRun(BaseModel):
    """A run model shaped like LangChain's RunTree (pydantic, ``child_runs`` excluded from its
    serialisation), for the object path without langchain-core installed."""

    id: UUID
    name: str
    run_type: str
    inputs: dict[str, object]
    outputs: dict[str, object] | None = None
    error: str | None = None
    start_time: datetime
    end_time: datetime | None = None
    dotted_order: str = ""
    child_runs: list[PydanticRun] = Field(default_factory=list, exclude=True)


def pydantic_tree(data: dict) -> PydanticRun:
    fields = {k: v for k, v in data.items() if k in PydanticRun.model_fields and k != "child_runs"}
    return PydanticRun(**fields, child_runs=[pydantic_tree(c) for c in data["child_runs"]])


def test_langchain_run_objects_are_read_through_their_own_serialisation() -> None:
    run = pydantic_tree(langchain_run())
    assert "child_runs" not in run.model_dump(mode="json")  # as RunTree's
    saved = json.loads(json.dumps(langchain_run_dict(run)))  # JSON-ready, children kept
    assert [c["name"] for c in saved["child_runs"]] == ["FakeListChatModel", "get_weather", "explode"]
    assert from_langchain_run(run).to_dict() == from_langchain_run(saved).to_dict()
    assert shape(from_langchain_run(run)) == shape(from_langchain_run(langchain_run()))
    # A value that is not JSON (a set, an object) reads as its serialisation gives it, not as a Python object
    run.child_runs[1].inputs["tags"] = {"x"}
    run.child_runs[1].inputs["when"] = datetime(2026, 1, 2, tzinfo=timezone.utc)
    args = from_langchain_run(run).steps[1].tool_args
    assert args["tags"] == ["x"] and args["when"] == "2026-01-02T00:00:00Z"
    # Deep trees of objects: no recursion
    root = leaf = PydanticRun(id=uuid4(), name="t0", run_type="tool", inputs={}, start_time=datetime.now(timezone.utc))
    for depth in range(1, 2000):
        child = PydanticRun(id=uuid4(), name=f"t{depth}", run_type="tool", inputs={}, start_time=leaf.start_time)
        leaf.child_runs.append(child)
        leaf = child
    assert len(from_langchain_run(root).steps) == 4000


def test_langchain_real_run_tree_objects_when_langchain_is_installed() -> None:
    pytest.importorskip("langchain_core", reason="the LangChain object path needs langchain-core (optional)")
    from langsmith.run_trees import RunTree

    def tree(data: dict) -> RunTree:
        children = [tree(c) for c in data.get("child_runs") or []]
        fields = {k: v for k, v in data.items() if k in RunTree.model_fields and k != "child_runs"}
        return RunTree(**fields, child_runs=children)

    assert shape(from_langchain_run(tree(langchain_run()))) == shape(from_langchain_run(langchain_run()))


def test_langchain_nesting_order_and_edge_runs() -> None:
    def run(name, kind, children=(), order=None, **extra):
        return {"name": name, "run_type": kind, "child_runs": list(children), "dotted_order": order, **extra}

    nested = run("agent", "chain", [
        run("outer", "tool", [run("inner", "tool", order="2", inputs={"q": 1})], order="3", inputs={"p": 0}),
        run("first", "tool", order="1", inputs="plain text")], outputs={"a": 1, "b": 2})
    trace = from_langchain_run(nested)
    assert [(s.type, s.tool_name) for s in trace.steps] == [
        ("tool_call", "first"), ("tool_result", "first"),  # sorted by dotted_order
        ("tool_call", "outer"), ("tool_call", "inner"), ("tool_result", "inner"), ("tool_result", "outer")]
    assert trace.steps[0].tool_args == {"input": "plain text"}
    assert trace.final_output == '{"a": 1, "b": 2}'  # REF: the first value, "1"
    lonely = from_langchain_run(run("lonely_tool", "tool", inputs={"query": "x"}, error="boom"))
    assert [s.type for s in lonely.steps] == ["tool_call", "tool_result"]
    assert lonely.input == "x" and lonely.final_output == "Error: boom"
    graph = from_langchain_run(run("graph", "chain",
                                   outputs={"messages": [{"content": "hi"}, {"content": "bye"}], "n": 2}))
    assert graph.final_output == "bye"
    with pytest.raises(TraceFormatError, match="a LangChain run must have 'run_type' or 'child_runs'; got dict"):
        from_langchain_run({"name": "x"})


def test_langchain_deep_trees_need_no_recursion() -> None:
    root = leaf = {"name": "t0", "run_type": "tool", "child_runs": []}
    for depth in range(1, 3000):
        child = {"name": f"t{depth}", "run_type": "tool", "child_runs": []}
        leaf["child_runs"].append(child)
        leaf = child
    assert len(from_langchain_run(root).steps) == 6000


# -- Fixtura .trace files ---------------------------------------------------------------------


PLAIN = DATA / "plain"  # the same recordings decompressed: readable without zstandard


def test_fixtura_canonical_trace() -> None:
    trace = from_fixtura_trace(PLAIN / "canon.trace", task_id="canonical-task", final_output="Done")
    assert shape(trace) == [
        (1, "thought", None, None, False, False),
        (2, "tool_call", "filesystem_tool", {"operation": "read", "path": "/tmp/fx/test.txt"}, False, False),
        (3, "tool_call", "sqlite_tool", {"operation": "read", "query": "SELECT * FROM test"}, True, False),
        (4, "tool_call", "http_tool", {"url": "http://disallowed.com"}, True, False),
    ]
    first, allowed, denied, invalid = trace.steps
    assert first.content == "PROMPT:\nRead the local file\n\nCOMPLETION:\nI'll use filesystem tool"
    assert (first.tokens, first.model, first.provider, first.finish_reason) == ({"input": 10, "output": 10},
                                                                                "test", "test", "stop")
    assert allowed.tool_result == {"content": "test_content secret-[REDACTED]"} and allowed.timestamp == 200.0
    assert denied.error == "Database read access denied." and denied.tool_result is None
    assert invalid.error == "Validation error: ('method',): Field required"
    assert [s.source_id for s in trace.steps] == ["step-000001", "step-000002", "step-000003", "step-000004"]
    assert trace.metadata["fingerprint"]["algorithm"] == "sha256-truncated-128"
    case = TestCase(task_id="canonical-task", expected_tool_calls=[
        {"tool": "filesystem_tool", "args": {"operation": "read"}}, {"tool": "sqlite_tool"}])
    # REF (probe output, same trace and final output "Done"): 0.5 F, 1.0 T, 0.667 F, 1.0 T "No
    # expected state", 0.5 F (the denial at the last step is not recovered by the final output),
    # 1.0 T "No Verified Replay divergence", 0.0 F "UNVERIFIED" (Fixtura never writes a verdict)
    assert by_metric(trace, case) == {
        "tool_selection": (0.5, False), "argument_correctness": (1.0, True), "step_efficiency": (0.6667, False),
        "goal_completion": (0.0, None), "denial_recovery": (1.0, True), "divergence": (0.0, None),
        "fixture_freshness": (0.0, None)}
    no_answer = from_fixtura_trace(PLAIN / "canon.trace")
    # no final output: neither denial is followed by an allowed call or an output (REF's rule gives 0.0 too)
    assert by_metric(no_answer, case)["denial_recovery"] == (0.0, False)
    # `fixtura check-drift canon.trace` printed PASS (exit 0) when it was recorded
    checked = from_fixtura_trace(PLAIN / "canon.trace", metadata={"verdict": verdict_from_check_drift(0)})
    assert by_metric(checked, case)["fixture_freshness"] == (1.0, True)


def test_fixtura_branch_is_its_parents_prefix_then_its_own_steps() -> None:
    trace = from_fixtura_trace(PLAIN / "branch1.trace")
    # REF: divergent on step 2 (the branch point, the last shared step): Divergence 0.25, "step 2 of 4"
    REF_DIVERGENCE = 0.25
    assert shape(trace) == [
        (1, "thought", None, None, False, False),
        (2, "tool_call", "filesystem_tool", {"operation": "read", "path": "/tmp/fx/test.txt"}, False, False),
        (3, "thought", None, None, False, True),
        (4, "tool_call", "filesystem_tool", {"operation": "write", "path": "/tmp/fx/branch_output.txt",
                                             "content": "Branched Output: write a file instead"}, False, False),
    ]
    assert trace.metadata == {"fixtura_parent": "canon", "fixtura_divergence_step_id": "step-000002",
                              "divergence_checked": True}
    result = score_all(trace, TestCase(task_id="b"), ["divergence"])[0]
    assert result.score != REF_DIVERGENCE
    assert (result.score, result.passed, result.details) == (0.5, False, "Divergence detected at step 3 of 4.")


@pytest.mark.parametrize("name", ["canon.trace", "branch1.trace"])
def test_fixtura_compressed_recordings_read_as_their_plain_lines(zstd, tmp_path, name) -> None:
    assert from_fixtura_trace(DATA / name) == from_fixtura_trace(PLAIN / name)
    # one frame holding every line reads the same as Fixtura's frame per line
    single = tmp_path / "canon.trace"
    single.write_bytes(zstd.ZstdCompressor().compress((PLAIN / "canon.trace").read_bytes()))
    assert from_fixtura_trace(single) == from_fixtura_trace(PLAIN / "canon.trace")


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def tool_event(step_id: str, name: str = "a", decision: str = "allowed", **extra) -> dict:
    return {"event_type": "tool_call", "step_id": step_id, "timestamp": 1.0, "tool_name": name, "arguments": {"x": 1},
            "permission_decision": decision, "permission_reason": None, "rate_limit_decision": "allowed",
            "rate_limit_reason": None, "response": None, "latency_ms": 3, **extra}


def test_fixtura_decisions_and_step_ids(tmp_path) -> None:
    trace = from_fixtura_trace(write_jsonl(tmp_path / "t.trace", [
        {"event_type": "trace_header", "schema_version": 2, "fingerprint": {"tools": {}}, "verdict": "DRIFTED"},
        tool_event("s2-step-3", decision="validation_error", permission_reason="bad schema"),
        tool_event("step_01", decision="denied"),
        tool_event("step-1", rate_limit_decision="rate_limited", rate_limit_reason="5 per minute"),
        tool_event("step-2", rate_limit_decision="circuit_broken"),
        tool_event("step-3", response={"ok": True}),
    ]), metadata={"verdict": "PASS"})
    # REF: step_id "s2-step-3" -> 23 (digits only), and "step_01" then "step-1" raise
    # "Step ID collision after int conversion"; ids here are positions, the original kept.
    assert [(s.step_id, s.source_id) for s in trace.steps] == [
        (1, "s2-step-3"), (2, "step_01"), (3, "step-1"), (4, "step-2"), (5, "step-3")]
    # REF: rate-limited calls count as allowed calls; they did not run.
    assert [(s.denied, s.error) for s in trace.steps] == [
        (True, "bad schema"), (True, "denied"), (True, "rate_limited: 5 per minute"), (True, "circuit_broken"),
        (False, None)]
    assert trace.steps[4].tool_result == {"ok": True}
    assert trace.metadata["verdict"] == "PASS"  # the caller's verdict wins over the header's


@pytest.mark.parametrize(("records", "message"), [
    ([{"event_type": "checkpoint", "step_id": "1"}], "t.trace:1: unknown event_type 'checkpoint'"),
    ([tool_event("1", decision="maybe")], "t.trace:1: unknown permission_decision 'maybe'"),
    ([tool_event("1", tool_name=5)], "t.trace:1: tool_call tool_name must be a string or null, got int"),
    ([{"event_type": "trace_header", "parent_trace_id": "gone", "divergence_step_id": "1"}],
     "t.trace: parent trace gone.trace not found next to it"),
    ([{"event_type": "trace_header", "parent_trace_id": "gone"}],
     "t.trace: trace_header needs both parent_trace_id and divergence_step_id"),
    ([{"event_type": "trace_header", "parent_trace_id": "t", "divergence_step_id": "1"}],
     "its lineage loops back to itself"),
    ([["not", "an", "object"]], "t.trace:1: a record must be a JSON object, got list"),
])
def test_fixtura_unreadable_traces_are_named(tmp_path, records, message) -> None:
    # REF: a missing parent is silently skipped, unknown events and decisions silently dropped, a
    # parent without a divergence step read as no parent; Fixtura's own reader (TraceReader,
    # fixtura 2.0.1) refuses each of them, and so do we.
    with pytest.raises(TraceFormatError, match=message.replace("(", r"\(")):
        from_fixtura_trace(write_jsonl(tmp_path / "t.trace", records))


def test_fixtura_records_read_as_the_reference_and_fixtura_read_them(tmp_path) -> None:
    # Each of these was refused before; the reference and Fixtura's own reader read them.
    odd = from_fixtura_trace(write_jsonl(tmp_path / "odd.trace", [
        tool_event("1", arguments=[1, 2]), tool_event("2", arguments="x=1"), tool_event("3", tool_name=None),
        {k: v for k, v in tool_event("4").items() if k != "tool_name"},
        {"event_type": "trace_header", "fingerprint": {"v": 2}},  # a header after the steps
    ]))
    # REF: the same steps, tool_args as recorded, tool_name None, the header's fingerprint
    assert [(s.tool_name, s.tool_args) for s in odd.steps] == [("a", [1, 2]), ("a", "x=1"), (None, {"x": 1}),
                                                               (None, {"x": 1})]
    assert odd.metadata == {"fingerprint": {"v": 2}}
    scores = by_metric(odd, TestCase(task_id="t", expected_tool_calls=[{"tool": "a", "args": {"x": 1}}] * 2))
    assert scores["tool_selection"] == (1.0, True)  # REF 1.0
    assert scores["argument_correctness"] == (0.0, False)  # REF 0.0, "Metric raised an error" (a tool expected twice)
    assert scores["step_efficiency"] == (0.5, False)  # REF 0.5
    # U+2028 and U+0085 are not line ends inside a JSON string (Fixtura's reader splits at \n and \r only)
    text = tmp_path / "text.trace"
    text.write_text(json.dumps(tool_event("1", arguments={"note": "a\u2028b\x85c"}), ensure_ascii=False) + "\r\n",
                    encoding="utf-8")
    assert from_fixtura_trace(text).steps[0].tool_args == {"note": "a\u2028b\x85c"}
    # a header after the steps still counts (the first one anywhere, as the reference reads it)
    late = from_fixtura_trace(write_jsonl(tmp_path / "late.trace", [
        tool_event("1"), {"event_type": "trace_header", "fingerprint": {"v": 1}},
        {"event_type": "trace_header", "fingerprint": {"v": 2}}]))
    assert late.metadata == {"fingerprint": {"v": 1}} and len(late.steps) == 1


def test_fixtura_branch_point_missing_from_the_parent_takes_all_of_it(tmp_path) -> None:
    # REF and Fixtura's reader: the whole parent, then the branch's own steps (it was refused before).
    # REF marks no step (none has the branch point's id) and passes Divergence; the branch's first
    # own step is where it departs, as for any branch.
    write_jsonl(tmp_path / "p.trace", [tool_event("step-1"), tool_event("step-2", name="b")])
    write_jsonl(tmp_path / "b.trace", [{"event_type": "trace_header", "parent_trace_id": "p",
                                        "divergence_step_id": "step-9"}, tool_event("step-3", name="c")])
    trace = from_fixtura_trace(tmp_path / "b.trace")
    assert [(s.tool_name, s.divergent) for s in trace.steps] == [("a", False), ("b", False), ("c", True)]


def test_fixtura_branch_without_steps_of_its_own_diverges_at_the_branch_point(tmp_path) -> None:
    # A branch recorded nothing after the branch point: it departed from its recording there. It
    # passed Divergence before (nothing marked, 1.0 "No divergence"); REF fails it the same way.
    write_jsonl(tmp_path / "p.trace", [tool_event("step-1"), tool_event("step-2"), tool_event("step-3")])
    write_jsonl(tmp_path / "b.trace", [{"event_type": "trace_header", "parent_trace_id": "p",
                                        "divergence_step_id": "step-2"}])
    trace = from_fixtura_trace(tmp_path / "b.trace")
    assert [(s.source_id, s.divergent) for s in trace.steps] == [("step-1", False), ("step-2", True)]
    result = score_all(trace, TestCase(task_id="b"), ["divergence"])[0]
    # REF: 0.5, False, "Divergence detected at step 2 of 2."
    assert (result.score, result.passed, result.details) == (0.5, False, "Divergence detected at step 2 of 2.")


DEEP = "[" * 100_000 + "]" * 100_000  # deeper than the JSON reader's recursion goes


def test_json_nested_too_deeply_for_the_reader_is_named_not_a_recursion_error(tmp_path) -> None:
    deep = tmp_path / "deep.trace"
    deep.write_text('{"event_type": "tool_call", "arguments": ' + DEEP + "}\n")
    with pytest.raises(TraceFormatError, match=r"deep\.trace:1: not a JSON line \(nested more than 200 levels deep"):
        from_fixtura_trace(deep)
    record = tmp_path / "deep.trajectory.json"
    record.write_text('{"schema": "pytest-agentbench/trajectory/v1", "steps": ' + DEEP + "}")
    with pytest.raises(TraceFormatError, match=r"deep\.trajectory\.json: not a JSON file \(nested more than 200"):
        from_run_record(record)
    call = from_openai_messages([{"role": "assistant", "tool_calls": [
        {"id": "1", "function": {"name": "a", "arguments": DEEP}}]}]).steps[0]
    assert call.tool_args is None and call.error.startswith("tool arguments are not valid JSON: nested more than 200")
    # a value that deep built in Python shows as a placeholder where it is shown as text
    value: object = "x"
    for _ in range(100_000):
        value = [value]
    run = {"name": "r", "run_type": "chain", "child_runs": [], "inputs": {"a": value, "b": 1}, "outputs": value}
    trace = from_langchain_run(run)
    assert trace.input == "<dict nested too deeply to read>"
    assert trace.final_output == "<list nested too deeply to read>"


def test_fixtura_missing_file_is_an_error(tmp_path) -> None:
    # REF: a missing file returns an empty trace, no error
    with pytest.raises(TraceFormatError, match=r"Fixtura trace not found: .*nope\.trace"):
        from_fixtura_trace(tmp_path / "nope.trace")


def test_fixtura_without_zstandard_names_the_install(monkeypatch, tmp_path) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import zstandard -> ImportError
    with pytest.raises(TraceFormatError, match=r"canon.trace is zstd-compressed and reading it needs the zstandard "
                                               r"package: pip install zstandard"):
        from_fixtura_trace(DATA / "canon.trace")
    # uncompressed JSON lines need nothing
    assert len(from_fixtura_trace(write_jsonl(tmp_path / "plain.trace", [tool_event("1")])).steps) == 1


def test_fixtura_corrupt_zstd_and_binary_garbage(zstd, tmp_path) -> None:
    broken = tmp_path / "broken.trace"
    broken.write_bytes((DATA / "canon.trace").read_bytes()[:40])
    with pytest.raises(TraceFormatError, match=r"broken.trace: not a readable zstd stream "
                                               r"\(the last frame is cut off\)"):
        from_fixtura_trace(broken)
    trailing = tmp_path / "trailing.trace"
    trailing.write_bytes((DATA / "canon.trace").read_bytes() + b"\x28\xb5\x2f\xfdjunk")
    with pytest.raises(TraceFormatError, match=r"trailing\.trace: not a readable zstd stream"):
        from_fixtura_trace(trailing)
    garbage = tmp_path / "garbage.trace"
    garbage.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(TraceFormatError, match=r"garbage\.trace: neither zstd-compressed nor UTF-8 JSON lines"):
        from_fixtura_trace(garbage)


def test_verdict_from_check_drift() -> None:
    assert [verdict_from_check_drift(code) for code in (0, 1, 2)] == ["PASS", "DRIFTED", "UNVERIFIED"]
    with pytest.raises(ValueError, match="fixtura check-drift exits 0, 1 or 2, got 3"):
        verdict_from_check_drift(3)


# -- this plugin's run records ----------------------------------------------------------------


def test_run_record_of_the_mock_benchmark() -> None:
    trace = from_run_record(DATA / "mock_clock_001.trajectory.json")
    assert trace.task_id == "mock_clock_001" and trace.input.startswith("Mock task 1 in clock domain")
    assert [(s.type, s.tool_name, s.tool_args, s.content) for s in trace.steps] == [
        ("tool_call", "click", {"target_id": "4"}, ""), ("output", None, None, "done")]
    assert trace.actual_state == {"outcome": "passed", "verdict_passed": True, "verdict_score": 1.0,
                                  "criteria": {"form submitted": True}}
    assert trace.metadata["nodeid"] == "bench/mock::clock::mock_clock_001"
    assert trace.metadata["benchmark"] == "mock" and trace.metadata["duration_seconds"] == 0.000107
    case = TestCase(task_id="mock_clock_001", expected_tool_calls=[{"tool": "click", "args": {"target_id": "4"}}],
                    expected_final_state={"verdict_passed": True}, max_steps=1, timeout_seconds=1)
    assert {m: p for m, (_, p) in by_metric(trace, case).items()} == {
        "tool_selection": True, "argument_correctness": True, "step_efficiency": True, "goal_completion": True,
        "denial_recovery": None, "divergence": None, "fixture_freshness": None}


def test_run_record_nulls_answers_and_failures() -> None:
    record = json.loads((DATA / "mock_clock_001.trajectory.json").read_text())
    # evaluate_agent_on_benchmark writes every action field, nulls included: the same trace
    with_nulls = copy.deepcopy(record)
    with_nulls["steps"][0]["action"].update({"x": None, "y": None, "text": None, "reason": None, "raw": None})
    assert from_run_record(with_nulls) == from_run_record(record)
    record["steps"][0]["reasoning"] = "Submit is #4"
    record["steps"][0]["action"].update({"type": "type", "text": "milk", "reason": "Submit is #4"})
    record["steps"][1]["action"] = {"type": "answer", "answer": "42"}
    record["steps"].append({"index": 2, "action": {"type": "fail", "reason": "stuck"}, "reasoning": None,
                            "seconds": 0.5,
                            "screenshot_path": None, "cost_usd": 0.0, "label": "fail",
                            "usage": {"input_tokens": 10, "output_tokens": 2, "cost_usd": 0.0, "calls": 1,
                                      "model": "m"}})
    trace = from_run_record(record)
    assert [(s.type, s.tool_name, s.tool_args, s.content, s.error) for s in trace.steps] == [
        ("tool_call", "type", {"target_id": "4", "text": "milk"}, "Submit is #4", None),
        ("output", None, None, "42", None), ("output", None, None, "fail", "stuck")]
    assert trace.final_output == "42"
    assert (trace.steps[2].tokens, trace.steps[2].model, trace.steps[2].latency_ms) == ({"input": 10, "output": 2},
                                                                                        "m", 500.0)


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda r: r.update(schema="other/v2"), "not a trajectory record \\(schema 'other/v2'"),
    (lambda r: r.pop("task"), "'task.task_id' is missing"),
    (lambda r: r.update(steps={}), "'steps' must be a list"),
    (lambda r: r["steps"][0].pop("action"), r"steps\[0\] has no action with a 'type'"),
])
def test_run_record_unreadable_records_are_named(mutate, message) -> None:
    record = json.loads((DATA / "mock_clock_001.trajectory.json").read_text())
    mutate(record)
    with pytest.raises(TraceFormatError, match=message):
        from_run_record(record)


def test_run_record_files_that_cannot_be_read(tmp_path) -> None:
    with pytest.raises(TraceFormatError, match=r"run record not found: .*missing\.json"):
        from_run_record(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(TraceFormatError, match=r"bad\.json: not a JSON file"):
        from_run_record(tmp_path / "bad.json")
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(TraceFormatError, match=r"list\.json: a run record is a JSON object, got list"):
        from_run_record(str(tmp_path / "list.json"))


def test_a_live_run_is_checked_afterwards(run, pytester) -> None:
    result = run("--bench=mock", "--bench-limit", "3", "--bench-agent", "noop")
    result.assert_outcomes(failed=3)
    records = sorted(pytester.path.glob("benchmark_results/*/tasks/mock/*.trajectory.json"))
    assert len(records) == 3
    case = TestCase(task_id="any", expected_tool_calls=[{"tool": "click"}], expected_final_state={"outcome": "passed"})
    for path in records:
        trace = from_run_record(path)
        assert [s.type for s in trace.steps] == ["output"]  # noop says "done" at once
        scores = by_metric(trace, case)
        assert scores["tool_selection"] == (0.0, False) and scores["goal_completion"] == (0.0, False)
        assert scores["argument_correctness"] == (0.0, None)


# -- odd input: a readable trace or a TraceFormatError, never another exception -------------------

ODD = [None, 0, 1.5, True, "", "x", "{}", "[1]", "{bad", [], [1, "a"], {}, {"x": 1}, {"content": 3}, ["x", {"text": 1}],
       {"name": "a", "arguments": "{}"}, {"id": ["unhashable"]}]


def _odd_message(rng) -> object:
    message = {key: rng.choice([*ODD, rng.choice(["user", "assistant", "tool", "function", "system"])])
               for key in rng.sample(["role", "content", "tool_calls", "tool_call_id", "function_call", "name"],
                                     rng.randrange(7))}
    if rng.random() < 0.5:
        message["role"] = rng.choice(["user", "assistant", "tool", "function"])
    if rng.random() < 0.4:
        message["tool_calls"] = [{"id": rng.choice(ODD), "function": rng.choice([*ODD, {"name": rng.choice(ODD),
                                                                                      "arguments": rng.choice(ODD)}])}
                                 for _ in range(rng.randrange(3))]
    return message if rng.random() < 0.95 else rng.choice(ODD)


def _odd_run(rng, depth=0) -> object:
    run = {key: rng.choice(ODD) for key in rng.sample(["name", "inputs", "outputs", "error", "start_time", "end_time",
                                                       "id", "dotted_order"], 4)}
    run["run_type"] = rng.choice(["tool", "llm", "chain", None, 3])
    run["child_runs"] = [_odd_run(rng, depth + 1) for _ in range(rng.randrange(3 if depth < 3 else 1))]
    return run


def test_adapters_never_fail_with_anything_but_a_trace_format_error() -> None:
    import random

    rng = random.Random(11)
    record = json.loads((DATA / "mock_clock_001.trajectory.json").read_text())
    readable = 0
    for _ in range(1500):
        attempts = [
            lambda: from_openai_messages([_odd_message(rng) for _ in range(rng.randrange(6))]),
            lambda: from_langchain_run(_odd_run(rng)),
            lambda: from_run_record({**record, "steps": [rng.choice([{"action": {"type": rng.choice(["click", "answer",
                                                                                                     "fail", 3])}},
                                                                     {"action": rng.choice(ODD)}, rng.choice(ODD)])],
                                     "verdict": rng.choice([*ODD, {"criteria": rng.choice(ODD)}]),
                                     "task": rng.choice([*ODD, record["task"]])}),
        ]
        for attempt in attempts:
            try:
                trace = attempt()
            except TraceFormatError:
                continue
            readable += 1
            score_all(trace, TestCase(task_id="odd", expected_tool_calls=[{"tool": "a", "args": {"x": 1}}],
                                      max_steps=2))
    assert readable > 1000


def test_a_zstd_bomb_is_refused_in_bounded_memory(zstd, tmp_path) -> None:
    """A few KB of zstd that decompress to 512 MB: refused at the size limit, never held whole."""
    bomb = tmp_path / "bomb.trace"
    compressor = zstd.ZstdCompressor(level=3).compressobj()
    spaces = b" " * (1 << 20)
    with bomb.open("wb") as handle:
        for _ in range(512):
            handle.write(compressor.compress(spaces))
        handle.write(compressor.flush())
    assert bomb.stat().st_size < 100_000
    # VmHWM (this process's peak resident memory): unlike ru_maxrss it does not carry over the
    # peak of the process that started it (an xdist worker).
    probe = (
        "import re, sys\n"
        "from pytest_agentbench.trajectory.adapters import TraceFormatError, from_fixtura_trace\n"
        "try:\n"
        f"    from_fixtura_trace({str(bomb)!r})\n"
        "except TraceFormatError as exc:\n"
        "    print(exc)\n"
        "status = open('/proc/self/status').read()\n"
        "print(int(re.search(r'VmHWM:\\s+(\\d+) kB', status).group(1)) // 1024)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and len(done.stdout.strip().splitlines()) == 2, (done.stdout, done.stderr)
    message, peak_mb = done.stdout.strip().splitlines()
    assert "decompresses to more than 67108864 bytes" in message, done.stderr
    assert int(peak_mb) < 400, f"peak {peak_mb} MB"


def test_an_oversized_trace_file_is_refused(tmp_path, monkeypatch) -> None:
    from pytest_agentbench.trajectory import adapters

    big = tmp_path / "big.trace"
    big.write_text('{"event_type": "llm_call"}\n' * 100)
    monkeypatch.setattr(adapters, "MAX_TRACE_BYTES", 1000)
    with pytest.raises(TraceFormatError, match=r"big.trace: cannot read the trace: 2700 bytes, more than the 1000"):
        adapters.from_fixtura_trace(big)


def test_oversized_case_and_trace_json_files_are_refused_unread(tmp_path, monkeypatch) -> None:
    from pytest_agentbench.trajectory import adapters, cases

    big = tmp_path / "big.case.json"
    big.write_text(json.dumps({"input": "x" * 5000}))
    monkeypatch.setattr(adapters, "MAX_TRACE_BYTES", 1000)
    with pytest.raises(cases.CaseSyntaxError, match="may be at most 1000 bytes"):
        cases.read_case_file(big)
    with pytest.raises(cases.CaseError, match="may be at most 1000 bytes"):
        cases._read_json(big)
