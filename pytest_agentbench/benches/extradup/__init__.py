"""ExtraDup: does a reward pay for wrong writes?

Five wrong writes to a MockMed encounter (a duplicate record, an extra field, a missing note, a form
never submitted, a "saved" banner with nothing saved), the correct write (control) and an oracle
outage, each applied to a fresh MockMed SQLite store through the store the app uses. Every reward x
condition x trial is an item ``bench/extradup::<reward>::<condition>::trial<k>``::

    pytest --bench=extradup
    pytest --bench=extradup --bench-reward mypkg.rewards:my_reward

A reward is a plain callable ``reward(evidence) -> bool | float | None`` (see ``cells.Evidence``).

The plugin registers the benchmark (``plugin.py``) and defines ``--bench-reward`` (``options.py``) without
importing this package; it is imported only when the benchmark is made, through :func:`make_provider`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

    from pytest_agentbench.plugin.suites import ExtraDup


def make_provider(config: pytest.Config | None) -> ExtraDup:
    """The suite provider (``registry.register_suite`` factory)."""
    from pytest_agentbench.plugin.suites import ExtraDup

    if config is None:
        raise ValueError("the extradup benchmark needs a pytest config")
    return ExtraDup(config)
