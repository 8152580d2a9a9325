"""The AWS provider against a real moto server on loopback.

boto3 speaks real HTTP to ``moto.server.ThreadedMotoServer`` (the session fixture ``moto_server``),
found through ``AWS_ENDPOINT_URL`` exactly as a user's boto3 finds a custom endpoint; ``aws_env``
resets moto's state before every test and hides the machine's own AWS setup. Everything is read
back through the EC2 API, never from moto's internals. Two tests switch on moto's optional
validations (AMI ids on launch, instance types on launch) by patching ``moto.settings``, which
the in-process server reads on every request.
"""

from __future__ import annotations

import base64
import sys
import time
from pathlib import Path

import httpx
import pytest

from pytest_agentbench.infra.providers import make_provider
from pytest_agentbench.infra.providers.base import (
    CREATED_TAG,
    NAME_TAG,
    RUN_TAG,
    VM,
    ProviderConfig,
    ProviderError,
    VMSpec,
)

boto3 = pytest.importorskip("boto3")

REGION = "us-east-1"
LIVE = ["pending", "running", "stopping", "stopped"]
USER_DATA = "#cloud-config\nruncmd:\n  - [shutdown, -h, '+240']\n"


def client(url: str, region: str = REGION):
    """A plain boto3 client on the moto server, to set up and read back what the provider did."""
    return boto3.session.Session().client("ec2", region_name=region, endpoint_url=url,
                                          aws_access_key_id="testing", aws_secret_access_key="testing")


@pytest.fixture(scope="module")
def module_ec2(moto_server):
    return client(moto_server)  # one per module: creating a boto3 client takes ~0.1 s


@pytest.fixture
def ec2(aws_env, module_ec2):
    return module_ec2


@pytest.fixture
def ami(ec2, moto_ami) -> str:
    return moto_ami


def provider(run_id: str = "run-a", image: str | None = None, **kwargs):
    extra = {"ssh_cidr": "198.51.100.7/32", **kwargs.pop("extra", {})}
    kwargs.setdefault("poll_interval", 0)
    kwargs.setdefault("wait_timeout", 5)
    return make_provider("aws", ProviderConfig(run_id=run_id, image=image, extra=extra, **kwargs))


def spec(prov, name: str, hours: float = 4.0) -> VMSpec:
    tags = {RUN_TAG: prov.config.run_id, CREATED_TAG: "2026-01-01T00:00:00Z"}
    return VMSpec(name=name, size=prov.size, region=prov.region, image=prov.config.image or "",
                  ssh_user=prov.ssh_user, ssh_public_key="ssh-ed25519 AAAA test", user_data=USER_DATA,
                  tags=tags, auto_shutdown_hours=hours)


def error_line(excinfo: pytest.ExceptionInfo[ProviderError]) -> str:
    message = str(excinfo.value)
    assert "\n" not in message and message.strip() == message, repr(message)
    return message


def instances(ec2, **filters: list[str]) -> list[dict]:
    flt = [{"Name": key.replace("_", "-"), "Values": values} for key, values in filters.items()]
    return [i for r in ec2.describe_instances(Filters=flt)["Reservations"] for i in r["Instances"]]


def live_instances(ec2) -> list[dict]:
    return instances(ec2, instance_state_name=LIVE)


def tags_of(resource: dict) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in resource.get("Tags", [])}


def groups_named(ec2, name: str) -> list[dict]:
    return ec2.describe_security_groups(Filters=[{"Name": "group-name", "Values": [name]}])["SecurityGroups"]


def launch_untagged(ec2, ami: str) -> str:
    return ec2.run_instances(ImageId=ami, InstanceType="t3.micro", MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]


# ---------------------------------------------------------------------------------------- check


def test_defaults_and_the_sdk_is_imported_lazily(monkeypatch):
    prov = provider()
    assert (prov.name, prov.region, prov.size, prov.ssh_user) == ("aws", "us-east-1", "m8i.2xlarge", "ubuntu")
    assert prov.shutdown_in_guest is True
    monkeypatch.setitem(sys.modules, "boto3", None)  # import boto3 now raises ImportError
    with pytest.raises(ProviderError) as excinfo:
        provider(image="ami-12345678").check()
    assert error_line(excinfo) == ("the AWS pool needs boto3, which is not installed: "
                                   f"pip install -e '{Path(__file__).resolve().parent.parent}[aws]'")


def test_check_passes_for_a_real_region_size_and_image(aws_env, ami):
    provider(image=ami).check()
    provider(image=ami, region="eu-west-1", size="t3.micro").check()


def test_check_without_credentials_names_the_ways_to_give_them(aws_env, ami, monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    started = time.monotonic()
    with pytest.raises(ProviderError) as excinfo:
        provider(image=ami).check()
    message = error_line(excinfo)
    assert "no AWS credentials found" in message
    for hint in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "aws configure"):
        assert hint in message
    assert time.monotonic() - started < 5


def test_check_with_an_unknown_profile(aws_env, ami, monkeypatch):
    monkeypatch.setenv("AWS_PROFILE", "nobody")
    with pytest.raises(ProviderError) as excinfo:
        provider(image=ami).check()
    message = error_line(excinfo)
    assert "AWS profile not found" in message and "nobody" in message and "aws configure" in message


def test_check_with_refused_credentials(aws_env, ami):
    # moto checks signatures against its IAM once "initial no-auth actions" are used up; our
    # made-up key is unknown to it, so every call is refused with AuthFailure.
    answer = httpx.post(f"{aws_env}/moto-api/reset-auth", content=b"0").json()
    previous = answer["PREVIOUS_INITIAL_NO_AUTH_ACTION_COUNT"]
    try:
        with pytest.raises(ProviderError) as excinfo:
            provider(image=ami).check()
    finally:
        httpx.post(f"{aws_env}/moto-api/reset-auth", content=str(previous).encode()).raise_for_status()
    message = error_line(excinfo)
    assert "AWS refused the credentials" in message and "AuthFailure" in message
    assert "AWS_PROFILE" in message and "us-east-1" in message


def test_check_unknown_region(aws_env, ami):
    with pytest.raises(ProviderError) as excinfo:
        provider(image=ami, region="xx-nowhere-1").check()
    assert error_line(excinfo) == ("AWS region 'xx-nowhere-1' does not exist or is not enabled for this account; "
                                   "choose one with --pool-region")


def test_check_size_not_offered(aws_env, ami):
    with pytest.raises(ProviderError) as excinfo:
        provider(image=ami, size="m99.huge").check()
    assert error_line(excinfo) == ("instance type 'm99.huge' is not offered in region 'us-east-1'; "
                                   "choose another with --pool-size or --pool-region")


def test_check_needs_an_image(aws_env):
    with pytest.raises(ProviderError) as excinfo:
        provider(image=None).check()
    assert "needs --pool-image AMI_ID" in error_line(excinfo)


@pytest.mark.parametrize("image", ["ami-12345678", "not-an-ami"])
def test_check_unknown_or_malformed_image(aws_env, image):
    with pytest.raises(ProviderError) as excinfo:
        provider(image=image).check()
    message = error_line(excinfo)
    assert message.startswith(f"AMI '{image}' not found in region 'us-east-1';") and "--pool-image" in message


# ---------------------------------------------------------------------------------------- prepare


def test_ssh_is_never_opened_without_a_block(aws_env, ec2):
    prov = provider(extra={"ssh_cidr": None})
    with pytest.raises(ProviderError) as excinfo:
        prov.prepare()
    assert "pass --pool-ssh-cidr" in error_line(excinfo)
    for group in groups_named(ec2, "agentbench-run-a"):
        assert group["IpPermissions"] == []


def test_an_ipv6_block_opens_ssh_to_that_block_only(aws_env, ec2):
    provider(extra={"ssh_cidr": "2001:db8::7/128"}).prepare()
    (group,) = groups_named(ec2, "agentbench-run-a")
    (rule,) = group["IpPermissions"]
    assert [r["CidrIpv6"] for r in rule["Ipv6Ranges"]] == ["2001:db8::7/128"] and not rule.get("IpRanges")


def test_prepare_is_idempotent_and_opens_only_ssh(aws_env, ec2):
    prov = provider(extra={"ssh_cidr": "203.0.113.0/24"})
    prov.prepare()
    prov.prepare()
    provider(extra={"ssh_cidr": "203.0.113.0/24"}).prepare()  # a second object finds the same group
    (group,) = groups_named(ec2, "agentbench-run-a")
    assert group["GroupId"] == prov.group_id
    default_vpc = ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"][0]["VpcId"]
    assert group["VpcId"] == default_vpc
    tags = tags_of(group)
    assert tags[RUN_TAG] == "run-a" and tags[NAME_TAG] == "agentbench-run-a" and CREATED_TAG in tags
    (rule,) = group["IpPermissions"]
    assert (rule["IpProtocol"], rule["FromPort"], rule["ToPort"]) == ("tcp", 22, 22)
    assert [r["CidrIp"] for r in rule["IpRanges"]] == ["203.0.113.0/24"]


def test_subnet_puts_the_group_in_its_vpc_and_the_vm_in_the_subnet(aws_env, ec2, ami):
    vpc = ec2.create_vpc(CidrBlock="10.7.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.7.1.0/24")["Subnet"]["SubnetId"]
    prov = provider(image=ami, extra={"subnet_id": subnet})
    prov.prepare()
    assert groups_named(ec2, "agentbench-run-a")[0]["VpcId"] == vpc
    vm = prov.wait_running(prov.create_vm(spec(prov, "w0")))
    (instance,) = instances(ec2, instance_id=[vm.resource_id])
    assert instance["SubnetId"] == subnet and instance["VpcId"] == vpc
    assert vm.private_ip and vm.private_ip.startswith("10.7.1.")
    assert prov.destroy([vm]) == []


def test_unknown_subnet(aws_env):
    with pytest.raises(ProviderError) as excinfo:
        provider(extra={"subnet_id": "subnet-0123456789abcdef0"}).prepare()
    assert error_line(excinfo) == ("subnet 'subnet-0123456789abcdef0' not found in region 'us-east-1'; "
                                   "fix --pool-aws-subnet or --pool-region")


def test_no_default_vpc_asks_for_a_subnet(aws_env):
    ec2 = client(aws_env, "eu-north-1")
    (vpc,) = ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"]
    for subnet in ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc["VpcId"]]}])["Subnets"]:
        ec2.delete_subnet(SubnetId=subnet["SubnetId"])
    ec2.delete_vpc(VpcId=vpc["VpcId"])
    with pytest.raises(ProviderError) as excinfo:
        provider(region="eu-north-1").prepare()
    message = error_line(excinfo)
    assert message.startswith("region 'eu-north-1' has no default VPC;") and "--pool-aws-subnet SUBNET_ID" in message


# ---------------------------------------------------------------------------------------- the cycle


def test_full_cycle_create_wait_tag_destroy(aws_env, ec2, ami):
    prov = provider(image=ami)
    prov.check()
    prov.prepare()
    started = time.time()
    vms = [prov.create_vm(spec(prov, f"agentbench-run-a-{i}")) for i in range(2)]
    for vm in vms:
        assert (vm.provider, vm.region, vm.size, vm.ssh_user) == ("aws", "us-east-1", "m8i.2xlarge", "ubuntu")
        assert vm.resource_id.startswith("i-") and vm.created_at >= started and vm.deleted_at is None
        assert prov.wait_running(vm) is vm
        assert vm.public_ip and vm.private_ip
        assert VM.from_dict(vm.to_dict()) == vm

    for vm in vms:
        (instance,) = instances(ec2, instance_id=[vm.resource_id])
        assert instance["State"]["Name"] == "running" and instance["InstanceType"] == "m8i.2xlarge"
        assert instance["ImageId"] == ami
        assert [g["GroupId"] for g in instance["SecurityGroups"]] == [prov.group_id]
        expected = {RUN_TAG: "run-a", CREATED_TAG: "2026-01-01T00:00:00Z", NAME_TAG: vm.name}
        assert tags_of(instance) == expected
        (volume,) = ec2.describe_volumes(
            Filters=[{"Name": "attachment.instance-id", "Values": [vm.resource_id]}])["Volumes"]
        assert tags_of(volume) == expected
        (mapping,) = instance["BlockDeviceMappings"]
        assert mapping["Ebs"]["DeleteOnTermination"] is True
        user_data = ec2.describe_instance_attribute(InstanceId=vm.resource_id, Attribute="userData")["UserData"]
        assert base64.b64decode(user_data["Value"]).decode() == USER_DATA
        behaviour = ec2.describe_instance_attribute(InstanceId=vm.resource_id,
                                                    Attribute="instanceInitiatedShutdownBehavior")
        assert behaviour["InstanceInitiatedShutdownBehavior"]["Value"] == "terminate"
        # IMDSv2 only (the user data holds the host key), and an encrypted root volume
        assert instance["MetadataOptions"]["HttpTokens"] == "required"
        assert instance["MetadataOptions"]["HttpPutResponseHopLimit"] == 1
        assert volume["Encrypted"] is True

    assert prov.destroy(vms) == []
    assert live_instances(ec2) == []
    assert {i["State"]["Name"] for i in instances(ec2, instance_id=[vm.resource_id for vm in vms])} == {"terminated"}
    assert groups_named(ec2, "agentbench-run-a") == []
    assert all(vm.deleted_at and vm.deleted_at >= vm.created_at for vm in vms)


def test_disk_size_and_no_self_termination_without_auto_shutdown(aws_env, ec2, ami):
    prov = provider(image=ami, extra={"disk_gb": "40"})
    vm = prov.create_vm(spec(prov, "w0", hours=0))  # prepare() runs on the first create
    attached = [{"Name": "attachment.instance-id", "Values": [vm.resource_id]}]
    (volume,) = ec2.describe_volumes(Filters=attached)["Volumes"]
    assert (volume["Size"], volume["VolumeType"]) == (40, "gp3")
    behaviour = ec2.describe_instance_attribute(InstanceId=vm.resource_id,
                                                Attribute="instanceInitiatedShutdownBehavior")
    assert behaviour["InstanceInitiatedShutdownBehavior"]["Value"] == "stop"
    assert prov.destroy([vm]) == []


def test_bad_disk_size():
    with pytest.raises(ProviderError) as excinfo:
        provider(extra={"disk_gb": "lots"})
    assert error_line(excinfo) == "AWS disk_gb must be a whole number of GB, not 'lots'"


def test_destroy_is_idempotent_and_tolerates_gone_instances(aws_env, ec2, ami):
    prov = provider(image=ami)
    vms = [prov.create_vm(spec(prov, f"w{i}")) for i in range(2)]
    ec2.terminate_instances(InstanceIds=[vms[0].resource_id])  # the VM shut itself down already
    never = VM(name="ghost", provider="aws", resource_id="i-0123456789abcdef0", region=REGION,
               size="t3.micro", ssh_user="ubuntu")
    assert prov.destroy([*vms, never]) == []
    assert live_instances(ec2) == [] and groups_named(ec2, "agentbench-run-a") == []
    first = [vm.deleted_at for vm in vms]
    assert all(first)
    assert prov.destroy([*vms, never]) == []
    assert [vm.deleted_at for vm in vms] == first  # the first deletion time is kept


def test_destroy_without_prepare_finds_the_group_by_name_and_tag(aws_env, ec2, ami):
    creator = provider(image=ami)
    vm = creator.create_vm(spec(creator, "w0"))
    other = provider(run_id="run-b")
    other.prepare()
    fresh = provider(image=ami)  # e.g. the controller after the VMs came back from workers as dicts
    assert fresh.destroy([VM.from_dict(vm.to_dict())]) == []
    assert live_instances(ec2) == [] and groups_named(ec2, "agentbench-run-a") == []
    assert len(groups_named(ec2, "agentbench-run-b")) == 1  # another run's group is not touched


def test_destroy_of_nothing(aws_env):
    assert provider().destroy([]) == []


# ---------------------------------------------------------------------------------------- errors


def test_wait_running_fails_when_the_instance_goes_away(aws_env, ec2, ami):
    prov = provider(image=ami)
    vm = prov.create_vm(spec(prov, "w0"))
    ec2.terminate_instances(InstanceIds=[vm.resource_id])
    with pytest.raises(ProviderError) as excinfo:
        prov.wait_running(vm)
    assert error_line(excinfo).startswith(f"instance {vm.resource_id} (w0) went terminated instead of running")


def test_wait_running_times_out_for_an_instance_ec2_never_lists(aws_env):
    prov = provider(wait_timeout=0)
    vm = VM(name="ghost", provider="aws", resource_id="i-0123456789abcdef0", region=REGION,
            size="t3.micro", ssh_user="ubuntu")
    with pytest.raises(ProviderError) as excinfo:
        prov.wait_running(vm)
    assert error_line(excinfo) == ("instance i-0123456789abcdef0 (ghost) was not running after 0 s "
                                   "(state: unknown) in region 'us-east-1'")


def test_create_vm_needs_an_image(aws_env):
    prov = provider(image=None)
    with pytest.raises(ProviderError) as excinfo:
        prov.create_vm(spec(prov, "w0"))
    assert "needs --pool-image AMI_ID" in error_line(excinfo)


def test_create_vm_unknown_image_names_it(aws_env, ami, monkeypatch):
    import moto.settings

    monkeypatch.setattr(moto.settings, "ENABLE_AMI_VALIDATION", True)
    prov = provider(image=ami)
    prov.prepare()
    prov._root_disks["ami-12345678"] = ("/dev/sda1", 8)  # skip the AMI lookup: RunInstances must refuse
    bad = VMSpec(**{**spec(prov, "w0").__dict__, "image": "ami-12345678"})
    with pytest.raises(ProviderError) as excinfo:
        prov.create_vm(bad)
    assert error_line(excinfo).startswith("AMI 'ami-12345678' not found in region 'us-east-1';")


def test_create_vm_unknown_instance_type_names_it(aws_env, ec2, ami, monkeypatch):
    import moto.settings

    monkeypatch.setattr(moto.settings, "EC2_ENABLE_INSTANCE_TYPE_VALIDATION", True)
    prov = provider(image=ami, size="m99.huge")
    with pytest.raises(ProviderError) as excinfo:
        prov.create_vm(spec(prov, "w0"))
    message = error_line(excinfo)
    assert message.startswith("instance type 'm99.huge' cannot be launched in region 'us-east-1'")
    assert "--pool-size" in message
    assert live_instances(ec2) == []
    assert prov.destroy([]) == []  # the group prepare() made on the way is deleted
    assert groups_named(ec2, "agentbench-run-a") == []


# ---------------------------------------------------------------------------------------- reaper


def test_find_leftovers_sees_only_tagged_resources_and_reap_removes_them(aws_env, ec2, ami):
    run_a, run_b = provider(image=ami), provider(run_id="run-b", image=ami)
    a_vms = [run_a.create_vm(spec(run_a, f"a{i}")) for i in range(2)]
    b_vm = run_b.create_vm(spec(run_b, "b0"))
    untagged = launch_untagged(ec2, ami)
    stopped = a_vms[1].resource_id
    ec2.stop_instances(InstanceIds=[stopped])  # a stopped VM still costs its disk: it is a leftover

    reaper = provider()
    everything = reaper.find_leftovers()
    found = {(item.kind, item.resource_id) for item in everything}
    assert found == {("instance", a_vms[0].resource_id), ("instance", stopped), ("instance", b_vm.resource_id),
                     ("security-group", run_a.group_id), ("security-group", run_b.group_id)}
    assert untagged not in {item.resource_id for item in everything}
    by_id = {item.resource_id: item for item in everything}
    assert by_id[a_vms[0].resource_id].name == "a0" and by_id[a_vms[0].resource_id].run_id == "run-a"
    assert by_id[stopped].state == "stopped" and by_id[a_vms[0].resource_id].state == "running"
    assert by_id[run_b.group_id].name == "agentbench-run-b" and by_id[run_b.group_id].run_id == "run-b"
    assert {item.region for item in everything} == {"us-east-1"}

    only_a = reaper.find_leftovers("run-a")
    assert {item.resource_id for item in only_a} == {a_vms[0].resource_id, stopped, run_a.group_id}

    assert reaper.reap(only_a) == []
    assert reaper.find_leftovers("run-a") == []
    assert {item.run_id for item in reaper.find_leftovers()} == {"run-b"}
    assert reaper.reap(reaper.find_leftovers()) == []
    assert reaper.find_leftovers() == []
    assert [i["InstanceId"] for i in live_instances(ec2)] == [untagged]  # what is not ours is left alone


def test_reap_reports_what_it_cannot_delete(aws_env):
    from pytest_agentbench.infra.providers.base import Leftover

    odd = Leftover(kind="resource-group", resource_id="rg-1", name="rg", run_id="r", region=REGION)
    gone = Leftover(kind="security-group", resource_id="sg-0123456789abcdef0", name="x", run_id="r", region=REGION)
    assert provider().reap([odd, gone]) == ["resource-group rg-1: the AWS provider does not delete this kind"]


def test_a_region_name_boto3_rejects(aws_env, ami):
    with pytest.raises(ProviderError) as excinfo:
        provider(image=ami, region="not a region").check()
    message = error_line(excinfo)
    assert message.startswith("cannot use AWS region 'not a region'") and "--pool-region" in message
