"""Trajectory test cases as pytest items: ``path/to/<name>.case.json::<task_id>``.

plugin.py calls in here through three lazy entry points, so a run without case files imports
nothing of this package: ``collect_case_file`` (from ``pytest_collect_file``, after a suffix
check), ``ensure_reporter`` (from ``pytest_report_from_serializable``: under xdist the controller
collects nothing and learns of trajectory items from the first result a worker sends) and
``parse_min`` / ``configured_min`` (``--trajectory-min`` and its ini key, which options.py
defines).

* Each case file is one item. Its setup reads the case and the trace and scores every chosen
  metric (pure functions, microseconds), so a missing or invalid file, or a metric that raises,
  is an *error* of that item and not a failure of the agent. The call turns the results into the
  outcome: passed when no evaluated metric failed (or, with ``min_score``, when the mean of the
  evaluated scores reaches it), failed with the metric table otherwise, skipped when no metric
  was evaluated. A ``passed=None`` metric is "not evaluated": it has no score and is never
  counted as passed or failed.
* Every report carries the case's results as plain JSON (so they travel from xdist workers);
  the controller keeps one per node id for the summary block and the ``--trajectory-min`` gate.

The module imports only pytest, the standard library and plugin/reporting.py; the case format, the metrics and the
adapters load when the first case file is collected or scored.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from pytest_agentbench.plugin import reporting
from pytest_agentbench.text import render_table

if TYPE_CHECKING:
    from pytest_agentbench.trajectory.cases import Case
    from pytest_agentbench.trajectory.model import MetricResult

CASE_SUFFIX = ".case.json"  # also in cases.py; repeated so the per-file check imports nothing
PAYLOAD_ATTR = "agentbench_trajectory"
MARKER = "trajectory"
REPORTER_NAME = "agentbench-trajectory-reporter"
HOOKS_NAME = "agentbench-trajectory-items"
NOT_EVALUATED = "not evaluated"
#: Scores are compared with this tolerance, so a mean shown as 0.800 meets a threshold of 0.8
#: (2.4 / 3 is 0.7999999999999999 in floating point).
TOLERANCE = 1e-9
#: Failing cases pytest's failure summary shows in full by default (``--trajectory-failures-shown``).
FAILURES_SHOWN = 20


# -- options and the entry points plugin.py calls ----------------------------------------------
def parse_min(text: str) -> float:
    """``--trajectory-min``: a score between 0 and 1 (``80%`` is read as 0.8)."""
    raw = str(text).strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--trajectory-min must be a score between 0 and 1, such as 0.8, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"--trajectory-min must be between 0 and 1, got {text!r}")
    return value


def parse_shown(text: str) -> int:
    """``--trajectory-failures-shown``: a whole number, or ``all`` (every one: ``sys.maxsize``)."""
    raw = str(text).strip().lower()
    if raw == "all":
        return sys.maxsize
    if not raw.isdigit():
        raise argparse.ArgumentTypeError(
            f"--trajectory-failures-shown must be a whole number of cases or 'all', such as 20, got {text!r}")
    return int(raw)


def configured_min(config: pytest.Config) -> float | None:
    """The gate: the option, else the ini key; None when neither is set. A bad ini value is a
    usage error (exit 4)."""
    value = config.getoption("trajectory_min", None)
    if value is not None:
        return float(value)
    try:
        raw = str(config.getini("agentbench_trajectory_min")).strip()
    except ValueError:  # the ini key is not registered
        return None
    if not raw:
        return None
    try:
        return parse_min(raw)
    except argparse.ArgumentTypeError as exc:
        raise pytest.UsageError(f"ini agentbench_trajectory_min: {exc}") from None


def collect_case_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector:
    """``pytest_collect_file`` for a ``*.case.json`` file (plugin.py checks the suffix). The first
    call in a process registers the report hooks there, and, outside xdist workers, the summary."""
    config = parent.config
    if not config.pluginmanager.has_plugin(HOOKS_NAME):
        config.addinivalue_line("markers", f"{MARKER}: a trajectory test case (*.case.json, pytest-agentbench)")
        config.pluginmanager.register(ReportHooks(), HOOKS_NAME)
        if not hasattr(config, "workerinput"):
            ensure_reporter(config)
    return CaseFileCollector.from_parent(parent, path=file_path)


def ensure_reporter(config: pytest.Config) -> None:
    """Register the summary and gate once per run (called on the controller; under xdist by
    plugin.py when the first trajectory result arrives from a worker)."""
    if not config.pluginmanager.has_plugin(REPORTER_NAME):
        reporter = TrajectoryReporter(config, configured_min(config))
        config.pluginmanager.register(reporter, REPORTER_NAME)
        config.pluginmanager.register(reporter.sections, REPORTER_NAME + "-sections")


# -- collection ----------------------------------------------------------------------------------
class CaseFileCollector(pytest.File):
    """One ``*.case.json`` file: one item, named by the case's task_id (else the file's name)."""

    def collect(self) -> Iterator[pytest.Item]:
        from pytest_agentbench.trajectory.cases import CaseSyntaxError, read_case_file

        try:
            parsed = read_case_file(self.path)
        except CaseSyntaxError as exc:
            raise self.CollectError(str(exc)) from None
        item = CaseItem.from_parent(self, name=parsed.name, case=parsed.case, problem=parsed.problem)
        item.add_marker(MARKER)
        for mark in parsed.case.marks if parsed.case is not None else ():
            item.add_marker(mark)
        yield item


class CaseItem(pytest.Item):
    def __init__(self, *args: Any, case: Case | None, problem: str | None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.case = case
        self.problem = problem
        self.results: list[MetricResult] = []
        self.payload: dict[str, Any] | None = None

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, 0, self.name  # the case file, from its first line

    def _payload(self, status: str, **extra: Any) -> dict[str, Any]:
        from pytest_agentbench.trajectory.cases import shown

        self.payload = {"nodeid": self.nodeid, "task_id": self.name, "case_file": shown(self.path),
                        "trace_file": None, "status": status, "mean": None, "steps": None, "metrics": [],
                        "error": None, **extra}
        return self.payload

    def _error(self, message: str) -> NoReturn:
        """Fail the setup: pytest reports an error of this item, with the message only."""
        raise self._failure(message) from None  # no "during handling" chain

    def _failure(self, message: str) -> BaseException:
        """The exception that fails the setup with ``message`` (pytrace off: the report shows the
        message alone, whatever its cause), the error recorded in the payload and properties."""
        payload = self._payload("error", error=message)
        self.user_properties.extend([("task_id", self.name), ("case_file", payload["case_file"]), ("error", message)])
        return pytest.fail.Exception(message, pytrace=False)

    def setup(self) -> None:
        from pytest_agentbench.trajectory.cases import CaseError, load_trace, shown
        from pytest_agentbench.trajectory.metrics import METRICS, score_all

        if self.case is None:
            self._error(self.problem or f"{shown(self.path)}: invalid case file")
        case = self.case
        assert case is not None
        chosen = case.metrics or tuple(METRICS)
        if not chosen:
            self._error("no trajectory metrics are registered (pytest_agentbench.trajectory.metrics.METRICS is empty)")
        unknown = [m for m in chosen if m not in METRICS]
        if unknown:
            self._error(f"{shown(self.path)}: unknown metric {', '.join(map(repr, unknown))}; "
                        f"known: {', '.join(METRICS)}")
        try:
            trace, trace_path = load_trace(case)
        except CaseError as exc:
            self._error(str(exc))
        try:
            results = score_all(trace, case.case, list(chosen))
        except Exception:  # a metric bug or input it cannot take: not the agent's failure
            for metric in chosen:  # name the one that raised
                try:
                    score_all(trace, case.case, [metric])
                except Exception as exc:  # the metric's error stays the cause, for --full-trace and debuggers
                    raise self._failure(f"{shown(self.path)}: metric {metric!r} raised {type(exc).__name__}: {exc}") \
                        from exc
            raise
        for result in results:
            score = result.score
            if result.passed not in (True, False, None) or isinstance(score, bool) \
                    or not isinstance(score, (int, float)) or not 0.0 <= score <= 1.0:
                self._error(f"{shown(self.path)}: metric {result.metric!r} returned score {score!r}, "
                            f"passed {result.passed!r} (need a number in 0..1 and True, False or None)")
        self.results = results
        evaluated = [r for r in results if r.passed is not None]
        mean = sum(r.score for r in evaluated) / len(evaluated) if evaluated else None
        status = decide(results, case.min_score)
        payload = self._payload(status, trace_file=shown(trace_path), mean=mean, steps=len(trace.steps), metrics=[
            {"metric": r.metric, "name": r.name, "score": None if r.passed is None else float(r.score),
             "passed": r.passed, "details": r.details} for r in results])
        props: list[tuple[str, object]] = [("task_id", self.name), ("case_file", payload["case_file"]),
                                            ("trace_file", payload["trace_file"]),
                                            ("score", "" if mean is None else f"{mean:.3f}"),
                                            ("result", status.replace("-", " "))]
        for r in results:
            if r.passed is not None:
                props.append((f"{r.metric}.score", f"{r.score:.3f}"))
            props.append((f"{r.metric}.result", result_word(r.passed)))
            props.append((f"{r.metric}.details", r.details))
        self.user_properties.extend(props)

    def runtest(self) -> None:
        assert self.payload is not None and self.case is not None
        status = self.payload["status"]
        if status == "not-evaluated":
            pytest.skip(f"{NOT_EVALUATED}: " + "; ".join(f"{r.name}: {r.details}" for r in self.results))
        if status == "failed":
            pytest.fail(failure_message(self.name, self.results, self.payload["mean"], self.case.min_score),
                        pytrace=False)


def report_view(config: pytest.Config, payload: dict[str, Any]) -> reporting.View:
    """What report plugins show of a case: its mean score, the trace's steps, a verdict naming
    the failed metrics (or the error), and the case and trace files."""
    status = str(payload["status"])
    if status == "failed":
        text = ", ".join(f"{m['name']} {m['score']:.3f}" for m in payload["metrics"] if m["passed"] is False)
    elif status == "not-evaluated":
        text = "; ".join(f"{m['name']}: {m['details']}" for m in payload["metrics"])
    else:
        text = str(payload.get("error") or "")
    files = tuple((Path(name).absolute(), Path(name).name)
                  for name in (payload.get("case_file"), payload.get("trace_file")) if name)
    mean, steps = payload.get("mean"), payload.get("steps")
    return reporting.View(score=None if mean is None else float(mean), steps=None if steps is None else int(steps),
                          verdict=reporting.status_line(status.replace("-", " ").upper(), text), files=files)


def decide(results: list[MetricResult], min_score: float | None) -> str:
    """passed, failed or not-evaluated. Not-evaluated metrics never count either way."""
    evaluated = [r for r in results if r.passed is not None]
    if not evaluated:
        return "not-evaluated"
    if min_score is not None:
        mean = sum(r.score for r in evaluated) / len(evaluated)
        return "passed" if mean >= min_score - TOLERANCE else "failed"
    return "passed" if all(r.passed for r in evaluated) else "failed"


def result_word(passed: bool | None) -> str:
    return NOT_EVALUATED if passed is None else "passed" if passed else "failed"


def failure_message(task_id: str, results: list[MetricResult], mean: float | None, min_score: float | None) -> str:
    """Every metric, failed or not: the reader sees what passed next to what did not."""
    evaluated = [r for r in results if r.passed is not None]
    failed = [r for r in evaluated if not r.passed]
    skipped = len(results) - len(evaluated)
    shown_mean = "-" if mean is None else f"{mean:.3f}"
    if min_score is not None:
        head = (f"{task_id}: mean score {shown_mean} of {len(evaluated)} evaluated metric(s) "
                f"is below min_score {min_score:.3f}")
    else:
        head = f"{task_id}: {len(failed)} of {len(evaluated)} evaluated metric(s) failed (mean score {shown_mean})"
    if skipped:
        head += f"; {skipped} not evaluated"
    rows = [[r.name, "-" if r.passed is None else f"{r.score:.3f}", result_word(r.passed).upper()
             if r.passed is False else result_word(r.passed), r.details] for r in results]
    # The last column (free text) is not padded: its rule is as long as its header.
    return "\n".join([head, *render_table(["metric", "score", "result", "details"], rows, right={1},
                                           short_last_rule=True)])


# -- reports -------------------------------------------------------------------------------------
class ReportHooks:
    """Attaches each case's results to its reports. Registered in a process only once a case file
    is collected there, so other runs pay nothing per item."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if isinstance(item, CaseItem) and item.payload is not None:
            # A skip points at the case file, with no line: a case file has none worth showing.
            reporting.attach(report, PAYLOAD_ATTR, dict(item.payload), str(item.path))
        return report

    @pytest.hookimpl(trylast=True)  # after -m and -k deselected what they deselect
    def pytest_collection_modifyitems(self, items: list[pytest.Item], config: pytest.Config) -> None:
        """``--count`` is refused once case items are selected; under xdist the controller refuses
        it from the workers' collections (``repeat.CaseRepeatGuard``)."""
        if not hasattr(config, "workerinput") and any(isinstance(item, CaseItem) for item in items):
            from pytest_agentbench.plugin.repeat import refuse_case_repeat

            refuse_case_repeat(config)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """A run of case files alone keeps what collection built out of the garbage collector's
        walks (``plugin/heap.py``, as benchmark runs do): 1,000 cases ran in 2.6 s instead of 3.5 s
        here. A run that also collected other tests is left as it is, since freezing would keep
        their modules' garbage to the end."""
        if session.items and all(isinstance(item, CaseItem) for item in session.items):
            from pytest_agentbench.plugin import heap

            heap.freeze(session.config)


class TrajectoryReporter:
    """Controller side: one payload per node id (reruns and ``--dist each`` count once), the
    summary block and the ``--trajectory-min`` gate."""

    def __init__(self, config: pytest.Config, gate: float | None) -> None:
        self.config = config
        self.gate = gate
        self.payloads = reporting.Payloads(PAYLOAD_ATTR)
        self.gate_line: str | None = None
        self.gate_failed = False
        shown = config.getoption("trajectory_failures_shown", None)
        self.sections = FailureSections(FAILURES_SHOWN if shown is None else int(shown))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.payloads.add(report)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.gate is None or not self.payloads:
            return  # an ini gate must not fail runs that have no trajectory items
        mean, count = overall_mean(self.payloads.values())
        if mean is None:
            self.gate_line = (f"ERROR: no trajectory metric was evaluated, so --trajectory-min {self.gate:.3f} "
                              "cannot be met")
            self.gate_failed = True
        elif mean < self.gate - TOLERANCE:
            self.gate_line = (f"ERROR: mean trajectory score {mean:.3f} ({count} evaluated metric results) is below "
                              f"--trajectory-min {self.gate:.3f}")
            self.gate_failed = True
        else:
            self.gate_line = (f"Mean trajectory score {mean:.3f} ({count} evaluated metric results) meets "
                              f"--trajectory-min {self.gate:.3f}")
        if self.gate_failed:
            reporting.fail_session(session)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.payloads:
            return
        tr = terminalreporter
        lines = summary_lines(self.payloads.values())
        hidden = self.sections.restore()
        if hidden:
            lines.append(f"{hidden} more failing case{'s are' if hidden > 1 else ' is'} not shown in full above "
                         f"(--trajectory-failures-shown {self.sections.shown}; 'all' costs failures x items); "
                         "the short summary lists each, --junitxml and pytest-html keep each report whole.")
        reporting.write_block(tr, "trajectory checks", lines)
        if self.gate_line:
            tr.write_line(self.gate_line, red=self.gate_failed, bold=self.gate_failed, green=not self.gate_failed)


class FailureSections:
    """At most ``shown`` failing cases in pytest's failure summary; the others are taken out of it.

    For each failure it prints, pytest's terminal reporter scans every report of the run for the
    item's teardown sections, so a run's failure summary costs failures x items: 10,000 failing
    cases spent 90% of their run there. The failure's metric table says no more than the run's own
    "trajectory checks" table and the short summary line, so the sections past the first
    ``shown`` are left out. The reports themselves are untouched (JUnit XML, pytest-html, the
    short summary and the counts see every one): this wrapper, outermost, takes them out of the
    terminal reporter's ``failed`` list before its summary prints, and ``restore`` (from the
    reporter's plain ``pytest_terminal_summary``, which runs after the failures are printed and
    before the short summary) puts the list back; the wrapper's end does so too, whatever ran."""

    def __init__(self, shown: int) -> None:
        self.shown = shown
        self._held: tuple[dict[str, list[Any]], list[Any]] | None = None
        self.hidden = 0

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> Generator[None]:
        stats: dict[str, list[Any]] = terminalreporter.stats
        failed = stats.get("failed") or []
        cases = [r for r in failed if getattr(r, PAYLOAD_ATTR, None) is not None]
        if len(cases) > self.shown and terminalreporter.config.option.tbstyle != "no":
            hide = {id(r) for r in cases[self.shown:]}
            self._held = (stats, failed)
            self.hidden = len(hide)
            stats["failed"] = [r for r in failed if id(r) not in hide]
        try:
            return (yield)
        finally:
            self.restore()

    def restore(self) -> int:
        """Put the terminal reporter's list of failures back; the number of sections left out."""
        if self._held is not None:
            stats, failed = self._held
            stats["failed"] = failed
            self._held = None
        return self.hidden


def overall_mean(payloads: list[dict[str, Any]]) -> tuple[float | None, int]:
    """Mean score over every evaluated metric result of every case (error items have none)."""
    scores = [m["score"] for p in payloads for m in p["metrics"] if m["passed"] is not None]
    return (sum(scores) / len(scores) if scores else None), len(scores)


def summary_lines(payloads: list[dict[str, Any]]) -> list[str]:
    counts = {s: sum(1 for p in payloads if p["status"] == s) for s in ("passed", "failed", "not-evaluated", "error")}
    errors = f"{counts['error']} error{'' if counts['error'] == 1 else 's'}"
    lines = [(f"Cases: {len(payloads)} ({counts['passed']} passed, {counts['failed']} failed, "
              f"{counts['not-evaluated']} not evaluated, {errors})")]
    per: dict[str, dict[str, Any]] = {}
    for p in payloads:
        for m in p["metrics"]:
            row = per.setdefault(m["metric"], {"name": m["name"], "passed": 0, "failed": 0, "none": 0, "scores": []})
            if m["passed"] is None:
                row["none"] += 1
            else:
                row["passed" if m["passed"] else "failed"] += 1
                row["scores"].append(m["score"])
    rows = []
    for row in per.values():
        scores = row["scores"]
        rows.append([row["name"], str(len(scores)), str(row["passed"]), str(row["failed"]), str(row["none"]),
                     f"{sum(scores) / len(scores):.3f}" if scores else "-"])
    mean, _count = overall_mean(payloads)
    if rows:
        evaluated = sum(len(r["scores"]) for r in per.values())
        rows.append(["all metrics", str(evaluated), str(sum(r["passed"] for r in per.values())),
                     str(sum(r["failed"] for r in per.values())), str(sum(r["none"] for r in per.values())),
                     "-" if mean is None else f"{mean:.3f}"])
        lines.append("")
        lines.extend(render_table(["metric", "evaluated", "passed", "failed", NOT_EVALUATED, "mean score"], rows,
                                  right={1, 2, 3, 4, 5}, short_last_rule=True))
    lines.append("")
    lines.append("Mean scores are over evaluated metrics only; a not-evaluated metric has no score.")
    return lines
