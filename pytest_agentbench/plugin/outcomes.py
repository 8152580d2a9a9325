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


def raise_outcome(outcome: Outcome, cause: BaseException | None = None) -> None:
    """Turn an outcome into pytest's control flow. ``error`` raises from setup (the caller's job).

    ``cause``: the exception of the user's agent, environment or checker behind an error; raised
    as the outcome's cause, so pytest shows its frames (the item cuts this plugin's) and ``--pdb``
    stops where it was raised (``pytest_exception_interact`` in ``plugin/__init__.py``)."""
    if outcome.kind == "passed":
        return
    message = printable(outcome.message)  # checker output may hold terminal escape sequences
    if outcome.kind == "skipped":
        pytest.skip(message)
    failure = EpisodeFailed(message, pytrace=cause is not None) if outcome.kind == "failed" else \
        pytest.fail.Exception(message, pytrace=cause is not None)
    if cause is not None:
        raise failure from cause
    raise failure

