"""The six mutation operators. Each makes one edit to a correct run, or refuses with a reason.

| operator    | class         | edit                                                              |
|-------------|---------------|-------------------------------------------------------------------|
| claim-only  | postcondition | keep only sign-in and success-claim calls: report success, write nothing |
| omit        | postcondition | drop the last write                                               |
| partial     | postcondition | of the most repeated write endpoint, keep only the first call     |
| wrong-value | postcondition | change one value in the last write                                |
| extra       | frame         | repeat the last write                                             |
| extra-ni    | frame         | repeat the newest write whose repeat changes the end state        |
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from pytest_agentbench.audit.effects import Ignore, compare
from pytest_agentbench.audit.model import Call, CallPolicy, Delivery, Edit, Run, endpoint

OPERATORS: tuple[str, ...] = ("claim-only", "omit", "partial", "wrong-value", "extra", "extra-ni")
OPERATOR_CLASS: dict[str, str] = {
    "claim-only": "postcondition", "omit": "postcondition", "partial": "postcondition",
    "wrong-value": "postcondition", "extra": "frame", "extra-ni": "frame",
}

#: Delivers runs without grading, for the extra-ni scan.
Scanner = Callable[[Sequence[Run]], Sequence[Any]]


def _copied(value: Any) -> Any:
    """A deep copy of a run's JSON data (dicts, lists, tuples, scalars), for the adapter to keep:
    made by hand, as ``copy.deepcopy``'s memo and dispatch cost several times more per value
    and an audit copies every run once per operator. Anything else goes to ``copy.deepcopy``."""
    kind = type(value)
    if kind is dict:
        return {k: _copied(v) for k, v in value.items()}
    if kind is list:
        return [_copied(v) for v in value]
    if kind in (str, int, float, bool) or value is None:
        return value
    if kind is tuple:
        return tuple(_copied(v) for v in value)
    return copy.deepcopy(value)


def write_indexes(calls: Sequence[Call], policy: CallPolicy) -> list[int]:
    return [i for i, call in enumerate(calls) if policy.is_effectful(call)]


def _base_detail(calls: Sequence[Call], writes: list[int]) -> dict[str, Any]:
    return {"calls": len(calls), "writes": len(writes)}


def _claim_only(calls: list[Call], writes: list[int], policy: CallPolicy) -> Edit:
    kept = [c for c in calls if policy.is_auth(c) or policy.is_claim(c)]
    if not any(policy.is_claim(c) for c in calls):
        return Edit("claim-only", None, "NO_CLAIM_CALL", _base_detail(calls, writes))
    return Edit("claim-only", _copied(kept), None, {**_base_detail(calls, writes), "kept": len(kept)})


def _omit(calls: list[Call], writes: list[int], policy: CallPolicy) -> Edit:
    last = writes[-1]
    edited = _copied(calls[:last] + calls[last + 1:])
    return Edit("omit", edited, None, {**_base_detail(calls, writes), "dropped": calls[last].get("url"),
                                       "endpoint": list(endpoint(calls[last]))})


def _partial(calls: list[Call], writes: list[int], policy: CallPolicy) -> Edit:
    groups: dict[tuple[str, str], list[int]] = {}
    for i in writes:
        groups.setdefault(endpoint(calls[i]), []).append(i)
    repeated = [idx for idx in groups.values() if len(idx) >= 2]
    if not repeated:
        return Edit("partial", None, "NO_REPEATED_WRITE", _base_detail(calls, writes))
    chosen = max(repeated, key=lambda idx: (len(idx), idx[-1]))
    drop = set(chosen[1:])
    edited = _copied([c for i, c in enumerate(calls) if i not in drop])
    return Edit("partial", edited, None, {**_base_detail(calls, writes), "dropped": len(drop),
                                          "endpoint": list(endpoint(calls[chosen[0]]))})


def _change_value(data: Any, protected: frozenset[str]) -> tuple[Any, str | None]:
    """Pass 1: the first string longer than 3 characters gets "x" ("y" if it ends in x).
    Pass 2: the first bool is flipped, or the first number gets +1. Protected fields are skipped."""
    if not isinstance(data, dict):
        return data, None
    edited = _copied(data)
    for key, value in edited.items():
        if key in protected:
            continue
        if isinstance(value, str) and len(value) > 3:
            edited[key] = value + ("y" if value.endswith("x") else "x")
            return edited, key
    for key, value in edited.items():
        if key in protected:
            continue
        if isinstance(value, bool):
            edited[key] = not value
            return edited, key
        if isinstance(value, (int, float)):
            edited[key] = value + 1
            return edited, key
    return data, None


def _wrong_value(calls: list[Call], writes: list[int], policy: CallPolicy) -> Edit:
    last = writes[-1]
    data, changed = _change_value(calls[last].get("data"), policy.protected_fields)
    if changed is None:
        return Edit("wrong-value", None, "NO_CHANGEABLE_VALUE", _base_detail(calls, writes))
    edited = _copied(calls)
    edited[last] = {**edited[last], "data": data}
    return Edit("wrong-value", edited, None, {**_base_detail(calls, writes),
                                              "changed": {"url": calls[last].get("url"), "field": changed}})


def repeat_at(calls: Sequence[Call], index: int) -> list[Call]:
    """The run with a copy of call ``index`` inserted right after it."""
    edited: list[Call] = _copied(list(calls))
    edited.insert(index + 1, _copied(calls[index]))
    return edited


def _extra(calls: list[Call], writes: list[int], policy: CallPolicy) -> Edit:
    last = writes[-1]
    return Edit("extra", repeat_at(calls, last), None, {**_base_detail(calls, writes),
                                                        "repeated": {"index": last, "url": calls[last].get("url")}})


def _extra_ni(calls: list[Call], writes: list[int], policy: CallPolicy, scan: Scanner | None, ignore: Ignore) -> Edit:
    detail = _base_detail(calls, writes)
    if not writes:
        return Edit("extra-ni", None, "NO_WRITE", detail)
    newest: dict[tuple[str, str], int] = {}
    for i in writes:
        newest[endpoint(calls[i])] = i
    candidates = sorted(newest.values(), reverse=True)
    if scan is None:
        return Edit("extra-ni", None, "SCAN_FAILED", {**detail, "error": "no scanner"})
    runs = [Run("scan-control", _copied(calls), grade=False)]
    runs += [Run(f"scan-repeat-{i}", repeat_at(calls, i), grade=False) for i in candidates]
    try:
        delivered = {getattr(d, "run_id", None): d for d in scan(runs)}
    except Exception as exc:  # noqa: BLE001 - a failed scan is a refusal with its reason
        return Edit("extra-ni", None, "SCAN_FAILED", {**detail, "error": f"{type(exc).__name__}: {exc}"})
    control = delivered.get("scan-control")
    if control is None or getattr(control, "error", None):
        why = getattr(control, "error", None) or "no scan-control delivery"
        return Edit("extra-ni", None, "SCAN_FAILED", {**detail, "error": str(why)})
    tested: list[dict[str, Any]] = []
    for i in candidates:
        result: Delivery | None = delivered.get(f"scan-repeat-{i}")
        if result is None or getattr(result, "error", None):
            tested.append({"index": i, "error": str(getattr(result, "error", None) or "not delivered")})
            continue
        changes = not compare(control.effect, result.effect, ignore).same
        tested.append({"index": i, "changes_state": changes})
        if changes:
            return Edit("extra-ni", repeat_at(calls, i), None, {**detail,
                                                                "repeated": {"index": i, "url": calls[i].get("url")},
                                                                "tested": tested})
    return Edit("extra-ni", None, "ALL_REPEATS_IDEMPOTENT", {**detail, "tested": tested})


def apply_operator(
    calls: Sequence[Call],
    operator: str,
    policy: CallPolicy,
    *,
    scan: Scanner | None = None,
    ignore: Ignore | None = None,
) -> Edit:
    """Apply one operator to a run. ``scan`` delivers runs without grading (needed by extra-ni)."""
    if operator not in OPERATOR_CLASS:
        raise ValueError(f"unknown operator {operator!r}; known: {', '.join(OPERATORS)}")
    calls = list(calls)
    writes = write_indexes(calls, policy)
    if operator == "extra-ni":
        return _extra_ni(calls, writes, policy, scan, ignore or Ignore())
    if not writes:
        return Edit(operator, None, "NO_WRITE", _base_detail(calls, writes))
    return {"claim-only": _claim_only, "omit": _omit, "partial": _partial, "wrong-value": _wrong_value,
            "extra": _extra}[operator](calls, writes, policy)
