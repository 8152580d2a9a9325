"""Controller-side run record: results.jsonl from forwarded reports, summary.json, the viewer,
the terminal summary and the ``--bench-min-success`` gate. Registered only on the controller (or the
single process without xdist), so every record is written exactly once."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_agentbench import metrics as m
from pytest_agentbench.plugin import reporting
from pytest_agentbench.plugin.reporting_shared import SharedValues
from pytest_agentbench.plugin.state import PAYLOAD_ATTR
from pytest_agentbench.record.run_files import TASK_FIELDS, run_summary, task_rows, write_summary

if TYPE_CHECKING:
    from pytest_agentbench.plugin.session import AgentbenchPlugin


def status_of(report: pytest.TestReport) -> str:
    """The item's final pytest outcome as one word."""
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.when != "call" and report.failed:
        return "error"
    return report.outcome


#: What each attempt of a rerun item keeps in the final record's ``attempts``.
ATTEMPT_FIELDS = ("status", "success", "score", "reason", "error_type", "duration", "num_steps", "trajectory",
                  "cost_usd")


#: What summary.json's ``tasks`` keeps of each record: the run files' fields and the trial.
SUMMARY_TASK_FIELDS = (*TASK_FIELDS, "trial")


def attempt_summary(record: dict[str, Any]) -> dict[str, Any]:
    return {key: record[key] for key in ATTEMPT_FIELDS if key in record}


class RunController:
    def __init__(self, state: AgentbenchPlugin) -> None:
        self.state = state
        self.records: list[dict[str, Any]] = []
        #: The results.jsonl line written for each record, in the same order (None: none written
        #: here, as for the records a resumed run keeps); the viewer embeds them as they are.
        self.record_texts: list[str | None] = []
        #: Earlier attempts of items a rerun plugin plays again, by node id, until the final one.
        self.attempts: dict[str, list[dict[str, Any]]] = {}
        self.started = _dt.datetime.now(_dt.timezone.utc)
        self.gate_message: str | None = None
        #: summary.json but its per-task lines ``tasks``, which are written from the records
        self.summary: dict[str, Any] | None = None
        self.write_error: str | None = None
        self.setup_seconds: dict[str, float] = {}
        self.file_errors: list[str] = []
        self.inspect_log: Path | None = None
        #: node ids with a record, so a later report (a teardown error) never adds a second one
        self.recorded: set[str] = set()
        self._tasks_by_nodeid: dict[str, dict[str, Any]] | None = None
        self.resumed = self.fresh_folder = False
        #: The records' repeated values, kept once (every record is held to the end of the run).
        self.shared = SharedValues()

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        # Runs after AgentbenchPlugin resolved the manifest (tryfirst) and before xdist's
        # DSession (trylast) starts the workers, which need the folder's path.
        from pytest_agentbench.record.runfolder import RunFolder, default_run_name

        config = session.config
        settings = self.state.settings
        if config.option.collectonly or self.state.manifest is None or not self.state.manifest.suites:
            return  # nothing to play (only suite benchmarks, which keep their own records)
        self._session = session
        from pytest_agentbench.plugin.resume import RUN_FILE, record_identity, resumed_folder

        folder = resumed_folder(self, config)  # --bench-resume RUN: RUN's folder, its final records kept
        self.resumed = folder is not None
        name = settings.run_name or default_run_name(settings.benchmarks, self._player(settings.agent))
        try:
            folder = folder or RunFolder.create(settings.results_dir, name)
        except (ValueError, OSError) as exc:
            raise pytest.UsageError(f"cannot create the run folder: {exc}") from None
        self.state.run_folder = folder
        #: a folder this run made (not --bench-resume's): removed again when no item was selected
        self.fresh_folder = not self.resumed
        target = folder.manifest_path
        try:  # a full disk (or a read-only one) here is one usage line naming the file, not an INTERNALERROR
            self.state.manifest.write(target)
            target = folder.path / RUN_FILE
            record_identity(self, config, folder)
        except OSError as exc:
            raise pytest.UsageError(f"cannot write {target}: {_os_error(exc)}") from None

    def _player(self, agent: str) -> str:
        """Who plays the run, for its folder name: the ``--bench-agent`` agent, unless every benchmark
        plays its tasks itself (MockMed's arms, OpenComputer's end states)."""
        players = [getattr(self.state.benchmarks.get(name), "player", None) for name in self.state.settings.benchmarks]
        if players and all(players):
            return "+".join(dict.fromkeys(str(p) for p in players))
        return agent

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "setup":
            # The episode plays during setup; the record's duration is setup plus call.
            self.setup_seconds[report.nodeid] = report.duration
        if self.state.run_folder is None:
            return
        payload = getattr(report, PAYLOAD_ATTR, None)
        if not payload:
            return
        if report.when == "call" or report.failed or report.skipped or reporting.is_rerun(report):
            if report.nodeid in self.recorded and not reporting.is_rerun(report):
                # ``--dist each`` runs every item on every worker: one record per item, the first
                # reported, as audit, suite and case items count (a second play is not a trial:
                # ``--bench-trials`` is, with its own item id and seed).
                return
            # The report's own dict, not a copy: the record is held once (the item dropped it when
            # the report took it; pytest-html's row hook still reads it from the report).
            record = payload
            record["status"] = status_of(report)
            setup = self.setup_seconds.pop(report.nodeid, 0.0) if report.when == "call" else 0.0
            record["duration"] = round(setup + report.duration, 6)
            if reporting.is_rerun(report):
                # A rerun plugin will play the item again: this attempt goes into the final
                # attempt's record, so the run has one record per item and counts final outcomes.
                self.attempts.setdefault(report.nodeid, []).append(attempt_summary(record))
                return
            earlier = self.attempts.pop(report.nodeid, None)
            if earlier:
                record["attempts"] = [*earlier, attempt_summary(record)]
            self.shared.share(record)
            self.records.append(record)
            self.recorded.add(report.nodeid)
            self.record_texts.append(self._append(record) if self.write_error is None else None)

    def keep_records(self, records: list[dict[str, Any]]) -> None:
        """Records this run holds without writing their lines (a resumed run's kept ones)."""
        self.records.extend(records)
        self.record_texts.extend([None] * len(records))

    def _append(self, record: dict[str, Any]) -> str | None:
        """One results.jsonl line. When the disk refuses it (full, quota, I/O error) the run stops:
        later items would spend time and money with nowhere to record them. The lines already
        written stay whole (``RunFolder.append_result``), and the run ends with one ERROR: line."""
        folder = self.state.run_folder
        assert folder is not None
        try:
            return folder.append_result(record)
        except OSError as exc:
            kept = len(self.records) - 1
            self.write_error = (f"ERROR: could not write {folder.results_path}: {_os_error(exc)}; the run was stopped "
                                f"and the {kept} complete record(s) before it are kept")
            self._stop("the run record could not be written (see the ERROR line)")
            return None

    def _stop(self, reason: str) -> None:
        config = self.state.config
        dsession = config.pluginmanager.get_plugin("dsession")
        if dsession is not None:
            dsession.shouldstop = reason
        session = getattr(self, "_session", None)
        if session is not None:
            session.shouldstop = reason

    def record_crash(self, report: pytest.TestReport, phase: str | None, agent: str | None = None) -> None:
        """Give the report xdist makes for a benchmark item whose worker died under it (without
        the record the worker never sent) a record, typed by the ``phase`` the worker noted
        (``phases.py``) and naming the ``agent`` it noted (else ``--bench-agent``'s). An agent's
        failure stays the failure pytest reports; an infrastructure or evaluation error becomes a
        setup error, which pytest counts as one, as it counts such an error raised in the worker."""
        if report.nodeid in self.recorded or self.state.run_folder is None:
            return
        if self._tasks_by_nodeid is None:
            from pytest_agentbench.plugin.episodes import task_nodeid

            manifest = self.state.manifest
            self._tasks_by_nodeid = {task_nodeid(suite.name, task): task
                                     for suite in (manifest.suites if manifest is not None else [])
                                     for task in suite.tasks}
        task = self._tasks_by_nodeid.get(report.nodeid)
        if task is None:
            return
        from pytest_agentbench.phases import crash_cause
        from pytest_agentbench.record.run_files import base_payload

        error_type, where = crash_cause(phase)
        crashed = " ".join(str(report.longrepr or "the process running this item died").split())[:500]
        blame = ("the agent's failure" if error_type == "agent" else
                 f"an {error_type} error, left out of the success rate")
        message = f"{crashed} {where}: {blame}"
        payload = base_payload(report.nodeid, task, agent or self.state.settings.agent)
        worker = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", None)
        if worker:
            payload["worker"] = worker
        payload.update(error=message, error_type=error_type, reason=message, outcome=error_type == "agent")
        report.longrepr = message
        report.when = "call" if error_type == "agent" else "setup"  # xdist's "???": pytest counts a failure
        setattr(report, PAYLOAD_ATTR, payload)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        folder = self.state.run_folder
        if folder is None:
            return
        folder.close()  # every item has reported: results.jsonl is complete
        if (exitstatus in (pytest.ExitCode.NO_TESTS_COLLECTED, pytest.ExitCode.USAGE_ERROR) and not self.records
                and self.fresh_folder):
            # -k or -m selected no item, or a node id argument named none: no run to keep (only its manifest)
            self.state.writer.flush()
            import shutil

            shutil.rmtree(folder.path, ignore_errors=True)
            self.state.run_folder = None
            return
        self.file_errors.extend(self.state.writer.flush())
        if not self.records and self.state.manifest is not None and not self.state.manifest.suites:
            return  # only suite benchmarks ran: they report for themselves
        settings = self.state.settings
        agent, player = settings.agent, self._player(settings.agent)
        if player == agent:  # the agent played: a conftest's, when the records all name it
            named = {record.get("agent") for record in self.records} - {None, ""}
            agent = player = str(named.pop()) if len(named) == 1 else agent
        self.summary = run_summary(
            self.records, run_name=folder.name, benchmarks=settings.benchmarks, agent=agent,
            created_at=self.started.isoformat(timespec="seconds"),
            finished_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            max_steps=settings.max_steps, task_fields=None, player=player,
            vm_cost=self.state.pools.cost() if self.state.pools is not None else None, budget=self._budget_summary())
        from pytest_agentbench.plugin.junit import add_junit_properties
        from pytest_agentbench.plugin.trials import trial_settings
        from pytest_agentbench.record.stats_report import summary_fields

        trials = trial_settings(session.config).trials
        self.summary.update(summary_fields(self.records, trials))
        add_junit_properties(session.config, self.summary["statistics"], trials)
        threshold = settings.min_success
        if threshold is not None and self.records:
            rate = self.summary["success_rate"]
            if rate is None or rate < threshold:
                shown = m.format_rate(rate)
                self.gate_message = (
                    f"ERROR: success rate {shown} (outcomes only) is below --bench-min-success {threshold * 100:.1f}%"
                )
                reporting.fail_session(session)
        gate = session.config.pluginmanager.get_plugin("agentbench-compare")
        if gate is not None:  # --bench-compare: before the viewer, which shows the comparison
            gate.compare(session, folder, self.records)
        # The gate is decided first: a failure to write a view must not let a bad run pass.
        try:
            # The records are results.jsonl's, in its order, unless a line of it failed: then the
            # viewer reads the file, which holds what was kept.
            write_summary(folder, self.summary, self.records if self.write_error is None else None,
                          tasks=task_rows(self.records, SUMMARY_TASK_FIELDS), record_texts=self.record_texts)
        except OSError as exc:
            self.write_error = self.write_error or (f"ERROR: could not write the run summary in {folder.path}: "
                                                    f"{_os_error(exc)}")
        if settings.inspect_log is not None:
            from pytest_agentbench.record.inspect_log import write_inspect_log

            status = "cancelled" if session.exitstatus == pytest.ExitCode.INTERRUPTED else "success"
            try:
                self.inspect_log = write_inspect_log(settings.inspect_log, self.summary, self.records, folder.path,
                                                     status=status)
            except OSError as exc:
                self.write_error = self.write_error or ("ERROR: could not write the Inspect log "
                                                        f"{settings.inspect_log}: {_os_error(exc)}")
        if self.file_errors and not self.write_error:
            self.write_error = (f"ERROR: {len(self.file_errors)} task file(s) could not be written in {folder.path}; "
                                f"first: {self.file_errors[0]}")
        if self.write_error:
            reporting.fail_session(session)

    def pytest_unconfigure(self) -> None:
        """The run ended without a session finish (an internal error, a usage error after the
        first line): results.jsonl is closed all the same; what it holds is whole lines."""
        if self.state.run_folder is not None:
            self.state.run_folder.close()

    def _budget_summary(self) -> dict[str, Any] | None:
        budget = self.state.budget
        if budget is None:
            return None
        skipped = sum(1 for r in self.records
                      if r.get("status") == "skipped" and "budget spent" in str(r.get("reason") or ""))
        return {"max_cost_usd": budget.run_limit, "max_cost_usd_per_task": budget.task_limit,
                "spent_usd": round(budget.run_spent, 6), "exhausted": budget.run_exhausted(),
                "budget_skipped": skipped}

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.summary is None:
            return
        tr = terminalreporter
        reporting.write_block(tr, "agentbench", m.results_block(self.summary))
        if len(self.summary["by_domain"]) > 1 or len(self.state.settings.benchmarks) > 1:
            tr.write_line("")
            for line in m.domain_table(self.summary["by_domain"]):
                tr.write_line(line)
        from pytest_agentbench.record.stats_report import terminal_lines

        tr.write_line("")
        for line in terminal_lines(self.summary["statistics"], domains=True):
            tr.write_line(line)
        budget = self.summary.get("budget")
        if budget:
            caps = [f"run {m.format_usd(budget['max_cost_usd'])}" if budget["max_cost_usd"] else "",
                    f"per task {m.format_usd(budget['max_cost_usd_per_task'])}"
                    if budget["max_cost_usd_per_task"] else ""]
            line = f"Budget: {m.format_usd(budget['spent_usd'])} spent (caps: {', '.join(c for c in caps if c)})"
            if budget["exhausted"]:
                line += f"; the run's budget is spent: {budget['budget_skipped']} item(s) skipped (budget spent)"
            tr.write_line("")
            tr.write_line(line, yellow=bool(budget["exhausted"]))
        folder = self.state.run_folder
        assert folder is not None
        self.state.config.hook.pytest_agentbench_terminal_summary(terminalreporter=tr, records=list(self.records))
        tr.write_line("")
        tr.write_line(f"Results saved to: {folder.path}")
        if folder.viewer_path.exists():
            tr.write_line(f"View them with:   {folder.viewer_path}")
        if self.inspect_log is not None:
            tr.write_line(f"Inspect log:      {self.inspect_log}")
        for message in (self.gate_message, self.write_error):
            if message:
                tr.write_line(message, red=True, bold=True)


def _os_error(exc: OSError) -> str:
    """``[Errno 28] No space left on device`` without the file name the caller already gives."""
    return f"[Errno {exc.errno}] {exc.strerror}" if exc.errno and exc.strerror else str(exc)
