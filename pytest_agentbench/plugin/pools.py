"""The pytest side of machine pools (``--pool static|aws|azure``): options to objects, leases to
processes, connections to benchmarks, and deletion on every exit path.

Why one module of over 500 lines: leases, connections and deletion share each pool's state, and
every exit path has to see all of it to delete everything.

Where each step happens (DESIGN §3.5):

* controller, session start: options are checked and the cloud is asked, read-only, whether the
  credentials, region, size and image work (one-line usage errors); the deletion is registered
  with ``config.add_cleanup`` and SIGTERM is turned into KeyboardInterrupt, before anything exists;
* controller, ``pytest_xdist_setupnodes``: one VM per worker is created (in parallel), but never
  more than there are items left to play (``--bench-resume`` leaves fewer; none: no VM);
  ``pytest_configure_node`` gives each worker a ticket (``lease_service.py``) that it trades for a
  VM on its first item that needs one, so a worker the scheduler gives nothing holds none;
  ``pytest_testnodedown`` gives the VM back, so a replacement worker gets a free VM (one is
  created when none is free);
* without xdist, the first item that needs the benchmark (or the ``vm`` fixture) creates the one VM;
* every process opens its own connection (an SSH tunnel) on first use and waits for WAA readiness;
  a VM that never becomes ready makes the items errors, not failures;
* controller, session finish (and the cleanup as a safety net): every VM is deleted, unless
  ``--pool-keep``; the VM cost goes into the summary and the terminal.
"""

from __future__ import annotations

import secrets
import signal
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_agentbench.plugin.options import setting as _opt

if TYPE_CHECKING:
    from pytest_agentbench.benchmark import Benchmark
    from pytest_agentbench.infra.cloud_pool import CloudPool
    from pytest_agentbench.infra.connect import VMConnection
    from pytest_agentbench.infra.docker_hosts import DockerHost, SSHSettings
    from pytest_agentbench.infra.lease_service import LeaseService
    from pytest_agentbench.infra.pool import StaticPool

CLOUD_KINDS = ("aws", "azure")
POOL_KINDS = ("static", "docker", *CLOUD_KINDS)


def pool_kind(config: pytest.Config) -> str | None:
    kind = config.getoption("pool") or str(config.getini("agentbench_pool")).strip() or None
    if kind is not None and kind not in POOL_KINDS:
        raise pytest.UsageError(f"ini agentbench_pool must be one of {', '.join(POOL_KINDS)}, got {kind!r}")
    return kind


def _float_setting(config: pytest.Config, name: str, default: float | None, flag: str) -> float | None:
    value = _opt(config, name)
    if value is None:
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"{flag} must be a number, got {value!r}") from None
    if not 0 <= number < float("inf"):
        raise pytest.UsageError(f"{flag} must be a finite number >= 0, got {value!r}")
    return number


def new_run_id() -> str:
    """Unique per invocation, short, and valid in AWS tags and Azure resource names."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def provider_config(config: pytest.Config, kind: str, run_id: str, ssh_cidr: str | None = None) -> Any:
    """The provider's settings from the options. ``ssh_cidr`` (the resolved SSH ingress block, see
    ``ingress.py``) beats ``--pool-ssh-cidr``; the read-only uses (dry run, reaper) need neither."""
    from pytest_agentbench.infra.providers.base import ProviderConfig

    extra: dict[str, Any] = {}
    if kind == "azure":
        sub = _opt(config, "azure_subscription")
        if sub:
            extra["subscription_id"] = sub
    if kind == "aws":
        subnet = _opt(config, "aws_subnet")
        if subnet:
            extra["subnet_id"] = subnet
    cidr = ssh_cidr or _opt(config, "pool_ssh_cidr")
    if cidr:
        extra["ssh_cidr"] = cidr
    for given in config.hook.pytest_agentbench_pool_provider_extra(kind=kind, config=config):
        extra.update(given or {})
    poll = _float_setting(config, "pool_poll_interval", 5.0, "--pool-poll-interval")
    return ProviderConfig(run_id=run_id, region=_opt(config, "pool_region"), size=_opt(config, "pool_size"),
                          image=_opt(config, "pool_image"), ssh_user=_opt(config, "pool_ssh_user"), extra=extra,
                          poll_interval=poll or 0.0)


def make_provider(config: pytest.Config, kind: str, run_id: str, ssh_cidr: str | None = None) -> Any:
    from pytest_agentbench.infra.providers import make_provider as make

    return make(kind, provider_config(config, kind, run_id, ssh_cidr))


def ssh_ingress(config: pytest.Config) -> str:
    """``--pool-ssh-cidr``, else this machine's public address (``ingress.py``); a usage error
    asking for the option when that cannot be learned."""
    given = _opt(config, "pool_ssh_cidr")
    if given:
        from pytest_agentbench.values import cidr

        return cidr("--pool-ssh-cidr", given)
    from pytest_agentbench.infra.ingress import IngressError, public_cidr

    try:
        return public_cidr()
    except IngressError as exc:
        raise pytest.UsageError(f"--pool-ssh-cidr: {exc}") from None


def vm_estimate(config: pytest.Config, kind: str, tasks: int) -> tuple[Any, Any, float]:
    """The cloud pool's VM estimate for ``tasks`` from the options: (provider, Estimate, minutes
    per task). Used by ``--pool-dry-run`` and ``--bench-dry-run``; raises ProviderError for a bad setting.
    No VM is counted for a worker without a task (the pool creates none for it)."""
    from pytest_agentbench.infra.prices import DEFAULT_MINUTES_PER_TASK, Estimate, estimate, hourly_price
    from pytest_agentbench.infra.providers import make_provider as make

    provider = make(kind, provider_config(config, kind, "dry-run"))
    rate = hourly_price(kind, provider.size, _float_setting(config, "pool_hourly_usd", None, "--pool-hourly-usd"))
    minutes = _float_setting(config, "pool_minutes_per_task", DEFAULT_MINUTES_PER_TASK,
                             "--pool-minutes-per-task") or DEFAULT_MINUTES_PER_TASK
    if tasks <= 0:
        return provider, Estimate(0, 0, minutes, 0.0, rate), minutes
    return provider, estimate(tasks, min(tasks, requested_workers(config)), rate, minutes), minutes


def requested_workers(config: pytest.Config) -> int:
    """VMs to create: ``--pool-workers``, else one per xdist worker, else one."""
    explicit = config.getoption("pool_workers")
    if explicit:
        return int(explicit)
    tx = getattr(config.option, "tx", None) or []
    numprocesses = getattr(config.option, "numprocesses", None)
    if isinstance(numprocesses, int) and numprocesses > 0:
        return numprocesses
    return max(1, len(tx))


def _raise_keyboard_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


class PoolManager:
    """One per process when ``--pool`` is given; registered as the plugin ``agentbench-pool``."""

    def __init__(self, config: pytest.Config, kind: str) -> None:
        self.config = config
        self.kind = kind
        self.static: StaticPool | None = None
        self.cloud: CloudPool | None = None
        #: this process's lease (a worker's from workerinput; the controller's own without xdist)
        self.lease: dict[str, Any] | None = None
        self.connection: VMConnection | None = None
        #: --pool docker: this process's leased Docker host, made on first use
        self.docker_host: DockerHost | None = None
        self._endpoints: dict[str, str | None] | None = None
        self._connect_error: str | None = None
        self._provision_error: str | None = None
        self._old_sigterm: Any = None
        # --bench-dry-run prints the whole estimate (VM and model) itself; --pool-dry-run alone, the VMs
        self.dry_run = bool(config.getoption("pool_dry_run")) or bool(config.getoption("dry_run", False))
        self.print_estimate = bool(config.getoption("pool_dry_run")) and not config.getoption("dry_run", False)
        self.run_id: str | None = None
        self._lock = threading.Lock()
        #: controller under xdist: where workers trade their tickets for leases
        self._leases: LeaseService | None = None
        #: controller: one on-demand VM creation at a time (the planned ones are made up front)
        self._grant_lock = threading.Lock()

    @property
    def is_cloud(self) -> bool:
        return self.kind in CLOUD_KINDS

    @property
    def distributed(self) -> bool:
        return self.config.pluginmanager.hasplugin("dsession")

    # -- controller: start -----------------------------------------------------------------------
    def start(self) -> None:
        """Check options and the cloud account; register the deletion before anything exists."""
        if self.kind == "static":
            self._start_static()
            return
        if self.kind == "docker":
            self._start_docker()
            return
        if self.dry_run or self.config.option.collectonly:
            return  # nothing may start; the dry run's estimate is printed after collection
        from pytest_agentbench.infra.cloud_pool import CloudPool, PoolOptions
        from pytest_agentbench.infra.providers.base import ProviderError

        self.run_id = new_run_id()
        try:
            provider = make_provider(self.config, self.kind, self.run_id)
            provider.check()
        except ProviderError as exc:
            raise pytest.UsageError(f"--pool {self.kind}: {exc}") from None
        # Once the account works: who may reach port 22 (asks the network when not given).
        provider.ssh_cidr = ssh_ingress(self.config)
        workers = requested_workers(self.config)
        nodes = len(getattr(self.config.option, "tx", None) or [])
        if self.distributed and workers < nodes:
            raise pytest.UsageError(f"--pool-workers {workers} is fewer than the {nodes} xdist workers; "
                                    f"give one VM per worker (--pool-workers {nodes})")
        ssh_key = _opt(self.config, "pool_ssh_key")
        ready = _float_setting(self.config, "pool_ready_timeout", 1200.0, "--pool-ready-timeout")
        options = PoolOptions(
            run_id=self.run_id, keep=bool(self.config.getoption("keep_pool")),
            auto_shutdown_hours=_float_setting(self.config, "pool_auto_shutdown_hours", 4.0,
                                               "--pool-auto-shutdown-hours") or 0.0,
            connect=_opt(self.config, "pool_connect") or "ssh", address=_opt(self.config, "pool_address") or "public",
            waa_port=int(self.config.getoption("pool_waa_port")),
            evaluate_port=int(self.config.getoption("pool_evaluate_port")),
            cdp_port=int(self.config.getoption("pool_cdp_port")),
            ready_timeout=ready if ready is not None else 1200.0,
            hourly_usd=_float_setting(self.config, "pool_hourly_usd", None, "--pool-hourly-usd"),
            ssh_key=Path(ssh_key).expanduser() if ssh_key else None)
        options.docker = self._docker_setup(provider.ssh_user)
        if options.connect not in ("ssh", "direct"):
            raise pytest.UsageError(f"--pool-connect must be ssh or direct, got {options.connect!r}")
        if options.address not in ("public", "private"):
            raise pytest.UsageError(f"--pool-address must be public or private, got {options.address!r}")
        if options.ssh_key is not None:
            from pytest_agentbench.infra.cloud_init import KeySetupError, read_public_key

            try:
                read_public_key(options.ssh_key)
            except KeySetupError as exc:
                raise pytest.UsageError(str(exc)) from None
        self.cloud = CloudPool(provider, options, log=self._log)
        # From here on, whatever exists is deleted however the run ends.
        self.config.add_cleanup(self.destroy)
        if threading.current_thread() is threading.main_thread():
            self._old_sigterm = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)

    def _start_static(self) -> None:
        from pytest_agentbench.infra.pool import parse_hosts

        entries = self.config.getoption("pool_hosts") or self.config.getini("agentbench_pool_hosts") or []
        try:
            hosts = parse_hosts(list(entries), int(self.config.getoption("pool_cdp_port")))
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
        if not hosts:
            raise pytest.UsageError("--pool static needs --pool-hosts URL[,URL...] (one WAA server per worker)")
        self._lease_existing(hosts)

    def _lease_existing(self, hosts: list[dict[str, Any]]) -> None:
        """A pool of existing hosts (static, docker): one per worker, else a usage error; without
        xdist this process leases the first now."""
        from pytest_agentbench.infra.pool import StaticPool

        workers = getattr(self.config.option, "numprocesses", None)
        if isinstance(workers, int) and workers > len(hosts) and self.distributed:
            raise pytest.UsageError(
                f"--pool {self.kind} has {len(hosts)} host(s) for {workers} workers; "
                f"give one host per worker (-n {len(hosts)})")
        self.static = StaticPool(hosts)
        if not self.distributed:
            self.lease = self.static.lease("main")

    def _docker_setup(self, user: str) -> Any:
        """A cloud pool for OpenComputer's docker backend: its VMs are Docker hosts (cloud-init
        installs Docker and gets the image, see ``cloud_init.DockerSetup``); None otherwise."""
        source = _opt(self.config, "pool_docker_image_from")
        if _opt(self.config, "opencomputer_backend") != "docker":
            if source:
                raise pytest.UsageError("--pool-docker-image-from is for --opencomputer-backend docker (the VMs serve "
                                        "as Docker hosts)")
            return None
        if source and source != "pull" and not str(source).startswith(("https://", "http://")):
            raise pytest.UsageError(f"--pool-docker-image-from must be pull or an http(s) URL of a docker save "
                                    f"tarball, got {source!r}")
        from pytest_agentbench.infra.cloud_init import DockerSetup

        return DockerSetup(user=user, image=_docker_image(self.config), source=source or None)

    def _start_docker(self) -> None:
        """``--pool docker``: existing Docker hosts, one per process, each checked now (the daemon
        answers through its transport and holds the image), so a host that refuses SSH or lacks
        the image is a usage error before any item runs."""
        if _opt(self.config, "opencomputer_backend") != "docker":
            raise pytest.UsageError("--pool docker leases Docker hosts to OpenComputer's docker backend: add "
                                    "--opencomputer-backend docker (WAA servers are leased with --pool static)")
        hosts, ssh = docker_pool_hosts(self.config, "--pool docker needs --pool-hosts ssh://user@host[,...] (one "
                                                    "Docker host per worker)")
        self._lease_existing(hosts)
        if not (self.dry_run or self.config.option.collectonly):
            problems = check_docker_hosts([h["docker_host"] for h in hosts], ssh, _docker_image(self.config))
            if problems:
                raise pytest.UsageError(f"--pool docker: {problems[0]}"
                                        + (f" (and {len(problems) - 1} more host(s))" if len(problems) > 1 else ""))

    def set_folder(self, folder: Path) -> None:
        if self.cloud is not None:
            self.cloud.options.folder = folder / "pool"

    # -- controller: create and lease ------------------------------------------------------------
    def provision(self, count: int) -> None:
        """Create ``count`` VMs; a cloud refusal is a usage error (what exists is deleted)."""
        from pytest_agentbench.infra.providers.base import ProviderError

        if self.cloud is None:
            return
        self._find_folder()
        try:
            self.cloud.provision(count)
        except ProviderError as exc:
            self._provision_error = str(exc)
            raise pytest.UsageError(f"--pool {self.kind}: {exc}") from None

    def _find_folder(self) -> None:
        """Keys and pool.json go into the run folder's ``pool/``, once there is a run folder."""
        if self.cloud is None or self.cloud.options.folder is not None:
            return
        from pytest_agentbench.plugin.state import STATE_KEY

        state = self.config.stash.get(STATE_KEY, None)
        folder = state.run_folder.path if state is not None and state.run_folder is not None else None
        if folder is not None:
            self.set_folder(folder)

    def lease_for(self, holder: str) -> dict[str, Any] | None:
        """What an xdist worker starts with: its static host, or a cloud pool's ticket for a VM."""
        if self.static is not None:
            return self.static.lease(holder)
        if self.cloud is not None:
            if self._leases is None:
                from pytest_agentbench.infra.lease_service import LeaseService

                self._leases = LeaseService(self._grant)
            return self._leases.ticket(holder)
        return None

    def _grant(self, holder: str) -> dict[str, Any]:
        """A worker's first item needs its VM: a free one, else one created now."""
        from pytest_agentbench.infra.lease_service import LeaseError
        from pytest_agentbench.infra.providers.base import ProviderError

        assert self.cloud is not None
        lease = self.cloud.lease(holder)
        if lease is not None:
            return lease
        with self._grant_lock:
            lease = self.cloud.lease(holder)  # another request's VM may have been freed meanwhile
            if lease is None:
                self._find_folder()
                try:
                    self.cloud.provision(1)
                except ProviderError as exc:
                    raise LeaseError(f"--pool {self.kind}: {exc}") from None
                lease = self.cloud.lease(holder)
        if lease is None:
            raise LeaseError(f"--pool {self.kind}: no VM is left for {holder}")
        return lease

    def release(self, holder: str) -> None:
        if self.static is not None:
            self.static.release(holder)
        elif self.cloud is not None:
            self.cloud.release(holder)

    def _ensure_own_lease(self) -> None:
        """Without xdist: the first use creates the one VM this process leases. An xdist worker
        trades its ticket for its VM on first use; when that fails, its items are infrastructure
        errors (``--bench-resume`` plays them again)."""
        from pytest_agentbench.infra.lease_service import is_ticket

        if is_ticket(self.lease):
            self._redeem()
            return
        if self.lease is not None or self.cloud is None or self.distributed:
            return
        with self._lock:
            if self.lease is not None:
                return
            if self._provision_error:
                pytest.exit(f"--pool {self.kind}: {self._provision_error}", returncode=pytest.ExitCode.USAGE_ERROR)
            if not self.cloud.free and not self.cloud.leased:
                try:
                    self.provision(1)
                except pytest.UsageError as exc:
                    pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)
            self.lease = self.cloud.lease("main")

    def _redeem(self) -> None:
        from pytest_agentbench.benchmark import InfrastructureError
        from pytest_agentbench.infra.lease_service import LeaseError, is_ticket, redeem

        with self._lock:
            if not is_ticket(self.lease):
                return
            if self._provision_error:
                raise InfrastructureError(self._provision_error)
            assert self.lease is not None
            try:
                self.lease = redeem(self.lease)
            except LeaseError as exc:
                self._provision_error = str(exc)
                raise InfrastructureError(str(exc)) from None

    def vm(self) -> dict[str, Any] | None:
        """The VM (as a dict) this process uses; creates it without xdist. None for static pools."""
        self._ensure_own_lease()
        if self.lease is None or self.lease.get("kind") != "cloud":
            return None
        return dict(self.lease["vm"])

    # -- any process: connect a benchmark ----------------------------------------------------------
    def apply(self, bench: Benchmark) -> None:
        """Point ``bench`` at this process's leased host (opening the tunnel on first use).

        The benchmark gets the WAA server and Chrome DevTools URLs, and the host's evaluate server
        URL only when the user chose to score with an evaluate server (``--waa-evaluate-url``): then
        each host's (a static ``URL|EVALUATE_URL`` entry, a cloud VM's ``--pool-evaluate-port``)
        replaces it. By default upstream's own evaluator code scores, and no evaluate URL is used."""
        if hasattr(bench, "use_docker_host") and getattr(bench, "docker", None) is not None and \
                (self.kind == "docker" or self.is_cloud):
            self._apply_docker(bench)  # OpenComputer's docker backend: the lease is a Docker host
            return
        if self.kind == "docker" or not hasattr(bench, "use_server"):
            return
        self._ensure_own_lease()
        lease = self.lease
        if lease is None:
            return
        wants_server = bool(self.config.getoption("waa_evaluate_url", None)
                            or str(self.config.getini("agentbench_waa_evaluate_url")).strip())
        if lease.get("kind") != "cloud":
            bench.use_server(lease["server_url"], lease.get("evaluate_url") if wants_server else None,
                             lease.get("cdp_url"))
            return
        endpoints = self._connect(lease)
        bench.use_server(endpoints["server_url"], endpoints.get("evaluate_url") if wants_server else None,
                         endpoints.get("cdp_url"))
        if hasattr(bench, "ready_timeout") and self.connection is not None:
            bench.ready_timeout = max(1.0, self.connection.remaining())

    def _apply_docker(self, bench: Benchmark) -> None:
        """Point an OpenComputer benchmark's containers at this process's leased Docker host: a
        ``--pool docker`` entry, or a cloud VM that serves as one (reached over the run's login key
        and pinned host key, once its daemon answers and holds the image)."""
        from pytest_agentbench.benchmark import InfrastructureError
        from pytest_agentbench.infra.docker_hosts import DockerHost, DockerHostError

        if not hasattr(bench, "use_docker_host"):
            return
        if self.docker_host is None:
            if self._connect_error is not None:
                raise InfrastructureError(self._connect_error)
            self._ensure_own_lease()
            lease = self.lease
            if lease is None:
                return
            try:
                if lease.get("kind") == "cloud":
                    self.docker_host = self._cloud_docker_host(lease)
                else:
                    self.docker_host = DockerHost(lease["docker_host"], docker_ssh_settings(self.config))
            except DockerHostError as exc:
                self._connect_error = str(exc)
                raise InfrastructureError(str(exc)) from None
        bench.use_docker_host(self.docker_host)

    def _cloud_docker_host(self, lease: dict[str, Any]) -> DockerHost:
        """The leased VM as a Docker host, waited for until its daemon answers with the image."""
        from pytest_agentbench.benches.opencomputer.container import ContainerError, check_docker
        from pytest_agentbench.infra.connect import VMConnection
        from pytest_agentbench.infra.docker_hosts import DockerHost, DockerHostError, SSHSettings

        vm = dict(lease["vm"])
        given = self.config.hook.pytest_agentbench_vm_endpoints(vm=vm, config=self.config) or {}
        if given.get("docker_host"):  # a bastion, a VPN address, a test double: the user's SSH setup
            host = DockerHost(given["docker_host"], docker_ssh_settings(self.config))
        else:
            connection = VMConnection(lease)
            port = int((vm.get("extra") or {}).get("ssh_port", 22))
            url = f"ssh://{vm['ssh_user']}@{connection.address()}" + (f":{port}" if port != 22 else "")
            key = lease.get("ssh_key")
            host = DockerHost(url, SSHSettings(key=Path(key) if key else None), host_key=vm.get("host_key"))
        deadline = time.monotonic() + float(lease.get("ready_timeout") or 0)
        image = _docker_image(self.config)
        while True:
            try:
                check_docker(image, host.env())
                return host
            except ContainerError as exc:
                if time.monotonic() >= deadline:
                    host.close()
                    raise DockerHostError(f"VM {vm['name']}: no Docker daemon with {image} within the ready "
                                          f"timeout: {exc}") from None
            time.sleep(min(5.0, max(0.0, deadline - time.monotonic())))

    def _connect(self, lease: dict[str, Any]) -> dict[str, str | None]:
        from pytest_agentbench.benchmark import InfrastructureError
        from pytest_agentbench.infra.connect import VMConnection

        if self._endpoints is not None:
            return self._endpoints
        if self._connect_error is not None:
            raise InfrastructureError(self._connect_error)
        endpoints = self.config.hook.pytest_agentbench_vm_endpoints(vm=dict(lease["vm"]), config=self.config)
        connection = VMConnection(lease, endpoints)
        try:
            self._endpoints = connection.open()
        except InfrastructureError as exc:
            self._connect_error = str(exc)
            raise
        self.connection = connection
        return self._endpoints

    # -- controller: end -------------------------------------------------------------------------
    def destroy(self) -> None:
        """Delete the pool (idempotent); restore SIGTERM. Runs at session finish and as a cleanup."""
        if self.connection is not None:
            self.connection.close()
            self.connection = None
        if self._leases is not None:
            self._leases.close()
        if self.cloud is not None:
            self.cloud.destroy()
        if self._old_sigterm is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._old_sigterm)
            self._old_sigterm = None

    def cost(self) -> dict[str, Any] | None:
        return self.cloud.cost() if self.cloud is not None and self.cloud.vms else None

    def _log(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(line)
        else:
            print(line, flush=True)

    # -- hooks -----------------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        # Every item has run (or the run was interrupted): delete now, before the run summary is
        # written, so the summary holds the final VM cost. The cleanup repeats it as a no-op.
        if not hasattr(self.config, "workerinput"):
            self.destroy()
        elif self.connection is not None:
            self.connection.close()
            self.connection = None

    def pytest_unconfigure(self) -> None:
        """The leased Docker host's SSH setup goes last: the benchmarks remove their last
        containers through it when the session finishes, after this plugin's own finish."""
        host, self.docker_host = self.docker_host, None
        if host is not None:
            host.close()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.dry_run:
            if self.print_estimate:
                self._print_estimate(terminalreporter)
            return
        cost = self.cost()
        if cost is None:
            return
        from pytest_agentbench.infra.prices import money

        rate = ("price unknown (give --pool-hourly-usd)" if cost["hourly_usd"] is None
                else f"${cost['hourly_usd']:.4f}/hr")
        state = "kept running" if self.cloud is not None and self.cloud.options.keep else "deleted"
        terminalreporter.write_line(
            f"VM cost: {cost['vms']} {cost['provider']} {cost['size']} VM(s), {cost['vm_hours']:.2f} vm-hours "
            f"@ {rate} = {money(cost['vm_usd'])} ({state})")
        controller = self.config.pluginmanager.get_plugin("agentbench-controller")
        summary = getattr(controller, "summary", None) or {}
        model = summary.get("total_cost_usd")
        if model is not None:
            total = None if cost["vm_usd"] is None else cost["vm_usd"] + model
            terminalreporter.write_line(f"Model cost: {money(model)} (from the agents); total {money(total)}")

    def _print_estimate(self, terminalreporter: Any) -> None:
        from pytest_agentbench.infra.prices import money
        from pytest_agentbench.plugin.resume import not_done
        from pytest_agentbench.plugin.state import STATE_KEY, is_episode_item

        session = getattr(terminalreporter, "_session", None)
        items = [i for i in (getattr(session, "items", None) or []) if is_episode_item(i)]
        state = self.config.stash.get(STATE_KEY, None)
        if state is not None:
            items = not_done(self.config, state, items)  # --bench-resume RUN: only what is left
        write = terminalreporter.write_line
        write("")
        if self.kind in ("static", "docker"):
            write(f"Pool dry run ({self.kind}): {len(items)} tasks on existing hosts; no VM is created, no VM cost.")
            return
        from pytest_agentbench.infra.providers.base import ProviderError

        try:
            provider, est, minutes = vm_estimate(self.config, self.kind, len(items))
        except ProviderError as exc:
            write(f"Pool dry run: {exc}")
            return
        size, region, rate, workers = provider.size, provider.region, est.hourly_usd, est.workers
        shown_rate = "price unknown (give --pool-hourly-usd)" if rate is None else f"${rate:.4f}/hr"
        per_task = "" if est.vm_usd is None or not items else f"   (${est.vm_usd / len(items):.4f}/task)"
        write(f"Pool dry run ({self.kind}, {size} in {region}, {workers} VM(s)): {len(items)} tasks")
        write(f"  VM-hours:   {est.vm_hours:.2f} vm-hours @ {shown_rate} = {money(est.vm_usd)}{per_task}")
        write(f"  Assumes {minutes:g} min per task and 0.25 h per VM to boot and become ready; "
              "model cost is not included.")
        write("  Nothing was started.")


def run_reaper(config: pytest.Config) -> int:
    """``pytest --agentbench-reap --pool aws|azure [--agentbench-reap-run ID]``: delete what runs left behind."""
    from pytest_agentbench.infra.providers.base import ProviderError

    kind = pool_kind(config)
    run = config.getoption("reap_run")
    if kind == "docker":
        return _reap_pool_hosts(config, run)
    if kind not in CLOUD_KINDS and _opt(config, "opencomputer_backend") == "docker":
        return _reap_containers(run)
    if kind not in CLOUD_KINDS:
        raise pytest.UsageError("--agentbench-reap needs --pool aws or --pool azure (the cloud to clean up), or "
                                "--opencomputer-backend docker (the containers on DOCKER_HOST)")
    try:
        provider = make_provider(config, kind, run or "reaper")
        found = provider.find_leftovers(run)
    except ProviderError as exc:
        raise pytest.UsageError(f"--agentbench-reap --pool {kind}: {exc}") from None
    scope = f"run {run}" if run else "any run"
    print(f"agentbench reap: {kind} {provider.region}: {len(found)} resource(s) tagged agentbench-run ({scope})")
    for item in found:
        print(f"  {item.kind:<15} {item.name:<40} run {item.run_id:<24} {item.state}")
    if not found:
        return 0
    failures = provider.reap(found)
    for line in failures:
        print(f"agentbench reap: ERROR: {line}")
    print(f"agentbench reap: deleted {len(found) - len(failures)} of {len(found)} resource(s)")
    return 1 if failures else 0


def _reap_pool_hosts(config: pytest.Config, run: str | None) -> int:
    """``pytest --agentbench-reap --pool docker --pool-hosts ...``: the containers on each host."""
    from pytest_agentbench.infra.docker_hosts import DockerHost

    hosts, ssh = docker_pool_hosts(config, "--agentbench-reap --pool docker needs --pool-hosts (the Docker hosts to "
                                           "clean up)")
    status = 0
    for lease in hosts:
        host = DockerHost(lease["docker_host"], ssh)
        try:
            status |= _reap_containers(run, host.env(), lease["docker_host"])
        finally:
            host.close()
    return status


def _reap_containers(run: str | None, env: dict[str, str] | None = None, where: str | None = None) -> int:
    """``pytest --agentbench-reap --opencomputer-backend docker``: remove the OpenComputer containers
    that runs of this plugin left on the Docker daemon (``env``'s DOCKER_HOST, default this process's)."""
    from pytest_agentbench.benches.opencomputer.container import ContainerError, reap

    try:
        removed, failures = reap(run, env)
    except ContainerError as exc:
        raise pytest.UsageError(f"--agentbench-reap {where or '--opencomputer-backend docker'}: {exc}") from None
    scope = f"run {run}" if run else "any run"
    if where:
        scope += f" on {where}"
    for name in removed:
        print(f"  removed {name}")
    for line in failures:
        print(f"agentbench reap: ERROR: {line}")
    print(f"agentbench reap: docker: removed {len(removed)} container(s) of {scope}, {len(failures)} failed")
    return 1 if failures else 0


def docker_pool_hosts(config: pytest.Config, missing: str) -> tuple[list[dict[str, Any]], SSHSettings]:
    """``--pool-hosts`` as a docker pool's leases and the SSH settings for them; a usage error for a
    bad entry or setting, and ``missing`` when no host is given."""
    from pytest_agentbench.infra.docker_hosts import DockerHostError, parse_docker_hosts

    entries = config.getoption("pool_hosts") or config.getini("agentbench_pool_hosts") or []
    try:
        hosts = parse_docker_hosts(list(entries))
        ssh = docker_ssh_settings(config)
    except DockerHostError as exc:
        raise pytest.UsageError(str(exc)) from None
    if not hosts:
        raise pytest.UsageError(missing)
    return hosts, ssh


def docker_ssh_settings(config: pytest.Config) -> SSHSettings:
    """``--pool-ssh-key`` and ``--pool-ssh-known-hosts`` for a docker pool's ssh:// hosts, checked."""
    from pytest_agentbench.infra.docker_hosts import SSHSettings

    key, known = _opt(config, "pool_ssh_key"), _opt(config, "pool_ssh_known_hosts")
    settings = SSHSettings(key=Path(key).expanduser() if key else None,
                           known_hosts=Path(known).expanduser() if known else None)
    settings.check()
    return settings


def _docker_image(config: pytest.Config) -> str:
    from pytest_agentbench.benches.opencomputer.container import DEFAULT_IMAGE

    return str(_opt(config, "opencomputer_image") or DEFAULT_IMAGE)


def check_docker_hosts(urls: list[str], ssh: SSHSettings, image: str) -> list[str]:
    """Each host's daemon answers and holds ``image`` (checked in parallel): the problems, one line each."""
    from concurrent.futures import ThreadPoolExecutor

    from pytest_agentbench.benches.opencomputer.container import ContainerError, check_docker
    from pytest_agentbench.infra.docker_hosts import DockerHost, DockerHostError

    def check(url: str) -> str | None:
        try:
            host = DockerHost(url, ssh)
        except DockerHostError as exc:
            return str(exc)
        try:
            check_docker(image, host.env())
        except ContainerError as exc:
            return str(exc)
        finally:
            host.close()
        return None

    with ThreadPoolExecutor(max_workers=min(8, len(urls))) as pool:
        return [problem for problem in pool.map(check, urls) if problem]
