"""OpenComputer's own check results (``trajectory.json``'s ``verification_details``) as criteria,
and the reference harness's reward rule, so a grading here can be compared with one made there.

The reference writes, per task, ``checks_passed``, ``checks_total``, ``reward`` (rounded to four
places) and one entry per check::

    {"command", "key", "expected", "actual", "passed", "result"}             # key/expected
    {"command", "description", "passed", "result"}                          # eval
    {"command", "description", "judge": "llm", "passed", "reason", ...}      # LLM-judged

Its reward is passed over **all** checks, LLM-judged ones included (failed when no judge answered);
this plugin scores the same way (``grading.py``), and passes an item only when every check passed.
"""

from __future__ import annotations

from typing import Any

from pytest_agentbench.model import Criterion, Verdict


def detail_kind(entry: dict[str, Any]) -> str:
    if entry.get("judge") == "llm":
        return "llm"
    return "key" if "key" in entry else "eval"


def criteria_from_details(details: list[dict[str, Any]], *, llm: str = "as-recorded") -> list[Criterion]:
    """The entries as criteria. ``llm="not-evaluated"`` reads LLM-judged entries as this plugin
    does without a judge (``passed=None``) instead of as recorded."""
    if llm not in ("as-recorded", "not-evaluated"):
        raise ValueError(f"llm must be 'as-recorded' or 'not-evaluated', got {llm!r}")
    out: list[Criterion] = []
    for i, entry in enumerate(details):
        if not isinstance(entry, dict) or "passed" not in entry:
            raise ValueError(f"verification_details[{i}] is not a check result (no 'passed'): {entry!r}"[:200])
        kind = detail_kind(entry)
        name = str(entry.get("description") or entry.get("command") or f"check {i}")
        passed: bool | None = bool(entry["passed"])
        if kind == "llm":
            if llm == "not-evaluated":
                passed = None
            detail = "LLM-judged: " + str(entry.get("reason", ""))
            out.append(Criterion(name=name, passed=passed, detail=detail, actual=entry.get("result")))
        elif kind == "key":
            out.append(Criterion(name=name, passed=passed, expected=entry.get("expected"),
                                 actual=entry.get("actual"), detail=f"{entry['key']} ({entry.get('command', '')})"))
        else:
            out.append(Criterion(name=name, passed=passed, actual=entry.get("result"),
                                 detail=f"eval ({entry.get('command', '')})"))
    return out


def reference_reward(criteria: list[Criterion]) -> float:
    """The reference harness's reward: checks passed over all checks (an unevaluated check counts
    as failed), rounded as it rounds, to four places."""
    if not criteria:
        return 0.0
    return round(sum(1 for c in criteria if c.passed) / len(criteria), 4)


class ResultFileError(ValueError):
    """A reference result file that is not one, or whose counts disagree with its entries."""


def read_check_results(data: dict[str, Any], *, llm: str = "as-recorded") -> Verdict:
    """A reference result file (``trajectory.json`` or a check-results file) as a ``Verdict`` scored
    as the plugin scores (the reward; passed only when every check passed; with
    ``llm="not-evaluated"`` an item whose only misses are LLM-judged is not evaluated, None);
    ``ValueError`` when its counts disagree with its entries."""
    details = data.get("verification_details")
    if not isinstance(details, list):
        raise ResultFileError("not an OpenComputer result: no 'verification_details' list")
    criteria = criteria_from_details(details, llm="as-recorded")
    passed = sum(1 for c in criteria if c.passed)
    if "checks_passed" in data and data["checks_passed"] != passed:
        raise ResultFileError(f"checks_passed is {data['checks_passed']} but {passed} entries passed")
    if "checks_total" in data and data["checks_total"] != len(criteria):
        raise ResultFileError(f"checks_total is {data['checks_total']} but there are {len(criteria)} entries")
    if "reward" in data and abs(float(data["reward"]) - reference_reward(criteria)) > 5e-5:
        raise ResultFileError(f"reward is {data['reward']} but the entries give {reference_reward(criteria)}")
    if llm != "as-recorded":
        criteria = criteria_from_details(details, llm=llm)
    score = reference_reward(criteria)
    if any(c.passed is False for c in criteria):
        return Verdict(score=score, passed=False, criteria=criteria, reason="failed: " + ", ".join(
            c.name for c in criteria if c.passed is False))
    if any(c.passed is None for c in criteria):
        return Verdict(score=score, passed=None, criteria=criteria, reason="not fully evaluated")
    return Verdict(score=score, passed=True, criteria=criteria, reason="all checks passed")
