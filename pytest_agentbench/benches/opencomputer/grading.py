"""From ``verify_task``'s per-check details to a verdict, scored as OpenComputer scores.

Why one place: both checkers (OpenComputer's own ``verify_task`` through ``harness.py``, and the
built-in one in ``checks.py``) answer the same details, and the rules that turn them into an item's
outcome must not differ between them:

* the score is OpenComputer's reward: checks passed over **all** checks, rounded to four places
  as its result files are; a verifier error counts as a failed check (``fail``, the default);
* the item passes only when every check passed;
* an LLM-judged check is judged by the configured judge (``--opencomputer-judge``) on its
  command's reply; without one it is **not evaluated**: it counts as failed in the score, as in
  OpenComputer (whose judge, absent, fails it), and an item whose other checks all passed cannot
  pass, so it is skipped as "not fully evaluated" with its score recorded;
* ``error`` (strict): any check whose verifier answered an error reply (``{"error": ...}``) makes
  the item an evaluation error instead.
"""

from __future__ import annotations

import json
from typing import Any

from pytest_agentbench.benches.opencomputer.checks import Judge
from pytest_agentbench.benches.opencomputer.tasks import check_kind
from pytest_agentbench.benchmark import EvaluationError
from pytest_agentbench.model import Criterion, Verdict


def error_reply(detail: dict[str, Any]) -> str | None:
    """The error a verifier answered for this check (``{"error": ...}``), else None."""
    result = detail.get("result")
    if isinstance(result, dict) and "error" in result:
        return " ".join(str(result["error"]).split())[:200] or "(empty error)"
    return None


def _short(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _judged(judge: Judge, check: dict[str, Any], output: Any) -> tuple[bool | None, str]:
    answer = judge(check, output)
    reason = ""
    if isinstance(answer, tuple):
        answer, reason = answer[0], str(answer[1]) if len(answer) > 1 else ""
    if answer is not None and not isinstance(answer, bool):
        raise TypeError(f"the judge returned {answer!r}; it must return True, False, None or (passed, reason)")
    return answer, reason


def criterion(check: dict[str, Any], detail: dict[str, Any], judge: Judge | None) -> Criterion:
    """One check's criterion, named by its description (else its command or prompt)."""
    name = str(check.get("description") or check.get("command") or check.get("prompt") or "check")
    kind = check_kind(check)
    result = detail.get("result")
    error = error_reply(detail)
    if kind == "llm":
        output = result if check.get("command") else None
        if judge is None:
            return Criterion(name=name, passed=None, expected=check.get("prompt"), actual=output,
                             detail="LLM-judged: not evaluated (no judge configured; --opencomputer-judge); "
                                    "counted as failed in the score, as OpenComputer counts it")
        try:
            passed, reason = _judged(judge, check, output)
        except Exception as exc:  # noqa: BLE001 - a broken judge is a checker fault
            raise EvaluationError(f"the judge failed on {name!r}: {type(exc).__name__}: {exc}") from None
        said = "passed" if passed else "not evaluated" if passed is None else "failed"
        return Criterion(name=name, passed=passed, expected=check.get("prompt"), actual=output,
                         detail="LLM-judged: " + (reason or said))
    passed = bool(detail.get("passed"))
    command = check.get("command", "")
    if kind == "eval":
        if "eval_error" in detail:
            how = f"eval raised {detail['eval_error']}"
        elif "eval_value" in detail:
            how = f"eval -> {detail['eval_value']}"
        else:
            how = f"eval -> {passed}"
        if error is not None:
            how += f" on the error reply {error!r}"
        return Criterion(name=name, passed=passed, expected=check.get("eval"), actual=result,
                         detail=f"{how}: {check.get('eval')}")
    key, expected, actual = check.get("key"), check.get("expected"), detail.get("actual")
    if error is not None and not passed:
        shown = f"verifier error: {error}"
    else:
        shown = f"{key}={_short(actual)}" + ("" if passed else f", expected {_short(expected)}")
    return Criterion(name=name, passed=passed, expected=expected, actual=actual, detail=f"{shown} ({command})")


def reward(criteria: list[Criterion]) -> float:
    """OpenComputer's reward: passed over all checks (unevaluated ones count as failed), 4 places."""
    return round(sum(1 for c in criteria if c.passed) / len(criteria), 4) if criteria else 0.0


def verdict(checks: list[dict[str, Any]], details: list[dict[str, Any]], *, judge: Judge | None = None,
            on_error: str = "fail", errors: list[str] | None = None) -> Verdict:
    """The item's verdict. ``errors``: one line per check whose verifier could not answer (derived
    from the error replies when not given); with ``on_error="error"`` any makes an
    ``EvaluationError``."""
    if errors is None:
        errors = [f"verification[{i}] `{c.get('command')}`: verifier error: {error_reply(d)}"
                  for i, (c, d) in enumerate(zip(checks, details, strict=True)) if error_reply(d) is not None]
    if errors and on_error == "error":
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise EvaluationError(f"{len(errors)} of {len(checks)} checks could not run: {errors[0]}{more}")
    criteria = [criterion(c, d, judge) for c, d in zip(checks, details, strict=True)]
    score = reward(criteria)
    passed = sum(1 for c in criteria if c.passed)
    unjudged = sum(1 for c in criteria if c.passed is None)
    failed = [c.name for c in criteria if c.passed is False]
    head = f"{passed} of {len(criteria)} checks passed (reward {score:.4f})"
    if failed:
        return Verdict(score=score, passed=False, criteria=criteria, reason=f"{head}; failed: " + "; ".join(failed))
    if unjudged:
        return Verdict(score=score, passed=None, criteria=criteria,
                       reason=f"not fully evaluated: {head}; {unjudged} LLM-judged check"
                              f"{'s' if unjudged > 1 else ''} not run (no judge: --opencomputer-judge); "
                              f"every other check passed")
    return Verdict(score=score, passed=True, criteria=criteria, reason=head)
