"""The verifier audit as pytest items (``pytest --audit-verifier=NAME``), through real pytester runs:
the seed's report, status words, node ids, selection, xdist, --lf, --audit-out, custom adapters,
bad input, tasks that cannot be audited, ini keys and inertness."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter

import pytest

# The seed's report block for `openadapt-evals audit-verifier --benchmark toy`, copied verbatim
# from the seed text (section "Audit a benchmark's checker"), from the "Verifier audit:" line
# through the legend. `pytest --audit-verifier=toy` must print exactly these lines.
SEED_TOY_REPORT = """\
Verifier audit: toy, 5 task(s), 5 audited, 0s

The verifier passed 4 edited run(s) whose end state is wrong:
  task         operator  end state compared with the reference run
  -----------  --------  ------------------------------------------
  split-bill   extra     toy.Notification +1, toy.PaymentRequest +1
  split-bill   extra-ni  toy.Notification +1, toy.PaymentRequest +1
  queue-songs  extra     toy.QueueEntry +1
  queue-songs  extra-ni  toy.QueueEntry +1

Per operator (each edited run counted once; operators are not pooled):
  operator     class          runs  killed  false accept  equivalent  unconfirmed  refused  error  invalid
  -----------  -------------  ----  ------  ------------  ----------  -----------  -------  -----  -------
  claim-only   postcondition     5       5             0           0            0        0      0        0
  omit         postcondition     5       5             0           0            0        0      0        0
  partial      postcondition     4       4             0           0            0        1      0        0
  wrong-value  postcondition     5       5             0           0            0        0      0        0
  extra        frame             5       1             2           2            0        0      0        0
  extra-ni     frame             3       1             2           0            0        2      0        0

false accept: the verifier passed the edited run, and the end state (read
  back before grading) differs from the reference run's.
equivalent: the edit left the end state unchanged, so the pass is correct.
""".splitlines()

TASKS = ["split-bill", "split-bill-counted", "queue-songs", "like-songs", "rename-profile"]
OPERATORS = ["claim-only", "omit", "partial", "wrong-value", "extra", "extra-ni"]
FALSE_ACCEPTS = ["audit/toy::split-bill::extra", "audit/toy::split-bill::extra-ni",
                 "audit/toy::queue-songs::extra", "audit/toy::queue-songs::extra-ni"]
USAGE = pytest.ExitCode.USAGE_ERROR

# hypothesis (installed here, not a dependency) imports itself afresh in every in-process run's
# terminal summary: about a second per run. These runs never use it.
NO_HYPOTHESIS = ("-p", "no:hypothesispytest")


@pytest.fixture
def run(run):
    return lambda *args: run(*args, *NO_HYPOTHESIS)


@pytest.fixture
def run_sub(run_sub):
    return lambda *args: run_sub(*args, *NO_HYPOTHESIS)


def report_block(result: pytest.RunResult) -> list[str]:
    """The report lines from "Verifier audit:" through the legend's last line."""
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if line.startswith("Verifier audit: "))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("equivalent: "))
    return lines[start:end + 1]


def audit_ids(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if line.startswith("audit/")]


def words(result: pytest.RunResult) -> dict[str, str]:
    """node id -> the word of its -rA short-summary line."""
    out = {}
    for line in result.outlines:
        parts = line.split()
        if len(parts) >= 2 and parts[0] in ("KILLED", "EQUIVALENT", "FALSE-ACCEPT", "REFUSED", "SKIPPED",
                                            "ERROR", "UNCONFIRMED", "PASSED", "FAILED"):
            node = parts[2] if parts[1].startswith("[") else parts[1]
            node = node.removeprefix("../")  # pytest shows node ids relative to the current folder
            if node.startswith("audit/"):
                out[node.rstrip(":")] = parts[0]
    return out


# -- the toy report, outcomes and status words -------------------------------------------------------

def test_toy_report_matches_the_seed_byte_for_byte(run):
    result = run("--audit-verifier=toy")
    assert result.ret == pytest.ExitCode.TESTS_FAILED == 1
    assert report_block(result) == SEED_TOY_REPORT
    result.assert_outcomes(passed=23, failed=4, skipped=3)
    out = result.stdout.str()
    assert out.count("Verifier audit: ") == 1
    assert "= verifier audit =" in out


SEED_FILE = "/work/shared/seeds/000_9616a08a48bc6e6a.txt"  # the development workspace; absent in CI


def test_the_constant_is_the_seeds_text():
    from pathlib import Path

    seed = Path(SEED_FILE)
    if not seed.exists():
        pytest.skip("the seed file is only in the development workspace")
    lines = seed.read_text(encoding="utf-8").splitlines()
    start = lines.index("Verifier audit: toy, 5 task(s), 5 audited, 0s")
    assert lines[start:start + len(SEED_TOY_REPORT)] == SEED_TOY_REPORT


def test_status_words_in_verbose_output(run):
    result = run("--audit-verifier=toy", "-v")
    result.stdout.fnmatch_lines([
        "audit/toy::split-bill::claim-only KILLED*",
        "audit/toy::split-bill::extra FALSE-ACCEPT*",
        "audit/toy::split-bill::extra-ni FALSE-ACCEPT*",
        "audit/toy::like-songs::extra EQUIVALENT*",
        "audit/toy::like-songs::extra-ni REFUSED*",
        "audit/toy::rename-profile::partial REFUSED*",
    ])


def test_short_summary_with_ra(run):
    result = run("--audit-verifier=toy", "-rA")
    got = words(result)
    expected = {f"audit/toy::{t}::{o}": "KILLED" for t in TASKS for o in OPERATORS}
    expected.update(dict.fromkeys(FALSE_ACCEPTS, "FALSE-ACCEPT"))
    expected.update({"audit/toy::like-songs::extra": "EQUIVALENT", "audit/toy::rename-profile::extra": "EQUIVALENT",
                     "audit/toy::like-songs::extra-ni": "REFUSED", "audit/toy::rename-profile::partial": "REFUSED",
                     "audit/toy::rename-profile::extra-ni": "REFUSED"})
    assert got == expected
    # A false accept's one-line reason is the diff summary; a refusal names its reason.
    result.stdout.fnmatch_lines([
        "REFUSED * audit/toy::like-songs::extra-ni: refused: ALL_REPEATS_IDEMPOTENT",
        "REFUSED * audit/toy::rename-profile::partial: refused: NO_REPEATED_WRITE",
        "FALSE-ACCEPT audit/toy::queue-songs::extra - Failed: toy.QueueEntry +1",
    ])


def test_false_accept_failure_shows_only_the_diff(run):
    result = run("--audit-verifier=toy", "--audit-tasks", "queue-songs", "--audit-operators", "extra")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*_ audit/toy::queue-songs::extra _*", "toy.QueueEntry +1", "*= verifier audit =*"])
    assert "Traceback" not in result.stdout.str()
    assert "def run_audit_item" not in result.stdout.str()


CLOSURE = """
def pytest_collection_finish(session):
    print("closure:", ",".join(sorted(session.items[0].fixturenames)) or "none")
"""

ASKS_FOR_THE_RUN = """
import pytest

@pytest.fixture(autouse=True)
def notes_the_run(audit_run):
    print("run:", audit_run["task_id"], audit_run["operator"], audit_run["run_class"])
"""


def test_an_audit_item_resolves_no_fixture_and_a_fixture_asking_gets_its_run(run, pytester):
    # the item audits in its setup (AuditItem.setup): no function-scoped fixture, nor ``request``,
    # per item; a conftest fixture that asks for ``audit_run`` gets the run, audited once
    pytester.makeconftest(CLOSURE)
    run("--audit-verifier=toy", "--collect-only", "-q", "-s").stdout.fnmatch_lines(["closure: none"])
    pytester.makeconftest(ASKS_FOR_THE_RUN)
    result = run("--audit-verifier=toy", "--audit-tasks=split-bill", "--audit-operators=claim-only", "-s",
                 "--junitxml=out.xml")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*run: split-bill claim-only killed"])
    junit = (pytester.path / "out.xml").read_text()
    assert junit.count('name="operator"') == 1  # the run's properties were noted once


def test_node_ids_in_seed_task_order_then_operator_order(run):
    result = run("--audit-verifier=toy", "--collect-only", "-q")
    assert result.ret == 0
    assert audit_ids(result) == [f"audit/toy::{t}::{o}" for t in TASKS for o in OPERATORS]
    assert audit_ids(result)[0] == "audit/toy::split-bill::claim-only"
    assert "Verifier audit:" not in result.stdout.str()


def test_m_audit_selects_the_audit_items(run, pytester):
    pytester.makepyfile(test_plain="def test_plain(): pass")
    result = run("--audit-verifier=toy", "-m", "audit", "--collect-only", "-q", "test_plain.py")
    assert len(audit_ids(result)) == 30
    assert "test_plain.py::test_plain" not in result.stdout.str()


def test_k_audit_selects_the_audit_items(run, pytester):
    pytester.makepyfile(test_plain="def test_plain(): pass")
    result = run("--audit-verifier=toy", "-k", "audit", "--collect-only", "-q", "test_plain.py")
    assert len(audit_ids(result)) == 30
    assert "test_plain.py::test_plain" not in result.stdout.str()


def test_operators_and_k_select_items(run):
    result = run("--audit-verifier=toy", "--audit-operators", "extra,omit", "-k", "split-bill", "-v")
    assert result.ret == 1
    result.assert_outcomes(passed=3, failed=1, deselected=6)
    ran = [line.split()[0] for line in result.outlines if line.startswith("audit/toy::")]
    # Operators in the order --audit-operators gives them.
    assert ran == ["audit/toy::split-bill::extra", "audit/toy::split-bill::omit",
                   "audit/toy::split-bill-counted::extra", "audit/toy::split-bill-counted::omit"]
    block = report_block(result)
    assert block[0] == "Verifier audit: toy, 2 task(s), 2 audited, 0s"
    assert block[-8:-4] == [
        "  operator  class          runs  killed  false accept  equivalent  unconfirmed  refused  error  invalid",
        "  --------  -------------  ----  ------  ------------  ----------  -----------  -------  -----  -------",
        "  extra     frame             2       1             1           0            0        0      0        0",
        "  omit      postcondition     2       2             0           0            0        0      0        0",
    ]


def test_limit_audits_the_first_n_tasks(run):
    result = run("--audit-verifier=toy", "--audit-limit", "2")
    assert report_block(result)[0] == "Verifier audit: toy, 2 task(s), 2 audited, 0s"
    result.assert_outcomes(passed=10, failed=2)
    result = run("--audit-verifier=toy", "--audit-limit", "0", "--collect-only", "-q")
    assert len(audit_ids(result)) == 30


def test_split_and_limit_reach_the_adapter(run, pytester):
    pytester.makeconftest('''
from pytest_agentbench.audit.adapters.toy import ToyAdapter

ASKED = []

class Listing(ToyAdapter):
    def task_ids(self, split=None, limit=None):
        ASKED.append((split, limit))
        return ["rename-profile", "like-songs", "queue-songs"]  # ignores the limit

def pytest_agentbench_register_audit_adapters(registry):
    registry.register("listing", lambda config: Listing())

def pytest_collection_finish(session):
    print("ASKED", ASKED)
''')
    result = run("--audit-verifier=listing", "--audit-split", "dev", "--audit-limit", "2", "--audit-operators", "omit",
                 "--collect-only", "-q", "-s")
    result.stdout.fnmatch_lines(["ASKED [('dev', 2)]"])
    # The plugin cuts the list to --audit-limit even when the adapter does not.
    assert audit_ids(result) == ["audit/toy::rename-profile::omit", "audit/toy::like-songs::omit"]
    result = run("--audit-verifier=listing", "--audit-limit", "0", "--audit-operators", "omit", "--collect-only", "-q",
                 "-s")
    result.stdout.fnmatch_lines(["ASKED [(None, None)]"])
    assert len(audit_ids(result)) == 3


def test_audit_tasks_keeps_the_given_order(run):
    result = run("--audit-verifier=toy", "--audit-tasks", "rename-profile,split-bill", "--audit-tasks",
                 "split-bill", "--audit-operators", "omit", "--collect-only", "-q")
    assert audit_ids(result) == ["audit/toy::rename-profile::omit", "audit/toy::split-bill::omit"]


def test_ignore_fields_reach_the_comparison(run, pytester):
    # A repeated queue entry is still an extra record when its only field is ignored.
    result = run("--audit-verifier=toy", "--audit-tasks", "queue-songs", "--audit-operators", "extra",
                 "--audit-ignore-fields", "toy.QueueEntry.song_id")
    assert result.ret == 1
    # rename-profile::wrong-value changes display_name; the checker kills it either way, but with
    # the field ignored (table.field, the table name has a dot) the recorded diff is "same".
    result = run("--audit-verifier=toy", "--audit-tasks", "rename-profile", "--audit-operators", "wrong-value",
                 "--audit-ignore-fields", "toy.Profile.display_name", "--audit-out", "r.json")
    assert result.ret == 0
    report = json.loads((pytester.path / "r.json").read_text())
    only = report["tasks"][0]["runs"][0]
    assert (only["run_class"], only["shape"], only["tables"]) == ("killed", "same", {})
    assert report["ignore_fields"] == ["id", "toy.Profile.display_name"]


def test_lf_reruns_only_the_false_accepts(run):
    first = run("--audit-verifier=toy")
    assert first.ret == 1
    again = run("--audit-verifier=toy", "--lf", "-v")
    assert again.ret == 1
    again.assert_outcomes(failed=4, deselected=26)
    assert [line.split()[0] for line in again.outlines if line.startswith("audit/toy::")] == FALSE_ACCEPTS
    block = report_block(again)
    assert block[0] == "Verifier audit: toy, 2 task(s), 2 audited, 0s"
    assert "The verifier passed 4 edited run(s) whose end state is wrong:" in block


# -- xdist ---------------------------------------------------------------------------------------

COUNTING_CONFTEST = '''
import os
from pytest_agentbench.audit.adapters.toy import ToyAdapter

LOG = {log!r}

class CountingToy(ToyAdapter):
    def deliver(self, task_id, runs):
        with open(LOG, "a") as fh:
            fh.write(f"{{task_id}} {{runs[0].run_id}} {{os.getpid()}}\\n")
        return super().deliver(task_id, runs)

def pytest_agentbench_register_audit_adapters(registry):
    registry.register("counting-toy", lambda config: CountingToy())
'''


def deliveries(path) -> list[tuple[str, str, str]]:
    return [tuple(line.split()) for line in path.read_text().splitlines()]


def test_xdist_gives_the_same_outcomes_and_tables_and_delivers_each_task_once(run_sub, pytester):
    log = pytester.path / "deliveries.log"
    pytester.makeconftest(COUNTING_CONFTEST.format(log=str(log)))
    single = run_sub("--audit-verifier=counting-toy", "-rA", "-p", "no:cacheprovider", "--audit-out", "single.json")
    single_log = deliveries(log)
    log.unlink()
    para = run_sub("--audit-verifier=counting-toy", "-rA", "-n", "2", "-p", "no:cacheprovider",
                   "--audit-out", "para.json")
    assert single.ret == para.ret == 1
    single.assert_outcomes(passed=23, failed=4, skipped=3)
    para.assert_outcomes(passed=23, failed=4, skipped=3)
    # The adapter is named toy, so the report is the seed's, in both runs.
    assert report_block(single) == report_block(para) == SEED_TOY_REPORT
    assert words(single) == words(para)
    assert len(words(para)) == 30
    assert "2 workers" in para.stdout.str()
    for entries in (single_log, deliveries(log)):
        per_task = Counter((task, first) for task, first, _ in entries)
        # One batch (control + mutants) per task, plus one extra-ni scan.
        assert per_task == Counter({(t, kind): 1 for t in TASKS for kind in ("control", "scan-control")})
        pids = {task: {pid for t, _, pid in entries if t == task} for task in TASKS}
        assert all(len(p) == 1 for p in pids.values()), pids  # a task's items stay on one worker
    assert len({pid for *_, pid in deliveries(log)}) == 2  # both workers audited tasks
    # The --audit-out report is the same too, apart from timings.
    reports = [without_seconds(json.loads((pytester.path / name).read_text()))
               for name in ("single.json", "para.json")]
    assert reports[0] == reports[1]
    assert [t["task_id"] for t in reports[1]["tasks"]] == TASKS


def test_dist_each_counts_each_run_once(run_sub):
    result = run_sub("--audit-verifier=toy", "-n", "2", "--dist", "each", "-p", "no:cacheprovider")
    assert report_block(result) == SEED_TOY_REPORT


def without_seconds(data):
    if isinstance(data, dict):
        return {k: without_seconds(v) for k, v in data.items() if k != "seconds"}
    if isinstance(data, list):
        return [without_seconds(v) for v in data]
    return data


# -- --audit-out ---------------------------------------------------------------------------------

def test_audit_out_json_shape_and_no_values(run, pytester):
    result = run("--audit-verifier=toy", "--audit-out", "out/report.json")
    assert result.ret == 1
    path = pytester.path / "out" / "report.json"
    result.stdout.fnmatch_lines(["Full report: *report.json"])
    text = path.read_text()
    report = json.loads(text)
    assert report["schema"] == "pytest-agentbench/verifier-audit/v1"
    assert report["benchmark"]["name"] == "toy"
    assert report["ignore_fields"] == ["id"]
    assert [o["name"] for o in report["operators"]] == OPERATORS
    assert [o["class"] for o in report["operators"]] == ["postcondition"] * 4 + ["frame"] * 2
    summary = report["summary"]
    assert (summary["false_accepts"], summary["tasks"], summary["tasks_audited"],
            summary["tasks_with_false_accept"]) == (4, 5, 5, 2)
    zero = dict.fromkeys(("equivalent", "false-accept", "invalid", "killed", "not-delivered", "refused",
                          "unconfirmed"), 0)
    assert summary["by_operator"] == {
        "claim-only": {**zero, "killed": 5}, "omit": {**zero, "killed": 5},
        "partial": {**zero, "killed": 4, "refused": 1}, "wrong-value": {**zero, "killed": 5},
        "extra": {**zero, "killed": 1, "false-accept": 2, "equivalent": 2},
        "extra-ni": {**zero, "killed": 1, "false-accept": 2, "refused": 2},
    }
    assert [t["task_id"] for t in report["tasks"]] == TASKS
    assert {t["status"] for t in report["tasks"]} == {"audited"}
    first = report["tasks"][0]
    assert set(first) == {"task_id", "status", "reason", "seconds", "control_verdict", "runs"}
    assert first["control_verdict"] == "PASS"
    assert [r["operator"] for r in first["runs"]] == OPERATORS
    extra = first["runs"][4]
    assert set(extra) == {"task_id", "operator", "run_class", "verdict", "shape", "reason", "detail", "tables",
                          "summary"}
    assert (extra["run_class"], extra["verdict"], extra["shape"]) == ("false-accept", "PASS", "adds")
    assert extra["summary"] == "toy.Notification +1, toy.PaymentRequest +1"
    assert extra["tables"]["toy.PaymentRequest"] == {"+": 1, "-": 0, "changed": 0, "fields": []}
    wrong = report["tasks"][4]["runs"][3]
    assert wrong["tables"] == {"toy.Profile": {"+": 0, "-": 0, "changed": 1, "fields": ["display_name"]}}
    # Counts and field names only: no record or call value anywhere.
    for value in ("ana@example.com", "12.5", "Ada Lovelace", "toy-access-token", "chen@", "Lovelacex"):
        assert value not in text, value


def test_unwritable_audit_out_fails_the_run(run, pytester):
    (pytester.path / "blocker").write_text("a file, not a folder")
    result = run("--audit-verifier=toy", "--audit-operators", "omit", "--audit-out", "blocker/report.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["ERROR: could not write --audit-out blocker*report.json: *"])


# -- custom adapters -----------------------------------------------------------------------------

ADAPTER_MODULE = '''
from pytest_agentbench.audit import Delivery, Reference

CALLS = [{"method": "post", "url": "/counter/add", "data": {"n": 1}},
         {"method": "post", "url": "/supervisor/complete_task", "data": {"status": "success"}}]


class CounterAdapter:
    """A counter app whose checker only asks "is there an add?", so a second add passes."""

    name = "counter"
    ignore_fields = frozenset()

    def describe(self):
        return {"name": self.name}

    def task_ids(self, split, limit):
        return ["inc"]

    def reference(self, task_id):
        return Reference(task_id, CALLS, {"c.Add": {"added": [{"n": 1}]}})

    def deliver(self, task_id, runs):
        out = []
        for run in runs:
            adds = [c["data"] for c in run.calls if c["url"] == "/counter/add"]
            effect = {"c.Add": {"added": adds}} if adds else {}
            verdict = ("PASS" if adds else "FAIL") if run.grade else None
            out.append(Delivery(run.run_id, effect, verdict, [200] * len(run.calls)))
        return out


adapter = CounterAdapter()


def make(config):
    assert config.getoption("audit_verifier") == "{module}:make"
    return CounterAdapter()
'''


@pytest.mark.parametrize("attr", ["CounterAdapter", "make", "adapter"])
def test_module_attr_adapter_from_the_rootdir(run, pytester, monkeypatch, attr):
    module = f"myaudit_{attr.lower()}"
    pytester.makepyfile(**{module: ADAPTER_MODULE.replace("{module}", module)})
    pytester.makeini("[pytest]\n")
    # Run from a subfolder: the module resolves from the rootdir, not from the current folder.
    sub = pytester.mkdir("sub")
    monkeypatch.chdir(sub)
    assert importlib.util.find_spec(module) is None  # not importable from here without the plugin
    result = run(f"--audit-verifier={module}:{attr}", "-rA")
    assert result.ret == 1
    expected = {"claim-only": "KILLED", "omit": "KILLED", "partial": "REFUSED", "wrong-value": "FALSE-ACCEPT",
                "extra": "FALSE-ACCEPT", "extra-ni": "FALSE-ACCEPT"}
    assert words(result) == {f"audit/counter::inc::{op}": word for op, word in expected.items()}
    block = report_block(result)
    assert block[0] == "Verifier audit: counter, 1 task(s), 1 audited, 0s"
    assert block[3:8] == [
        "  task  operator     end state compared with the reference run",
        "  ----  -----------  -----------------------------------------",
        "  inc   wrong-value  c.Add: n changed",
        "  inc   extra        c.Add +1",
        "  inc   extra-ni     c.Add +1",
    ]
    assert any(line.split() == ["partial", "postcondition", "0", "0", "0", "0", "0", "1", "0", "0"] for line in block)


def test_conftest_registered_adapter_replaces_a_builtin_name(run, pytester):
    pytester.makeconftest('''
from pytest_agentbench.audit.adapters.toy import ToyAdapter

class OnlyTwo(ToyAdapter):
    def task_ids(self, split=None, limit=None):
        return ["like-songs", "rename-profile"]

def pytest_agentbench_register_audit_adapters(registry):
    registry.register("toy", lambda config: OnlyTwo())
''')
    result = run("--audit-verifier=toy")
    assert result.ret == 0
    block = report_block(result)
    assert block[0] == "Verifier audit: toy, 2 task(s), 2 audited, 0s"
    assert "No confirmed false accepts." in block


# -- bad input -------------------------------------------------------------------------------------

BAD_MODULES = {
    "audit_broken": 'raise ImportError("broken on purpose")\n',
    "audit_exits": 'import sys\nsys.exit(3)\n',
    "audit_parts": '''
class Boom:
    def __init__(self):
        raise RuntimeError("no credentials")

class BadSetting:
    def __init__(self):
        from pytest_agentbench.errors import ConfigError
        raise ConfigError("--audit-split must name a split of plain: train, dev")

class NoDeliver:
    name = "nd"
    def task_ids(self, split, limit):
        return ["a"]
    def reference(self, task_id):
        return None

class Plain(NoDeliver):
    name = "plain"
    def deliver(self, task_id, runs):
        return []

class Empty(Plain):
    def task_ids(self, split, limit):
        return []

class Brackets(Plain):
    def task_ids(self, split, limit):
        return ["a[1]"]

class Numbers(Plain):
    def task_ids(self, split, limit):
        return [1, 2]

class Markup(Plain):
    def task_ids(self, split, limit):
        return ["<img src=x onerror=alert(1)>"]

class Exits(Plain):
    def __init__(self):
        raise SystemExit("no AppWorld here")
''',
}


@pytest.mark.parametrize("args, expected", [
    (["--audit-verifier=nosuch"], "ERROR: unknown audit adapter 'nosuch' in --audit-verifier; available: *toy*"),
    (["--audit-verifier=audit_broken:Adapter"],
     "ERROR: cannot load audit adapter 'audit_broken:Adapter': ImportError: broken on purpose"),
    (["--audit-verifier=audit_missing:Adapter"],
     "ERROR: cannot load audit adapter 'audit_missing:Adapter': ModuleNotFoundError: *'audit_missing'"),
    (["--audit-verifier=audit_parts:Missing"],
     "ERROR: cannot load audit adapter 'audit_parts:Missing': AttributeError: *Missing*"),
    (["--audit-verifier=audit_parts:Boom"],
     "ERROR: cannot construct audit adapter 'audit_parts:Boom': RuntimeError: no credentials"),
    (["--audit-verifier=audit_parts:BadSetting"], "ERROR: --audit-split must name a split of plain: train, dev"),
    (["--audit-verifier=audit_parts:NoDeliver"], "ERROR: audit adapter 'audit_parts:NoDeliver' lacks deliver()*"),
    (["--audit-verifier=:Adapter"], "ERROR: --audit-verifier ':Adapter': use a registered name or module:Attr"),
    (["--audit-verifier=audit_parts:Plain", "--audit-tasks", "zzz"],
     "ERROR: --audit-tasks 'zzz': no such task in 'plain'*"),
    (["--audit-verifier=audit_parts:Empty"], "ERROR: audit adapter 'plain' has no tasks*"),
    (["--audit-verifier=audit_parts:Brackets"],
     "ERROR: audit task id 'a?1?' from 'plain' must not contain brackets, '::'*"),
    (["--audit-verifier=audit_parts:Numbers"], "ERROR: audit task id 1 from 'plain' must be a string, not int"),
    (["--audit-verifier=audit_parts:Markup"], "ERROR: audit task id '<img *' from 'plain' must not contain *markup*"),
    (["--audit-verifier=audit_exits:Adapter"], "ERROR: cannot load audit adapter 'audit_exits:Adapter': SystemExit: 3"),
    (["--audit-verifier=audit_parts:Exits"],
     "ERROR: cannot construct audit adapter 'audit_parts:Exits': SystemExit: no AppWorld here"),
    (["--audit-verifier=toy", "--audit-operators", "omit,nope"],
     "ERROR: unknown operator 'nope' in --audit-operators*"),
    (["--audit-verifier=toy", "--audit-tasks", "split-bill,nosuch"],
     "ERROR: --audit-tasks 'nosuch': no such task in 'toy'*"),
    (["--audit-verifier=toy", "--audit-limit", "-1"], "*--audit-limit must be >= 0 (0 = all), got -1*"),
    (["--audit-verifier=toy", "--audit-limit", "two"],
     "*--audit-limit must be a whole number >= 0 (0 = all), got 'two'*"),
])
def test_bad_input_is_a_usage_error_naming_it(run, pytester, args, expected):
    pytester.makepyfile(**BAD_MODULES)
    result = run(*args)
    assert result.ret == USAGE
    result.stderr.fnmatch_lines([expected])
    assert "Traceback" not in result.stderr.str()
    assert len([line for line in result.stderr.lines if line.startswith("ERROR")]) == 1
    assert not audit_ids(result)


@pytest.mark.parametrize("line, expected", [
    ("agentbench_operators = omit, typo", "ERROR: unknown operator 'typo'*"),
    ("agentbench_audit_limit = -1", "ERROR: ini agentbench_audit_limit: --audit-limit must be >= 0 (0 = all), got -1"),
    ("agentbench_audit_tasks = split-bill, nosuch", "ERROR: --audit-tasks 'nosuch': no such task in 'toy'*"),
])
def test_bad_ini_value_is_a_usage_error(run, pytester, line, expected):
    pytester.makeini(f"[pytest]\nagentbench_audit_verifier = toy\n{line}\n")
    result = run()
    assert result.ret == USAGE
    result.stderr.fnmatch_lines([expected])


# -- tasks that cannot be audited, and a control that fails --------------------------------------

BROKEN_CONFTEST = '''
from pytest_agentbench.audit import Reference
from pytest_agentbench.audit.adapters.toy import ToyAdapter


class Broken(ToyAdapter):
    name = "broken"
    IDS = ["split-bill", "no-ref", "read-only", "bad-control", "crashy", "undelivered"]

    def task_ids(self, split=None, limit=None):
        return list(self.IDS)

    def has_task(self, task_id):
        return task_id in self.IDS

    def reference(self, task_id):
        if task_id == "no-ref":
            raise RuntimeError("the solution crashed")
        if task_id == "read-only":
            return Reference(task_id, [{"method": "get", "url": "/toy/contacts", "data": {}}], {})
        return super().reference("split-bill")

    def deliver(self, task_id, runs):
        out = super().deliver("split-bill", runs)
        for d in out:
            if task_id == "bad-control" and d.run_id == "control":
                d.verdict = "FAIL"
            if task_id == "crashy" and d.run_id == "extra":
                d.statuses[-1] = -1  # the pass may come from the crash
            if task_id == "undelivered" and d.run_id == "omit":
                d.error = "the world did not reset"
        return out


def pytest_agentbench_register_audit_adapters(registry):
    registry.register("broken", lambda config: Broken())
'''


@pytest.fixture
def broken(pytester):
    pytester.makeconftest(BROKEN_CONFTEST)


def test_reference_that_raises_is_an_error_not_audited(run, pytester, broken):
    result = run("--audit-verifier=broken", "--audit-tasks", "split-bill,no-ref", "--audit-operators", "omit,extra",
                 "--audit-out", "r.json")
    assert result.ret == 1
    result.assert_outcomes(passed=1, failed=1, errors=2)
    result.stdout.fnmatch_lines([
        "*ERROR at setup of audit/broken::no-ref::omit*",
        "not audited: the reference run raised RuntimeError: the solution crashed",
    ])
    block = report_block(result)
    assert block[0] == "Verifier audit: broken, 2 task(s), 1 audited, 0s"
    assert "1 task(s) not audited:" in block
    assert "  no-ref: no-reference: the reference run raised RuntimeError: the solution crashed" in block
    # Tasks not audited add no rows to the per-operator table.
    assert any(line.split()[:4] == ["omit", "postcondition", "1", "1"] for line in block)
    # The record names the task and the reason too.
    report = json.loads((pytester.path / "r.json").read_text())
    assert [(t["task_id"], t["status"], t["reason"], t["runs"]) for t in report["tasks"]][1] == (
        "no-ref", "no-reference", "the reference run raised RuntimeError: the solution crashed", [])
    assert (report["summary"]["tasks"], report["summary"]["tasks_audited"]) == (2, 1)


def test_reference_without_a_write_skips_its_items(run, pytester, broken):
    result = run("--audit-verifier=broken", "--audit-tasks", "read-only", "-rs", "--audit-out", "r.json")
    assert result.ret == 0
    result.assert_outcomes(skipped=6)
    result.stdout.fnmatch_lines(
        ["SKIPPED * audit/broken::read-only::omit: not audited: the reference run writes nothing*"])
    block = report_block(result)
    assert block[0] == "Verifier audit: broken, 1 task(s), 0 audited, 0s"
    assert "  read-only: no-write: the reference run writes nothing, so there is nothing to edit" in block
    report = json.loads((pytester.path / "r.json").read_text())
    assert [(t["task_id"], t["status"]) for t in report["tasks"]] == [("read-only", "no-write")]


def test_control_that_fails_makes_items_error_invalid(run, pytester, broken):
    result = run("--audit-verifier=broken", "--audit-tasks", "bad-control", "--audit-operators", "omit,partial,extra",
                 "--audit-out", "r.json")
    assert result.ret != 0
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(["*ERROR at setup of audit/broken::bad-control::omit*",
                                 "invalid: the verifier gave the unedited reference run FAIL"])
    block = report_block(result)
    assert block[0] == "Verifier audit: broken, 1 task(s), 1 audited, 0s"
    assert "No confirmed false accepts." in block
    assert any(line.split() == ["extra", "frame", "1", "0", "0", "0", "0", "0", "0", "1"] for line in block)
    report = json.loads((pytester.path / "r.json").read_text())
    task = report["tasks"][0]
    assert (task["status"], task["reason"]) == ("control-failed", "the verifier gave the unedited reference run FAIL")
    assert [r["run_class"] for r in task["runs"]] == ["invalid"] * 3


def test_unconfirmed_is_skipped_and_not_delivered_is_an_error(run, broken):
    result = run("--audit-verifier=broken", "--audit-tasks", "crashy,undelivered", "--audit-operators", "omit,extra",
                 "-v", "-rs")
    result.assert_outcomes(passed=1, failed=1, skipped=1, errors=1)
    result.stdout.fnmatch_lines([
        "audit/broken::crashy::omit KILLED*",
        "audit/broken::crashy::extra UNCONFIRMED*",
        "audit/broken::undelivered::omit ERROR*",
        "audit/broken::undelivered::extra FALSE-ACCEPT*",
    ])
    result.stdout.fnmatch_lines(["*ERROR at setup of audit/broken::undelivered::omit*",
                                 "error: the world did not reset"])
    result.stdout.fnmatch_lines(["UNCONFIRMED * audit/broken::crashy::extra: unconfirmed: 1 more call(s) crashed*"])
    block = report_block(result)
    assert block[0] == "Verifier audit: broken, 2 task(s), 2 audited, 0s"
    assert "The verifier passed 1 edited run(s) whose end state is wrong:" in block
    assert any(line.split() == ["omit", "postcondition", "2", "1", "0", "0", "0", "0", "1", "0"] for line in block)
    assert any(line.split() == ["extra", "frame", "2", "0", "1", "0", "1", "0", "0", "0"] for line in block)


# -- ini keys, inertness, alongside benchmarks ----------------------------------------------------

def test_ini_keys_configure_the_audit(run, pytester):
    pytester.makeini("[pytest]\nagentbench_audit_verifier = toy\nagentbench_operators = omit\n")
    pytester.makepyfile(test_unrelated="def test_unrelated(): pass")
    result = run("-v")
    assert result.ret == 0
    result.assert_outcomes(passed=5)
    assert [line.split()[0] for line in result.outlines if line.startswith("audit/")] == [
        f"audit/toy::{t}::omit" for t in TASKS]
    # The command line beats the ini file.
    result = run("--audit-operators", "extra", "--collect-only", "-q")
    assert audit_ids(result) == [f"audit/toy::{t}::extra" for t in TASKS]


def test_plain_pytest_stays_inert(run, pytester):
    pytester.makepyfile(test_plain="def test_plain(): pass")
    pytester.makeconftest("""
def pytest_collection_finish(session):
    print("AUDIT PLUGIN", session.config.pluginmanager.has_plugin("agentbench-audit"))
""")
    result = run("-v", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["AUDIT PLUGIN False"])
    out = result.stdout.str()
    assert "audit/" not in out and "Verifier audit" not in out and "verifier audit" not in out


def test_audit_and_benchmark_suites_together(run):
    result = run("--audit-verifier=toy", "--bench=mock", "--bench-limit", "2", "--collect-only", "-q")
    assert result.ret == 0
    ids = [line for line in result.outlines if line.startswith(("audit/", "bench/"))]
    assert [i for i in ids if i.startswith("audit/")] == [f"audit/toy::{t}::{o}" for t in TASKS for o in OPERATORS]
    assert len([i for i in ids if i.startswith("bench/mock::")]) == 2


def test_a_task_listing_error_is_a_usage_error_with_audit_tasks(run, pytester):
    pytester.makepyfile(brokenlist='''
from pytest_agentbench.audit.adapters.toy import ToyAdapter

class Broken(ToyAdapter):
    has_task = None
    def task_ids(self, split=None, limit=None):
        raise ConnectionError("index server down")
''')
    result = run("--audit-verifier=brokenlist:Broken", "--audit-tasks", "split-bill")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*audit adapter 'toy' could not list its tasks: index server down*"])
