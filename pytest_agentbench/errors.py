"""The package's own exceptions, raised by the library (which never imports pytest).

The plugin layer turns :class:`ConfigError` into ``pytest.UsageError`` (one ``ERROR:`` line, exit
code 4) in one place, ``plugin/bridge.py``; outside pytest it is an ordinary ``ValueError``.
"""

from __future__ import annotations


class AgentbenchError(Exception):
    """Base of the errors pytest-agentbench raises on purpose."""


class ConfigError(AgentbenchError, ValueError):
    """Bad settings or input: an option, an ini key, a file named by one. Its message is one line that
    names the bad thing and the fix; under pytest it is a usage error."""
