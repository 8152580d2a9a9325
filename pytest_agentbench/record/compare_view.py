"""``agentbench-view A B``: a static page comparing run B with run A, task by task.

The numbers are ``compare.compare_records``'s (the ones ``--bench-compare`` prints); the page is plain
HTML with every value escaped and no script, written into B's folder as ``compare-<A>.html``; its
style is package data (``assets/compare.css``), inlined like the viewer's.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pytest_agentbench.compare import (
    GONE_ROWS,
    STATUSES,
    check_run,
    compare_records,
    grep_line,
    load_run,
    page_name,
    run_file,
    stream_run,
)
from pytest_agentbench.files import write_atomic
from pytest_agentbench.record.viewer_page import VIEWER_NAME, asset, csp_hash


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _cell(side: dict[str, Any] | None) -> str:
    return "-" if side is None else f"{side['passes']}/{side['trials']}"


def _score(side: dict[str, Any] | None) -> str:
    score = side.get("score") if side is not None else None
    return "n/a" if not isinstance(score, (int, float)) else f"{score:.3f}"


def row_anchor(benchmark: str, task_id: str) -> str:
    """The fragment that opens a task's row in its run's viewer (``viewer.js``'s ``anchor``)."""
    return "#" + quote(f"{benchmark}/{task_id}", safe="")


def _side_cells(row: dict[str, Any], side: str, viewer: str | None) -> str:
    data = row[side]
    counts = _e(_cell(data))
    if viewer is not None and data is not None:
        counts = f'<a href="{_e(viewer + row_anchor(row["benchmark"], row["task_id"]))}">{counts}</a>'
    reason = (data or {}).get("reason") or ""
    return f'<td class="num">{counts}</td><td class="num">{_e(_score(data))}</td><td class="why">{_e(reason)}</td>'


def render(result: dict[str, Any], viewers: tuple[str | None, str | None] = (None, None)) -> str:
    """The page for ``result`` (``compare_records``'s). ``viewers``: the links, relative to the
    page, to the viewer.html of the reference run and of this run (None: it has none); each task's
    counts link to its row there."""
    def rate(v: float | None) -> str:
        return "n/a" if v is None else f"{v * 100:.1f}%"

    before_viewer, after_viewer = viewers
    ci = result["ci95"]
    interval = f"[{ci[0] * 100:+.1f}, {ci[1] * 100:+.1f}] points" if ci else "n/a"
    diff = "n/a" if result["difference"] is None else f"{result['difference'] * 100:+.1f} points"
    p = "n/a" if result["p_value"] is None else f"{result['p_value']:.4g}"
    rows = "".join(
        f"<tr><td class=\"{_e(r['status'])}\">{_e(r['status'])}</td><td>{_e(r['benchmark'])}</td>"
        f"<td>{_e(r['domain'])}</td><td>{_e(r['task_id'])}</td>"
        f"{_side_cells(r, 'before', before_viewer)}{_side_cells(r, 'after', after_viewer)}</tr>"
        for r in sorted(result["tasks"], key=lambda r: (STATUSES.index(r["status"]), r["benchmark"], r["task_id"])))
    counts = ", ".join(f"{result['counts'][s]} {s}" for s in STATUSES)
    unlisted = result.get("unlisted_gone") or 0
    more = (f"<p class=\"unlisted\">{_e(unlisted)} more gone task(s), in {_e(result['before_run'])} but not in "
            f"{_e(result['after_run'])}, are counted above without a row: only the first {GONE_ROWS} tasks "
            "that are not in it have one.</p>\n") if unlisted else ""
    css = asset("compare.css")
    title = f"{result['after_run']} vs {result['before_run']}"
    before, after = _e(result["before_run"]), _e(result["after_run"])
    links = " &middot; ".join(
        f'<a href="{_e(link)}">viewer of {name}</a>' if link is not None else f"{name} has no viewer.html"
        for link, name in ((before_viewer, before), (after_viewer, after)))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src {csp_hash(css)}">
<meta name="referrer" content="no-referrer">
<title>{_e(title)} &middot; agentbench</title><style>{css}</style></head><body>
<h1>{after} compared with {before}</h1>
<p class="viewers">{links}</p>
<p class="verdict">Verdict: <b>{_e(result['verdict'])}</b> (alpha {_e(result['alpha'])})</p>
<table>
<tr><th>success rate, {before}</th><td class="num">{_e(rate(result['before_rate']))}</td></tr>
<tr><th>success rate, {after}</th><td class="num">{_e(rate(result['after_rate']))}</td></tr>
<tr><th>paired difference</th><td class="num">{_e(diff)}</td></tr>
<tr><th>95% interval</th><td class="num">{_e(interval)}</td></tr>
<tr><th>p-value ({_e(result['method'] or 'n/a')})</th><td class="num">{_e(p)}</td></tr>
<tr><th>paired tasks</th><td class="num">{_e(result['paired_tasks'])}</td></tr>
<tr><th>tasks</th><td>{_e(counts)}</td></tr>
</table>
<p><code>{_e(grep_line(result))}</code></p>
<h2>Tasks</h2>
<table><tr><th rowspan="2">status</th><th rowspan="2">benchmark</th><th rowspan="2">domain</th>\
<th rowspan="2">task</th><th colspan="3">{before}</th><th colspan="3">{after}</th></tr>
<tr><th>passes/trials</th><th>score</th><th>reason</th><th>passes/trials</th><th>score</th><th>reason</th></tr>
{rows}</table>
{more}<p>Rates and scores count outcome trials only; a task without an outcome on one side is new or gone
there. A task's reason is why it did not pass (its first such trial). Its passes/trials open its row in
that run's viewer. The user guide's Statistics section gives the formulas.</p>
</body></html>
"""


def _viewer_link(run_folder: Path, page_folder: Path) -> str | None:
    """The URL of ``run_folder``'s viewer.html relative to ``page_folder``; None when it has none."""
    viewer = run_folder / VIEWER_NAME
    if not viewer.is_file():
        return None
    rel = os.path.relpath(viewer.resolve(), page_folder.resolve())
    return "/".join(quote(part) for part in Path(rel).parts)


def run_folder_of(path: str | Path) -> Path:
    """A run given as its folder or as its results.jsonl: the folder."""
    path = Path(path)
    return path if path.is_dir() else path.parent


def write_page(folder: Path, result: dict[str, Any], before_folder: Path, *, viewer_follows: bool = False) -> Path:
    """Write ``result`` as ``compare-<before>.html`` into ``folder`` (the compared run's), with links
    to the viewers of both runs. ``viewer_follows``: ``folder``'s viewer.html is written after the
    page (at the end of a run), so it is linked before it exists."""
    target = folder / page_name(str(result["before_run"]))
    after_viewer = VIEWER_NAME if viewer_follows else _viewer_link(folder, folder)
    viewers = (_viewer_link(before_folder, folder), after_viewer)
    return write_atomic(target, render(result, viewers), tmp=target.with_name("." + target.name + ".tmp"))


def write_compare_page(before: str | Path, after: str | Path) -> Path:
    """Compare run ``after`` with run ``before`` and write the page into ``after``'s folder
    (beside its results.jsonl when given the file). ValueError when a run cannot be read."""
    before_name = run_file(before)[0]
    try:
        after_name, after_records = load_run(after)
    except ValueError:
        check_run(before)  # when both are malformed, the first one named is reported
        raise
    result = compare_records(stream_run(before), after_records, before_name=before_name, after_name=after_name)
    return write_page(run_folder_of(after), result, run_folder_of(before))


def main_compare(before: str, after: str) -> int:
    """``agentbench-view A B``: print the page's path and the grep line; 2 for an unreadable run."""
    import sys

    try:
        path = write_compare_page(before, after)
    except ValueError as exc:
        print(f"agentbench-view: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"agentbench-view: cannot write the comparison page: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(path)
    return 0
