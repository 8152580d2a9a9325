r"""Static viewer: one self-contained ``viewer.html`` per run folder.

Rendered from ``results.jsonl`` (one row per task), ``summary.json`` (run facts and metrics) and
each task's ``trajectory.json`` (steps, instruction, verdict). It is written at the end of every
run, so it must cost next to nothing: it never opens a PNG (screenshots are linked by relative path
and loaded lazily by the browser), and it does not parse trajectories at all. Each one is copied
verbatim into its own ``<script type="application/json">`` block, and the browser parses it only
when someone opens that task. A broken trajectory therefore breaks only its own task's detail.

Task ids, reasons and reasoning come from benchmarks and agents, i.e. from users, so every embedded
block has ``<``, ``>`` and ``&`` replaced by their ``\uXXXX`` escapes (valid JSON never has them
outside strings, so the JSON means the same, and no block can close its ``<script>`` tag); the
script writes text only with ``textContent``; and a Content Security Policy admits only the page's
own inline script and style (by hash) and local images, so the page makes no network request.

Run it by hand with ``agentbench-view RUN_DIR`` or ``python -m pytest_agentbench.record.viewer``.
"""

from __future__ import annotations

import argparse
import base64
import datetime as _dt
import hashlib
import html
import json
import math
import os
import re
import stat
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import metrics as m
from .stats_report import viewer_statistics
from .runfolder import task_slug

VIEWER_NAME = "viewer.html"

#: Files that make a folder a run folder, for ``main``.
RUN_FILES = ("results.jsonl", "summary.json", "manifest.json")
#: A trajectory bigger than this is linked, not embedded, so one runaway agent log cannot make
#: the page too heavy to open.
TRAJECTORY_LIMIT = 4 * 1024 * 1024
#: Stop embedding trajectories once this many bytes are in the page (they stay linked).
TOTAL_LIMIT = 64 * 1024 * 1024
#: The largest summary.json and results.jsonl read (a 5,000-task run's results are a few MB).
RECORD_LIMIT = 256 * 1024 * 1024


# -- public API ---------------------------------------------------------------------------------


def write_viewer(run_dir: str | Path) -> Path:
    """Write ``viewer.html`` into ``run_dir`` and return its path.

    Bad or missing data never raises (an interrupted run still gets a viewer that says what is
    missing); only a failure to write the file does. The file is replaced atomically, so a browser
    reloading it mid-write never sees half a page.
    """
    run = Path(run_dir)
    page = render_html(collect(run)).encode("utf-8", "replace")
    target = run / VIEWER_NAME
    tmp = target.with_name("." + VIEWER_NAME + ".tmp")
    # A fresh file, never through a symbolic link someone left at the temporary name (the rename
    # then replaces a link at viewer.html itself, not what it points to).
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(page)
        os.replace(tmp, target)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
    return target


def main(argv: list[str] | None = None) -> int:
    """``agentbench-view RUN_DIR``: (re)write the run's viewer.html and print its path."""
    parser = argparse.ArgumentParser(
        prog="agentbench-view", description="Write viewer.html for a pytest-agentbench run folder."
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run folder, e.g. benchmark_results/<run>")
    parser.add_argument("other", metavar="RUN_B", nargs="?", default=None,
                        help="a second run: write RUN_B/compare-<RUN_DIR>.html comparing RUN_B with RUN_DIR instead")
    args = parser.parse_args(argv)
    if args.other is not None:
        from .compare_view import main_compare

        return main_compare(args.run_dir, args.other)
    run = Path(args.run_dir)
    problem = _run_dir_problem(run)
    if problem:
        print(f"agentbench-view: {problem}", file=sys.stderr)
        return 2
    try:
        path = write_viewer(run)
    except OSError as exc:
        print(f"agentbench-view: cannot write {run / VIEWER_NAME}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


def _run_dir_problem(run: Path) -> str | None:
    """Why ``run`` is not a run folder, or None. Checked so a typo never litters a random folder."""
    if not run.exists():
        return f"{run} does not exist"
    if not run.is_dir():
        return f"{run} is not a directory"
    if not any((run / name).is_file() for name in RUN_FILES):
        return f"{run} is not a run folder (it has none of {', '.join(RUN_FILES)})"
    return None


# -- reading the run folder ---------------------------------------------------------------------


@dataclass
class RunView:
    """What the page embeds, each as its own JSON block: ``data`` (run facts, metrics, notes and,
    per task, where its trajectory is), ``results`` (the results.jsonl records as one escaped JSON
    array) and ``trajectories`` (raw escaped text, indexed from ``data["traj"]``)."""

    data: dict[str, Any]
    results: str = "[]"
    trajectories: list[str] = field(default_factory=list)


def collect(run: Path) -> RunView:
    """Read the run folder into what the page embeds. Tolerates every missing or broken file,
    and says so in ``data["notes"]``, shown at the top of the page."""
    notes: list[str] = []
    inside = _Inside(run)
    summary = _read_summary(inside, notes)
    records, results = _read_records(inside, notes)
    if not records and isinstance(summary.get("tasks"), list):
        records = [r for r in summary["tasks"] if isinstance(r, dict) and r.get("task_id") is not None]
        results = None
    reader = _TrajectoryReader(inside)
    where = []
    for record in records:
        rel = _trajectory_rel(record)
        where.append([*reader.load(rel), rel])
    notes.extend(reader.notes())
    notes.extend(inside.notes())
    data = {
        "run": _run_facts(run, summary, records),
        "metrics": _metrics_view(summary if _has_metrics(summary) else _compute(records)),
        "by_domain": _domain_rows(summary, records),
        "traj": where,
        "notes": notes,
        "statistics": viewer_statistics(summary, records),
    }
    return RunView(data, embed_json(records) if results is None else results, reader.texts)


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
        except OSError as exc:
            if os.path.islink(os.path.join(self.root, rel)):
                self.links.append(rel)
                raise SymlinkRefused(rel) from None
            raise exc

    def notes(self) -> list[str]:
        if not self.links:
            return []
        return [f"{len(self.links)} file(s) not read because they are (or are under) symbolic links: {_some(self.links)}"]


class SymlinkRefused(OSError):
    """A file of the run folder is a symbolic link (or lies under one); it is never followed."""


def _read_summary(inside: _Inside, notes: list[str]) -> dict[str, Any]:
    try:
        raw = inside.read("summary.json", RECORD_LIMIT)
        if raw is None:
            raise ValueError(f"bigger than {RECORD_LIMIT} bytes")
        data = json.loads(raw)
    except SymlinkRefused:
        return {}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        notes.append(f"summary.json could not be read ({_short_error(exc)}); metrics are computed from results.jsonl")
        return {}
    return data if isinstance(data, dict) else {}


def _read_records(inside: _Inside, notes: list[str]) -> tuple[list[dict[str, Any]], str | None]:
    """Read results.jsonl leniently: a bad line is skipped and reported, never fatal.

    Returns the records and, for the page, their lines as one escaped JSON array: the file's own
    bytes, not re-encoded, which saves most of the cost of embedding them. None when that text
    holds a NaN or Infinity (Python writes them, ``JSON.parse`` rejects them).
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
    except ValueError:
        parsed = []
    if len(parsed) != len(lines):  # a bad line, or one like ``{...},{...}`` that holds two values
        parsed = [_loads_or_none(line) for line in lines]
    records, kept, bad = [], [], []
    for number, (line, record) in enumerate(zip(lines, parsed), 1):
        if isinstance(record, dict) and record.get("task_id") is not None:
            records.append(record)
            kept.append(line)
        else:
            bad.append(number)
    if bad:
        shown = ", ".join(str(n) for n in bad[:10]) + (" ..." if len(bad) > 10 else "")
        notes.append(f"results.jsonl: skipped {len(bad)} malformed record(s) (record {shown})")
    raw = b"[" + b",".join(kept) + b"]"
    if b"NaN" in raw or b"Infinity" in raw:
        return records, None
    return records, escape_json_text(raw.decode("utf-8", "replace"))


def _loads_or_none(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _trajectory_rel(record: Mapping[str, Any]) -> str:
    """Where the record says its trajectory is, or where the run folder would have put it."""
    rel = _safe_rel(record.get("trajectory"))
    if rel is not None:
        return rel
    return f"tasks/{task_slug(str(record.get('benchmark') or ''))}/{task_slug(str(record['task_id']))}.trajectory.json"


class _TrajectoryReader:
    """Reads trajectory files as text (never parsed here) and remembers what it could not embed."""

    def __init__(self, inside: _Inside) -> None:
        self.inside = inside
        self.texts: list[str] = []
        self.total = 0
        self.seen: dict[str, tuple[int | None, str | None]] = {}
        self.missing: list[str] = []
        self.too_big: list[str] = []

    def load(self, rel: str) -> tuple[int | None, str | None]:
        """The index of the embedded text, or None and why ("missing" or "too big")."""
        if rel not in self.seen:
            self.seen[rel] = self._read(rel)
        return self.seen[rel]

    def _read(self, rel: str) -> tuple[int | None, str | None]:
        limit = min(TRAJECTORY_LIMIT, TOTAL_LIMIT - self.total)
        try:
            raw = self.inside.read(rel, limit)
        except SymlinkRefused:
            return None, "missing"
        except OSError:
            self.missing.append(rel)
            return None, "missing"
        if raw is None:
            self.too_big.append(rel)
            return None, "too big"
        self.total += len(raw)
        self.texts.append(escape_json_text(raw.decode("utf-8", "replace")))
        return len(self.texts) - 1, None

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
    return {
        "name": str(summary.get("run_name") or run.resolve().name),
        "agent": str(agent),
        "model": str(model) if model and model != agent else None,
        "benchmarks": [str(b) for b in benchmarks],
        "created_at": str(summary.get("created_at") or "") or None,
        "elapsed": _elapsed(summary.get("created_at"), summary.get("finished_at")),
        "max_steps": _int(summary.get("max_steps"), 0) or None,
        "finished": bool(summary),
    }


def _has_metrics(summary: Mapping[str, Any]) -> bool:
    return isinstance(summary.get("num_attempts"), int)


def _metrics_view(source: Mapping[str, Any]) -> dict[str, Any]:
    """The terminal's "Evaluation Results" numbers, formatted exactly as the terminal does."""
    rate, score = _float(source.get("success_rate")), _float(source.get("avg_score"))
    cost = _float(source.get("total_cost_usd")) or 0.0
    return {
        "attempts": _int(source.get("num_attempts"), 0),
        "outcomes": _int(source.get("num_outcome_tasks"), 0),
        "errors": _int(source.get("error_count"), 0),
        "success_count": _int(source.get("success_count"), 0),
        "infrastructure": _int(source.get("num_infrastructure_failures"), 0),
        "evaluation": _int(source.get("num_evaluation_failures"), 0),
        "agent": _int(source.get("num_agent_failures"), 0),
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
    return [{"domain": str(name), **_metrics_view(stats)}
            for name, stats in sorted(domains.items()) if isinstance(stats, dict)]


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
    minutes, secs = divmod(int(round(seconds)), 60)
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


# -- rendering ----------------------------------------------------------------------------------


def escape_json_text(text: str) -> str:
    """Make JSON text safe inside ``<script type="application/json">``.

    ``<``, ``>`` and ``&`` never occur in JSON outside strings, and inside strings their ``\\uXXXX``
    escapes mean the same, so valid JSON parses to the same value; text that is not JSON stays not
    JSON. Either way no ``</script>`` or ``<!--`` survives to end the block early.
    """
    # The membership tests are cheap and usually false: most trajectories hold none of the three.
    if "&" in text:
        text = text.replace("&", "\\u0026")
    if "<" in text:
        text = text.replace("<", "\\u003c")
    if ">" in text:
        text = text.replace(">", "\\u003e")
    return text


def embed_json(data: Any) -> str:
    """``data`` as JSON for a script block (ASCII, NaN-free, escaped)."""
    try:
        text = json.dumps(data, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    except ValueError:  # a NaN from a hand-edited file: JSON.parse would reject the whole block
        text = json.dumps(_finite(data), ensure_ascii=True, separators=(",", ":"))
    return escape_json_text(text)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def render_html(view: RunView) -> str:
    """Fill the page template in one pass, so no value is ever re-scanned for placeholders."""
    trajectories = "".join(
        f'<script type="application/json" id="traj-{index}">{text}</script>\n'
        for index, text in enumerate(view.trajectories)
    )
    parts = {
        "CSP": _CSP,
        "TITLE": html.escape(f"{view.data['run']['name']} \u00b7 agentbench", quote=True),
        "CSS": _CSS,
        "JS": _JS,
        "DATA": embed_json(view.data),
        "RESULTS": view.results,
        "TRAJECTORIES": trajectories,
    }
    return _PLACEHOLDER.sub(lambda match: parts[match.group(1)], _PAGE)


def _csp_hash(source: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


_CSS = r"""
:root {
  --bg: #f6f7f9; --panel: #ffffff; --ink: #1b2430; --muted: #5d6b7e; --faint: #8a96a8;
  --line: #e3e7ed; --hover: #f2f5f9; --open: #eef4ff; --accent: #2f6fdf; --code: #f3f5f8;
  --pass: #1f8a4c; --pass-bg: #e3f5ea; --fail: #c93a3a; --fail-bg: #fbe7e7;
  --err: #a45a00; --err-bg: #fdf0dc; --skip: #5d6b7e; --skip-bg: #eceff3;
  --xf: #7a5cc7; --xf-bg: #efeafb; --shadow: 0 1px 2px rgba(20, 30, 50, .06), 0 1px 8px rgba(20, 30, 50, .04);
  --mono: ui-monospace, "SFMono-Regular", "JetBrains Mono", Menlo, Consolas, "Liberation Mono", monospace;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #11151b; --panel: #181d25; --ink: #e4e9f0; --muted: #9aa7b8; --faint: #6f7c8e;
    --line: #2a313c; --hover: #1e2430; --open: #1c2636; --accent: #6d9eff; --code: #202733;
    --pass: #4cc27d; --pass-bg: #173626; --fail: #f07272; --fail-bg: #3a1c1e;
    --err: #f0a54a; --err-bg: #3a2a14; --skip: #9aa7b8; --skip-bg: #262d38;
    --xf: #ad95f0; --xf-bg: #2a2340; --shadow: none;
  }
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body {
  margin: 0; background: var(--bg); color: var(--ink);
  font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
}
.wrap { max-width: 1280px; margin: 0 auto; padding: 0 24px; }
header.top { background: var(--panel); border-bottom: 1px solid var(--line); padding: 18px 0 16px; }
.brand { font-size: 12px; letter-spacing: .08em; text-transform: uppercase; color: var(--faint); font-weight: 600; }
h1 { margin: 2px 0 6px; font-size: 22px; font-weight: 650; word-break: break-all; }
.meta { display: flex; flex-wrap: wrap; gap: 6px 18px; color: var(--muted); font-size: 13px; }
.meta-key { color: var(--faint); margin-right: 5px; }
.meta-val { color: var(--ink); }
main { padding-top: 20px; padding-bottom: 48px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 12px; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 12px 14px; box-shadow: var(--shadow); }
.card-label { font-size: 12px; color: var(--muted); font-weight: 600; }
.card-value { font-size: 26px; font-weight: 650; margin-top: 2px; font-variant-numeric: tabular-nums; }
.card-sub { font-size: 12px; color: var(--faint); }
.card.hero .card-value { color: var(--accent); }
.meter { height: 5px; background: var(--line); border-radius: 3px; margin-top: 8px; overflow: hidden; }
.meter > .fill { display: block; height: 100%; background: var(--pass); border-radius: 3px; }
.chips { display: flex; flex-wrap: wrap; gap: 8px; margin: 16px 0 0; }
.chip { border: 1px solid var(--line); background: var(--panel); color: var(--ink); border-radius: 999px;
  padding: 3px 11px 3px 8px; font: inherit; font-size: 13px; cursor: pointer; display: inline-flex; align-items: center; gap: 6px; }
.chip:hover { background: var(--hover); }
.chip.on { border-color: var(--accent); box-shadow: 0 0 0 1px var(--accent) inset; }
.chip b { font-variant-numeric: tabular-nums; }
.notes { margin: 16px 0 0; padding: 10px 14px; border-radius: 8px; background: var(--err-bg); color: var(--err); font-size: 13px; }
.notes p { margin: 2px 0; }
details.domains { margin-top: 16px; background: var(--panel); border: 1px solid var(--line); border-radius: 10px; box-shadow: var(--shadow); }
details.domains summary { cursor: pointer; padding: 10px 14px; font-weight: 600; color: var(--muted); }
details.domains table { margin: 0 0 6px; }
.panel { margin-top: 16px; background: var(--panel); border: 1px solid var(--line); border-radius: 10px; box-shadow: var(--shadow); overflow: clip; }
.toolbar { display: flex; flex-wrap: wrap; gap: 10px; align-items: center; padding: 12px 14px; border-bottom: 1px solid var(--line); }
.toolbar input, .toolbar select {
  font: inherit; color: var(--ink); background: var(--bg); border: 1px solid var(--line); border-radius: 7px; padding: 6px 10px; }
.toolbar input { flex: 1 1 260px; min-width: 180px; }
.toolbar input:focus, .toolbar select:focus { outline: 2px solid var(--accent); outline-offset: -1px; }
.count { color: var(--muted); font-size: 13px; margin-left: auto; white-space: nowrap; }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: 8px 12px; border-bottom: 1px solid var(--line); vertical-align: top; }
thead th { font-size: 12px; color: var(--muted); font-weight: 600; background: var(--panel); position: sticky; top: 0; z-index: 1; white-space: nowrap; }
th button { all: unset; cursor: pointer; }
th button:focus-visible { outline: 2px solid var(--accent); }
th[aria-sort="ascending"] button::after { content: " \25B2"; font-size: 9px; }
th[aria-sort="descending"] button::after { content: " \25BC"; font-size: 9px; }
.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tbody tr.row { cursor: pointer; scroll-margin-top: 44px; }
tbody tr.row:hover { background: var(--hover); }
tbody tr.row.open { background: var(--open); }
tbody tr.row.open > td { border-bottom-color: transparent; }
td.task { font-family: var(--mono); font-size: 13px; word-break: break-all; }
.toggle { all: unset; cursor: pointer; }
.toggle:focus-visible { outline: 2px solid var(--accent); border-radius: 3px; }
.toggle::before { content: ""; display: inline-block; width: 6px; height: 6px; margin: 0 9px 2px 1px;
  border: solid var(--faint); border-width: 0 1.5px 1.5px 0; transform: rotate(-45deg); transition: transform .12s; }
tr.open .toggle::before { transform: rotate(45deg); }
td.reason { color: var(--muted); max-width: 420px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.muted { color: var(--faint); }
.warn { color: var(--err); font-weight: 600; }
.badge { display: inline-block; font-size: 12px; font-weight: 600; padding: 1px 8px; border-radius: 999px; white-space: nowrap; }
.s-passed { color: var(--pass); background: var(--pass-bg); }
.s-failed { color: var(--fail); background: var(--fail-bg); }
.s-error { color: var(--err); background: var(--err-bg); }
.s-skipped { color: var(--skip); background: var(--skip-bg); }
.s-xfailed, .s-xpassed { color: var(--xf); background: var(--xf-bg); }
.dot { width: 8px; height: 8px; border-radius: 50%; display: inline-block; background: currentColor; }
.scorebar { display: inline-block; vertical-align: middle; height: 6px; width: 40px; margin-right: 8px; background: var(--line); border-radius: 3px; overflow: hidden; }
.scorebar > .fill { display: block; height: 100%; background: var(--accent); }
tr.detail > td { background: var(--open); padding: 0 12px 16px; }
.detail-body { display: grid; gap: 14px; padding: 4px 4px 0 14px; }
.section-title { font-size: 12px; font-weight: 650; text-transform: uppercase; letter-spacing: .06em; color: var(--muted); margin: 0 0 6px; }
.box { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
.box.error { border-color: var(--fail); background: var(--fail-bg); color: var(--fail); }
.pre { white-space: pre-wrap; word-break: break-word; font-family: var(--mono); font-size: 12.5px; margin: 0; }
.facts { display: flex; flex-wrap: wrap; gap: 4px 16px; color: var(--muted); font-size: 12.5px; }
.facts code, code { font-family: var(--mono); font-size: 12px; background: var(--code); padding: 1px 5px; border-radius: 4px; color: var(--ink); word-break: break-all; }
.facts a, .detail-body a { color: var(--accent); }
table.criteria { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; border-collapse: separate; border-spacing: 0; overflow: hidden; }
table.criteria th { position: static; }
table.criteria td { font-size: 13px; }
table.criteria td:first-child, table.criteria th:first-child { width: 32px; text-align: center; padding-right: 0; }
table.criteria tr:last-child td { border-bottom: 0; }
table.criteria td.val { font-family: var(--mono); font-size: 12px; color: var(--muted); word-break: break-all; }
.mark-pass { color: var(--pass); font-weight: 650; }
.mark-fail { color: var(--fail); font-weight: 650; }
.mark-na { color: var(--faint); font-weight: 650; }
ol.steps { list-style: none; margin: 0; padding: 0; display: grid; gap: 10px; }
.step { display: grid; grid-template-columns: 240px 1fr; gap: 14px; background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 10px; }
.step.noshot { grid-template-columns: 1fr; }
.step-head { display: flex; gap: 10px; align-items: baseline; flex-wrap: wrap; }
.step-no { font-size: 12px; font-weight: 650; color: var(--faint); font-variant-numeric: tabular-nums; }
.action { font-family: var(--mono); font-size: 13px; background: var(--code); padding: 1px 6px; border-radius: 4px; word-break: break-all; }
.step-time { font-size: 12px; color: var(--faint); margin-left: auto; }
.reasoning { margin: 6px 0 0; white-space: pre-wrap; word-break: break-word; color: var(--ink); }
.reasoning.none { color: var(--faint); font-style: italic; }
.shot { all: unset; cursor: zoom-in; display: block; }
.shot img, .final img { display: block; width: 100%; height: auto; border: 1px solid var(--line); border-radius: 6px; background: var(--code); aspect-ratio: 16 / 10; object-fit: contain; }
.shot:focus-visible img { outline: 2px solid var(--accent); }
.final { max-width: 560px; }
.gone { display: flex; align-items: center; justify-content: center; aspect-ratio: 16 / 10; border: 1px dashed var(--line); border-radius: 6px; color: var(--faint); font-size: 12px; }
.empty { text-align: center; color: var(--faint); padding: 36px 12px; }
.lightbox { position: fixed; inset: 0; background: rgba(8, 12, 18, .86); display: flex; flex-direction: column; align-items: center; justify-content: center; z-index: 10; padding: 24px; }
.lightbox[hidden] { display: none; }
.lightbox img { max-width: 94vw; max-height: 82vh; border-radius: 6px; background: #fff; box-shadow: 0 8px 40px rgba(0, 0, 0, .5); }
.lb-bar { display: flex; gap: 12px; align-items: center; color: #dfe6ef; margin-top: 12px; font-size: 13px; }
.lb-bar button { font: inherit; color: #fff; background: rgba(255, 255, 255, .12); border: 0; border-radius: 6px; padding: 5px 12px; cursor: pointer; }
.lb-bar button:hover { background: rgba(255, 255, 255, .22); }
.lb-caption { font-family: var(--mono); max-width: 60vw; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
footer { color: var(--faint); font-size: 12px; margin-top: 20px; text-align: center; }
@media (max-width: 760px) {
  .wrap { padding: 0 12px; }
  .panel { overflow-x: auto; }
  .step { grid-template-columns: 1fr; }
  td.reason, th.col-reason, td.domain, th.col-domain, td.bench, th.col-bench, .scorebar { display: none; }
  th, td { padding: 8px 8px; }
}
"""

_JS = r"""
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("run-data").textContent);
  var RANK = { error: 0, failed: 1, xpassed: 2, skipped: 3, xfailed: 4, passed: 5 };
  var NOT_SCORED = { infrastructure: true, evaluation: true };
  var state = { q: "", status: "", benchmark: "", domain: "", sort: null, dir: 1, open: {} };
  var gallery = { shots: [], index: 0 };

  /* ---- small helpers ---------------------------------------------------------------------- */
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined || child === false) continue;
      parent.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return parent;
  }
  function $(id) { return document.getElementById(id); }
  function str(v) { return v === null || v === undefined ? "" : typeof v === "string" ? v : String(v); }
  function num(v) { return typeof v === "number" && isFinite(v) ? v : null; }
  function obj(v) { return v !== null && typeof v === "object" && !Array.isArray(v) ? v : {}; }
  function list(v) { return Array.isArray(v) ? v : []; }
  /* A path inside the run folder, or null: no scheme (javascript:, http:), no /abs, no "..". */
  function safeRel(p) {
    if (typeof p !== "string" || !p || p.length > 1000 || p.charAt(0) === "/" || /[:\\]/.test(p)) return null;
    return p.split("/").every(function (part) { return part && part !== "." && part !== ".."; }) ? p : null;
  }
  function fileUrl(path) { return path.split("/").map(encodeURIComponent).join("/"); }
  function secs(s) {
    if (s === null) return "";
    return s < 1 ? Math.round(s * 1000) + " ms" : s < 60 ? s.toFixed(1) + " s" : Math.floor(s / 60) + "m " + Math.round(s % 60) + "s";
  }
  function valueText(v) {
    if (v === null || v === undefined) return "";
    var text;
    try { text = JSON.stringify(v); } catch (e) { text = String(v); }
    text = text === undefined ? String(v) : text;
    return text.length > 300 ? text.slice(0, 300) + "\u2026" : text;
  }
  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

  /* ---- rows: results.jsonl records, normalised once -------------------------------------- */
  function isOutcome(r) {
    if (r.hasOwnProperty("outcome")) return !!r.outcome;
    if (NOT_SCORED[r.error_type]) return false;
    return r.status !== "skipped";
  }
  function statusOf(r) {
    if (typeof r.status === "string" && r.status) return r.status;
    if (NOT_SCORED[r.error_type]) return "error";
    if (r.success === true) return "passed";
    return isOutcome(r) ? "failed" : "skipped";
  }
  function normalize(r, key) {
    var shots = list(r.screenshots).map(safeRel).filter(Boolean), where = list(DATA.traj[key]);
    return {
      key: key, task_id: str(r.task_id) + (MULTI_TRIAL && num(r.trial) ? "::trial-" + num(r.trial) : ""), benchmark: str(r.benchmark), domain: str(r.domain) || "default",
      nodeid: str(r.nodeid), status: statusOf(r), outcome: isOutcome(r), score: num(r.score),
      num_steps: num(r.num_steps) || 0, step_limit: num(r.step_limit) || 0, reason: str(r.reason),
      error: str(r.error), error_type: str(r.error_type), seconds: num(r.total_time_seconds), cost: num(r.cost_usd),
      criteria: Array.isArray(r.criteria) ? r.criteria : null, screenshots: shots,
      traj: typeof where[0] === "number" ? where[0] : null, trajProblem: str(where[1]), trajectory: safeRel(where[2])
    };
  }
  var MULTI_TRIAL = !!(DATA.statistics && DATA.statistics.trials !== "1" && DATA.statistics.trials !== "0");
  var TASKS = list(JSON.parse($("run-results").textContent)).map(function (r, i) { return normalize(obj(r), i); });
  function scoreText(t) { return t.outcome && t.score !== null ? t.score.toFixed(3) : "n/a"; }
  function badge(status) { return el("span", "badge s-" + (RANK.hasOwnProperty(status) ? status : "skipped"), status); }
  function anchor(t) { return t.benchmark + "/" + t.task_id; }

  /* ---- trajectories: embedded verbatim, parsed on first open ------------------------------ */
  var parsed = {};
  function trajectoryOf(t) {
    if (t.traj === null) return { data: null, problem: t.trajProblem === "too big" ? "too big to embed; open trajectory.json" : "trajectory.json not found" };
    if (!parsed.hasOwnProperty(t.traj)) {
      var node = $("traj-" + t.traj);
      try { parsed[t.traj] = { data: obj(JSON.parse(node.textContent)), problem: "" }; }
      catch (e) { parsed[t.traj] = { data: null, problem: "trajectory.json is not valid JSON" }; }
    }
    return parsed[t.traj];
  }
  function stepsOf(traj) {
    return list(traj.steps).filter(function (s) { return s && typeof s === "object"; }).map(function (s, i) {
      var action = obj(s.action);
      return { index: num(s.index) === null ? i : s.index, label: str(s.label || action.type || "(no action)"),
               reasoning: str(s.reasoning), shot: safeRel(s.screenshot_path), seconds: num(s.seconds) };
    });
  }

  /* ---- header, metrics, notes ------------------------------------------------------------ */
  function renderHeader() {
    var run = DATA.run;
    $("run-name").textContent = run.name;
    var items = [["agent", run.agent], ["model", run.model], ["benchmarks", run.benchmarks.join(", ")],
                 ["started", run.created_at], ["took", run.elapsed], ["max steps", run.max_steps]];
    if (!run.finished) items.push(["state", "no summary.json (interrupted or still running)"]);
    items.forEach(function (item) {
      if (item[1] === null || item[1] === undefined || item[1] === "") return;
      add($("run-meta"), add(el("span", "meta-item"), el("span", "meta-key", item[0]), el("span", "meta-val", item[1])));
    });
  }
  function card(label, value, sub, cls, meter) {
    var box = add(el("div", "card" + (cls ? " " + cls : "")), el("div", "card-label", label), el("div", "card-value", value), el("div", "card-sub", sub));
    if (meter !== null && meter !== undefined) {
      var bar = el("span", "fill");
      bar.style.width = Math.round(meter * 100) + "%";
      add(box, add(el("div", "meter"), bar));
    }
    return box;
  }
  function renderMetrics() {
    var m = DATA.metrics, errs = [];
    if (m.infrastructure) errs.push(m.infrastructure + " infra");
    if (m.evaluation) errs.push(m.evaluation + " eval");
    if (m.agent) errs.push(m.agent + " agent");
    var box = $("metrics");
    add(box,
      card("Success rate", m.success_rate, m.success_count + " of " + m.outcomes + " passed \u00b7 outcomes only", "hero", m.rate),
      card("Avg score", m.avg_score, "outcomes only"),
      card("Attempts", m.attempts, "avg " + m.avg_time + " each"),
      card("Outcomes", m.outcomes, m.not_evaluated ? m.not_evaluated + " not evaluated" : "scored by the checker"),
      card("Errors", m.errors, errs.length ? errs.join(" \u00b7 ") : "none"),
      card("Avg steps", m.avg_steps, "all attempts"));
    if (m.cost) add(box, card("Cost", m.cost, "total"));
    var st = DATA.statistics;
    if (st) {
      add(box, card("95% interval", st.ci95, "success rate \u00b7 " + st.method));
      if (st.k && st.k !== "1") add(box, card("pass^" + st.k, st.pass_hat, "pass@" + st.k + " " + st.pass_at + " \u00b7 all " + st.k + " trials pass"));
      if (st.flip_rate) add(box, card("Flip rate", st.flip_rate, st.flipped + " task(s) with both verdicts"));
    }
  }
  function renderChips() {
    var counts = {};
    TASKS.forEach(function (t) { counts[t.status] = (counts[t.status] || 0) + 1; });
    Object.keys(counts).sort(function (a, b) { return (RANK.hasOwnProperty(a) ? RANK[a] : 9) - (RANK.hasOwnProperty(b) ? RANK[b] : 9); }).forEach(function (status) {
      var chip = add(el("button", "chip"), el("span", "dot s-" + status), status, " ", el("b", null, counts[status]));
      chip.type = "button";
      chip.dataset.status = status;
      chip.title = "Show only " + status + " tasks";
      chip.addEventListener("click", function () {
        state.status = state.status === status ? "" : status;
        $("f-status").value = state.status;
        update();
      });
      add($("chips"), chip);
    });
  }
  function renderNotes() {
    if (!DATA.notes.length) return;
    DATA.notes.forEach(function (note) { add($("notes"), el("p", null, note)); });
    $("notes").hidden = false;
  }
  function renderDomains() {
    var rows = DATA.by_domain;
    if (rows.length < 2) return;
    var table = el("table"), head = el("tr"), body = el("tbody");
    ["Domain", "Attempts", "Outcomes", "Passed", "Success", "Avg score", "Errors"].forEach(function (h, i) {
      add(head, el("th", i ? "num" : null, h));
    });
    rows.forEach(function (r) {
      add(body, add(el("tr"), el("td", null, r.domain), el("td", "num", r.attempts), el("td", "num", r.outcomes),
        el("td", "num", r.success_count), el("td", "num", r.success_rate), el("td", "num", r.avg_score), el("td", "num", r.errors)));
    });
    add(table, add(el("thead"), head), body);
    add($("domains"), table);
    $("domains").querySelector("summary").textContent = "By domain (" + rows.length + ")";
    $("domains").hidden = false;
  }

  /* ---- filters and sorting ---------------------------------------------------------------- */
  function fillSelect(id, key, label) {
    var select = $(id), seen = {};
    TASKS.forEach(function (t) { seen[t[key]] = (seen[t[key]] || 0) + 1; });
    var values = Object.keys(seen).sort();
    var all = el("option", null, "All " + label);
    all.value = "";
    add(select, all);
    values.forEach(function (v) { var o = el("option", null, v + " (" + seen[v] + ")"); o.value = v; add(select, o); });
    if (values.length < 2 && key !== "status") select.hidden = true;
    select.addEventListener("change", function () { state[key] = select.value; update(); });
  }
  function matches(t) {
    if (state.status && t.status !== state.status) return false;
    if (state.benchmark && t.benchmark !== state.benchmark) return false;
    if (state.domain && t.domain !== state.domain) return false;
    if (!state.q) return true;
    if (!t.hay) t.hay = [t.task_id, t.benchmark, t.domain, t.status, t.reason, t.error, t.nodeid].join("\n").toLowerCase();
    return t.hay.indexOf(state.q) !== -1;
  }
  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });
  var KEYS = {
    status: function (t) { return RANK.hasOwnProperty(t.status) ? RANK[t.status] : 9; },
    benchmark: function (t) { return t.benchmark; },
    domain: function (t) { return t.domain; },
    task_id: function (t) { return t.task_id; },
    score: function (t) { return t.outcome ? t.score : null; },
    num_steps: function (t) { return t.num_steps; },
    reason: function (t) { return t.error || t.reason; }
  };
  function compare(a, b) {
    if (!state.sort) return a.key - b.key;
    var f = KEYS[state.sort], x = f(a), y = f(b);
    if (x === null && y === null) return a.key - b.key;
    if (x === null) return 1;  /* unscored rows last, whichever way */
    if (y === null) return -1;
    var c = typeof x === "number" ? x - y : collator.compare(x, y);
    return c ? c * state.dir : a.key - b.key;
  }
  function bindSorting() {
    Array.prototype.forEach.call(document.querySelectorAll("#tasks thead th[data-key]"), function (th) {
      var button = el("button", null, th.textContent);
      button.type = "button";
      button.title = "Sort by " + th.textContent.toLowerCase();
      th.textContent = "";
      add(th, button);
      button.addEventListener("click", function () {
        var key = th.dataset.key;
        if (state.sort === key) state.dir = -state.dir;
        else { state.sort = key; state.dir = (key === "score" || key === "num_steps") ? -1 : 1; }
        Array.prototype.forEach.call(document.querySelectorAll("#tasks thead th"), function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
        update();
      });
    });
  }

  /* ---- the task table --------------------------------------------------------------------- */
  function row(t) {
    var tr = el("tr", "row" + (state.open[t.key] ? " open" : ""));
    tr.dataset.key = t.key;
    var toggle = el("button", "toggle", t.task_id);
    toggle.type = "button";
    toggle.setAttribute("aria-expanded", state.open[t.key] ? "true" : "false");
    var score = el("td", "num score", scoreText(t));
    if (!t.outcome) { score.classList.add("muted"); score.title = "not scored: left out of the success rate"; }
    else if (t.score !== null) {
      var fill = el("span", "fill");
      fill.style.width = Math.round(Math.max(0, Math.min(1, t.score)) * 100) + "%";
      score.insertBefore(add(el("span", "scorebar"), fill), score.firstChild);
    }
    var steps = el("td", "num steps", t.num_steps);
    if (t.step_limit) add(steps, el("span", "muted", " / " + t.step_limit));
    var why = t.error || t.reason;
    var reason = el("td", "reason", why);
    reason.title = why;
    add(tr, add(el("td", "status"), badge(t.status)), el("td", "bench", t.benchmark), el("td", "domain", t.domain),
        add(el("td", "task"), toggle), score, steps, reason);
    tr.addEventListener("click", function () {
      if (String(window.getSelection()).length) return;  /* selecting text is not a click */
      toggleTask(t);
    });
    return tr;
  }
  function update() {
    var body = $("task-rows");
    body.textContent = "";
    var shown = TASKS.filter(matches).sort(compare);
    shown.forEach(function (t) {
      add(body, row(t));
      if (state.open[t.key]) add(body, detailRow(t));
    });
    if (!shown.length) {
      var td = el("td", "empty", TASKS.length ? "No tasks match these filters." : "No results in this run yet.");
      td.colSpan = 7;
      add(body, add(el("tr"), td));
    }
    var total = plural(TASKS.length, "task");
    $("count").textContent = shown.length === TASKS.length ? total : shown.length + " of " + total;
    Array.prototype.forEach.call(document.querySelectorAll(".chip"), function (chip) {
      chip.classList.toggle("on", chip.dataset.status === state.status);
    });
  }
  function toggleTask(t, fromHash) {
    state.open[t.key] = !state.open[t.key];
    update();
    if (fromHash) return;
    try {
      history.replaceState(null, "", state.open[t.key] ? "#" + encodeURIComponent(anchor(t)) : location.pathname + location.search);
    } catch (e) { /* some browsers refuse history changes on file:// pages */ }
  }

  /* ---- one task's detail ------------------------------------------------------------------ */
  function section(title) { return add(el("div", "section"), el("div", "section-title", title)); }
  function image(path, caption, shots) {
    var position = shots.length;
    shots.push({ path: path, caption: caption });
    var img = el("img");
    img.loading = "lazy";
    img.alt = caption;
    img.src = fileUrl(path);
    img.addEventListener("error", function () {
      if (img.parentNode) img.parentNode.replaceChild(el("div", "gone", "screenshot not found: " + path), img);
    });
    var button = add(el("button", "shot"), img);
    button.type = "button";
    button.title = "Enlarge " + caption;
    button.addEventListener("click", function (event) { event.stopPropagation(); openLightbox(shots, position); });
    return button;
  }
  function link(path, text) {
    var a = el("a", null, text);
    a.href = fileUrl(path);
    a.target = "_blank";
    a.rel = "noopener";
    return a;
  }
  function facts(t, traj) {
    var box = el("div", "facts");
    if (t.nodeid) add(box, add(el("span"), "node ", el("code", null, t.nodeid)));
    if (t.seconds !== null) add(box, el("span", null, "time " + secs(t.seconds)));
    if (t.cost) add(box, el("span", null, "cost $" + t.cost.toFixed(4)));
    var message = str(traj.data && traj.data.message);
    if (message && !t.reason && !t.error) add(box, el("span", null, message.split("\n")[0]));
    if (t.trajectory && t.trajProblem !== "missing") add(box, link(t.trajectory, "trajectory.json"));
    if (traj.problem) add(box, el("span", "warn", traj.problem));
    return box;
  }
  function criteriaTable(items) {
    var rows = items.filter(function (c) { return c && typeof c === "object"; }).map(function (c) {
      return { name: str(c.name) || "(unnamed)", passed: typeof c.passed === "boolean" ? c.passed : null,
               detail: str(c.detail), expected: valueText(c.expected), actual: valueText(c.actual) };
    });
    var cols = [["detail", "Detail", null], ["expected", "Expected", "val"], ["actual", "Actual", "val"]].filter(function (col) {
      return rows.some(function (c) { return c[col[0]] !== ""; });  /* drop all-empty columns */
    });
    var table = el("table", "criteria"), head = add(el("tr"), el("th"), el("th", null, "Criterion")), body = el("tbody");
    cols.forEach(function (col) { add(head, el("th", null, col[1])); });
    rows.forEach(function (c) {
      var mark = c.passed === true ? ["\u2713", "mark-pass", "passed"] : c.passed === false ? ["\u2717", "mark-fail", "failed"] : ["\u2013", "mark-na", "not evaluated"];
      var cell = el("td", mark[1], mark[0]);
      cell.title = mark[2];
      var tr = add(el("tr"), cell, el("td", null, c.name));
      cols.forEach(function (col) { add(tr, el("td", col[2], c[col[0]])); });
      add(body, tr);
    });
    return add(table, add(el("thead"), head), body);
  }
  function stepItem(s, shots) {
    var li = el("li", "step" + (s.shot ? "" : " noshot"));
    if (s.shot) add(li, image(s.shot, "step " + s.index + ": " + s.label, shots));
    var head = add(el("div", "step-head"), el("span", "step-no", "STEP " + s.index), el("span", "action", s.label),
      s.seconds !== null ? el("span", "step-time", secs(s.seconds)) : null);
    return add(li, add(el("div"), head,
      s.reasoning ? el("p", "reasoning", s.reasoning) : el("p", "reasoning none", "no reasoning recorded")));
  }
  function renderDetail(t) {
    var traj = trajectoryOf(t), data = traj.data || {}, shots = [];
    var steps = stepsOf(data), task = obj(data.task), verdict = obj(data.verdict);
    var final = safeRel(data.final_screenshot) || t.screenshots.filter(function (p) { return /(^|\/)final\.png$/.test(p); })[0] || null;
    var claimed = {};
    steps.forEach(function (s) { if (s.shot) claimed[s.shot] = true; });
    if (final) claimed[final] = true;
    var loose = t.screenshots.filter(function (p) { return !claimed[p]; });
    var criteria = t.criteria || list(verdict.criteria);
    var body = el("div", "detail-body");
    add(body, facts(t, traj));
    if (str(task.instruction)) add(body, add(section("Instruction"), el("div", "box", str(task.instruction))));
    if (t.error) add(body, add(section("Error" + (t.error_type ? " (" + t.error_type + ")" : "")), el("pre", "box error pre", t.error)));
    if (t.reason && t.reason !== t.error) add(body, add(section("Verdict"), el("div", "box", t.reason)));
    if (criteria.length) add(body, add(section("Criteria"), criteriaTable(criteria)));
    if (traj.data) {
      var trail = section("Trajectory \u00b7 " + plural(steps.length, "action"));
      if (steps.length) {
        var ol = el("ol", "steps");
        steps.forEach(function (s) { add(ol, stepItem(s, shots)); });
        add(trail, ol);
      } else add(trail, el("div", "muted", "The agent took no actions."));
      add(body, trail);
    }
    if (loose.length) {
      var grid = el("ol", "steps");
      loose.forEach(function (p) { add(grid, add(el("li", "step"), image(p, p.split("/").pop(), shots))); });
      add(body, add(section("Screenshots"), grid));
    }
    if (final) add(body, add(section("Final screen"), add(el("div", "final"), image(final, "final screen", shots))));
    return body;
  }
  function detailRow(t) {
    var td = el("td");
    td.colSpan = 7;
    add(td, renderDetail(t));
    var tr = add(el("tr", "detail"), td);
    tr.dataset.key = t.key;
    return tr;
  }

  /* ---- screenshot lightbox ---------------------------------------------------------------- */
  function openLightbox(shots, index) {
    gallery.shots = shots;
    showShot(index);
    $("lightbox").hidden = false;
    $("lb-close").focus();
  }
  function showShot(index) {
    var n = gallery.shots.length;
    gallery.index = (index + n) % n;
    var shot = gallery.shots[gallery.index];
    $("lb-img").src = fileUrl(shot.path);
    $("lb-img").alt = shot.caption;
    $("lb-caption").textContent = shot.caption;
    $("lb-pos").textContent = (gallery.index + 1) + " / " + n;
  }
  function closeLightbox() { $("lightbox").hidden = true; $("lb-img").removeAttribute("src"); }
  function bindLightbox() {
    $("lb-close").addEventListener("click", closeLightbox);
    $("lb-prev").addEventListener("click", function () { showShot(gallery.index - 1); });
    $("lb-next").addEventListener("click", function () { showShot(gallery.index + 1); });
    $("lightbox").addEventListener("click", function (e) { if (e.target === $("lightbox")) closeLightbox(); });
    document.addEventListener("keydown", function (e) {
      if ($("lightbox").hidden) return;
      if (e.key === "Escape") closeLightbox();
      else if (e.key === "ArrowLeft") showShot(gallery.index - 1);
      else if (e.key === "ArrowRight") showShot(gallery.index + 1);
    });
  }

  /* ---- start ------------------------------------------------------------------------------ */
  function openFromHash() {
    var wanted;
    try { wanted = decodeURIComponent(location.hash.slice(1)); } catch (e) { return; }
    var hit = wanted && TASKS.filter(function (t) { return anchor(t) === wanted; })[0];
    if (!hit) return;
    toggleTask(hit, true);
    var tr = document.querySelector('tr.row[data-key="' + hit.key + '"]');
    if (tr) tr.scrollIntoView({ block: "start" });
  }
  renderHeader();
  renderMetrics();
  renderChips();
  renderNotes();
  renderDomains();
  fillSelect("f-status", "status", "statuses");
  fillSelect("f-benchmark", "benchmark", "benchmarks");
  fillSelect("f-domain", "domain", "domains");
  $("f-search").addEventListener("input", function (e) { state.q = e.target.value.trim().toLowerCase(); update(); });
  bindSorting();
  bindLightbox();
  update();
  openFromHash();
})();
"""

_CSP = "; ".join([
    "default-src 'none'",
    "img-src 'self' file:",
    f"style-src {_csp_hash(_CSS)}",
    f"script-src {_csp_hash(_JS)}",
    "base-uri 'none'",
    "form-action 'none'",
])

_PLACEHOLDER = re.compile(r"__(CSP|TITLE|CSS|JS|DATA|RESULTS|TRAJECTORIES)__")

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="__CSP__">
<meta name="referrer" content="no-referrer">
<meta name="generator" content="pytest-agentbench">
<title>__TITLE__</title>
<style>__CSS__</style>
</head>
<body>
<header class="top">
  <div class="wrap">
    <div class="brand">agentbench &middot; run viewer</div>
    <h1 id="run-name"></h1>
    <div class="meta" id="run-meta"></div>
  </div>
</header>
<main class="wrap">
  <section class="cards" id="metrics" aria-label="Metrics"></section>
  <div class="chips" id="chips" aria-label="Filter by status"></div>
  <div class="notes" id="notes" role="status" hidden></div>
  <details class="domains" id="domains" hidden><summary>By domain</summary></details>
  <section class="panel" aria-label="Tasks">
    <div class="toolbar">
      <input id="f-search" type="search" placeholder="Search task id, reason, error&hellip;" aria-label="Search tasks">
      <select id="f-status" aria-label="Status"></select>
      <select id="f-benchmark" aria-label="Benchmark"></select>
      <select id="f-domain" aria-label="Domain"></select>
      <span class="count" id="count"></span>
    </div>
    <table id="tasks">
      <thead><tr>
        <th data-key="status">Status</th>
        <th data-key="benchmark" class="col-bench">Benchmark</th>
        <th data-key="domain" class="col-domain">Domain</th>
        <th data-key="task_id">Task</th>
        <th data-key="score" class="num">Score</th>
        <th data-key="num_steps" class="num">Steps</th>
        <th data-key="reason" class="col-reason">Reason</th>
      </tr></thead>
      <tbody id="task-rows"></tbody>
    </table>
  </section>
  <footer>Generated by pytest-agentbench from results.jsonl, summary.json and the tasks' trajectory.json.
    Screenshots load from the run folder; keep this file next to <code>tasks/</code>.</footer>
</main>
<div class="lightbox" id="lightbox" hidden role="dialog" aria-modal="true" aria-label="Screenshot">
  <img id="lb-img" alt="">
  <div class="lb-bar">
    <button type="button" id="lb-prev" aria-label="Previous screenshot">&larr;</button>
    <span id="lb-pos"></span>
    <span class="lb-caption" id="lb-caption"></span>
    <button type="button" id="lb-next" aria-label="Next screenshot">&rarr;</button>
    <button type="button" id="lb-close">Close</button>
  </div>
</div>
<script type="application/json" id="run-data">__DATA__</script>
<script type="application/json" id="run-results">__RESULTS__</script>
__TRAJECTORIES__<script>__JS__</script>
</body>
</html>
"""


if __name__ == "__main__":
    sys.exit(main())
