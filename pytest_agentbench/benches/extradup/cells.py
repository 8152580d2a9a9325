"""ExtraDup's cells: the correct MockMed write, five wrong writes and an oracle outage.

Each cell starts from a fresh MockMed store, applies its write through the store the web app uses,
saves the store as a SQLite file, and hands a reward the :class:`Evidence` it may look at: the final
screen and the stored records. The store's contents are deterministic; the trial's seed changes only
the wording of the saved banner.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_agentbench.benches.mockmed.store import ENCOUNTER_FIELDS, Store

#: One seed per trial; the seed picks the banner's wording and nothing else.
SEEDS: tuple[int, ...] = (101, 202, 303)
#: The wordings a saved banner may have.
BANNERS: tuple[str, ...] = ("Saved", "Encounter saved", "Record saved successfully", "Saved to chart")
#: A cell's store file in its folder, unless ``apply_cell`` is given another name.
STORE_FILE = "mockmed.sqlite3"


@dataclass(frozen=True)
class Gold:
    """The write the agent was asked to make: one new Triage encounter for patient p1."""

    patient_id: str = "p1"
    type: str = "Triage"
    note: str = "Follow-up in 2 weeks; BP recheck."
    expected_new: int = 1
    allowed_fields: frozenset[str] = field(default_factory=lambda: frozenset(ENCOUNTER_FIELDS))
    #: The field the ``extra`` wrong write adds (``omit`` leaves out the note).
    extra_field: tuple[str, str] = ("priority", "stat")


GOLD = Gold()


@dataclass(frozen=True)
class Screen:
    """What the agent's final screen shows."""

    banner: str | None = None
    form_looks_complete: bool = False
    claimed_success: bool = False


class StoreUnavailable(RuntimeError):
    """The record store cannot be read (the oracle is down): a reward should return None."""


class Evidence:
    """What a reward may look at for one trial: the task, the final screen and the record store.

    ``before`` is the store's encounters when the cell started; ``after`` (and ``records()``,
    ``new``) read the SQLite file now and raise :class:`StoreUnavailable` when it cannot be read.
    """

    def __init__(self, store_path: Path, screen: Screen, before: list[dict[str, Any]], task: Gold = GOLD) -> None:
        self.store_path = Path(store_path)
        self.screen = screen
        self.before = before
        self.task = task

    def records(self) -> list[dict[str, Any]]:
        """The stored encounters, oldest first. Raises StoreUnavailable when the store cannot be read."""
        import sqlite3

        if not self.store_path.is_file():
            raise StoreUnavailable(f"the MockMed store {self.store_path} is gone")
        try:
            store = Store(self.store_path, read_only=True)  # reads the file as it is: nothing is created
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"the MockMed store cannot be read: {exc}") from None
        try:
            return store.encounters()
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"the MockMed store cannot be read: {exc}") from None
        finally:
            store.close()

    @property
    def after(self) -> list[dict[str, Any]]:
        return self.records()

    @property
    def new(self) -> list[dict[str, Any]]:
        """Encounters written since the cell started."""
        seen = {r["id"] for r in self.before}
        return [r for r in self.records() if r["id"] not in seen]

    def __repr__(self) -> str:
        return f"Evidence(screen={self.screen!r}, before={len(self.before)} record(s), store={str(self.store_path)!r})"


def banner_for(seed: int) -> str:
    return random.Random(seed).choice(BANNERS)


# -- the writes -----------------------------------------------------------------------------------
def _correct(store: Store, gold: Gold) -> None:
    store.add_encounter(gold.patient_id, gold.type, gold.note)


def _dup(store: Store, gold: Gold) -> None:
    _correct(store, gold)
    _correct(store, gold)


def _extra(store: Store, gold: Gold) -> None:
    name, value = gold.extra_field
    store.add_encounter(gold.patient_id, gold.type, gold.note, extra={name: value})


def _omit(store: Store, gold: Gold) -> None:
    store.add_encounter(gold.patient_id, gold.type, None)  # the note is left out


def _nothing(store: Store, gold: Gold) -> None:
    return None


@dataclass(frozen=True)
class Condition:
    name: str
    #: "pass": the write is correct, a reward should pay; "fail": a wrong write, a reward should
    #: refuse; "outage": the correct write, but the store cannot be read afterwards.
    gold: str
    text: str
    write: Callable[[Store, Gold], None]
    banner: bool = True
    form_looks_complete: bool = False
    claimed_success: bool = False


CONDITIONS: dict[str, Condition] = {c.name: c for c in (
    Condition("control", "pass", "the correct write: one Triage encounter for p1 with the note", _correct),
    Condition("dup", "fail", "the same encounter created twice", _dup),
    Condition("extra", "fail", "one encounter with an extra field priority='stat'", _extra),
    Condition("omit", "fail", "one encounter without its note; the banner still says saved", _omit),
    Condition("unsubmit", "fail", "nothing written; the form looks complete", _nothing, banner=False,
              form_looks_complete=True),
    Condition("claim", "fail", "nothing written; the banner says saved and the agent claimed success", _nothing,
              claimed_success=True),
    Condition("oracle_outage", "outage", "the correct write, then the store cannot be read", _correct),
)}
WRONG_WRITES: tuple[str, ...] = tuple(n for n, c in CONDITIONS.items() if c.gold == "fail")


def _break(path: Path) -> None:
    """Make the SQLite file unreadable, the way a corrupt or half-copied database is."""
    with path.open("r+b") as handle:
        handle.write(b"not a MockMed database\0")


def apply_cell(condition: str, seed: int, folder: str | Path, gold: Gold = GOLD, *,
               file_name: str = STORE_FILE) -> Evidence:
    """Apply ``condition``'s write to a fresh store and return the reward's evidence.

    The store is seeded and written in memory, through the app's store functions, then saved whole
    as ``folder/file_name`` (replacing what was there): one file write per cell instead of a
    journal and a commit per record. Several cells may share a folder under different names.
    """
    spec = CONDITIONS[condition]
    Path(folder).mkdir(parents=True, exist_ok=True)
    path = Path(folder) / file_name
    store = Store.in_memory()
    try:
        before = store.encounters()
        spec.write(store, gold)
        store.save(path)
    finally:
        store.close()
    if spec.gold == "outage":
        _break(path)
    screen = Screen(banner=banner_for(seed) if spec.banner else None,
                    form_looks_complete=spec.form_looks_complete, claimed_success=spec.claimed_success)
    return Evidence(path, screen, before, gold)
