"""A pool of cloud VMs for one run: created on the controller, leased one per pytest process,
deleted on every exit path.

Lifecycle (the pytest glue in ``pool_plugin.py`` calls these):

* :meth:`CloudPool.provision` creates ``count`` VMs in parallel. Each VM is recorded the moment the
  cloud accepts it, before any wait, so an interrupt during creation still deletes it.
* :meth:`CloudPool.lease` / :meth:`CloudPool.release` hand VMs to processes from a free list, as
  the static pool does; leases are plain dicts that travel in xdist's ``workerinput``.
* :meth:`CloudPool.destroy` waits for creations still in flight, deletes every recorded VM and the
  run-wide resources, then asks the cloud for anything still tagged with this run id (a VM whose
  creation reply was lost) and deletes that too, and repeats until the cloud lists nothing of the
  run (up to ``DELETE_ATTEMPTS`` rounds). Only a confirmed deletion marks the pool deleted, so a
  call that was cut short (an exception, a signal) is redone in full by the next call. SIGINT and
  SIGTERM are held back while it runs: a second Ctrl-C, or the SIGTERM a CI runner sends after
  it, is reported, not obeyed. Whenever anything may remain, the reaper command is printed. It
  never raises, and is a no-op with ``keep=True`` (``--pool-keep``) except for saying what was
  kept.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_agentbench.files import write_atomic
from pytest_agentbench.infra import cloud_init
from pytest_agentbench.infra.prices import hourly_price, vm_hours
from pytest_agentbench.infra.providers.base import CREATED_TAG, RUN_TAG, VM, Provider, ProviderError, VMSpec
from pytest_agentbench.infra.signals import held_signals

Lease = dict[str, Any]

#: Most VMs created at once (cloud APIs throttle bursts).
MAX_PARALLEL_CREATES = 8
#: Rounds of delete-then-look before the pool reports that something may remain.
DELETE_ATTEMPTS = 3


@dataclass
class PoolOptions:
    """What the pool was asked for (from ``--pool-*`` options)."""

    run_id: str
    keep: bool = False
    auto_shutdown_hours: float = 4.0
    #: "ssh": tunnel to the VM's loopback ports; "direct": talk to the VM's address.
    connect: str = "ssh"
    address: str = "public"  # which VM address to use: public or private
    waa_port: int = 5000
    evaluate_port: int = 5051
    cdp_port: int = 9222
    ready_timeout: float = 1200.0
    hourly_usd: float | None = None
    #: a user-given login key (its ``.pub`` is installed), or a ``.pub`` whose private half is in
    #: the user's SSH agent; None = a fresh key per run
    ssh_key: Path | None = None
    #: where keys and pool.json go (the run folder's ``pool/``)
    folder: Path | None = None
    #: the VMs serve as Docker hosts (``--opencomputer-backend docker``): what cloud-init sets up
    docker: cloud_init.DockerSetup | None = None


@dataclass
class CloudPool:
    provider: Provider
    options: PoolOptions
    log: Callable[[str], None] = print
    vms: list[VM] = field(default_factory=list)
    free: list[VM] = field(default_factory=list)
    leased: dict[str, VM] = field(default_factory=dict)
    #: no VM may be created any more (deletion has begun)
    closing: bool = False
    #: the cloud confirmed that nothing of this run remains (or --pool-keep kept it on purpose)
    destroyed: bool = False
    failures: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        #: create_vm calls in flight: destroy waits for these (their VMs get ids), not for the
        #: much longer waits until each VM runs
        self._creating = 0
        self._created = threading.Condition(self._lock)
        self._executor: ThreadPoolExecutor | None = None
        self._login_key: Path | None = None
        self._login_public: str | None = None
        self._host_keys: dict[str, cloud_init.KeyPair] = {}
        #: one writer of pool.json at a time (creation threads save concurrently)
        self._save_lock = threading.Lock()

    # -- facts ---------------------------------------------------------------------------------
    @property
    def hourly_usd(self) -> float | None:
        return hourly_price(self.provider.name, self.provider.size, self.options.hourly_usd)

    def describe(self) -> str:
        return f"{self.provider.name} {self.provider.size} in {self.provider.region}"

    def cost(self) -> dict[str, Any]:
        """VM hours so far (up to deletion for deleted VMs) times the created size's price."""
        hours = vm_hours(self.vms)
        rate = self.hourly_usd
        return {"provider": self.provider.name, "size": self.provider.size, "region": self.provider.region,
                "vms": len(self.vms), "vm_hours": round(hours, 4), "hourly_usd": rate,
                "vm_usd": None if rate is None else round(hours * rate, 4),
                "final": self.destroyed}

    # -- keys ----------------------------------------------------------------------------------
    def _keys(self) -> tuple[Path | None, str]:
        """The login key file (None: the user's SSH agent holds it) and its public half."""
        if self._login_public is None:
            if self.options.ssh_key is not None:
                given = self.options.ssh_key
                self._login_key = None if given.suffix == ".pub" else given
                self._login_public = cloud_init.read_public_key(given)
            else:
                folder = self.options.folder or Path(".")
                pair = cloud_init.new_ed25519(f"agentbench-{self.options.run_id}")
                self._login_key = cloud_init.write_private_key(folder / "login_key", pair)
                self._login_public = pair.public_openssh
        assert self._login_public is not None
        return self._login_key, self._login_public

    def spec_for(self, index: int) -> VMSpec:
        """The VM spec for worker ``index``: a fresh host key, the login key, the tags."""
        provider = self.provider
        name = f"agentbench-{self.options.run_id}-{index}"
        _, public = self._keys()
        host = cloud_init.new_ed25519(name)
        self._host_keys[name] = host
        hours = self.options.auto_shutdown_hours
        in_guest = bool(getattr(provider, "shutdown_in_guest", False)) and hours > 0
        data = cloud_init.user_data(login_public_key=public, host_key=host,
                                    shutdown_minutes=round(hours * 60) if in_guest else None,
                                    docker=self.options.docker)
        tags = {RUN_TAG: self.options.run_id, CREATED_TAG: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        return VMSpec(name=name, size=provider.size, region=provider.region, image=provider.config.image or "",
                      ssh_user=provider.ssh_user, ssh_public_key=public, user_data=data, tags=tags,
                      auto_shutdown_hours=hours)

    # -- create --------------------------------------------------------------------------------
    def provision(self, count: int) -> list[VM]:
        """Create ``count`` VMs (in parallel) and wait until each runs. Raises ProviderError
        after the first failure; what was created stays recorded for :meth:`destroy`."""
        if count <= 0:
            return []
        self.provider.prepare()
        start = len(self.vms)
        specs = [self.spec_for(start + i) for i in range(count)]
        cidr = getattr(self.provider, "ssh_cidr", None)
        reach = f"; SSH from {cidr} only" if cidr else ""
        self.log(f"agentbench pool: creating {count} VM(s), {self.describe()} (run {self.options.run_id}{reach})")
        self._executor = self._executor or ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_CREATES, count),
                                                              thread_name_prefix="agentbench-pool")
        futures = [self._executor.submit(self._create_one, spec) for spec in specs]
        created: list[VM] = []
        first_error: Exception | None = None
        for future in futures:  # every creation is awaited before raising; Ctrl-C/SIGTERM goes through
            try:
                created.append(future.result())
            except Exception as exc:  # noqa: BLE001
                first_error = first_error or exc
        self._save()
        if first_error is not None:
            if isinstance(first_error, ProviderError):
                raise first_error
            raise ProviderError(f"{self.provider.name}: creating a VM failed: {first_error}") from first_error
        with self._lock:
            self.free.extend(created)
        self.log(f"agentbench pool: {len(created)} VM(s) running: "
                 + ", ".join(f"{vm.name} ({vm.public_ip or vm.private_ip})" for vm in created))
        return created

    def _create_one(self, spec: VMSpec) -> VM:
        with self._created:
            if self.closing:
                raise ProviderError("the run ended before this VM was created")
            self._creating += 1
        try:
            vm = self.provider.create_vm(spec)
            vm.host_key = " ".join(self._host_keys[spec.name].public_openssh.split()[:2])
            with self._lock:
                self.vms.append(vm)
        finally:
            with self._created:
                self._creating -= 1
                self._created.notify_all()
        self._save()
        return self.provider.wait_running(vm)

    # -- leases --------------------------------------------------------------------------------
    def lease(self, holder: str) -> Lease | None:
        with self._lock:
            if holder in self.leased:
                vm = self.leased[holder]
            elif self.free:
                vm = self.free.pop(0)
                self.leased[holder] = vm
            else:
                return None
        return self.lease_for(vm)

    def lease_for(self, vm: VM) -> Lease:
        key, _ = self._keys()
        opts = self.options
        return {"name": vm.name, "kind": "cloud", "vm": vm.to_dict(), "connect": opts.connect,
                "address": opts.address, "ssh_key": str(key) if key else None, "waa_port": opts.waa_port,
                "evaluate_port": opts.evaluate_port, "cdp_port": opts.cdp_port, "ready_timeout": opts.ready_timeout}

    def release(self, holder: str) -> None:
        with self._lock:
            vm = self.leased.pop(holder, None)
            if vm is not None and not self.closing:
                self.free.append(vm)

    # -- delete --------------------------------------------------------------------------------
    def reap_command(self) -> str:
        return f"pytest --agentbench-reap --pool {self.provider.name} --agentbench-reap-run {self.options.run_id}"

    def destroy(self) -> list[str]:
        """Delete everything this run created (see the module docstring). Idempotent: after a
        confirmed deletion it returns at once; after an interrupted one it starts over.

        SIGINT and SIGTERM are held from the first line: a second Ctrl-C (or a CI runner's
        SIGTERM after its SIGINT) that lands while creations still in flight are awaited would
        otherwise abort the deletion and leave those VMs running."""
        with held_signals(self._signalled):
            return self._destroy()

    def _destroy(self) -> list[str]:
        with self._created:
            if self.destroyed:
                return self.failures
            self.closing = True
            # Creation requests in flight get their ids (and are recorded) before deleting;
            # VMs still booting are deleted without waiting for them to run.
            self._created.wait_for(lambda: self._creating == 0, timeout=self.provider.config.wait_timeout)
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
        if self.options.keep:
            self.destroyed = True
            self.log(f"agentbench pool: kept {len(self.vms)} VM(s) (--pool-keep); "
                     f"delete them with {self.reap_command()}")
            self._save()
            return []
        confirmed = False
        try:
            failures = self._delete_until_confirmed()
            confirmed = not failures
            self.failures = failures
            for line in failures:
                self.log(f"agentbench pool: ERROR: {line}")
        finally:
            # Also reached when something escaped (a bug, an exception from a thread's signal):
            # the user learns how to clean up either way.
            if confirmed:
                self.destroyed = True
            self._save()
            if not confirmed:
                self.log(f"agentbench pool: some resources may remain; run {self.reap_command()}")
        return self.failures

    def _signalled(self, signum: int) -> None:
        self.log(f"agentbench pool: got signal {signum} while deleting the VMs of run {self.options.run_id}; "
                 f"deletion continues (if you kill pytest now, run {self.reap_command()})")

    def _delete_until_confirmed(self) -> list[str]:
        """Delete the recorded VMs and the run-wide resources, then whatever the cloud still lists
        under the run's tag, until it lists nothing. Returns the failures of the last round
        (empty: confirmed)."""
        failures: list[str] = []
        for attempt in range(1, DELETE_ATTEMPTS + 1):
            failures = []
            try:
                live = [vm for vm in self.vms if vm.deleted_at is None]
                if live and attempt == 1:
                    self.log(f"agentbench pool: deleting {len(live)} VM(s) of run {self.options.run_id}")
                failures += self.provider.destroy(list(self.vms))
                leftovers = self.provider.find_leftovers(self.options.run_id)
                if leftovers:
                    failures += self.provider.reap(leftovers)
                    if not failures and self.provider.find_leftovers(self.options.run_id):
                        failures.append(f"{self.provider.name}: resources of run {self.options.run_id} "
                                        "are still listed after deleting them")
            except Exception as exc:  # noqa: BLE001 - report, never raise from a cleanup
                failures.append(f"{self.provider.name}: deleting the pool failed: {exc}")
            if not failures:
                now = time.time()
                for vm in self.vms:
                    vm.deleted_at = vm.deleted_at or now
                return []
            if attempt < DELETE_ATTEMPTS:
                self.log(f"agentbench pool: deletion round {attempt} left {len(failures)} problem(s); retrying")
                time.sleep(min(5.0, self.provider.config.poll_interval))
        return failures

    # -- record --------------------------------------------------------------------------------
    def _save(self) -> None:
        """``pool.json`` in the pool folder: what exists, so a user can find it after a crash.
        One writer at a time: creation threads save concurrently, and two writers sharing the
        temporary file would publish a torn one."""
        folder = self.options.folder
        if folder is None:
            return
        with self._save_lock:
            self._save_locked(folder)

    def _save_locked(self, folder: Path) -> None:
        with self._lock:
            data = {"run_id": self.options.run_id, "provider": self.provider.name,
                    "region": self.provider.region, "size": self.provider.size,
                    "kept": self.options.keep, "destroyed": self.destroyed,
                    "vms": [vm.to_dict() for vm in self.vms]}
        data["cost"] = self.cost()
        try:
            write_atomic(folder / "pool.json", json.dumps(data, indent=2, sort_keys=True), mkdir=True)
        except OSError:
            pass  # the record is a convenience; the cloud tags are the source of truth
