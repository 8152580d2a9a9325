"""Azure VMs for the pool (``--pool azure``), through the Azure management SDKs.

Why one module of over 500 lines: it is the whole Provider interface (check, create, list leftovers,
destroy) over five SDK clients, and splitting it would scatter one resource group's lifecycle.

Why it is built this way:

* **One resource group per run.** Everything a run creates (VNet, NSG, public IPs, NICs, VMs,
  their OS disks, the auto-shutdown schedules) lives in the resource group
  ``agentbench-<run id>``. Deleting that group is the one call that removes all of it, so
  :meth:`AzureProvider.destroy` cannot leak the network pieces that deleting VMs one by one leaves
  behind (the reference tool leaked VNets and NSGs), and it works from a fresh provider object
  that never ran :meth:`~AzureProvider.prepare`.
* **Tags.** The group (and every resource in it) carries ``agentbench-run: <run id>``; the reaper
  finds leftovers of killed runs with an ARM ``tagName``/``tagValue`` filter on resource groups.
* **Auto-shutdown is a DevTestLab schedule, not an in-guest shutdown.** A VM that powers itself
  off inside the guest stays allocated and keeps billing; the ``Microsoft.DevTestLab/schedules``
  ``shutdown-computevm-<vm>`` resource deallocates it, which stops the compute bill. It is a daily
  schedule, so the delay must be under 24 hours.

The SDKs (``azure-identity``, ``azure-mgmt-compute``, ``-network``, ``-resource``) are imported
inside the methods; a missing one is a one-line :class:`ProviderError` naming the extra to
install. ``ProviderConfig.extra`` may hold ``subscription_id``, ``credential`` (a TokenCredential),
``transport`` (an azure-core HttpTransport, for tests), ``ssh_cidr`` and ``disk_gb``.
"""

from __future__ import annotations

import base64
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar, TypeVar

from pytest_agentbench.extras import install_hint
from pytest_agentbench.infra.providers.base import (
    CREATED_TAG,
    NAME_TAG,
    RUN_TAG,
    VM,
    Leftover,
    Provider,
    ProviderConfig,
    ProviderError,
    VMSpec,
)
from pytest_agentbench.text import shorten

VNET = "agentbench-vnet"
VNET_PREFIX = "10.42.0.0/16"
SUBNET = "default"
SUBNET_PREFIX = "10.42.0.0/24"
NSG = "agentbench-nsg"
DEVTESTLAB_API_VERSION = "2018-09-15"
#: resource-group deletion force-deletes VMs (no graceful guest shutdown: they are throwaway)
FORCE_DELETION_TYPES = "Microsoft.Compute/virtualMachines"
DEFAULT_DISK_GB = 128
CREDENTIALS_HELP = ("Azure credentials not found or refused: run `az login` or set AZURE_CLIENT_ID, "
                    "AZURE_TENANT_ID and AZURE_CLIENT_SECRET")
SIZE_HELP = "choose another with --pool-size or --pool-region"
IMAGE_FORMS = ("a Marketplace URN publisher:offer:sku:version (e.g. Canonical:ubuntu-24_04-lts:server:latest) "
               "or an image resource id /subscriptions/...")
QUOTA_CODES = {"OperationNotAllowed", "QuotaExceeded"}
IMAGE_CODES = {"ImageNotFound", "PlatformImageNotFound", "InvalidImageReference"}
ALLOCATION_CODES = {"AllocationFailed", "ZonalAllocationFailed", "OverconstrainedAllocationRequest",
                    "OverconstrainedZonalAllocationRequest"}

T = TypeVar("T")


@dataclass(frozen=True)
class _Clients:
    compute: Any
    network: Any
    resource: Any
    compute_models: Any
    network_models: Any
    resource_models: Any


def group_name(run_id: str) -> str:
    """The resource group that holds everything of one run."""
    return f"agentbench-{run_id}"


def parse_image(image: str | None) -> dict[str, str]:
    """``ImageReference`` fields for a Marketplace URN or an image resource id."""
    if not image:
        raise ProviderError(f"the Azure pool needs --pool-image: {IMAGE_FORMS}")
    if image.startswith("/subscriptions/"):
        return {"id": image}
    parts = image.split(":")
    if len(parts) != 4 or not all(parts):
        raise ProviderError(f"Azure image {image!r} is neither {IMAGE_FORMS}; fix --pool-image")
    publisher, offer, sku, version = parts
    return {"publisher": publisher, "offer": offer, "sku": sku, "version": version}


def shutdown_time(hours: float, now: datetime | None = None) -> str:
    """The daily ``HHMM`` (UTC) of a schedule that first fires ``hours`` from now (rounded up to
    the minute, never earlier)."""
    minutes = math.ceil(hours * 60)
    if minutes >= 24 * 60 - 1:
        raise ProviderError(f"Azure auto-shutdown is a daily schedule, so it must be under 24 hours (got {hours:g})")
    at = (now or datetime.now(timezone.utc)) + timedelta(minutes=minutes)
    if at.second or at.microsecond:
        at = at.replace(second=0, microsecond=0) + timedelta(minutes=1)
    return at.strftime("%H%M")


def _error_code(exc: BaseException) -> str:
    error = getattr(exc, "error", None)
    return str(getattr(error, "code", None) or "")


def _error_message(exc: BaseException) -> str:
    error = getattr(exc, "error", None)
    message = getattr(error, "message", None) or getattr(exc, "message", None) or str(exc)
    return shorten(str(message).splitlines()[0] if str(message).strip() else exc.__class__.__name__, 300)


def _restriction_values(restriction: Any) -> list[str]:
    # azure-mgmt-compute >= 35 renamed ``values`` (it clashes with Mapping.values) to ``values_property``
    values = getattr(restriction, "values_property", None)
    if values is None:
        values = getattr(restriction, "values", None)
    return [v.lower() for v in values] if isinstance(values, list) else []


def _enum_text(value: Any) -> str:
    return str(getattr(value, "value", value) or "")


def size_offered(skus: list[Any], size: str, location: str) -> bool:
    """``size`` is a ``virtualMachines`` SKU in ``location`` not restricted for the subscription
    there (a ``Zone`` restriction only closes some zones; the pool does not use zones)."""
    for sku in skus:
        if _enum_text(sku.resource_type).lower() != "virtualmachines" or (sku.name or "").lower() != size.lower():
            continue
        if location not in [loc.lower() for loc in sku.locations or []]:
            continue
        blocked = any(_enum_text(r.reason_code) == "NotAvailableForSubscription"
                      and _enum_text(r.type).lower() == "location" and location in _restriction_values(r)
                      for r in sku.restrictions or [])
        if not blocked:
            return True
    return False


def _import_sdk() -> tuple[Any, Any, Any, Any, Any, Any]:
    try:
        from azure.mgmt.compute import ComputeManagementClient
        from azure.mgmt.compute import models as compute_models
        from azure.mgmt.network import NetworkManagementClient
        from azure.mgmt.network import models as network_models

        try:  # azure-mgmt-resource >= 24 only exposes the client from the subpackage
            from azure.mgmt.resource.resources import ResourceManagementClient
        except ImportError:  # older releases, which mypy checks against the installed one's stubs
            from azure.mgmt.resource import ResourceManagementClient  # type: ignore[attr-defined,no-redef]
        from azure.mgmt.resource.resources import models as resource_models
    except ImportError as exc:
        raise ProviderError(f"the Azure pool needs the Azure SDK ({exc.name or exc} is missing): "
                            f"{AzureProvider.extra_hint}") from None
    return (ComputeManagementClient, NetworkManagementClient, ResourceManagementClient,
            compute_models, network_models, resource_models)


def _default_credential() -> Any:
    try:
        from azure.identity import DefaultAzureCredential
    except ImportError:
        raise ProviderError(f"the Azure pool needs azure-identity for credentials: "
                            f"{AzureProvider.extra_hint}") from None
    return DefaultAzureCredential()


class AzureProvider(Provider):
    """VMs in one resource group per run; see the module docstring."""

    name: ClassVar[str] = "azure"
    default_region: ClassVar[str] = "eastus"
    default_size: ClassVar[str] = "Standard_D8ds_v5"
    default_ssh_user: ClassVar[str] = "azureuser"
    extra_hint: ClassVar[str] = install_hint("azure")
    #: an in-guest shutdown does not stop Azure billing; the DevTestLab schedule deallocates instead
    shutdown_in_guest: ClassVar[bool] = False

    def __init__(self, config: ProviderConfig) -> None:
        super().__init__(config)
        #: the ARM location name ("East US" → "eastus")
        self.location = self.region.replace(" ", "").lower()
        self.group = group_name(config.run_id)
        #: who may reach port 22; the pool always gives it (never open to all by default, see ingress.py)
        self.ssh_cidr: str | None = str(config.extra["ssh_cidr"]) if config.extra.get("ssh_cidr") else None
        self.disk_gb = int(config.extra.get("disk_gb") or DEFAULT_DISK_GB)
        self._clients_cache: _Clients | None = None
        self._lock = threading.Lock()
        self._prepared = False

    # -- plumbing --------------------------------------------------------------------------------

    @property
    def subscription_id(self) -> str:
        subscription = self.config.extra.get("subscription_id") or os.environ.get("AZURE_SUBSCRIPTION_ID")
        if not subscription:
            raise ProviderError("Azure needs a subscription: set AZURE_SUBSCRIPTION_ID or --pool-azure-subscription")
        return str(subscription)

    def _group_id(self, name: str | None = None) -> str:
        return f"/subscriptions/{self.subscription_id}/resourceGroups/{name or self.group}"

    def _id(self, provider_type: str, name: str) -> str:
        return f"{self._group_id()}/providers/{provider_type}/{name}"

    def _clients(self) -> _Clients:
        with self._lock:
            if self._clients_cache is None:
                self._clients_cache = self._make_clients()
            return self._clients_cache

    def _make_clients(self) -> _Clients:
        compute_cls, network_cls, resource_cls, compute_models, network_models, resource_models = _import_sdk()
        subscription = self.subscription_id
        credential = self.config.extra.get("credential") or _default_credential()
        options: dict[str, Any] = {"polling_interval": self.config.poll_interval}
        if self.config.extra.get("transport") is not None:
            options["transport"] = self.config.extra["transport"]
        return _Clients(compute=compute_cls(credential, subscription, **options),
                        network=network_cls(credential, subscription, **options),
                        resource=resource_cls(credential, subscription, **options),
                        compute_models=compute_models, network_models=network_models,
                        resource_models=resource_models)

    def _explain(self, exc: BaseException, doing: str) -> ProviderError:
        """One line for an exception the SDK raised while ``doing`` something."""
        from azure.core.exceptions import ClientAuthenticationError, HttpResponseError

        if isinstance(exc, ProviderError):
            return exc
        if isinstance(exc, ClientAuthenticationError):
            return ProviderError(f"{CREDENTIALS_HELP} ({_error_message(exc)[:160]})")
        code = _error_code(exc)
        if isinstance(exc, HttpResponseError) and (exc.status_code == 403 or code == "AuthorizationFailed"):
            return ProviderError(f"Azure subscription '{self.subscription_id}' refused {doing} ({code or 403}): "
                                 "the signed-in identity needs the Contributor role on it, or choose another "
                                 "subscription with --pool-azure-subscription")
        return ProviderError(f"Azure failed {doing}: {code + ': ' if code else ''}{_error_message(exc)}")

    def _call(self, doing: str, call: Callable[[], T]) -> T:
        from azure.core.exceptions import AzureError

        try:
            return call()
        except AzureError as exc:
            raise self._explain(exc, doing) from None

    def _wait(self, poller: Any, what: str) -> Any:
        result = poller.result(timeout=self.config.wait_timeout)
        if not poller.done():
            raise ProviderError(f"Azure did not finish {what} within {self.config.wait_timeout:g} s")
        return result

    def _run_tags(self) -> dict[str, str]:
        return {RUN_TAG: self.config.run_id,
                CREATED_TAG: datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}

    # -- check -----------------------------------------------------------------------------------

    def check(self) -> None:
        image = parse_image(self.config.image)
        clients = self._clients()
        where = f"listing VM sizes in region '{self.region}'"
        skus = self._call(where, lambda: list(clients.compute.resource_skus.list(
            filter=f"location eq '{self.location}'")))
        if not size_offered(skus, self.size, self.location):
            raise ProviderError(f"VM size '{self.size}' is not available in region '{self.region}' for this "
                                f"subscription (or the region does not exist); {SIZE_HELP}")
        if "publisher" in image:
            self._check_marketplace_image(clients, image)

    def _check_marketplace_image(self, clients: Any, image: dict[str, str]) -> None:
        from azure.core.exceptions import AzureError, ResourceNotFoundError

        images = clients.compute.virtual_machine_images
        args = (self.location, image["publisher"], image["offer"], image["sku"])
        urn = ":".join((*args[1:], image["version"]))
        try:
            if image["version"].lower() == "latest":
                found = bool(images.list(*args, top=1))
            else:
                found = bool(images.get(*args, image["version"]))
        except ResourceNotFoundError:
            found = False
        except AzureError as exc:
            raise self._explain(exc, f"looking up image '{urn}'") from None
        if not found:
            raise ProviderError(f"Azure image '{urn}' was not found in region '{self.region}'; list what exists with "
                                f"`az vm image list --location {self.location} --publisher {image['publisher']} "
                                f"--offer {image['offer']} --sku {image['sku']} --all` and fix --pool-image")

    # -- prepare ---------------------------------------------------------------------------------

    def prepare(self) -> None:
        if self._prepared:
            return
        clients = self._clients()
        tags = self._run_tags()
        from azure.core.exceptions import AzureError  # after _clients(): the SDK is there

        try:
            self._create_group(clients, tags)
            self._create_vnet(clients, tags)
            self._create_nsg(clients, tags)
        except AzureError as exc:
            raise self._prepare_error(exc) from None
        self._prepared = True

    def _prepare_error(self, exc: BaseException) -> ProviderError:
        code = _error_code(exc)
        if "Location" in code or code == "InvalidLocation":
            return ProviderError(f"Azure region '{self.region}' does not exist or is not available to this "
                                 f"subscription ({code}); choose another with --pool-region")
        return self._explain(exc, f"creating resource group '{self.group}' and its network in '{self.region}'")

    def _create_group(self, clients: _Clients, tags: dict[str, str]) -> None:
        group = clients.resource_models.ResourceGroup(location=self.location, tags=tags)
        clients.resource.resource_groups.create_or_update(self.group, group)

    def _create_vnet(self, clients: _Clients, tags: dict[str, str]) -> None:
        m = clients.network_models
        vnet = m.VirtualNetwork(location=self.location, tags=tags,
                                address_space=m.AddressSpace(address_prefixes=[VNET_PREFIX]),
                                subnets=[m.Subnet(name=SUBNET, address_prefix=SUBNET_PREFIX)])
        self._wait(clients.network.virtual_networks.begin_create_or_update(self.group, VNET, vnet),
                   f"creating virtual network '{VNET}'")

    def _create_nsg(self, clients: _Clients, tags: dict[str, str]) -> None:
        if not self.ssh_cidr:
            raise ProviderError("no SSH ingress block was given; pass --pool-ssh-cidr (port 22 is never opened to "
                                "everyone by default)")
        m = clients.network_models
        ssh = m.SecurityRule(name="ssh-in", protocol="Tcp", direction="Inbound", access="Allow", priority=1000,
                             source_address_prefix=self.ssh_cidr, source_port_range="*",
                             destination_address_prefix="*", destination_port_range="22")
        nsg = m.NetworkSecurityGroup(location=self.location, tags=tags, security_rules=[ssh])
        self._wait(clients.network.network_security_groups.begin_create_or_update(self.group, NSG, nsg),
                   f"creating network security group '{NSG}'")

    # -- create ----------------------------------------------------------------------------------

    def create_vm(self, spec: VMSpec) -> VM:
        hhmm = shutdown_time(spec.auto_shutdown_hours) if spec.auto_shutdown_hours > 0 else None
        image = parse_image(spec.image)
        clients = self._clients()
        tags = {**self._run_tags(), **spec.tags, NAME_TAG: spec.name}
        from azure.core.exceptions import AzureError  # after _clients(): the SDK is there

        try:
            ip_id = self._create_public_ip(clients, spec.name, tags)
            nic_id = self._create_nic(clients, spec.name, ip_id, tags)
            vm = self._create_machine(clients, spec, image, nic_id, tags)
        except AzureError as exc:
            raise self._create_error(exc, spec) from None
        vm_id = getattr(vm, "id", None) or self._id("Microsoft.Compute/virtualMachines", spec.name)
        if hhmm is not None:
            self._schedule_shutdown(clients, spec.name, vm_id, hhmm, tags)
        return VM(name=spec.name, provider=self.name, resource_id=vm_id, region=self.location, size=spec.size,
                  ssh_user=spec.ssh_user, created_at=time.time(),
                  extra={"resource_group": self.group, "auto_shutdown_utc": hhmm})

    def _create_public_ip(self, clients: _Clients, name: str, tags: dict[str, str]) -> str:
        m = clients.network_models
        ip = m.PublicIPAddress(location=self.location, tags=tags, sku=m.PublicIPAddressSku(name="Standard"),
                               public_ip_allocation_method="Static", public_ip_address_version="IPv4")
        poller = clients.network.public_ip_addresses.begin_create_or_update(self.group, f"{name}-ip", ip)
        result = self._wait(poller, f"creating public IP '{name}-ip'")
        return getattr(result, "id", None) or self._id("Microsoft.Network/publicIPAddresses", f"{name}-ip")

    def _create_nic(self, clients: _Clients, name: str, ip_id: str, tags: dict[str, str]) -> str:
        m = clients.network_models
        subnet_id = f"{self._id('Microsoft.Network/virtualNetworks', VNET)}/subnets/{SUBNET}"
        config = m.NetworkInterfaceIPConfiguration(
            name="ipconfig1", subnet=m.Subnet(id=subnet_id), private_ip_allocation_method="Dynamic",
            public_ip_address=m.PublicIPAddress(id=ip_id, delete_option="Delete"))
        nic = m.NetworkInterface(location=self.location, tags=tags, ip_configurations=[config],
                                 network_security_group=m.NetworkSecurityGroup(
                                     id=self._id("Microsoft.Network/networkSecurityGroups", NSG)))
        poller = clients.network.network_interfaces.begin_create_or_update(self.group, f"{name}-nic", nic)
        result = self._wait(poller, f"creating network interface '{name}-nic'")
        return getattr(result, "id", None) or self._id("Microsoft.Network/networkInterfaces", f"{name}-nic")

    def _create_machine(self, clients: _Clients, spec: VMSpec, image: dict[str, str], nic_id: str,
                        tags: dict[str, str]) -> Any:
        m = clients.compute_models
        key = m.SshPublicKey(path=f"/home/{spec.ssh_user}/.ssh/authorized_keys", key_data=spec.ssh_public_key)
        os_profile = m.OSProfile(
            computer_name=spec.name, admin_username=spec.ssh_user,
            custom_data=base64.b64encode(spec.user_data.encode()).decode(),
            linux_configuration=m.LinuxConfiguration(disable_password_authentication=True,
                                                     ssh=m.SshConfiguration(public_keys=[key])))
        os_disk = m.OSDisk(name=f"{spec.name}-osdisk", create_option="FromImage", disk_size_gb=self.disk_gb,
                           managed_disk=m.ManagedDiskParameters(storage_account_type="Premium_LRS"),
                           delete_option="Delete")
        vm = m.VirtualMachine(
            location=self.location, tags=tags, hardware_profile=m.HardwareProfile(vm_size=spec.size),
            storage_profile=m.StorageProfile(image_reference=m.ImageReference(**image), os_disk=os_disk),
            os_profile=os_profile,
            network_profile=m.NetworkProfile(network_interfaces=[
                m.NetworkInterfaceReference(id=nic_id, primary=True, delete_option="Delete")]))
        poller = clients.compute.virtual_machines.begin_create_or_update(self.group, spec.name, vm)
        return self._wait(poller, f"creating VM '{spec.name}'")

    def _create_error(self, exc: BaseException, spec: VMSpec) -> ProviderError:
        code, message = _error_code(exc), _error_message(exc)
        where = f"VM size '{spec.size}' in region '{self.region}'"
        if code == "SkuNotAvailable":
            return ProviderError(f"VM size '{spec.size}' is not available in region '{self.region}' for this "
                                 f"subscription right now ({code}); {SIZE_HELP}")
        if code in QUOTA_CODES or "quota" in message.lower():
            return ProviderError(f"Azure quota does not allow {where} ({code}: {message}); request more quota "
                                 f"or {SIZE_HELP}")
        if code in IMAGE_CODES or (code == "InvalidParameter" and "image" in message.lower()):
            return ProviderError(f"Azure image '{spec.image}' cannot be used in region '{self.region}' ({code}: "
                                 f"{message}); fix --pool-image")
        if code in ALLOCATION_CODES:
            return ProviderError(f"Azure could not allocate {where} right now ({code}); retry later or {SIZE_HELP}")
        return self._explain(exc, f"creating VM '{spec.name}' ({where})")

    def _schedule_shutdown(self, clients: _Clients, name: str, vm_id: str, hhmm: str, tags: dict[str, str]) -> None:
        schedule_id = f"{self._group_id()}/providers/Microsoft.DevTestLab/schedules/shutdown-computevm-{name}"
        properties = {"status": "Enabled", "taskType": "ComputeVmShutdownTask",
                      "dailyRecurrence": {"time": hhmm}, "timeZoneId": "UTC", "targetResourceId": vm_id,
                      "notificationSettings": {"status": "Disabled"}}
        schedule = clients.resource_models.GenericResource(location=self.location, tags=tags, properties=properties)
        doing = f"scheduling the auto-shutdown of VM '{name}' at {hhmm} UTC"
        self._call(doing, lambda: self._wait(clients.resource.resources.begin_create_or_update_by_id(
            resource_id=schedule_id, api_version=DEVTESTLAB_API_VERSION, parameters=schedule), doing))

    # -- wait ------------------------------------------------------------------------------------

    def wait_running(self, vm: VM) -> VM:
        clients = self._clients()
        group = vm.extra.get("resource_group") or self.group
        deadline = time.monotonic() + self.config.wait_timeout
        while True:
            codes = self._status_codes(clients, group, vm.name)
            failed = next((c for c in codes if c.lower().startswith("provisioningstate/failed")), None)
            if failed:
                raise ProviderError(f"Azure VM '{vm.name}' failed to provision ({failed}); see its activity log "
                                    f"in resource group '{group}'")
            if any(c.lower() == "powerstate/running" for c in codes):
                break
            if time.monotonic() >= deadline:
                raise ProviderError(f"Azure VM '{vm.name}' was not running after {self.config.wait_timeout:g} s "
                                    f"(last status: {', '.join(codes) or 'none'})")
            time.sleep(self.config.poll_interval)
        vm.public_ip, vm.private_ip = self._addresses(clients, group, vm.name)
        return vm

    def _status_codes(self, clients: _Clients, group: str, name: str) -> list[str]:
        view = self._call(f"reading the state of VM '{name}'",
                          lambda: clients.compute.virtual_machines.instance_view(group, name))
        return [s.code for s in view.statuses or [] if s.code]

    def _addresses(self, clients: _Clients, group: str, name: str) -> tuple[str, str | None]:
        ip = self._call(f"reading the public IP of VM '{name}'",
                        lambda: clients.network.public_ip_addresses.get(group, f"{name}-ip"))
        nic = self._call(f"reading the network interface of VM '{name}'",
                         lambda: clients.network.network_interfaces.get(group, f"{name}-nic"))
        if not ip.ip_address:
            raise ProviderError(f"Azure VM '{name}' runs but its public IP '{name}-ip' has no address")
        configs = nic.ip_configurations or []
        return ip.ip_address, (configs[0].private_ip_address if configs else None)

    # -- delete ----------------------------------------------------------------------------------

    def destroy(self, vms: list[VM]) -> list[str]:
        failures = self._delete_groups([self.group])
        if not failures:
            now = time.time()
            for vm in vms:
                if vm.deleted_at is None:
                    vm.deleted_at = now
        return failures

    def find_leftovers(self, run_id: str | None = None) -> list[Leftover]:
        clients = self._clients()
        query = f"tagName eq '{RUN_TAG}'"
        if run_id is not None:
            query += f" and tagValue eq '{run_id.replace(chr(39), chr(39) * 2)}'"
        groups = self._call("listing tagged resource groups",
                            lambda: list(clients.resource.resource_groups.list(filter=query)))
        leftovers = []
        for group in groups:
            tags = group.tags or {}
            if RUN_TAG not in tags or (run_id is not None and tags[RUN_TAG] != run_id):
                continue  # ARM applies the filter; this guards against a looser one
            state = group.properties.provisioning_state if group.properties else ""
            leftovers.append(Leftover(kind="resource-group", resource_id=group.id, name=group.name,
                                      run_id=tags[RUN_TAG], region=group.location or "", state=state or ""))
        return leftovers

    def reap(self, leftovers: list[Leftover]) -> list[str]:
        failures = [f"{item.kind} '{item.name}': not an Azure resource group, left alone"
                    for item in leftovers if item.kind != "resource-group"]
        return failures + self._delete_groups([item.name for item in leftovers if item.kind == "resource-group"])

    def _delete_groups(self, names: list[str]) -> list[str]:
        """Delete resource groups (all started before waiting for any); one line per failure."""
        if not names:
            return []
        try:
            clients = self._clients()
        except ProviderError as err:
            return [f"resource group '{name}' was not deleted: {err}" for name in names]
        started: list[tuple[str, Any]] = []
        failures: list[str] = []
        for name in names:
            try:
                poller = clients.resource.resource_groups.begin_delete(name, force_deletion_types=FORCE_DELETION_TYPES)
            except Exception as exc:  # noqa: BLE001 - destroy never raises
                failures += self._delete_failure(name, exc)
            else:
                started.append((name, poller))
        deadline = time.monotonic() + self.config.wait_timeout
        for name, poller in started:
            try:
                poller.result(timeout=max(0.0, deadline - time.monotonic()))
            except Exception as exc:  # noqa: BLE001
                failures += self._delete_failure(name, exc)
                continue
            if not poller.done():
                failures.append(f"resource group '{name}' was still being deleted after "
                                f"{self.config.wait_timeout:g} s; check it with `az group show -n {name}` "
                                "or run `pytest --agentbench-reap` later")
        return failures

    def _delete_failure(self, name: str, exc: BaseException) -> list[str]:
        if getattr(exc, "status_code", None) == 404:
            return []  # already gone
        return [f"resource group '{name}' was not deleted: {self._explain(exc, f'deleting resource group {name!r}')}"]
