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
#: SQLite's name for a database that lives in memory (:meth:`Store.in_memory`).
MEMORY = ":memory:"

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


#: The seeded database :meth:`Store.in_memory` copies (made on first use).
_template: Store | None = None
_template_lock = threading.Lock()


class Store:
    """A MockMed database file. Thread-safe for the app's threaded server (one lock).

    The schema and the patients are created in one transaction: a fresh store costs one commit
    (one round of syncs to the disk) rather than one per table and per row, and a store is never
    left half-seeded. Each encounter is still its own committed transaction, because the app
    says "saved" only once the record is on disk.
    """

    def __init__(self, path: str | Path, *, read_only: bool = False, copy_of: Store | None = None) -> None:
        """``read_only=True`` opens an existing store to read it back (ExtraDup's evidence): nothing is
        created or seeded, and a missing or unreadable file is a ``sqlite3`` error rather than a
        fresh, empty store. ``copy_of`` starts the (empty) database as a copy of that store's instead
        of seeding it."""
        self.path = Path(path)
        self._lock = threading.Lock()
        if read_only:
            self._db = sqlite3.connect(f"{self.path.absolute().as_uri()}?mode=ro", uri=True, check_same_thread=False)
        else:
            self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        if read_only:
            return
        try:
            with self._lock:
                if copy_of is None:
                    self._seed()
                else:
                    copy_of._copy_to(self._db)
        except BaseException:
            self._db.close()
            raise

    @classmethod
    def in_memory(cls) -> Store:
        """A seeded store that lives in memory until :meth:`save` writes it out as one file.

        For scratch stores (ExtraDup's cells): their writes go through the same functions as the
        app's, but cost no file, journal or sync per commit; the file is written once, whole. Each
        is a copy of one seeded template, so the tables and patients are created once per process."""
        global _template
        with _template_lock:
            if _template is None:
                _template = cls(MEMORY)
        return cls(MEMORY, copy_of=_template)

    def _copy_to(self, target: sqlite3.Connection) -> None:
        with self._lock:
            serialize = getattr(self._db, "serialize", None)  # Python 3.11+, with deserialize
            if serialize is not None:
                target.deserialize(serialize())  # type: ignore[attr-defined]  # typed for Python 3.10
            else:
                self._db.backup(target)

    def save(self, path: str | Path) -> None:
        """Write the whole database to ``path`` as a SQLite file (replacing any file there). Not
        synced to the disk: the file is for this process to read back, not the app's record."""
        with self._lock:
            serialize = getattr(self._db, "serialize", None)  # Python 3.11+
            if serialize is not None:
                Path(path).write_bytes(serialize())
                return
            Path(path).unlink(missing_ok=True)
            target = sqlite3.connect(str(path))
            try:
                self._db.backup(target)
            finally:
                target.close()

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
