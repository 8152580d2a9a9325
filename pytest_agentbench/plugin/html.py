"""pytest-html integration: Score / Steps / Verdict columns and links to the task's files.

Links are relative paths from the report's folder, never embedded images, so a report of a
thousand tasks stays small (pytest-html#552)."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_agentbench.record.runfolder import RunFolder


def _report_dir(config: pytest.Config) -> Path | None:
    htmlpath = getattr(config.option, "htmlpath", None)
    if not htmlpath:
        return None
    return Path(os.path.expanduser(htmlpath)).absolute().parent


def extras_for(config: pytest.Config, folder: RunFolder | None, payload: dict[str, Any]) -> list[dict[str, Any]]:
    report_dir = _report_dir(config)
    if report_dir is None or folder is None:
        return []
    from pytest_html import extras  # type: ignore[import-untyped]

    def rel(path: str) -> str:
        return Path(os.path.relpath(folder.path.absolute() / path, report_dir)).as_posix()

    out = []
    if payload.get("trajectory"):
        out.append(extras.url(rel(payload["trajectory"]), name="trajectory.json"))
    for shot in payload.get("screenshots", []):
        out.append(extras.url(rel(shot), name=Path(shot).name))
    return out


class HtmlColumns:
    """Registered only when pytest-html is active, on the controller."""

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        cells.insert(2, '<th class="sortable" data-column-type="score">Score</th>')
        cells.insert(3, '<th class="sortable" data-column-type="steps">Steps</th>')
        cells.insert(4, "<th>Verdict</th>")

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report: Any, cells: list[str]) -> None:
        payload = getattr(report, "agentbench", None)
        if payload is None:
            score, steps, verdict = "", "", ""
        else:
            score = f"{payload['score']:.3f}"
            steps = str(payload["num_steps"])
            verdict = html.escape(str(payload.get("reason") or ""))
        cells.insert(2, f'<td class="col-score">{score}</td>')
        cells.insert(3, f'<td class="col-steps">{steps}</td>')
        cells.insert(4, f'<td class="col-verdict">{verdict}</td>')
