"""The audit's data: calls, runs, deliveries, the call policy and per-run results.

The shapes follow the reference tool's ``verifier_audit`` module so that an adapter written for it
runs unchanged: the engine reads these objects by attribute (duck typing), so the reference tool's
own ``Reference`` and ``Delivery`` classes work as well as these.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: One API call: ``{"method": "post", "url": "/toy/queue", "data": {...}}``.
Call = dict[str, Any]
#: table -> {"added": [record], "removed": [record], "updated": [{"before": r, "after": r}]}
Effect = dict[str, dict[str, list[Any]]]

PASS = "PASS"
FAIL = "FAIL"


@dataclass
class Reference:
    """A correct run of a task (the benchmark's own solution) and what it changed."""

    task_id: str
    calls: list[Call]
    effect: Effect
    error: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class Run:
    """One run to deliver. ``grade=False``: replay and read back without calling the checker."""

    run_id: str
    calls: list[Call]
    grade: bool = True


@dataclass
class Delivery:
    """The result of delivering one run: its end state, the checker's verdict and call statuses.

    ``statuses`` has one entry per call: an HTTP-like status, or -1 when the call raised.
    """

    run_id: str
    effect: Effect = field(default_factory=dict)
    verdict: str | None = None
    statuses: list[int] = field(default_factory=list)
    error: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def crashed_calls(self) -> int:
        return sum(1 for s in self.statuses if s == -1)


def _default_is_auth(call: Mapping[str, Any]) -> bool:
    return "/auth/token" in str(call.get("url", ""))


def _default_is_claim(call: Mapping[str, Any]) -> bool:
    return str(call.get("url", "")).lstrip("/").startswith("supervisor")


@dataclass(frozen=True)
class CallPolicy:
    """Which calls sign in, which claim success, and which fields an edit must not touch.

    The defaults follow AppWorld: sign-in is ``/auth/token``, the success claim is the supervisor
    API, and credentials are protected.
    """

    is_auth: Callable[[Mapping[str, Any]], bool] = _default_is_auth
    is_claim: Callable[[Mapping[str, Any]], bool] = _default_is_claim
    protected_fields: frozenset[str] = frozenset({"access_token", "username", "password"})

    def is_effectful(self, call: Mapping[str, Any]) -> bool:
        """A write: not a GET, not a sign-in, not a success claim."""
        return str(call.get("method", "")).lower() != "get" and not self.is_auth(call) and not self.is_claim(call)


DEFAULT_POLICY = CallPolicy()

_DIGITS = re.compile(r"\d+")


def endpoint(call: Mapping[str, Any]) -> tuple[str, str]:
    """The call's endpoint with ids abstracted: ``("post", "/users/{id}/likes")``."""
    return str(call.get("method", "")).lower(), _DIGITS.sub("{id}", str(call.get("url", "")))


@dataclass
class Edit:
    """What an operator did to a run: the edited calls, or a refusal and why."""

    operator: str
    calls: list[Call] | None
    refusal: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


RUN_CLASS_TEXT = {
    "killed": "the verifier failed the edited run.",
    "false-accept": "the verifier passed the edited run, and the end state (read back before grading) "
                    "differs from the reference run's.",
    "equivalent": "the edit left the end state unchanged, so the pass is correct.",
    "unconfirmed": "the verifier passed the edited run and its end state differs, but more of its calls "
                   "crashed than in the unedited run, so the difference may come from the crash.",
    "refused": "the task gave the operator nothing to edit.",
    "invalid": "the unedited run was not delivered, failed the verifier, or did not reproduce the "
               "reference end state, so no edit of this task can be judged.",
    "not-delivered": "the edited run could not be delivered or graded (an error).",
}


@dataclass
class RunResult:
    """The one class an edited run gets, with the effect diff behind it (counts and field names,
    never values)."""

    task_id: str
    operator: str
    run_class: str
    verdict: str | None = None
    shape: str | None = None
    reason: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    summary: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id, "operator": self.operator, "run_class": self.run_class,
            "verdict": self.verdict, "shape": self.shape, "reason": self.reason, "detail": self.detail,
            "tables": self.tables, "summary": self.summary,
        }
