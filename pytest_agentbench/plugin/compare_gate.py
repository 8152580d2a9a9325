"""``--bench-compare RUN`` and ``--bench-fail-on-regression`` on the controller: compare this run's
records with RUN's at the end, write ``comparison.json`` and the comparison page, print the block and
its grep line, and fail the run on a significant regression when asked. ``--bench-baseline`` (xfail
of known failures) is separate and unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_agentbench.compare import COMPARISON_NAME, check_run, compare_records, format_p, stream_run, summary_lines
from pytest_agentbench.plugin import reporting

if TYPE_CHECKING:
    from pytest_agentbench.record.runfolder import RunFolder


class CompareGate:
    def __init__(self, config: pytest.Config, path: Path, *, alpha: float, fail: bool) -> None:
        self.config = config
        self.path = path
        try:  # checked now: a malformed reference run is a usage error before any episode plays
            self.name = check_run(path)  # read again at the end, when this run's tasks are known
        except (ValueError, OSError) as exc:
            raise pytest.UsageError(f"--bench-compare {path}: {exc}") from None
        self.alpha = alpha
        self.fail = fail
        self.result: dict[str, Any] | None = None
        self.message: str | None = None

    def compare(self, session: pytest.Session, folder: RunFolder, records: list[dict[str, Any]]) -> None:
        """Compare once every record is in: the controller calls this before it writes the run's
        viewer, which shows the comparison and links its page. Writes ``comparison.json`` and the
        comparison page (``compare-<RUN>.html``, linking each task to its row in both viewers)."""
        from pytest_agentbench.record.compare_view import run_folder_of, write_page

        try:  # the reference run is streamed, kept only for this run's tasks (``compare_records``)
            self.result = compare_records(stream_run(self.path), records, alpha=self.alpha, before_name=self.name,
                                          after_name=folder.name)
        except (ValueError, OSError) as exc:  # changed since the start of the run
            self.message = f"ERROR: --bench-compare {self.path}: {exc}"
            reporting.fail_session(session)
            return
        try:
            folder.write_json(folder.path / COMPARISON_NAME, self.result)
            write_page(folder.path, self.result, run_folder_of(self.path), viewer_follows=True)
        except OSError as exc:
            self.message = f"ERROR: could not write the comparison in {folder.path}: {exc}"
        if self.fail and self.result["verdict"] == "regression":
            self.message = (f"ERROR: significant regression against {self.name}: success rate "
                            f"{self.result['difference'] * 100:+.1f} points, p {format_p(self.result['p_value'])} "
                            f"< --bench-regression-alpha {self.alpha:g}")
        if self.message:
            reporting.fail_session(session)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.result is None and self.message is None:
            return
        terminalreporter.write_line("")
        for line in summary_lines(self.result) if self.result is not None else ():
            terminalreporter.write_line(line)
        if self.message:
            terminalreporter.write_line(self.message, red=True, bold=True)
