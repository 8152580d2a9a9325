"""ExtraDup: the cells (real writes in MockMed's SQLite store), the reference rewards, and the
benchmark as pytest items (`pytest --bench=extradup`)."""

from __future__ import annotations

import itertools
import json
import math
import sqlite3

import pytest

from pytest_agentbench.benches.extradup.cells import (
    BANNERS,
    CONDITIONS,
    GOLD,
    SEEDS,
    WRONG_WRITES,
    StoreUnavailable,
    apply_cell,
)
from pytest_agentbench.benches.extradup.rewards import read_result, record, screen_only
from pytest_agentbench.benches.mockmed.store import Store


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return pytester


REWARDS = '''
from pytest_agentbench.benches.extradup.cells import StoreUnavailable

def good(evidence):
    """Reads the new records back."""
    try:
        new = evidence.new
    except StoreUnavailable:
        return None
    task = evidence.task
    ok = len(new) == 1 and all(
        r["patient_id"] == task.patient_id and r["type"] == task.type and r["note"] == task.note
        and set(r) <= task.allowed_fields for r in new)
    return 1.0 if ok else 0.0

def lax(evidence):
    """Checks the values of the new records but does not count them."""
    try:
        new = evidence.new
    except StoreUnavailable:
        return None
    return bool(new) and all(set(r) <= evidence.task.allowed_fields and r["note"] == evidence.task.note for r in new)

def never(evidence):
    return 0

def boom(evidence):
    raise ValueError("boom")

def chatty(evidence):
    return "yes"
'''

SEED_FIGURES = [
    "screen_only (built-in reference, known-bad*",
    "  gold-FAIL silent-incorrect-success: 15/15",
    "  control honest-write: 3/3",
    "record (built-in reference*",
    "  gold-FAIL silent-incorrect-success: 0/15",
    "  control honest-write: 3/3",
]
TABLE = [
    "condition * gold * screen_only * record",
    "control * PASS * 3/3 * 3/3",
    *[f"{c} * FAIL * 3/3 * 0/3" for c in WRONG_WRITES],
    "oracle_outage * 3/3 * 0/3 (3 unscored)",
]
DEFAULT_OUTCOMES = {"passed": 24, "skipped": 3, "xfailed": 15}


def _outcomes(**extra: int) -> dict[str, int]:
    out = dict(DEFAULT_OUTCOMES)
    for key, value in extra.items():
        out[key] = out.get(key, 0) + value
    return out


# -- the cells: real writes in the MockMed store ------------------------------------------------------
def _rows(path) -> list[dict]:
    db = sqlite3.connect(str(path))
    db.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in db.execute("SELECT * FROM encounters ORDER BY id")]
    finally:
        db.close()


def test_the_correct_write_is_one_triage_encounter_for_p1(tmp_path):
    evidence = apply_cell("control", 101, tmp_path)
    rows = _rows(evidence.store_path)
    assert [(r["patient_id"], r["type"], r["note"], r["extra"]) for r in rows] == [
        ("p1", "Triage", "Follow-up in 2 weeks; BP recheck.", None)]
    assert evidence.before == []
    assert [r["id"] for r in evidence.new] == [rows[0]["id"]]


@pytest.mark.parametrize(("condition", "expected"), [
    ("dup", [("p1", "Triage", GOLD.note, None)] * 2),
    ("extra", [("p1", "Triage", GOLD.note, json.dumps({"priority": "stat"}))]),
    ("omit", [("p1", "Triage", None, None)]),
    ("unsubmit", []),
    ("claim", []),
])
def test_each_wrong_write_is_in_sqlite(tmp_path, condition, expected):
    evidence = apply_cell(condition, 101, tmp_path)
    rows = _rows(evidence.store_path)
    assert [(r["patient_id"], r["type"], r["note"], r["extra"]) for r in rows] == expected
    # The app's store reads the same records the reward sees.
    store = Store(evidence.store_path)
    try:
        assert store.encounters() == evidence.after
    finally:
        store.close()


def test_the_extra_field_reaches_the_record(tmp_path):
    (row,) = apply_cell("extra", 202, tmp_path).after
    assert row["priority"] == "stat"
    assert not set(row) <= GOLD.allowed_fields


def test_the_outage_holds_the_correct_write_behind_an_unreadable_store(tmp_path):
    evidence = apply_cell("oracle_outage", 303, tmp_path)
    with pytest.raises(sqlite3.DatabaseError):
        _rows(evidence.store_path)
    with pytest.raises(StoreUnavailable, match="cannot be read"):
        _ = evidence.after
    assert evidence.screen.banner in BANNERS


def test_screens_and_seeds(tmp_path):
    banners = set()
    for condition, seed in itertools.product(CONDITIONS, SEEDS):
        screen = apply_cell(condition, seed, tmp_path / f"{condition}-{seed}").screen
        if condition == "unsubmit":
            assert screen.banner is None and screen.form_looks_complete and not screen.claimed_success
            continue
        assert screen.banner in BANNERS and not screen.form_looks_complete
        assert screen.claimed_success == (condition == "claim")
        banners.add(screen.banner)
    assert len(banners) == 3  # the seed picks the wording ...


def test_the_seed_changes_only_the_banner(tmp_path):
    def content(seed: int) -> list[tuple]:
        evidence = apply_cell("dup", seed, tmp_path / str(seed))
        return [(r["id"], r["patient_id"], r["type"], r["note"]) for r in evidence.after]

    assert content(101) == content(202) == content(303)  # ... and nothing else


def test_every_cell_starts_from_a_fresh_store(tmp_path):
    apply_cell("dup", 101, tmp_path)
    evidence = apply_cell("control", 101, tmp_path)  # the same folder
    assert len(evidence.after) == 1


# -- the reference rewards --------------------------------------------------------------------------
@pytest.mark.parametrize("condition", list(CONDITIONS))
def test_the_reference_rewards_on_each_cell(tmp_path, condition):
    evidence = apply_cell(condition, 101, tmp_path)
    assert screen_only(evidence) is True  # pays everything that looks finished
    expected = {"control": True, "oracle_outage": None}.get(condition, False)
    assert record(evidence) is expected


@pytest.mark.parametrize(("value", "paid", "error"), [
    (True, True, None), (False, False, None), (None, None, None), (1, True, None), (0.5, True, None),
    (0, False, None), (0.0, False, None), (-1, False, None),
    ("yes", None, "returned 'yes' (str)"), ([1], None, "returned [1] (list)"), (math.nan, None, "NaN"),
])
def test_reading_a_reward_result(value, paid, error):
    result = read_result("mine", value)
    assert result.paid is paid
    if error is None:
        assert result.error is None
    else:
        assert error in result.error and "'mine'" in result.error


# -- the benchmark as pytest items ------------------------------------------------------------------
def test_default_run_passes_with_the_seed_figures(project, run):
    result = run("--bench=extradup")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(**DEFAULT_OUTCOMES)
    result.stdout.fnmatch_lines(["*extradup: does a reward pay for wrong writes?*", *SEED_FIGURES, "", "paid/trials*",
                                 *TABLE])


def test_items_and_ids(project, run):
    result = run("--bench=extradup", "--collect-only", "-q", "--bench-reward", "record")
    ids = [line for line in result.outlines if line.startswith("bench/")]
    assert ids == [f"bench/extradup::{reward}::{condition}::trial{k}"
                   for reward in ("screen_only", "record") for condition in CONDITIONS for k in (1, 2, 3)]
    assert not any("[" in i for i in ids)


def test_status_words(project, run):
    result = run("--bench=extradup", "-v")
    result.stdout.fnmatch_lines_random([
        "*::screen_only::control::trial1 PAID*",
        "*::screen_only::dup::trial1 XFAIL*",
        "*::screen_only::oracle_outage::trial2 PAID*",
        "*::record::control::trial3 PAID*",
        "*::record::claim::trial1 REFUSED*",
        "*::record::oracle_outage::trial1 NOT-EVALUATED*",
    ])


def test_k_selects_one_reward(project, run):
    result = run("--bench=extradup", "-k", "record")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=18, skipped=3)
    result.stdout.fnmatch_lines(["record (*", "  gold-FAIL silent-incorrect-success: 0/15",
                                 "  control honest-write: 3/3"])
    assert "screen_only" not in result.stdout.str()


def test_a_good_user_reward_from_the_rootdir(project, run):
    project.makepyfile(mymod=REWARDS)
    result = run("--bench=extradup", "--bench-reward", "mymod:good")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(**_outcomes(passed=18, skipped=3))  # its items are not xfail
    result.stdout.fnmatch_lines([*SEED_FIGURES, "good (mymod:good: Reads the new records back.)",
                                 "  gold-FAIL silent-incorrect-success: 0/15", "  control honest-write: 3/3"])


def test_the_reward_module_is_found_in_the_rootdir_from_a_subfolder(project, run, monkeypatch):
    project.makepyfile(rootmod=REWARDS)
    project.makeini("[pytest]\n")
    sub = project.mkdir("sub")
    monkeypatch.chdir(sub)
    result = run("--bench=extradup", "--bench-reward", "rootmod:good", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    assert "bench/extradup::good::control::trial1" in result.outlines


def test_a_user_reward_from_the_ini_key(project, run):
    project.makepyfile(mymod=REWARDS)
    project.makeini("[pytest]\nagentbench_reward = mymod:good\n")
    result = run("--bench=extradup", "--collect-only", "-q")
    assert "bench/extradup::good::dup::trial1" in result.outlines


def test_a_reward_that_pays_a_wrong_write_fails_with_paid_wrong(project, run):
    project.makepyfile(mymod=REWARDS)
    result = run("--bench=extradup", "--bench-reward", "mymod:lax", "-rf")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(**_outcomes(passed=15, failed=3, skipped=3))
    result.stdout.fnmatch_lines_random([
        *[f"PAID-WRONG bench/extradup::lax::dup::trial{k} - Failed: *" for k in (1, 2, 3)],
        "reward 'lax' paid a wrong write: returned True for dup (the same encounter created twice; 2 new record(s))",
        "lax (mymod:lax*", "  gold-FAIL silent-incorrect-success: 3/15",
        "dup * FAIL * 3/3 * 0/3 * 3/3",
    ])


def test_a_reward_that_refuses_the_correct_write_fails_with_over_refusal(project, run):
    project.makepyfile(mymod=REWARDS)
    result = run("--bench=extradup", "--bench-reward", "mymod:never", "-v")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # control and the outage (the correct write behind an unreadable store) are refused
    result.assert_outcomes(**_outcomes(passed=15, failed=6))
    result.stdout.fnmatch_lines_random(["*::never::control::trial1 OVER-REFUSAL*",
                                        "*::never::dup::trial1 REFUSED*", "  control honest-write: 0/3"])


@pytest.mark.parametrize(("name", "message"), [
    ("boom", "*reward 'boom' raised ValueError: boom (at *mymod.py:* in boom)*"),
    ("chatty", "*reward 'chatty' returned 'yes' (str); a reward returns True/False, a number*"),
])
def test_a_broken_reward_errors_only_its_own_items(project, run, name, message):
    project.makepyfile(mymod=REWARDS)
    result = run("--bench=extradup", "--bench-reward", f"mymod:{name}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(**_outcomes(errors=21))
    result.stdout.fnmatch_lines([message])
    result.stdout.fnmatch_lines([*SEED_FIGURES, f"{name} (mymod:{name}*",
                                 "  gold-FAIL silent-incorrect-success: 0/15 (15 error(s))"])
    assert not [line for line in result.outlines if line.startswith("ERROR") and f"::{name}::" not in line]


@pytest.mark.parametrize(("spec", "expected"), [
    ("nope", ("*unknown reward 'nope' in --bench-reward; built-in rewards: screen_only, record; "
              "or give module:callable*")),
    ("nomod:fn", "*cannot load reward 'nomod:fn' in --bench-reward: ModuleNotFoundError*"),
    ("mymod:missing", "*cannot load reward 'mymod:missing' in --bench-reward: AttributeError*"),
    ("mymod:NOT_CALLABLE", "*reward 'mymod:NOT_CALLABLE' in --bench-reward is not callable*"),
    ("exits:fn", "*cannot load reward 'exits:fn' in --bench-reward: SystemExit: 2*"),
])
def test_a_bad_reward_reference_is_a_usage_error(project, run, spec, expected):
    project.makepyfile(mymod=REWARDS + "\nNOT_CALLABLE = 3\n", exits="import sys\nsys.exit(2)\n")
    result = run("--bench=extradup", "--bench-reward", spec)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([expected])
    assert "Traceback" not in result.stderr.str()


@pytest.mark.parametrize("dist", [(), ("--dist", "each")])
def test_xdist_counts_each_item_once(project, run_sub, dist):
    project.makepyfile(mymod=REWARDS)
    result = run_sub("--bench=extradup", "--bench-reward", "mymod:lax", "-n", "2", *dist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([*SEED_FIGURES, "lax (*", "  gold-FAIL silent-incorrect-success: 3/15",
                                 "  control honest-write: 3/3"])
    result.stdout.fnmatch_lines(["oracle_outage * 3/3 * 0/3 (3 unscored) * 0/3 (3 unscored)"])


def test_the_cells_share_one_scratch_folder_and_leave_nothing_behind(project, run, monkeypatch, tmp_path):
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    seen = tmp_path / "seen.txt"
    project.makepyfile(where=f'''
def where(evidence):
    """Notes its store file and whether it is there."""
    with open({str(seen)!r}, "a") as out:
        out.write(f"{{evidence.store_path}} {{evidence.store_path.is_file()}}\\n")
    return len(evidence.new) == 1
''')
    result = run("--bench=extradup", "--bench-reward", "where:where", "-k", "where and not oracle")
    result.assert_outcomes(passed=12, failed=6)  # it counts records only: extra and omit are paid
    lines = [line.rsplit(" ", 1) for line in seen.read_text().splitlines()]
    paths = [path for path, _ in lines]
    assert all(there == "True" for _, there in lines) and len(set(paths)) == len(paths) == 18
    from pathlib import Path

    folders = {Path(p).parent for p in paths}
    assert len(folders) == 1 and next(iter(folders)).parent == scratch  # one folder for the run's cells
    assert list(scratch.iterdir()) == []  # removed with every store in it


def test_a_run_of_extradup_loads_no_models(project, run_sub):
    """The run builds its agent once to check it, but plays none: the models (pydantic) stay unloaded."""
    project.makeconftest('''
import sys

def pytest_unconfigure(config):
    print("models loaded:", "pytest_agentbench.model" in sys.modules)
''')
    result = run_sub("--bench=extradup", "-s")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*models loaded: False*"])


def test_an_unknown_agent_is_a_usage_error_with_extradup_too(project, run):
    result = run("--bench=extradup", "--bench-agent", "nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown agent 'nope' in --bench-agent; available: *"])
