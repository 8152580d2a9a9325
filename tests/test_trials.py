"""``--bench-trials K``: ids, selection, records, seeds, xdist, --lf, and the statistics of real runs."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from conftest import QUIET, only_run_folder, results, run_folders

from pytest_agentbench import stats
from pytest_agentbench.plugin.trials import trial_seed

# A deliberately flaky benchmark: task i succeeds with probability P[i], decided by the agent's
# per-trial seed, so a run's verdicts are a fixed function of --bench-trial-seed.
FLAKY = '''
import random
from pytest_agentbench import Action, Agent, Benchmark, Observation, Task, Verdict

P = {P!r}

class FlakyBench(Benchmark):
    name = "flaky"
    def list_tasks(self, limit=None):
        tasks = [Task(task_id=t, domain="even" if i % 2 == 0 else "odd", raw_config={{"p": p}})
                 for i, (t, p) in enumerate(P.items())]
        return tasks[:limit] if limit else tasks
    def reset(self, task):
        if task.raw_config["p"] < 0:
            raise ConnectionError("VM unreachable")
        return Observation(window_title=task.task_id)
    def step(self, action):
        return Observation(window_title="stepped")
    def evaluate(self, task, final_action):
        ok = final_action is not None and final_action.type == "done"
        return Verdict(score=1.0 if ok else 0.0, passed=ok, reason="done" if ok else "gave up")

class FlakyAgent(Agent):
    name = "flaky-agent"
    def act(self, observation, task, history=None):
        p = task.raw_config["p"]
        won = random.Random(self.seed).random() < p
        return Action(type="done" if won else "fail", reason=f"trial={{self.trial}} seed={{self.seed}}")

def pytest_agentbench_register_benchmarks(registry):
    registry.register("flaky", lambda config: FlakyBench())

def pytest_agentbench_register_agents(registry):
    registry.register("flaky-agent", lambda config: FlakyAgent())
'''

PROBS = {"alpha": 0.5, "bravo": 1.0, "charlie": 0.0, "delta": 0.3, "echo": 0.8}
ARGS = ("--bench=flaky", "--bench-agent=flaky-agent", "-p", "no:cacheprovider")


@pytest.fixture
def flaky(pytester: pytest.Pytester):
    def make(probs: dict[str, float] = PROBS) -> pytest.Pytester:
        pytester.makeconftest(FLAKY.format(P=probs))
        return pytester

    return make


def test_ids_keep_task_selection_and_k1_ids_are_unchanged(flaky, run):
    flaky()
    result = run(*ARGS, "--bench-trials", "3", "--collect-only", "-q")
    ids = [line for line in result.outlines if line.startswith("bench/")]
    assert len(ids) == 15
    assert "bench/flaky::even::alpha::trial-1" in ids and "bench/flaky::even::alpha::trial-3" in ids
    result = run(*ARGS, "--bench-trials", "3", "--collect-only", "-q", "-k", "alpha")
    assert sorted(line for line in result.outlines if line.startswith("bench/")) == [
        f"bench/flaky::even::alpha::trial-{n}" for n in (1, 2, 3)]
    result = run(*ARGS, "--bench-trials", "2", "--collect-only", "-q", "--bench-task", "delta")
    assert [line for line in result.outlines if line.startswith("bench/")] == [
        "bench/flaky::odd::delta::trial-1", "bench/flaky::odd::delta::trial-2"]
    result = run(*ARGS, "--collect-only", "-q")
    assert "bench/flaky::even::alpha" in result.outlines


def test_each_trial_has_its_record_trajectory_and_seed(flaky, run, pytester):
    flaky()
    run(*ARGS, "--bench-trials", "4", "--bench-trial-seed", "11")
    folder = only_run_folder(pytester.path)
    records = results(folder)
    assert sorted((r["task_id"], r["trial"]) for r in records) == sorted((t, n) for t in PROBS for n in range(1, 5))
    for record in records:
        assert record["seed"] == trial_seed(11, "flaky", record["task_id"], record["trial"])
        assert record["final_action"]["reason"] == f"trial={record['trial']} seed={record['seed']}"
        assert (folder / record["trajectory"]).is_file()
    assert len({r["trajectory"] for r in records}) == len(records)
    assert len({r["seed"] for r in records}) == len(records)


def test_statistics_of_a_run_match_a_hand_computation(flaky, run, pytester):
    # bravo always passes, charlie never, the others as their seeds fall; the statistics must be what the
    # per-task counts say, by the formulas of the user guide.
    flaky()
    result = run(*ARGS, "--bench-trials", "3", "--bench-trial-seed", "5", "--junitxml", "junit.xml")
    folder = only_run_folder(pytester.path)
    records = results(folder)
    counts = {t: sum(r["success"] for r in records if r["task_id"] == t) for t in PROBS}
    assert counts["bravo"] == 3 and counts["charlie"] == 0
    summary = json.loads((folder / "summary.json").read_text())
    s = summary["statistics"]
    assert summary["trials"] == 3
    assert s["passes"] == sum(counts.values()) and s["outcome_trials"] == 15
    assert s["success_rate"] == pytest.approx(sum(counts.values()) / 15)
    from math import comb

    hand_at2 = sum(1 - comb(3 - c, 2) / comb(3, 2) for c in counts.values()) / 5
    hand_hat2 = sum(comb(c, 2) / comb(3, 2) for c in counts.values()) / 5
    assert s["pass_at_k"]["2"] == pytest.approx(hand_at2)
    assert s["pass_hat_k"]["2"] == pytest.approx(hand_hat2)
    assert s["pass_at_k"]["1"] == pytest.approx(s["success_rate"])
    flips = sum(1 for c in counts.values() if 0 < c < 3)
    assert s["flipped_tasks"] == flips and s["flip_rate"] == pytest.approx(flips / 5)
    assert s["ci_method"] == "wilson-clustered" and s["ci95"][0] <= s["success_rate"] <= s["ci95"][1]
    assert set(s["by_domain"]) == {"even", "odd"}
    assert s["by_domain"]["even"]["outcome_trials"] == 9  # alpha, charlie, echo
    text = result.stdout.str()
    assert "Statistics (95% confidence, outcomes only)" in text
    assert (f"Success rate: {s['success_rate'] * 100:.1f}% "
            f"[{s['ci95'][0] * 100:.1f}%, {s['ci95'][1] * 100:.1f}%]") in text
    assert "pass^k:" in text and "Flip rate:" in text
    props = {p.get("name"): p.get("value") for p in ET.parse(pytester.path / "junit.xml").iter("property")}
    assert props["agentbench_trials"] == "3"
    assert float(props["agentbench_pass_hat_2"]) == pytest.approx(hand_hat2, abs=1e-6)
    assert float(props["agentbench_ci95_low"]) == pytest.approx(s["ci95"][0], abs=1e-6)


def test_same_seed_same_verdicts_other_seed_other_seeds(flaky, run, pytester):
    flaky()
    run(*ARGS, "--bench-trials", "3", "--bench-trial-seed", "5", "--bench-run-name", "one")
    run(*ARGS, "--bench-trials", "3", "--bench-trial-seed", "5", "--bench-run-name", "two")
    run(*ARGS, "--bench-trials", "3", "--bench-trial-seed", "6", "--bench-run-name", "three")
    base = pytester.path / "benchmark_results"

    def verdicts(name: str) -> dict:
        return {(r["task_id"], r["trial"]): (r["seed"], r["success"]) for r in results(base / name)}

    assert verdicts("one") == verdicts("two")
    assert {k: v[0] for k, v in verdicts("one").items()} != {k: v[0] for k, v in verdicts("three").items()}


def test_infrastructure_errors_are_out_of_every_denominator(flaky, run, pytester):
    flaky({"a": 1.0, "broken": -1.0, "c": 0.0})
    result = run(*ARGS, "--bench-trials", "2")
    summary = json.loads((only_run_folder(pytester.path) / "summary.json").read_text())
    s = summary["statistics"]
    assert s["outcome_trials"] == 4 and s["excluded_trials"] == 2 and s["passes"] == 2
    assert s["tasks"] == 3 and s["tasks_with_outcomes"] == 2
    assert s["pass_hat_k"] == pytest.approx({"1": 0.5, "2": 0.5})
    assert "Excluded:     2 trial(s)" in result.stdout.str()


def test_xdist_spreads_trials_and_writes_one_record_each(flaky, run_sub, pytester):
    flaky()
    result = run_sub(*ARGS, "--bench-trials", "4", "-n", "2")
    assert result.ret == 1  # task c fails every trial
    records = results(only_run_folder(pytester.path))
    assert sorted((r["task_id"], r["trial"]) for r in records) == sorted((t, n) for t in PROBS for n in range(1, 5))
    assert {r["worker"] for r in records} == {"gw0", "gw1"}


def test_dist_each_records_each_item_once_as_other_item_kinds_count(run_sub, pytester):
    """``--dist each`` plays every item on every worker; the run holds one record per item (a
    second play is not a trial: ``--bench-trials`` is), so attempts and rates are not doubled."""
    result = run_sub("--bench=mock", "--bench-limit", "4", "-n", "2", "--dist", "each", "-p", "no:cacheprovider")
    assert result.ret == 0
    folder = only_run_folder(pytester.path)
    records = results(folder)
    assert sorted(r["task_id"] for r in records) == sorted({r["task_id"] for r in records}) and len(records) == 4
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["num_attempts"] == 4 and summary["statistics"]["outcome_trials"] == 4


def test_last_failed_reruns_the_failed_trials(flaky, pytester):
    flaky()
    args = ("--bench=flaky", "--bench-agent=flaky-agent", "--bench-trials", "3", "--bench-trial-seed", "5", *QUIET)
    first = pytester.runpytest(*args)
    failed = {(r["task_id"], r["trial"]) for r in results(run_folders(pytester.path)[0]) if r["status"] == "failed"}
    assert failed
    second = pytester.runpytest(*args, "--lf")
    assert first.ret == second.ret == 1
    rerun = {(r["task_id"], r["trial"]) for r in results(run_folders(pytester.path)[1])}
    assert rerun == failed


@pytest.mark.parametrize(("args", "message"), [
    (("--bench-trials", "0"), "--bench-trials must be >= 1, got 0"),
    (("--bench-trials", "many"), "--bench-trials must be a whole number >= 1, got 'many'"),
    (("-o", "agentbench_trials=x"), "--bench-trials must be a whole number >= 1, got 'x'"),
    (("--bench-trial-seed", "-3"), "--bench-trial-seed must be >= 0, got -3"),
    (("--bench-fail-on-regression",), "--bench-fail-on-regression needs --bench-compare RUN"),
    (("--bench-compare", "nowhere"), "--bench-compare nowhere: nowhere does not exist"),
    (("--bench-compare", "x.jsonl", "--bench-regression-alpha", "5%"),
     "--bench-regression-alpha must be a probability"),
])
def test_bad_trial_options_are_usage_errors(flaky, run, args, message, pytester):
    flaky()
    (pytester.path / "x.jsonl").write_text("")
    result = run(*ARGS, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert run_folders(pytester.path) == []


def test_pytest_repeat_count_is_refused_with_a_pointer(flaky, run, pytester):
    flaky()
    # pytest-repeat's option, as it declares it (dest "count", an int), without installing it.
    conftest = pytester.path / "conftest.py"
    conftest.write_text(conftest.read_text() + '''
def pytest_addoption(parser):
    parser.addoption("--count", type=int, default=1, dest="count")
''')
    # The real pytest-repeat (the dev extra) is blocked: its --count would clash with the stand-in.
    result = run(*ARGS, "-p", "no:repeat", "--count", "3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--count 3 does not repeat benchmark items; use --bench-trials 3" in result.stderr.str()
    assert run(*ARGS, "-p", "no:repeat", "--count", "1").ret == 1


def test_inspect_log_epochs_are_trials(flaky, run, pytester):
    flaky({"a": 1.0, "c": 0.0})
    run(*ARGS, "--bench-trials", "3", "--bench-inspect-log", "log.json")
    log = json.loads((pytester.path / "log.json").read_text())
    assert log["eval"]["config"]["epochs"] == 3
    assert sorted((s["id"], s["epoch"]) for s in log["samples"]) == [(t, n) for t in "ac" for n in (1, 2, 3)]
    assert log["eval"]["metadata"]["agentbench"]["statistics"]["pass_hat_k"]["3"] == pytest.approx(0.5)


def test_library_and_plugin_agree(flaky, run, pytester):
    flaky()
    run(*ARGS, "--bench-trials", "2")
    folder = only_run_folder(pytester.path)
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["statistics"] == json.loads(json.dumps(stats.run_statistics(results(folder))))


def test_a_baseline_with_trials_marks_a_task_that_failed_any_trial(flaky, run, pytester):
    flaky({"alpha": 0.5, "bravo": 1.0})
    run(*ARGS, "--bench-trials", "4", "--bench-trial-seed", "5", "--bench-run-name", "base")
    base = pytester.path / "benchmark_results" / "base"
    alpha = [r["success"] for r in results(base) if r["task_id"] == "alpha"]
    assert True in alpha and False in alpha  # alpha flips with this seed
    # The verdict must not depend on which trial was recorded last: reverse the file, so the last
    # record of alpha is its trial 1, which passed with this seed (the last-record-wins rule would
    # then call alpha a pass).
    assert alpha[0] is True
    lines = (base / "results.jsonl").read_text().splitlines()
    (base / "results.jsonl").write_text("\n".join(reversed(lines)) + "\n")
    result = run(*ARGS, "--bench-trials", "4", "--bench-trial-seed", "5", "--bench-baseline", str(base),
                 "--bench-run-name", "next")
    statuses = {(r["task_id"], r["trial"]): r["status"] for r in results(pytester.path / "benchmark_results" / "next")}
    assert {s for (t, _), s in statuses.items() if t == "alpha"} == {"xfailed", "xpassed"}
    assert {s for (t, _), s in statuses.items() if t == "bravo"} == {"passed"}
    assert result.ret == 0
