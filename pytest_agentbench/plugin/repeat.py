"""pytest-repeat's ``--count`` and this plugin's items: refused for every item kind, with one usage
line naming the kind and what to do instead.

pytest-repeat repeats a test by parametrizing its function; this plugin's items are made by its
collectors, not by parametrizing, so ``--count`` would pass them by without a word. None of them
gains from a repeat in pytest-repeat's sense: a benchmark task is played again with
``--bench-trials`` (independent trials with their own records, seeds and statistics), an audit
audits each task once per run, and a trajectory case scores a saved trace, the same each time."""

from __future__ import annotations

import pytest


def repeat_count(config: pytest.Config) -> int:
    """pytest-repeat's ``--count`` (1 without pytest-repeat or the option)."""
    count = config.getoption("count", None)
    return count if isinstance(count, int) and not isinstance(count, bool) else 1


def refuse_repeat(config: pytest.Config, kind: str, instead: str) -> None:
    """A usage error when ``--count`` asks to repeat items of ``kind``; ``instead`` says what to do."""
    count = repeat_count(config)
    if count > 1:
        raise pytest.UsageError(f"--count {count} does not repeat {kind}; {instead.format(count=count)}")


#: Trajectory case files (as in plugin/trajectory.py, which this module does not import).
CASE_SUFFIX = ".case.json"


def refuse_case_repeat(config: pytest.Config) -> None:
    refuse_repeat(config, f"trajectory cases (*{CASE_SUFFIX})",
                  "a case scores a saved trace, the same each time; deselect them to repeat the other tests "
                  "(-m 'not trajectory')")


class CaseRepeatGuard:
    """On the xdist controller with ``--count``: the controller collects nothing, so it learns of
    case items from the node ids a worker collected (after ``-m`` and ``-k``), and stops the run
    with the usage line before any is run."""

    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        if any(f"{CASE_SUFFIX}::" in nodeid for nodeid in ids):
            config: pytest.Config = node.config  # type: ignore[attr-defined]
            try:
                refuse_case_repeat(config)
            except pytest.UsageError as exc:
                pytest.exit(f"ERROR: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)
