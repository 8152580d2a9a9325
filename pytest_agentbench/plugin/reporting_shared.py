"""The controller's records, kept with their equal values shared (``shared_values``): every
record stays in memory until summary.json and the viewer are written, and under xdist each one
arrives as freshly decoded JSON, so even the benchmark's name is a new string per record."""

from __future__ import annotations

from pytest_agentbench import shared_values


class SharedValues(shared_values.SharedValues):
    """The record's short words interned; its criteria and final action shared when equal."""

    WORDS = ("schema", "benchmark", "domain", "agent", "status", "worker", "error_type", "expected_outcome",
             "reason", "error")
    NESTED = ("criteria", "final_action")
