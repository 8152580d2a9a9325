"""How sure a run's numbers are: intervals, pass@k, pass^k, flip rate and paired comparisons.

A run is a sample of a stochastic agent, so one success rate without an error bar overstates what
was measured. Pure functions on plain numbers and result records, standard library only (no
pytest, no numpy), so reports, the viewer and other tools can call them.

Formulas and worked examples: ``docs/user-guide.md`` ("Statistics"). References:

* Wilson score interval: E. B. Wilson, "Probable inference...", JASA 22 (1927).
* Bootstrap over tasks (trials of one task are correlated, so tasks, not trials, are resampled):
  B. Efron and R. Tibshirani, *An Introduction to the Bootstrap* (1993), percentile interval.
* pass@k, unbiased estimator: M. Chen et al., "Evaluating Large Language Models Trained on Code"
  (2021), eq. 1: ``1 - C(n-c, k) / C(n, k)`` per task, averaged.
* pass^k: S. Yao et al., "tau-bench" (2024): ``C(c, k) / C(n, k)`` per task, averaged: the chance
  that k trials drawn from the n all succeed.
* Exact McNemar test: the two-sided binomial test of the discordant pairs, ``b`` of ``b + c`` at 1/2.
* Paired difference interval (one trial per task): R. G. Newcombe, "Improved confidence intervals
  for the difference between binomial proportions based on paired data", Stat. Med. 17 (1998),
  method 10 (Wilson limits of each rate, combined with the continuity-corrected phi).
* Interval of a median from order statistics (distribution-free): W. J. Conover, *Practical
  Nonparametric Statistics* (3rd ed., 1999), section 3.2: ``(x_(k), x_(n+1-k))`` covers the median
  with probability ``1 - 2 P(Bin(n, 1/2) < k)``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: The 97.5% quantile of the standard normal: a two-sided 95% interval.
Z95 = 1.959963984540054
#: Bootstrap resamples. 2000 keeps the percentile limits stable to about a point at 100 tasks
#: while costing well under a second.
BOOTSTRAP_REPS = 2000
#: Resampling is seeded so the same records always give the same interval.
BOOTSTRAP_SEED = 20210707


# -- a median ----------------------------------------------------------------------------------
def median_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float] | None:
    """``(low, high, coverage)``: the order statistics ``x_(k)`` and ``x_(n+1-k)`` of ``values``,
    for the largest ``k`` whose coverage of the true median, ``1 - 2 P(Bin(n, 1/2) < k)``, is at
    least ``confidence``; None for no values.

    No distribution is assumed, which suits whole-process timings (skewed, with the odd slow run).
    Below six values no ``k`` reaches 95%: the interval is then ``(min, max)`` and ``coverage``
    says how sure it is (93.75% for five values, 50% for two, 0 for one), so a reader never takes a
    small sample's interval for a 95% one."""
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        return None
    below = 0.0  # P(Bin(n, 1/2) < k), for k = 1, 2, ...
    best = (ordered[0], ordered[-1], 1 - 2 * 0.5 ** n)
    for k in range(1, (n + 1) // 2 + 1):
        below += math.comb(n, k - 1) / 2 ** n
        coverage = 1 - 2 * below
        if coverage < confidence:
            break
        best = (ordered[k - 1], ordered[n - k], coverage)
    return best


# -- one rate ----------------------------------------------------------------------------------
def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of ``successes`` out of ``n`` independent trials; None for n = 0.

    Chosen over the textbook Wald interval because it stays inside [0, 1] and keeps close to its
    nominal coverage at the small n and extreme rates benchmarks produce (0 of 20, 20 of 20)."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be between 0 and n={n}, got {successes}")
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default, "type 7")."""
    if not sorted_values:
        raise ValueError("no values")
    position = (len(sorted_values) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def bootstrap_rate_interval(
    tasks: Sequence[tuple[int, int]],
    *,
    reps: int = BOOTSTRAP_REPS,
    seed: int = BOOTSTRAP_SEED,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile interval of the pooled success rate, resampling whole tasks.

    ``tasks`` holds ``(passes, trials)`` per task. Trials of one task share its difficulty, so they
    are not independent draws: treating K trials of N tasks as N*K coin flips gives an interval too
    narrow by up to sqrt(K). Resampling tasks keeps each task's trials together."""
    tasks = [(p, t) for p, t in tasks if t > 0]
    if not tasks:
        return None
    rng = random.Random(seed)
    n = len(tasks)
    passes = [p for p, _ in tasks]
    trials = [t for _, t in tasks]
    index = range(n)
    rates = []
    if len(set(trials)) == 1:  # the usual case: every task has K trials, so the denominator is n*K
        denominator = n * trials[0]
        for _ in range(reps):
            rates.append(sum(rng.choices(passes, k=n)) / denominator)
    else:
        take_passes, take_trials = passes.__getitem__, trials.__getitem__
        for _ in range(reps):
            picks = rng.choices(index, k=n)
            rates.append(sum(map(take_passes, picks)) / sum(map(take_trials, picks)))
    rates.sort()
    tail = (1 - level) / 2
    return _percentile(rates, tail), _percentile(rates, 1 - tail)


# -- pass@k and pass^k -------------------------------------------------------------------------
def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance that at least one of k trials, drawn without replacement from n with c passes,
    passes (Chen et al. 2021). Unbiased, unlike ``1 - (1 - c/n) ** k``."""
    _check_nck(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Chance that all k trials drawn from n with c passes pass (tau-bench's pass^k)."""
    _check_nck(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check_nck(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


def pass_curves(tasks: Sequence[tuple[int, int]]) -> dict[str, dict[str, float]]:
    """``{"pass_at_k": {"1": ..}, "pass_hat_k": {"1": ..}}`` for k = 1..K, averaged over tasks.

    K is the smallest trial count of any task, so every task contributes to every k (a task
    with fewer trials than k has no estimate at k)."""
    tasks = [(p, t) for p, t in tasks if t > 0]
    if not tasks:
        return {"pass_at_k": {}, "pass_hat_k": {}}
    top = min(t for _, t in tasks)
    at = {str(k): sum(pass_at_k(t, p, k) for p, t in tasks) / len(tasks) for k in range(1, top + 1)}
    hat = {str(k): sum(pass_hat_k(t, p, k) for p, t in tasks) / len(tasks) for k in range(1, top + 1)}
    return {"pass_at_k": at, "pass_hat_k": hat}


# -- from records ------------------------------------------------------------------------------
@dataclass(slots=True)  # one per task of the run, all alive while its statistics are made
class TaskTrials:
    """The outcome trials of one task (infrastructure errors and unevaluated trials excluded)."""

    benchmark: str
    domain: str
    task_id: str
    trials: int = 0
    passes: int = 0
    score_sum: float = 0.0
    excluded: int = 0  # trials that were not outcomes (infrastructure, evaluation, not evaluated)

    @property
    def key(self) -> str:
        return f"{self.benchmark}::{self.task_id}"

    @property
    def mean_score(self) -> float | None:
        return self.score_sum / self.trials if self.trials else None

    @property
    def flipped(self) -> bool:
        return 0 < self.passes < self.trials

    def to_json(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "domain": self.domain, "task_id": self.task_id,
                "trials": self.trials, "passes": self.passes, "mean_score": self.mean_score,
                "excluded_trials": self.excluded, "flipped": self.flipped}


def group_tasks(records: Iterable[Mapping[str, Any]]) -> dict[str, TaskTrials]:
    """Per ``<bench>::<task_id>``, the outcome trials of ``results.jsonl`` records, in order seen.
    A record counts when its ``outcome`` is true (the outcomes-only rule of ``metrics.py``)."""
    out: dict[str, TaskTrials] = {}
    for record in records:
        key = f"{record['benchmark']}::{record['task_id']}"
        entry = out.get(key)
        if entry is None:
            entry = out[key] = TaskTrials(str(record["benchmark"]), str(record.get("domain", "default")),
                                          str(record["task_id"]))
        if record.get("outcome"):
            entry.trials += 1
            entry.passes += bool(record.get("success"))
            entry.score_sum += float(record.get("score") or 0.0)
        else:
            entry.excluded += 1
    return out


def describe(tasks: Sequence[TaskTrials], *, reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """The statistics block of one group of tasks (a run, or one domain of it)."""
    counted = [t for t in tasks if t.trials > 0]
    trials = sum(t.trials for t in counted)
    passes = sum(t.passes for t in counted)
    most = max((t.trials for t in counted), default=0)
    if most <= 1:
        interval = wilson_interval(passes, trials)
        method = "wilson"
    else:
        interval = bootstrap_rate_interval([(t.passes, t.trials) for t in counted], reps=reps, seed=seed)
        method = "bootstrap-tasks"
    multi = [t for t in counted if t.trials >= 2]
    flipped = sum(1 for t in multi if t.flipped)
    return {
        "tasks": len(tasks),
        "tasks_with_outcomes": len(counted),
        "outcome_trials": trials,
        "passes": passes,
        "excluded_trials": sum(t.excluded for t in tasks),
        "success_rate": passes / trials if trials else None,
        "ci95": list(interval) if interval is not None else None,
        "ci_method": method if interval is not None else None,
        "max_trials": most,
        **pass_curves([(t.passes, t.trials) for t in counted]),
        "flip_rate": flipped / len(multi) if multi else None,
        "flipped_tasks": flipped,
    }


def run_statistics(records: Iterable[Mapping[str, Any]], *, reps: int = BOOTSTRAP_REPS,
                   seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """Statistics of a whole run: overall, per domain, and per task."""
    grouped = group_tasks(records)
    # Sorted, so the bootstrap's resamples (and the numbers) do not depend on the order the
    # records arrived in: xdist's, or a resumed run's.
    tasks = [grouped[key] for key in sorted(grouped)]
    domains: dict[str, list[TaskTrials]] = {}
    for task in tasks:
        domains.setdefault(task.domain, []).append(task)
    return {
        **describe(tasks, reps=reps, seed=seed),
        "by_domain": {d: describe(group, reps=reps, seed=seed) for d, group in sorted(domains.items())},
        "per_task": [t.to_json() for t in tasks],
    }


# -- paired comparison -------------------------------------------------------------------------
def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` and ``c`` discordant pairs: twice the smaller
    binomial tail of Binomial(b + c, 1/2), at most 1. With no discordant pairs, 1."""
    if b < 0 or c < 0:
        raise ValueError(f"counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail: float = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2 ** n  # int ** int is Any to mypy
    return min(1.0, 2 * tail)


def newcombe_paired_interval(a: int, b: int, c: int, d: int, z: float = Z95) -> tuple[float, float] | None:
    """95% interval of ``p2 - p1`` for paired binary outcomes (Newcombe 1998, method 10).

    The 2x2 table counts pairs by (first, second) verdict: ``a`` pass/pass, ``b`` pass/fail,
    ``c`` fail/pass, ``d`` fail/fail; so ``p1 = (a + b) / n``, ``p2 = (a + c) / n`` and the
    difference is ``(c - b) / n``. Method 10 combines the Wilson limits of the two rates using
    their correlation, which keeps it inside [-1, 1] and near nominal coverage for small tables."""
    n = a + b + c + d
    if n == 0:
        return None
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson_interval(a + b, n, z)  # type: ignore[misc]
    l2, u2 = wilson_interval(a + c, n, z)  # type: ignore[misc]
    denominator = (a + b) * (c + d) * (a + c) * (b + d)
    if denominator == 0:
        phi = 0.0
    else:
        cross = a * d - b * c
        numerator = max(cross - n / 2, 0.0) if cross > 0 else float(cross)
        phi = numerator / math.sqrt(denominator)
    delta = p2 - p1
    low = delta - math.sqrt(max(0.0, (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2))
    high = delta + math.sqrt(max(0.0, (u2 - p2) ** 2 - 2 * phi * (u2 - p2) * (p1 - l1) + (p1 - l1) ** 2))
    return max(-1.0, low), min(1.0, high)


def paired_bootstrap(
    pairs: Sequence[tuple[tuple[int, int], tuple[int, int]]],
    *,
    reps: int = BOOTSTRAP_REPS,
    seed: int = BOOTSTRAP_SEED,
    level: float = 0.95,
) -> tuple[tuple[float, float], float] | None:
    """Interval and two-sided p-value of the difference in pooled success rate (second minus
    first), resampling tasks with both runs' trials kept together.

    ``pairs`` holds ``((passes, trials) in the first run, (passes, trials) in the second)`` per
    task. The p-value is twice the smaller share of resampled differences on either side of 0."""
    pairs = [(x, y) for x, y in pairs if x[1] > 0 and y[1] > 0]
    if not pairs:
        return None
    rng = random.Random(seed)
    n = len(pairs)
    index = range(n)
    diffs = []
    columns = [[pair[side][part] for pair in pairs] for side in (0, 1) for part in (0, 1)]
    takes = [column.__getitem__ for column in columns]
    for _ in range(reps):
        picks = rng.choices(index, k=n)
        first_p, first_t, second_p, second_t = (sum(map(take, picks)) for take in takes)
        diffs.append(second_p / second_t - first_p / first_t)
    diffs.sort()
    tail = (1 - level) / 2
    below = sum(1 for x in diffs if x <= 0) / reps
    above = sum(1 for x in diffs if x >= 0) / reps
    return (_percentile(diffs, tail), _percentile(diffs, 1 - tail)), min(1.0, 2 * min(below, above))
