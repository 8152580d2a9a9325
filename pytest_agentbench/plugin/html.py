"""pytest-html integration: Score / Steps / Verdict columns and links to the item's files, the same
for every item kind (benchmark tasks, verifier audits, ExtraDup cells, trajectory cases), from the
layer's :class:`~pytest_agentbench.plugin.reporting.View`.

Links are relative paths from the report's folder, never embedded images, so a report of a
thousand tasks stays small (pytest-html#552)."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.plugin import reporting


def report_dir(config: pytest.Config) -> Path | None:
    """The folder pytest-html writes its report into (``--html``), or None when it writes none."""
    htmlpath = getattr(config.option, "htmlpath", None)
    if not htmlpath or not config.pluginmanager.hasplugin("html"):
        return None
    return Path(os.path.expanduser(htmlpath)).absolute().parent


def wanted(config: pytest.Config, *, items_requested: bool) -> bool:
    """Whether the columns go into this run's report: pytest-html writes one, this is the process
    that writes it, and the run has items of this plugin (a benchmark or an audit asked for, or
    case files where pytest will look). pytest-html fixes its header at session start, before
    collection, so case files are looked for now; a plain test run's report gets no empty columns."""
    if report_dir(config) is None or not reporting.is_controller(config):
        return False
    return items_requested or _case_files_in_args(config)


def _case_files_in_args(config: pytest.Config) -> bool:
    """A ``*.case.json`` in the paths pytest collects (its arguments, else ``testpaths``, else the
    current folder), skipping the folders pytest skips (``norecursedirs``); stops at the first."""
    import fnmatch

    from pytest_agentbench.plugin.trajectory import CASE_SUFFIX

    args = [str(arg).split("::")[0] for arg in config.args] or [str(config.invocation_params.dir)]
    skipped = [str(p) for p in config.getini("norecursedirs")]
    for arg in args:
        path = Path(arg)
        if path.is_file():
            if path.name.endswith(CASE_SUFFIX):
                return True
            continue
        for _folder, dirs, files in os.walk(path):
            if any(name.endswith(CASE_SUFFIX) for name in files):
                return True
            dirs[:] = [d for d in dirs if not any(fnmatch.fnmatch(d, pattern) for pattern in skipped)]
    return False


def extras_for(config: pytest.Config, view: reporting.View) -> list[dict[str, Any]]:
    """pytest-html's link extras for ``view``'s files, relative to the report's folder."""
    folder = report_dir(config)
    if folder is None or not view.files:
        return []
    from pytest_html import extras  # type: ignore[import-untyped]

    return [extras.url(Path(os.path.relpath(path, folder)).as_posix(), name=name) for path, name in view.files]


class HtmlColumns:
    """Registered on the controller when pytest-html writes a report of a run with this plugin's
    items: the columns on every row and the links on each item's report that carries its verdict."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Before pytest-html reads the report (it does at the item's teardown): add the links."""
        view = reporting.view_of(self.config, report)
        if view is not None:
            extras = extras_for(self.config, view)
            if extras:
                report.extras = [*getattr(report, "extras", []), *extras]  # type: ignore[attr-defined]

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        cells.insert(2, '<th class="sortable" data-column-type="score">Score</th>')
        cells.insert(3, '<th class="sortable" data-column-type="steps">Steps</th>')
        cells.insert(4, "<th>Verdict</th>")

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report: Any, cells: list[str]) -> None:
        view = reporting.view_of(self.config, report) if isinstance(report, pytest.TestReport) else None
        if view is None:
            score, steps, verdict = "", "", ""
        else:
            score = "" if view.score is None else f"{view.score:.3f}"
            steps = "" if view.steps is None else str(view.steps)
            verdict = html.escape(view.verdict)
        cells.insert(2, f'<td class="col-score">{score}</td>')
        cells.insert(3, f'<td class="col-steps">{steps}</td>')
        cells.insert(4, f'<td class="col-verdict">{verdict}</td>')
