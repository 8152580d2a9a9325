"""Cloud providers that create and delete the VMs of a pool (``--pool aws`` / ``--pool azure``).

Each provider module imports its SDK lazily, inside the methods that need it, so ``import
pytest_agentbench.infra.providers.aws`` works without boto3 and a missing SDK is a one-line
:class:`~pytest_agentbench.infra.providers.base.ProviderError` naming the extra to install.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_agentbench.infra.providers.base import Provider, ProviderConfig

PROVIDERS = ("aws", "azure")


def make_provider(name: str, config: ProviderConfig) -> Provider:
    """The provider called ``name`` (``aws`` or ``azure``) for one run."""
    if name == "aws":
        from pytest_agentbench.infra.providers.aws import AWSProvider

        return AWSProvider(config)
    if name == "azure":
        from pytest_agentbench.infra.providers.azure import AzureProvider

        return AzureProvider(config)
    raise ValueError(f"unknown cloud provider {name!r}; choose one of: {', '.join(PROVIDERS)}")
