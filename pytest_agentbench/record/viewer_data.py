r"""What the static viewer shows, read from a run folder: the page's data model.

``collect`` reads ``results.jsonl`` (one row per task), ``summary.json`` (run facts and metrics)
and each task's ``trajectory.json`` into a ``RunView``. It runs at the end of every run, so it must
cost next to nothing: it never opens a PNG (screenshots are linked by relative path and loaded
lazily by the browser), and it does not parse trajectories at all.

The page carries up front only what its table needs of each task (``ROW_FIELDS``, as columns);
each task's whole record and its trajectory, verbatim, are packed into compressed blocks
(``packed``) that the browser unpacks and parses only when someone opens that task. A broken
trajectory therefore breaks only its own task's detail.

Task ids, reasons and reasoning come from benchmarks and agents, i.e. from users, so the JSON of
every block has ``<``, ``>`` and ``&`` replaced by their ``\uXXXX`` escapes (``escape_json_text``):
valid JSON never has them outside strings, so the JSON means the same, and no block can close its
``<script>`` tag; a packed block is base64, which holds none of them. A run folder may come from
someone else, so no file is read through a symbolic link.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_agentbench import metrics as m
from pytest_agentbench.record.models import record_problem
from pytest_agentbench.record.packed import Packer
from pytest_agentbench.record.runfolder import task_slug
from pytest_agentbench.record.script_json import embed_json, escape_json_text
from pytest_agentbench.record.stats_report import viewer_statistics
from pytest_agentbench.untrusted import loads, too_deep

#: A trajectory bigger than this is linked, not embedded, so one runaway agent log cannot make
#: the page too heavy to open.
TRAJECTORY_LIMIT = 4 * 1024 * 1024
#: Stop embedding trajectories once this many bytes are in the page (they stay linked).
TOTAL_LIMIT = 64 * 1024 * 1024
#: The largest summary.json and results.jsonl read (a 5,000-task run's results are a few MB).
RECORD_LIMIT = 256 * 1024 * 1024



#: The record fields the table, its filters, search and sorting read; the rest of a record is
#: packed with the task's detail. The rows block holds them as columns, one value per task.
ROW_FIELDS = ("task_id", "trial", "benchmark", "domain", "nodeid", "status", "outcome", "success", "error_type",
              "score", "num_steps", "step_limit", "reason", "error", "criteria")


@dataclass
class RunView:
    """What the page embeds: ``data`` (run facts, metrics, notes), ``rows`` (what the table shows
    of each task, as columns, and where its detail is) and ``blocks`` (the packed detail: each
    task's record and trajectory, see ``packed``), each its own script block.

    From ``collect(..., lazy=True)`` the blocks are an iterator that reads each trajectory as it is
    consumed, and ``rows["at"]`` and ``data["notes"]`` are complete only once it is used up: the
    page writes every block before the data and rows blocks (``viewer_page.page_pieces``)."""

    data: dict[str, Any]
    rows: dict[str, Any] = field(default_factory=dict)
    blocks: Iterable[str] = field(default_factory=list)


def collect(run: Path, *, summary: dict[str, Any] | None = None, records: list[dict[str, Any]] | None = None,
            lazy: bool = False, record_texts: Sequence[str | None] | None = None) -> RunView:
    """Read the run folder into what the page embeds. Tolerates every missing or broken file,
    and says so in ``data["notes"]``, shown at the top of the page.

    ``summary`` and ``records`` are what the run's writer holds already (the plugin's controller
    at session end: its summary and the records it appended to results.jsonl, in file order);
    given, they are not read back from the folder. ``record_texts``: with ``records``, the
    results.jsonl line written for each (``RunFolder.append_result``), None where this process
    wrote none (records a resumed run kept); a line is packed as written, a record without one
    is encoded. ``lazy``: see ``RunView``."""
    notes: list[str] = []
    inside = _Inside(run)
    if summary is None:
        summary = _read_summary(inside, notes)
    if records is None:
        records, record_texts = _read_records(inside, notes)
    if not records and isinstance(summary.get("tasks"), list):
        records = [r for r in summary["tasks"] if isinstance(r, dict) and r.get("task_id") is not None
                   and record_problem(r) is None]
        record_texts = None
    if record_texts is not None and len(record_texts) != len(records):
        record_texts = None  # not the records' lines: encode them all
    data = {
        "run": _run_facts(run, summary, records),
        "metrics": _metrics_view(summary if _has_metrics(summary) else _compute(records), _tally(records)),
        "by_domain": _domain_rows(summary, records),
        "notes": notes,
        "statistics": viewer_statistics(summary, records),
        "comparison": _comparison(inside, notes),
    }
    at: list[int] = []
    rows = {"count": len(records), "fields": list(ROW_FIELDS), "columns": _columns(records), "at": at}
    blocks = _blocks(records, record_texts, _TrajectoryReader(inside), at, notes)
    return RunView(data, rows, blocks if lazy else list(blocks))


def _columns(records: list[dict[str, Any]]) -> list[list[Any] | None]:
    """``ROW_FIELDS`` of every record, a column each; null where a record lacks the field, and a
    column of nulls only (a run without trials, errors or node ids) is one null.

    The page reads a null as a missing field, which is the same to it for every field but
    ``outcome``, whose presence counts (a record without one is scored unless its error or status
    says otherwise), so an ``outcome`` of null is written as false, which the page reads as it
    reads a null one: not scored. Of ``criteria`` the Reason column reads only the failed ones
    (``_failed_criteria``)."""
    columns: list[list[Any] | None] = []
    # Record by record, then turned: one pass over the records (twice as fast as one per field).
    rows = [[*map(record.get, ROW_FIELDS)] for record in records]
    turned: Iterable[tuple[Any, ...]] = zip(*rows, strict=True) if rows else [()] * len(ROW_FIELDS)
    for name, column in zip(ROW_FIELDS, turned, strict=True):
        values = list(column)
        if name == "outcome":
            values = [False if value is None and "outcome" in record else value
                      for value, record in zip(values, records, strict=True)]
        elif name == "criteria":
            values = [_failed_criteria(value) for value in values]
        columns.append(values if any(value is not None for value in values) else None)
    return columns


def _failed_criteria(criteria: Any) -> list[Any] | None:
    """What the Reason column reads of a record's criteria: the first failed one (its expected and
    actual values only when it says nothing itself: the column shows its detail or them), and a
    stand-in for each other failed one (the column counts them)."""
    if not isinstance(criteria, list):
        return None
    failed = [c for c in criteria if isinstance(c, dict) and c.get("passed") is False]
    if not failed:
        return []
    first = failed[0]
    if isinstance(first.get("detail"), str) and first["detail"]:
        first = {k: v for k, v in first.items() if k not in ("expected", "actual")}
    return [first] + [{"passed": False}] * (len(failed) - 1)


def _record_text(record: dict[str, Any], text: str | None) -> str:
    """The record's JSON for its packed detail: its results.jsonl line as written (escaped), unless
    it holds a NaN or an Infinity (which ``JSON.parse`` rejects; ``embed_json`` writes null), or
    the word in a string, or there is no line: then the record encoded, keys sorted, as the line
    would be. Escaped either way, so the text is one whether the line was at hand or not."""
    if text is not None and _parses_in_js(text):
        return escape_json_text(text)
    return embed_json(record, sort_keys=True)


_quote = json.encoder.encode_basestring_ascii


def _blocks(records: list[dict[str, Any]], texts: Sequence[str | None] | None, reader: _TrajectoryReader,
            at: list[int], notes: list[str]) -> Iterator[str]:
    """The packed detail's blocks, each trajectory read as the blocks are asked for. A task's
    piece is the JSON ``[record, [where, why, path]]``: ``where`` its trajectory's piece (or null,
    and ``why``: "missing" or "too big"), ``path`` the trajectory's path in the run folder. A
    trajectory is packed just before the first task that names it, so both are in one block.
    Fills ``at`` (each task's piece: block, start, end) and, at the end, the notes."""
    packer = Packer()
    for index, record in enumerate(records):
        rel = _trajectory_rel(record)
        seen = reader.seen.get(rel)
        if seen is None:
            why, raw = reader.read(rel)
            seen = reader.seen[rel] = (packer.add(raw) if raw is not None else None, why)
        where, why = seen
        place = "null" if where is None else f"[{where[0]},{where[1]},{where[2]}]"
        text = _record_text(record, texts[index] if texts is not None else None)
        piece = f"[{text},[{place},{'null' if why is None else _quote(why)},{_quote(rel)}]]"
        at.extend(packer.add(piece.encode("utf-8", "replace")))
        if packer.full:
            yield packer.seal()
    if not packer.empty:
        yield packer.seal()
    notes.extend(reader.notes())
    notes.extend(reader.inside.notes())


class _Inside:
    """Opens files of one run folder, refusing symbolic links anywhere below it: a run folder can
    come from someone else, and a link to ``~/.ssh/id_ed25519`` must not end up embedded in the
    page. Whether a folder holds a link is checked once per folder (the viewer reads hundreds of
    files from a few folders); the file itself is opened with ``O_NOFOLLOW``."""

    def __init__(self, run: Path) -> None:
        self.root = os.path.realpath(run)
        self._clean: dict[str, bool] = {}
        self.links: list[str] = []

    def read(self, rel: str, limit: int) -> bytes | None:
        """The bytes of ``rel`` (a ``_safe_rel`` path), or None when over ``limit``. Raises
        FileNotFoundError when absent and ``SymlinkRefused`` for a link."""
        folder = rel.rpartition("/")[0]
        clean = self._clean.get(folder)
        if clean is None:
            full = os.path.join(self.root, folder) if folder else self.root
            clean = self._clean[folder] = os.path.realpath(full) == os.path.normpath(full)
        if not clean:
            self.links.append(rel)
            raise SymlinkRefused(rel)
        try:
            return _read_small(os.path.join(self.root, rel), limit)
        except OSError:
            if os.path.islink(os.path.join(self.root, rel)):
                self.links.append(rel)
                raise SymlinkRefused(rel) from None
            raise

    def is_file(self, name: str) -> bool:
        """Whether ``name``, a file directly in the run folder, is there as a regular file (not a link)."""
        try:
            return stat.S_ISREG(os.lstat(os.path.join(self.root, name)).st_mode)
        except OSError:
            return False

    def notes(self) -> list[str]:
        if not self.links:
            return []
        return [(f"{len(self.links)} file(s) not read because they are (or are under) symbolic links: "
                 f"{_some(self.links)}")]


class SymlinkRefused(OSError):
    """A file of the run folder is a symbolic link (or lies under one); it is never followed."""


def _read_summary(inside: _Inside, notes: list[str]) -> dict[str, Any]:
    try:
        raw = inside.read("summary.json", RECORD_LIMIT)
        if raw is None:
            raise ValueError(f"bigger than {RECORD_LIMIT} bytes")
        data = loads(raw)
    except SymlinkRefused:
        return {}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        notes.append(f"summary.json could not be read ({_short_error(exc)}); metrics are computed from results.jsonl")
        return {}
    return data if isinstance(data, dict) else {}


#: At most this many changed tasks are linked from the page's comparison section.
CHANGED_LIMIT = 200


def _comparison(inside: _Inside, notes: list[str]) -> dict[str, Any] | None:
    """What the page shows of ``comparison.json`` (``--bench-compare``): the terminal's lines, the
    tasks that regressed or improved (each opens its row here), and the comparison page's name
    when that page is in the folder. None without the file; a broken one is a note."""
    from pytest_agentbench.compare import COMPARISON_NAME, page_name, summary_lines
    from pytest_agentbench.text import shorten

    try:
        raw = inside.read(COMPARISON_NAME, RECORD_LIMIT)
        if raw is None:
            raise ValueError(f"bigger than {RECORD_LIMIT} bytes")
        result = json.loads(raw)
        # The terminal's lines but the grep line, and the regressed names (linked below instead)
        lines = [shorten(line, 2000) for line in summary_lines(result)[:-1] if not line.startswith("Regressed: ")]
        changed = [{"status": str(r["status"]), "anchor": f"{r['benchmark']}/{r['task_id']}",
                    "task_id": str(r["task_id"])}
                   for r in result["tasks"] if r["status"] in ("regressed", "improved")]
        before = str(result["before_run"])
    except (SymlinkRefused, FileNotFoundError):
        return None
    except (OSError, ValueError, TypeError, KeyError, AttributeError, IndexError, RecursionError) as exc:
        notes.append(f"{COMPARISON_NAME} could not be read ({_short_error(exc)})")
        return None
    page = page_name(before)
    return {"before_run": shorten(before, 200), "verdict": shorten(result.get("verdict"), 100), "lines": lines,
            "changed": [c for c in changed if len(c["anchor"]) <= 1000][:CHANGED_LIMIT],
            "more": max(0, len(changed) - CHANGED_LIMIT),
            "page": page if _safe_rel(page) == page and "/" not in page and inside.is_file(page) else None}


def _read_records(inside: _Inside, notes: list[str]) -> tuple[list[dict[str, Any]], list[str] | None]:
    """Read results.jsonl leniently: a bad line is skipped and reported, never fatal.

    Returns the records and their lines, which the page packs as they are (``_record_text``):
    the file's own text, not encoded again, which saves most of the cost of embedding them.
    """
    try:
        raw_file = inside.read("results.jsonl", RECORD_LIMIT)
        if raw_file is None:
            notes.append(f"results.jsonl is bigger than {RECORD_LIMIT} bytes; it was not read")
            return [], None
        lines = [line for line in raw_file.splitlines() if line.strip()]
    except SymlinkRefused:
        return [], None
    except FileNotFoundError:
        return [], None
    except OSError as exc:
        notes.append(f"results.jsonl could not be read ({_short_error(exc)})")
        return [], None
    try:  # one C-level parse for the usual, well-formed file
        parsed: list[Any] = json.loads(b"[" + b",".join(lines) + b"]")
    except (ValueError, RecursionError):
        parsed = []
    if len(parsed) != len(lines):  # a bad line, or one like ``{...},{...}`` that holds two values
        parsed = [_loads_or_none(line) for line in lines]
    records, kept, bad = [], [], []
    first_problem = ""
    for number, (line, record) in enumerate(zip(lines, parsed, strict=True), 1):
        # a line nested too deep, or one whose fields have the wrong types, is skipped like a broken one
        problem = "not JSON" if record is None or too_deep(line) else record_problem(record)
        if problem is None and record.get("task_id") is not None:
            records.append(record)
            kept.append(line.decode("utf-8", "replace"))
        else:
            bad.append(number)
            first_problem = first_problem or f"record {number}: {problem or 'no task_id'}"
    if bad:
        shown = ", ".join(str(n) for n in bad[:10]) + (" ..." if len(bad) > 10 else "")
        notes.append(f"results.jsonl: skipped {len(bad)} malformed record(s) (record {shown}); {first_problem}")
    return records, kept


def _parses_in_js(text: str) -> bool:
    """Whether JSON text Python wrote is sure to pass ``JSON.parse``: Python writes NaN and
    Infinity as bare tokens, which it rejects. The word inside a string also says no (the caller
    then encodes the value itself, which is right either way)."""
    return "NaN" not in text and "Infinity" not in text


def _loads_or_none(line: bytes) -> Any:
    try:
        return loads(line)
    except ValueError:
        return None


def _trajectory_rel(record: Mapping[str, Any]) -> str:
    """Where the record says its trajectory is, or where the run folder would have put it."""
    rel = _safe_rel(record.get("trajectory"))
    if rel is not None:
        return rel
    return f"tasks/{task_slug(str(record.get('benchmark') or ''))}/{task_slug(str(record['task_id']))}.trajectory.json"


class _TrajectoryReader:
    """Reads trajectory files as bytes (never parsed here) and remembers what it could not embed."""

    def __init__(self, inside: _Inside) -> None:
        self.inside = inside
        self.total = 0
        #: Each path read: where its piece is (or None), and why not ("missing" or "too big").
        self.seen: dict[str, tuple[list[int] | None, str | None]] = {}
        self.missing: list[str] = []
        self.too_big: list[str] = []

    def read(self, rel: str) -> tuple[str | None, bytes | None]:
        """The file's bytes, or None and why ("missing" or "too big")."""
        limit = min(TRAJECTORY_LIMIT, TOTAL_LIMIT - self.total)
        try:
            raw = self.inside.read(rel, limit)
        except SymlinkRefused:
            return "missing", None
        except OSError:
            self.missing.append(rel)
            return "missing", None
        if raw is None:
            self.too_big.append(rel)
            return "too big", None
        self.total += len(raw)
        return None, raw

    def notes(self) -> list[str]:
        out = []
        if self.missing:
            out.append(f"{len(self.missing)} trajectory file(s) not found: {_some(self.missing)}")
        if self.too_big:
            out.append(f"{len(self.too_big)} trajectory file(s) too big to embed (open them from the task): "
                       f"{_some(self.too_big)}")
        return out


def _read_small(path: str, limit: int) -> bytes | None:
    """The file's bytes, or None when it is over ``limit``. Plain ``os`` calls: a third of the
    cost of ``open()`` per file, which is most of the viewer's time on a 500-task run.
    Non-blocking, and regular files only, so a stray FIFO cannot hang the end of a run."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
                 | getattr(os, "O_NOFOLLOW", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise IsADirectoryError(f"{path} is not a regular file")
        size = info.st_size
        if size > limit:
            return None
        data = os.read(fd, size)
        while len(data) < size:  # a short read; rare, but allowed
            more = os.read(fd, size - len(data))
            if not more:
                break
            data += more
        return data
    finally:
        os.close(fd)


# -- run facts and metrics ----------------------------------------------------------------------


def _run_facts(run: Path, summary: Mapping[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    benchmarks = summary.get("benchmarks")
    if not isinstance(benchmarks, list) or not benchmarks:
        benchmarks = sorted({str(r.get("benchmark")) for r in records if r.get("benchmark")})
    agent = summary.get("agent") or next((r.get("agent") for r in records if r.get("agent")), "")
    model = summary.get("model_id")
    # Who played, as the run recorded it (the name its folder got): the benchmarks' own players
    # (MockMed's arms, OpenComputer's end states) when the --bench-agent agent played nothing.
    player = summary.get("player")
    return {
        "name": str(summary.get("run_name") or run.resolve().name),
        "agent": str(agent),
        "player": str(player) if isinstance(player, str) and player and player != agent else None,
        "model": str(model) if model and model != agent else None,
        "benchmarks": [str(b) for b in benchmarks],
        "created_at": str(summary.get("created_at") or "") or None,
        "elapsed": _elapsed(summary.get("created_at"), summary.get("finished_at")),
        "max_steps": _int(summary.get("max_steps"), 0) or None,
        "finished": bool(summary),
    }


def _has_metrics(summary: Mapping[str, Any]) -> bool:
    return isinstance(summary.get("num_attempts"), int)


def _metrics_view(source: Mapping[str, Any], tally: Mapping[str, int]) -> dict[str, Any]:
    """The terminal's "Evaluation Results" numbers, formatted exactly as the terminal does, with
    failures and errors counted as pytest counts them (``tally``)."""
    rate, score = _float(source.get("success_rate")), _float(source.get("avg_score"))
    cost = _float(source.get("total_cost_usd")) or 0.0
    return {
        "attempts": _int(source.get("num_attempts"), 0),
        "outcomes": _int(source.get("num_outcome_tasks"), 0),
        **tally,
        "success_count": _int(source.get("success_count"), 0),
        "not_evaluated": _int(source.get("num_not_evaluated"), 0),
        "rate": rate,
        "success_rate": m.format_rate(rate),
        "avg_score": m.format_score(score),
        "avg_steps": f"{_float(source.get('avg_steps')) or 0.0:.1f}",
        "avg_time": _duration(_float(source.get("avg_time_seconds")) or 0.0),
        "cost": f"${cost:.2f}" if cost else None,
    }


def _domain_rows(summary: Mapping[str, Any], records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    domains = summary.get("by_domain") if _has_metrics(summary) else None
    if not isinstance(domains, dict):
        domains = m.by_domain(_attempts(records))
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault(str(record.get("domain", "default")), []).append(record)
    return [{"domain": str(name), **_metrics_view(stats, _tally(groups.get(str(name), [])))}
            for name, stats in sorted(domains.items()) if isinstance(stats, dict)]


#: Error types that are not outcomes: pytest reports their items as errors, not failures.
NOT_OUTCOMES = ("infrastructure", "evaluation")


def status_of(record: Mapping[str, Any]) -> str:
    """The item's pytest outcome as its record says it. A record without one (written before
    records had a status) gets the outcome pytest gave it: an infrastructure or evaluation error
    is an error, an agent error a failure (it is a scored outcome), no outcome a skip."""
    status = record.get("status")
    if isinstance(status, str) and status:
        return status
    if record.get("error_type") in NOT_OUTCOMES:
        return "error"
    if record.get("success") is True:
        return "passed"
    return "failed" if record.get("outcome", True) else "skipped"


def _tally(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Failures and errors as pytest's terminal line counts them (its ``N failed, M errors``),
    from each record's status, and what they were: an agent error is a failure, never an error.
    (summary.json's ``error_count`` counts agent errors too, so it is not used for the page.)"""
    out = {"failed": 0, "agent_failed": 0, "errors": 0, "infrastructure": 0, "evaluation": 0, "other_errors": 0}
    for record in records:
        status, kind = status_of(record), record.get("error_type")
        if status == "failed":
            out["failed"] += 1
            out["agent_failed"] += kind == "agent"
        elif status == "error":
            out["errors"] += 1
            out[kind if kind in NOT_OUTCOMES else "other_errors"] += 1
    return out


def _compute(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Metrics from the rows themselves, for a run that never got its summary.json."""
    return m.metrics(_attempts(records))


def _attempts(records: Iterable[dict[str, Any]]) -> list[m.Attempt]:
    out = []
    for record in records:
        try:
            out.append(m.attempt_from_result(record))
        except (TypeError, ValueError):  # a hand-edited record with a non-number score
            out.append(m.Attempt(False, 0.0, 0, 0.0, "evaluation", False))
    return out


# -- small helpers ------------------------------------------------------------------------------


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _int(value: Any, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return default
    return int(value)


def _safe_rel(path: Any) -> str | None:
    """A path inside the run folder, or None: keeps ``/etc``, ``C:`` and ``..`` out of the files
    this module opens. (The page applies the same rule to the links it makes.)"""
    if not isinstance(path, str) or not path or len(path) > 1000:
        return None
    if path.startswith("/") or ":" in path or "\\" in path:
        return None
    parts = path.split("/")
    if "" in parts or "." in parts or ".." in parts:
        return None
    return path


def _some(items: list[str], limit: int = 5) -> str:
    return ", ".join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms" if seconds else "< 1 s"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def _elapsed(start: Any, end: Any) -> str | None:
    try:
        delta = _dt.datetime.fromisoformat(str(end)) - _dt.datetime.fromisoformat(str(start))
    except (TypeError, ValueError):
        return None
    return _duration(max(delta.total_seconds(), 0.0))


def _short_error(exc: BaseException) -> str:
    text = getattr(exc, "strerror", None) or str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]
