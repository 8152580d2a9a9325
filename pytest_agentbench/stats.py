"""How sure a run's numbers are: intervals, pass@k, pass^k, flip rate and paired comparisons.

A run is a sample of a stochastic agent, so one success rate without an error bar overstates what
was measured. Pure functions on plain numbers and result records, standard library only (no
pytest, no numpy), so reports, the viewer and other tools can call them.

Formulas and worked examples: ``docs/user-guide.md`` ("Statistics"). References:

* Wilson score interval: E. B. Wilson, "Probable inference...", JASA 22 (1927).
* Several trials per task (trials of one task are correlated): the Wilson interval over the
  effective number of trials, the count over the design effect estimated from the between-task
  (cluster-robust) variance: L. Kish, *Survey Sampling* (1965); at 0% or 100%, where no variance
  can be estimated, the number of tasks.
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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: The 97.5% quantile of the standard normal: a two-sided 95% interval.
Z95 = 1.959963984540054


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
    return _wilson(successes / n, n, z)


def _wilson(p: float, n: float, z: float) -> tuple[float, float]:
    """The Wilson score limits for a rate ``p`` observed over ``n`` (possibly effective, not whole) trials."""
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(max(0.0, p * (1 - p) / n + z2 / (4 * n * n))) / (1 + z2 / n)
    # at 0% and 100% a limit is exactly 0 or 1 (in exact arithmetic it is; in floats it can miss)
    return 0.0 if p <= 0 else max(0.0, centre - half), 1.0 if p >= 1 else min(1.0, centre + half)


def effective_trials(tasks: Sequence[tuple[int, int]]) -> float:
    """How many independent trials ``(passes, trials)`` per task are worth: the trial count over
    the design effect, from the cluster-robust (between-task) variance of the pooled rate
    (Kish 1965), kept between the number of tasks (every task's trials alike) and the number of
    trials (trials independent). With no variance to go on (every trial passed, or none did, or
    one task) it is the number of tasks: nothing shows the trials of a task to be independent."""
    tasks = [(p, t) for p, t in tasks if t > 0]
    n = len(tasks)
    total = sum(t for _, t in tasks)
    if n == 0:
        return 0.0
    rate = sum(p for p, _ in tasks) / total
    binomial = rate * (1 - rate) / total
    if n < 2 or binomial <= 0:
        return float(n)
    robust = n / (n - 1) * sum((p - rate * t) ** 2 for p, t in tasks) / total ** 2
    if robust <= 0:
        return float(total)
    return min(float(total), max(float(n), total * binomial / robust))


#: The 97.5% quantiles of Student's t for 1..10 degrees of freedom (above, :func:`t975` is the
#: Cornish-Fisher expansion, within 0.001 of the exact value).
_T975 = (12.706204736174698, 4.302652729749464, 3.182446305284263, 2.776445105197799, 2.570581835636314,
         2.446911848791681, 2.364624251010299, 2.306004135204166, 2.262157162798205, 2.228138851986274)


def t975(df: int) -> float:
    """The 97.5% quantile of Student's t with ``df`` degrees of freedom (``df`` >= 1)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = Z95
    return (z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * df ** 3))


def clustered_wilson_interval(tasks: Sequence[tuple[int, int]]) -> tuple[float, float] | None:
    """The 95% Wilson interval of the pooled success rate of ``(passes, trials)`` per task, over
    the :func:`effective_trials`, with Student's t for tasks - 1 degrees of freedom in place of z
    when that count comes from the between-task variance (few tasks estimate it poorly).

    Why not a bootstrap over tasks: it collapses to a point at 0% and 100% and with few tasks
    (30 of 30 over 10 tasks gave [100%, 100%], as did 2 of 2 trials of one task), claiming a
    certainty the data does not hold. These limits keep their coverage there: 30 of 30 over 10
    tasks is [72.2%, 100%], as 10 of 10 tasks with one trial each would be. Seeded simulations in
    ``tests/test_stats.py`` show the coverage for 1 to 60 tasks, including all-pass and all-fail."""
    tasks = [(p, t) for p, t in tasks if t > 0]
    if not tasks:
        return None
    rate = sum(p for p, _ in tasks) / sum(t for _, t in tasks)
    estimated = len(tasks) >= 2 and 0 < rate < 1
    return _wilson(rate, effective_trials(tasks), t975(len(tasks) - 1) if estimated else Z95)


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


def describe(tasks: Sequence[TaskTrials]) -> dict[str, Any]:
    """The statistics block of one group of tasks (a run, or one domain of it)."""
    counted = [t for t in tasks if t.trials > 0]
    trials = sum(t.trials for t in counted)
    passes = sum(t.passes for t in counted)
    most = max((t.trials for t in counted), default=0)
    if most <= 1:
        interval = wilson_interval(passes, trials)
        method = "wilson"
    else:
        interval = clustered_wilson_interval([(t.passes, t.trials) for t in counted])
        method = "wilson-clustered"
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


def run_statistics(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Statistics of a whole run: overall, per domain, and per task."""
    grouped = group_tasks(records)
    # Sorted, so the per-task list does not depend on the order the records arrived in: xdist's,
    # or a resumed run's.
    tasks = [grouped[key] for key in sorted(grouped)]
    domains: dict[str, list[TaskTrials]] = {}
    for task in tasks:
        domains.setdefault(task.domain, []).append(task)
    return {
        **describe(tasks),
        "by_domain": {d: describe(group) for d, group in sorted(domains.items())},
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


def paired_tasks(pairs: Sequence[tuple[tuple[int, int], tuple[int, int]]]) -> tuple[tuple[float, float], float] | None:
    """Interval and two-sided p-value of the difference in pooled success rate (second minus
    first) when tasks have several trials: ``pairs`` holds ``((passes, trials) in the first run,
    (passes, trials) in the second)`` per task.

    The p-value is the exact sign test over tasks (McNemar's test, of which it is the multi-trial
    form): how many tasks' rate fell against how many rose, at 1/2; so it is never 0, and ten
    tasks that all fell give 0.002, not the bootstrap's 0. The interval is Newcombe's hybrid score
    interval (method 10) from each run's :func:`clustered_wilson_interval`, taking the two as
    uncorrelated, which makes it wider, never narrower, than one that used the pairing; it keeps
    its width at -100 and +100 points and with few tasks, where a bootstrap collapses to a point."""
    pairs = [(x, y) for x, y in pairs if x[1] > 0 and y[1] > 0]
    if not pairs:
        return None
    fell = sum(1 for (p1, t1), (p2, t2) in pairs if p2 * t1 < p1 * t2)
    rose = sum(1 for (p1, t1), (p2, t2) in pairs if p2 * t1 > p1 * t2)
    first = [x for x, _ in pairs]
    second = [y for _, y in pairs]
    r1 = sum(p for p, _ in first) / sum(t for _, t in first)
    r2 = sum(p for p, _ in second) / sum(t for _, t in second)
    l1, u1 = clustered_wilson_interval(first)  # type: ignore[misc]
    l2, u2 = clustered_wilson_interval(second)  # type: ignore[misc]
    delta = r2 - r1
    low = delta - math.sqrt((r2 - l2) ** 2 + (u1 - r1) ** 2)
    high = delta + math.sqrt((u2 - r2) ** 2 + (r1 - l1) ** 2)
    return (max(-1.0, low), min(1.0, high)), mcnemar_exact(fell, rose)
