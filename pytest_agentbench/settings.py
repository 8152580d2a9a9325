"""What library code reads its options through: a :class:`Settings` reader, not a ``pytest.Config``.

Factories of built-in benchmarks and agents (``WAABenchmark.from_config``, ``agents.http.make_agent``...)
take ``Settings | None``; None means outside pytest, with every option at its default. The plugin
layer implements the reader over its option table (``plugin/bridge.py``), so values come back
validated, the command line winning over the ini key, relative paths resolved.

A ``pytest.Config`` handed to such a factory (a conftest's own factory passing on what it was given)
works too once pytest has configured it: the plugin attaches its reader to the config
(:data:`ATTRIBUTE`), and :func:`settings_of` finds it there.

The frozen dataclasses that hold a part of the settings (the run's, the audit's, WAA's, OpenComputer's...)
are filled from the reader by :func:`from_settings`: each field names the option that feeds it with
:func:`option`, so the option table stays the one source of every value and its check, and adding a
setting to such an object is one line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from pytest_agentbench.errors import ConfigError

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


# -- settings objects filled from the option table ----------------------------------------------------
T = TypeVar("T")
#: The field metadata keys of :func:`option`: the option's ``dest`` and the field's conversion.
DEST = "agentbench_dest"
CONVERT = "agentbench_convert"


def option(dest: str, default: Any = dataclasses.MISSING, *, convert: Callable[[Any], Any] | None = None,
           default_factory: Callable[[], Any] | None = None) -> Any:
    """A dataclass field fed by the option ``dest``: its validated value (through ``convert`` when the
    field holds another type: a ``Path``, a tuple), or ``default`` when the option is not set. A
    ``convert`` may raise ValueError with a one-line message; :func:`from_settings` makes it a
    :class:`~pytest_agentbench.errors.ConfigError`."""
    metadata = {DEST: dest, CONVERT: convert}
    if default_factory is not None:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def option_fields(cls: type) -> list[tuple[dataclasses.Field[Any], str]]:
    """The fields of the dataclass ``cls`` that an option feeds, each with its option's ``dest``."""
    return [(f, f.metadata[DEST]) for f in dataclasses.fields(cls) if DEST in f.metadata]


def from_settings(cls: type[T], reader: Settings | None, **given: Any) -> T:
    """``cls`` with every :func:`option` field read from ``reader``: the value the option table checked,
    converted; the field's default when the option is not set (or ``reader`` is None). ``given``
    fields are taken as they are."""
    if reader is None:
        return cls(**given)
    values: dict[str, Any] = {}
    for f, dest in option_fields(cls):
        if f.name in given:
            continue
        value = reader.get(dest)
        if value is None or value == []:
            continue
        convert = f.metadata[CONVERT]
        if convert is not None:
            try:
                value = convert(value)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        values[f.name] = value
    return cls(**values, **given)


def words(values: Iterable[object] | str | None) -> tuple[str, ...]:
    """The comma-separated words of a repeatable option (``--audit-operators a,b --audit-operators c``), in
    order. One text (a reader that gives a string) counts as one value."""
    if isinstance(values, str):
        values = [values]
    return tuple(part.strip() for text in values or () for part in str(text).split(",") if part.strip())


def unique_words(values: Iterable[object] | str | None) -> tuple[str, ...]:
    """:func:`words`, each once (the first time it is given)."""
    return tuple(dict.fromkeys(words(values)))
