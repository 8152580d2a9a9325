"""MockMed's record store: one SQLite file per start state.

The web app writes encounters here, the MockMed checker reads them back, and ExtraDup applies its
wrong writes through the same functions, so every part sees the same records.
"""

from __future__ import annotations

import datetime as _dt
import sqlite3
import threading
from pathlib import Path
from typing import Any

PATIENTS: tuple[dict[str, str], ...] = (
    {"id": "p1", "name": "Jane Sample", "mrn": "P1", "dob": "1984-03-12", "reason": "Knee pain referral",
     "priority": "High"},
    {"id": "p2", "name": "Alex Testcase", "mrn": "P2", "dob": "1979-11-02", "reason": "Cardiology follow-up",
     "priority": "Medium"},
    {"id": "p3", "name": "Sam Specimen", "mrn": "P3", "dob": "1991-07-25", "reason": "Dermatology consult",
     "priority": "Low"},
)
ENCOUNTER_TYPES = ("Triage", "Consult")
#: The fields an encounter may have; anything else is an extra field (a wrong write).
ENCOUNTER_FIELDS = ("id", "patient_id", "type", "note", "created_at")

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS patients (
        id TEXT PRIMARY KEY, name TEXT NOT NULL, mrn TEXT NOT NULL, dob TEXT NOT NULL,
        reason TEXT NOT NULL, priority TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS encounters (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        patient_id TEXT NOT NULL REFERENCES patients(id),
        type TEXT,
        note TEXT,
        created_at TEXT NOT NULL,
        extra TEXT  -- JSON object of fields outside the form (only wrong writes set it)
    )""",
)


class Store:
    """A MockMed database file. Thread-safe for the app's threaded server (one lock).

    The schema and the patients are created in one transaction: a fresh store costs one commit
    (one round of syncs to the disk) rather than one per table and per row, and a store is never
    left half-seeded. Each encounter is still its own committed transaction, because the app
    says "saved" only once the record is on disk.
    """

    def __init__(self, path: str | Path, *, durable: bool = True) -> None:
        """``durable=False`` is for scratch stores that live only while a process reads them back
        (ExtraDup's cells): commits are not synced to the disk, which only matters if the machine
        loses power; every other connection still sees each commit at once."""
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        if not durable:
            self._db.execute("PRAGMA synchronous = OFF")
        try:
            with self._lock:
                self._seed()
        except BaseException:
            self._db.close()
            raise

    def _seed(self) -> None:
        """Create the tables and the patients unless they are there; an existing store is unchanged."""
        self._db.execute("BEGIN")
        try:
            for statement in _SCHEMA:
                self._db.execute(statement)
            if not self._db.execute("SELECT COUNT(*) FROM patients").fetchone()[0]:
                self._db.executemany(
                    "INSERT INTO patients (id, name, mrn, dob, reason, priority) VALUES (?, ?, ?, ?, ?, ?)",
                    [(p["id"], p["name"], p["mrn"], p["dob"], p["reason"], p["priority"]) for p in PATIENTS])
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def patients(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self._db.execute("SELECT * FROM patients ORDER BY id")]

    def patient(self, patient_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT * FROM patients WHERE id = ?", (patient_id,)).fetchone()
        return dict(row) if row else None

    def add_encounter(self, patient_id: str, type: str | None, note: str | None,
                      extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """Insert one encounter and return it. ``extra`` holds fields outside the form."""
        import json

        created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        with self._lock:
            cursor = self._db.execute(
                "INSERT INTO encounters (patient_id, type, note, created_at, extra) VALUES (?, ?, ?, ?, ?)",
                (patient_id, type, note, created, json.dumps(extra, sort_keys=True) if extra else None))
            row = self._db.execute("SELECT * FROM encounters WHERE id = ?", (cursor.lastrowid,)).fetchone()
        return _record(row)

    def encounters(self, patient_id: str | None = None) -> list[dict[str, Any]]:
        """Encounters as records: the form's fields plus any extra fields, oldest first."""
        with self._lock:
            if patient_id is None:
                rows = self._db.execute("SELECT * FROM encounters ORDER BY id").fetchall()
            else:
                rows = self._db.execute("SELECT * FROM encounters WHERE patient_id = ? ORDER BY id",
                                        (patient_id,)).fetchall()
        return [_record(r) for r in rows]


def _record(row: sqlite3.Row) -> dict[str, Any]:
    import json

    record = {k: row[k] for k in ("id", "patient_id", "type", "note", "created_at")}
    if row["extra"]:
        record.update(json.loads(row["extra"]))
    return record
