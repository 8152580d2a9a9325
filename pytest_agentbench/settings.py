"""What library code reads its options through: a :class:`Settings` reader, not a ``pytest.Config``.

Factories of built-in benchmarks and agents (``WAABenchmark.from_config``, ``agents.http.make_agent``...)
take ``Settings | None``; None means outside pytest, with every option at its default. The plugin
layer implements the reader over its option table (``plugin/bridge.py``), so values come back
validated, the command line winning over the ini key, relative paths resolved.

A ``pytest.Config`` handed to such a factory (a conftest's own factory passing on what it was given)
works too once pytest has configured it: the plugin attaches its reader to the config
(:data:`ATTRIBUTE`), and :func:`settings_of` finds it there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

#: The attribute of a configured ``pytest.Config`` that holds its :class:`Settings`.
ATTRIBUTE = "agentbench_settings"


@runtime_checkable
class Settings(Protocol):
    """The option values of a run, by ``dest`` (the name in ``plugin/options.py``'s table)."""

    #: Where the run was started: relative paths given there are taken from it.
    invocation_dir: Path
    #: The run's root folder (pytest's rootdir).
    rootdir: Path

    def get(self, dest: str) -> Any:
        """The validated value of option ``dest``, or its default."""
        ...


def settings_of(source: object) -> Settings | None:
    """``source`` as a :class:`Settings`: itself, the reader a configured ``pytest.Config`` carries,
    or None for None. Anything else is a TypeError naming what is needed."""
    if source is None or isinstance(source, Settings):
        return source
    found = getattr(source, ATTRIBUTE, None)
    if isinstance(found, Settings):
        return found
    raise TypeError(f"expected pytest_agentbench Settings or a configured pytest.Config, got {type(source).__name__} "
                    "(a config pytest has not configured yet carries no settings)")
