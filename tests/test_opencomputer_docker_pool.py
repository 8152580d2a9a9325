"""``--pool docker``: each process leases a Docker host and OpenComputer's own backend makes its
containers there, through Docker's ssh:// transport.

The "remote" host is this machine reached through a real OpenSSH server on loopback
(``sshd_server.py``), whose ``docker system dial-stdio`` talks to the test daemon; the run's own
``DOCKER_HOST`` names a socket that does not exist, so every container the items use was made,
played, graded and removed over SSH. The configure-time checks (bad entries, a host that refuses
SSH, a pool without the docker backend) need no daemon.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sshd_server import SSHD, keygen, missing, start_sshd, stop
from test_opencomputer_docker import _ours, plugin_run, setup  # noqa: F401 - setup is a fixture

from pytest_agentbench.infra.docker_hosts import DockerHost, DockerHostError, SSHSettings, docker_host_url

CHECKOUT_VAR = "AGENTBENCH_OPENCOMPUTER_UPSTREAM"


class Host:
    """The test sshd as a Docker host: its URL and the key and known-hosts file to reach it."""

    def __init__(self, root: Path, port: int) -> None:
        self.root, self.port = root, port
        self.key = root / "user_ed25519"
        self.known_hosts = root / "known_hosts"
        self.address = "127.0.0.1"
        self.host_pub = ""

    def url(self, socket_path: str = "", name: str = "127.0.0.1") -> str:
        return f"ssh://{os.environ.get('USER') or 'root'}@{name}:{self.port}{socket_path}"

    def args(self) -> list[str]:
        return [f"--pool-ssh-key={self.key}", f"--pool-ssh-known-hosts={self.known_hosts}"]


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    if not os.access(SSHD, os.X_OK):
        missing(f"{SSHD} is not installed (Debian package openssh-server)")
    if shutil.which("ssh-keygen") is None or shutil.which("ssh") is None:
        missing("ssh and ssh-keygen are not installed (Debian package openssh-client)")
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    root = tmp_path_factory.mktemp("sshd")
    host_pub = keygen(root / "host_ed25519")
    (root / "authorized_keys").write_text(keygen(root / "user_ed25519") + "\n")
    proc, port, log = start_sshd(root)
    host = Host(root, port)
    host.known_hosts.write_text(f"[127.0.0.1]:{port} {host_pub}\n[localhost]:{port} {host_pub}\n")
    host.host_pub = host_pub
    try:
        yield host
    finally:
        stop(proc)
        log.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _checkout() -> str:
    checkout = os.environ.get(CHECKOUT_VAR, "")
    if not checkout:
        missing(f"{CHECKOUT_VAR} does not name an OpenComputer checkout")
    return checkout


def _configure(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "--bench=opencomputer",
                                         f"--opencomputer-tasks={_checkout()}", "--bench-task=gedit_reformat_json",
                                         *args)


# -- configure time: no daemon needed ----------------------------------------------------------------
@pytest.mark.parametrize(("entry", "says"), [
    ("http://10.0.0.5:5000", "must be a Docker host URL"),
    ("ssh://", "names no host"),
    ("ssh://-oProxyCommand=x", "names no host"),
    ("tcp://10.0.0.5", "needs a port"),
    ("ssh://u:secret@h", "may hold only [user@]host[:port][/socket]"),
    ("unix://relative", "must name a socket path"),
    ("ssh://h:99999", "is not a Docker host URL"),
])
def test_bad_pool_hosts_are_one_line_errors(entry: str, says: str) -> None:
    with pytest.raises(DockerHostError, match=r"--pool-hosts entry .*") as caught:
        docker_host_url(entry)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_a_bad_entry_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = _configure(pytester, "--opencomputer-backend=docker", "--pool=docker", "--pool-hosts=ftp://h")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --pool-hosts entry 'ftp://h' must be a Docker host URL*"])


def test_the_docker_pool_needs_the_docker_backend(pytester: pytest.Pytester) -> None:
    result = _configure(pytester, "--pool=docker", "--pool-hosts=ssh://root@127.0.0.1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([("ERROR: --pool docker leases Docker hosts to OpenComputer's docker backend: add "
                                 "--opencomputer-backend docker*")])


def test_fewer_hosts_than_workers_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = _configure(pytester, "--opencomputer-backend=docker", "--pool=docker", "-n", "2",
                        "--pool-hosts=ssh://root@127.0.0.1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --pool docker has 1 host(s) for 2 workers; give one host per worker (-n 1)"])


def test_a_host_that_refuses_ssh_is_a_usage_error(pytester: pytest.Pytester, sshd: Host) -> None:
    port = _closed_port()
    started = time.monotonic()
    result = _configure(pytester, "--opencomputer-backend=docker", "--pool=docker",
                        f"--pool-hosts=ssh://root@127.0.0.1:{port}", *sshd.args())
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([(f"ERROR: --pool docker: no Docker daemon answers at ssh://root@127.0.0.1:{port} "
                                 "(*Connection refused*): check that it runs dockerd and that ssh reaches it")])
    assert time.monotonic() - started < 60


def test_an_unknown_host_key_is_refused_not_asked(pytester: pytest.Pytester, sshd: Host) -> None:
    """BatchMode: an unknown host key is an error, never a prompt that hangs a worker."""
    empty = pytester.path / "known_hosts.empty"
    empty.write_text("")
    result = _configure(pytester, "--opencomputer-backend=docker", "--pool=docker", f"--pool-hosts={sshd.url()}",
                        f"--pool-ssh-key={sshd.key}", f"--pool-ssh-known-hosts={empty}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([("ERROR: --pool docker: no Docker daemon answers at ssh://*Host key verification "
                                 "failed*")])


def test_a_missing_key_file_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = _configure(pytester, "--opencomputer-backend=docker", "--pool=docker", "--pool-hosts=ssh://h",
                        "--pool-ssh-key=/nonexistent/key")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --pool-ssh-key /nonexistent/key is not a file"])


def test_the_ssh_wrapper_multiplexes_and_is_removed(sshd: Host) -> None:
    host = DockerHost(sshd.url(), SSHSettings(key=sshd.key, known_hosts=sshd.known_hosts))
    assert host.folder is not None
    folder = host.folder
    env = host.env({"PATH": "/usr/bin:/bin"})
    assert env["DOCKER_HOST"] == sshd.url() and env["PATH"].startswith(f"{folder}:")
    for _ in range(2):  # the first opens the shared connection, the second uses it
        done = subprocess.run(["ssh", "-p", str(sshd.port), "--", "127.0.0.1", "echo", "over-ssh"], env=env,
                              capture_output=True, text=True, timeout=30, check=False)
        assert done.returncode == 0 and done.stdout.strip() == "over-ssh", done.stderr
    assert (folder / "mux").is_socket()  # the master connection's socket
    host.close()
    assert not folder.exists()


def test_folders_of_killed_processes_are_swept_and_no_others(monkeypatch: pytest.MonkeyPatch) -> None:
    """A SIGKILLed run never closes its hosts: the next host folder made beside them removes the
    ones whose maker is gone, and leaves a live maker's, one still being made (no owner yet), one
    another user owns, a link (never followed) and other names."""
    import tempfile

    from pytest_agentbench.infra import docker_hosts

    tmp_path = Path(tempfile.mkdtemp(dir="/tmp", prefix="sweep-"))  # short: a socket path has 108 bytes
    dead = subprocess.Popen(["true"])
    dead.wait()
    victim = tmp_path / "outside"
    victim.mkdir()
    (victim / "keep").write_text("x")
    for name, owner in (("agentbench-ssh-dead", str(dead.pid)), ("agentbench-ssh-live", str(os.getpid())),
                        ("agentbench-ssh-new", None), ("agentbench-ssh-other", str(dead.pid)),
                        ("agentbench-ssh-junk", "not a pid"), ("unrelated", str(dead.pid))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "ssh").write_text("#!/bin/sh\n")
        if owner is not None:
            (tmp_path / name / "owner").write_text(owner + "\n")
    os.chown(tmp_path / "agentbench-ssh-other", 4242, 4242)
    (tmp_path / "agentbench-ssh-link").symlink_to(victim)
    (victim / "owner").write_text(f"{dead.pid}\n")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    try:
        host = DockerHost("ssh://user@example.invalid")
        assert host.folder is not None and host.folder.parent == tmp_path
        assert (host.folder / "owner").read_text() == f"{os.getpid()}\n"
        assert not (tmp_path / "agentbench-ssh-dead").exists()
        left = sorted(p.name for p in tmp_path.iterdir() if p != host.folder)
        assert left == ["agentbench-ssh-junk", "agentbench-ssh-link", "agentbench-ssh-live", "agentbench-ssh-new",
                        "agentbench-ssh-other", "outside", "unrelated"]
        assert (victim / "keep").exists()
        host.close()
        assert docker_hosts.sweep_stale_folders(tmp_path) == []  # the live one stays
    finally:
        shutil.rmtree(tmp_path)


def test_a_pinned_host_key_is_trusted_and_no_other(sshd: Host, tmp_path: Path) -> None:
    """A cloud VM's host key is the run's own (cloud-init installs it): pinned, never learned."""
    url = sshd.url()
    for pinned, works in ((sshd.host_pub, True), (keygen(tmp_path / "other"), False)):
        host = DockerHost(url, SSHSettings(key=sshd.key), host_key=" ".join(pinned.split()[:2]))
        try:
            done = subprocess.run(["ssh", "-p", str(sshd.port), "--", "127.0.0.1", "true"], env=host.env(),
                                  capture_output=True, text=True, timeout=30, check=False)
        finally:
            host.close()
        assert (done.returncode == 0) is works, done.stderr
        if not works:
            assert "Host key verification failed" in done.stderr


def test_cloud_init_sets_up_a_docker_host() -> None:
    from pytest_agentbench.infra.cloud_init import DockerSetup, user_data

    hostile = "https://example.org/img.tar; rm -rf / #$(reboot)"
    text = user_data(login_public_key="ssh-ed25519 AAAA", host_key=None, shutdown_minutes=60,
                     docker=DockerSetup(user="ubuntu", image="gui-synth-env-desktop:latest", source=hostile))
    assert text.startswith("#cloud-config\n")
    config = json.loads(text.split("\n", 1)[1])
    assert config["packages"] == ["docker.io", "curl"]
    assert config["runcmd"] == [
        ["shutdown", "-h", "+60"], ["systemctl", "enable", "--now", "docker"], ["usermod", "-aG", "docker", "ubuntu"],
        ["sh", "-c", 'curl -fsSL --retry 5 "$1" | docker load', "sh", hostile]]  # the URL is one argument
    pulled = json.loads(user_data(login_public_key="k", host_key=None, shutdown_minutes=None,
                                  docker=DockerSetup(user="azureuser", image="img:1", source="pull")).split("\n", 1)[1])
    assert pulled["runcmd"][-1] == ["docker", "pull", "img:1"]


# -- the container tier over ssh ---------------------------------------------------------------------
def _socket_path() -> str:
    """The test daemon's socket as the host's own path in an ssh:// URL (``ssh://h/run/x.sock``)."""
    local = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    return local[len("unix://"):] if local.startswith("unix://") else ""


def test_items_run_on_the_leased_hosts_over_ssh(setup: tuple[Path, str], sshd: Host,  # noqa: F811
                                                tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two workers, two hosts (the same sshd under two names): each worker's containers are made,
    played, graded and removed over its own host's ssh transport."""
    checkout, image = setup
    tasks = ["gedit_reformat_json", "pcmanfm_permission_lockdown", "gedit_log_filter_errors"]
    uid = f"pool{os.getpid()}{tmp_path.name}".replace("_", "")[:16]
    urls = [sshd.url(_socket_path()), sshd.url(_socket_path(), name="localhost")]
    seen: list[list[str]] = []
    stop_watch = threading.Event()
    real = dict(os.environ)  # the watcher asks the daemon directly, the run only through ssh

    def watch() -> None:
        while not stop_watch.is_set():
            done = subprocess.run(["docker", "ps", "-q", "--filter",
                                   f"label=gui-synth-env.meta.run_id=agentbench-{uid}"],
                                  capture_output=True, text=True, timeout=60, check=False, env=real)
            seen.append(done.stdout.split())
            time.sleep(0.5)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")  # only the pool reaches a daemon
    try:
        records = plugin_run(checkout, image, tmp_path, tasks, "-n", "2", f"--testrunuid={uid}", "--pool=docker",
                             f"--pool-hosts={','.join(urls)}", *sshd.args())
    finally:
        stop_watch.set()
        watcher.join()
        monkeypatch.undo()
    for task_id in tasks:
        record = records[task_id]
        assert record["error"] is None, (task_id, record["error"], record.get("reason"))
        assert record["criteria"], record  # graded by verify_task in the container
    assert {record["worker"] for record in records.values()} == {"gw0", "gw1"}
    assert 1 <= max(len(ids) for ids in seen) <= 2, seen  # one container per worker at a time
    assert not _ours(uid), _ours(uid)
    assert not list((tmp_path / "tmp").glob("agentbench-*")), list((tmp_path / "tmp").iterdir())


def test_the_reaper_cleans_each_pool_host(setup: tuple[Path, str], sshd: Host, tmp_path: Path) -> None:  # noqa: F811
    _, image = setup
    run = f"reap-{os.getpid()}-{tmp_path.name}"[:60]
    started = subprocess.run(["docker", "run", "-d", "--rm", "--entrypoint", "sleep", "--label",
                              f"gui-synth-env.meta.run_id=agentbench-{run}", image, "300"],
                             capture_output=True, text=True, timeout=60, check=False)
    assert started.returncode == 0, started.stderr
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--agentbench-reap",
                           "--pool=docker", f"--pool-hosts={sshd.url(_socket_path())}", *sshd.args(),
                           f"--agentbench-reap-run={run}"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"removed 1 container(s) of run {run} on ssh://" in done.stdout, done.stdout
    assert not _ours(run)


# -- the noVNC port of a container on a remote host ----------------------------------------------------
def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20, check=False)
    assert done.returncode == 0, f"ip {' '.join(args)}: {done.stderr}"


@pytest.fixture
def remote_host(tmp_path: Path) -> Iterator[tuple[str, Host]]:
    """A host of its own: a network namespace (its own loopback) joined to this one by a veth pair,
    with sshd listening on its address. Yields (the namespace, the sshd)."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        missing("the remote-host test needs root and iproute2 (ip netns) for a network namespace")
    if not os.access(SSHD, os.X_OK):
        missing(f"{SSHD} is not installed (Debian package openssh-server)")
    tag = f"{os.getpid() % 100000}{tmp_path.name[-2:]}".replace("_", "")[-7:]
    ns, here, there = f"abns{tag}", f"abh{tag}", f"abr{tag}"
    net = f"10.{200 + os.getpid() % 50}.{os.getpid() % 250}"
    _ip("netns", "add", ns)
    proc = log = None
    try:
        _ip("link", "add", here, "type", "veth", "peer", "name", there)
        _ip("link", "set", there, "netns", ns)
        _ip("addr", "add", f"{net}.1/30", "dev", here)
        _ip("link", "set", here, "up")
        _ip("-n", ns, "addr", "add", f"{net}.2/30", "dev", there)
        _ip("-n", ns, "link", "set", there, "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        host_pub = keygen(tmp_path / "host_ed25519")
        (tmp_path / "authorized_keys").write_text(keygen(tmp_path / "user_ed25519") + "\n")
        proc, port, log = start_sshd(tmp_path, listen=f"{net}.2", prefix=("ip", "netns", "exec", ns))
        host = Host(tmp_path, port)
        host.known_hosts.write_text(f"[{net}.2]:{port} {host_pub}\n")
        host.address = f"{net}.2"
        yield ns, host
    finally:
        if proc is not None:
            stop(proc)
        if log is not None:
            log.close()
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20, check=False)
        subprocess.run(["ip", "link", "del", here], capture_output=True, timeout=20, check=False)


def _load_docker_worker() -> Any:
    import importlib.util

    from pytest_agentbench.benches.opencomputer.container import WORKER

    spec = importlib.util.spec_from_file_location("agentbench_docker_worker_under_test", WORKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read_from(port: int, timeout: float) -> bytes:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as conn:
                data = conn.recv(64)
                if data:
                    return data
        except OSError:
            pass
        if time.monotonic() > deadline:
            return b""
        time.sleep(0.2)


def test_a_remote_hosts_published_port_is_forwarded_here(remote_host: tuple[str, Host]) -> None:
    """A remote daemon publishes the container's noVNC port on the REMOTE's 127.0.0.1; the docker
    worker forwards it to the same port here, where OpenComputer's ready check connects."""
    ns, host = remote_host
    port = _closed_port()
    serve = ("import socket\ns = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
             f"s.bind(('127.0.0.1', {port})); s.listen()\n"
             "while True:\n    c, _ = s.accept(); c.sendall(b'on-the-remote'); c.close()\n")
    server = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", serve])
    url = f"ssh://{os.environ.get('USER') or 'root'}@{host.address}:{host.port}"
    docker_host = DockerHost(url, SSHSettings(key=host.key, known_hosts=host.known_hosts))
    worker = _load_docker_worker()
    try:
        assert _read_from(port, 0.5) == b""  # the port is served there, not here
        forward = worker.PortForward(docker_host.forward_via(), lambda: port)
        try:
            assert _read_from(port, 20) == b"on-the-remote"
            assert forward.port == port and forward.proc is not None
        finally:
            forward.stop()
        assert forward.proc is None and _read_from(port, 0.5) == b""  # stopped with the item
        with socket.socket() as taken:  # a port served here already (the host is this machine): no forward
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            busy = int(taken.getsockname()[1])
            forward = worker.PortForward(docker_host.forward_via(), lambda: busy)
            deadline = time.monotonic() + 10
            while forward.port is None and time.monotonic() < deadline:
                time.sleep(0.1)
            assert forward.port == busy and forward.proc is None
            forward.stop()
    finally:
        docker_host.close()
        server.kill()
        server.wait()


CLOUD_CONFTEST = '''
import os

def pytest_agentbench_vm_endpoints(vm, config):
    # moto's VMs have no network: the VM's Docker host is this machine's, over the test sshd
    return {"docker_host": os.environ["POOL_TEST_DOCKER_HOST"]}
'''


def test_a_cloud_pools_vms_serve_as_docker_hosts(setup: tuple[Path, str], sshd: Host,  # noqa: F811
                                                 pytester: pytest.Pytester, aws_env: str, moto_ami: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """``--pool aws --opencomputer-backend docker``: one VM per process, its cloud-init installs Docker
    and pulls the image, the items' containers run on it (here: through the endpoints hook, as moto's
    VMs have no network), and the VM is deleted at the end."""
    import base64

    import boto3

    checkout, image = setup
    run = f"cloud-{os.getpid()}-{pytester.path.name}"[:60]
    pytester.makeconftest(CLOUD_CONFTEST)
    monkeypatch.setenv("POOL_TEST_DOCKER_HOST", sshd.url(_socket_path()))
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    monkeypatch.setenv("AGENTBENCH_RUN_ID", run)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--bench=opencomputer", f"--opencomputer-tasks={checkout}",
        "--opencomputer-backend=docker", f"--opencomputer-image={image}", "--bench-task=gedit_reformat_json",
        "--bench-agent=noop", "--pool=aws", f"--pool-image={moto_ami}", "--pool-poll-interval=0",
        "--pool-ready-timeout=60", "--pool-ssh-cidr=203.0.113.7/32", "--pool-docker-image-from=pull", *sshd.args(),
        timeout=600)
    records = [json.loads(line) for path in pytester.path.glob("**/results.jsonl")
               for line in path.read_text().splitlines()]
    assert [r["task_id"] for r in records] == ["gedit_reformat_json"], result.stdout.str()[-3000:]
    assert records[0]["error"] is None and records[0]["criteria"], records[0]
    result.stdout.fnmatch_lines(["agentbench pool: creating 1 VM(s)*", "*VM cost: 1 aws * (deleted)*"])
    ec2 = boto3.client("ec2", region_name="us-east-1")
    instances = [i for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]]
    assert len(instances) == 1 and instances[0]["State"]["Name"] in ("shutting-down", "terminated")
    data = ec2.describe_instance_attribute(InstanceId=instances[0]["InstanceId"], Attribute="userData")
    config = json.loads(base64.b64decode(data["UserData"]["Value"]).decode().split("\n", 1)[1])
    assert "docker.io" in config["packages"] and ["docker", "pull", image] in config["runcmd"]
    assert not _ours(run)


def test_docker_image_source_needs_the_docker_backend(pytester: pytest.Pytester, aws_env: str,
                                                       moto_ami: str) -> None:
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--bench=mock", "--pool=aws", f"--pool-image={moto_ami}",
        "--pool-ssh-cidr=203.0.113.7/32", "--pool-docker-image-from=pull")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --pool-docker-image-from is for --opencomputer-backend docker*"])
