"""Your own audit adapter: a ready-to-copy verifier-audit adapter for a small shop-counter cart API.

Copy this file (and, to use the short name, ``conftest.py``) into the folder you run pytest from::

    pytest --audit-verifier=counter_audit:CounterAdapter     # module:Attr, no conftest needed
    pytest --audit-verifier=counter                          # the name conftest.py registers

Both exit 1: the checker of ``add-to-cart`` compares the ``{sku: qty}`` of the new cart lines
without counting them, so a run that adds the last line twice passes it (``extra`` and
``extra-ni`` are false accepts). README.md in this folder shows the full output and the fix.

The adapter is written only against the duck-typed protocol the audit reads:

* ``name``, ``ignore_fields`` (fields with no task meaning: the record ids) and ``policy`` (which
  calls sign in and which claim success; ``DEFAULT_POLICY`` says ``.../auth/token`` signs in and
  ``/supervisor/...`` claims success);
* ``describe()``: facts about the benchmark, stored in the ``--audit-out`` report;
* ``task_ids(split, limit)``: the task ids (this app has one split, so ``split`` is ignored);
* ``reference(task_id)``: run the task's own solution from a fresh start state and return its
  calls and its effect (the records each table gained, lost or changed);
* ``deliver(task_id, runs)``: per run, a fresh start state, replay the calls, read the end state
  back, and only then call the checker (``run.grade`` False: replay and read back, no checker).

A run is a list of API calls ``{"method", "url", "data"}``. The readback (``CounterApp.effect``)
must not use the checker: it reads the app's tables directly.
"""

from __future__ import annotations

import copy
from typing import Any

from pytest_agentbench.audit import DEFAULT_POLICY, Delivery, Reference

TOKEN = "counter-token"
PRICES = {"apple": 0.5, "bread": 2.2, "milk": 1.1, "soap": 3.0}


class CounterApp:
    """One fresh start state of the cart API. Calls return HTTP-like statuses."""

    def __init__(self) -> None:
        self.tables: dict[str, list[dict[str, Any]]] = {
            "counter.CartLine": [{"id": 1, "sku": "soap", "qty": 2}],
            "supervisor.Task": [{"id": 1, "status": None}],
        }
        self.next_id = 2
        self.start = copy.deepcopy(self.tables)

    def handle(self, call: dict[str, Any]) -> int:
        method, url = str(call.get("method", "")).lower(), str(call.get("url", ""))
        data = call.get("data") or {}
        if url.endswith("/auth/token") or method == "get":
            return 200
        if url == "/supervisor/complete_task":
            self.tables["supervisor.Task"][0]["status"] = data.get("status")
            return 200
        if data.get("access_token") != TOKEN:
            return 401
        lines = self.tables["counter.CartLine"]
        if method == "post" and url == "/counter/cart":
            if data.get("sku") not in PRICES:
                return 404
            lines.append({"id": self.next_id, "sku": data["sku"], "qty": data.get("qty", 1)})
            self.next_id += 1
            return 201
        if url.startswith("/counter/cart/"):
            line = next((r for r in lines if str(r["id"]) == url.rsplit("/", 1)[1]), None)
            if line is None:
                return 404
            if method == "patch":
                line["qty"] = data.get("qty", line["qty"])
                return 200
            if method == "delete":
                lines.remove(line)
                return 204
        return 404

    def effect(self) -> dict[str, dict[str, list[Any]]]:
        """The readback: records added, removed and updated since the start, matched by id."""
        out: dict[str, dict[str, list[Any]]] = {}
        for table, rows in self.tables.items():
            before = {r["id"]: r for r in self.start[table]}
            after = {r["id"]: r for r in rows}
            change = {
                "added": [copy.deepcopy(after[i]) for i in after if i not in before],
                "removed": [copy.deepcopy(before[i]) for i in before if i not in after],
                "updated": [{"before": copy.deepcopy(before[i]), "after": copy.deepcopy(after[i])}
                            for i in after if i in before and before[i] != after[i]],
            }
            if any(change.values()):
                out[table] = change
        return out

    def new_lines(self) -> list[dict[str, Any]]:
        start_ids = {r["id"] for r in self.start["counter.CartLine"]}
        return [r for r in self.tables["counter.CartLine"] if r["id"] not in start_ids]


def sign_in() -> dict[str, Any]:
    return {"method": "post", "url": "/counter/auth/token", "data": {"username": "ada", "password": "pw"}}


def claim() -> dict[str, Any]:
    return {"method": "post", "url": "/supervisor/complete_task", "data": {"status": "success"}}


def call(method: str, url: str, **data: Any) -> dict[str, Any]:
    return {"method": method, "url": url, "data": {"access_token": TOKEN, **data}}


# -- the tasks: each task's own solution and its checker -----------------------------------------
def solve_add_to_cart() -> list[dict[str, Any]]:
    return [sign_in(), call("get", "/counter/products"), call("post", "/counter/cart", sku="apple", qty=3),
            call("post", "/counter/cart", sku="bread", qty=1), claim()]


def check_add_to_cart(app: CounterApp) -> bool:
    # The loophole: a repeated line collapses in the dict, so a second bread line passes.
    return {line["sku"]: line["qty"] for line in app.new_lines()} == {"apple": 3, "bread": 1}


def solve_change_quantity() -> list[dict[str, Any]]:
    return [sign_in(), call("post", "/counter/cart", sku="milk", qty=1), call("patch", "/counter/cart/2", qty=2),
            claim()]


def check_change_quantity(app: CounterApp) -> bool:
    # Counts: exactly one new line, milk x 2.
    return [(line["sku"], line["qty"]) for line in app.new_lines()] == [("milk", 2)]


def solve_remove_soap() -> list[dict[str, Any]]:
    return [sign_in(), call("delete", "/counter/cart/1"), claim()]


def check_remove_soap(app: CounterApp) -> bool:
    return not any(line["sku"] == "soap" for line in app.tables["counter.CartLine"])


TASKS = {
    "add-to-cart": (solve_add_to_cart, check_add_to_cart),
    "change-quantity": (solve_change_quantity, check_change_quantity),
    "remove-soap": (solve_remove_soap, check_remove_soap),
}


class CounterAdapter:
    name = "counter"
    ignore_fields = frozenset({"id"})
    policy = DEFAULT_POLICY

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "synthetic": True, "tasks": len(TASKS)}

    def task_ids(self, split: str | None = None, limit: int | None = None) -> list[str]:
        ids = list(TASKS)
        return ids[:limit] if limit else ids

    def reference(self, task_id: str) -> Reference:
        solve, _ = TASKS[task_id]  # an unknown id raises KeyError: the task is "not audited"
        calls = solve()
        app = CounterApp()
        statuses = [app.handle(c) for c in calls]
        if any(s >= 400 for s in statuses):
            return Reference(task_id, calls, app.effect(), error=f"the solution got statuses {statuses}")
        return Reference(task_id, calls, app.effect())

    def deliver(self, task_id: str, runs: list[Any]) -> list[Delivery]:
        _, check = TASKS[task_id]
        out = []
        for run in runs:
            app = CounterApp()  # a fresh start state per run
            statuses = []
            for c in run.calls:
                try:
                    statuses.append(app.handle(c))
                except Exception:  # noqa: BLE001 - a call that raised counts as crashed (-1)
                    statuses.append(-1)
            effect = app.effect()  # read back before grading
            verdict = ("PASS" if check(app) else "FAIL") if run.grade else None
            out.append(Delivery(run.run_id, effect, verdict, statuses))
        return out
