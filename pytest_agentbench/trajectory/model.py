"""Traces and test cases, as plain slotted dataclasses: scoring a thousand traces must cost next
to nothing, and these types are built by adapters, never from untrusted input without checks.

``Trace.from_dict`` / ``TestCase.from_dict`` read the JSON shapes of the reference tool's
``trace.json`` and ``testcase.json`` (openeval 0.2.1), checking the structure and naming the bad
field; ``to_dict`` writes them back. ``case_problems`` lists what is wrong with a test case's
expectations, so a loader can refuse a broken test case up front instead of letting every metric
report "not evaluated".
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

#: ``Trace.metadata`` keys the metrics read.
FINGERPRINT = "fingerprint"  # a Fixtura fingerprint (any non-null value)
VERDICT = "verdict"  # a drift verdict: PASS, DRIFTED or UNVERIFIED (``fixtura check-drift``)
FINGERPRINT_VERDICT = "fingerprint_verdict"  # the same, under the reference tool's second name
DIVERGENCE_CHECKED = "divergence_checked"  # true: the trace was compared with a recording
DURATION_SECONDS = "duration_seconds"  # wall time of the whole run, for ``timeout_seconds``

STEP_TYPES = ("thought", "tool_call", "tool_result", "output")


class TraceFormatError(ValueError):
    """A trace or test case that cannot be read. The message is one line naming the bad part."""


#: What a value nested too deeply to encode is shown as (``dump_json``).
TOO_DEEP = "nested too deeply to read"


def dump_json(value: Any, **options: Any) -> str:
    """``json.dumps(value, default=str, **options)`` that never raises: a value nested too deeply
    (or containing itself) is shown as a placeholder naming its type."""
    try:
        return json.dumps(value, default=str, **options)
    except (RecursionError, ValueError):
        return f"<{type(value).__name__} {TOO_DEEP}>"


@dataclass(slots=True)
class TraceStep:
    """One step of an agent's trace (the reference tool's TraceStep, same field names).

    ``source_id`` keeps the step's id in the format it came from (a Fixtura ``step_id``, an
    OpenAI ``tool_call_id``, a LangChain run id), since ``step_id`` is just the position from 1.
    """

    step_id: int
    type: str  # "thought" | "tool_call" | "tool_result" | "output"
    content: str = ""
    tool_name: str | None = None
    tool_args: object = None  # an object as a rule; kept as recorded when an agent sent something else
    tool_result: Any = None
    timestamp: float = 0.0
    error: str | None = None
    denied: bool = False
    finish_reason: str | None = None
    provider: str | None = None
    model: str | None = None
    tokens: dict[str, int] | None = None
    latency_ms: float | None = None
    divergent: bool = False
    source_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _STEP_FIELDS}


_STEP_FIELDS = tuple(TraceStep.__dataclass_fields__)


@dataclass(slots=True)
class Trace:
    task_id: str
    input: str = ""
    steps: list[TraceStep] = field(default_factory=list)
    final_output: str = ""
    actual_state: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "input": self.input, "steps": [s.to_dict() for s in self.steps],
                "final_output": self.final_output, "actual_state": self.actual_state, "metadata": self.metadata}

    @classmethod
    def from_dict(cls, data: Any, where: str = "trace") -> Trace:
        """Read the reference tool's ``trace.json`` shape. Unlike the reference, ``step_id``,
        ``content`` and ``timestamp`` may be left out (position from 1, "", 0.0), and a wrong type
        is refused with the field's name instead of surfacing later as a metric error."""
        if not isinstance(data, Mapping):
            raise TraceFormatError(f"{where}: expected a JSON object, got {_kind(data)}")
        task_id = _require_str(data, "task_id", where)
        # Absent: no steps. Present, it must be a list: ``null`` is a trace that lost its steps, not
        # a run that took none (the reference refuses it too: "'NoneType' object is not iterable").
        raw_steps = data.get("steps", [])
        if not isinstance(raw_steps, list):
            raise TraceFormatError(f"{where}: 'steps' must be a list, got {_kind(raw_steps)}")
        steps = [_step_from_dict(s, i, where) for i, s in enumerate(raw_steps)]
        metadata = _object(data.get("metadata", {}), "metadata", where)
        problem = duration_problem(metadata)
        if problem:
            raise TraceFormatError(f"{where}: {problem}")
        return cls(
            task_id=task_id,
            input=_text(data.get("input", ""), "input", where),
            steps=steps,
            final_output=_text(data.get("final_output", ""), "final_output", where),
            actual_state=_object(data.get("actual_state", {}), "actual_state", where),
            metadata=metadata,
        )


@dataclass(slots=True)
class TestCase:
    """What the trace is judged against. ``max_steps`` and ``timeout_seconds`` are budgets
    checked by Step Efficiency and ``expected_output_contains`` is part of Goal Completion (the
    reference tool reads none of the three). ``None`` means no budget."""

    __test__ = False  # not a pytest test class

    task_id: str
    input: str = ""
    expected_tool_calls: list[dict[str, Any]] = field(default_factory=list)
    expected_final_state: dict[str, Any] = field(default_factory=dict)
    expected_output_contains: list[str] = field(default_factory=list)
    max_steps: int | None = None
    timeout_seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "input": self.input, "expected_tool_calls": self.expected_tool_calls,
                "expected_final_state": self.expected_final_state,
                "expected_output_contains": self.expected_output_contains, "max_steps": self.max_steps,
                "timeout_seconds": self.timeout_seconds}

    @classmethod
    def from_dict(cls, data: Any, where: str = "test case") -> TestCase:
        """Read the reference tool's ``testcase.json`` shape and refuse a broken one
        (``case_problems``) with the first problem. ``max_steps`` and ``timeout_seconds`` default
        to no budget (the reference's loader defaults them to 10 and 10.0 but never reads them)."""
        if not isinstance(data, Mapping):
            raise TraceFormatError(f"{where}: expected a JSON object, got {_kind(data)}")
        case = cls(
            task_id=_require_str(data, "task_id", where),
            input=_text(data.get("input", ""), "input", where),
            expected_tool_calls=_or(data, "expected_tool_calls", []),
            expected_final_state=_or(data, "expected_final_state", {}),
            expected_output_contains=_or(data, "expected_output_contains", []),
            max_steps=data.get("max_steps"),
            timeout_seconds=data.get("timeout_seconds"),
        )
        problems = case_problems(case)
        if problems:
            raise TraceFormatError(f"{where}: {problems[0]}")
        return case


@dataclass(slots=True, frozen=True)
class MetricResult:
    """``passed`` is True, False or None (not evaluated: never counted as passed or failed; its
    ``score`` is 0.0 and means nothing)."""

    metric: str  # the id, e.g. "tool_selection"
    name: str  # the display name, e.g. "Tool Selection Accuracy"
    score: float
    passed: bool | None
    details: str


def case_problems(case: TestCase) -> list[str]:
    """What is wrong with a test case's expectations, one line each (empty: nothing). The metrics
    report the relevant problem as "not evaluated"; a loader should refuse the file instead."""
    problems = []
    problem = expected_calls_problem(case.expected_tool_calls)
    if problem:
        problems.append(problem)
    if not isinstance(case.expected_final_state, dict):
        problems.append(f"expected_final_state must be an object, got {_kind(case.expected_final_state)}")
    contains = case.expected_output_contains
    if not isinstance(contains, list) or not all(isinstance(s, str) for s in contains):
        problems.append("expected_output_contains must be a list of strings")
    steps = case.max_steps
    if steps is not None and (type(steps) is not int or steps < 0):
        problems.append(f"max_steps must be a whole number >= 0 or null, got {steps!r}")
    timeout = case.timeout_seconds
    if timeout is not None and (type(timeout) not in (int, float) or not timeout > 0):
        problems.append(f"timeout_seconds must be a number > 0 or null, got {timeout!r}")
    return problems


def duration_problem(metadata: Any) -> str | None:
    """What is wrong with a trace's ``metadata['duration_seconds']`` (absent or null: nothing).
    A negative, infinite or non-number duration is refused rather than ignored: ignoring it let
    the steps' latencies, or "no timing", stand in for a wall time the recorder got wrong."""
    duration = metadata.get(DURATION_SECONDS) if isinstance(metadata, Mapping) else None
    if duration is None:
        return None
    if type(duration) in (int, float) and math.isfinite(duration) and duration >= 0:
        return None
    return f"metadata['{DURATION_SECONDS}'] must be a number of seconds >= 0, got {duration!r}"


def expected_calls_problem(calls: Any) -> str | None:
    """The first problem of an ``expected_tool_calls`` value, or None when it is usable."""
    if not isinstance(calls, list):
        return f"expected_tool_calls must be a list, got {_kind(calls)}"
    for i, call in enumerate(calls):
        if not isinstance(call, dict):
            return (f"expected_tool_calls[{i}] must be an object like {{\"tool\": NAME, \"args\": {{...}}}}, "
                    f"got {_kind(call)}")
        tool = call.get("tool")
        if not isinstance(tool, str) or not tool:
            return f"expected_tool_calls[{i}] has no 'tool' name (a non-empty string)"
        args = call.get("args")
        if args is not None and not isinstance(args, dict):
            return f"expected_tool_calls[{i}].args must be an object or null, got {_kind(args)}"
    return None


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _or(data: Mapping[str, Any], key: str, default: Any) -> Any:
    value = data.get(key)
    return default if value is None else value


def _require_str(data: Mapping[str, Any], key: str, where: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise TraceFormatError(f"{where}: '{key}' must be a non-empty string, got {_kind(value)}")
    return value


def _text(value: Any, key: str, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TraceFormatError(f"{where}: '{key}' must be a string, got {_kind(value)}")
    return value


def _object(value: Any, key: str, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TraceFormatError(f"{where}: '{key}' must be an object, got {_kind(value)}")
    return value


def _bad_step(where: str, index: int, problem: str) -> NoReturn:
    raise TraceFormatError(f"{where}: steps[{index}]{problem}")


def _step_from_dict(data: Any, index: int, where: str) -> TraceStep:
    # The step's name for messages (``trace: steps[3]``) is only built when one is written: this
    # runs for every step of every trace.
    if not isinstance(data, Mapping):
        _bad_step(where, index, f" must be an object, got {_kind(data)}")
    kind = data.get("type")
    if not isinstance(kind, str) or not kind:
        _bad_step(where, index, f".type must be one of {', '.join(STEP_TYPES)}, got {kind!r}")
    step_id = data.get("step_id", index + 1)
    if type(step_id) is not int:
        _bad_step(where, index, f".step_id must be a whole number, got {step_id!r}")
    tool_name = data.get("tool_name")
    if tool_name is not None and not isinstance(tool_name, str):
        _bad_step(where, index, f".tool_name must be a string or null, got {_kind(tool_name)}")
    content = data.get("content", "")
    if content is None:
        content = ""
    elif not isinstance(content, str):
        _bad_step(where, index, f": 'content' must be a string, got {_kind(content)}")
    timestamp = data.get("timestamp", 0.0)
    if timestamp is None:
        timestamp = 0.0
    if type(timestamp) not in (int, float):
        _bad_step(where, index, f".timestamp must be a number, got {_kind(timestamp)}")
    flags = {}
    for flag in ("denied", "divergent"):
        value = data.get(flag, False)
        if value is None:
            value = False
        if type(value) is not bool:
            _bad_step(where, index, f".{flag} must be true or false, got {value!r}")
        flags[flag] = value
    latency = data.get("latency_ms")
    if latency is not None and type(latency) not in (int, float):
        _bad_step(where, index, f".latency_ms must be a number or null, got {_kind(latency)}")
    tokens = data.get("tokens")
    if tokens is not None and not isinstance(tokens, dict):
        _bad_step(where, index, f".tokens must be an object or null, got {_kind(tokens)}")
    optional_text = {}
    for key in ("error", "finish_reason", "provider", "model", "source_id"):
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            _bad_step(where, index, f".{key} must be a string or null, got {_kind(value)}")
        optional_text[key] = value
    # tool_args is kept as recorded, even when it is not an object: what the agent sent is the
    # evidence, and Argument Correctness reports a non-object as unmatched arguments.
    return TraceStep(
        step_id=step_id, type=kind, content=content,
        tool_name=tool_name, tool_args=data.get("tool_args"), tool_result=data.get("tool_result"),
        timestamp=float(timestamp), denied=flags["denied"], divergent=flags["divergent"],
        tokens=tokens, latency_ms=latency, **optional_text,
    )
