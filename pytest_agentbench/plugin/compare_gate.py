"""``--bench-compare RUN`` and ``--bench-fail-on-regression`` on the controller: compare this run's records
with RUN's at the end, write ``comparison.json``, print the block and its grep line, and fail the
run on a significant regression when asked. ``--bench-baseline`` (xfail of known failures) is separate
and unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.compare import compare_records, format_p, load_run, summary_lines
from pytest_agentbench.plugin import reporting

COMPARISON_NAME = "comparison.json"


class CompareGate:
    def __init__(self, config: pytest.Config, path: Path, *, alpha: float, fail: bool) -> None:
        self.config = config
        try:  # read now: a malformed reference run is a usage error before any episode plays
            self.name, self.before = load_run(path)
        except (ValueError, OSError) as exc:
            raise pytest.UsageError(f"--bench-compare {path}: {exc}") from None
        self.alpha = alpha
        self.fail = fail
        self.result: dict[str, Any] | None = None
        self.message: str | None = None

    @pytest.hookimpl(trylast=True)  # after the controller collected every record
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        controller = self.config.pluginmanager.get_plugin("agentbench-controller")
        folder = getattr(getattr(controller, "state", None), "run_folder", None)
        if controller is None or folder is None or controller.summary is None:
            return
        self.result = compare_records(self.before, controller.records, alpha=self.alpha,
                                      before_name=self.name, after_name=folder.name)
        try:
            folder.write_json(folder.path / COMPARISON_NAME, self.result)
        except OSError as exc:
            self.message = f"ERROR: could not write {folder.path / COMPARISON_NAME}: {exc}"
        if self.fail and self.result["verdict"] == "regression":
            self.message = (f"ERROR: significant regression against {self.name}: success rate "
                            f"{self.result['difference'] * 100:+.1f} points, p {format_p(self.result['p_value'])} "
                            f"< --bench-regression-alpha {self.alpha:g}")
        if self.message:
            reporting.fail_session(session)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.result is None:
            return
        terminalreporter.write_line("")
        for line in summary_lines(self.result):
            terminalreporter.write_line(line)
        if self.message:
            terminalreporter.write_line(self.message, red=True, bold=True)
