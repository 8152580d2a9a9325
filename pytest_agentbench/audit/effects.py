"""End-state effects and their comparison.

An effect maps each table that changed to the records it gained, lost or updated. Two effects are
compared as multisets of ``(table, kind, record minus ignored fields)``, so a repeated write shows
up as a second copy. The diff keeps counts and field names, never values, so reports can be shared.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Key = tuple[str, str, str]


def parse_ignore(entries: Iterable[str]) -> tuple[frozenset[str], frozenset[tuple[str, str]]]:
    """Split ignore entries into fields ignored in every table and ``(table, field)`` pairs.

    Table names contain dots (``toy.PaymentRequest``), so ``table.field`` splits at the last dot.
    """
    anywhere: set[str] = set()
    scoped: set[tuple[str, str]] = set()
    for entry in entries:
        entry = entry.strip()
        if not entry:
            continue
        if "." in entry:
            table, _, name = entry.rpartition(".")
            scoped.add((table, name))
        else:
            anywhere.add(entry)
    return frozenset(anywhere), frozenset(scoped)


class Ignore:
    def __init__(self, entries: Iterable[str] = ()) -> None:
        self.entries = sorted({e.strip() for e in entries if e.strip()})
        self.anywhere, self.scoped = parse_ignore(self.entries)

    def strip(self, table: str, record: Any) -> Any:
        if not isinstance(record, Mapping):
            return record
        return {k: v for k, v in record.items() if k not in self.anywhere and (table, k) not in self.scoped}


def _dump(record: Any) -> str:
    return json.dumps(record, sort_keys=True, default=str)


def normalize(effect: Mapping[str, Mapping[str, list[Any]]] | None, ignore: Ignore) -> Counter[Key]:
    """The effect as a multiset. Updates count by their after-image; an update that changes only
    ignored fields is dropped."""
    out: Counter[Key] = Counter()
    for table, changes in (effect or {}).items():
        for record in changes.get("added", ()) or ():
            out[(table, "added", _dump(ignore.strip(table, record)))] += 1
        for record in changes.get("removed", ()) or ():
            out[(table, "removed", _dump(ignore.strip(table, record)))] += 1
        for update in changes.get("updated", ()) or ():
            before = ignore.strip(table, update.get("before"))
            after = ignore.strip(table, update.get("after"))
            if before != after:
                out[(table, "updated", _dump(after))] += 1
    return out


@dataclass
class EffectDiff:
    """``shape`` is same, adds (a strict superset), removes (a strict subset) or changes."""

    shape: str
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def same(self) -> bool:
        return self.shape == "same"

    def summarize(self) -> str:
        """``toy.PaymentRequest +1`` or ``spotify.MusicPlayer: queue_song_ids changed``."""
        parts = []
        for table in sorted(self.tables):
            counts = self.tables[table]
            if counts["+"]:
                parts.append(f"{table} +{counts['+']}")
            if counts["-"]:
                parts.append(f"{table} -{counts['-']}")
            if counts["changed"]:
                names = ", ".join(counts["fields"]) or "a record"
                parts.append(f"{table}: {names} changed")
        return ", ".join(parts) if parts else "no change"


def _differing(a: str, b: str) -> set[str]:
    left, right = json.loads(a), json.loads(b)
    if not isinstance(left, dict) or not isinstance(right, dict):
        return {"(value)"} if left != right else set()
    return {k for k in set(left) | set(right) if left.get(k, _MISSING) != right.get(k, _MISSING)}


_MISSING = object()


def compare(control: Mapping[str, Any] | None, mutant: Mapping[str, Any] | None, ignore: Ignore) -> EffectDiff:
    """Compare a mutant's effect with the control's. Each extra mutant record is paired with the
    closest unmatched control record of the same table and kind (fewest differing fields): a pair
    counts as ``changed`` with its differing field names; the rest count as ``+`` or ``-``."""
    c, m = normalize(control, ignore), normalize(mutant, ignore)
    if c == m:
        return EffectDiff("same")
    extra, missing = m - c, c - m
    if not missing:
        shape = "adds"
    elif not extra:
        shape = "removes"
    else:
        shape = "changes"
    tables: dict[str, dict[str, Any]] = {}

    def row(table: str) -> dict[str, Any]:
        return tables.setdefault(table, {"+": 0, "-": 0, "changed": 0, "fields": []})

    unmatched: dict[tuple[str, str], list[str]] = {}
    for (table, kind, record), n in sorted(missing.items()):
        unmatched.setdefault((table, kind), []).extend([record] * n)
    for (table, kind, record), n in sorted(extra.items()):
        for _ in range(n):
            pool = unmatched.get((table, kind), [])
            if pool:
                best = min(range(len(pool)), key=lambda i: (len(_differing(record, pool[i])), i))
                names = _differing(record, pool.pop(best))
                entry = row(table)
                entry["changed"] += 1
                entry["fields"] = sorted(set(entry["fields"]) | names)
            else:
                row(table)["+"] += 1
    for (table, _kind), pool in unmatched.items():
        if pool:
            row(table)["-"] += len(pool)
    return EffectDiff(shape, dict(sorted(tables.items())))
