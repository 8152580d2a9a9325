"""Benchmark and audit node ids given as arguments select items, as a test file's node ids do.

Why: ``pytest 'bench/mock::chrome::mock_chrome_001' --bench=mock`` (a node id copied from a
report, a JUnit file or ``--collect-only``) would otherwise make pytest look for a file
``bench/mock`` and stop with "file or directory not found", after the run folder was made.
Benchmark items have no file: their ids start with ``bench/`` (``audit/`` for audits). Such an
argument that names no path on disk is taken out of ``config.args`` at configure time and kept
in ``config.option`` (which xdist sends to its workers); collection then keeps the items it
names: the id itself, or everything below it (``bench/mock``, ``bench/mock::chrome``).
"""

from __future__ import annotations

import os

import pytest

#: Where the node ids are kept: an option attribute, so xdist's workers get it with the others.
DEST = "agentbench_node_ids"


def take(config: pytest.Config, roots: tuple[str, ...]) -> None:
    """Move the arguments that are node ids under ``roots`` (``bench/``, ``audit/``) out of
    ``config.args``. Arguments naming a real path stay (a folder may be called ``bench``)."""
    if not roots or getattr(config.option, DEST, None):
        return
    picked = [arg for arg in config.args
              if arg.startswith(roots) and not os.path.exists(arg.split("::", 1)[0])]
    if picked:
        config.args[:] = [arg for arg in config.args if arg not in picked]
        setattr(config.option, DEST, picked)


def _selects(node_id: str, item_id: str) -> bool:
    return item_id == node_id or item_id.startswith((node_id + "::", node_id + "/"))


def select(config: pytest.Config, items: list[pytest.Item], roots: tuple[str, ...]) -> None:
    """Keep, of the items under ``roots``, those the node id arguments name; other items (a test
    file given beside them) stay. A node id that names no item is a usage error (as pytest's own
    ``not found`` for a test file's), found where collection happens: in the one process without
    xdist, on the controller's first look otherwise (a worker keeps what matches)."""
    wanted: list[str] = getattr(config.option, DEST, None) or []
    if not wanted:
        return
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    matched: set[str] = set()
    for item in items:
        if not item.nodeid.startswith(roots):
            kept.append(item)
            continue
        hits = [node_id for node_id in wanted if _selects(node_id, item.nodeid)]
        matched.update(hits)
        (kept if hits else dropped).append(item)
    missing = [node_id for node_id in wanted if node_id not in matched]
    if missing and not hasattr(config, "workerinput"):
        raise pytest.UsageError(
            f"not found: {missing[0]} (no benchmark item has this node id; list them with --collect-only -q, "
            "or select with --bench-task ID or -k)")
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
