"""Which deadline an item's episode plays under, and pytest-timeout's part in it.

The episode plays during the item's setup (``BenchItem.setup``), so that infrastructure errors stay
setup errors. pytest-timeout alone would then miss it or end it badly: with ``timeout_func_only``
its timer covers only the (empty) test call, so a hanging agent passes; with the ``thread`` method
its timer ends the whole process. So the episode has a deadline of its own:
``--bench-task-timeout`` (ini ``agentbench_task_timeout``), else the timeout pytest-timeout gives
the item (``--timeout``, the ``timeout`` ini key, ``PYTEST_TIMEOUT``, ``@pytest.mark.timeout``),
in every mode. While the episode plays pytest-timeout's own timer is paused (through its
``pytest_timeout_cancel_timer`` / ``pytest_timeout_set_timer`` hooks) and it covers the rest of
the item afterwards; a passed deadline fails the item with the phase it passed in.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from pytest_agentbench.deadline import Deadline

#: The plugin name pytest-timeout registers under.
PYTEST_TIMEOUT = "timeout"


def own_timeout(config: pytest.Config) -> float | None:
    """``--bench-task-timeout`` or its ini key (checked at configure time), or None."""
    from pytest_agentbench.plugin.options import setting

    value = setting(config, "task_timeout")
    return float(value) if value is not None else None


def _pytest_timeout_settings(item: pytest.Item) -> Any:
    """pytest-timeout's settings for ``item`` (timeout, method, func_only), or None."""
    if not item.config.pluginmanager.hasplugin(PYTEST_TIMEOUT):
        return None
    try:
        from pytest_timeout import _get_item_settings  # type: ignore[import-untyped]
    except ImportError:
        return None
    settings = _get_item_settings(item)
    return settings if settings.timeout is not None and settings.timeout > 0 else None


@contextmanager
def episode_deadline(item: pytest.Item, own: float | None) -> Iterator[Deadline | None]:
    """The deadline ``item``'s episode plays under (None: no deadline), with pytest-timeout's
    timer for the item paused meanwhile when it runs through setup."""
    settings = _pytest_timeout_settings(item)
    if own is not None:
        deadline: Deadline | None = Deadline(own, "--bench-task-timeout")
    elif settings is not None:
        deadline = Deadline(settings.timeout, "pytest-timeout")
    else:
        deadline = None
    paused = settings is not None and not settings.func_only
    if paused:
        item.config.hook.pytest_timeout_cancel_timer(item=item)
    try:
        yield deadline
    finally:
        if paused:
            item.config.hook.pytest_timeout_set_timer(item=item, settings=settings)
