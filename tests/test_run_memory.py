"""What a run holds to its end is held once: repeated record values and task values are shared,
the fixture finishes pytest leaves per item are dropped, and summary.json's per-task lines are
written from the records without a second copy. The files written stay the same."""

from __future__ import annotations

import json

from conftest import only_run_folder, results

from pytest_agentbench.manifest import Manifest, SharedTaskValues, Suite
from pytest_agentbench.plugin.reporting_shared import SharedValues
from pytest_agentbench.record.run_files import TASK_FIELDS


def record(**fields):
    base = {"benchmark": "mock", "domain": "chrome", "status": "passed", "reason": "ok",
            "criteria": [{"name": "c", "passed": True, "actual": {"n": [1]}}], "final_action": {"type": "done"}}
    return {**base, **fields}


def test_equal_record_values_are_kept_once():
    shared = SharedValues()
    first, second = record(), record(benchmark="".join(["mo", "ck"]), reason="".join(["o", "k"]))
    assert second["benchmark"] is not first["benchmark"]
    shared.share(first)
    shared.share(second)
    assert second["benchmark"] is first["benchmark"] and second["reason"] is first["reason"]
    assert second["criteria"] is first["criteria"] and second["final_action"] is first["final_action"]
    assert second == record()


def test_a_decoded_records_keys_are_kept_once():
    """A record read back from results.jsonl (a resumed run's) has new key strings per record:
    ``shared`` gives it the interned ones, and shares its values as ``share`` does."""
    shared = SharedValues()
    line = json.dumps(record(task_id="t"))
    first, second = (shared.shared(json.loads(line)) for _ in range(2))
    assert first == second == record(task_id="t")
    assert all(a is b for a, b in zip(first, second, strict=True))
    assert second["criteria"] is first["criteria"] and second["reason"] is first["reason"]


def test_values_equal_only_to_python_are_not_shared():
    shared = SharedValues()
    ints, floats, bools = (record(criteria=[{"score": v}]) for v in (1, 1.0, True))
    for r in (ints, floats, bools):
        shared.share(r)
    assert [json.dumps(r["criteria"]) for r in (ints, floats, bools)] == [
        '[{"score": 1}]', '[{"score": 1.0}]', '[{"score": true}]']
    empty = record(criteria=[])
    shared.share(empty)
    assert empty["criteria"] == []


def test_shared_values_stop_growing_at_their_limit():
    shared = SharedValues(limit=2)
    records = [record(reason=f"reason {i}", criteria=[{"i": i}]) for i in range(5)]
    for r in records:
        shared.share(r)
    again = record(reason="".join(["reason ", "4"]), criteria=[{"i": 4}])
    shared.share(again)
    assert again["reason"] is not records[4]["reason"] and again["criteria"] is not records[4]["criteria"]
    assert again == records[4]


def test_equal_task_values_are_kept_once():
    shared = SharedTaskValues()
    tasks = [{"task_id": f"t{i}", "domain": "".join(["do", "m"]), "benchmark": "b", "raw_config": {"k": [1]},
              "tags": ["x"]} for i in range(3)]
    tasks.append({"task_id": "t3", "domain": "dom", "benchmark": "b", "raw_config": {"k": [1.0]}})
    for task in tasks:
        shared.share(task)
    assert all(t["domain"] is tasks[0]["domain"] for t in tasks)
    assert tasks[1]["raw_config"] is tasks[0]["raw_config"] and tasks[2]["tags"] is tasks[0]["tags"]
    assert tasks[3]["raw_config"] is not tasks[0]["raw_config"] and json.dumps(tasks[3]["raw_config"]) == '{"k": [1.0]}'


def test_a_read_manifest_shares_its_tasks_values(tmp_path):
    tasks = [{"task_id": f"t{i}", "domain": "d", "benchmark": "b", "raw_config": {"mock": True}} for i in range(3)]
    path = Manifest([Suite("b", tasks)]).write(tmp_path / "manifest.json")
    read = Manifest.read(path)
    assert read.suites[0].tasks == tasks
    first, *rest = read.suites[0].tasks
    assert all(t["raw_config"] is first["raw_config"] and t["domain"] is first["domain"] for t in rest)


FINALIZERS_CONFTEST = '''
import functools, json
import pytest

log = []

@pytest.fixture(scope="session")
def agent(agentbench_agent):
    yield agentbench_agent
    log.append("agent torn down")

@pytest.fixture(autouse=True)
def per_item(agent):  # a function-scoped fixture asking for a session one, as a conftest may have
    yield

@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item):
    left = kept = 0
    manager = item.session._fixturemanager
    for name in item.fixturenames:
        for fixturedef in manager.getfixturedefs(name, item) or ():
            if fixturedef.scope != "function":
                scopes = [getattr(getattr(fin.func, "__self__", None), "scope", None)
                          for fin in fixturedef._finalizers if isinstance(fin, functools.partial)]
                left += scopes.count("function")
                kept += len(scopes) - scopes.count("function")
    log.append((left, kept))

def pytest_unconfigure(config):
    with open("log.json", "w") as handle:
        json.dump(log, handle)
'''


def test_items_leave_no_fixture_finish_on_the_session_fixtures(run, pytester):
    pytester.makeconftest(FINALIZERS_CONFTEST)
    result = run("--bench=mock", "--bench-limit=4", "--setup-show")
    result.assert_outcomes(passed=4)
    log = json.loads((pytester.path / "log.json").read_text())
    # no item's finish stays on the session fixtures; theirs (agent's on agentbench_agent, ...)
    # stay to the end, not one more per item
    *items, torn_down, last = log
    assert [left for left, _ in items] == [0, 0, 0] and len({kept for _, kept in items}) == 1
    assert items[0][1] >= 2 and torn_down == "agent torn down" and last == [0, 0]
    out = result.stdout.str()
    assert out.count("TEARDOWN F per_item") == 4 and "F episode" not in out  # it plays in the item's setup
    assert out.index("TEARDOWN S agent\n") < out.index("TEARDOWN S agentbench_agent")


def test_summary_rows_are_the_records_lines_in_results_order(run, pytester):
    run("--bench=mock", "--bench-limit=6", "--bench-trials=2").assert_outcomes(passed=12)
    folder = only_run_folder(pytester.path)
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["tasks"] == [{k: r.get(k) for k in (*TASK_FIELDS, "trial")} for r in results(folder)]
    lines = (folder / "summary.json").read_text().splitlines()
    # compact, each task's row whole on a line of its own, in results order
    assert [json.loads(line.rstrip(",")) for line in lines[1:-1]] == summary["tasks"]
