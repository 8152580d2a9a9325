"""Equal values of records held to the end of a run, kept once.

A run holds every task of its manifest and every record of its results to its end, and most of
them repeat each other's values: the same benchmark and domain names, status words, verdict
reason, criteria, final action, task config. A JSON dump, a decoded file or an xdist report makes
each of them a new object per task. :class:`SharedValues` replaces such a value by the first equal
one it saw: the JSON is the same, the memory is not repeated. The shared values are plain JSON that
nothing edits once shared (the records and tasks are only read from then on).

Subclasses name the fields: ``WORDS`` (strings, interned) and ``NESTED`` (lists and dicts, shared
when equal). The manifest's tasks use :class:`pytest_agentbench.manifest.SharedTaskValues`, the
controller's records :class:`pytest_agentbench.plugin.reporting_shared.SharedValues`.
"""

from __future__ import annotations

import sys
from typing import Any, ClassVar


class SharedValues:
    """Up to ``limit`` distinct words and ``limit`` distinct nested values, the first ones seen (a
    run's common values come early; a run of all-different values stops adding). Words longer than
    ``word_limit`` are rarely repeated and kept as they are."""

    WORDS: ClassVar[tuple[str, ...]] = ()
    NESTED: ClassVar[tuple[str, ...]] = ()

    def __init__(self, limit: int = 4096, word_limit: int = 512) -> None:
        self.limit = limit
        self.word_limit = word_limit
        self._words: dict[str, str] = {}
        self._nested: dict[str, Any] = {}

    def share(self, record: dict[str, Any]) -> None:
        """Replace ``record``'s repeated values, in place, by the equal ones kept."""
        words = self._words
        for key in self.WORDS:
            value = record.get(key)
            if type(value) is str and len(value) <= self.word_limit:
                kept = words.get(value)
                if kept is None:
                    if len(words) < self.limit:
                        words[value] = value
                elif kept is not value:
                    record[key] = kept
        for key in self.NESTED:
            value = record.get(key)
            if value and type(value) in (list, dict):
                record[key] = self._nested_value(value)

    def shared(self, record: dict[str, Any]) -> dict[str, Any]:
        """``record`` with its keys interned and its repeated values shared (``share``), for a
        record decoded from a file: its keys are new strings per record (some thirty of them, a
        few dozen bytes each), where a record built here has the literals' interned ones."""
        record = {sys.intern(key): value for key, value in record.items()}
        self.share(record)
        return record

    def _nested_value(self, value: Any) -> Any:
        # repr tells apart what == does not (1, 1.0 and True; -0.0 and 0.0; a tuple and a list),
        # and == what repr might not (an object with a misleading repr): both must agree.
        key = repr(value)
        kept = self._nested.get(key)
        if kept is None:
            if len(self._nested) < self.limit:
                self._nested[key] = value
            return value
        return kept if kept == value else value
