"""Compare two runs task by task, and say whether the difference is more than chance.

Two runs of the same stochastic agent differ by several points from repetition alone, so "the
rate went down" is not a regression until a paired test says so. Tasks are paired by
``<benchmark>::<task_id>``; each side's outcome trials are counted with the outcomes-only rule
(infrastructure errors are out of every denominator). A task with no outcome trial on one side
counts as absent there (``new`` or ``gone``), since there is nothing to compare. Compared with a
much bigger reference run, most of its tasks are gone here: the first :data:`GONE_ROWS` of those
absent from this run get a row, the rest are counted (``unlisted_gone``), so a comparison holds
this run's tasks, not the reference's.

* One trial per task on both sides: the exact McNemar test on the discordant tasks, and Newcombe's
  paired interval of the difference.
* More than one trial on either side: the exact sign test over tasks (how many tasks' rate fell
  against how many rose) for the p-value, and Newcombe's hybrid score interval from each run's
  clustered Wilson limits (``stats.paired_tasks``).

Pure functions on records; no pytest.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_agentbench import stats
from pytest_agentbench.record.runfolder import iter_results, read_results
from pytest_agentbench.text import shorten
from pytest_agentbench.untrusted import file_problem

STATUSES = ("regressed", "improved", "unchanged", "new", "gone")
#: The comparison's file in the compared run's folder (``--bench-compare``).
COMPARISON_NAME = "comparison.json"
DEFAULT_ALPHA = 0.05


def page_name(before_run: str) -> str:
    """The comparison page's file name in the compared run's folder (``record.compare_view``)."""
    return f"compare-{before_run}.html"


def run_file(path: str | Path) -> tuple[str, Path]:
    """The run's name and its results.jsonl, from a run folder or a results.jsonl. ValueError when
    there is no such file."""
    path = Path(path)
    file = path / "results.jsonl" if path.is_dir() else path
    problem = file_problem(file)
    if problem is not None:
        raise ValueError(f"{file} {problem}; pass a run folder or its results.jsonl")
    name = path.name if path.is_dir() else (file.parent.name if file.name == "results.jsonl" else file.stem)
    return name, file


def load_run(path: str | Path) -> tuple[str, list[dict[str, Any]]]:
    """The run's name and records (what a comparison reads of each), from a run folder or a
    results.jsonl. ValueError when unreadable."""
    name, file = run_file(path)
    return name, read_results(file, compared)


def check_run(path: str | Path) -> str:
    """The run's name, once every record of it was read and found well-formed, none of them kept:
    ``--bench-compare`` refuses a malformed reference run before anything plays, and reads it
    again (``stream_run``) at the end, keeping only what this run's tasks need. ValueError when
    unreadable."""
    name, file = run_file(path)
    for _ in iter_results(file):
        pass
    return name


def stream_run(path: str | Path) -> Iterator[dict[str, Any]]:
    """The run's records one at a time (a generator; ValueError when unreadable, as it reads)."""
    return iter_results(run_file(path)[1])


#: What a comparison reads of a record (``_Tasks.add``).
COMPARED_FIELDS = ("benchmark", "task_id", "domain", "trial", "outcome", "success", "score", "error", "reason")


def compared(record: dict[str, Any]) -> dict[str, Any]:
    """The part of ``record`` a comparison reads: its fields above, and of its criteria only the
    first failed one (all ``_Tasks.add`` keeps of them). A comparison against a run of 20,000 tasks then
    holds a few small values per task, not every record whole (steps, criteria, final action)."""
    kept = {k: record[k] for k in COMPARED_FIELDS if k in record}
    criteria = record.get("criteria")
    first = next((c for c in criteria if isinstance(c, dict) and c.get("passed") is False), None) \
        if isinstance(criteria, list) else None
    if first is not None:
        kept["criteria"] = [{k: first.get(k) for k in ("name", "passed", "detail")}]
    return kept


def _rate(t: stats.TaskTrials | None) -> float | None:
    return t.passes / t.trials if t is not None and t.trials else None


#: The longest reason a comparison keeps per task and side.
REASON_LIMIT = 300


class _Tasks:
    """One run's tasks as a comparison reads them, a record at a time: per ``<bench>::<task_id>``,
    its outcome trials and why it did not pass, as the viewer's Reason column says it, of its
    first record that did not pass (an outcome's failure before an error left out of the rate)."""

    __slots__ = ("_why", "_why_not_outcome", "trials")

    def __init__(self) -> None:
        self.trials: dict[str, stats.TaskTrials] = {}
        self._why: dict[str, str] = {}
        self._why_not_outcome: dict[str, str] = {}

    def add(self, record: Mapping[str, Any], key: str) -> None:
        entry = self.trials.get(key)
        if entry is None:
            entry = self.trials[key] = stats.TaskTrials(str(record["benchmark"]), str(record.get("domain", "default")),
                                                        str(record["task_id"]))
        outcome = bool(record.get("outcome"))
        if outcome:
            entry.trials += 1
            entry.passes += bool(record.get("success"))
            entry.score_sum += float(record.get("score") or 0.0)
        else:
            entry.excluded += 1
        if not record.get("success"):
            reasons = self._why if outcome else self._why_not_outcome
            if key not in reasons:
                why = record.get("error") or _failed_criterion(record.get("criteria")) or record.get("reason")
                if why:
                    reasons[key] = shorten(why, REASON_LIMIT)

    def reason(self, key: str) -> str | None:
        return self._why.get(key) or self._why_not_outcome.get(key)


def _key(record: Mapping[str, Any]) -> str:
    return f"{record['benchmark']}::{record['task_id']}"


def _failed_criterion(criteria: Any) -> str | None:
    """The first failed criterion and what the checker found there, e.g. ``form submitted: ...``."""
    for criterion in criteria if isinstance(criteria, list) else ():
        if isinstance(criterion, dict) and criterion.get("passed") is False:
            detail = criterion.get("detail")
            return f"{criterion.get('name') or '(unnamed)'}: {detail}" if detail else f"{criterion.get('name')} failed"
    return None


def _side(t: stats.TaskTrials | None, reason: str | None) -> dict[str, Any] | None:
    """One run's part of a task's row: passes of outcome trials, the mean score, why it did not pass."""
    if t is None:
        return None
    return {"passes": t.passes, "trials": t.trials,
            "score": round(t.score_sum / t.trials, 6) if t.trials else None, "reason": reason}


#: The most tasks absent from the compared run that get a row each (``gone`` ones among them,
#: in the reference run's order); the other gone tasks are counted in ``unlisted_gone``.
GONE_ROWS = 100


def compare_records(
    before: Iterable[Mapping[str, Any]],
    after: Iterable[Mapping[str, Any]],
    *,
    alpha: float = DEFAULT_ALPHA,
    before_name: str = "before",
    after_name: str = "after",
) -> dict[str, Any]:
    """The comparison of ``after`` (this run) against ``before`` (the reference run), each read
    once, ``before`` as it comes (``stream_run``): of a task that is not in ``after``, only the
    first :data:`GONE_ROWS` such tasks are kept whole, the others only as a count, so a run of
    100 tasks compared with one of 20,000 holds about 200 tasks, not 20,000."""
    new = _Tasks()
    for record in after:
        new.add(record, _key(record))
    old = _Tasks()
    absent = 0
    unlisted: set[str] = set()  # gone tasks without a row: a task's trials may be anywhere in the file
    for record in before:
        key = _key(record)
        if key not in old.trials and key not in new.trials:
            if absent >= GONE_ROWS:
                if record.get("outcome"):
                    unlisted.add(key)
                continue
            absent += 1
        old.add(record, key)
    rows = []
    pairs: list[tuple[stats.TaskTrials, stats.TaskTrials]] = []
    for key in list(old.trials) + [k for k in new.trials if k not in old.trials]:
        a, b = old.trials.get(key), new.trials.get(key)
        ra, rb = _rate(a), _rate(b)
        if ra is None and rb is None:
            continue  # no outcome on either side: nothing to say about this task
        if ra is None:
            status = "new"
        elif rb is None:
            status = "gone"
        else:
            status = "regressed" if rb < ra else "improved" if rb > ra else "unchanged"
            pairs.append((a, b))  # type: ignore[arg-type]
        ref = b if b is not None else a
        assert ref is not None
        rows.append({
            "benchmark": ref.benchmark, "domain": ref.domain, "task_id": ref.task_id, "status": status,
            "before": _side(a, old.reason(key)),
            "after": _side(b, new.reason(key)),
        })
    counts = {s: sum(1 for r in rows if r["status"] == s) for s in STATUSES}
    counts["gone"] += len(unlisted)
    result: dict[str, Any] = {
        "before_run": before_name,
        "after_run": after_name,
        "alpha": alpha,
        "counts": counts,
        "paired_tasks": len(pairs),
        "before_rate": None, "after_rate": None, "difference": None, "ci95": None, "p_value": None,
        "method": None,
        "tasks": rows,
        "unlisted_gone": len(unlisted),
    }
    if pairs:
        bp = sum(a.passes for a, _ in pairs)
        bt = sum(a.trials for a, _ in pairs)
        ap = sum(b.passes for _, b in pairs)
        at = sum(b.trials for _, b in pairs)
        result.update(before_rate=bp / bt, after_rate=ap / at, difference=ap / at - bp / bt)
        if all(a.trials == 1 and b.trials == 1 for a, b in pairs):
            both = sum(1 for a, b in pairs if a.passes and b.passes)
            lost = sum(1 for a, b in pairs if a.passes and not b.passes)
            won = sum(1 for a, b in pairs if not a.passes and b.passes)
            neither = len(pairs) - both - lost - won
            result.update(method="mcnemar-exact", p_value=stats.mcnemar_exact(lost, won),
                          ci95=list(stats.newcombe_paired_interval(both, lost, won, neither) or ()) or None,
                          table={"pass_pass": both, "pass_fail": lost, "fail_pass": won, "fail_fail": neither})
        else:
            paired = stats.paired_tasks([((a.passes, a.trials), (b.passes, b.trials)) for a, b in pairs])
            assert paired is not None
            (low, high), p_value = paired
            result.update(method="sign-test-tasks", p_value=p_value, ci95=[low, high])
    significant = result["p_value"] is not None and result["p_value"] < alpha
    result["significant"] = significant
    if significant and result["difference"] < 0:
        result["verdict"] = "regression"
    elif significant and result["difference"] > 0:
        result["verdict"] = "improvement"
    else:
        result["verdict"] = "no significant change"
    return result


def format_p(p_value: float, *, sep: str = " ") -> str:
    """A p-value for people: four significant digits, or ``< 0.0001`` (never ``0``: an exact test's
    p is never 0, though for thousands of tasks it is below what a float holds)."""
    return f"<{sep}0.0001" if p_value < 1e-4 else f"={sep}{p_value:.4g}"


def grep_line(result: Mapping[str, Any]) -> str:
    """One line for CI logs, ``key=value`` pairs after a fixed prefix."""
    c = result["counts"]

    def pts(value: float | None) -> str:
        return "n/a" if value is None else f"{value * 100:+.1f}pts"

    ci = result["ci95"]
    interval = "n/a" if not ci else f"[{ci[0] * 100:+.1f},{ci[1] * 100:+.1f}]pts"
    p = "=n/a" if result["p_value"] is None else format_p(result["p_value"], sep="")
    verdict = result["verdict"].replace(" ", "-")
    return (f"agentbench-compare: verdict={verdict} diff={pts(result['difference'])} ci95={interval} p{p} "
            f"alpha={result['alpha']:g} method={result['method'] or 'n/a'} paired={result['paired_tasks']} "
            f"regressed={c['regressed']} improved={c['improved']} unchanged={c['unchanged']} "
            f"new={c['new']} gone={c['gone']} baseline={result['before_run']}")


def summary_lines(result: Mapping[str, Any]) -> list[str]:
    """The terminal block: the rates, the difference with its interval and test, the task counts,
    and the regressed tasks by name (at most ten)."""
    def rate(value: float | None) -> str:
        return "n/a" if value is None else f"{value * 100:.1f}%"

    lines = [f"Compared with {result['before_run']} ({result['paired_tasks']} paired task(s))"]
    if result["difference"] is not None:
        ci = result["ci95"]
        interval = f" [{ci[0] * 100:+.1f}, {ci[1] * 100:+.1f}] points" if ci else ""
        test = "exact McNemar" if result["method"] == "mcnemar-exact" else "sign test over tasks"
        lines.append(f"Success rate: {rate(result['before_rate'])} -> {rate(result['after_rate'])}, "
                     f"difference {result['difference'] * 100:+.1f} points{interval} (95%); "
                     f"{test} p {format_p(result['p_value'])}")
    c = result["counts"]
    lines.append("Tasks: " + ", ".join(f"{c[s]} {s}" for s in STATUSES))
    regressed = [r["task_id"] for r in result["tasks"] if r["status"] == "regressed"]
    if regressed:
        more = f" (+{len(regressed) - 10} more)" if len(regressed) > 10 else ""
        lines.append("Regressed: " + ", ".join(regressed[:10]) + more)
    lines.append(grep_line(result))
    return lines
