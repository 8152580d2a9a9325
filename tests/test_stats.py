"""The statistics library against hand computations (the user guide's worked examples) and a
deterministic coverage check of its intervals."""

from __future__ import annotations

import math
import random

import pytest

from pytest_agentbench import stats

# An independent oracle when installed (not a dependency). Imported at collection: pytester's
# in-process runs drop modules imported after them, and scipy refuses to load twice.
try:
    from scipy import stats as scipy_stats
except ImportError:  # pragma: no cover - depends on the machine
    scipy_stats = None
needs_scipy = pytest.mark.skipif(scipy_stats is None, reason="scipy is not installed (an optional oracle)")


def test_wilson_matches_the_hand_computation():
    # User guide example: 7 of 10. p = 0.7, z^2 = 3.8415;
    # centre = (0.7 + 3.8415/20) / (1 + 3.8415/10) = 0.89207 / 1.38415 = 0.64449
    # half   = 1.96 * sqrt(0.7*0.3/10 + 3.8415/400) / 1.38415 = 0.24772
    low, high = stats.wilson_interval(7, 10)
    assert low == pytest.approx(0.64449 - 0.24772, abs=1e-4)
    assert high == pytest.approx(0.64449 + 0.24772, abs=1e-4)
    assert (round(low, 4), round(high, 4)) == (0.3968, 0.8922)


def test_wilson_edges():
    assert stats.wilson_interval(0, 0) is None
    low, high = stats.wilson_interval(0, 20)
    assert low == 0.0 and high == pytest.approx(3.8415 / (20 + 3.8415), abs=1e-4)  # z^2 / (n + z^2)
    low, high = stats.wilson_interval(20, 20)
    assert high == 1.0 and low == pytest.approx(20 / (20 + 3.8415), abs=1e-4)
    with pytest.raises(ValueError):
        stats.wilson_interval(3, 2)


@needs_scipy
def test_wilson_agrees_with_scipy_when_available():
    for successes, n in [(0, 5), (3, 7), (49, 50), (120, 300)]:
        ci = scipy_stats.binomtest(successes, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert stats.wilson_interval(successes, n) == pytest.approx((ci.low, ci.high), abs=1e-9)


# The user guide's pass@k / pass^k table: three tasks, five trials each.
TABLE = [(2, 5), (5, 5), (0, 5)]  # (passes, trials)


def test_pass_at_k_and_pass_hat_k_on_the_table():
    # Task A (c=2 of n=5): pass@1 = 2/5; pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10; pass@3 = 1 - 1/10;
    # pass@4 = pass@5 = 1 (fewer than k failures). pass^1 = 2/5, pass^2 = C(2,2)/C(5,2) = 1/10, then 0.
    # Task B (5 of 5): 1 everywhere. Task C (0 of 5): 0 everywhere.
    curves = stats.pass_curves(TABLE)
    assert curves["pass_at_k"] == pytest.approx({"1": (0.4 + 1) / 3, "2": (0.7 + 1) / 3, "3": (0.9 + 1) / 3,
                                                 "4": 2 / 3, "5": 2 / 3})
    assert curves["pass_hat_k"] == pytest.approx({"1": (0.4 + 1) / 3, "2": (0.1 + 1) / 3, "3": 1 / 3,
                                                  "4": 1 / 3, "5": 1 / 3})


def test_pass_at_k_is_unbiased_not_the_plug_in():
    # 1 of 2 trials passed: pass@2 is 1 (the one pass is among the 2 drawn), not 1 - 0.5^2.
    assert stats.pass_at_k(2, 1, 2) == 1.0
    assert stats.pass_hat_k(2, 1, 2) == 0.0
    with pytest.raises(ValueError):
        stats.pass_at_k(3, 1, 4)


def test_mcnemar_matches_the_hand_computation():
    # b = 1 regressed, c = 7 improved: 2 * (C(8,0) + C(8,1)) / 2^8 = 18/256.
    assert stats.mcnemar_exact(1, 7) == pytest.approx(18 / 256)
    assert stats.mcnemar_exact(7, 1) == pytest.approx(18 / 256)
    assert stats.mcnemar_exact(0, 0) == 1.0
    assert stats.mcnemar_exact(3, 3) == 1.0  # capped at 1
    # b = 0, c = 6: 2 / 64
    assert stats.mcnemar_exact(0, 6) == pytest.approx(2 / 64)


@needs_scipy
def test_mcnemar_agrees_with_scipy_binomtest_when_available():
    for b, c in [(1, 7), (4, 9), (10, 3), (0, 12)]:
        assert stats.mcnemar_exact(b, c) == pytest.approx(scipy_stats.binomtest(b, b + c, 0.5).pvalue)


def test_newcombe_interval_matches_the_hand_computation():
    # a=40 pass/pass, b=5 pass/fail, c=15 fail/pass, d=40 fail/fail (n=100):
    # p1 = 0.45, p2 = 0.55, difference 0.10.
    a, b, c, d = 40, 5, 15, 40
    l1, u1 = stats.wilson_interval(45, 100)
    l2, u2 = stats.wilson_interval(55, 100)
    # ad - bc = 1600 - 75 = 1525 > 0: corrected numerator 1525 - 50 = 1475.
    phi = 1475 / math.sqrt(45 * 55 * 55 * 45)
    low = 0.10 - math.sqrt((0.55 - l2) ** 2 - 2 * phi * (0.55 - l2) * (u1 - 0.45) + (u1 - 0.45) ** 2)
    high = 0.10 + math.sqrt((u2 - 0.55) ** 2 - 2 * phi * (u2 - 0.55) * (0.45 - l1) + (0.45 - l1) ** 2)
    got = stats.newcombe_paired_interval(a, b, c, d)
    assert got == pytest.approx((low, high))
    assert got[0] < 0.10 < got[1]
    # Strong positive correlation narrows it below the unpaired (independent) combination.
    unpaired = math.sqrt((0.55 - l2) ** 2 + (u1 - 0.45) ** 2)
    assert 0.10 - got[0] < unpaired


def test_clustered_interval_brackets_the_rate_and_never_collapses_at_the_edges():
    tasks = [(3, 5), (5, 5), (0, 5), (2, 5), (4, 5)]
    low, high = stats.clustered_wilson_interval(tasks)
    assert low < 14 / 25 < high
    assert stats.clustered_wilson_interval([]) is None
    # 30 of 30 over 10 tasks is worth what 10 of 10 single trials are, not a point at 100%
    assert stats.clustered_wilson_interval([(3, 3)] * 10) == pytest.approx(stats.wilson_interval(10, 10))
    assert stats.clustered_wilson_interval([(3, 3)] * 10)[0] == pytest.approx(0.7225, abs=1e-4)
    # 2 of 2 trials of one task: one task's worth
    assert stats.clustered_wilson_interval([(2, 2)]) == pytest.approx(stats.wilson_interval(1, 1))
    assert stats.clustered_wilson_interval([(0, 4)] * 3) == pytest.approx(stats.wilson_interval(0, 3))


def test_effective_trials_lie_between_the_tasks_and_the_trials():
    # every task alike (each passes 2 of 4): the trials are as good as independent
    assert stats.effective_trials([(2, 4)] * 10) == 40
    # tasks all-or-nothing: a task's trials are one draw
    assert stats.effective_trials([(4, 4)] * 5 + [(0, 4)] * 5) == 10
    assert stats.effective_trials([(1, 1)]) == 1


def test_t_quantiles():
    assert stats.t975(1) == pytest.approx(12.7062, abs=1e-4)
    assert stats.t975(10) == pytest.approx(2.2281, abs=1e-4)
    assert stats.t975(11) == pytest.approx(2.2010, abs=1e-3)
    assert stats.t975(30) == pytest.approx(2.0423, abs=1e-3)
    assert stats.t975(1000) == pytest.approx(1.9623, abs=1e-3)


def test_describe_counts_flips_and_excludes_infrastructure_errors():
    records = []
    for task, verdicts in {"a": [1, 0, 1], "b": [1, 1, 1], "c": [0, 0, None]}.items():
        for trial, verdict in enumerate(verdicts, 1):
            records.append({"benchmark": "mock", "domain": "d1" if task != "c" else "d2", "task_id": task,
                            "trial": trial, "outcome": verdict is not None, "success": verdict == 1,
                            "score": float(verdict or 0), "error_type": "infrastructure" if verdict is None else None})
    out = stats.run_statistics(records)
    assert out["outcome_trials"] == 8 and out["passes"] == 5 and out["excluded_trials"] == 1
    assert out["success_rate"] == pytest.approx(5 / 8)
    assert out["ci_method"] == "wilson-clustered"
    assert out["flipped_tasks"] == 1 and out["flip_rate"] == pytest.approx(1 / 3)
    # K is the smallest outcome-trial count (task c has 2 outcomes): k = 1..2.
    assert set(out["pass_at_k"]) == {"1", "2"}
    # a: C(2,2)/C(3,2) = 1/3; b: 1; c: C(0,2)/C(2,2) = 0
    assert out["pass_hat_k"]["2"] == pytest.approx((1 / 3 + 1 + 0) / 3)
    # pass@2: a: 1 - C(1,2)/C(3,2) = 1; b: 1; c: 1 - C(2,2)/C(2,2) = 0
    assert out["pass_at_k"]["2"] == pytest.approx(2 / 3)
    assert out["by_domain"]["d2"]["passes"] == 0 and out["by_domain"]["d1"]["outcome_trials"] == 6
    rows = {r["task_id"]: r for r in out["per_task"]}
    assert rows["a"]["mean_score"] == pytest.approx(2 / 3) and rows["c"]["excluded_trials"] == 1


def test_one_trial_uses_wilson():
    records = [{"benchmark": "m", "task_id": str(i), "outcome": True, "success": i < 7} for i in range(10)]
    out = stats.run_statistics(records)
    assert out["ci_method"] == "wilson"
    assert out["ci95"] == pytest.approx(list(stats.wilson_interval(7, 10)))
    assert out["flip_rate"] is None


# -- coverage: the intervals cover the true rate about 95% of the time -------------------------
def test_wilson_interval_covers_the_true_rate():
    rng = random.Random(1)
    true = 0.3
    covered = 0
    runs = 2000
    for _ in range(runs):
        passes = sum(rng.random() < true for _ in range(60))
        low, high = stats.wilson_interval(passes, 60)
        covered += low <= true <= high
    assert 0.93 <= covered / runs <= 0.97, covered / runs


def _population_runs(n_tasks: int, trials: int, a: float, b: float, runs: int, seed: int):
    """Seeded simulated runs: each task's pass probability drawn from Beta(a, b) (mean a/(a+b)),
    then ``trials`` trials of it; what a benchmark run of a stochastic agent looks like."""
    rng = random.Random(seed)
    for _ in range(runs):
        yield [(sum(rng.random() < p for _ in range(trials)), trials)
               for p in (rng.betavariate(a, b) for _ in range(n_tasks))]


@pytest.mark.parametrize("n_tasks", [1, 2, 3, 4, 5, 10, 60])
@pytest.mark.parametrize(("a", "b"), [(1, 1), (0.5, 0.5), (5, 5), (20, 1), (1, 20), (50, 0.5), (0.5, 50)],
                         ids=["uniform", "bimodal", "even", "mostly-pass", "mostly-fail", "all-pass", "all-fail"])
def test_clustered_interval_covers_the_population_rate_with_few_tasks_and_at_the_edges(n_tasks, a, b):
    """Coverage of the mean pass rate of the tasks' population, three trials per task, 500 seeded
    runs per cell: at least 93% everywhere (at 0.95 nominal, the binomial noise of 500 runs is
    about one point), including 1-5 tasks and runs where nearly every trial passes or fails; the
    bootstrap over tasks it replaced gave a point at 100% for every all-pass run."""
    mu = a / (a + b)
    runs = list(_population_runs(n_tasks, 3, a, b, 500, seed=n_tasks * 1000 + int(a * 10)))
    covered = 0
    for tasks in runs:
        low, high = stats.clustered_wilson_interval(tasks)
        covered += low <= mu <= high
    assert covered / len(runs) >= 0.93, covered / len(runs)


def test_a_naive_wilson_over_all_trials_undercovers_where_the_clustered_one_does_not():
    naive = clustered = 0
    runs = list(_population_runs(60, 3, 0.5, 0.5, 500, seed=7))
    for tasks in runs:
        low, high = stats.clustered_wilson_interval(tasks)
        clustered += low <= 0.5 <= high
        w_low, w_high = stats.wilson_interval(sum(p for p, _ in tasks), 180)
        naive += w_low <= 0.5 <= w_high
    assert naive / len(runs) < 0.85 < 0.93 <= clustered / len(runs)


def test_paired_tasks_finds_a_real_regression_and_not_a_null_one():
    rng = random.Random(3)
    worse, same = [], []
    for _ in range(80):
        p = rng.random()
        first = (sum(rng.random() < p for _ in range(3)), 3)
        worse.append((first, (sum(rng.random() < p * 0.5 for _ in range(3)), 3)))
        same.append((first, first))
    (low, high), p_value = stats.paired_tasks(worse)
    assert high < 0 and p_value < 0.01
    (low, high), p_value = stats.paired_tasks(same)
    assert low < 0 < high and p_value == 1.0


def test_paired_tasks_never_claims_certainty_it_does_not_have():
    """Ten tasks, 3 of 3 before and 0 of 3 after: not p = 0 and [-100, -100], but the exact sign
    test's 2/2^10 and an interval of real width."""
    (low, high), p_value = stats.paired_tasks([((3, 3), (0, 3))] * 10)
    assert p_value == pytest.approx(2 / 2 ** 10)
    assert low == -1.0 and -0.7 < high < -0.5
    (low, high), p_value = stats.paired_tasks([((2, 2), (0, 2))])
    assert p_value == 1.0 and high > 0  # one task cannot show a difference


def test_statistics_do_not_depend_on_record_order():
    rng = random.Random(5)
    records = [{"benchmark": "m", "domain": "d", "task_id": f"t{i}", "trial": k, "outcome": True,
                "success": rng.random() < 0.5} for i in range(12) for k in (1, 2, 3)]
    shuffled = records[:]
    random.Random(9).shuffle(shuffled)
    assert stats.run_statistics(records) == stats.run_statistics(shuffled)


# -- the interval of a median ----------------------------------------------------------------------
def test_median_interval_picks_the_order_statistics_by_hand():
    # n = 10: P(Bin(10, 1/2) < 2) = 11/1024, coverage 0.9785; k = 3 would give 1 - 2 * 56/1024 = 0.8906.
    values = [9.0, 1.0, 8.0, 2.0, 7.0, 3.0, 6.0, 4.0, 5.0, 10.0]
    assert stats.median_interval(values) == (2.0, 9.0, pytest.approx(1 - 22 / 1024))
    # n = 20 (the inert rows of benchmarks/goals.py): k = 6, P(Bin(20, 1/2) <= 5) = 21700 / 2**20.
    low, high, coverage = stats.median_interval([float(i) for i in range(20)])
    assert (low, high) == (5.0, 14.0)
    assert coverage == pytest.approx(1 - 2 * 21700 / 2 ** 20)


@pytest.mark.parametrize(("n", "coverage"), [(1, 0.0), (2, 0.5), (5, 0.9375)])
def test_median_interval_of_a_small_sample_is_its_range_and_says_how_sure(n, coverage):
    values = [float(v) for v in range(n, 0, -1)]
    assert stats.median_interval(values) == (1.0, float(n), pytest.approx(coverage))


def test_median_interval_of_nothing_is_none():
    assert stats.median_interval([]) is None


@pytest.mark.parametrize("n", [5, 6, 11, 20, 31])
def test_median_interval_is_the_widest_that_reaches_the_confidence(n):
    def coverage(k):
        return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n

    _, _, got = stats.median_interval([float(v) for v in range(n)])
    ks = [k for k in range(1, (n + 1) // 2 + 1) if coverage(k) >= 0.95]
    assert got == pytest.approx(coverage(max(ks)) if ks else coverage(1))


def test_median_interval_covers_a_skewed_median_as_often_as_it_says():
    # Log-normal timings (median 1.0): the share of samples whose interval holds the true median
    # is at least the coverage claimed, to within the simulation's error.
    rng = random.Random(7)
    for n in (5, 12, 20):
        claimed = stats.median_interval([0.0] * n)[2]
        hits = 0
        for _ in range(4000):
            low, high, _ = stats.median_interval([rng.lognormvariate(0.0, 0.5) for _ in range(n)])
            hits += low <= 1.0 <= high
        assert hits / 4000 >= claimed - 0.015, (n, hits / 4000, claimed)
