"""What the pool needs from a cloud: create, wait for, delete and find VMs, all tagged with the run.

The pool (``infra/cloud_pool.py``) owns the lifecycle: it calls :meth:`Provider.check` before
anything is created, :meth:`Provider.prepare` once per run, :meth:`Provider.create_vm` per worker
(which must return as soon as the cloud has accepted the VM, so the VM is registered for deletion
before any wait), :meth:`Provider.wait_running` to learn its addresses, and :meth:`Provider.destroy`
on every exit path. :meth:`Provider.find_leftovers` / :meth:`Provider.reap` serve the reaper
(``pytest --agentbench-reap``), which deletes whatever a killed run left behind, found by tag.

Every error a user can cause (no credentials, a region or size the account cannot use, an image
that does not exist) is a :class:`ProviderError` with one line naming the bad value and the fix.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

#: Tag keys put on every resource a run creates. ``RUN_TAG`` holds the run id; the reaper finds
#: resources by the presence of ``RUN_TAG``.
RUN_TAG = "agentbench-run"
NAME_TAG = "Name"
CREATED_TAG = "agentbench-created"


class ProviderError(RuntimeError):
    """A cloud call failed in a way the user can fix; the message is one line."""


@dataclass(frozen=True)
class ProviderConfig:
    """Everything a provider needs for one run, taken from options, ini and environment."""

    run_id: str
    region: str | None = None
    size: str | None = None
    image: str | None = None
    ssh_user: str | None = None
    #: provider-specific settings (``subscription_id``, ``resource_group``, ``subnet_id``, ...)
    extra: dict[str, Any] = field(default_factory=dict)
    #: seconds between long-running-operation polls (0 in tests against fakes)
    poll_interval: float = 5.0
    #: give up waiting for a VM to run (or to go away) after this many seconds
    wait_timeout: float = 900.0


@dataclass(frozen=True)
class VMSpec:
    """One VM to create. ``user_data`` is a cloud-init document (plain text; providers encode it
    as their API wants); ``ssh_public_key`` is the login key in OpenSSH form."""

    name: str
    size: str
    region: str
    image: str
    ssh_user: str
    ssh_public_key: str
    user_data: str
    tags: dict[str, str]
    #: stop (AWS: terminate) the VM by itself after this many hours; 0 = never
    auto_shutdown_hours: float = 4.0


@dataclass
class VM:
    """A VM the run created. Plain data: it travels to xdist workers as a dict."""

    name: str
    provider: str
    #: the id the cloud deletes by: an EC2 instance id, an Azure resource id
    resource_id: str
    region: str
    size: str
    ssh_user: str
    public_ip: str | None = None
    private_ip: str | None = None
    #: epoch seconds when the cloud accepted the VM and when it was deleted (for the cost)
    created_at: float = 0.0
    deleted_at: float | None = None
    #: the VM's SSH host key ("ssh-ed25519 AAAA..."), pinned for the tunnel
    host_key: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VM:
        return cls(**data)


@dataclass(frozen=True)
class Leftover:
    """A tagged resource found by the reaper."""

    kind: str  # "instance", "security-group", "resource-group", ...
    resource_id: str
    name: str
    run_id: str
    region: str = ""
    state: str = ""


class Provider(ABC):
    """One cloud account and region for one run."""

    name: ClassVar[str]
    default_region: ClassVar[str]
    default_size: ClassVar[str]
    default_ssh_user: ClassVar[str]
    #: the install hint when the SDK is missing, from ``extras.install_hint``
    extra_hint: ClassVar[str]

    def __init__(self, config: ProviderConfig) -> None:
        self.config = config
        self.region = config.region or self.default_region
        self.size = config.size or self.default_size
        self.ssh_user = config.ssh_user or self.default_ssh_user

    @abstractmethod
    def check(self) -> None:
        """Credentials work, the region exists, the size is offered there and the image exists.
        Makes read-only calls only; raises :class:`ProviderError`."""

    @abstractmethod
    def prepare(self) -> None:
        """Create the run-wide resources (AWS: a security group; Azure: a resource group, network),
        tagged with the run id. Safe to call twice."""

    @abstractmethod
    def create_vm(self, spec: VMSpec) -> VM:
        """Ask the cloud for one VM and return as soon as it has an id (addresses may be unknown)."""

    @abstractmethod
    def wait_running(self, vm: VM) -> VM:
        """Block until ``vm`` runs and has an address; fill ``public_ip``/``private_ip``."""

    @abstractmethod
    def destroy(self, vms: list[VM]) -> list[str]:
        """Delete ``vms`` and the run-wide resources, waiting until the cloud reports them gone.
        Never raises for one resource: returns one line per resource it could not delete."""

    @abstractmethod
    def find_leftovers(self, run_id: str | None = None) -> list[Leftover]:
        """Every live resource tagged ``RUN_TAG`` (only ``run_id``'s when given)."""

    @abstractmethod
    def reap(self, leftovers: list[Leftover]) -> list[str]:
        """Delete what :meth:`find_leftovers` found; returns one line per failure."""
