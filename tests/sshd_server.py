"""A real OpenSSH server for tests: Debian's ``/usr/sbin/sshd`` (installed by ``.ci/run``) as the
current user on a free 127.0.0.1 port, with temporary host and user keys; nothing of the machine's
SSH setup (host keys, ~/.ssh) is read or written."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path
from typing import BinaryIO

import pytest

SSHD = "/usr/sbin/sshd"


def missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (required under CI; .ci/run installs it)", pytrace=False)
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sshd_config(root: Path, port: int, listen: str = "127.0.0.1") -> Path:
    config = root / "sshd_config"
    config.write_text(
        "\n".join([
            f"Port {port}",
            f"ListenAddress {listen}",
            f"HostKey {root / 'host_ed25519'}",
            f"AuthorizedKeysFile {root / 'authorized_keys'}",
            f"PidFile {root / 'sshd.pid'}",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PermitRootLogin prohibit-password",
            "AllowTcpForwarding yes",
            "StrictModes no",
            "UsePAM no",
            "UseDNS no",
            "X11Forwarding no",
            "PermitTTY no",
            "LogLevel ERROR",
        ]) + "\n"
    )
    return config


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def start_sshd(root: Path, attempts: int = 5, *, listen: str = "127.0.0.1",
               prefix: tuple[str, ...] = ()) -> tuple[subprocess.Popen[bytes], int, BinaryIO]:
    """sshd on a free port of ``listen`` (run under ``prefix``, e.g. ``ip netns exec NS``), answering
    with its banner. sshd binds the port itself, so the port can be taken between choosing it and
    sshd binding it (another test's server, a client's ephemeral port): then sshd exits saying so,
    and another port is tried."""
    for _ in range(attempts):
        port = free_port()
        config = sshd_config(root, port, listen)
        log = (root / "sshd.log").open("wb")
        proc = subprocess.Popen([*prefix, SSHD, "-D", "-e", "-f", str(config)], stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while True:
            if proc.poll() is not None:
                log.close()
                text = (root / "sshd.log").read_text()
                if "Address already in use" in text:
                    break  # the port was taken: the next attempt chooses another
                pytest.fail(f"sshd exited with {proc.returncode}: {text}")
            try:
                with socket.create_connection((listen, port), timeout=1) as s:
                    if s.recv(4).startswith(b"SSH-"):
                        return proc, port, log
            except OSError:
                pass
            if time.monotonic() > deadline:
                stop(proc)
                log.close()
                pytest.fail(f"sshd did not accept connections on port {port}: {(root / 'sshd.log').read_text()}")
            time.sleep(0.05)
    pytest.fail(f"sshd found no free port in {attempts} attempts: {(root / 'sshd.log').read_text()}")


def keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", path.name, "-f", str(path)],
                   check=True, capture_output=True)
    return path.with_suffix(".pub").read_text().strip()
