"""Static viewer: one self-contained ``viewer.html`` per run folder, and the ``agentbench-view`` command.

``viewer_data`` reads the run folder into what the page shows; ``viewer_page`` fills the page's
template, style and script (package data under ``assets/``) with it. This module writes the file
(at the end of every run, and by hand) and is the command's entry point.

Run it by hand with ``agentbench-view RUN_DIR`` or ``python -m pytest_agentbench.record.viewer``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_agentbench.record.script_json import embed_json, escape_json_text
from pytest_agentbench.record.streamed import write_text_pieces
from pytest_agentbench.record.viewer_data import RunView, collect
from pytest_agentbench.record.viewer_page import VIEWER_NAME, page_pieces, render_html

__all__ = ["RUN_FILES", "VIEWER_NAME", "RunView", "collect", "embed_json", "escape_json_text", "main",
           "render_html", "write_viewer"]


#: Files that make a folder a run folder, for ``main``.
RUN_FILES = ("results.jsonl", "summary.json", "manifest.json")


# -- public API ---------------------------------------------------------------------------------


def write_viewer(run_dir: str | Path, *, summary: dict[str, Any] | None = None,
                 records: list[dict[str, Any]] | None = None,
                 record_texts: Sequence[str | None] | None = None) -> Path:
    """Write ``viewer.html`` into ``run_dir`` and return its path.

    Bad or missing data never raises (an interrupted run still gets a viewer that says what is
    missing); only a failure to write the file does. The file is replaced atomically, so a browser
    reloading it mid-write never sees half a page. It is written as it is made, each trajectory
    read and written in turn, so its size is never in memory; ``summary`` and ``records``, when
    the caller holds them (the run's summary and the records of its results.jsonl), are not read
    back from the folder, and ``record_texts``, the records' results.jsonl lines as written, are
    not encoded again (see ``viewer_data.collect``).
    """
    run = Path(run_dir)
    view = collect(run, summary=summary, records=records, lazy=True, record_texts=record_texts)
    target = run / VIEWER_NAME
    # A hidden temporary name, so a folder listing mid-write shows no second page.
    return write_text_pieces(target, page_pieces(view), tmp=target.with_name("." + VIEWER_NAME + ".tmp"), mode=0o644)


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
        from pytest_agentbench.record.compare_view import main_compare

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



if __name__ == "__main__":
    sys.exit(main())
