"""``--bench-resume RUN``: continue an interrupted run in its own folder.

A long run that dies at task 120 of 154 should not start over. At session start the controller
opens RUN's folder instead of making a new one, checks that this selection is the run's (same
benchmarks, agent, task list, trials and trial seed, recorded in ``run.json`` when the run
started), and splits RUN's records:

* an item whose last record is final (anything but an infrastructure error, or a skip because the
  budget was spent) is done: it is left out of collection, never played again, and its record
  counts in the summary and statistics as if this session had played it; once this session's
  items have played, the controller reports it from its record (``ResumedReports``), so the
  terminal, the exit status, ``--junitxml`` and ``--lf`` see the whole run;
* the other items (no record, or ended by an infrastructure error) are played; the records they
  replace move to ``results.replaced.jsonl`` so results.jsonl ends with one record per item.

Under xdist the controller hands the done node ids to the workers, which leave out the same items
while collecting. The budget ledger is the run folder's, so money already spent counts against
``--bench-max-cost-usd``; a cloud pool creates VMs only for the items left (``items_left``), and a dry
run prices only those (``not_done``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_agentbench.plugin.reporting_shared import SharedValues
from pytest_agentbench.record.runfolder import RunFolder, read_results
from pytest_agentbench.redact import redact
from pytest_agentbench.untrusted import load_file

if TYPE_CHECKING:
    from pytest_agentbench.manifest import Manifest
    from pytest_agentbench.plugin.session import AgentbenchPlugin

RUN_FILE = "run.json"
REPLACED_FILE = "results.replaced.jsonl"
DONE_INPUT = "agentbench_resume_done"
RUN_SCHEMA = "pytest-agentbench/run/v1"


def identity(state: AgentbenchPlugin, manifest: Manifest, trials: int, seed: int,
             created_at: str | None = None) -> dict[str, Any]:
    """What must match for a run to be continued: written as run.json when a run starts (with
    the run's start time, which a resumed run keeps, so its summary says when the run began)."""
    return {
        "schema": RUN_SCHEMA,
        "created_at": created_at,
        "benchmarks": list(state.settings.benchmarks),
        "agent": state.settings.agent,
        "trials": trials,
        "trial_seed": seed,
        "tasks": [f"{s.name}::{t['task_id']}" for s in manifest.suites for t in s.tasks],
    }


def write_identity(folder: RunFolder, data: Mapping[str, Any]) -> None:
    folder.write_json(folder.path / RUN_FILE, data)


def is_final(record: Mapping[str, Any]) -> bool:
    """A record that ends its item for good. Infrastructure errors (the VM died, the worker
    crashed) and budget skips say nothing about the agent, so those items play again."""
    if record.get("error_type") == "infrastructure":
        return False
    return not (record.get("status") == "skipped" and "budget spent" in str(record.get("reason") or ""))


def mismatch(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """The first difference between the run's identity and this selection's, in words."""
    for key, label in (("benchmarks", "benchmarks"), ("agent", "agent"), ("trials", "--bench-trials"),
                       ("trial_seed", "--bench-trial-seed")):
        if old.get(key) != new.get(key):
            return f"{label} was {old.get(key)!r} there, {new.get(key)!r} here"
    if old.get("tasks") != new.get("tasks"):
        before, after = set(old.get("tasks") or ()), set(new.get("tasks") or ())
        extra, missing = sorted(after - before), sorted(before - after)
        detail = (f"{len(missing)} of its task(s) not selected here (first {missing[0]})" if missing
                  else f"{len(extra)} task(s) here not in it (first {extra[0]})" if extra else "the task order differs")
        return f"the task list differs: {detail}"
    return None


class Resume:
    """Controller side: open RUN's folder, check it, split its records."""

    def __init__(self, path: Path, shared: SharedValues | None = None) -> None:
        self.folder = RunFolder(path)
        #: The records' repeated values and keys, kept once (``SharedValues.shared``): the kept
        #: records of a 20,000-task run are held to its end.
        self.shared = shared if shared is not None else SharedValues()
        self.kept: list[dict[str, Any]] = []
        self.replaced: list[dict[str, Any]] = []
        self.created_at: str | None = None

    def open(self, state: AgentbenchPlugin, manifest: Manifest, trials: int, seed: int) -> RunFolder:
        """Check RUN against this selection and prepare its folder; usage errors say why not."""
        try:
            self.folder.lock()  # a second resume of the folder at once is refused here
        except OSError as exc:
            raise pytest.UsageError(f"--bench-resume {self.folder.path}: {exc.strerror or exc}") from None
        self.check(state, manifest, trials, seed)
        self._rewrite()
        return self.folder

    def check(self, state: AgentbenchPlugin, manifest: Manifest, trials: int, seed: int) -> None:
        """Check RUN against this selection and split its records, writing nothing (a dry run
        prices only what is left with this)."""
        flag = f"--bench-resume {self.folder.path}"
        new = identity(state, manifest, trials, seed)
        run_file = self.folder.path / RUN_FILE
        try:
            old = load_file(run_file)
        except FileNotFoundError:
            raise pytest.UsageError(f"{flag}: the run has no {RUN_FILE} (it was not started by a version that "
                                    "records its selection); start a new run instead") from None
        except OSError as exc:
            raise pytest.UsageError(f"{flag}: cannot read {run_file}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise pytest.UsageError(f"{flag}: cannot read {run_file}: {exc}") from None
        if not isinstance(old, dict):
            raise pytest.UsageError(f"{flag}: {run_file} is not a run file (a JSON object); start a new run instead")
        problem = mismatch(old, new)
        if problem:
            raise pytest.UsageError(f"{flag}: this selection is not that run's ({problem}); "
                                    "pass the same --bench, --bench-agent, task selection, --bench-trials "
                                    "and --bench-trial-seed")
        try:
            records = self.records()
        except ValueError as exc:
            raise pytest.UsageError(f"{flag}: {exc}") from None
        self.kept, self.replaced = split(records)
        self.created_at = old.get("created_at") if isinstance(old.get("created_at"), str) else None

    def records(self) -> list[dict[str, Any]]:
        """RUN's records (none without results.jsonl), each with its keys and repeated values kept
        once: a decoded line's keys are new strings, and the records are held to the run's end.
        ValueError naming the line of a malformed one."""
        if not self.folder.results_path.exists():
            return []
        return read_results(self.folder.results_path, self.shared.shared)

    def _rewrite(self) -> None:
        """results.jsonl keeps the final records; the ones to be replayed move aside, appended
        first so a crash between the two writes loses nothing."""
        if not self.replaced:
            return
        path = self.folder.path / REPLACED_FILE
        with path.open("a", encoding="utf-8") as handle:
            for record in self.replaced:
                handle.write(redact(json.dumps(record, sort_keys=True, separators=(",", ":"))) + "\n")
        from pytest_agentbench.record.streamed import write_text_pieces

        # line by line: the kept records of a 20,000-task run are tens of megabytes as one string
        write_text_pieces(self.folder.results_path,
                          (json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n" for r in self.kept))

    @property
    def done(self) -> list[str]:
        return [str(r["nodeid"]) for r in self.kept if r.get("nodeid")]


def split(records: Iterable[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(final records, one per node id, in file order; every other record)."""
    by_node: dict[str, dict[str, Any]] = {}
    replaced: list[dict[str, Any]] = []
    for record in records:
        key = str(record.get("nodeid") or f"{record['benchmark']}::{record['task_id']}::{record.get('trial', 1)}")
        previous = by_node.get(key)
        if previous is not None:
            replaced.append(previous)
        by_node[key] = record
    kept: list[dict[str, Any]] = []
    for record in by_node.values():
        (kept if is_final(record) else replaced).append(record)
    return kept, replaced


class ResumeDeselect:
    """Every process that collects: drop the items that are done. They are not "deselected" (no
    ``pytest_deselected``): the controller reports them from their records (``ResumedReports``),
    so the terminal counts each item once, as passed, failed, ... like the rest of the run."""

    def __init__(self, done: Iterable[str]) -> None:
        self.done = set(done)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if self.done:
            items[:] = [item for item in items if item.nodeid not in self.done]


class ResumedReports:
    """Controller: once this session's items have played, report every item already done from
    its record, as if it had played now (setup, call and teardown reports, with the recorded
    outcome and duration). So ``--junitxml``, the terminal's counts and exit status, and
    ``--lf``'s cache cover the whole run, while results.jsonl keeps its one record per item.
    Each report carries the property ``agentbench_resumed`` = "from run FOLDER, not replayed"."""

    def __init__(self, records: Iterable[Mapping[str, Any]], folder: Path) -> None:
        self.records = [r for r in records if r.get("nodeid")]
        self.note = f"from run {folder}, not replayed"

    @pytest.hookimpl(wrapper=True, trylast=True)  # inside the terminal's, which ends the progress line
    def pytest_runtestloop(self, session: pytest.Session) -> Any:
        # The done items count as collected (the terminal's progress, and a run with nothing left
        # is not "no tests collected"); xdist sets the count from its workers' collections.
        xdist = session.config.pluginmanager.hasplugin("dsession")
        if not xdist:
            session.testscollected += len(self.records)
        try:
            return (yield)
        finally:
            if xdist:
                session.testscollected += len(self.records)
            hook = session.config.hook
            for record in self.records:
                reports = reports_of(record, self.note)
                hook.pytest_runtest_logstart(nodeid=reports[0].nodeid, location=reports[0].location)
                for report in reports:
                    hook.pytest_runtest_logreport(report=report)
                hook.pytest_runtest_logfinish(nodeid=reports[0].nodeid, location=reports[0].location)


def reports_of(record: Mapping[str, Any], note: str) -> list[pytest.TestReport]:
    """The setup, call and teardown reports of a done item, from its record's ``status``."""
    nodeid = str(record["nodeid"])
    path, _, rest = nodeid.partition("::")
    location = (path, None, rest or nodeid)
    status = str(record.get("status") or "passed")
    reason = str(record.get("reason") or record.get("error") or status)
    properties = [("agentbench_resumed", note)]
    duration = float(record.get("duration") or 0.0)

    def report(when: Any, outcome: Any, longrepr: Any = None, seconds: float = 0.0,
               wasxfail: str | None = None) -> pytest.TestReport:
        made = pytest.TestReport(nodeid, location, {}, outcome, longrepr, when, duration=seconds,
                                 user_properties=properties)
        if wasxfail is not None:
            made.wasxfail = wasxfail
        return made

    if status == "error":
        first = [report("setup", "failed", f"{note}: {reason}", duration)]
    elif status == "skipped":
        first = [report("setup", "skipped", (path, 0, f"Skipped: {reason} ({note})"), duration)]
    else:
        call = {"passed": ("passed", None, None), "failed": ("failed", f"{note}: {reason}", None),
                "xfailed": ("skipped", None, reason), "xpassed": ("passed", None, reason)}
        outcome, longrepr, wasxfail = call.get(status, call["failed"])
        first = [report("setup", "passed"), report("call", outcome, longrepr, duration, wasxfail)]
    return [*first, report("teardown", "passed")]


def resumed_folder(controller: Any, config: pytest.Config) -> RunFolder | None:
    """Controller, session start: with ``--bench-resume``, RUN's folder (checked and split), its final
    records already in the controller's list; None without ``--bench-resume``."""
    from pytest_agentbench.plugin.trials import trial_settings

    settings = trial_settings(config)
    if settings.resume is None:
        return None
    resume = Resume(settings.resume, controller.shared)
    folder = resume.open(controller.state, controller.state.manifest, settings.trials, settings.seed)
    controller.keep_records(resume.kept)
    if resume.created_at:
        import datetime as _dt

        try:
            controller.started = _dt.datetime.fromisoformat(resume.created_at)
        except ValueError:
            pass  # a hand-edited run.json: the summary gets this session's start instead
    config.pluginmanager.register(ResumeDeselect(resume.done), "agentbench-resume")
    # Done items are reported from their records; the controller never records them again.
    controller.recorded.update(resume.done)
    config.pluginmanager.register(ResumedReports(resume.kept, folder.path), "agentbench-resumed-reports")
    return folder


def record_identity(controller: Any, config: pytest.Config, folder: RunFolder) -> None:
    """Controller, session start: write run.json, what a later ``--bench-resume`` checks against."""
    from pytest_agentbench.plugin.trials import trial_settings

    settings = trial_settings(config)
    write_identity(folder, identity(controller.state, controller.state.manifest, settings.trials, settings.seed,
                                    controller.started.isoformat(timespec="seconds")))


def items_left(config: pytest.Config, manifest: Manifest | None) -> int | None:
    """How many items this session may play at most: the manifest's tasks times the trials, less
    the items a resumed run has done (``-k``/``-m`` may select fewer). None when the controller
    has no manifest of episodes (nothing to bound the count by)."""
    from pytest_agentbench.plugin.trials import trial_settings

    if manifest is None or not manifest.suites:
        return None
    planned = sum(len(suite.tasks) for suite in manifest.suites) * trial_settings(config).trials
    plugin = config.pluginmanager.get_plugin("agentbench-resume")
    done = len(plugin.done) if isinstance(plugin, ResumeDeselect) else 0
    return max(0, planned - done)


def not_done(config: pytest.Config, state: AgentbenchPlugin, items: list[Any]) -> list[Any]:
    """``items`` less those a resumed run has done: what a dry run of ``--bench-resume RUN`` prices.
    The dry run only collects, so RUN is checked here, read-only (a mismatch is a usage error)."""
    from pytest_agentbench.plugin.trials import trial_settings

    settings = trial_settings(config)
    if settings.resume is None or state.manifest is None:
        return items
    plugin = config.pluginmanager.get_plugin("agentbench-resume")
    if isinstance(plugin, ResumeDeselect):
        done = plugin.done
    else:
        resume = Resume(settings.resume)
        resume.check(state, state.manifest, settings.trials, settings.seed)
        done = set(resume.done)
    return [item for item in items if item.nodeid not in done]


def worker_input(config: pytest.Config) -> dict[str, Any]:
    """What an xdist worker needs to deselect the same items: the done node ids."""
    plugin = config.pluginmanager.get_plugin("agentbench-resume")
    return {DONE_INPUT: sorted(plugin.done)} if isinstance(plugin, ResumeDeselect) else {}


def register_on_worker(config: pytest.Config) -> None:
    done = getattr(config, "workerinput", {}).get(DONE_INPUT)
    if done:
        config.pluginmanager.register(ResumeDeselect(done), "agentbench-resume")
