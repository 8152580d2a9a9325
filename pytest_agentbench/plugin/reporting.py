"""What the four item layers (episode items, the verifier audit, ExtraDup suites, trajectory
cases) share in reporting: which reports carry a layer's payload, where a skip points, when a
layer may give a report its own status word, the controller's collection of payloads, the exit
gate and the summary block.

Each layer's item holds a plain-JSON payload (its record, audit run, trial or case result). The
layer's ``pytest_runtest_makereport`` wrapper puts it on the report with :func:`attach`, so it
travels to the xdist controller with the report; the controller gathers it with a
:class:`Payloads` from ``pytest_runtest_logreport``, decides its gate with :func:`fail_session` and
prints its block with :func:`write_block`. A new layer uses the same four calls.

What report plugins show of an item (pytest-html's columns and links, allure's attachments, CI
annotations of setup errors) is one :class:`View` per payload, made by the layer's function named
in :data:`VIEWS`, so every item kind is shown alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


def carries_payload(report: pytest.TestReport) -> bool:
    """The report the item's verdict is on: its call, or a setup that did not pass (the call
    then never runs). Teardown reports carry nothing, so a teardown error adds no second result."""
    return report.when == "call" or (report.when == "setup" and not report.passed)


def point_skip_at(report: pytest.TestReport, location: str) -> None:
    """Point a skip at ``location`` (the item, or a case file) with no line number, instead of
    the plugin line that raised it: the skip summary then names what was skipped. pytest's
    summary takes None for the line (``terminal._folded_skips``), though TestReport's annotation
    says int. An xfail's report is left as pytest made it."""
    if report.skipped and isinstance(report.longrepr, tuple) and not hasattr(report, "wasxfail"):
        report.longrepr = (location, None, report.longrepr[2])  # type: ignore[assignment]


def attach(report: pytest.TestReport, attr: str, payload: dict[str, Any], location: str) -> bool:
    """Put ``payload`` on ``report`` as ``attr`` when the report carries payloads (see
    :func:`carries_payload`) and point a skip at ``location``; True when it was attached. The
    payload is plain JSON, so it survives xdist's report serialisation."""
    if not carries_payload(report):
        return False
    setattr(report, attr, payload)
    point_skip_at(report, location)
    return True


def is_rerun(report: pytest.TestReport) -> bool:
    """True for a pytest-rerunfailures ``rerun`` report: that plugin sets an outcome outside the
    three pytest's types name."""
    outcome: str = report.outcome
    return outcome == "rerun"


def own_status(report: pytest.TestReport) -> bool:
    """True when the layer's status word (KILLED, PAID, ...) applies to ``report``: its call
    report, not an xfail (pytest's own words), and not a pytest-rerunfailures ``rerun`` report,
    which keeps its own status (the attempt is played again)."""
    return report.when == "call" and not hasattr(report, "wasxfail") and not is_rerun(report)


def is_controller(config: pytest.Config) -> bool:
    """The process that gathers results: the xdist controller, or the only process without xdist."""
    return not hasattr(config, "workerinput")


class Payloads:
    """The controller's payloads of one layer, by node id: the last report of an item wins, so a
    rerun item or one reported by several workers (``--dist each``) counts once, at its final
    attempt. Insertion order is the order items first reported."""

    def __init__(self, attr: str) -> None:
        self.attr = attr
        self.by_nodeid: dict[str, dict[str, Any]] = {}

    def add(self, report: pytest.TestReport) -> dict[str, Any] | None:
        """Keep ``report``'s payload (a copy) when it carries one; returns it."""
        payload = getattr(report, self.attr, None)
        if payload is None:
            return None
        self.by_nodeid[report.nodeid] = kept = dict(payload)
        return kept

    def values(self) -> list[dict[str, Any]]:
        return list(self.by_nodeid.values())

    def __bool__(self) -> bool:
        return bool(self.by_nodeid)


def fail_session(session: pytest.Session) -> None:
    """A gate failed (a threshold missed, a report file not written): the run exits 1 unless it
    already ends with a worse status (an interruption, an internal error)."""
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def write_block(terminalreporter: Any, title: str, lines: Iterable[str]) -> None:
    """A layer's terminal summary: an ``=`` separator naming it, then its lines."""
    terminalreporter.write_sep("=", title)
    for line in lines:
        terminalreporter.write_line(line)


@dataclass(frozen=True)
class View:
    """What report plugins show of one item's verdict, the same for every item kind: its score
    and steps (None when the kind has none), a verdict line that names the layer's own outcome
    (``FALSE-ACCEPT: ...`` where pytest says only "Failed"), its files (absolute path, shown
    name) and documents (shown name, JSON text) to attach. ``settle`` is called before the files
    are read: a benchmark's are written in the background."""

    score: float | None = None
    steps: int | None = None
    verdict: str = ""
    files: tuple[tuple[Path, str], ...] = ()
    documents: tuple[tuple[str, str], ...] = ()
    settle: Callable[[], object] | None = None


#: Each layer's payload attribute and the ``module:function`` that makes its :class:`View` from
#: the config and the payload; imported on first use, so a layer loads only when one of its
#: reports is shown.
VIEWS = {
    "agentbench": "pytest_agentbench.plugin.session:report_view",
    "agentbench_audit": "pytest_agentbench.plugin.audit:report_view",
    "agentbench_trajectory": "pytest_agentbench.plugin.trajectory:report_view",
    "agentbench_extradup": "pytest_agentbench.plugin.suites:report_view",
}


def payload_of(report: pytest.TestReport) -> tuple[str, dict[str, Any]] | None:
    """The layer payload attribute ``report`` carries, and the payload; None for other tests."""
    for attr in VIEWS:
        payload = getattr(report, attr, None)
        if payload is not None:
            return attr, payload
    return None


def view_of(config: pytest.Config, report: pytest.TestReport) -> View | None:
    """The :class:`View` of ``report``'s item, or None when it carries no layer's payload."""
    found = payload_of(report)
    if found is None:
        return None
    import importlib

    module, _, name = VIEWS[found[0]].partition(":")
    make: Callable[[pytest.Config, dict[str, Any]], View] = getattr(importlib.import_module(module), name)
    return make(config, found[1])


def status_line(word: str, text: str) -> str:
    """A verdict line: the layer's status word, then what it is about (first line only)."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    return f"{word}: {first}" if first else word
