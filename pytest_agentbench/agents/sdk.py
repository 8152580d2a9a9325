"""The part every model agent built on a provider SDK shares (``api-claude``, ``api-openai``,
``api-vlm``): one SDK client to close, and the usage counted since the runner last took it."""

from __future__ import annotations

import importlib
from typing import Any

from pytest_agentbench.agent import Agent, Usage
from pytest_agentbench.errors import ConfigError
from pytest_agentbench.extras import install_hint


def require_sdk(module: str, agent: str, extra: str) -> None:
    """ConfigError naming the install command when ``module`` (the SDK ``agent`` is built on) is missing."""
    try:
        importlib.import_module(module)
    except ImportError:
        raise ConfigError(f"--bench-agent {agent} needs the {module} package: {install_hint(extra)}") from None


class SDKAgent(Agent):
    """Holds ``_client`` (the SDK client) and ``_usage`` (this step's calls, tokens and cost so far);
    subclasses set both in ``__init__`` and add to ``_usage`` after each call."""

    model: str
    _client: Any
    _usage: Usage

    def close(self) -> None:
        self._client.close()

    def take_usage(self) -> Usage | None:
        usage, self._usage = self._usage, Usage(model=self.model)
        return usage if usage.calls else None
