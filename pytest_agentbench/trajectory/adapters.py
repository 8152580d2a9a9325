"""Readers that turn other formats into a ``Trace``, so any recorded run can be checked.

Why one module of over 500 lines: one small, independent reader per foreign format, kept together so
the supported formats and their shared error wording are in one place.

* ``from_openai_messages``: OpenAI Chat Completions messages (assistant ``tool_calls``, ``tool``
  results; also the legacy ``function_call`` / ``function`` pair).
* ``from_langchain_run``: a LangChain / LangSmith run tree, as the run object or as its JSON dict.
  LangChain is never imported: the object is read by attribute, the dict by key.
* ``from_fixtura_trace``: a Fixtura ``.trace`` file (zstd-compressed JSON lines; the optional
  ``zstandard`` package reads it) or the same records uncompressed.
* ``from_run_record``: this plugin's own ``trajectory.json``, so a run of any benchmark can be
  checked afterwards.

Each follows the reference tool's adapter (openeval-core 0.2.1) except where that loses or
misattributes data; the user guide lists every difference. A file or value that cannot be read
raises ``TraceFormatError`` (a ``ValueError``) with one line naming the bad part.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from pytest_agentbench.trajectory.model import (
    DIVERGENCE_CHECKED,
    DURATION_SECONDS,
    FINGERPRINT,
    VERDICT,
    Trace,
    TraceFormatError,
    TraceStep,
    dump_json,
)
from pytest_agentbench.untrusted import load_file, loads, read_bytes

__all__ = [
    "TraceFormatError",
    "from_fixtura_trace",
    "from_langchain_run",
    "from_openai_messages",
    "from_run_record",
    "langchain_run_dict",
    "verdict_from_check_drift",
]

# -- OpenAI chat messages -------------------------------------------------------------------


def from_openai_messages(messages: Any, task_id: str = "openai_task", final_output: str | None = None,
                         input_text: str | None = None) -> Trace:
    """A trace from Chat Completions messages (dicts, or SDK message objects with
    ``model_dump``; a request body ``{"messages": [...]}`` is accepted too).

    Assistant text sent with tool calls becomes a ``thought`` step, each call a ``tool_call``
    step (arguments parsed from their JSON string; already-parsed objects are accepted), each
    ``tool`` message a ``tool_result`` step attributed to its call by ``tool_call_id`` (calls that
    share an id are answered in order; a result without an id is attributed to no call, its
    ``tool_name`` the message's own ``name`` if it has one), and assistant text without calls an
    ``output`` step.
    ``input`` is the first user message's text, ``final_output`` the last ``output`` step's text
    unless given.
    """
    if isinstance(messages, Mapping) and "messages" in messages:
        messages = messages["messages"]
    if not isinstance(messages, (list, tuple)):
        raise TraceFormatError(f"OpenAI messages must be a list of message objects, got {type(messages).__name__}")
    steps: list[TraceStep] = []
    pending: dict[Any, deque[TraceStep]] = {}
    first_input: str | None = None
    last_output = ""

    def add(**fields: Any) -> TraceStep:
        step = TraceStep(step_id=len(steps) + 1, **fields)
        steps.append(step)
        return step

    def call(name: Any, arguments: Any, key: tuple[str, Any] | None, source_id: str | None) -> None:
        args, error = _parse_arguments(arguments)
        step = add(type="tool_call", content=arguments if isinstance(arguments, str) else "",
                   tool_name=name if isinstance(name, str) and name else None, tool_args=args, error=error,
                   source_id=source_id)
        if key is not None:  # a call without an id can be answered by no result
            pending.setdefault(key, deque()).append(step)

    for index, raw in enumerate(messages):
        message = _as_dict(raw)
        if message is None:
            raise TraceFormatError(f"OpenAI messages[{index}] must be an object, got {type(raw).__name__}")
        role = message.get("role")
        text = _content_text(message.get("content"))
        if role == "assistant":
            tool_calls = message.get("tool_calls") or []
            legacy = _as_dict(message.get("function_call"))
            if not isinstance(tool_calls, (list, tuple)):
                raise TraceFormatError(f"OpenAI messages[{index}].tool_calls must be a list, "
                                       f"got {type(tool_calls).__name__}")
            if tool_calls or legacy:
                if text:
                    add(type="thought", content=text)
                for number, raw_call in enumerate(tool_calls):
                    tool_call = _as_dict(raw_call)
                    if tool_call is None:
                        raise TraceFormatError(f"OpenAI messages[{index}].tool_calls[{number}] must be an object")
                    function = _as_dict(tool_call.get("function")) or {}
                    call_id = tool_call.get("id")
                    call(function.get("name"), function.get("arguments"), _key("id", call_id),
                         call_id if isinstance(call_id, str) else None)
                if legacy:
                    name = legacy.get("name")
                    call(name, legacy.get("arguments"), _key("function", name), None)
            elif text:
                add(type="output", content=text)
                last_output = text
        elif role in ("tool", "function"):
            key = _key("id", message.get("tool_call_id")) if role == "tool" else _key("function", message.get("name"))
            queue = pending.get(key) if key is not None else None
            origin = queue.popleft() if queue else None
            source = message.get("tool_call_id")
            name = message.get("name")  # a result that names its tool (always, for ``function``)
            add(type="tool_result", content=text, tool_result=text,
                tool_name=origin.tool_name if origin else name if isinstance(name, str) and name else None,
                source_id=source if isinstance(source, str) else None)
        elif role == "user" and first_input is None and text:
            first_input = text
    return Trace(task_id=task_id, input=input_text if input_text is not None else first_input or "", steps=steps,
                 final_output=final_output if final_output is not None else last_output)


def _key(kind: str, value: Any) -> tuple[str, Any] | None:
    """A key for matching results to calls; an id that is not hashable is matched by its repr. No
    id (null or empty) gives None: such a result is attributed to no call, as the reference does;
    pairing id-less results with id-less calls by position would attribute a result of parallel
    calls answered out of order to the wrong tool."""
    if value is None or value == "":
        return None
    try:
        hash(value)
    except TypeError:
        value = repr(value)
    return kind, value


def _as_dict(value: Any) -> dict[str, Any] | None:
    if isinstance(value, Mapping):
        return dict(value)
    dump = getattr(value, "model_dump", None)  # openai SDK objects (pydantic)
    if callable(dump):
        data = dump()
        return data if isinstance(data, dict) else None
    return None


def _content_text(content: Any) -> str:
    """Message content as text: a string as is, a list of parts as their text joined (images and
    other parts left out), anything else as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
        return "\n".join(texts)
    return dump_json(content)


def _parse_arguments(arguments: Any) -> tuple[dict[str, Any] | None, str | None]:
    """(tool_args, error) from a call's arguments: a JSON string or an already-parsed object."""
    if arguments is None or arguments == "":
        return {}, None
    if isinstance(arguments, Mapping):
        return dict(arguments), None
    if not isinstance(arguments, str):
        return None, f"tool arguments are {type(arguments).__name__}, not a JSON object"
    try:
        value = loads(arguments)
    except ValueError as exc:
        return None, f"tool arguments are not valid JSON: {exc}"
    if not isinstance(value, dict):
        return None, f"tool arguments are a JSON {type(value).__name__}, not an object"
    return value, None


# -- LangChain run trees ----------------------------------------------------------------------


def from_langchain_run(run: Any, task_id: str = "langchain_task", input_text: str | None = None, *,
                       where: str = "LangChain run") -> Trace:
    """A trace from a LangChain run tree: a ``Run`` / ``RunTree`` object (what ``collect_runs``
    or a tracer gives), read through its own serialisation (``langchain_run_dict``), or that
    serialisation loaded from JSON (or a LangSmith export with its ``child_runs``). The tree is
    walked depth first, children in execution order (``dotted_order`` when every child has one).
    A ``tool`` run gives a ``tool_call`` step before its children and a ``tool_result`` step after
    them, both carrying the run's error; an ``llm`` / ``chat_model`` run gives a ``thought`` step
    with its generated text. Other runs (chains, retrievers, ...) only contribute their children.
    A dict saved with ``run.model_dump()``, which leaves the children out, is refused (see
    ``langchain_run_dict``); ``where`` names the run in messages."""
    if _field(run, "run_type") is None and _field(run, "child_runs") is None:
        raise TraceFormatError(f"{where}: a LangChain run must have 'run_type' or 'child_runs'; "
                               f"got {type(run).__name__}")
    run = langchain_run_dict(run, where=where)
    steps: list[TraceStep] = []

    def add(**fields: Any) -> None:
        steps.append(TraceStep(step_id=len(steps) + 1, **fields))

    stack: list[tuple[dict[str, Any], bool]] = [(run, False)]  # (run, its children are done): no recursion limit
    while stack:
        node, closing = stack.pop()
        kind = node.get("run_type")
        name = node.get("name")
        name = name if isinstance(name, str) and name else None
        if closing:  # a tool run, after its children
            start, end = _seconds(node.get("start_time")), _seconds(node.get("end_time"))
            add(type="tool_result", content="", tool_name=name, tool_result=_tool_output(node.get("outputs")),
                timestamp=end or 0.0, error=_first_line(node.get("error")),
                latency_ms=(end - start) * 1000 if start is not None and end is not None else None,
                source_id=_text_id(node.get("id")))
            continue
        start = _seconds(node.get("start_time"))
        if kind == "tool":
            inputs = node.get("inputs")
            args = dict(inputs) if isinstance(inputs, Mapping) else None if inputs is None else {"input": inputs}
            add(type="tool_call", content="", tool_name=name, tool_args=args, timestamp=start or 0.0,
                error=_first_line(node.get("error")), source_id=_text_id(node.get("id")))
            stack.append((node, True))
        elif kind in ("llm", "chat_model"):
            add(type="thought", content=_llm_text(node.get("outputs")), timestamp=start or 0.0,
                error=_first_line(node.get("error")), source_id=_text_id(node.get("id")))
        children: list[dict[str, Any]] = node["child_runs"]
        if children and all(isinstance(child.get("dotted_order"), str) for child in children):
            children = sorted(children, key=lambda child: str(child["dotted_order"]))
        stack.extend((child, False) for child in reversed(children))
    inputs = run.get("inputs")
    metadata: dict[str, Any] = {}
    run_id = _text_id(run.get("id"))
    if run_id:
        metadata["run_id"] = run_id
    start, end = _seconds(run.get("start_time")), _seconds(run.get("end_time"))
    if start is not None and end is not None and end >= start:
        metadata[DURATION_SECONDS] = end - start
    return Trace(task_id=task_id, input=input_text if input_text is not None else _run_input(inputs), steps=steps,
                 final_output=_run_output(run), metadata=metadata)


#: A run's fields read from an object that has no ``model_dump``.
_RUN_FIELDS = ("id", "name", "run_type", "inputs", "outputs", "error", "start_time", "end_time", "dotted_order",
               "child_run_ids")
#: Keys only a run's own serialisation has (``RunTree.model_dump()``, a LangSmith export): a dict
#: with one of them and no ``child_runs`` was saved without its children.
_SERIALISED_RUN_KEYS = ("dotted_order", "trace_id", "parent_run_id")


def langchain_run_dict(run: Any, *, where: str = "LangChain run") -> dict[str, Any]:
    """A LangChain run tree as dicts that keep its children: each run as its own serialisation
    (``model_dump(mode="json")``, so JSON-ready) with ``child_runs``, the same for each child.

    Save a run tree with ``json.dump(langchain_run_dict(run), file)``. ``run.model_dump()`` alone
    is not enough: ``RunTree`` (LangChain's ``Run``) excludes ``child_runs`` from its
    serialisation, so the dump holds the root and none of the tool calls under it; such a dict is
    refused here, with this advice, rather than read as a run that called no tool. A dict already
    holding its children is copied; an object without ``model_dump`` is read by attribute.
    Iterative, so a tree of any depth is read without recursion."""
    root: dict[str, Any] = {}
    pending: list[tuple[Any, dict[str, Any]]] = [(run, root)]
    while pending:
        node, out = pending.pop()
        out.update(_run_fields(node, where))
        kids: list[dict[str, Any]] = []
        for child in out.pop("child_runs"):
            kids.append({})
            pending.append((child, kids[-1]))
        out["child_runs"] = kids
    return root


def _run_fields(node: Any, where: str) -> dict[str, Any]:
    """One run's own fields (not its children's) and the list of its child runs, under ``child_runs``."""
    name = _field(node, "name")
    label = f"run {name!r}" if isinstance(name, str) else "a run"
    if isinstance(node, Mapping):
        fields = {key: value for key, value in node.items() if key != "child_runs"}
        if "child_runs" not in node and any(key in node for key in _SERIALISED_RUN_KEYS):
            raise TraceFormatError(
                f"{where}: {label} has no 'child_runs': run.model_dump() leaves a run's children (its tool calls) "
                "out; save the tree with pytest_agentbench.trajectory.adapters.langchain_run_dict(run)")
        children = node.get("child_runs")
    else:
        if _field(node, "run_type") is None and _field(node, "name") is None:
            raise TraceFormatError(f"{where}: a child run must be a run object or dict, got {type(node).__name__}")
        dump = getattr(node, "model_dump", None)
        fields = _dump_run(dump, label, where) if callable(dump) else {
            key: getattr(node, key) for key in _RUN_FIELDS if hasattr(node, key)}
        children = getattr(node, "child_runs", None)
    if children is None:
        children = []
    if not isinstance(children, (list, tuple)):
        raise TraceFormatError(f"{where}: {label}'s child_runs must be a list, got {type(children).__name__}")
    listed = fields.get("child_run_ids")
    if not children and isinstance(listed, (list, tuple)) and listed:
        raise TraceFormatError(f"{where}: {label} lists {len(listed)} child runs in child_run_ids but child_runs "
                               "holds none; export the run with its children (LangSmith: load_child_runs=True)")
    fields["child_runs"] = list(children)
    return fields


def _dump_run(dump: Any, label: str, where: str) -> dict[str, Any]:
    """A pydantic run's ``model_dump(mode="json")`` without its children; values pydantic cannot
    serialise become their ``str`` (``fallback``, pydantic 2.11 and later)."""
    exclude = {"child_runs", "parent_run"}
    try:
        try:
            data = dump(mode="json", exclude=exclude, fallback=str, warnings=False)
        except TypeError:  # a pydantic without ``fallback``
            data = dump(mode="json", exclude=exclude, warnings=False)
    except (ValueError, TypeError, RecursionError) as exc:
        raise TraceFormatError(f"{where}: {label} cannot be serialised as JSON: {type(exc).__name__}: "
                               f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
    if not isinstance(data, dict):
        raise TraceFormatError(f"{where}: {label}'s model_dump() gave {type(data).__name__}, not a dict")
    return data


def _field(run: Any, key: str) -> Any:
    if isinstance(run, Mapping):
        return run.get(key)
    return getattr(run, key, None)


def _text_id(value: Any) -> str | None:
    return None if value is None else str(value)


def _first_line(error: Any) -> str | None:
    """A run's error as one line (LangChain stores the exception's repr followed by the
    traceback)."""
    if not error:
        return None
    text = str(error).split("Traceback (most recent call last)")[0].strip() or str(error).strip()
    return text.splitlines()[0] if text else None


def _seconds(value: Any) -> float | None:
    """Epoch seconds from a datetime, an ISO 8601 string or a number; None when absent."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _tool_output(outputs: Any) -> Any:
    if isinstance(outputs, Mapping):
        if "output" in outputs:
            return outputs["output"]
        return dict(outputs) or None
    return outputs


def _llm_text(outputs: Any) -> str:
    """The generated text of an llm run: ``generations[0][0].text`` (LangChain's LLMResult)."""
    if isinstance(outputs, Mapping):
        generations = outputs.get("generations")
        if isinstance(generations, list) and generations:
            first = generations[0]
            if isinstance(first, list) and first:
                first = first[0]
            text = first.get("text") if isinstance(first, Mapping) else None
            if isinstance(text, str):
                return text
    return ""


def _run_input(inputs: Any) -> str:
    if isinstance(inputs, Mapping):
        if "input" in inputs:
            return _as_text(inputs["input"])
        if len(inputs) == 1:
            return _as_text(next(iter(inputs.values())))
        return dump_json(inputs, sort_keys=True)
    return "" if inputs is None else _as_text(inputs)


def _run_output(run: Any) -> str:
    """The root run's answer: ``outputs["output"]``; else the only value; else the last message of
    ``outputs["messages"]`` (LangGraph); else the outputs as JSON; with no outputs and an error,
    ``Error: <first line>``."""
    outputs = _field(run, "outputs")
    if isinstance(outputs, Mapping) and outputs:
        if "output" in outputs:
            return _as_text(outputs["output"])
        if len(outputs) == 1:
            return _as_text(next(iter(outputs.values())))
        messages = outputs.get("messages")
        if isinstance(messages, list) and messages:
            last = _as_dict(messages[-1]) or {}
            return _content_text(last.get("content"))
        return dump_json(outputs, sort_keys=True)
    if outputs:
        return _as_text(outputs)
    error = _first_line(_field(run, "error"))
    return f"Error: {error}" if error else ""


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # a list of messages: its last one's text
        last = _as_dict(value[-1]) if value else None
        if last is not None and "content" in last:
            return _content_text(last["content"])
    return dump_json(value)


# -- Fixtura .trace files ---------------------------------------------------------------------

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
#: The most bytes a trace may hold, on disk and once decompressed. Traces are untrusted input: a
#: few KB of zstd can decompress to gigabytes (a "zip bomb"), so the decompressor is fed small
#: pieces and stops at this size, rather than trusting the frame headers.
MAX_TRACE_BYTES = 64 * 1024 * 1024
#: Compressed bytes fed to the decompressor at a time; one piece decompresses to at most ~32 MB.
_ZSTD_PIECE = 1024
_DENIED = ("denied", "validation_error")
_BLOCKED_BY_RATE_LIMIT = ("rate_limited", "circuit_broken")


def verdict_from_check_drift(exit_code: int) -> str:
    """The drift verdict for ``metadata['verdict']`` from ``fixtura check-drift``'s exit code
    (0 PASS, 1 DRIFTED, 2 UNVERIFIED)."""
    verdicts = {0: "PASS", 1: "DRIFTED", 2: "UNVERIFIED"}
    if exit_code not in verdicts:
        raise ValueError(f"fixtura check-drift exits 0, 1 or 2, got {exit_code!r}")
    return verdicts[exit_code]


def from_fixtura_trace(trace_path: str | Path, task_id: str = "fixtura_task", input_text: str = "",
                       final_output: str = "", actual_state: dict[str, Any] | None = None,
                       metadata: dict[str, Any] | None = None) -> Trace:
    """A trace from a Fixtura ``.trace`` file: JSON lines, each a record with an ``event_type``,
    compressed as one zstd frame per record (Fixtura's recorder) or not compressed at all (read
    as plain UTF-8 JSON lines; told apart by the zstd magic bytes, whatever the file name).

    ``llm_call`` records become ``thought`` steps and ``tool_call`` records ``tool_call`` steps;
    a call that was not executed (permission ``denied`` or ``validation_error``, or blocked by the
    rate limiter) is ``denied``. A branch (a header with ``parent_trace_id``) is read as Fixtura
    reads it: the parent's steps up to and including ``divergence_step_id`` (from
    ``<parent>.trace`` in the same folder; all of them when it has no step with that id), then the
    branch's own, the first of which is marked ``divergent`` (a branch with no steps of its own
    departs at the branch point, which is marked instead). The header's ``fingerprint`` (and a
    ``verdict``, if any) go into the metadata unless ``metadata`` already has them; pass
    ``metadata={"verdict": verdict_from_check_drift(code)}`` after ``fixtura check-drift``.
    ``input``, ``final_output`` and ``actual_state`` are not in a trace file and come from the
    arguments.
    """
    path = Path(trace_path)
    header, events = _fixtura_events(path, set())
    meta = dict(metadata or {})
    if header:
        for key in (FINGERPRINT, VERDICT):
            if header.get(key) is not None:
                meta.setdefault(key, header[key])
        if header.get("parent_trace_id") is not None:
            meta.setdefault("fixtura_parent", header["parent_trace_id"])
            meta.setdefault("fixtura_divergence_step_id", header.get("divergence_step_id"))
            meta.setdefault(DIVERGENCE_CHECKED, True)
    steps = [_fixtura_step(event, where, number, divergent)
             for number, (event, where, divergent) in enumerate(events, start=1)]
    return Trace(task_id=task_id, input=input_text, steps=steps, final_output=final_output,
                 actual_state=dict(actual_state or {}), metadata=meta)


def _fixtura_records(path: Path) -> list[tuple[dict[str, Any], str]]:
    """(record, "file:line") for each JSON line of a trace file."""
    if not path.exists():
        raise TraceFormatError(f"Fixtura trace not found: {path}")
    try:
        data = read_bytes(path, MAX_TRACE_BYTES)
    except OSError as exc:
        raise TraceFormatError(f"{path}: cannot read the trace: {exc.strerror or exc}") from None
    if data.startswith(_ZSTD_MAGIC):
        try:
            import zstandard
        except ImportError:
            raise TraceFormatError(
                f"{path} is zstd-compressed and reading it needs the zstandard package: "
                "pip install zstandard") from None
        data = _zstd_frames(zstandard, data, path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceFormatError(f"{path}: neither zstd-compressed nor UTF-8 JSON lines "
                               f"({exc.reason} at byte {exc.start})") from None
    records = []
    # Lines end at \n, \r\n or \r, as Fixtura's reader (a text stream) splits them; not at the
    # other breaks str.splitlines knows (U+2028, U+0085, ...), which JSON strings may hold as they are.
    for number, line in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = loads(line)
        except ValueError as exc:
            raise TraceFormatError(f"{where}: not a JSON line ({exc})") from None
        if not isinstance(record, dict):
            raise TraceFormatError(f"{where}: a record must be a JSON object, got {type(record).__name__}")
        records.append((record, where))
    return records


def _zstd_frames(zstandard: Any, data: bytes, path: Path, limit: int = MAX_TRACE_BYTES) -> bytes:
    """Decompress concatenated zstd frames (Fixtura appends one per record), refusing a cut-off
    last frame, which a streaming reader would silently return in part, and stopping once the
    output passes ``limit`` bytes (see ``MAX_TRACE_BYTES``)."""
    parts: list[bytes] = []
    total = 0
    context = zstandard.ZstdDecompressor()
    try:
        while data:
            frame = context.decompressobj()
            offset = 0
            while not frame.eof and offset < len(data):
                piece = data[offset: offset + _ZSTD_PIECE]
                offset += len(piece)
                out = frame.decompress(piece)
                total += len(out)
                if total > limit:
                    raise TraceFormatError(f"{path}: decompresses to more than {limit} bytes; "
                                           f"traces may be at most {limit} bytes")
                parts.append(out)
            if not frame.eof:
                raise TraceFormatError(f"{path}: not a readable zstd stream (the last frame is cut off)")
            data = frame.unused_data + data[offset:]
    except zstandard.ZstdError as exc:
        raise TraceFormatError(f"{path}: not a readable zstd stream ({exc})") from None
    return b"".join(parts)


_Event = tuple[dict[str, Any], str, bool]  # (record, "file:line", divergent)


def _fixtura_events(path: Path, seen: set[Path]) -> tuple[dict[str, Any] | None, list[_Event]]:
    """The trace's header and its events with lineage resolved: (event, where, divergent)."""
    resolved = path.resolve()
    if resolved in seen:
        raise TraceFormatError(f"{path}: its lineage loops back to itself")
    seen.add(resolved)
    records = _fixtura_records(path)
    # The first trace_header is the header; a later one (from a second recording appended to the
    # file) holds no step and is dropped, as the reference does.
    header = next((record for record, _ in records if record.get("event_type") == "trace_header"), None)
    own = [(record, where, False) for record, where in records if record.get("event_type") != "trace_header"]
    if header is None or header.get("parent_trace_id") is None:
        return header, own
    parent_id = header["parent_trace_id"]
    divergence_id = header.get("divergence_step_id")
    if not isinstance(parent_id, str) or not parent_id or divergence_id is None:
        raise TraceFormatError(f"{path}: trace_header needs both parent_trace_id and divergence_step_id")
    parent_path = path.with_name(f"{parent_id}.trace")
    if not parent_path.is_file():
        raise TraceFormatError(f"{path}: parent trace {parent_path.name} not found next to it "
                               "(Fixtura looks for <parent_trace_id>.trace in the same folder)")
    _, parent_events = _fixtura_events(parent_path, seen)
    # The parent's steps up to and including the branch point; all of them when it has no step
    # with that id (Fixtura's reader and the reference read on to the end).
    cut = next((index for index, (event, _, _) in enumerate(parent_events) if event.get("step_id") == divergence_id),
               len(parent_events) - 1)
    shared = [(event, where, False) for event, where, _ in parent_events[:cut + 1]]
    if own:  # the trace departs from its recording at the branch's first own step
        own[0] = (own[0][0], own[0][1], True)
    elif shared:  # nothing of its own: it departs at the branch point, its last step
        shared[-1] = (shared[-1][0], shared[-1][1], True)
    return header, shared + own


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _fixtura_step(event: dict[str, Any], where: str, number: int, divergent: bool) -> TraceStep:
    kind = event.get("event_type")
    raw_id = event.get("step_id")
    common: dict[str, Any] = {
        "step_id": number, "timestamp": _number(event.get("timestamp")) or 0.0,
        "latency_ms": _number(event.get("latency_ms")), "divergent": divergent,
        "source_id": None if raw_id is None else str(raw_id),
    }
    if kind == "llm_call":
        tokens = None
        if event.get("input_tokens") is not None or event.get("output_tokens") is not None:
            tokens = {"input": event.get("input_tokens") or 0, "output": event.get("output_tokens") or 0}
        return TraceStep(type="thought",
                         content=(f"PROMPT:\n{event.get('prompt') or ''}\n\n"
                                  f"COMPLETION:\n{event.get('completion') or ''}"),
                         tokens=tokens, finish_reason=_str_or_none(event.get("finish_reason")),
                         provider=_str_or_none(event.get("provider")), model=_str_or_none(event.get("model")), **common)
    if kind == "tool_call":
        # A call without a tool name, or with arguments that are not an object, is kept as
        # recorded (what the agent sent is the evidence): Tool Selection cannot count a nameless
        # call, Argument Correctness judges odd arguments as unmatched, Step Efficiency counts both.
        name = event.get("tool_name")
        if name is not None and not isinstance(name, str):
            raise TraceFormatError(f"{where}: tool_call tool_name must be a string or null, "
                                   f"got {type(name).__name__}")
        arguments = event.get("arguments")
        decision = event.get("permission_decision")
        rate = event.get("rate_limit_decision")
        if decision in _DENIED:
            error = event.get("permission_reason") or decision
            denied = True
        elif decision == "allowed" and rate in _BLOCKED_BY_RATE_LIMIT:
            error = f"{rate}: {event.get('rate_limit_reason')}" if event.get("rate_limit_reason") else rate
            denied = True
        elif decision == "allowed":
            error, denied = None, False
        else:
            raise TraceFormatError(f"{where}: unknown permission_decision {decision!r} "
                                   "(allowed, denied or validation_error)")
        return TraceStep(type="tool_call", content="", tool_name=name or None, tool_args=arguments,
                         tool_result=None if denied else event.get("response"), error=error, denied=denied, **common)
    raise TraceFormatError(f"{where}: unknown event_type {kind!r} "
                           "(Fixtura writes trace_header, llm_call and tool_call)")


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# -- this plugin's run records ----------------------------------------------------------------

TRAJECTORY_SCHEMA = "pytest-agentbench/trajectory/v1"
#: Actions that end an episode: never executed, so not tool calls (``output`` steps instead).
TERMINAL_ACTIONS = ("done", "fail", "answer", "error")


def from_run_record(record: str | Path | Mapping[str, Any], *, where: str = "run record") -> Trace:
    """A trace from this plugin's ``trajectory.json`` (schema ``pytest-agentbench/trajectory/v1``),
    as a path or the loaded dict.

    Each executed action becomes a ``tool_call`` step whose ``tool_name`` is the action type
    (``click``, ``type``, ...) and whose ``tool_args`` are the action's other fields, nulls left
    out (so the two record writers, which differ only in writing nulls, give the same trace); the
    step's reasoning is its ``content``, its seconds its ``latency_ms``. A terminal action
    (``done``, ``fail``, ``answer``, ``error``) is never executed and becomes an ``output`` step;
    an ``answer``'s text is the ``final_output``. ``actual_state`` holds the checker's view:
    ``outcome``, ``verdict_passed``, ``verdict_score`` and ``criteria`` (criterion name ->
    passed), for ``expected_final_state`` to check. ``where`` names a loaded dict in messages.
    """
    if not isinstance(record, Mapping):
        path = Path(record)
        where = str(path)
        if not path.exists():
            raise TraceFormatError(f"run record not found: {path}")
        try:
            record = load_file(path, MAX_TRACE_BYTES)
        except OSError as exc:
            raise TraceFormatError(f"{path}: cannot read the run record: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise TraceFormatError(f"{path}: not a JSON file ({exc})") from None
        if not isinstance(record, Mapping):
            raise TraceFormatError(f"{path}: a run record is a JSON object, got {type(record).__name__}")
    schema = record.get("schema")
    if schema != TRAJECTORY_SCHEMA:
        raise TraceFormatError(f"{where}: not a trajectory record (schema {schema!r}, expected {TRAJECTORY_SCHEMA!r})")
    task = record.get("task")
    if not isinstance(task, Mapping) or not isinstance(task.get("task_id"), str):
        raise TraceFormatError(f"{where}: 'task.task_id' is missing")
    raw_steps = record.get("steps")
    if not isinstance(raw_steps, list):
        raise TraceFormatError(f"{where}: 'steps' must be a list")
    steps: list[TraceStep] = []
    final_output = ""
    for index, raw in enumerate(raw_steps):
        action = raw.get("action") if isinstance(raw, Mapping) else None
        if not isinstance(action, Mapping) or not isinstance(action.get("type"), str):
            raise TraceFormatError(f"{where}: steps[{index}] has no action with a 'type'")
        kind = action["type"]
        reasoning = raw.get("reasoning") or action.get("reason") or ""
        usage = raw.get("usage") if isinstance(raw.get("usage"), Mapping) else None
        seconds = _number(raw.get("seconds"))
        common: dict[str, Any] = {
            "step_id": len(steps) + 1, "latency_ms": seconds * 1000 if seconds is not None else None,
            "source_id": str(raw.get("index", index)),
            "model": _str_or_none(usage.get("model")) if usage else None,
            "tokens": ({"input": usage.get("input_tokens") or 0, "output": usage.get("output_tokens") or 0}
                       if usage else None),
        }
        if kind in TERMINAL_ACTIONS:
            answer = action.get("answer")
            if kind == "answer" and isinstance(answer, str):
                final_output = answer
            steps.append(TraceStep(type="output", content=answer if isinstance(answer, str) and answer else kind,
                                   error=(action.get("reason") or kind) if kind in ("fail", "error") else None,
                                   **common))
            continue
        args = {key: value for key, value in action.items() if key not in ("type", "reason") and value is not None}
        steps.append(TraceStep(type="tool_call", content=str(reasoning), tool_name=kind, tool_args=args, **common))
    verdict = record.get("verdict") if isinstance(record.get("verdict"), Mapping) else None
    criteria = {}
    if verdict and isinstance(verdict.get("criteria"), list):
        for criterion in verdict["criteria"]:
            if isinstance(criterion, Mapping) and isinstance(criterion.get("name"), str):
                criteria[criterion["name"]] = criterion.get("passed")
    actual_state = {
        "outcome": record.get("outcome"),
        "verdict_passed": verdict.get("passed") if verdict else None,
        "verdict_score": verdict.get("score") if verdict else None,
        "criteria": criteria,
    }
    metadata: dict[str, Any] = {
        key: record.get(key) for key in ("nodeid", "agent", "error", "error_type", "cost_usd") if key in record
    }
    metadata["benchmark"] = task.get("benchmark")
    metadata["domain"] = task.get("domain")
    duration = _number(record.get("total_time_seconds"))
    if duration is not None:
        metadata[DURATION_SECONDS] = duration
    instruction = task.get("instruction")
    return Trace(task_id=task["task_id"], input=instruction if isinstance(instruction, str) else "", steps=steps,
                 final_output=final_output, actual_state=actual_state, metadata=metadata)
