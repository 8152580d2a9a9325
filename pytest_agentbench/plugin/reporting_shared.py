"""Equal values of the records a controller holds to the end of a run, kept once.

Every record stays in memory until summary.json and the viewer are written, and most of a run's
records repeat each other's values: the same benchmark, domain, agent and status words, the same
verdict reason, the same criteria and final action. Under xdist each record arrives as freshly
decoded JSON, so even the benchmark's name is a new string per record. :class:`SharedValues`
replaces such a value by the first equal one it saw: the record's JSON is the same, its memory
is not repeated. The shared values are plain JSON that nothing edits once the record is written.
"""

from __future__ import annotations

from typing import Any

#: The record's short words: interned when they are strings.
WORD_FIELDS = ("schema", "benchmark", "domain", "agent", "status", "worker", "error_type", "expected_outcome",
               "reason", "error")
#: The record's nested values: an equal list or dict is shared.
NESTED_FIELDS = ("criteria", "final_action")
#: Longer strings are rarely repeated; they are kept as they are.
WORD_LIMIT = 512


class SharedValues:
    """Up to ``limit`` distinct words and ``limit`` distinct nested values, the first ones seen
    (a run's common values come early; a run of all-different values stops adding)."""

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._words: dict[str, str] = {}
        self._nested: dict[str, Any] = {}

    def share(self, record: dict[str, Any]) -> None:
        """Replace ``record``'s repeated values, in place, by the equal ones kept."""
        words = self._words
        for key in WORD_FIELDS:
            value = record.get(key)
            if type(value) is str and len(value) <= WORD_LIMIT:
                kept = words.get(value)
                if kept is None:
                    if len(words) < self.limit:
                        words[value] = value
                elif kept is not value:
                    record[key] = kept
        for key in NESTED_FIELDS:
            value = record.get(key)
            if value and type(value) in (list, dict):
                record[key] = self._nested_value(value)

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
