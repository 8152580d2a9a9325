"""ExtraDup: does a reward pay for wrong writes?

Five wrong writes to a MockMed encounter (a duplicate record, an extra field, a missing note, a form
never submitted, a "saved" banner with nothing saved), the correct write (control) and an oracle
outage, each applied to a fresh MockMed SQLite store through the store the app uses. Every reward x
condition x trial is an item ``bench/extradup::<reward>::<condition>::trial<k>``::

    pytest --bench=extradup
    pytest --bench=extradup --reward mypkg.rewards:my_reward

A reward is a plain callable ``reward(evidence) -> bool | float | None`` (see ``cells.Evidence``).

This module imports only pytest and the standard library: the plugin calls :func:`add_options`
at startup in every pytest run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

NAME = "extradup"
DESCRIPTION = "does a reward pay for wrong writes? five wrong MockMed writes x reference rewards, offline"


def add_options(parser: pytest.Parser) -> None:
    """``--reward module:callable`` (repeatable) and the ini key ``agentbench_reward``; defined in
    ``options.py`` so that a plain pytest run never imports this package."""
    from ...options import add_extradup_options

    add_extradup_options(parser)


def make_provider(config: pytest.Config | None) -> Any:
    """The suite provider (``registry.register_suite`` factory)."""
    from .suite import ExtraDup

    if config is None:
        raise ValueError("the extradup benchmark needs a pytest config")
    return ExtraDup(config)


def register(registry: Any) -> None:
    """Register the benchmark on a ``BenchmarkRegistry``."""
    registry.register_suite(NAME, make_provider, description=DESCRIPTION)
