"""The verifier-audit engine without pytest items: effect comparison, the six operators and their
refusals, the classification order, the one-batch-per-task delivery, and duck-typed adapters.

The expected behaviour is the reference tool's (research notes ``openadapt-evals.md`` §2.1-§2.3).
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from pytest_agentbench.audit import (
    DEFAULT_POLICY,
    OPERATOR_CLASS,
    OPERATORS,
    AuditResult,
    CallPolicy,
    Delivery,
    Reference,
    Run,
    apply_operator,
    audit,
    audit_task,
)
from pytest_agentbench.audit.adapters.toy import ToyAdapter
from pytest_agentbench.audit.effects import EffectDiff, Ignore, compare, normalize
from pytest_agentbench.audit.engine import SCHEMA
from pytest_agentbench.audit.model import endpoint
from pytest_agentbench.audit.operators import repeat_at, write_indexes

# -- helpers -------------------------------------------------------------------------------------

SIGN_IN = {"method": "post", "url": "/app/auth/token", "data": {"username": "ada", "password": "pw"}}
CLAIM = {"method": "post", "url": "/supervisor/complete_task", "data": {"status": "success"}}


def call(method: str, url: str, **data: Any) -> dict[str, Any]:
    return {"method": method, "url": url, "data": {"access_token": "tok", **data}}


def added(table: str, *records: dict[str, Any]) -> dict[str, dict[str, list[Any]]]:
    return {table: {"added": list(records), "removed": [], "updated": []}}


def cmp(control: Any, mutant: Any, *ignore: str) -> EffectDiff:
    return compare(control, mutant, Ignore(ignore))


# -- effects: compare ------------------------------------------------------------------------------

class TestCompare:
    def test_equal_effects_are_same(self):
        effect = added("t", {"id": 1, "v": 1})
        diff = cmp(effect, copy.deepcopy(effect))
        assert diff.shape == "same" and diff.same and diff.tables == {}
        assert diff.summarize() == "no change"

    def test_empty_and_none_effects_are_same(self):
        assert cmp({}, None).same
        assert cmp(None, {}).same

    def test_a_strict_superset_adds(self):
        diff = cmp(added("t", {"v": 1}), added("t", {"v": 1}, {"v": 2}))
        assert diff.shape == "adds"
        assert diff.tables == {"t": {"+": 1, "-": 0, "changed": 0, "fields": []}}
        assert diff.summarize() == "t +1"

    def test_a_strict_subset_removes(self):
        diff = cmp(added("t", {"v": 1}, {"v": 2}), added("t", {"v": 1}))
        assert diff.shape == "removes"
        assert diff.tables == {"t": {"+": 0, "-": 1, "changed": 0, "fields": []}}
        assert diff.summarize() == "t -1"

    def test_some_of_each_changes(self):
        diff = cmp(added("t", {"a": 1, "b": 1}), added("t", {"a": 1, "b": 2}))
        assert diff.shape == "changes"
        assert diff.tables == {"t": {"+": 0, "-": 0, "changed": 1, "fields": ["b"]}}
        assert diff.summarize() == "t: b changed"

    def test_a_duplicate_record_counts_twice(self):
        record = {"receiver": "ana", "amount": 12.5}
        diff = cmp(added("toy.PaymentRequest", record), added("toy.PaymentRequest", record, dict(record)))
        assert diff.shape == "adds"
        assert diff.summarize() == "toy.PaymentRequest +1"
        # Twice versus three times is still a difference of one.
        diff = cmp(added("t", record, record), added("t", record, record, record))
        assert diff.tables["t"]["+"] == 1

    def test_repeated_write_on_two_tables_summarizes_sorted(self):
        control = {"toy.PaymentRequest": {"added": [{"id": 1, "receiver": "c"}]},
                   "toy.Notification": {"added": [{"id": 1, "to": "c"}]}}
        mutant = {"toy.PaymentRequest": {"added": [{"id": 1, "receiver": "c"}, {"id": 2, "receiver": "c"}]},
                  "toy.Notification": {"added": [{"id": 1, "to": "c"}, {"id": 2, "to": "c"}]}}
        assert cmp(control, mutant).summarize() == "toy.Notification +1, toy.PaymentRequest +1"
        assert cmp(control, mutant, "id").summarize() == "toy.Notification +1, toy.PaymentRequest +1"

    def test_ignored_field_in_any_table(self):
        assert cmp(added("t", {"id": 1, "v": 1}), added("t", {"id": 2, "v": 1}), "id").same
        assert not cmp(added("t", {"id": 1, "v": 1}), added("t", {"id": 2, "v": 1})).same

    def test_ignored_table_field_with_a_dotted_table_name(self):
        control = {"toy.Profile": {"added": [{"name": "a", "note": "x"}]},
                   "toy.Other": {"added": [{"name": "a", "note": "x"}]}}
        mutant = {"toy.Profile": {"added": [{"name": "a", "note": "y"}]},
                  "toy.Other": {"added": [{"name": "a", "note": "y"}]}}
        diff = cmp(control, mutant, "toy.Profile.note")
        # Only toy.Profile ignores note; toy.Other still differs in it.
        assert diff.shape == "changes"
        assert diff.tables == {"toy.Other": {"+": 0, "-": 0, "changed": 1, "fields": ["note"]}}
        assert cmp(control, mutant, "toy.Profile.note", "toy.Other.note").same
        # A scoped entry does not act as a field ignored everywhere.
        assert not cmp(added("note", {"note": 1}), added("note", {"note": 2}), "toy.Profile.note").same

    def test_update_dropped_when_only_ignored_fields_change(self):
        only_ts = {"t": {"updated": [{"before": {"id": 1, "ts": 1, "v": "a"},
                                      "after": {"id": 1, "ts": 2, "v": "a"}}]}}
        assert normalize(only_ts, Ignore(["ts"])) == {}
        assert cmp({}, only_ts, "ts").same
        assert not cmp({}, only_ts).same
        real = {"t": {"updated": [{"before": {"id": 1, "ts": 1, "v": "a"}, "after": {"id": 1, "ts": 2, "v": "b"}}]}}
        assert cmp({}, real, "ts").shape == "adds"

    def test_updates_compare_by_after_image(self):
        control = {"spotify.MusicPlayer": {"updated": [{"before": {"id": 1, "queue_song_ids": "[]"},
                                                        "after": {"id": 1, "queue_song_ids": "[7]"}}]}}
        mutant = {"spotify.MusicPlayer": {"updated": [{"before": {"id": 1, "queue_song_ids": "[]"},
                                                       "after": {"id": 1, "queue_song_ids": "[7, 7]"}}]}}
        diff = cmp(control, mutant, "id")
        assert diff.shape == "changes"
        assert diff.summarize() == "spotify.MusicPlayer: queue_song_ids changed"

    def test_extra_record_pairs_with_the_closest_control_record(self):
        control = added("t", {"a": 1, "b": 1, "c": 1}, {"a": 9, "b": 9, "c": 9})
        mutant = added("t", {"a": 1, "b": 2, "c": 1})
        diff = cmp(control, mutant)
        assert diff.shape == "changes"
        # Paired with {a:1, b:1, c:1} (one differing field), not {a:9, ...} (three): b changed, one removed.
        assert diff.tables == {"t": {"+": 0, "-": 1, "changed": 1, "fields": ["b"]}}
        assert diff.summarize() == "t -1, t: b changed"

    def test_field_names_collect_over_pairs_and_are_sorted(self):
        control = added("t", {"a": 1, "b": 1, "k": 1}, {"a": 5, "b": 5, "k": 2})
        mutant = added("t", {"a": 2, "b": 1, "k": 1}, {"a": 5, "b": 6, "k": 2})
        diff = cmp(control, mutant)
        assert diff.tables["t"] == {"+": 0, "-": 0, "changed": 2, "fields": ["a", "b"]}
        assert diff.summarize() == "t: a, b changed"

    def test_added_and_removed_kinds_do_not_pair(self):
        control = {"t": {"added": [{"v": 1}]}}
        mutant = {"t": {"removed": [{"v": 1}]}}
        diff = cmp(control, mutant)
        assert diff.shape == "changes"
        assert diff.tables["t"] == {"+": 1, "-": 1, "changed": 0, "fields": []}

    def test_the_diff_holds_no_values(self):
        control = added("t", {"email": "ana@example.com", "amount": 12.5})
        mutant = added("t", {"email": "ana@example.comx", "amount": 12.5}, {"email": "secret@x", "amount": 99})
        diff = cmp(control, mutant)
        text = repr(diff.tables) + diff.summarize()
        for value in ("ana@example.com", "12.5", "secret@x", "99"):
            assert value not in text


# -- operators -----------------------------------------------------------------------------------

SPLIT = [SIGN_IN, call("get", "/toy/contacts"),
         call("post", "/toy/payment_requests", user_email="ana@example.com", amount=12.5),
         call("post", "/toy/payment_requests", user_email="ben@example.com", amount=20.0),
         call("post", "/toy/payment_requests", user_email="chen@example.com", amount=7.5),
         CLAIM]


def test_policy_defaults_follow_appworld():
    assert DEFAULT_POLICY.is_auth({"url": "/spotify/auth/token"})
    assert DEFAULT_POLICY.is_claim({"url": "supervisor/complete_task"})
    assert DEFAULT_POLICY.is_claim({"url": "/supervisor/x"})
    assert DEFAULT_POLICY.protected_fields == {"access_token", "username", "password"}
    assert not DEFAULT_POLICY.is_effectful({"method": "GET", "url": "/x"})
    assert not DEFAULT_POLICY.is_effectful(SIGN_IN) and not DEFAULT_POLICY.is_effectful(CLAIM)
    assert DEFAULT_POLICY.is_effectful({"method": "DELETE", "url": "/x/1"})
    assert write_indexes(SPLIT, DEFAULT_POLICY) == [2, 3, 4]
    assert endpoint({"method": "POST", "url": "/users/12/likes/345"}) == ("post", "/users/{id}/likes/{id}")


def test_operator_table():
    assert OPERATORS == ("claim-only", "omit", "partial", "wrong-value", "extra", "extra-ni")
    assert [OPERATOR_CLASS[o] for o in OPERATORS] == ["postcondition"] * 4 + ["frame"] * 2


def test_unknown_operator_is_a_value_error():
    with pytest.raises(ValueError, match="unknown operator 'nope'"):
        apply_operator(SPLIT, "nope", DEFAULT_POLICY)


@pytest.mark.parametrize("operator", ["claim-only", "omit", "partial", "wrong-value", "extra", "extra-ni"])
def test_no_write_refuses(operator):
    edit = apply_operator([SIGN_IN, call("get", "/x"), CLAIM], operator, DEFAULT_POLICY, scan=lambda runs: [])
    assert edit.calls is None and edit.refusal == "NO_WRITE"


@pytest.mark.parametrize("operator", [o for o in OPERATORS if o != "extra-ni"])
def test_operators_never_mutate_the_input(operator):
    calls = copy.deepcopy(SPLIT)
    edit = apply_operator(calls, operator, DEFAULT_POLICY)
    assert calls == SPLIT
    if edit.calls:
        for edited in edit.calls:
            assert all(edited is not original for original in calls)
            assert all(edited.get("data") is not original.get("data") for original in calls)


class TestClaimOnly:
    def test_keeps_auth_and_claim_calls_in_order(self):
        edit = apply_operator(SPLIT, "claim-only", DEFAULT_POLICY)
        assert edit.refusal is None
        assert edit.calls == [SIGN_IN, CLAIM]
        assert edit.detail == {"calls": 6, "writes": 3, "kept": 2}

    def test_no_claim_call_refuses(self):
        edit = apply_operator(SPLIT[:-1], "claim-only", DEFAULT_POLICY)
        assert edit.calls is None and edit.refusal == "NO_CLAIM_CALL"

    def test_custom_policy_decides_what_a_claim_is(self):
        policy = CallPolicy(is_claim=lambda c: c.get("url") == "/done")
        calls = [call("post", "/a"), {"method": "post", "url": "/done", "data": {}}]
        assert apply_operator(calls, "claim-only", policy).calls == [calls[1]]


class TestOmit:
    def test_drops_the_last_write(self):
        edit = apply_operator(SPLIT, "omit", DEFAULT_POLICY)
        assert edit.calls == SPLIT[:4] + SPLIT[5:]
        assert edit.detail["dropped"] == "/toy/payment_requests"
        assert edit.detail["endpoint"] == ["post", "/toy/payment_requests"]

    def test_the_last_write_not_the_last_call(self):
        calls = [SIGN_IN, call("post", "/a"), call("get", "/b"), CLAIM]
        assert apply_operator(calls, "omit", DEFAULT_POLICY).calls == [SIGN_IN, calls[2], CLAIM]


class TestPartial:
    def test_keeps_the_first_call_of_the_most_repeated_endpoint(self):
        edit = apply_operator(SPLIT, "partial", DEFAULT_POLICY)
        assert edit.calls == SPLIT[:3] + SPLIT[5:]
        assert edit.detail["dropped"] == 2
        assert edit.detail["endpoint"] == ["post", "/toy/payment_requests"]

    def test_the_largest_group_wins_over_a_later_one(self):
        a1, a2, a3 = call("post", "/a/1"), call("post", "/a/2"), call("post", "/a/3")
        b1, b2 = call("post", "/b"), call("post", "/b")
        calls = [SIGN_IN, a1, a2, a3, b1, b2, CLAIM]
        edit = apply_operator(calls, "partial", DEFAULT_POLICY)
        assert edit.calls == [SIGN_IN, a1, b1, b2, CLAIM]
        assert edit.detail["endpoint"] == ["post", "/a/{id}"]

    def test_a_tie_goes_to_the_group_with_the_latest_index(self):
        a1, b1, a2, b2 = call("post", "/a/1"), call("put", "/b"), call("post", "/a/2"), call("put", "/b", n=2)
        calls = [SIGN_IN, a1, b1, a2, b2, CLAIM]
        edit = apply_operator(calls, "partial", DEFAULT_POLICY)
        assert edit.detail["endpoint"] == ["put", "/b"]
        assert edit.calls == [SIGN_IN, a1, b1, a2, CLAIM]
        # Swap which group ends last and the choice follows.
        calls = [SIGN_IN, b1, a1, b2, a2, CLAIM]
        edit = apply_operator(calls, "partial", DEFAULT_POLICY)
        assert edit.detail["endpoint"] == ["post", "/a/{id}"]
        assert edit.calls == [SIGN_IN, b1, a1, b2, CLAIM]

    def test_method_is_part_of_the_endpoint(self):
        calls = [SIGN_IN, call("post", "/a"), call("put", "/a"), CLAIM]
        assert apply_operator(calls, "partial", DEFAULT_POLICY).refusal == "NO_REPEATED_WRITE"

    def test_no_repeated_write_refuses(self):
        calls = [SIGN_IN, call("patch", "/toy/profile", display_name="Ada Lovelace"), CLAIM]
        edit = apply_operator(calls, "partial", DEFAULT_POLICY)
        assert edit.calls is None and edit.refusal == "NO_REPEATED_WRITE"


class TestWrongValue:
    def test_pass_one_appends_x_to_the_first_long_string_skipping_protected(self):
        edit = apply_operator(SPLIT, "wrong-value", DEFAULT_POLICY)
        assert edit.calls[4]["data"] == {"access_token": "tok", "user_email": "chen@example.comx", "amount": 7.5}
        assert edit.calls[:4] + edit.calls[5:] == SPLIT[:4] + SPLIT[5:]
        assert edit.detail["changed"] == {"url": "/toy/payment_requests", "field": "user_email"}

    def test_a_string_ending_in_x_gets_y(self):
        calls = [call("post", "/a", name="Rex Fox")]
        assert apply_operator(calls, "wrong-value", DEFAULT_POLICY).calls[0]["data"]["name"] == "Rex Foxy"

    def test_short_strings_are_skipped_in_pass_one(self):
        calls = [call("post", "/a", code="abc", n=1, word="long enough")]
        edit = apply_operator(calls, "wrong-value", DEFAULT_POLICY)
        assert edit.calls[0]["data"] == {"access_token": "tok", "code": "abc", "n": 1, "word": "long enoughx"}

    def test_pass_two_bumps_the_first_number(self):
        calls = [call("post", "/toy/queue", song_id=9, other=1)]
        edit = apply_operator(calls, "wrong-value", DEFAULT_POLICY)
        assert edit.calls[0]["data"] == {"access_token": "tok", "song_id": 10, "other": 1}
        assert edit.detail["changed"]["field"] == "song_id"
        calls = [call("post", "/a", amount=7.5)]
        assert apply_operator(calls, "wrong-value", DEFAULT_POLICY).calls[0]["data"]["amount"] == 8.5

    def test_pass_two_flips_the_first_bool_in_dict_order(self):
        calls = [call("post", "/a", code="ab", flag=True, n=3)]
        edit = apply_operator(calls, "wrong-value", DEFAULT_POLICY)
        assert edit.calls[0]["data"] == {"access_token": "tok", "code": "ab", "flag": False, "n": 3}
        calls = [call("post", "/a", n=3, flag=False)]
        assert apply_operator(calls, "wrong-value", DEFAULT_POLICY).calls[0]["data"] == {
            "access_token": "tok", "n": 4, "flag": False}

    def test_protected_fields_are_never_touched(self):
        calls = [{"method": "post", "url": "/a", "data": {"password": "hunter2", "username": "ada-lovelace",
                                                           "access_token": "toy-access-token", "n": 1}}]
        edit = apply_operator(calls, "wrong-value", DEFAULT_POLICY)
        assert edit.calls[0]["data"] == {"password": "hunter2", "username": "ada-lovelace",
                                         "access_token": "toy-access-token", "n": 2}
        policy = CallPolicy(protected_fields=frozenset({"n"}))
        assert apply_operator(calls, "wrong-value", policy).calls[0]["data"]["password"] == "hunter2x"

    def test_it_edits_the_last_write(self):
        calls = [call("post", "/a", name="first write"), call("post", "/b", name="second write"), CLAIM]
        edit = apply_operator(calls, "wrong-value", DEFAULT_POLICY)
        assert edit.calls[0] == calls[0]
        assert edit.calls[1]["data"]["name"] == "second writex"

    @pytest.mark.parametrize("data", [None, ["a list of strings"], "a string", {},
                                      {"access_token": "long token", "code": "ab", "none": None, "nested": {"x": 1}}])
    def test_nothing_changeable_refuses(self, data):
        calls = [SIGN_IN, {"method": "post", "url": "/a", "data": data}, CLAIM]
        edit = apply_operator(calls, "wrong-value", DEFAULT_POLICY)
        assert edit.calls is None and edit.refusal == "NO_CHANGEABLE_VALUE"


class TestExtra:
    def test_repeats_the_last_write_right_after_it(self):
        edit = apply_operator(SPLIT, "extra", DEFAULT_POLICY)
        assert edit.calls == [*SPLIT[:5], SPLIT[4], *SPLIT[5:]]
        assert edit.calls[4] is not edit.calls[5]
        assert edit.calls[4]["data"] is not edit.calls[5]["data"]
        assert edit.detail["repeated"] == {"index": 4, "url": "/toy/payment_requests"}

    def test_repeat_at(self):
        calls = [{"url": "a"}, {"url": "b"}]
        assert repeat_at(calls, 0) == [{"url": "a"}, {"url": "a"}, {"url": "b"}]
        assert calls == [{"url": "a"}, {"url": "b"}]


class FakeScan:
    """Delivers scan runs: a run 'changes state' when it repeats one of the given indexes."""

    def __init__(self, changing: set[int], error: str | None = None, raises: bool = False,
                 failing: set[int] = frozenset()):
        self.changing, self.error, self.raises, self.failing = changing, error, raises, failing
        self.batches: list[list[Run]] = []

    def __call__(self, runs: Sequence[Run]) -> list[Delivery]:
        self.batches.append(list(runs))
        if self.raises:
            raise ConnectionError("world crashed\nsecond line")
        out = []
        for run in runs:
            if run.run_id == "scan-control":
                out.append(Delivery(run.run_id, added("t", {"v": 1}), error=self.error))
                continue
            index = int(run.run_id.rsplit("-", 1)[1])
            if index in self.failing:
                out.append(Delivery(run.run_id, error="boom"))
            elif index in self.changing:
                out.append(Delivery(run.run_id, added("t", {"v": 1}, {"v": 1})))
            else:
                out.append(Delivery(run.run_id, added("t", {"v": 1})))
        return out


# Writes: /a/1 at 1, /b at 2, /a/2 at 3, /c at 4. Newest per endpoint: /c 4, /a/{id} 3, /b 2.
NI = [SIGN_IN, call("post", "/a/1"), call("post", "/b"), call("post", "/a/2"), call("delete", "/c"), CLAIM]


class TestExtraNi:
    def test_scan_batch_is_control_plus_newest_first_candidates_ungraded(self):
        scan = FakeScan(changing={2})
        apply_operator(NI, "extra-ni", DEFAULT_POLICY, scan=scan)
        assert len(scan.batches) == 1
        batch = scan.batches[0]
        assert [r.run_id for r in batch] == ["scan-control", "scan-repeat-4", "scan-repeat-3", "scan-repeat-2"]
        assert all(r.grade is False for r in batch)
        assert batch[0].calls == NI
        assert batch[2].calls == repeat_at(NI, 3)

    def test_picks_the_newest_candidate_that_changes_state(self):
        edit = apply_operator(NI, "extra-ni", DEFAULT_POLICY, scan=FakeScan(changing={2, 3}))
        assert edit.refusal is None
        assert edit.calls == repeat_at(NI, 3)
        assert edit.detail["repeated"] == {"index": 3, "url": "/a/2"}
        assert edit.detail["tested"] == [{"index": 4, "changes_state": False}, {"index": 3, "changes_state": True}]

    def test_skips_idempotent_and_failed_candidates(self):
        edit = apply_operator(NI, "extra-ni", DEFAULT_POLICY, scan=FakeScan(changing={2}, failing={4}))
        assert edit.calls == repeat_at(NI, 2)
        assert edit.detail["tested"] == [{"index": 4, "error": "boom"}, {"index": 3, "changes_state": False},
                                         {"index": 2, "changes_state": True}]

    def test_all_repeats_idempotent_refuses(self):
        edit = apply_operator(NI, "extra-ni", DEFAULT_POLICY, scan=FakeScan(changing=set()))
        assert edit.calls is None and edit.refusal == "ALL_REPEATS_IDEMPOTENT"
        assert [t["index"] for t in edit.detail["tested"]] == [4, 3, 2]

    def test_scan_failed_when_the_scan_raises(self):
        edit = apply_operator(NI, "extra-ni", DEFAULT_POLICY, scan=FakeScan(changing={2}, raises=True))
        assert edit.calls is None and edit.refusal == "SCAN_FAILED"
        assert "ConnectionError" in edit.detail["error"]

    def test_scan_failed_when_the_scan_control_errors(self):
        edit = apply_operator(NI, "extra-ni", DEFAULT_POLICY, scan=FakeScan(changing={2}, error="reset failed"))
        assert edit.calls is None and edit.refusal == "SCAN_FAILED"
        assert edit.detail["error"] == "reset failed"

    def test_scan_failed_without_a_scanner_or_control(self):
        assert apply_operator(NI, "extra-ni", DEFAULT_POLICY).refusal == "SCAN_FAILED"
        assert apply_operator(NI, "extra-ni", DEFAULT_POLICY, scan=lambda runs: []).refusal == "SCAN_FAILED"

    def test_ignore_fields_apply_to_the_scan_comparison(self):
        def scan(runs):
            return [Delivery(r.run_id, added("t", {"v": 1, "ts": r.run_id})) for r in runs]

        assert apply_operator(NI, "extra-ni", DEFAULT_POLICY, scan=scan).refusal is None
        edit = apply_operator(NI, "extra-ni", DEFAULT_POLICY, scan=scan, ignore=Ignore(["ts"]))
        assert edit.refusal == "ALL_REPEATS_IDEMPOTENT"


# -- the audit loop --------------------------------------------------------------------------------

EFFECT = added("t", {"id": 1, "v": 1})
CALLS = [SIGN_IN, call("post", "/t", v=1), CLAIM]


class Adapter:
    """A hand-written adapter: each run's delivery comes from ``plan[run_id]`` (a dict of Delivery
    fields), defaulting to a PASS with the reference effect. Counts its calls."""

    name = "fake"
    ignore_fields = frozenset({"id"})
    policy = DEFAULT_POLICY

    def __init__(self, plan: dict[str, dict[str, Any]] | None = None, calls: list | None = None,
                 effect: Any = None, reference: Any = None, deliver_raises: bool = False):
        self.plan = plan or {}
        self.calls = CALLS if calls is None else calls
        self.effect = EFFECT if effect is None else effect
        self._reference = reference
        self.deliver_raises = deliver_raises
        self.reference_calls: list[str] = []
        self.batches: list[tuple[str, list[Run]]] = []
        self.lock = threading.Lock()

    def describe(self):
        return {"name": self.name, "version": "1"}

    def task_ids(self, split=None, limit=None):
        return ["t1"]

    def reference(self, task_id):
        self.reference_calls.append(task_id)
        if self._reference is not None:
            return self._reference(task_id)
        return Reference(task_id, copy.deepcopy(self.calls), copy.deepcopy(self.effect))

    def deliver(self, task_id, runs):
        with self.lock:
            self.batches.append((task_id, list(runs)))
        if self.deliver_raises:
            raise RuntimeError("the world is down")
        out = []
        for run in runs:
            fields = {"effect": copy.deepcopy(self.effect), "verdict": "PASS" if run.grade else None,
                      "statuses": [200] * len(run.calls)}
            fields.update(self.plan.get(run.run_id, {}))
            out.append(Delivery(run.run_id, **fields))
        return out


def classes(task) -> dict[str, str]:
    return {r.operator: r.run_class for r in task.runs}


WRONG = added("t", {"id": 1, "v": 1}, {"id": 2, "v": 1})


class TestClassification:
    ops = ("omit", "extra")

    def test_fail_is_killed_and_the_diff_is_recorded(self):
        task = audit_task(Adapter({"omit": {"verdict": "FAIL", "effect": {}}}), "t1", self.ops)
        assert task.status == "audited" and task.reason is None and task.control_verdict == "PASS"
        omit = task.runs[0]
        assert omit.run_class == "killed" and omit.verdict == "FAIL"
        assert omit.shape == "removes" and omit.summary == "t -1"
        assert omit.tables == {"t": {"+": 0, "-": 1, "changed": 0, "fields": []}}

    def test_pass_with_the_same_end_state_is_equivalent(self):
        task = audit_task(Adapter(), "t1", self.ops)
        assert classes(task) == {"omit": "equivalent", "extra": "equivalent"}
        assert task.runs[0].shape == "same" and task.runs[0].summary == ""

    def test_pass_with_a_different_end_state_is_a_false_accept(self):
        task = audit_task(Adapter({"extra": {"effect": WRONG}}), "t1", self.ops)
        assert classes(task) == {"omit": "equivalent", "extra": "false-accept"}
        extra = task.runs[1]
        assert extra.shape == "adds" and extra.summary == "t +1" and extra.reason == "t +1"

    def test_more_crashed_calls_than_the_control_is_unconfirmed(self):
        plan = {"control": {"statuses": [200, -1, 200]},
                "omit": {"effect": WRONG, "statuses": [200, -1, -1, 200]},
                "extra": {"effect": WRONG, "statuses": [-1, 200, 200, 200]}}
        task = audit_task(Adapter(plan), "t1", self.ops)
        assert classes(task) == {"omit": "unconfirmed", "extra": "false-accept"}
        assert "1 more call(s) crashed" in task.runs[0].reason

    def test_fail_with_crashed_calls_is_still_killed(self):
        plan = {"omit": {"verdict": "FAIL", "effect": {}, "statuses": [-1, -1]}}
        assert classes(audit_task(Adapter(plan), "t1", ("omit",))) == {"omit": "killed"}

    def test_unconfirmed_needs_a_difference(self):
        plan = {"omit": {"statuses": [-1, -1]}}
        assert classes(audit_task(Adapter(plan), "t1", ("omit",))) == {"omit": "equivalent"}

    def test_fail_beats_same_end_state(self):
        task = audit_task(Adapter({"extra": {"verdict": "FAIL"}}), "t1", self.ops)
        assert classes(task)["extra"] == "killed"
        assert task.runs[1].shape == "same"

    @pytest.mark.parametrize("plan", [{"omit": {"error": "reset failed"}}, {"omit": {"verdict": None}},
                                      {"omit": {"verdict": "pass"}}, {"omit": {"verdict": "PASS", "error": "x"}}])
    def test_mutant_error_or_odd_verdict_is_not_delivered(self, plan):
        task = audit_task(Adapter(plan), "t1", self.ops)
        assert classes(task) == {"omit": "not-delivered", "extra": "equivalent"}
        assert task.runs[0].reason

    def test_a_missing_delivery_is_not_delivered(self):
        class Drops(Adapter):
            def deliver(self, task_id, runs):
                return [d for d in super().deliver(task_id, runs) if d.run_id != "extra"]

        task = audit_task(Drops(), "t1", self.ops)
        assert classes(task) == {"omit": "equivalent", "extra": "not-delivered"}
        assert task.runs[1].reason == "no delivery for this run"

    def test_mutant_error_is_not_delivered_even_when_the_control_failed(self):
        plan = {"control": {"verdict": "FAIL"}, "omit": {"error": "timeout"}}
        task = audit_task(Adapter(plan), "t1", self.ops)
        assert task.status == "control-failed"
        assert classes(task) == {"omit": "not-delivered", "extra": "invalid"}
        assert task.runs[0].reason == "timeout"

    @pytest.mark.parametrize("control, reason", [
        ({"error": "VM unreachable"}, "control not delivered: VM unreachable"),
        ({"verdict": "FAIL"}, "the verifier gave the unedited reference run FAIL"),
        ({"verdict": None}, "the verifier gave the unedited reference run FAIL"),
        ({"effect": WRONG}, "replaying the reference run did not reproduce its end state"),
    ])
    def test_control_not_ok_makes_every_delivered_mutant_invalid(self, control, reason):
        plan = {"control": control, "omit": {"verdict": "FAIL", "effect": {}}, "extra": {"effect": WRONG}}
        task = audit_task(Adapter(plan), "t1", ("omit", "extra", "partial"))
        assert task.status == "control-failed" and task.audited
        assert task.reason == reason
        assert classes(task) == {"omit": "invalid", "extra": "invalid", "partial": "refused"}
        assert all(r.reason == reason for r in task.runs if r.run_class == "invalid")
        assert task.runs[0].verdict == "FAIL"

    def test_missing_control_delivery_is_invalid(self):
        class NoControl(Adapter):
            def deliver(self, task_id, runs):
                return [d for d in super().deliver(task_id, runs) if d.run_id != "control"]

        task = audit_task(NoControl(), "t1", self.ops)
        assert task.status == "control-failed"
        assert task.reason.startswith("control not delivered:")
        assert set(classes(task).values()) == {"invalid"}

    def test_control_compared_with_reference_under_ignore_fields(self):
        # The control's ids differ from the reference's; id is ignored, so the control is ok.
        plan = {"control": {"effect": added("t", {"id": 7, "v": 1})}}
        assert audit_task(Adapter(plan), "t1", self.ops).status == "audited"

    def test_mutants_are_compared_with_the_control_delivery(self):
        # The control reproduces the reference up to an ignored field; a mutant equal to the
        # control's delivery is equivalent.
        adapter = Adapter({"control": {"effect": added("t", {"id": 1, "v": 1, "note": "b"})},
                           "omit": {"effect": added("t", {"id": 1, "v": 1, "note": "b"})},
                           "extra": {"effect": added("t", {"id": 1, "v": 1, "note": "c"})}},
                          effect=added("t", {"id": 1, "v": 1, "note": "a"}))
        adapter.ignore_fields = frozenset({"id", "t.note"})
        task = audit_task(adapter, "t1", self.ops)
        assert classes(task) == {"omit": "equivalent", "extra": "equivalent"}
        # Without the ignore entry the control does not reproduce the reference.
        adapter.ignore_fields = frozenset({"id"})
        assert audit_task(adapter, "t1", self.ops).status == "control-failed"

    def test_ignore_fields_argument_adds_to_the_adapters(self):
        plan = {"extra": {"effect": added("t", {"id": 1, "v": 2})}}
        assert classes(audit_task(Adapter(plan), "t1", ("extra",)))["extra"] == "false-accept"
        task = audit_task(Adapter(plan), "t1", ("extra",), ignore_fields=["t.v"])
        assert classes(task)["extra"] == "equivalent"

    def test_num_tests_and_num_failed_are_merged_into_detail(self):
        plan = {"omit": {"verdict": "FAIL", "detail": {"num_tests": 4, "num_failed": 1, "write_counters": {"x": 1}}}}
        task = audit_task(Adapter(plan), "t1", ("omit",))
        detail = task.runs[0].detail
        assert detail["num_tests"] == 4 and detail["num_failed"] == 1
        assert "write_counters" not in detail
        assert detail["dropped"] == "/t"

    def test_refusal_is_recorded_with_its_reason(self):
        task = audit_task(Adapter(), "t1", ("partial",))
        run = task.runs[0]
        assert run.run_class == "refused" and run.reason == "NO_REPEATED_WRITE"
        assert run.detail == {"calls": 3, "writes": 1}


class TestNotAudited:
    def test_reference_raising_is_no_reference(self):
        def boom(task_id):
            raise KeyError("unknown task 't1'")

        adapter = Adapter(reference=boom)
        task = audit_task(adapter, "t1")
        assert task.status == "no-reference" and not task.audited and task.runs == []
        assert task.reason.startswith("the reference run raised KeyError")
        assert adapter.batches == []

    def test_reference_error_is_no_reference(self):
        adapter = Adapter(reference=lambda t: Reference(t, CALLS, EFFECT, error="solution did not report success"))
        task = audit_task(adapter, "t1")
        assert task.status == "no-reference"
        assert task.reason == "the reference run failed: solution did not report success"
        assert adapter.batches == []

    def test_no_calls_is_no_reference(self):
        adapter = Adapter(calls=[])
        task = audit_task(adapter, "t1")
        assert task.status == "no-reference" and task.reason == "the reference run made no calls"
        assert adapter.batches == []

    def test_no_effectful_call_is_no_write(self):
        adapter = Adapter(calls=[SIGN_IN, call("get", "/x"), CLAIM])
        task = audit_task(adapter, "t1")
        assert task.status == "no-write" and not task.audited and task.runs == []
        assert adapter.batches == []

    def test_deliver_raising_gives_every_run_the_error(self):
        adapter = Adapter(deliver_raises=True)
        task = audit_task(adapter, "t1", ("claim-only", "omit", "wrong-value", "extra"))
        assert task.status == "control-failed"
        assert task.reason == "control not delivered: deliver raised RuntimeError: the world is down"
        assert classes(task) == dict.fromkeys(("claim-only", "omit", "wrong-value", "extra"), "not-delivered")
        assert {r.reason for r in task.runs} == {"deliver raised RuntimeError: the world is down"}

    def test_deliver_raising_refuses_extra_ni_as_scan_failed(self):
        task = audit_task(Adapter(deliver_raises=True), "t1", ("omit", "extra-ni"))
        assert classes(task) == {"omit": "not-delivered", "extra-ni": "refused"}
        assert task.runs[1].reason == "SCAN_FAILED"


class TestBatchingHandWritten:
    def test_one_reference_and_one_batch_without_extra_ni(self):
        adapter = Adapter()
        audit_task(adapter, "t1", ("claim-only", "omit", "partial", "wrong-value", "extra"))
        assert adapter.reference_calls == ["t1"]
        assert len(adapter.batches) == 1
        task_id, runs = adapter.batches[0]
        # partial refused (one write), so it is not delivered.
        assert task_id == "t1"
        assert [r.run_id for r in runs] == ["control", "claim-only", "omit", "wrong-value", "extra"]
        assert all(r.grade for r in runs)
        assert runs[0].calls == CALLS

    def test_extra_ni_adds_one_scan_before_the_batch(self):
        adapter = Adapter(plan={"scan-repeat-1": {"effect": WRONG}})
        task = audit_task(adapter, "t1", ("omit", "extra-ni"))
        assert [[r.run_id for r in runs] for _, runs in adapter.batches] == [
            ["scan-control", "scan-repeat-1"], ["control", "omit", "extra-ni"]]
        assert [r.grade for r in adapter.batches[0][1]] == [False, False]
        assert classes(task) == {"omit": "equivalent", "extra-ni": "equivalent"}

    def test_idempotent_repeat_refuses_extra_ni_and_keeps_it_out_of_the_batch(self):
        adapter = Adapter()
        task = audit_task(adapter, "t1", ("extra", "extra-ni"))
        assert task.runs[1].run_class == "refused" and task.runs[1].reason == "ALL_REPEATS_IDEMPOTENT"
        assert len(adapter.batches) == 2
        assert [r.run_id for r in adapter.batches[1][1]] == ["control", "extra"]

    def test_scan_control_error_refuses_extra_ni_as_scan_failed(self):
        adapter = Adapter(plan={"scan-control": {"error": "reset failed"}, "scan-repeat-1": {"effect": WRONG}})
        task = audit_task(adapter, "t1", ("extra-ni",))
        assert (task.runs[0].run_class, task.runs[0].reason) == ("refused", "SCAN_FAILED")
        assert task.runs[0].detail["error"] == "reset failed"
        # Every selected operator refused: nothing to judge, so only the scan was delivered.
        assert [[r.run_id for r in batch[1]] for batch in adapter.batches] == [["scan-control", "scan-repeat-1"]]
        assert task.control_verdict is None


class CountingToy(ToyAdapter):
    def __init__(self):
        self.delivered: list[tuple[str, list[str], list[bool]]] = []
        self.lock = threading.Lock()

    def deliver(self, task_id, runs):
        with self.lock:
            self.delivered.append((task_id, [r.run_id for r in runs], [r.grade for r in runs]))
        return super().deliver(task_id, runs)


class TestBatching:
    def test_one_deliver_call_per_task_plus_one_scan(self):
        adapter = CountingToy()
        task = audit_task(adapter, "split-bill")
        assert len(adapter.delivered) == 2
        scan, main = adapter.delivered
        assert scan[1][0] == "scan-control" and not any(scan[2])
        assert main == ("split-bill", ["control", *OPERATORS], [True] * 7)
        assert [r.operator for r in task.runs] == list(OPERATORS)

    def test_no_scan_without_extra_ni(self):
        adapter = CountingToy()
        audit_task(adapter, "split-bill", ("omit", "extra"))
        assert adapter.delivered == [("split-bill", ["control", "omit", "extra"], [True] * 3)]

    def test_refused_operators_are_not_delivered(self):
        adapter = CountingToy()
        task = audit_task(adapter, "rename-profile")
        assert classes(task)["partial"] == "refused" and classes(task)["extra-ni"] == "refused"
        assert len(adapter.delivered) == 2  # the scan still ran
        assert adapter.delivered[-1][1] == ["control", "claim-only", "omit", "wrong-value", "extra"]

    def test_whole_toy_audit_delivers_each_task_once(self):
        adapter = CountingToy()
        result = audit(adapter, adapter.task_ids())
        main = [d[0] for d in adapter.delivered if d[1][0] == "control"]
        assert main == adapter.task_ids()
        scans = [d[0] for d in adapter.delivered if d[1][0] == "scan-control"]
        assert scans == adapter.task_ids()
        assert len(result.false_accepts) == 4


class TestToyFigures:
    """The seed's figures, from the engine alone."""

    def test_per_task_classes(self):
        result = audit(ToyAdapter(), ToyAdapter().task_ids())
        got = {t.task_id: classes(t) for t in result.tasks}
        killed4 = dict.fromkeys(("claim-only", "omit", "partial", "wrong-value"), "killed")
        assert got == {
            "split-bill": {**killed4, "extra": "false-accept", "extra-ni": "false-accept"},
            "split-bill-counted": {**killed4, "extra": "killed", "extra-ni": "killed"},
            "queue-songs": {**killed4, "extra": "false-accept", "extra-ni": "false-accept"},
            "like-songs": {**killed4, "extra": "equivalent", "extra-ni": "refused"},
            "rename-profile": {**killed4, "partial": "refused", "extra": "equivalent", "extra-ni": "refused"},
        }
        summaries = [(r.task_id, r.operator, r.summary) for r in result.false_accepts]
        assert summaries == [
            ("split-bill", "extra", "toy.Notification +1, toy.PaymentRequest +1"),
            ("split-bill", "extra-ni", "toy.Notification +1, toy.PaymentRequest +1"),
            ("queue-songs", "extra", "toy.QueueEntry +1"),
            ("queue-songs", "extra-ni", "toy.QueueEntry +1"),
        ]

    def test_refusal_reasons_and_wrong_value_shape(self):
        result = audit(ToyAdapter(), ["like-songs", "rename-profile"])
        like, rename = result.tasks
        assert like.runs[5].reason == "ALL_REPEATS_IDEMPOTENT"
        assert rename.runs[2].reason == "NO_REPEATED_WRITE"
        assert rename.runs[5].reason == "ALL_REPEATS_IDEMPOTENT"
        wrong = rename.runs[3]
        assert (wrong.shape, wrong.summary) == ("changes", "toy.Profile: display_name changed")

    def test_unknown_task_is_no_reference(self):
        task = audit_task(ToyAdapter(), "nosuch")
        assert task.status == "no-reference" and "KeyError" in task.reason


class Slow(Adapter):
    """Earlier tasks take longer, so they finish last."""

    def reference(self, task_id):
        time.sleep(0.02 * (5 - int(task_id)))
        return super().reference(task_id)


def test_jobs_returns_results_in_input_order():
    ids = ["0", "1", "2", "3", "4"]
    finished: list[str] = []
    result = audit(Slow(), ids, ("omit",), jobs=3, progress=lambda t: finished.append(t.task_id))
    assert [t.task_id for t in result.tasks] == ids
    assert sorted(finished) == ids and finished != ids  # progress comes in completion order


def test_audit_rejects_unknown_operators():
    with pytest.raises(ValueError, match="unknown operator 'nope'"):
        audit(Adapter(), ["t1"], ("omit", "nope"))


# -- duck typing: an adapter written for the reference tool -----------------------------------------

class TheirReference:
    def __init__(self, task_id, calls, effect, error=None, detail=None):
        self.task_id, self.calls, self.effect, self.error, self.detail = task_id, calls, effect, error, detail or {}


class TheirDelivery:
    def __init__(self, run_id, effect=None, verdict=None, statuses=None, error=None, detail=None):
        self.run_id, self.effect, self.verdict = run_id, effect or {}, verdict
        self.statuses, self.error, self.detail = statuses or [], error, detail or {}


class TheirPolicy:
    protected_fields = frozenset({"access_token", "username", "password"})

    def is_auth(self, call):
        return "/auth/token" in call["url"]

    def is_claim(self, call):
        return call["url"].lstrip("/").startswith("supervisor")

    def is_effectful(self, call):
        return call["method"].lower() != "get" and not self.is_auth(call) and not self.is_claim(call)


class TheirToy:
    """Wraps the toy benchmark, returning the reference tool's own-style objects."""

    name = "their-toy"
    ignore_fields = frozenset({"id"})
    policy = TheirPolicy()

    def __init__(self):
        self.toy = ToyAdapter()

    def describe(self):
        return {"name": self.name}

    def task_ids(self, split, limit):
        return self.toy.task_ids(split, limit)

    def reference(self, task_id):
        ref = self.toy.reference(task_id)
        return TheirReference(ref.task_id, ref.calls, ref.effect)

    def deliver(self, task_id, runs):
        return [TheirDelivery(d.run_id, d.effect, d.verdict, d.statuses, d.error, d.detail)
                for d in self.toy.deliver(task_id, runs)]


def test_an_adapter_returning_its_own_objects_works():
    ours = audit(ToyAdapter(), ToyAdapter().task_ids())
    theirs = audit(TheirToy(), ToyAdapter().task_ids())
    assert theirs.benchmark == {"name": "their-toy"}
    assert [(r.task_id, r.operator, r.run_class, r.summary) for t in theirs.tasks for r in t.runs] == [
        (r.task_id, r.operator, r.run_class, r.summary) for t in ours.tasks for r in t.runs]


def test_an_adapter_without_policy_or_describe_uses_the_defaults():
    class Bare:
        def reference(self, task_id):
            return TheirReference(task_id, CALLS, EFFECT)

        def deliver(self, task_id, runs):
            return [TheirDelivery(r.run_id, EFFECT, "PASS" if r.grade else None) for r in runs]

    result = audit(Bare(), ["t1"], ("omit", "extra"))
    assert result.benchmark == {"name": "?"}
    assert classes(result.tasks[0]) == {"omit": "equivalent", "extra": "equivalent"}


# -- AuditResult.to_dict ---------------------------------------------------------------------------

def test_to_dict_shape():
    adapter = Adapter({"extra": {"effect": WRONG}, "omit": {"verdict": "FAIL", "effect": {}}})
    result = audit(adapter, ["t1", "t2"], ("omit", "partial", "extra"), ignore_fields=["t.note"])
    assert isinstance(result, AuditResult)
    data = result.to_dict()
    assert set(data) == {"schema", "benchmark", "ignore_fields", "operators", "run_classes", "seconds",
                         "summary", "tasks"}
    assert data["schema"] == SCHEMA
    assert data["benchmark"] == {"name": "fake", "version": "1"}
    assert data["ignore_fields"] == ["id", "t.note"]
    assert data["operators"] == [{"name": "omit", "class": "postcondition"},
                                 {"name": "partial", "class": "postcondition"},
                                 {"name": "extra", "class": "frame"}]
    assert set(data["run_classes"]) >= {"killed", "false-accept", "equivalent", "refused", "invalid",
                                        "unconfirmed", "not-delivered"}
    zero = dict.fromkeys(("equivalent", "false-accept", "invalid", "killed", "not-delivered", "refused",
                          "unconfirmed"), 0)
    assert data["summary"] == {
        "by_operator": {"omit": {**zero, "killed": 2}, "partial": {**zero, "refused": 2},
                        "extra": {**zero, "false-accept": 2}},
        "false_accepts": 2, "tasks": 2, "tasks_audited": 2, "tasks_with_false_accept": 2,
    }
    task = data["tasks"][0]
    assert set(task) == {"task_id", "status", "reason", "seconds", "control_verdict", "runs"}
    assert (task["task_id"], task["status"], task["control_verdict"]) == ("t1", "audited", "PASS")
    run = task["runs"][2]
    assert set(run) == {"task_id", "operator", "run_class", "verdict", "shape", "reason", "detail", "tables",
                        "summary"}
    assert (run["operator"], run["run_class"], run["shape"], run["summary"]) == (
        "extra", "false-accept", "adds", "t +1")
    assert run["tables"] == {"t": {"+": 1, "-": 0, "changed": 0, "fields": []}}
    assert json.loads(json.dumps(data)) == data  # plain JSON
