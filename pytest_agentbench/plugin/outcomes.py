"""An episode's outcome as pytest's control flow: pass, skip, or fail (a scored failure as
``EpisodeFailed``, the only failure a ``--bench-baseline`` xfail accepts)."""

from __future__ import annotations

import pytest

from pytest_agentbench.outcomes import Outcome
from pytest_agentbench.text import printable


class EpisodeFailed(pytest.fail.Exception):  # type: ignore[name-defined, misc]  # pytest types it as an attribute (Any)
    """A scored failure (checker said no, or the agent erred). The only exception a ``--bench-baseline``
    xfail accepts, so infrastructure errors of known-failing tasks still show as errors.

    It presents itself as pytest's own ``Failed`` so reports read ``Failed: <reason>``."""

    __module__ = "builtins"


EpisodeFailed.__name__ = EpisodeFailed.__qualname__ = "Failed"


def raise_outcome(outcome: Outcome) -> None:
    """Turn an outcome into pytest's control flow. ``error`` raises from setup (the caller's job)."""
    if outcome.kind == "passed":
        return
    message = printable(outcome.message)  # checker output may hold terminal escape sequences
    if outcome.kind == "skipped":
        pytest.skip(message)
    if outcome.kind == "failed":
        raise EpisodeFailed(message, pytrace=False)
    pytest.fail(message, pytrace=False)
