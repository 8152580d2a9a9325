"""The toy benchmark: a small in-memory app with five tasks, their reference solutions and checkers.

Two of the five checkers compare the values of new records without counting them, so a repeated
write passes both; ``pytest --audit-verifier=toy`` finds exactly those. It is also the complete
example of an adapter: ``name``, ``ignore_fields``, ``policy``, ``describe``, ``task_ids``,
``reference`` and ``deliver``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from pytest_agentbench.audit.model import DEFAULT_POLICY, FAIL, PASS, Call, Delivery, Reference, Run

TOKEN = "toy-access-token"
CONTACTS = ("ana@example.com", "ben@example.com", "chen@example.com")
SONGS = frozenset({3, 4, 7, 9})
SHARES = {"ana@example.com": 12.5, "ben@example.com": 20.0, "chen@example.com": 7.5}


class ToyApp:
    """One fresh start state. Calls return HTTP-like statuses; records get ids ``len(rows) + 1``."""

    def __init__(self) -> None:
        self.tables: dict[str, list[dict[str, Any]]] = {
            "toy.PaymentRequest": [], "toy.Notification": [], "toy.QueueEntry": [], "toy.Like": [],
            "toy.Profile": [{"id": 1, "display_name": "Ada"}],
            "supervisor.Task": [{"id": 1, "status": None}],
        }
        self.start = copy.deepcopy(self.tables)

    def _insert(self, table: str, **values: Any) -> None:
        rows = self.tables[table]
        rows.append({"id": len(rows) + 1, **values})

    def handle(self, call: Call) -> int:
        method, url = str(call.get("method", "")).lower(), str(call.get("url", ""))
        data = call.get("data") or {}
        if url.endswith("/auth/token") or method == "get":
            return 200
        if url.lstrip("/").startswith("supervisor/complete_task"):
            self.tables["supervisor.Task"][0]["status"] = data.get("status")
            return 200
        if data.get("access_token") != TOKEN:
            return 401
        if method == "post" and url == "/toy/payment_requests":
            if data.get("user_email") not in CONTACTS:
                return 422
            self._insert("toy.PaymentRequest", receiver=data["user_email"], amount=data.get("amount"))
            self._insert("toy.Notification", to=data["user_email"], kind="request")
            return 201
        if method == "post" and url in ("/toy/queue", "/toy/likes"):
            song = data.get("song_id")
            if song not in SONGS:
                return 404
            if url == "/toy/likes":
                if any(row["song_id"] == song for row in self.tables["toy.Like"]):
                    return 409
                self._insert("toy.Like", song_id=song)
            else:
                self._insert("toy.QueueEntry", song_id=song)
            return 201
        if method == "patch" and url == "/toy/profile":
            self.tables["toy.Profile"][0]["display_name"] = data.get("display_name")
            return 200
        return 404

    def effect(self) -> dict[str, dict[str, list[Any]]]:
        """Records added, removed and updated since the start, matched by id."""
        out: dict[str, dict[str, list[Any]]] = {}
        for table, rows in self.tables.items():
            before = {r["id"]: r for r in self.start[table]}
            after = {r["id"]: r for r in rows}
            added = [after[i] for i in after if i not in before]
            removed = [before[i] for i in before if i not in after]
            updated = [{"before": before[i], "after": after[i]} for i in after if i in before and before[i] != after[i]]
            if added or removed or updated:
                out[table] = {"added": copy.deepcopy(added), "removed": copy.deepcopy(removed),
                              "updated": copy.deepcopy(updated)}
        return out

    def new(self, table: str) -> list[dict[str, Any]]:
        start_ids = {r["id"] for r in self.start[table]}
        return [r for r in self.tables[table] if r["id"] not in start_ids]


def _sign_in() -> Call:
    return {"method": "post", "url": "/toy/auth/token", "data": {"username": "ada", "password": "pw"}}


def _claim() -> Call:
    return {"method": "post", "url": "/supervisor/complete_task", "data": {"status": "success"}}


def _write(method: str, url: str, **data: Any) -> Call:
    return {"method": method, "url": url, "data": {"access_token": TOKEN, **data}}


def _split_bill_calls() -> list[Call]:
    return [_sign_in(), _write("get", "/toy/contacts"),
            *[_write("post", "/toy/payment_requests", user_email=e, amount=a) for e, a in SHARES.items()],
            _claim()]


def _requests_match(app: ToyApp) -> bool:
    return {r["receiver"]: r["amount"] for r in app.new("toy.PaymentRequest")} == SHARES


def _songs(app: ToyApp, table: str) -> list[Any]:
    return [r["song_id"] for r in app.new(table)]


TASKS: dict[str, tuple[Callable[[], list[Call]], Callable[[ToyApp], bool]]] = {
    # Compares {receiver: amount} of the new requests: a duplicate collapses in the dict (loophole).
    "split-bill": (_split_bill_calls, _requests_match),
    # The same, and counts the requests.
    "split-bill-counted": (_split_bill_calls,
                           lambda app: _requests_match(app) and len(app.new("toy.PaymentRequest")) == 3),
    # Compares the queue as a set: a song queued twice passes (loophole).
    "queue-songs": (lambda: [_sign_in(), _write("post", "/toy/queue", song_id=7),
                             _write("post", "/toy/queue", song_id=9), _claim()],
                    lambda app: set(_songs(app, "toy.QueueEntry")) == {7, 9}),
    # Set and count; a repeated like is refused by the app (409), so repeating it changes nothing.
    "like-songs": (lambda: [_sign_in(), _write("post", "/toy/likes", song_id=3),
                            _write("post", "/toy/likes", song_id=4), _claim()],
                   lambda app: set(_songs(app, "toy.Like")) == {3, 4} and len(_songs(app, "toy.Like")) == 2),
    # The new name, and no unrelated writes.
    "rename-profile": (lambda: [_sign_in(), _write("patch", "/toy/profile", display_name="Ada Lovelace"), _claim()],
                       lambda app: app.tables["toy.Profile"][0]["display_name"] == "Ada Lovelace"
                       and not app.new("toy.PaymentRequest") and not app.new("toy.QueueEntry")),
}


class ToyAdapter:
    name = "toy"
    ignore_fields = frozenset({"id"})
    policy = DEFAULT_POLICY

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "synthetic": True, "tasks": len(TASKS)}

    def task_ids(self, split: str | None = None, limit: int | None = None) -> list[str]:
        ids = list(TASKS)
        return ids[:limit] if limit else ids

    def has_task(self, task_id: str) -> bool:
        return task_id in TASKS

    def reference(self, task_id: str) -> Reference:
        if task_id not in TASKS:
            raise KeyError(f"unknown toy task {task_id!r}")
        solution, _ = TASKS[task_id]
        calls = solution()
        app = ToyApp()
        for call in calls:
            app.handle(call)
        return Reference(task_id, calls, app.effect())

    def deliver(self, task_id: str, runs: Sequence[Run]) -> list[Delivery]:
        _, check = TASKS[task_id]
        out = []
        for run in runs:
            app = ToyApp()  # each run from a fresh start state
            statuses = [app.handle(call) for call in run.calls]
            effect = app.effect()  # read back before grading
            verdict = (PASS if check(app) else FAIL) if run.grade else None
            out.append(Delivery(run.run_id, effect, verdict, statuses))
        return out
