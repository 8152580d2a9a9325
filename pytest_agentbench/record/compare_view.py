"""``agentbench-view A B``: a static page comparing run B with run A, task by task.

The numbers are ``compare.compare_records``'s (the ones ``--bench-compare`` prints); the page is plain
HTML with every value escaped and no script, written into B's folder as ``compare-<A>.html``; its
style is package data (``assets/compare.css``), inlined like the viewer's.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from pytest_agentbench.compare import STATUSES, compare_records, grep_line, load_run
from pytest_agentbench.files import write_atomic
from pytest_agentbench.record.viewer_page import asset, csp_hash


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _cell(side: dict[str, int] | None) -> str:
    return "-" if side is None else f"{side['passes']}/{side['trials']}"


def render(result: dict[str, Any]) -> str:
    def rate(v: float | None) -> str:
        return "n/a" if v is None else f"{v * 100:.1f}%"

    ci = result["ci95"]
    interval = f"[{ci[0] * 100:+.1f}, {ci[1] * 100:+.1f}] points" if ci else "n/a"
    diff = "n/a" if result["difference"] is None else f"{result['difference'] * 100:+.1f} points"
    p = "n/a" if result["p_value"] is None else f"{result['p_value']:.4g}"
    rows = "".join(
        f"<tr><td class=\"{_e(r['status'])}\">{_e(r['status'])}</td><td>{_e(r['benchmark'])}</td>"
        f"<td>{_e(r['domain'])}</td><td>{_e(r['task_id'])}</td><td class=\"num\">{_e(_cell(r['before']))}</td>"
        f"<td class=\"num\">{_e(_cell(r['after']))}</td></tr>"
        for r in sorted(result["tasks"], key=lambda r: (STATUSES.index(r["status"]), r["benchmark"], r["task_id"])))
    counts = ", ".join(f"{result['counts'][s]} {s}" for s in STATUSES)
    css = asset("compare.css")
    title = f"{result['after_run']} vs {result['before_run']}"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src {csp_hash(css)}">
<title>{_e(title)} &middot; agentbench</title><style>{css}</style></head><body>
<h1>{_e(result['after_run'])} compared with {_e(result['before_run'])}</h1>
<p class="verdict">Verdict: <b>{_e(result['verdict'])}</b> (alpha {_e(result['alpha'])})</p>
<table>
<tr><th>success rate, {_e(result['before_run'])}</th><td class="num">{_e(rate(result['before_rate']))}</td></tr>
<tr><th>success rate, {_e(result['after_run'])}</th><td class="num">{_e(rate(result['after_rate']))}</td></tr>
<tr><th>paired difference</th><td class="num">{_e(diff)}</td></tr>
<tr><th>95% interval</th><td class="num">{_e(interval)}</td></tr>
<tr><th>p-value ({_e(result['method'] or 'n/a')})</th><td class="num">{_e(p)}</td></tr>
<tr><th>paired tasks</th><td class="num">{_e(result['paired_tasks'])}</td></tr>
<tr><th>tasks</th><td>{_e(counts)}</td></tr>
</table>
<p><code>{_e(grep_line(result))}</code></p>
<h2>Tasks</h2>
<table><tr><th>status</th><th>benchmark</th><th>domain</th><th>task</th>\
<th>passes/trials, {_e(result['before_run'])}</th>
<th>passes/trials, {_e(result['after_run'])}</th></tr>
{rows}</table>
<p>Rates count outcome trials only; a task without an outcome on one side is new or gone there.
The user guide's Statistics section gives the formulas.</p>
</body></html>
"""


def write_compare_page(before: str | Path, after: str | Path) -> Path:
    """Compare run ``after`` with run ``before`` and write the page into ``after``'s folder
    (beside its results.jsonl when given the file). ValueError when a run cannot be read."""
    before_name, before_records = load_run(before)
    after_name, after_records = load_run(after)
    result = compare_records(before_records, after_records, before_name=before_name, after_name=after_name)
    after_path = Path(after)
    folder = after_path if after_path.is_dir() else after_path.parent
    target = folder / f"compare-{before_name}.html"
    return write_atomic(target, render(result), tmp=target.with_name("." + target.name + ".tmp"))


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
