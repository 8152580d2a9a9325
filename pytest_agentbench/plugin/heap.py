"""Keep the objects collection built out of the garbage collector's sight while a run goes on.

A benchmark run builds thousands of long-lived objects at collection (items, tasks, the manifest),
and so does a run of trajectory case files (items, their parsed cases).
Every full collection during the run walks them again, and so do the five ``gc.collect()`` calls
of pytest's unraisable-exception cleanup at the end: with 2,000 tasks that walk was most of the
plugin's fixed cost at exit. ``gc.freeze()`` after collection moves them to the permanent
generation; they are still freed by reference counting, and ``thaw`` hands them back to the
collector when the config is cleaned up.

The thaw must run *after* pytest's own cleanup (or the frozen heap is walked anyway). Cleanups run
last-registered first, and pytest's is registered at configure, so ``reserve`` is called from
``pytest_cmdline_main``, before configure, on controllers and xdist workers alike, in every run
but ``--help`` and ``--version`` (whether case files will be collected is not known yet); a run
that freezes nothing thaws nothing. A heap someone
else froze (an outer ``pytest.main()``, pytester's inline runs, an application) is left alone:
this run then neither freezes nor thaws.
"""

from __future__ import annotations

import gc

import pytest

_KEY = pytest.StashKey["HeapFreeze"]()


class HeapFreeze:
    def __init__(self) -> None:
        self.frozen = False

    def freeze(self) -> None:
        if not self.frozen and gc.get_freeze_count() == 0:
            gc.freeze()
            self.frozen = True

    def thaw(self) -> None:
        if self.frozen:
            self.frozen = False
            gc.unfreeze()


def reserve(config: pytest.Config) -> None:
    """Register the thaw now, so that it runs after every cleanup registered at configure."""
    if _KEY not in config.stash:
        state = config.stash[_KEY] = HeapFreeze()
        config.add_cleanup(state.thaw)


def freeze(config: pytest.Config) -> None:
    """Freeze the heap, if ``reserve`` ran for this config (so that the thaw is sure to follow)."""
    state = config.stash.get(_KEY, None)
    if state is not None:
        state.freeze()
