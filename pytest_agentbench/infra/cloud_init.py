"""Keys and cloud-init user data for the VMs a cloud pool creates.

Each run makes two fresh Ed25519 key pairs: a login key (its public half goes into the VM's
``authorized_keys``) and a host key, installed as the VM's SSH host key through cloud-init's
``ssh_keys``. Because the harness chose the host key, the tunnel pins it and never has to trust a
VM on first use. Keys are written with mode 0600 to the run's pool folder, so a pool kept with
``--pool-keep`` can still be reached with ``ssh -i``.

The user data is a ``#cloud-config`` document (cloud-init runs it on Ubuntu images on AWS and
Azure). It may add ``shutdown -h +MIN``: with AWS's terminate-on-shutdown behaviour, a VM the
harness lost (the harness was killed with SIGKILL) ends itself. It is written as JSON after the
``#cloud-config`` line (JSON is YAML, and cloud-init reads it as such): a serializer quotes every
value, so a user's key file cannot break the document or add keys to it, and no YAML library is
needed.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentbench.extras import install_hint
from pytest_agentbench.untrusted import InputTooBig, read_text

#: ``type base64 [comment]`` on one line: the shape of an OpenSSH public key.
_PUBLIC_KEY = re.compile(r"(ssh-[a-z0-9-]+|ecdsa-sha2-[a-z0-9-]+|sk-[a-z0-9@.-]+) "
                         r"([A-Za-z0-9+/]+={0,3})( [^\x00-\x1f\x7f]*)?")
#: A public key file is a few hundred bytes; a much bigger one is not a key.
MAX_PUBLIC_KEY = 16 * 1024


class KeySetupError(RuntimeError):
    """Keys could not be made or read; one line."""


@dataclass(frozen=True)
class KeyPair:
    private_openssh: str
    public_openssh: str  # "ssh-ed25519 AAAA... comment"


def new_ed25519(comment: str) -> KeyPair:
    """A fresh Ed25519 key pair in OpenSSH format (cryptography, which paramiko depends on)."""
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    except ImportError:
        raise KeySetupError(f"cloud pools need paramiko (and cryptography): {install_hint('ssh')}") from None
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption()).decode("ascii")
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH).decode("ascii")
    return KeyPair(private, f"{public} {comment}")


def write_private_key(path: Path, pair: KeyPair) -> Path:
    """Write ``pair`` as ``path`` (0600) and ``path.pub``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(pair.private_openssh)
    path.with_name(path.name + ".pub").write_text(pair.public_openssh + "\n")
    return path


def read_public_key(private_path: Path) -> str:
    """The public half of a user-given login key: ``KEY.pub`` next to it, or ``KEY.pub`` itself
    (then the private half stays in the user's SSH agent)."""
    pub = private_path if private_path.suffix == ".pub" else private_path.with_name(private_path.name + ".pub")
    try:
        text = read_text(pub, MAX_PUBLIC_KEY).strip()
    except InputTooBig:
        raise KeySetupError(f"--pool-ssh-key {private_path}: {pub} is too big to be an OpenSSH public key") from None
    except (OSError, UnicodeDecodeError):
        raise KeySetupError(f"--pool-ssh-key {private_path}: its public key {pub} cannot be read; "
                        f"create it with ssh-keygen -y -f {private_path} > {pub}") from None
    match = _PUBLIC_KEY.fullmatch(text)
    if match is None or not _is_base64(match.group(2)):
        raise KeySetupError(f"--pool-ssh-key {private_path}: {pub} is not one OpenSSH public key on one line "
                            "(type, base64 key, optional comment)")
    return text


def _is_base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


@dataclass(frozen=True)
class DockerSetup:
    """What a VM that serves as a Docker host (``--pool aws|azure --opencomputer-backend docker``)
    gets from cloud-init: Debian/Ubuntu's ``docker.io``, the login user in the ``docker`` group, and
    the desktop image, pulled from its registry (``source="pull"``) or loaded from a ``docker save``
    tarball at an http(s) URL; with no source, the VM's image must hold it already."""

    user: str
    image: str
    source: str | None = None

    def commands(self) -> list[list[str]]:
        commands = [["systemctl", "enable", "--now", "docker"], ["usermod", "-aG", "docker", self.user]]
        if self.source == "pull":
            commands.append(["docker", "pull", self.image])
        elif self.source:
            # argv, never a shell line: the URL reaches curl as one argument, whatever it holds
            commands.append(["sh", "-c", 'curl -fsSL --retry 5 "$1" | docker load', "sh", self.source])
        return commands


def user_data(*, login_public_key: str, host_key: KeyPair | None, shutdown_minutes: int | None,
              docker: DockerSetup | None = None) -> str:
    """The ``#cloud-config`` document for one VM, serialized as JSON (see the module docstring)."""
    config: dict[str, Any] = {"ssh_pwauth": False, "ssh_authorized_keys": [login_public_key]}
    if host_key is not None:
        config["ssh_deletekeys"] = True
        config["ssh_keys"] = {"ed25519_private": host_key.private_openssh,
                              "ed25519_public": " ".join(host_key.public_openssh.split()[:2])}
    runcmd: list[list[str]] = []
    if shutdown_minutes:
        runcmd.append(["shutdown", "-h", f"+{int(shutdown_minutes)}"])
    if docker is not None:
        config["packages"] = ["docker.io", "curl"]
        runcmd.extend(docker.commands())
    if runcmd:
        config["runcmd"] = runcmd
    return "#cloud-config\n" + json.dumps(config, indent=2) + "\n"
