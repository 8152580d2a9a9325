"""Where the plugin meets the pytest-free library: settings read from the ``pytest.Config``, and the
library's :class:`~pytest_agentbench.errors.ConfigError` turned into ``pytest.UsageError``.

Both decisions live here only: :class:`ConfigSettings` is the one :class:`~pytest_agentbench.settings.Settings`
reader of the plugin, :func:`usage_errors` the one place a ``ConfigError`` becomes a usage error
(one ``ERROR:`` line, exit code 4), and :func:`builtin` applies both to a built-in factory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pytest_agentbench.errors import ConfigError
from pytest_agentbench.plugin.options import BY_DEST, setting
from pytest_agentbench.settings import ATTRIBUTE, Settings, settings_of

T = TypeVar("T")


class ConfigSettings:
    """:class:`~pytest_agentbench.settings.Settings` over a ``pytest.Config``: :func:`options.setting`."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.invocation_dir = Path(config.invocation_params.dir)
        self.rootdir = Path(config.rootpath)

    def get(self, dest: str) -> Any:
        """An option of the table (:func:`options.setting`), else pytest's own (``collectonly``). A bad
        value (possible only in a config pytest has not configured, which checks every value) is a
        :class:`ConfigError` with the table's message, so library code never sees unchecked text."""
        if dest in BY_DEST:
            try:
                return setting(self.config, dest, strict=True)
            except pytest.UsageError as exc:
                raise ConfigError(str(exc)) from None
        return self.config.getoption(dest, None)


def attach(config: pytest.Config) -> ConfigSettings:
    """Give ``config`` its reader (``config.agentbench_settings``), so library code handed the config
    itself (a conftest's factory passing it on) reads the same settings."""
    reader = ConfigSettings(config)
    setattr(config, ATTRIBUTE, reader)
    return reader


def settings_for(config: pytest.Config | Settings | None) -> Settings | None:
    """The reader of ``config``: the one attached at configure time, else a new one (a config that
    was only parsed, as in a unit test)."""
    if config is None or isinstance(config, Settings) or hasattr(config, ATTRIBUTE):
        return settings_of(config)
    return ConfigSettings(config)


@contextmanager
def usage_errors() -> Iterator[None]:
    """A :class:`ConfigError` raised inside becomes ``pytest.UsageError`` with the same message."""
    try:
        yield
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None


def builtin(make: Callable[[Settings | None], T]) -> Callable[[pytest.Config | None], T]:
    """A built-in factory as the registries call it: ``factory(config)``, reading its options through
    :func:`settings_for` and raising usage errors."""
    def factory(config: pytest.Config | None) -> T:
        with usage_errors():
            return make(settings_for(config))

    factory.__doc__ = make.__doc__
    return factory
