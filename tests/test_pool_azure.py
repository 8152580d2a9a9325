"""The Azure provider against a fake Azure Resource Manager plugged into the SDK's own pipeline.

``fake_arm.FakeARMTransport`` replaces only the HTTP transport: the real management clients build
the requests, authenticate with a (fake) token credential, poll long-running operations with
``ARMPolling`` and map ARM error bodies to exceptions, so these tests check the wire payloads the
provider produces and the protocol it relies on. Nothing contacts Azure.
"""

from __future__ import annotations

import base64
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pytest_agentbench.infra.providers import make_provider
from pytest_agentbench.infra.providers.azure import AzureProvider, shutdown_time
from pytest_agentbench.infra.providers.base import (
    CREATED_TAG,
    NAME_TAG,
    RUN_TAG,
    VM,
    ProviderConfig,
    ProviderError,
    VMSpec,
)

for _sdk in ("azure.identity", "azure.mgmt.compute", "azure.mgmt.network", "azure.mgmt.resource"):
    pytest.importorskip(_sdk, reason="the Azure tests need the azure extra (pip install -e '.[azure]')")
ClientAuthenticationError = pytest.importorskip("azure.core.exceptions").ClientAuthenticationError
CredentialUnavailableError = pytest.importorskip("azure.identity").CredentialUnavailableError
fake_arm = pytest.importorskip("fake_arm")  # tests/ is on sys.path (rootdir conftest, no __init__.py)
ARM, SUBSCRIPTION, FakeARM = fake_arm.ARM, fake_arm.SUBSCRIPTION, fake_arm.FakeARM

IMAGE = "Canonical:ubuntu-24_04-lts:server:latest"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests agentbench"
USER_DATA = "#cloud-config\nruncmd:\n  - echo hello > /tmp/agentbench\n"
VM_TYPE = "Microsoft.Compute/virtualMachines"


@pytest.fixture
def fake() -> FakeARM:
    return FakeARM()


def provider(fake: FakeARM, run_id: str = "run1", image: str | None = IMAGE, wait_timeout: float = 5.0,
             poll_interval: float = 0.0, **options: object) -> AzureProvider:
    extra = {"subscription_id": SUBSCRIPTION, "credential": fake.credential(), "transport": fake.transport(),
             "ssh_cidr": "198.51.100.7/32"}
    extra.update(options.pop("extra", {}))  # type: ignore[call-overload]
    config = ProviderConfig(run_id=run_id, image=image, extra=extra, poll_interval=poll_interval,
                            wait_timeout=wait_timeout, **options)  # type: ignore[arg-type]
    made = make_provider("azure", config)
    assert isinstance(made, AzureProvider)
    return made


def spec(name: str, run_id: str = "run1", image: str = IMAGE, size: str = "Standard_D8ds_v5",
         hours: float = 4.0) -> VMSpec:
    return VMSpec(name=name, size=size, region="eastus", image=image, ssh_user="azureuser", ssh_public_key=KEY,
                  user_data=USER_DATA, tags={RUN_TAG: run_id, "worker": name}, auto_shutdown_hours=hours)


def one_line_error(excinfo: pytest.ExceptionInfo[ProviderError]) -> str:
    message = str(excinfo.value)
    assert "\n" not in message, message
    return message


def last_put(fake: FakeARM, kind: str) -> dict:
    return fake.calls("PUT", kind)[-1].body


# -- class attributes and imports ------------------------------------------------------------------


def test_class_attributes():
    assert (AzureProvider.name, AzureProvider.default_region, AzureProvider.default_size,
            AzureProvider.default_ssh_user) == ("azure", "eastus", "Standard_D8ds_v5", "azureuser")
    assert AzureProvider.extra_hint == f"pip install -e '{Path(__file__).resolve().parent.parent}[azure]'"
    assert AzureProvider.shutdown_in_guest is False


def test_module_imports_without_the_sdk():
    code = textwrap.dedent("""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "azure" or name.startswith("azure."):
                    raise ImportError(f"blocked {name}", name=name)
        sys.meta_path.insert(0, Block())
        from pytest_agentbench.infra.providers.base import ProviderConfig, ProviderError
        from pytest_agentbench.infra.providers.azure import AzureProvider
        try:
            AzureProvider(ProviderConfig(run_id="r", image="a:b:c:d", extra={"subscription_id": "s"})).check()
        except ProviderError as err:
            print(err)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith(AzureProvider.extra_hint), out.stdout
    assert out.stdout.count("\n") == 1


# -- check -----------------------------------------------------------------------------------------


def test_check_accepts_an_offered_size_and_an_existing_image(fake):
    provider(fake).check()
    assert {r.method for r in fake.requests} == {"GET"}  # read-only
    (skus,) = fake.calls(kind="skus")
    assert skus.query["$filter"] == "location eq 'eastus'"
    assert fake.calls(kind="images"), "the image was not looked up"


def test_check_uses_the_subscription_from_the_environment(fake, monkeypatch):
    monkeypatch.setenv("AZURE_SUBSCRIPTION_ID", SUBSCRIPTION)
    azure = provider(fake, extra={"subscription_id": None})
    azure.check()
    assert fake.requests[0].path.startswith(f"/subscriptions/{SUBSCRIPTION}/")


def test_missing_subscription(fake, monkeypatch):
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID", raising=False)
    with pytest.raises(ProviderError) as excinfo:
        provider(fake, extra={"subscription_id": None}).check()
    assert one_line_error(excinfo) == ("Azure needs a subscription: set AZURE_SUBSCRIPTION_ID or "
                                       "--pool-azure-subscription")
    assert fake.requests == []


@pytest.mark.parametrize("error", [CredentialUnavailableError("no az login here"),
                                   ClientAuthenticationError("AADSTS7000215: Invalid client secret")])
def test_credential_failure(fake, error):
    fake.token_error = error
    with pytest.raises(ProviderError) as excinfo:
        provider(fake).check()
    message = one_line_error(excinfo)
    assert message.startswith("Azure credentials not found or refused: run `az login` or set AZURE_CLIENT_ID, "
                              "AZURE_TENANT_ID and AZURE_CLIENT_SECRET")
    assert fake.requests == []  # the token was refused before anything went on the wire


def test_a_refused_token_at_arm_is_a_credential_error(fake):
    fake.accepted_token = "another"  # ARM answers 401 AuthenticationFailed to the credential's token
    with pytest.raises(ProviderError) as excinfo:
        provider(fake).check()
    assert one_line_error(excinfo).startswith("Azure credentials not found or refused")


@pytest.mark.parametrize(("size", "region"), [
    ("Standard_NC24ads_A100_v4", "eastus"),  # offered there, but NotAvailableForSubscription
    ("Standard_D4s_v5", "westus2"),  # not offered in that region
    ("Standard_D8ds_v5", "atlantis"),  # a region with no SKUs at all (does not exist)
])
def test_size_not_available(fake, size, region):
    with pytest.raises(ProviderError) as excinfo:
        provider(fake, size=size, region=region).check()
    assert one_line_error(excinfo) == (
        f"VM size '{size}' is not available in region '{region}' for this subscription (or the region does not "
        "exist); choose another with --pool-size or --pool-region")


def test_a_zone_restriction_leaves_the_size_usable(fake):
    provider(fake, size="Standard_D2s_v5", region="westus2").check()


def test_region_is_normalised_to_the_arm_location_name(fake):
    provider(fake, region="West Europe").check()
    assert fake.calls(kind="skus")[0].query["$filter"] == "location eq 'westeurope'"


def test_authorization_failure_names_the_subscription(fake):
    denied = "The client 'x' does not have authorization to perform action 'Microsoft.Compute/skus/read'."
    fake.fail_next["skus"] = ("AuthorizationFailed", 403, denied)
    with pytest.raises(ProviderError) as excinfo:
        provider(fake).check()
    message = one_line_error(excinfo)
    assert f"subscription '{SUBSCRIPTION}'" in message and "AuthorizationFailed" in message


@pytest.mark.parametrize("image", ["ubuntu", "Canonical:ubuntu-24_04-lts:server", "a::c:d",
                                   "https://example.com/image.vhd", "subscriptions/x/images/y"])
def test_bad_image_string(fake, image):
    with pytest.raises(ProviderError) as excinfo:
        provider(fake, image=image).check()
    message = one_line_error(excinfo)
    assert repr(image) in message and "--pool-image" in message
    assert fake.requests == []


def test_image_is_required(fake):
    with pytest.raises(ProviderError) as excinfo:
        provider(fake, image=None).check()
    assert "needs --pool-image" in one_line_error(excinfo)


@pytest.mark.parametrize("image", ["Canonical:no-such-offer:server:latest",
                                   "Canonical:ubuntu-24_04-lts:server:1.2.3"])
def test_image_that_does_not_exist(fake, image):
    with pytest.raises(ProviderError) as excinfo:
        provider(fake, image=image).check()
    message = one_line_error(excinfo)
    assert f"image '{image}' was not found in region 'eastus'" in message


def test_image_with_an_explicit_version(fake):
    provider(fake, image="Canonical:ubuntu-24_04-lts:server:24.04.202502110").check()
    assert fake.calls(kind="images")[-1].path.endswith("/versions/24.04.202502110")


def test_image_resource_id(fake):
    image = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/images/providers/Microsoft.Compute/images/agentbench-1"
    fake.custom_images.add(image)
    azure = provider(fake, image=image)
    azure.check()
    azure.prepare()
    azure.create_vm(spec("w0", image=image))
    reference = last_put(fake, "virtualMachines")["properties"]["storageProfile"]["imageReference"]
    assert reference == {"id": image}


# -- the full cycle --------------------------------------------------------------------------------


def test_full_cycle(fake):
    azure = provider(fake)
    azure.check()
    azure.prepare()
    started = datetime.now(timezone.utc)
    vms = [azure.create_vm(spec(f"agentbench-run1-w{n}")) for n in range(2)]
    vms = [azure.wait_running(vm) for vm in vms]

    # addresses filled from the public IP and the NIC
    assert [vm.public_ip for vm in vms] == ["20.0.0.4", "20.0.0.5"]
    assert [vm.private_ip for vm in vms] == ["10.42.0.4", "10.42.0.5"]
    group_id = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/agentbench-run1"
    for vm in vms:
        assert vm.resource_id == f"{group_id}/providers/{VM_TYPE}/{vm.name}"
        assert (vm.provider, vm.region, vm.size, vm.ssh_user) == ("azure", "eastus", "Standard_D8ds_v5", "azureuser")
        assert vm.created_at > 0 and vm.deleted_at is None
        assert VM.from_dict(vm.to_dict()) == vm

    # the resource group and the network, tagged with the run
    group = fake.resource_groups["agentbench-run1"]
    assert group["location"] == "eastus" and group["tags"][RUN_TAG] == "run1"
    assert datetime.strptime(group["tags"][CREATED_TAG], "%Y-%m-%dT%H:%M:%SZ")
    vnet = last_put(fake, "virtualNetworks")
    assert vnet["properties"]["addressSpace"]["addressPrefixes"] == ["10.42.0.0/16"]
    assert vnet["properties"]["subnets"] == [{"name": "default", "properties": {"addressPrefix": "10.42.0.0/24"}}]
    (rule,) = last_put(fake, "networkSecurityGroups")["properties"]["securityRules"]
    assert rule["properties"] == {"protocol": "Tcp", "sourcePortRange": "*", "destinationPortRange": "22",
                                  "sourceAddressPrefix": "198.51.100.7/32", "destinationAddressPrefix": "*",
                                  "access": "Allow",
                                  "priority": 1000, "direction": "Inbound"}
    for put in fake.calls("PUT"):
        assert put.body["tags"][RUN_TAG] == "run1", put.path

    # the public IP and the NIC
    ip = fake.calls("PUT", "publicIPAddresses")[0].body
    assert ip["sku"] == {"name": "Standard"} and ip["properties"]["publicIPAllocationMethod"] == "Static"
    nic = fake.calls("PUT", "networkInterfaces")[0].body["properties"]
    assert nic["networkSecurityGroup"]["id"].endswith("/networkSecurityGroups/agentbench-nsg")
    config = nic["ipConfigurations"][0]["properties"]
    assert config["subnet"]["id"].endswith("/virtualNetworks/agentbench-vnet/subnets/default")
    assert config["publicIPAddress"]["id"].endswith("/publicIPAddresses/agentbench-run1-w0-ip")

    # the VM
    body = fake.calls("PUT", "virtualMachines")[0].body
    props = body["properties"]
    assert body["location"] == "eastus"
    assert body["tags"] == {**body["tags"], RUN_TAG: "run1", "worker": "agentbench-run1-w0",
                            NAME_TAG: "agentbench-run1-w0"}
    assert props["hardwareProfile"] == {"vmSize": "Standard_D8ds_v5"}
    assert props["storageProfile"]["imageReference"] == {"publisher": "Canonical", "offer": "ubuntu-24_04-lts",
                                                         "sku": "server", "version": "latest"}
    disk = props["storageProfile"]["osDisk"]
    assert (disk["createOption"], disk["diskSizeGB"], disk["deleteOption"]) == ("FromImage", 128, "Delete")
    assert disk["managedDisk"] == {"storageAccountType": "Premium_LRS"}
    os_profile = props["osProfile"]
    assert os_profile["adminUsername"] == "azureuser" and os_profile["computerName"] == "agentbench-run1-w0"
    assert base64.b64decode(os_profile["customData"]).decode() == USER_DATA
    assert os_profile["linuxConfiguration"] == {
        "disablePasswordAuthentication": True,
        "ssh": {"publicKeys": [{"path": "/home/azureuser/.ssh/authorized_keys", "keyData": KEY}]}}
    assert props["networkProfile"]["networkInterfaces"][0]["id"].endswith("/networkInterfaces/agentbench-run1-w0-nic")

    # the auto-shutdown schedules: DevTestLab resources pointing at the VMs, 4 hours from now
    for vm in vms:
        schedule = fake.get(f"{group_id}/providers/Microsoft.DevTestLab/schedules/shutdown-computevm-{vm.name}")
        assert schedule is not None
        props = schedule["properties"]
        assert props["targetResourceId"] == vm.resource_id
        assert (props["taskType"], props["status"], props["timeZoneId"]) == ("ComputeVmShutdownTask", "Enabled", "UTC")
        assert props["notificationSettings"] == {"status": "Disabled"}
        assert props["dailyRecurrence"]["time"] == vm.extra["auto_shutdown_utc"]
        assert props["dailyRecurrence"]["time"] in {shutdown_time(4, started), shutdown_time(4)}
    (schedule_put, _) = fake.calls("PUT", "schedules")
    assert schedule_put.query["api-version"] == "2018-09-15"

    # every call carried an api-version, and the long-running operations were really polled
    assert all(r.query.get("api-version") for r in fake.requests)
    assert len(fake.calls("GET", "asyncOperation")) >= 2 * 7  # vnet, nsg, 2 x (ip, nic, vm): InProgress, then done
    assert any(r.path.endswith(f"/{VM_TYPE}/{vms[0].name}") for r in fake.calls("GET", "virtualMachines"))
    assert len(fake.calls("GET", "instanceView")) == 4  # "starting", then "running", per VM

    leftovers = azure.find_leftovers("run1")
    assert [(lo.kind, lo.name, lo.run_id, lo.region, lo.state) for lo in leftovers] == [
        ("resource-group", "agentbench-run1", "run1", "eastus", "Succeeded")]

    assert azure.destroy(vms) == []
    assert all(vm.deleted_at is not None for vm in vms)
    assert fake.resource_groups == {} and fake.resources == {}
    (delete,) = fake.calls("DELETE")
    assert delete.path.lower().endswith("/resourcegroups/agentbench-run1")
    assert delete.query["forceDeletionTypes"] == VM_TYPE
    assert len(fake.calls("GET", "operationResult")) == 2  # 202 once, then 200
    assert azure.find_leftovers() == []


def test_lro_polls_until_the_operation_finishes(fake):
    fake.async_polls = 3
    fake.delete_polls = 4
    azure = provider(fake)
    azure.prepare()
    azure.create_vm(spec("w0", hours=0))
    vm_ops = [r for r in fake.calls("GET", "asyncOperation") if "/Microsoft.Compute/" in r.path]
    assert len(vm_ops) == 4  # three InProgress, one Succeeded
    assert fake.get(f"{fake.group_id('agentbench-run1')}/providers/{VM_TYPE}/w0")["properties"][
        "provisioningState"] == "Succeeded"
    assert azure.destroy([]) == []
    assert len(fake.calls("GET", "operationResult")) == 5
    assert fake.resource_groups == {}


def test_prepare_is_idempotent(fake):
    azure = provider(fake, extra={"ssh_cidr": "203.0.113.0/24"})
    azure.prepare()
    azure.prepare()
    assert len(fake.calls("PUT")) == 3
    provider(fake).prepare()  # another object: the same PUTs again, accepted by ARM as updates
    assert len(fake.calls("PUT")) == 6
    assert sorted(r["name"] for r in fake.resources_in("agentbench-run1")) == ["agentbench-nsg", "agentbench-vnet"]
    (rule,) = fake.calls("PUT", "networkSecurityGroups")[0].body["properties"]["securityRules"]
    assert rule["properties"]["sourceAddressPrefix"] == "203.0.113.0/24"


def test_prepare_in_a_region_that_does_not_exist(fake):
    fake.skus = [*fake.skus, {"name": "Standard_D8ds_v5", "locations": ["atlantis"]}]
    with pytest.raises(ProviderError) as excinfo:
        provider(fake, region="atlantis").prepare()
    assert "region 'atlantis' does not exist" in one_line_error(excinfo)


def test_disk_size_and_no_auto_shutdown(fake):
    azure = provider(fake, extra={"disk_gb": 64})
    azure.prepare()
    vm = azure.create_vm(spec("w0", hours=0))
    assert last_put(fake, "virtualMachines")["properties"]["storageProfile"]["osDisk"]["diskSizeGB"] == 64
    assert fake.calls(kind="schedules") == [] and vm.extra["auto_shutdown_utc"] is None


def test_shutdown_time():
    now = datetime(2025, 3, 1, 10, 0, 0, tzinfo=timezone.utc)
    assert shutdown_time(4, now) == "1400"
    assert shutdown_time(4, now.replace(second=30)) == "1401"  # rounded up, never earlier
    assert shutdown_time(0.5, now.replace(hour=23, minute=45)) == "0015"
    assert shutdown_time(23.5, now) == "0930"
    with pytest.raises(ProviderError, match="under 24 hours"):
        shutdown_time(24, now)


def test_auto_shutdown_of_a_day_or_more_is_refused_before_creating_anything(fake):
    azure = provider(fake)
    azure.prepare()
    puts = len(fake.calls("PUT"))
    with pytest.raises(ProviderError) as excinfo:
        azure.create_vm(spec("w0", hours=30))
    assert "under 24 hours (got 30)" in one_line_error(excinfo)
    assert len(fake.calls("PUT")) == puts


# -- create errors ---------------------------------------------------------------------------------


def test_create_error_sku_not_available(fake):
    azure = provider(fake)
    azure.prepare()
    message = ("The requested VM size for resource 'Following SKUs have failed for Capacity Restrictions: "
               "Standard_D8ds_v5' is currently not available in location 'eastus'.")
    fake.fail_next["PUT virtualMachines"] = ("SkuNotAvailable", 409, message)
    with pytest.raises(ProviderError) as excinfo:
        azure.create_vm(spec("w0"))
    message = one_line_error(excinfo)
    assert message.startswith("VM size 'Standard_D8ds_v5' is not available in region 'eastus'")
    assert "--pool-size" in message


def test_create_error_restricted_size_rejected_by_arm(fake):
    azure = provider(fake, size="Standard_NC24ads_A100_v4")
    azure.prepare()
    with pytest.raises(ProviderError) as excinfo:
        azure.create_vm(spec("w0", size="Standard_NC24ads_A100_v4"))
    assert "VM size 'Standard_NC24ads_A100_v4' is not available in region 'eastus'" in one_line_error(excinfo)


def test_create_error_quota(fake):
    azure = provider(fake)
    azure.prepare()
    message = ("Operation could not be completed as it results in exceeding approved standardDDSv5Family Cores "
               "quota.\nAdditional details - Deployment Model: Resource Manager, Location: eastus, Current Limit: "
               "10, Current Usage: 8")
    fake.fail_next["PUT virtualMachines"] = ("OperationNotAllowed", 409, message)
    with pytest.raises(ProviderError) as excinfo:
        azure.create_vm(spec("w0"))
    message = one_line_error(excinfo)
    assert "quota" in message and "'Standard_D8ds_v5'" in message and "'eastus'" in message


def test_create_error_image_not_found(fake):
    azure = provider(fake)
    azure.prepare()
    image = "Canonical:ubuntu-24_04-lts:server:9.9.9"
    with pytest.raises(ProviderError) as excinfo:
        azure.create_vm(spec("w0", image=image))  # ARM's own validation: InvalidParameter naming the image
    message = one_line_error(excinfo)
    assert f"image '{image}'" in message and "InvalidParameter" in message and "--pool-image" in message


def test_create_error_allocation_failed_during_the_lro(fake):
    azure = provider(fake)
    azure.prepare()
    message = "Allocation failed. We do not have sufficient capacity for the requested VM size in this region."
    fake.fail_async["virtualMachines"] = ("AllocationFailed", message)
    with pytest.raises(ProviderError) as excinfo:
        azure.create_vm(spec("w0"))
    message = one_line_error(excinfo)
    assert "could not allocate VM size 'Standard_D8ds_v5' in region 'eastus'" in message
    assert "AllocationFailed" in message


def test_create_error_other(fake):
    azure = provider(fake)
    azure.prepare()
    message = "Cannot create more than 10 public IP addresses."
    fake.fail_next["PUT publicIPAddresses"] = ("PublicIPCountLimitReached", 400, message)
    with pytest.raises(ProviderError) as excinfo:
        azure.create_vm(spec("w0"))
    assert "PublicIPCountLimitReached: Cannot create more than 10" in one_line_error(excinfo)


def test_create_without_prepare_is_an_invalid_reference(fake):
    fake.add_group("agentbench-run1", tags={RUN_TAG: "run1"})
    with pytest.raises(ProviderError) as excinfo:
        provider(fake).create_vm(spec("w0"))
    assert "InvalidResourceReference" in one_line_error(excinfo)


# -- wait_running ----------------------------------------------------------------------------------


def test_wait_running_fails_on_a_failed_provisioning(fake):
    azure = provider(fake)
    azure.prepare()
    vm = azure.create_vm(spec("w0"))
    fake.instance_view_script["w0"] = ["ProvisioningState/failed/AllocationFailed"]
    with pytest.raises(ProviderError) as excinfo:
        azure.wait_running(vm)
    assert "'w0' failed to provision (ProvisioningState/failed/AllocationFailed)" in one_line_error(excinfo)


def test_wait_running_times_out(fake):
    azure = provider(fake, wait_timeout=0.05, poll_interval=0.01)
    azure.prepare()
    vm = azure.create_vm(spec("w0"))
    fake.instance_view_script["w0"] = ["PowerState/starting"]
    with pytest.raises(ProviderError) as excinfo:
        azure.wait_running(vm)
    assert "was not running after 0.05 s (last status: ProvisioningState/succeeded, PowerState/starting)" in (
        one_line_error(excinfo))
    assert vm.public_ip is None


# -- destroy, leftovers, reap ----------------------------------------------------------------------


def test_destroy_from_a_fresh_provider_and_twice(fake):
    first = provider(fake)
    first.prepare()
    vms = [first.create_vm(spec("w0"))]
    again = provider(fake)  # prepare() never ran on this object
    assert again.destroy(vms) == []
    assert fake.resource_groups == {} and fake.resources == {}
    assert again.destroy(vms) == []  # 404 ResourceGroupNotFound is success
    assert provider(fake, run_id="never-prepared").destroy([]) == []


def test_destroy_reports_a_failure_and_never_raises(fake):
    azure = provider(fake)
    azure.prepare()
    vm = azure.create_vm(spec("w0"))
    message = "The scope cannot perform delete operation because following scope(s) are locked."
    fake.fail_next["DELETE resourceGroups"] = ("ScopeLocked", 409, message)
    (failure,) = azure.destroy([vm])
    assert "resource group 'agentbench-run1' was not deleted" in failure and "ScopeLocked" in failure
    assert "\n" not in failure and vm.deleted_at is None
    assert "agentbench-run1" in fake.resource_groups


def test_destroy_times_out(fake):
    fake.delete_polls = 10**9
    azure = provider(fake, wait_timeout=0.1, poll_interval=0.01)
    azure.prepare()
    try:
        (failure,) = azure.destroy([])
        assert "'agentbench-run1' was still being deleted after 0.1 s" in failure
        assert fake.resource_groups["agentbench-run1"]["properties"]["provisioningState"] == "Deleting"
    finally:
        fake.finish_operations()  # lets the SDK's polling thread end


def test_destroy_without_credentials_is_a_failure_line(fake):
    fake.token_error = CredentialUnavailableError("no az login here")
    (failure,) = provider(fake).destroy([])
    assert failure.startswith("resource group 'agentbench-run1' was not deleted: Azure credentials not found")


def test_find_leftovers_filters_by_tag_and_run_id(fake):
    provider(fake, run_id="run1").prepare()
    fake.add_group("agentbench-run2", location="westeurope", tags={RUN_TAG: "run2", "owner": "ci"})
    fake.add_group("production", tags={"owner": "ops"})  # untagged by agentbench: never listed
    fake.add_group("agentbench-lookalike")  # named like ours but untagged: never listed
    azure = provider(fake, run_id="run3")

    everything = azure.find_leftovers()
    assert sorted((lo.name, lo.run_id, lo.region) for lo in everything) == [
        ("agentbench-run1", "run1", "eastus"), ("agentbench-run2", "run2", "westeurope")]
    assert all(lo.kind == "resource-group" and lo.resource_id == fake.group_id(lo.name) for lo in everything)
    assert [lo.name for lo in azure.find_leftovers("run2")] == ["agentbench-run2"]
    assert azure.find_leftovers("run9") == []

    filters = [r.query["$filter"] for r in fake.calls("GET", "resourceGroups")]
    assert filters == ["tagName eq 'agentbench-run'", "tagName eq 'agentbench-run' and tagValue eq 'run2'",
                       "tagName eq 'agentbench-run' and tagValue eq 'run9'"]


def test_reap_deletes_the_leftovers_only(fake):
    first = provider(fake, run_id="run1")
    first.prepare()
    first.create_vm(spec("w0"))
    fake.add_group("agentbench-run2", tags={RUN_TAG: "run2"})
    fake.add_group("production", tags={"owner": "ops"})
    reaper = provider(fake, run_id="reaper")
    leftovers = reaper.find_leftovers()
    assert len(leftovers) == 2
    assert reaper.reap(leftovers) == []
    assert list(fake.resource_groups) == ["production"]
    assert fake.resources == {}
    assert reaper.find_leftovers() == []
    assert reaper.reap(leftovers) == []  # already gone


# -- the fake itself -------------------------------------------------------------------------------


def test_fake_answers_unknown_routes_with_an_arm_error(fake):
    status, _, body = fake.handle("GET", f"{ARM}/subscriptions/{SUBSCRIPTION}/nothing?api-version=1",
                                  {"Authorization": "Bearer fake"}, None)
    assert status == 404 and set(body["error"]) == {"code", "message"}
    status, _, body = fake.handle("GET", f"{ARM}/subscriptions/{SUBSCRIPTION}/resourcegroups/x?api-version=1",
                                  {"Authorization": "Bearer fake"}, None)
    assert (status, body["error"]["code"]) == (404, "ResourceGroupNotFound")
    status, _, body = fake.handle("GET", f"{ARM}/subscriptions/{SUBSCRIPTION}/resourcegroups", {}, None)
    assert (status, body["error"]["code"]) == (401, "AuthenticationFailed")
