"""The verifier audit as pytest items: ``audit/<bench>::<task_id>::<operator>``.

The first item of a task to run audits the task once (one reference, one batch delivery of the
control and the selected operators' runs); the task's other items read that result. Under xdist
the items of one task are scheduled together (``--dist loadscope``), so each task is delivered once.

| run class                     | pytest outcome | status word  |
|-------------------------------|----------------|--------------|
| killed                        | passed         | KILLED       |
| equivalent                    | passed         | EQUIVALENT   |
| false accept                  | failed         | FALSE-ACCEPT |
| refused                       | skipped        | REFUSED      |
| unconfirmed                   | skipped        | UNCONFIRMED  |
| error (not delivered)         | error (setup)  | ERROR        |
| invalid (the control failed)  | error (setup)  | ERROR        |
| task not audited: no write    | skipped        | SKIPPED      |
| task not audited: no reference| error (setup)  | ERROR        |
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_agentbench.errors import ConfigError
from pytest_agentbench.plugin import reporting
from pytest_agentbench.plugin.run_settings import AuditSettings

if TYPE_CHECKING:
    from pytest_agentbench.registry import AdapterRegistry

AUDIT_KEY = pytest.StashKey["AuditSession"]()
ITEM_KEY = pytest.StashKey[tuple[str, str]]()  # (task id, operator)
RUN_KEY = pytest.StashKey[dict[str, Any]]()
PAYLOAD_ATTR = "agentbench_audit"  # the report attribute holding the run (plain JSON)
#: The status word of each run class on the call report (the others get pytest's words).
STATUS_WORDS = {"killed": ("passed", ".", "KILLED"), "equivalent": ("passed", ".", "EQUIVALENT"),
                "false-accept": ("failed", "A", ("FALSE-ACCEPT", {"red": True, "bold": True})),
                "refused": ("skipped", "s", "REFUSED"), "unconfirmed": ("skipped", "s", "UNCONFIRMED")}
WORKER_INPUT = "agentbench_audit"
PROTOCOL = ("task_ids", "reference", "deliver")


class AuditFailed(pytest.fail.Exception):  # type: ignore[name-defined, misc]  # pytest types it as an attribute (Any)
    """A false accept. Reads as pytest's ``Failed`` in reports."""

    __module__ = "builtins"


AuditFailed.__name__ = AuditFailed.__qualname__ = "Failed"


#: The word a report shows for run classes that have no status word (pytest's error or skip).
OTHER_WORDS = {"not-delivered": "ERROR", "invalid": "INVALID", "no-reference": "NOT AUDITED",
               "not-audited": "NOT AUDITED"}


def status_word(run_class: str) -> str:
    """FALSE-ACCEPT, KILLED, ...: the run class as the terminal's status word names it."""
    word = STATUS_WORDS.get(run_class, (None, None, OTHER_WORDS.get(run_class, run_class.upper())))[2]
    return word[0] if isinstance(word, tuple) else str(word)


def report_view(config: pytest.Config, payload: dict[str, Any]) -> reporting.View:
    """What report plugins show of an audit item: the run class's word with the diff or reason
    (a false accept is named so where pytest says only "Failed"), the run itself as a JSON
    document, and the ``--audit-out`` report (written at the end of the run) as its file."""
    text = str(payload.get("summary") or payload.get("reason") or "")
    session = config.stash.get(AUDIT_KEY, None)
    out = session.settings.out if session is not None else None
    files = ((Path(out).absolute(), Path(out).name),) if out is not None else ()
    return reporting.View(verdict=reporting.status_line(status_word(str(payload["run_class"])), text), files=files,
                          documents=(("audit-run.json", json.dumps(payload, indent=2, sort_keys=True)),))


def run_audit_item() -> None:
    """The function of every audit item. ``AuditItem.setup`` audits its task once the fixtures are
    set up (so runs that could not be judged are setup errors); ``AuditItem.runtest`` turns the
    run class into the outcome."""


def run_audit(item: pytest.Item) -> dict[str, Any]:
    """The audit ``item``'s run result, its task audited once per task per process, noted on the
    item (its reports carry it) unless it was in this setup. Runs that could not be judged
    (error, invalid control, no reference) fail here, so pytest reports them as errors.
    ``AuditItem.setup`` and the ``audit_run`` fixtures call it."""
    run = item.stash.get(RUN_KEY, None)
    if run is not None:
        return run
    session = item.config.stash.get(AUDIT_KEY, None)
    if session is None or ITEM_KEY not in item.stash:
        raise pytest.UsageError("the audit_run fixture needs --audit-verifier NAME and an audit item")
    run = item.stash[RUN_KEY] = session.run_for(item)
    item.user_properties.extend([
        ("task_id", run["task_id"]), ("operator", run["operator"]), ("run_class", run["run_class"]),
        ("diff", run.get("summary") or ""), ("reason", run.get("reason") or ""),
    ])
    kind = run["run_class"]
    if kind in ("not-delivered", "invalid", "no-reference"):
        label = {"not-delivered": "error", "invalid": "invalid", "no-reference": "not audited"}[kind]
        pytest.fail(f"{label}: {run.get('reason')}", pytrace=False)
    return run


class AuditItem(pytest.Function):
    def reportinfo(self) -> tuple[Any, int | None, str]:
        # Located at the adapter under audit (module:Attr) or the factory that registered it (a
        # conftest's or a plugin's), else (a built-in) at the item's node (pytest-sugar and CI
        # annotations show this).
        from pytest_agentbench.plugin.integrations import located

        session = self.config.stash.get(AUDIT_KEY, None)
        return located(self, session.adapter_source() if session is not None else None)

    @property
    def function(self) -> Any:
        """``run_audit_item`` under a docstring naming this run, which report tools show as the
        test's description (allure-pytest reads ``item.function.__doc__``); made on each access
        and not kept, as for episode items."""
        from pytest_agentbench.plugin.integrations import described

        task_id, operator = self.stash[ITEM_KEY]
        return described(run_audit_item, f"Verifier audit, task {task_id}: is a run mutated by operator "
                                         f"{operator!r} rejected (killed) or accepted?")

    def setup(self) -> None:
        """Set up the fixtures, then audit: as for episode items (``BenchItem.setup``), a
        function-scoped fixture per item, which would also bring ``request``, costs pytest more
        than the item's own work. A rerun audits anew."""
        if RUN_KEY in self.stash:
            del self.stash[RUN_KEY]
        super().setup()
        run_audit(self)

    def runtest(self) -> None:
        super().runtest()
        run = self.stash[RUN_KEY]
        kind = run["run_class"]
        if kind == "false-accept":
            raise AuditFailed(str(run.get("summary") or run.get("reason")), pytrace=False)
        if kind == "refused":
            pytest.skip(f"refused: {run.get('reason')}")
        if kind == "unconfirmed":
            pytest.skip(f"unconfirmed: {run.get('reason')}")
        if kind == "not-audited":
            pytest.skip(f"not audited: {run.get('reason')}")


class AuditTask(pytest.Collector):
    def __init__(self, *args: Any, operators: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._operators = operators

    def collect(self) -> Iterator[pytest.Item]:
        for operator in self._operators:
            item = AuditItem.from_parent(self, name=operator, callobj=run_audit_item)
            item.stash[ITEM_KEY] = (self.name, operator)
            item.add_marker("audit")
            yield item


class AuditSuite(pytest.Collector):
    agentbench_suite = True

    def __init__(self, *args: Any, tasks: tuple[str, ...] = (), operators: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tasks, self._operators = tasks, operators

    def collect(self) -> Iterator[pytest.Collector]:
        for task_id in self._tasks:
            yield AuditTask.from_parent(self, name=task_id, operators=self._operators)


def _import_target(spec: str, config: pytest.Config) -> Any:
    """``module:Attr``, importable from installed packages, the rootdir or the current folder."""
    from pytest_agentbench.loading import LoadError, import_callable

    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise pytest.UsageError(f"--audit-verifier {spec!r}: use a registered name or module:Attr")
    try:
        return import_callable(module_name, attr, str(config.rootpath))
    except LoadError as exc:  # every import problem is a usage error naming the adapter
        raise pytest.UsageError(f"cannot load audit adapter {spec!r}: {exc}") from None


def _construct(target: Any, spec: str, config: pytest.Config) -> Any:
    if not callable(target):
        return target
    params: Any
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        params = {}
    with _construction(spec):
        return target(config=config) if "config" in params else target()


@contextmanager
def _construction(spec: str) -> Iterator[None]:
    """Building the adapter ``spec``: a :class:`ConfigError` is already one line naming the bad setting and
    passes as it is; anything else is a usage error naming the adapter and the exception."""
    try:
        yield
    except pytest.UsageError:
        raise
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - sys.exit() in a constructor is bad input too
        raise pytest.UsageError(f"cannot construct audit adapter {spec!r}: {type(exc).__name__}: {exc}") from None


class AuditSession:
    def __init__(self, config: pytest.Config, settings: AuditSettings) -> None:
        self.config = config
        self.settings = settings
        self.adapter: Any = None
        self.name = ""
        self.task_ids: tuple[str, ...] = ()
        self.results: dict[str, Any] = {}
        # One entry per item, that is per (task, operator): a run reported twice (``--dist each``,
        # reruns) counts once.
        self.runs = reporting.Payloads(PAYLOAD_ATTR)
        self._operators_by_task: dict[str, list[str]] | None = None
        self._registry: AdapterRegistry | None = None
        self._source: tuple[Path, int] | None = None
        self._source_known = False
        self.started = time.perf_counter()
        self.audit_seconds = 0.0
        from pytest_agentbench.plugin.rootdir_check import warn_spaced_path_options

        warn_spaced_path_options(config)

    # -- resolution ----------------------------------------------------------------------------
    def registry(self) -> AdapterRegistry:
        """The adapters registered through the hook, asked for once per process."""
        if self._registry is None:
            from pytest_agentbench.registry import AdapterRegistry

            self._registry = AdapterRegistry()
            self.config.hook.pytest_agentbench_register_audit_adapters(registry=self._registry)
        return self._registry

    def adapter_source(self) -> tuple[Path, int] | None:
        """Where the adapter under audit is defined (``module:Attr``) or registered (its factory);
        None for a built-in's, which sits in this package. Looked up once: every item asks."""
        if not self._source_known:
            from pytest_agentbench.plugin.integrations import resolve, source_of

            spec = self.settings.verifier
            entry = self.registry().entries.get(spec)
            target = entry.factory if entry is not None else resolve(spec) if ":" in spec else None
            self._source = source_of(target) if target is not None else None
            self._source_known = True
        return self._source

    def make_adapter(self) -> Any:
        spec = self.settings.verifier
        registry = self.registry()
        if spec in registry:
            with _construction(spec):
                adapter = registry.create(spec, self.config)
        elif ":" in spec:
            adapter = _construct(_import_target(spec, self.config), spec, self.config)
        else:
            raise pytest.UsageError(
                f"unknown audit adapter {spec!r} in --audit-verifier; available: {', '.join(registry.names())}, "
                "or module:Attr")
        missing = [m for m in PROTOCOL if not callable(getattr(adapter, m, None))]
        if missing:
            raise pytest.UsageError(
                f"audit adapter {spec!r} lacks {', '.join(missing)}(); an adapter needs name, ignore_fields, "
                "policy, describe(), task_ids(split, limit), reference(task_id) and deliver(task_id, runs)")
        return adapter

    def _resolve_tasks(self) -> tuple[str, ...]:
        settings, adapter = self.settings, self.adapter
        if settings.task_ids:
            has = getattr(adapter, "has_task", None)
            try:
                if callable(has):
                    unknown = [t for t in settings.task_ids if not has(t)]
                else:
                    known = set(adapter.task_ids(settings.split, None))
                    unknown = [t for t in settings.task_ids if t not in known]
            except (Exception, SystemExit) as exc:  # noqa: BLE001
                raise pytest.UsageError(f"audit adapter {self.name!r} could not list its tasks: {exc}") from None
            if unknown:
                raise pytest.UsageError(
                    f"--audit-tasks {', '.join(map(repr, unknown))}: no such task in {self.name!r}; "
                    "check the id (use --collect-only -q to list ids)")
            return settings.task_ids
        try:
            ids = tuple(adapter.task_ids(settings.split, settings.limit))
        except (Exception, SystemExit) as exc:  # noqa: BLE001
            raise pytest.UsageError(f"audit adapter {self.name!r} could not list its tasks: {exc}") from None
        if not ids:
            raise pytest.UsageError(f"audit adapter {self.name!r} has no tasks (split {settings.split!r})")
        return ids[: settings.limit] if settings.limit else ids

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        config = self.config
        if hasattr(config, "workerinput"):
            frozen = config.workerinput[WORKER_INPUT]
            self.name, self.task_ids = frozen["name"], tuple(frozen["tasks"])
            return
        self.adapter = self.make_adapter()
        self.name = str(getattr(self.adapter, "name", "") or self.settings.verifier)
        self.task_ids = self._resolve_tasks()
        from pytest_agentbench.names import name_problem, shown

        for task_id in self.task_ids:
            problem = name_problem(task_id)
            if problem is not None:
                raise pytest.UsageError(f"audit task id {shown(task_id)} from {self.name!r} {problem}")

    def configure_node(self, node: Any) -> None:
        """Called by AuditXdist on the controller: workers collect the controller's task list."""
        node.workerinput[WORKER_INPUT] = {"name": self.name, "tasks": list(self.task_ids)}

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Generator[None, pytest.CollectReport,
                                                                                   pytest.CollectReport]:
        report = yield
        if isinstance(collector, pytest.Session) and self.task_ids:
            if self.config.args_source != pytest.Config.ArgsSource.ARGS:
                report.result = [r for r in report.result if getattr(r, "agentbench_suite", False)]
            report.result.append(AuditSuite.from_parent(
                collector, name=self.name, nodeid=f"audit/{self.name}", tasks=self.task_ids,
                operators=self.settings.operators))
        return report

    # -- running -------------------------------------------------------------------------------
    def task_result(self, item: pytest.Item) -> Any:
        from pytest_agentbench.audit.engine import audit_task

        task_id, _ = item.stash[ITEM_KEY]
        if task_id not in self.results:
            if self.adapter is None:
                self.adapter = self.make_adapter()  # on a worker
            # Only the operators of this task's selected items (after -k, -m, --lf) are delivered.
            if self._operators_by_task is None:
                self._operators_by_task = {}
                for other in item.session.items:
                    if isinstance(other, AuditItem):
                        task, op = other.stash[ITEM_KEY]
                        self._operators_by_task.setdefault(task, []).append(op)
            selected = set(self._operators_by_task.get(task_id, ()))
            operators = [op for op in self.settings.operators if op in selected]
            self.results[task_id] = audit_task(self.adapter, task_id, operators, self.settings.ignore_fields)
        return self.results[task_id]

    def run_for(self, item: pytest.Item) -> dict[str, Any]:
        task_id, operator = item.stash[ITEM_KEY]
        task = self.task_result(item)
        run = next((r for r in task.runs if r.operator == operator), None)
        base = {"task_id": task_id, "operator": operator, "task_status": task.status, "task_reason": task.reason,
                "task_seconds": round(task.seconds, 3), "control_verdict": task.control_verdict,
                "benchmark": self.name}
        if run is None:  # the task was not audited (no reference, no write)
            kind = "not-audited" if task.status == "no-write" else "no-reference"
            return {**base, "run_class": kind, "verdict": None, "shape": None, "reason": task.reason,
                    "detail": {}, "tables": {}, "summary": ""}
        return {**base, **run.to_dict()}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if isinstance(item, AuditItem) and RUN_KEY in item.stash:
            reporting.attach(report, PAYLOAD_ATTR, item.stash[RUN_KEY], item.nodeid)
        return report

    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config) -> Any:
        run = getattr(report, PAYLOAD_ATTR, None)
        if run is None or not reporting.own_status(report):
            return None  # an xfail, or a rerun plugin's attempt: its own status word, not a verdict
        return STATUS_WORDS.get(run["run_class"])

    # -- controller: summary and report file ---------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if reporting.is_controller(self.config):
            self.runs.add(report)

    @property
    def payloads(self) -> list[dict[str, Any]]:
        return self.runs.values()

    def _ordered(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        order = {t: i for i, t in enumerate(self.task_ids)}
        ops = {o: i for i, o in enumerate(self.settings.operators)}
        runs = sorted(self.payloads, key=lambda r: (order.get(r["task_id"], 1 << 30), ops.get(r["operator"], 99)))
        tasks: dict[str, dict[str, Any]] = {}
        for run in runs:
            tasks.setdefault(run["task_id"], {"task_id": run["task_id"], "status": run["task_status"],
                                              "reason": run["task_reason"], "seconds": run["task_seconds"],
                                              "control_verdict": run["control_verdict"], "runs": []})
            if run["run_class"] not in ("not-audited", "no-reference"):
                tasks[run["task_id"]]["runs"].append(run)
        return list(tasks.values()), [r for t in tasks.values() for r in t["runs"]]

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not reporting.is_controller(self.config) or not self.runs or self.settings.out is None:
            return
        from pytest_agentbench.audit.engine import SCHEMA
        from pytest_agentbench.audit.model import RUN_CLASS_TEXT
        from pytest_agentbench.audit.operators import OPERATOR_CLASS
        from pytest_agentbench.audit.report import by_operator

        tasks, runs = self._ordered()
        operators = [o for o in self.settings.operators
                     if any(r["operator"] == o for r in runs)] or list(self.settings.operators)
        keys = ("equivalent", "false-accept", "invalid", "killed", "not-delivered", "refused", "unconfirmed")
        counts = by_operator(runs, operators)
        describe = getattr(self.adapter, "describe", None)
        fields = ("task_id", "operator", "run_class", "verdict", "shape", "reason", "detail", "tables", "summary")
        report = {
            "schema": SCHEMA,
            "benchmark": describe() if callable(describe) else {"name": self.name},
            "ignore_fields": sorted({*getattr(self.adapter, "ignore_fields", ()), *self.settings.ignore_fields}),
            "operators": [{"name": o, "class": OPERATOR_CLASS.get(o, "custom")} for o in operators],
            "run_classes": dict(RUN_CLASS_TEXT),
            "seconds": round(sum(t["seconds"] for t in tasks), 3),
            "summary": {
                "by_operator": {o: {k: counts[o].get(k, 0) for k in keys} for o in operators},
                "false_accepts": sum(1 for r in runs if r["run_class"] == "false-accept"),
                "tasks": len(tasks),
                "tasks_audited": sum(1 for t in tasks if t["status"] in ("audited", "control-failed")),
                "tasks_with_false_accept": sum(1 for t in tasks
                                               if any(r["run_class"] == "false-accept" for r in t["runs"])),
            },
            "tasks": [{**{k: t[k] for k in ("task_id", "status", "reason", "seconds", "control_verdict")},
                       "runs": [{k: r.get(k) for k in fields} for r in t["runs"]]} for t in tasks],
        }
        path = self.settings.out
        from pytest_agentbench.files import write_atomic

        try:
            write_atomic(path, json.dumps(report, indent=2, sort_keys=True) + "\n", mkdir=True)
            self.out_written = str(path)
        except OSError as exc:
            self.out_error = f"ERROR: could not write --audit-out {path}: {exc}"
            reporting.fail_session(session)

    out_written: str | None = None
    out_error: str | None = None

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not reporting.is_controller(self.config) or not self.runs:
            return
        from pytest_agentbench.audit.report import render

        tasks, runs = self._ordered()
        operators = [o for o in self.settings.operators
                     if any(r["operator"] == o for r in runs)] or list(self.settings.operators)
        tr = terminalreporter
        seconds = sum(t["seconds"] for t in tasks)
        reporting.write_block(tr, "verifier audit", render(self.name, tasks, runs, operators, seconds))
        if self.out_written:
            tr.write_line("")
            tr.write_line(f"Full report: {self.out_written}")
        if self.out_error:
            tr.write_line(self.out_error, red=True, bold=True)


class AuditXdist:
    """Registered on the controller when xdist is present: keeps each task's items on one worker."""

    def __init__(self, session: AuditSession) -> None:
        self.session = session

    def pytest_configure_node(self, node: Any) -> None:
        self.session.configure_node(node)

    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if getattr(config.option, "dist", "load") != "load":
            # The user chose a scheduler. loadscope keeps a task together; with others (worksteal,
            # each) a task whose items land on two workers is delivered on each (same results).
            return None
        from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

        return LoadScopeScheduling(config, log)
