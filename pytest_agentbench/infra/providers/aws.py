"""The AWS provider: a pool's VMs are EC2 instances in one region, reachable over SSH.

Why one module of over 500 lines: it is the whole Provider interface (check, create, list leftovers,
destroy) over EC2, and splitting it would scatter one run's security group and instances over
several files.

What a run creates, all in the configured region:

* one security group ``agentbench-<run_id>`` that lets SSH (tcp/22) in from ``ssh_cidr``, in the
  VPC of the ``subnet_id`` setting or else the region's default VPC;
* one instance per worker, launched from the ``--pool-image`` AMI with the pool's cloud-init user
  data; its root volume is encrypted (the account's default EBS key) and deleted with it
  (``DeleteOnTermination``), so nothing else is left; the instance metadata service answers
  IMDSv2 (token) requests only, since the user data carries the VM's SSH host key.

Why it is built this way:

* **Everything is tagged** with ``RUN_TAG`` = the run id (instances, their volumes, the group), so
  a run killed before its cleanup is found and deleted later by tag alone
  (:meth:`AWSProvider.find_leftovers`, :meth:`AWSProvider.reap`), without any local state.
* **Lost VMs delete themselves.** The pool writes ``shutdown -h +MINUTES`` into the user data
  (``shutdown_in_guest``), and instances are launched with
  ``InstanceInitiatedShutdownBehavior=terminate``, so an instance the harness lost track of
  terminates, rather than stops (and keeps its disk billed), when that timer fires.
* **create_vm does not wait**: it returns once EC2 has an instance id, so the pool registers the
  VM for deletion before any wait that could be interrupted.
* **boto3 is imported lazily**, so this module imports without it; a missing SDK is a one-line
  :class:`ProviderError` naming the extra to install. Endpoints are never hard-coded: boto3
  honours ``AWS_ENDPOINT_URL``, which is how the tests point it at a moto server.

Every error a user can cause is a :class:`ProviderError` whose message is one line naming the bad
value and the option that fixes it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, ClassVar

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

if TYPE_CHECKING:
    from botocore.client import BaseClient

#: Instance states in which an instance still exists (and costs money).
LIVE_STATES = ("pending", "running", "stopping", "stopped")
#: States from which an instance being waited for will never run.
DEAD_STATES = ("shutting-down", "terminated", "stopping", "stopped")
#: Error codes that mean AWS refused the credentials (or their permissions).
AUTH_CODES = frozenset({
    "AuthFailure", "UnauthorizedOperation", "InvalidClientTokenId", "SignatureDoesNotMatch",
    "ExpiredToken", "RequestExpired", "UnrecognizedClientException", "AccessDenied",
    "AccessDeniedException", "OptInRequired",
})
QUOTA_CODES = frozenset({"InstanceLimitExceeded", "VcpuLimitExceeded", "MaxSpotInstanceCountExceeded"})
CREDENTIALS_HINT = ("set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run `aws configure`")
#: EC2 accepts at most this many values in one filter.
FILTER_CHUNK = 200


def _fail(message: str) -> ProviderError:
    return ProviderError(shorten(message, 600))


def error_code(exc: BaseException) -> str:
    """The AWS error code of a botocore ``ClientError`` ("" for anything else)."""
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def cause_code(exc: ProviderError) -> str:
    """The AWS error code behind a ProviderError raised from a ``ClientError`` ("" otherwise)."""
    return error_code(exc.__cause__) if exc.__cause__ is not None else ""


def _error_text(exc: BaseException) -> str:
    response = getattr(exc, "response", None) or {}
    error = response.get("Error", {})
    if error:
        return shorten(f"{error.get('Code', '')}: {error.get('Message', '')}", 240)
    return shorten(f"{type(exc).__name__}: {exc}", 240)


def _tags(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": key, "Value": str(value)} for key, value in tags.items()]


def _tag(resource: dict[str, Any], key: str) -> str:
    return next((t.get("Value", "") for t in resource.get("Tags") or [] if t.get("Key") == key), "")


def _chunks(items: list[str], size: int = FILTER_CHUNK) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def home_region(region: str) -> str:
    """The partition's main region, which can list every region of the partition."""
    if region.startswith("cn-"):
        return "cn-north-1"
    if region.startswith("us-gov-"):
        return "us-gov-west-1"
    return "us-east-1"


def _root_disk(image: dict[str, Any]) -> tuple[str, int | None]:
    """The AMI's root device name and its volume size in GB (None when the AMI does not say)."""
    device = image.get("RootDeviceName") or "/dev/sda1"
    mappings = image.get("BlockDeviceMappings") or []
    mapping: dict[str, Any] = next((m for m in mappings if m.get("DeviceName") == device), {})
    size = mapping.get("Ebs", {}).get("VolumeSize")
    return device, int(size) if size else None


def _disk_gb(value: object) -> int | None:
    if value in (None, "", 0):
        return None
    try:
        size = int(str(value))
    except ValueError:
        size = 0
    if size <= 0:
        raise _fail(f"AWS disk_gb must be a whole number of GB, not {value!r}")
    return size


def _sdk() -> SimpleNamespace:
    """boto3 and the botocore pieces used here, or a one-line ProviderError naming the extra."""
    try:
        import boto3
        import botocore.config
        import botocore.exceptions
    except ImportError as exc:
        raise _fail(f"the AWS pool needs boto3, which is not installed: {AWSProvider.extra_hint}") from exc
    return SimpleNamespace(boto3=boto3, Config=botocore.config.Config, exc=botocore.exceptions)


class AWSProvider(Provider):
    """EC2 instances in one region, plus one security group per run."""

    name: ClassVar[str] = "aws"
    default_region: ClassVar[str] = "us-east-1"
    default_size: ClassVar[str] = "m8i.2xlarge"
    default_ssh_user: ClassVar[str] = "ubuntu"
    extra_hint: ClassVar[str] = install_hint("aws")
    #: the pool puts ``shutdown -h +MIN`` into the user data; instances terminate on shutdown
    shutdown_in_guest: ClassVar[bool] = True

    def __init__(self, config: ProviderConfig) -> None:
        super().__init__(config)
        extra = config.extra or {}
        self.subnet_id: str | None = extra.get("subnet_id") or None
        #: who may reach port 22; the pool always gives it (never open to all by default, see ingress.py)
        self.ssh_cidr: str | None = str(extra["ssh_cidr"]) if extra.get("ssh_cidr") else None
        self.disk_gb: int | None = _disk_gb(extra.get("disk_gb"))
        self.group_name = f"agentbench-{config.run_id}"
        self.group_id: str | None = None
        self._session: Any = None
        self._clients: dict[str, BaseClient] = {}
        self._clients_lock = threading.Lock()  # create_vm runs in threads; boto3 sessions are not safe
        self._root_disks: dict[str, tuple[str, int | None]] = {}
        self._prepare_lock = threading.Lock()

    # ------------------------------------------------------------------ clients and errors

    def _ec2(self, region: str | None = None) -> BaseClient:
        """The (cached) EC2 client for ``region``; raises ProviderError without SDK or credentials."""
        region = region or self.region
        with self._clients_lock:
            if region not in self._clients:
                self._clients[region] = self._new_client(region)
            return self._clients[region]

    def _new_client(self, region: str) -> BaseClient:
        sdk = _sdk()
        if self._session is None:
            try:
                session = sdk.boto3.session.Session(region_name=self.region)
                credentials = session.get_credentials()
            except sdk.exc.ProfileNotFound as exc:
                raise _fail(f"AWS profile not found ({shorten(exc, 400)}); {CREDENTIALS_HINT}") from exc
            except sdk.exc.BotoCoreError as exc:
                raise _fail(f"AWS credentials could not be loaded ({shorten(exc, 400)}); {CREDENTIALS_HINT}") from exc
            if credentials is None:
                raise _fail(f"no AWS credentials found; {CREDENTIALS_HINT}")
            self._session = session
        config = sdk.Config(retries={"max_attempts": 4, "mode": "standard"}, connect_timeout=10, read_timeout=60)
        try:
            return self._session.client("ec2", region_name=region, config=config)
        except sdk.exc.BotoCoreError as exc:  # e.g. InvalidRegionError for "eu west 1"
            raise _fail(f"cannot use AWS region {region!r} ({shorten(exc, 400)}); "
                        "choose one with --pool-region") from exc

    @contextmanager
    def _aws(self, action: str, region: str | None = None) -> Iterator[None]:
        """Turn botocore errors raised inside into one-line ProviderErrors about ``action``."""
        sdk = _sdk()
        try:
            yield
        except (sdk.exc.ClientError, sdk.exc.BotoCoreError) as exc:
            raise self._translate(exc, action, region or self.region) from exc

    def _translate(self, exc: Exception, action: str, region: str) -> ProviderError:
        """One line for a botocore error raised while trying to ``action``."""
        sdk = _sdk()
        if isinstance(exc, (sdk.exc.NoCredentialsError, sdk.exc.PartialCredentialsError, sdk.exc.ProfileNotFound)):
            return _fail(f"AWS credentials could not be loaded ({shorten(exc, 400)}); {CREDENTIALS_HINT}")
        if error_code(exc) in AUTH_CODES:
            return _fail(f"AWS refused the credentials while trying to {action} in region {region!r} "
                         f"({_error_text(exc)}); {CREDENTIALS_HINT}, and check the IAM permissions")
        return _fail(f"AWS failed to {action} in region {region!r}: {_error_text(exc)}")

    def _sleep(self) -> None:
        if self.config.poll_interval > 0:
            time.sleep(self.config.poll_interval)

    def _deadline(self) -> float:
        return time.monotonic() + self.config.wait_timeout

    # ------------------------------------------------------------------ check

    def check(self) -> None:
        """Read-only: the image is given, credentials load, the region exists and is enabled, the
        size is offered there and the AMI exists there."""
        if not self.config.image:
            raise _fail(f"the AWS pool needs --pool-image AMI_ID (an Ubuntu AMI in region {self.region!r}, "
                        "e.g. from https://cloud-images.ubuntu.com/locator/ec2/)")
        self._ec2()  # credentials first: a one-line error before any network call
        self._check_region()
        self._check_size()
        self._check_image(self.config.image)

    def _region_statuses(self, region: str) -> dict[str, str]:
        """RegionName -> OptInStatus for every region of the partition, asked of ``region``."""
        response = self._ec2(region).describe_regions(AllRegions=True)
        return {r["RegionName"]: r.get("OptInStatus", "") for r in response.get("Regions", [])}

    def _check_region(self) -> None:
        unknown = _fail(f"AWS region {self.region!r} does not exist or is not enabled for this account; "
                        "choose one with --pool-region")
        if self._region_statuses_anywhere().get(self.region, "not-opted-in") == "not-opted-in":
            raise unknown

    def _region_statuses_anywhere(self) -> dict[str, str]:
        """The region list, asked of the partition's main region (a region that does not exist
        cannot answer), else of the region itself (for accounts barred from the main region).
        Returns {} when only the region itself was unreachable: it does not exist."""
        sdk, home, action = _sdk(), home_region(self.region), "list the regions"
        try:
            return self._region_statuses(home)
        except (sdk.exc.ClientError, sdk.exc.BotoCoreError) as exc:
            home_error: Exception = exc
        if home == self.region:
            raise self._translate(home_error, action, home) from home_error
        try:
            return self._region_statuses(self.region)
        except sdk.exc.ClientError as exc:
            raise self._translate(exc, action, self.region) from exc
        except sdk.exc.BotoCoreError:
            if isinstance(home_error, sdk.exc.ClientError):
                return {}
            raise self._translate(home_error, action, home) from home_error

    def _check_size(self) -> None:
        with self._aws(f"look up instance type {self.size!r}"):
            offerings = self._ec2().describe_instance_type_offerings(
                LocationType="region", Filters=[{"Name": "instance-type", "Values": [self.size]}],
            ).get("InstanceTypeOfferings", [])
        if not offerings:
            raise _fail(f"instance type {self.size!r} is not offered in region {self.region!r}; "
                        "choose another with --pool-size or --pool-region")

    def _image_missing(self, image: str) -> ProviderError:
        return _fail(f"AMI {image!r} not found in region {self.region!r}; AMI ids differ per region, "
                     "pass one that exists there with --pool-image")

    def _describe_image(self, image: str) -> dict[str, Any]:
        try:
            with self._aws(f"look up AMI {image!r}"):
                images: list[dict[str, Any]] = self._ec2().describe_images(ImageIds=[image]).get("Images", [])
        except ProviderError as exc:
            if cause_code(exc).startswith("InvalidAMIID"):
                raise self._image_missing(image) from exc.__cause__
            raise
        if not images:
            raise self._image_missing(image)
        return images[0]

    def _check_image(self, image: str) -> None:
        found = self._describe_image(image)
        state = found.get("State", "available")
        if state != "available":
            raise _fail(f"AMI {image!r} in region {self.region!r} is {state}, not available; "
                        "pass another with --pool-image")
        self._root_disks[image] = _root_disk(found)

    # ------------------------------------------------------------------ prepare

    def prepare(self) -> None:
        """Find or create the run's security group (SSH in from ``ssh_cidr``); safe to call twice."""
        with self._prepare_lock:
            if self.group_id:
                return
            vpc_id = self._vpc_id()
            existing = self._find_groups(vpc_id=vpc_id)
            group_id = existing[0] if existing else self._create_group(vpc_id)
            self._allow_ssh(group_id)
            self.group_id = group_id

    def _vpc_id(self) -> str:
        ec2 = self._ec2()
        if self.subnet_id:
            try:
                with self._aws(f"look up subnet {self.subnet_id!r}"):
                    subnets = ec2.describe_subnets(SubnetIds=[self.subnet_id]).get("Subnets", [])
            except ProviderError as exc:
                if not cause_code(exc).startswith("InvalidSubnetID"):
                    raise
                subnets = []
            if not subnets:
                raise _fail(f"subnet {self.subnet_id!r} not found in region {self.region!r}; "
                            "fix --pool-aws-subnet or --pool-region")
            return str(subnets[0]["VpcId"])
        with self._aws("find the default VPC"):
            vpcs = ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}]).get("Vpcs", [])
        if not vpcs:
            raise _fail(f"region {self.region!r} has no default VPC; pass --pool-aws-subnet SUBNET_ID (a subnet "
                        "with internet access that gives public IPs), or choose another --pool-region")
        return str(vpcs[0]["VpcId"])

    def _find_groups(self, vpc_id: str | None = None, region: str | None = None) -> list[str]:
        """Ids of this run's security groups (by name and run tag), optionally in one VPC."""
        filters = [{"Name": "group-name", "Values": [self.group_name]},
                   {"Name": f"tag:{RUN_TAG}", "Values": [self.config.run_id]}]
        if vpc_id:
            filters.append({"Name": "vpc-id", "Values": [vpc_id]})
        with self._aws(f"look up security group {self.group_name!r}", region):
            groups = self._ec2(region).describe_security_groups(Filters=filters).get("SecurityGroups", [])
        return [g["GroupId"] for g in groups]

    def _create_group(self, vpc_id: str) -> str:
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        tags = {RUN_TAG: self.config.run_id, NAME_TAG: self.group_name, CREATED_TAG: created}
        try:
            with self._aws(f"create security group {self.group_name!r}"):
                response = self._ec2().create_security_group(
                    GroupName=self.group_name, VpcId=vpc_id,
                    Description=f"agentbench run {self.config.run_id}: SSH in",
                    TagSpecifications=[{"ResourceType": "security-group", "Tags": _tags(tags)}],
                )
        except ProviderError as exc:
            found = self._find_groups(vpc_id=vpc_id) if cause_code(exc) == "InvalidGroup.Duplicate" else []
            if not found:
                raise
            return found[0]
        return str(response["GroupId"])

    def _allow_ssh(self, group_id: str) -> None:
        if not self.ssh_cidr:
            raise _fail("no SSH ingress block was given; pass --pool-ssh-cidr (port 22 is never opened to everyone "
                        "by default)")
        rule: dict[str, Any] = {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22}
        if ":" in self.ssh_cidr:
            rule["Ipv6Ranges"] = [{"CidrIpv6": self.ssh_cidr, "Description": "agentbench SSH"}]
        else:
            rule["IpRanges"] = [{"CidrIp": self.ssh_cidr, "Description": "agentbench SSH"}]
        try:
            with self._aws(f"allow SSH from {self.ssh_cidr!r} into {group_id}"):
                self._ec2().authorize_security_group_ingress(GroupId=group_id, IpPermissions=[rule])
        except ProviderError as exc:
            if cause_code(exc) != "InvalidPermission.Duplicate":
                raise

    # ------------------------------------------------------------------ create and wait

    def create_vm(self, spec: VMSpec) -> VM:
        """Launch one tagged instance and return at once with its id (runs :meth:`prepare` if needed)."""
        image = spec.image or self.config.image
        if not image:
            raise _fail(f"the AWS pool needs --pool-image AMI_ID (an Ubuntu AMI in region {self.region!r})")
        if not self.group_id:
            self.prepare()
        request = self._run_request(spec, image)
        try:
            with self._aws(f"launch a {spec.size!r} instance from {image!r}"):
                response = self._ec2().run_instances(**request)
        except ProviderError as exc:
            raise self._launch_error(exc, spec.size, image) from exc.__cause__
        instance = response["Instances"][0]
        return VM(name=spec.name, provider=self.name, resource_id=instance["InstanceId"], region=self.region,
                  size=spec.size, ssh_user=spec.ssh_user, private_ip=instance.get("PrivateIpAddress"),
                  public_ip=instance.get("PublicIpAddress"), created_at=time.time())

    def _run_request(self, spec: VMSpec, image: str) -> dict[str, Any]:
        tags = _tags({RUN_TAG: self.config.run_id, **spec.tags, NAME_TAG: spec.name})
        request: dict[str, Any] = {
            "ImageId": image, "InstanceType": spec.size, "MinCount": 1, "MaxCount": 1,
            "UserData": spec.user_data, "SecurityGroupIds": [self.group_id],
            "TagSpecifications": [{"ResourceType": "instance", "Tags": tags},
                                  {"ResourceType": "volume", "Tags": tags}],
            "BlockDeviceMappings": [self._root_volume(image)],
            # IMDSv2 only: the user data holds the VM's SSH host key, and IMDSv1 hands it to any
            # request a process on the VM can be tricked into making (SSRF); one hop keeps it
            # from containers on the VM too.
            "MetadataOptions": {"HttpTokens": "required", "HttpEndpoint": "enabled", "HttpPutResponseHopLimit": 1},
        }
        if self.subnet_id:
            request["SubnetId"] = self.subnet_id
        if spec.auto_shutdown_hours > 0:
            request["InstanceInitiatedShutdownBehavior"] = "terminate"
        return request

    def _root_volume(self, image: str) -> dict[str, Any]:
        """The root disk: encrypted, deleted with the instance; ``disk_gb`` GB of gp3 when set,
        else the AMI's own size and type."""
        if image not in self._root_disks:
            self._root_disks[image] = _root_disk(self._describe_image(image))
        device, size = self._root_disks[image]
        ebs: dict[str, Any] = {"DeleteOnTermination": True, "Encrypted": True}  # the account's default EBS key
        if self.disk_gb:
            ebs.update(VolumeSize=self.disk_gb, VolumeType="gp3")
        elif size:
            ebs["VolumeSize"] = size  # EC2 wants a size or a snapshot in an Ebs mapping (moto insists)
        return {"DeviceName": device, "Ebs": ebs}

    def _launch_error(self, exc: ProviderError, size: str, image: str) -> ProviderError:
        cause = exc.__cause__ or exc
        code, where = error_code(cause), f"in region {self.region!r}"
        if code == "InsufficientInstanceCapacity":
            return _fail(f"AWS has no capacity for instance type {size!r} {where} right now; "
                         "retry later or choose another --pool-size or --pool-region")
        if code in QUOTA_CODES:
            return _fail(f"the account's quota allows no more {size!r} instances {where} ({code}); "
                         "request a higher vCPU quota in Service Quotas or run fewer workers")
        if code.startswith("InvalidAMIID"):
            return self._image_missing(image)
        if code == "Unsupported" or code.startswith("InvalidInstanceType"):
            return _fail(f"instance type {size!r} cannot be launched {where} ({_error_text(cause)}); "
                         "choose another with --pool-size or --pool-region")
        return exc

    def wait_running(self, vm: VM) -> VM:
        """Poll until ``vm`` runs; fill its addresses. Fails if it dies or ``wait_timeout`` passes."""
        deadline, state = self._deadline(), "unknown"
        while True:
            instance = self._describe_one(vm)
            if instance is not None:
                state = instance.get("State", {}).get("Name", "unknown")
                if state == "running" and instance.get("PrivateIpAddress"):
                    vm.public_ip = instance.get("PublicIpAddress") or None
                    vm.private_ip = instance.get("PrivateIpAddress")
                    return vm
                if state in DEAD_STATES:
                    reason = shorten(instance.get("StateReason", {}).get("Message", ""), 200)
                    raise _fail(f"instance {vm.resource_id} ({vm.name}) went {state} instead of running"
                                + (f": {reason}" if reason else ""))
            if time.monotonic() >= deadline:
                raise _fail(f"instance {vm.resource_id} ({vm.name}) was not running after "
                            f"{self.config.wait_timeout:g} s (state: {state}) in region {vm.region!r}")
            self._sleep()

    def _describe_one(self, vm: VM) -> dict[str, Any] | None:
        """The instance, or None while EC2 does not list it yet (its API is eventually consistent)."""
        try:
            with self._aws(f"look up instance {vm.resource_id}", vm.region):
                reservations = self._ec2(vm.region).describe_instances(
                    InstanceIds=[vm.resource_id]).get("Reservations", [])
        except ProviderError as exc:
            if cause_code(exc) == "InvalidInstanceID.NotFound":
                return None
            raise
        return next((i for r in reservations for i in r.get("Instances", [])), None)

    # ------------------------------------------------------------------ delete

    def destroy(self, vms: list[VM]) -> list[str]:
        """Terminate ``vms``, wait until they are gone, delete the run's security group (found by
        name and tag, so a fresh object can clean up). Returns one line per failure."""
        failures: list[str] = []
        by_region: dict[str, list[VM]] = {}
        for vm in vms:
            by_region.setdefault(vm.region or self.region, []).append(vm)
        for region, group in by_region.items():
            gone, lines = self._terminate([vm.resource_id for vm in group], region)
            failures += lines
            now = time.time()
            for vm in group:
                if vm.resource_id in gone and vm.deleted_at is None:
                    vm.deleted_at = now
        group_ids: list[str] = [self.group_id] if self.group_id else []
        try:
            group_ids += [g for g in self._find_groups() if g not in group_ids]
        except ProviderError as exc:
            failures.append(f"security group {self.group_name}: could not look it up: {exc}")
        failures += self._delete_groups(group_ids, self.region)
        if not failures:
            self.group_id = None
        return failures

    def _states(self, ids: list[str], region: str) -> dict[str, str]:
        """Instance id -> state for those of ``ids`` EC2 still lists (a filter ignores unknown ids)."""
        states: dict[str, str] = {}
        with self._aws("look up instances", region):
            paginator = self._ec2(region).get_paginator("describe_instances")
            for chunk in _chunks(ids):
                for page in paginator.paginate(Filters=[{"Name": "instance-id", "Values": chunk}]):
                    for reservation in page.get("Reservations", []):
                        for instance in reservation.get("Instances", []):
                            states[instance["InstanceId"]] = instance.get("State", {}).get("Name", "")
        return states

    def _terminate(self, ids: list[str], region: str) -> tuple[set[str], list[str]]:
        """Terminate ``ids`` and wait until EC2 reports them terminated (or no longer lists them).
        Returns the ids that are gone and one failure line per instance that is not."""
        ids = list(dict.fromkeys(i for i in ids if i))
        if not ids:
            return set(), []
        try:
            states = self._states(ids, region)
            # Unlisted ids are asked too: EC2 may not list an instance launched a moment ago.
            errors = self._request_termination([i for i in ids if states.get(i) != "terminated"], region)
            waited = [i for i in ids if i not in errors]
            pending, states = self._wait_terminated(waited, region)
        except ProviderError as exc:
            return set(), [f"instance {i}: {exc}" for i in ids]
        timeout = self.config.wait_timeout
        failures = [f"instance {i}: {error}" for i, error in errors.items()]
        failures += [f"instance {i}: still {states.get(i, 'unknown')} after {timeout:g} s" for i in sorted(pending)]
        return set(waited) - pending, failures

    def _request_termination(self, ids: list[str], region: str) -> dict[str, str]:
        """Ask EC2 to terminate ``ids``, in one call or, if that fails, one by one; returns the
        error per id that could not be asked (ids that are already gone are not errors)."""
        if not ids:
            return {}
        ec2, errors = self._ec2(region), {}
        try:
            with self._aws("terminate instances", region):
                ec2.terminate_instances(InstanceIds=ids)
            return {}
        except ProviderError:
            pass
        for instance_id in ids:
            try:
                with self._aws(f"terminate instance {instance_id}", region):
                    ec2.terminate_instances(InstanceIds=[instance_id])
            except ProviderError as exc:
                if cause_code(exc) != "InvalidInstanceID.NotFound":
                    errors[instance_id] = str(exc)
        return errors

    def _wait_terminated(self, ids: list[str], region: str) -> tuple[set[str], dict[str, str]]:
        """Poll until every id is terminated or unlisted; returns the ids that are not, and states."""
        deadline = self._deadline()
        while True:
            states = self._states(ids, region) if ids else {}
            pending = {i for i in ids if states.get(i, "terminated") != "terminated"}
            if not pending or time.monotonic() >= deadline:
                return pending, states
            self._sleep()

    def _delete_groups(self, group_ids: list[str], region: str) -> list[str]:
        return [line for g in dict.fromkeys(group_ids) if (line := self._delete_group(g, region))]

    def _delete_group(self, group_id: str, region: str) -> str:
        """Delete one security group, retrying while a terminating instance still holds it;
        returns a failure line, or "" once it is gone."""
        deadline = self._deadline()
        while True:
            try:
                with self._aws(f"delete security group {group_id}", region):
                    self._ec2(region).delete_security_group(GroupId=group_id)
                return ""
            except ProviderError as exc:
                code = cause_code(exc)
                if code == "InvalidGroup.NotFound":
                    return ""
                if code != "DependencyViolation" or time.monotonic() >= deadline:
                    return f"security group {group_id}: {exc}"
            self._sleep()

    # ------------------------------------------------------------------ the reaper

    def find_leftovers(self, run_id: str | None = None) -> list[Leftover]:
        """Live instances (pending/running/stopping/stopped) and security groups tagged ``RUN_TAG``
        (with value ``run_id`` when given), in this region."""
        tag_filter = ({"Name": f"tag:{RUN_TAG}", "Values": [run_id]} if run_id
                      else {"Name": "tag-key", "Values": [RUN_TAG]})
        return self._leftover_instances(tag_filter) + self._leftover_groups(tag_filter)

    def _pages(self, operation: str, key: str, **kwargs: Any) -> Iterator[dict[str, Any]]:
        paginator = self._ec2().get_paginator(operation)
        for page in paginator.paginate(**kwargs):
            yield from page.get(key, [])

    def _leftover_instances(self, tag_filter: dict[str, Any]) -> list[Leftover]:
        filters = [tag_filter, {"Name": "instance-state-name", "Values": list(LIVE_STATES)}]
        with self._aws("list tagged instances"):
            instances = [i for r in self._pages("describe_instances", "Reservations", Filters=filters)
                         for i in r.get("Instances", [])]
        return [Leftover(kind="instance", resource_id=i["InstanceId"], name=_tag(i, NAME_TAG),
                         run_id=_tag(i, RUN_TAG), region=self.region, state=i.get("State", {}).get("Name", ""))
                for i in instances]

    def _leftover_groups(self, tag_filter: dict[str, Any]) -> list[Leftover]:
        with self._aws("list tagged security groups"):
            groups = list(self._pages("describe_security_groups", "SecurityGroups", Filters=[tag_filter]))
        return [Leftover(kind="security-group", resource_id=g["GroupId"], name=g.get("GroupName", ""),
                         run_id=_tag(g, RUN_TAG), region=self.region) for g in groups]

    def reap(self, leftovers: list[Leftover]) -> list[str]:
        """Terminate the instances, wait for them, then delete the groups; one line per failure."""
        failures: list[str] = []
        regions = dict.fromkeys(item.region or self.region for item in leftovers)
        for region in regions:
            here = [item for item in leftovers if (item.region or self.region) == region]
            failures += self._reap_region(here, region)
        return failures

    def _reap_region(self, leftovers: list[Leftover], region: str) -> list[str]:
        instances = [item.resource_id for item in leftovers if item.kind == "instance"]
        groups = [item.resource_id for item in leftovers if item.kind == "security-group"]
        unknown = [f"{item.kind} {item.resource_id}: the AWS provider does not delete this kind"
                   for item in leftovers if item.kind not in ("instance", "security-group")]
        _, failures = self._terminate(instances, region)
        return unknown + failures + self._delete_groups(groups, region)

