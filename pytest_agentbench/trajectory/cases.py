"""The trajectory test-case folder format: ``<name>.case.json`` next to the trace it judges.

A case file is the reference tool's test-case JSON (``task_id``, ``input``,
``expected_tool_calls``, ``expected_final_state``, ``expected_output_contains``, ``max_steps``,
``timeout_seconds``) plus a few keys of this plugin (``metrics``, ``min_score``, ``trace``,
``trace_format``, ``trace_fields``, ``marks``). Its trace is found next to it by name:

| file next to ``<name>.case.json`` | format        | read by                         |
|-----------------------------------|---------------|---------------------------------|
| ``<name>.trace.json``             | ``openeval``  | ``trace_from_json`` (this file) |
| ``<name>.openai.json``            | ``openai``    | ``adapters.from_openai_messages``|
| ``<name>.langchain.json``         | ``langchain`` | ``adapters.from_langchain_run`` |
| ``<name>.trace``                  | ``fixtura``   | ``adapters.from_fixtura_trace`` |

or named by the case's ``"trace"`` key (relative to the case file), which also reaches the
plugin's own ``trajectory.json`` run records (``agentbench``).

This module knows nothing about pytest, so the benchmark script and other tools can read a case
folder with the same code the items use. Two error types keep the two kinds of bad file apart: a
file that is not JSON at all cannot even name its item (``CaseSyntaxError``, a collection error),
while a JSON file with a wrong key can (``CaseError``, an error of that one item).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_agentbench.trajectory.model import TestCase, Trace, TraceFormatError, case_problems
from pytest_agentbench.untrusted import InputTooBig, loads, read_text

CASE_SUFFIX = ".case.json"
#: Trace files found next to a case by name, in the order they are looked for.
TRACE_SUFFIXES: dict[str, str] = {".trace.json": "openeval", ".openai.json": "openai", ".langchain.json": "langchain",
                                  ".trace": "fixtura"}
TRACE_FORMATS = ("openeval", "openai", "langchain", "fixtura", "agentbench")
RUN_RECORD_SCHEMA = "pytest-agentbench/trajectory/"

#: The reference tool's keys. Absent or null: no expectation (``max_steps`` and ``timeout_seconds``
#: stay None, no budget; the reference's loader defaults them to 10 and 10.0 but never reads them).
REFERENCE_KEYS = ("task_id", "input", "expected_tool_calls", "expected_final_state", "expected_output_contains",
                  "max_steps", "timeout_seconds")
PLUGIN_KEYS = ("metrics", "min_score", "trace", "trace_format", "trace_fields", "marks", "description")
TRACE_FIELDS = ("input", "final_output", "actual_state", "metadata")


class CaseSyntaxError(ValueError):
    """The case file is not JSON text: no item can be named, so collecting the file fails."""


class CaseError(ValueError):
    """The case or its trace is invalid or missing: that one item is an error."""


@dataclass(frozen=True)
class Case:
    """One validated case file."""

    path: Path
    case: TestCase
    metrics: tuple[str, ...] | None = None  # None: every registered metric
    min_score: float | None = None
    trace: str | None = None  # the "trace" key, relative to the case file
    trace_format: str | None = None
    trace_fields: dict[str, Any] = field(default_factory=dict)
    marks: tuple[str, ...] = ()


@dataclass(frozen=True)
class CaseFile:
    """A case file as collected: its item name, and either the case or why it is invalid."""

    path: Path
    name: str
    case: Case | None
    problem: str | None


def shown(path: Path | str) -> str:
    """A path as messages show it: relative to the current folder when it is under it. (Plain
    strings: this runs several times per item, and pathlib's ``relative_to`` is slow.)"""
    text = os.fspath(path)
    here = os.path.join(os.getcwd(), "")
    return text.removeprefix(here)


def case_stem(path: Path) -> str:
    """``dir/foo.case.json`` -> ``foo``: the name its trace files share."""
    name = path.name
    return name[: -len(CASE_SUFFIX)] if name.endswith(CASE_SUFFIX) else path.stem


def read_case_file(path: Path) -> CaseFile:
    """Parse one case file. Raises CaseSyntaxError (with the line) when it is not JSON; any other
    problem is kept in ``problem`` so the item can report it as its own error."""
    try:
        text = _read_text(path, CaseSyntaxError)
    except UnicodeDecodeError as exc:
        raise CaseSyntaxError(f"{shown(path)}: not UTF-8 text (byte {exc.start}); "
                              "save the case file as UTF-8 JSON") from None
    except OSError as exc:
        raise CaseSyntaxError(f"{shown(path)}: cannot read the case file: {exc.strerror or exc}") from None
    try:
        data = loads(text)
    except json.JSONDecodeError as exc:
        raise CaseSyntaxError(f"{shown(path)}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}); "
                              "fix the case file") from None
    stem = case_stem(path)
    raw_id = data.get("task_id") if isinstance(data, dict) else None
    name = raw_id if isinstance(raw_id, str) and _usable_name(raw_id) else stem
    try:
        return CaseFile(path, name, parse_case(data, path), None)
    except CaseError as exc:
        return CaseFile(path, name, None, str(exc))


def _usable_name(text: str) -> bool:
    return bool(text.strip()) and "::" not in text and "\n" not in text


def parse_case(data: Any, path: Path) -> Case:
    """Validate a case file's JSON into a Case; every problem is a CaseError naming the file and key."""
    where = shown(path)
    if not isinstance(data, dict):
        raise CaseError(f"{where}: a case file holds one JSON object, got {_kind(data)}")
    unknown = [k for k in data if k not in REFERENCE_KEYS and k not in PLUGIN_KEYS]
    if unknown:
        raise CaseError(f"{where}: unknown key {', '.join(map(repr, unknown))}; "
                        f"known keys: {', '.join(REFERENCE_KEYS + PLUGIN_KEYS)}")
    task_id = data.get("task_id", case_stem(path))
    if not isinstance(task_id, str) or not _usable_name(task_id):
        raise CaseError(f"{where}: task_id must be a non-empty string without '::' or newlines, got {task_id!r}")
    text = data.get("input", "")
    if not isinstance(text, str):
        raise CaseError(f"{where}: input must be a string, got {_kind(text)}")
    # Absent or null: no expectation. The values are checked below (case_problems), not here.
    calls = _or_empty(data, "expected_tool_calls", [])
    state = _or_empty(data, "expected_final_state", {})
    contains = _or_empty(data, "expected_output_contains", [])
    case = TestCase(task_id=task_id, input=text, expected_tool_calls=calls, expected_final_state=state,
                    expected_output_contains=contains, max_steps=data.get("max_steps"),
                    timeout_seconds=data.get("timeout_seconds"))
    problems = case_problems(case)  # the metrics' own rules for a usable test case
    if problems:
        raise CaseError(f"{where}: {problems[0]}")
    for n, call in enumerate(calls):
        extra = [k for k in call if k not in ("tool", "args")]
        if extra:  # a typo such as "arg" would otherwise silently drop the argument check
            raise CaseError(f"{where}: expected_tool_calls[{n}] has unknown key {', '.join(map(repr, extra))}; "
                            "known: tool, args")
    metrics = data.get("metrics")
    if metrics is not None:
        if not isinstance(metrics, list) or not metrics or not all(isinstance(m, str) and m for m in metrics):
            raise CaseError(f"{where}: metrics must be a non-empty list of metric ids, got {metrics!r}")
        metrics = tuple(dict.fromkeys(metrics))
    min_score = _number(data, "min_score", where, minimum=0.0, maximum=1.0)
    trace = data.get("trace")
    if trace is not None and (not isinstance(trace, str) or not trace.strip()):
        raise CaseError(f"{where}: trace must be a path relative to the case file, got {trace!r}")
    fmt = data.get("trace_format")
    if fmt is not None and fmt not in TRACE_FORMATS:
        raise CaseError(f"{where}: trace_format must be one of {', '.join(TRACE_FORMATS)}, got {fmt!r}")
    fields = data.get("trace_fields", {})
    if not isinstance(fields, dict):
        raise CaseError(f"{where}: trace_fields must be an object, got {_kind(fields)}")
    bad = [k for k in fields if k not in TRACE_FIELDS]
    if bad:
        raise CaseError(f"{where}: trace_fields has unknown key {', '.join(map(repr, bad))}; "
                        f"known: {', '.join(TRACE_FIELDS)}")
    _check_trace_fields(fields, f"{where}: trace_fields")
    if not isinstance(data.get("description", ""), str):
        raise CaseError(f"{where}: description must be a string, got {_kind(data['description'])}")
    marks = _list(data, "marks", where)
    if not all(isinstance(m, str) and m.isidentifier() for m in marks):
        raise CaseError(f"{where}: marks must be a list of marker names (identifiers), got {marks!r}")
    return Case(path=path, case=case, metrics=metrics, min_score=min_score, trace=trace, trace_format=fmt,
                trace_fields=dict(fields), marks=tuple(marks))


def _or_empty(data: dict[str, Any], key: str, empty: Any) -> Any:
    value = data.get(key)
    return empty if value is None else value


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


def _list(data: dict[str, Any], key: str, where: str) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise CaseError(f"{where}: {key} must be a list, got {_kind(value)}")
    return value


def _number(data: dict[str, Any], key: str, where: str, minimum: float, maximum: float) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not minimum <= value <= maximum:
        raise CaseError(f"{where}: {key} must be a number between {minimum:g} and {maximum:g}, got {value!r}")
    return float(value)


def _check_trace_fields(fields: dict[str, Any], where: str) -> None:
    for key, kind in (("input", str), ("final_output", str), ("actual_state", dict), ("metadata", dict)):
        if key in fields and not isinstance(fields[key], kind):
            raise CaseError(f"{where}.{key} must be {'a string' if kind is str else 'an object'}, "
                            f"got {_kind(fields[key])}")


# -- finding and reading the trace ---------------------------------------------------------------
def find_trace(case: Case) -> tuple[Path, str]:
    """The case's trace file and its format. CaseError when there is none, or more than one."""
    path, fmt, _ = _locate(case)
    return path, fmt


#: "Not read yet" (a trace may well be JSON ``null``).
_UNREAD: Any = object()


def _locate(case: Case) -> tuple[Path, str, Any]:
    """``find_trace``, plus the trace's JSON when finding its format meant reading it already (else
    ``_UNREAD``), so that no file is read twice."""
    folder = case.path.parent
    if case.trace is not None:
        path = folder / case.trace
        if not path.is_file():
            raise CaseError(f"{shown(case.path)}: its \"trace\" file {shown(path)} does not exist")
        if case.trace_format:
            return path, case.trace_format, _UNREAD
        return (path, *_format_of(path))
    stem = case_stem(case.path)
    names = folder_files(folder)
    found = [(f"{stem}{suffix}", fmt) for suffix, fmt in TRACE_SUFFIXES.items() if f"{stem}{suffix}" in names]
    if not found:  # a listing can be stale where folder times are coarse: ask the file system itself
        base = os.path.join(os.fspath(folder), stem)
        found = [(f"{stem}{suffix}", fmt) for suffix, fmt in TRACE_SUFFIXES.items() if os.path.isfile(base + suffix)]
    if not found:
        names_wanted = ", ".join(f"{stem}{s}" for s in TRACE_SUFFIXES)
        raise CaseError(f"{shown(case.path)}: no trace for this case; put one of {names_wanted} next to it, "
                        "or name the file with a \"trace\" key")
    if len(found) > 1:
        raise CaseError(f"{shown(case.path)}: more than one trace for this case ({', '.join(n for n, _ in found)}); "
                        "keep one, or choose with a \"trace\" key")
    name, fmt = found[0]
    return folder / name, case.trace_format or fmt, _UNREAD


#: folder -> (its modification time, the names of the files in it): one listing per folder, not
#: one probe per trace suffix per case. A file added or removed changes the folder's time, and
#: with it the listing.
_LISTINGS: dict[str, tuple[int, frozenset[str]]] = {}


def folder_files(folder: Path) -> frozenset[str]:
    """The names of the regular files in ``folder`` (empty when it cannot be listed)."""
    key = os.fspath(folder)
    try:
        mtime = os.stat(key).st_mtime_ns
    except OSError:
        return frozenset()
    cached = _LISTINGS.get(key)
    if cached is not None and cached[0] == mtime:
        return cached[1]
    try:
        with os.scandir(key) as entries:
            names = frozenset(entry.name for entry in entries if entry.is_file())
    except OSError:
        return frozenset()
    _LISTINGS[key] = (mtime, names)
    return names


def _format_of(path: Path) -> tuple[str, Any]:
    """The format of a file named by a "trace" key: by its name, else by its JSON content (then
    returned with the format, to be read once)."""
    name = path.name
    for suffix, fmt in TRACE_SUFFIXES.items():
        if name.endswith(suffix):
            return fmt, _UNREAD
    if name == "trajectory.json" or name.endswith(".trajectory.json"):
        return "agentbench", _UNREAD
    data = _read_json(path)
    if isinstance(data, list) or (isinstance(data, dict) and "messages" in data):
        return "openai", data
    if isinstance(data, dict) and ("run_type" in data or "child_runs" in data):
        return "langchain", data
    if isinstance(data, dict) and str(data.get("schema", "")).startswith(RUN_RECORD_SCHEMA):
        return "agentbench", data
    return "openeval", data


def _read_text(path: Path, error: type[Exception]) -> str:
    """A case or trace file's UTF-8 text, read with one open. The files are untrusted: one bigger
    than a trace may be is refused unread."""
    from pytest_agentbench.trajectory.adapters import MAX_TRACE_BYTES

    try:
        return read_text(path, MAX_TRACE_BYTES)
    except InputTooBig as exc:
        raise error(f"{shown(path)}: {exc.strerror} (case and trace files may be at most {MAX_TRACE_BYTES} "
                    "bytes)") from None


def _read_json(path: Path) -> Any:
    try:
        return loads(_read_text(path, CaseError))
    except json.JSONDecodeError as exc:
        raise CaseError(f"{shown(path)}:{exc.lineno}:{exc.colno}: trace file is not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise CaseError(f"{shown(path)}: trace file is not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise CaseError(f"{shown(path)}: cannot read the trace file: {exc.strerror or exc}") from None


def load_trace(case: Case) -> tuple[Trace, Path]:
    """Read the case's trace in its format, then apply the case's ``trace_fields``."""
    path, fmt, data = _locate(case)
    trace = _READERS[fmt](path, case, data)
    if not isinstance(trace, Trace):
        raise CaseError(f"{shown(path)}: the {fmt} reader returned {type(trace).__name__}, not a Trace")
    fields = case.trace_fields
    for key in ("input", "final_output", "actual_state"):
        if key in fields:
            setattr(trace, key, fields[key])
    if "metadata" in fields:
        trace.metadata = {**trace.metadata, **fields["metadata"]}
    return trace, path


def _json(path: Path, data: Any) -> Any:
    return _read_json(path) if data is _UNREAD else data


def _read_openeval(path: Path, case: Case, data: Any) -> Trace:
    return trace_from_json(_json(path, data), path, default_task_id=case.case.task_id)


def _read_openai(path: Path, case: Case, data: Any) -> Trace:
    data = _json(path, data)
    extra: dict[str, Any] = {}
    if isinstance(data, dict):
        unknown = [k for k in data if k not in ("messages", *TRACE_FIELDS)]
        if unknown or not isinstance(data.get("messages"), list):
            raise CaseError(f"{shown(path)}: an OpenAI trace is a list of chat messages, or an object with "
                            f"\"messages\" (and optionally {', '.join(TRACE_FIELDS)})")
        _check_trace_fields(data, shown(path))
        extra = {k: data[k] for k in TRACE_FIELDS if k in data}
        data = data["messages"]
    if not isinstance(data, list):
        raise CaseError(f"{shown(path)}: an OpenAI trace is a list of chat messages, got {_kind(data)}")
    from pytest_agentbench.trajectory.adapters import from_openai_messages

    trace = _adapt(path, from_openai_messages, data, task_id=case.case.task_id,
                   final_output=extra.get("final_output"), input_text=extra.get("input"))
    if "actual_state" in extra:
        trace.actual_state = extra["actual_state"]
    if "metadata" in extra:
        trace.metadata = {**trace.metadata, **extra["metadata"]}
    return trace


def _read_langchain(path: Path, case: Case, data: Any) -> Trace:
    data = _json(path, data)
    if not isinstance(data, dict):
        raise CaseError(f"{shown(path)}: a LangChain trace is a run tree (a JSON object), got {_kind(data)}")
    from pytest_agentbench.trajectory.adapters import from_langchain_run

    return _adapt(path, from_langchain_run, data, task_id=case.case.task_id, where=shown(path))


def _read_fixtura(path: Path, case: Case, data: Any) -> Trace:
    from pytest_agentbench.trajectory.adapters import from_fixtura_trace

    return _adapt(path, from_fixtura_trace, Path(shown(path)), task_id=case.case.task_id)


def _read_run_record(path: Path, case: Case, data: Any) -> Trace:
    from pytest_agentbench.trajectory.adapters import from_run_record

    data = _json(path, data)
    if not isinstance(data, dict):
        raise CaseError(f"{shown(path)}: a run record is a JSON object, got {_kind(data)}")
    return _adapt(path, from_run_record, data, where=shown(path))


def _adapt(path: Path, adapter: Callable[..., Trace], *args: Any, **kwargs: Any) -> Trace:
    """Call an adapter; its complaints about the file become this case's error. The adapters'
    own errors (TraceFormatError) already name the file and the bad part."""
    try:
        return adapter(*args, **kwargs)
    except TraceFormatError as exc:
        raise CaseError(str(exc)) from None
    except (ValueError, TypeError, KeyError, OSError) as exc:
        raise CaseError(f"{shown(path)}: cannot read the trace: {type(exc).__name__}: {exc}") from None


_READERS = {"openeval": _read_openeval, "openai": _read_openai, "langchain": _read_langchain,
            "fixtura": _read_fixtura, "agentbench": _read_run_record}


# -- the reference trace JSON ----------------------------------------------------------------------
def trace_from_json(data: Any, path: Path | str = "<trace>", default_task_id: str = "") -> Trace:
    """The reference tool's ``trace.json`` shape -> Trace, through ``Trace.from_dict`` (the one
    reader of that shape). A trace without ``task_id`` takes the case's; every other problem is a
    CaseError naming the file and the field."""
    if isinstance(data, dict) and not data.get("task_id") and default_task_id:
        data = {**data, "task_id": default_task_id}
    try:
        return Trace.from_dict(data, where=shown(path))
    except TraceFormatError as exc:
        raise CaseError(str(exc)) from None
