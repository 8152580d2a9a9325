"""Fault injection on the cloud pool's deletion, against moto's server over real HTTP: a deletion
cut short by an interrupt is redone in full by the next call, a round that fails is retried until
the cloud lists nothing, and every way of not confirming prints the reaper command. The
end-to-end signal tests (SIGINT then SIGTERM during deletion, SIGKILL of a worker) are in
test_pool_lifecycle.py."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

pytest.importorskip("boto3")
pytest.importorskip("moto")

from pytest_agentbench.infra.cloud_pool import CloudPool, PoolOptions
from pytest_agentbench.infra.providers import make_provider
from pytest_agentbench.infra.providers.base import ProviderConfig


def ec2():
    import boto3

    return boto3.client("ec2", region_name="us-east-1")


def live() -> list[str]:
    found = ec2().describe_instances(Filters=[
        {"Name": "tag-key", "Values": ["agentbench-run"]},
        {"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped"]}])
    return [i["InstanceId"] for r in found["Reservations"] for i in r["Instances"]]


def groups() -> list[str]:
    found = ec2().describe_security_groups(Filters=[{"Name": "tag-key", "Values": ["agentbench-run"]}])
    return [g["GroupId"] for g in found["SecurityGroups"]]


@pytest.fixture
def pool(aws_env, moto_ami, tmp_path):
    provider = make_provider("aws", ProviderConfig(run_id="faults", image=moto_ami, poll_interval=0, wait_timeout=5,
                                                   extra={"ssh_cidr": "203.0.113.7/32"}))
    lines: list[str] = []
    cloud = CloudPool(provider, PoolOptions(run_id="faults", folder=tmp_path / "pool"), log=lines.append)
    cloud.lines = lines  # type: ignore[attr-defined]
    cloud.provision(2)
    assert len(live()) == 2
    return cloud


def test_a_deletion_cut_short_is_redone_by_the_next_call(pool, monkeypatch):
    provider = pool.provider
    real = type(provider).destroy
    calls = []

    def interrupted_once(self, vms):
        calls.append(len(vms))
        if len(calls) == 1:
            raise KeyboardInterrupt("second Ctrl-C")
        return real(self, vms)

    monkeypatch.setattr(type(provider), "destroy", interrupted_once)
    with pytest.raises(KeyboardInterrupt):
        pool.destroy()
    assert len(live()) == 2 and not pool.destroyed
    assert any("--agentbench-reap --pool aws --agentbench-reap-run faults" in line for line in pool.lines)
    # the cleanup's retry (config.add_cleanup) deletes everything
    assert pool.destroy() == []
    assert live() == [] and groups() == [] and pool.destroyed
    assert json.loads((pool.options.folder / "pool.json").read_text())["destroyed"] is True
    assert pool.destroy() == [] and len(calls) == 2  # confirmed: now a no-op


def test_a_failed_round_is_retried_until_the_cloud_lists_nothing(pool, monkeypatch):
    provider = pool.provider
    real = type(provider).destroy
    calls = []

    def flaky(self, vms):
        calls.append(1)
        if len(calls) == 1:
            return ["instance i-x: RequestLimitExceeded (test)"]
        return real(self, vms)

    monkeypatch.setattr(type(provider), "destroy", flaky)
    assert pool.destroy() == []
    assert len(calls) == 2 and live() == [] and groups() == []
    assert not any("may remain" in line for line in pool.lines)


def test_a_deletion_that_never_succeeds_names_the_reaper(pool, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(type(pool.provider), "destroy", lambda self, vms: ["instance i-x: refused (test)"])
        failures = pool.destroy()
    assert failures == ["instance i-x: refused (test)"]
    assert not pool.destroyed
    assert pool.lines[-1] == ("agentbench pool: some resources may remain; run "
                              "pytest --agentbench-reap --pool aws --agentbench-reap-run faults")
    assert pool.destroy() == [] and live() == []


def test_pool_json_stays_whole_while_creation_threads_save(tmp_path, aws_env, moto_ami):
    provider = make_provider("aws", ProviderConfig(run_id="saves", image=moto_ami, poll_interval=0))
    cloud = CloudPool(provider, PoolOptions(run_id="saves", folder=tmp_path), log=lambda line: None)
    from pytest_agentbench.infra.providers.base import VM

    cloud.vms = [VM(name=f"vm{i}", provider="aws", resource_id=f"i-{i}", region="us-east-1", size="m", ssh_user="u",
                    extra={"pad": "x" * 20000}) for i in range(20)]
    errors: list[BaseException] = []

    def save() -> None:
        try:
            for _ in range(40):
                cloud._save()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    seen: list[str] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                seen.append(Path(tmp_path / "pool.json").read_text())
            except FileNotFoundError:
                pass

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=save) for _ in range(8)]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    reader.join()
    assert not errors
    assert not list(tmp_path.glob("*.tmp*"))
    for text in [*seen, (tmp_path / "pool.json").read_text()]:
        assert len(json.loads(text)["vms"]) == 20


# -- leases on demand: xdist workers trade tickets for VMs over the controller's loopback service ---------
@pytest.fixture
def managers(pytester, pool):
    """The controller's PoolManager over ``pool`` (one of its two VMs already deleted, so one is
    free), and a maker of a worker's PoolManager holding the ticket the controller gave it."""
    from pytest_agentbench.plugin.pools import PoolManager

    config = pytester.parseconfigure("--pool", "aws")
    controller = PoolManager(config, "aws")
    controller.cloud = pool
    spare = pool.free.pop()
    pool.provider.destroy([spare])
    pool.vms.remove(spare)
    assert len(live()) == 1

    def worker(holder: str) -> PoolManager:
        manager = PoolManager(config, "aws")
        manager.lease = controller.lease_for(holder)
        assert manager.lease is not None and manager.lease["kind"] == "deferred"
        return manager

    yield controller, worker
    controller.destroy()
    assert live() == [] and groups() == []


def test_workers_take_a_vm_on_first_use_and_one_is_created_when_none_is_free(managers):
    controller, worker = managers
    first, second = worker("gw0"), worker("gw1")
    assert len(live()) == 1  # a ticket is not a VM
    vms: dict[str, dict] = {}
    threads = [threading.Thread(target=lambda m=m, h=h: vms.__setitem__(h, m.vm())) for m, h in
               ((first, "gw0"), (second, "gw1"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(live()) == 2 and vms["gw0"]["resource_id"] != vms["gw1"]["resource_id"]
    assert {vm["resource_id"] for vm in vms.values()} == set(live())
    assert first.vm() == vms["gw0"]  # the lease is kept: no second request
    # A replacement worker gets the VM its crashed predecessor gave back, and nothing is created.
    controller.release("gw0")
    assert worker("gw2").vm() == vms["gw0"] and len(live()) == 2


def test_a_vm_that_cannot_be_created_makes_the_workers_items_infrastructure_errors(managers, monkeypatch):
    from pytest_agentbench.benchmark import InfrastructureError
    from pytest_agentbench.infra.providers.base import ProviderError

    controller, worker = managers
    worker("gw0").vm()  # takes the free VM

    def refuse(self, spec):
        raise ProviderError("instance limit exceeded (test)")

    monkeypatch.setattr(type(controller.cloud.provider), "create_vm", refuse)
    second = worker("gw1")
    for _ in range(2):  # the second item fails at once with the same reason, without asking again
        with pytest.raises(InfrastructureError, match=r"^--pool aws: instance limit exceeded \(test\)$"):
            second.vm()
    assert len(live()) == 1


def test_the_lease_service_answers_only_its_own_workers(managers):
    from multiprocessing import AuthenticationError
    from multiprocessing.connection import Client

    controller, worker = managers
    ticket = dict(controller.lease_for("gw0"))
    with pytest.raises(AuthenticationError):  # the HMAC challenge fails
        Client((ticket["host"], ticket["port"]), authkey=b"not the key").send("gw0")
    assert len(live()) == 1 and not controller.cloud.leased
    assert worker("gw0").vm()["resource_id"] == live()[0]  # and it still serves the real ones
