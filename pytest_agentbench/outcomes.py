"""The one place that maps an episode to a pytest outcome (DESIGN.md §3.6).

| episode                                         | pytest outcome                  | in success rate |
|-------------------------------------------------|---------------------------------|-----------------|
| checker passed                                  | passed                          | yes, success    |
| checker failed (score below the pass threshold) | failed, reason + criteria table | yes, failure    |
| agent error (raised, returned error, out of steps) | failed                       | yes, failure    |
| checker could not evaluate (passed is None)     | skipped "not evaluated: <why>"  | no              |
| infrastructure or evaluation error              | error (setup phase)             | no              |
| known failure (``--bench-baseline``, xfail marker)    | xfailed; a pass becomes XPASS   | by its verdict  |

A failure's first line names what failed and nothing else (``checker failed: <criterion>``,
``agent error: <error>``): it is the line short summaries (``-r``), pytest-sugar, JUnit's
``message`` and CI annotations show, cut to the terminal's width. Score, steps and the criteria
table follow on the next lines.

Projects override the mapping with the ``pytest_agentbench_verdict_to_outcome`` hook. The mapping is
pytest-free; ``plugin/outcomes.py`` turns an outcome into pytest's control flow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pytest_agentbench.text import render_table

if TYPE_CHECKING:
    from pytest_agentbench.model import EpisodeRecord

OutcomeKind = Literal["passed", "failed", "skipped", "error"]


@dataclass(frozen=True)
class Outcome:
    kind: OutcomeKind
    message: str = ""


def criteria_table(record: EpisodeRecord) -> str:
    if record.verdict is None or not record.verdict.criteria:
        return ""
    rows = []
    for c in record.verdict.criteria:
        mark = "pass" if c.passed else ("n/a" if c.passed is None else "FAIL")
        detail = c.detail or ("" if c.actual is None else f"actual={c.actual!r}")
        rows.append((c.name, mark, detail[:80]))
    return "\n".join(render_table(("criterion", "result", "detail"), rows, indent="  ", rule=False))


#: The longest first line a failure gets before it is cut (the rest follows on the next line).
HEADLINE_CHARS = 100


def _short(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= HEADLINE_CHARS else line[: HEADLINE_CHARS - 3].rstrip() + "..."


def failing_criterion(record: EpisodeRecord) -> str:
    """What failed: the failed criterion (with its detail when it is the only one), the failed
    criteria's names, else the first line of the checker's reason. The caller cuts it to fit."""
    verdict = record.verdict
    failed = [c for c in verdict.criteria if c.passed is False] if verdict is not None else []
    if len(failed) == 1:
        return f"{failed[0].name}: {failed[0].detail}" if failed[0].detail else failed[0].name
    if failed:
        return ", ".join(c.name for c in failed[:3]) + (f" and {len(failed) - 3} more" if len(failed) > 3 else "")
    reason = verdict.reason.strip().splitlines()[0] if verdict is not None and verdict.reason.strip() else ""
    return reason or "score below the pass threshold"


def default_outcome(record: EpisodeRecord) -> Outcome:
    """The built-in mapping from an episode record to an outcome."""
    steps = f"{record.num_steps} step{'s' if record.num_steps != 1 else ''}"
    if record.error_type in ("infrastructure", "evaluation"):
        return Outcome("error", f"{record.error_type} error: {record.error}")
    if record.error_type == "agent":
        head = f"agent error: {record.error}"
        details = f"after {steps}" + (f": {record.error}" if _short(head) != head else "")
        return Outcome("failed", f"{_short(head)}\n{details}")
    verdict = record.verdict
    if verdict is None or verdict.passed is None:
        why = verdict.reason if verdict is not None and verdict.reason else "the checker returned no verdict"
        return Outcome("skipped", f"not evaluated: {why}")
    if verdict.passed:
        return Outcome("passed", f"score {verdict.score:.3f} after {steps}")
    message = f"{_short('checker failed: ' + failing_criterion(record))}\nscore {verdict.score:.3f} after {steps}"
    if verdict.reason:
        message += f": {verdict.reason}"
    table = criteria_table(record)
    return Outcome("failed", message + ("\n" + table if table else ""))


def __getattr__(name: str) -> object:
    """``EpisodeFailed`` and ``raise_outcome`` live in the plugin layer (they are pytest's control
    flow); the names stay importable from here, where the docs long pointed, without loading pytest
    for the rest of this module."""
    if name in ("EpisodeFailed", "raise_outcome"):
        from pytest_agentbench.plugin import outcomes

        return getattr(outcomes, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
