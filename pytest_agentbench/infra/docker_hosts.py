"""Docker hosts a pool leases (``--pool docker --pool-hosts ssh://user@host,...``), reached through
Docker's own remote transport.

Why Docker's transport and not a tunnel of ours: OpenComputer's backend drives the ``docker`` CLI,
and the CLI honours ``DOCKER_HOST`` (``ssh://`` runs ``ssh HOST docker system dial-stdio``), so the
same OpenComputer code makes, plays and removes containers on the remote host as it does here. What
this module adds around it, for ``ssh://`` hosts:

* an ``ssh`` on the ``PATH`` of the processes that call ``docker`` (:class:`DockerHost`), which
  runs the machine's OpenSSH client with ``BatchMode`` (a password prompt or an unknown host key is
  an error, never a hang), one multiplexed connection per host (``ControlMaster``: OpenComputer's
  backend calls ``docker`` several times a step, each call would otherwise be a new SSH handshake)
  and, when given, the pool's key (``--pool-ssh-key``) and known-hosts file
  (``--pool-ssh-known-hosts``); otherwise the user's own SSH setup applies, as for ``docker -H``;
* a sweep of the folders a killed process left (:func:`sweep_stale_folders`): each folder names
  the process that made it, and a folder whose process is gone is removed by the next one made;
* the ssh arguments that reach the host itself, for the noVNC port forward the docker worker opens
  (OpenComputer's ready check connects to the container's published port on 127.0.0.1 of the
  machine it runs on, while a remote daemon publishes it on the remote's 127.0.0.1).

The module never imports pytest; ``plugin/pools.py`` turns its errors into usage errors.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

#: Schemes ``DOCKER_HOST`` takes that a pool entry may use.
SCHEMES = ("ssh", "tcp", "unix")
#: The multiplexed connection's socket in a host's folder (one destination per folder).
CONTROL = "mux"
#: The longest temporary folder the folder is made in (else /tmp): a socket path has 108 bytes.
MAX_TMPDIR = 60
#: A host folder's name starts so; its ``owner`` file holds the pid of the process that made it.
PREFIX, OWNER = "agentbench-ssh-", "owner"


class DockerHostError(ValueError):
    """A pool entry or SSH setting is unusable; the message is one line naming it and the fix."""


def parse_docker_hosts(entries: list[str]) -> list[dict[str, Any]]:
    """``ssh://[user@]host[:port][/socket]``, ``tcp://host:port`` or ``unix:///path`` entries, comma-separated
    or repeated, into leases ``{"name", "kind": "docker", "docker_host"}``."""
    hosts: list[dict[str, Any]] = []
    for text in entries:
        for entry in str(text).split(","):
            entry = entry.strip()
            if not entry:
                continue
            hosts.append({"name": f"docker{len(hosts)}", "kind": "docker", "docker_host": docker_host_url(entry)})
    return hosts


def docker_host_url(entry: str) -> str:
    """``entry`` checked as a ``DOCKER_HOST`` value; DockerHostError naming it otherwise."""
    example = "such as ssh://user@10.0.0.5 or ssh://user@host:2222"
    if any(c.isspace() or ord(c) < 32 for c in entry):
        raise DockerHostError(f"--pool-hosts entry {entry!r} holds white space or control characters")
    try:
        parts = urlsplit(entry)
        port = parts.port
    except ValueError as exc:
        raise DockerHostError(f"--pool-hosts entry {entry!r} is not a Docker host URL ({exc}), {example}") from None
    if parts.scheme not in SCHEMES:
        raise DockerHostError(f"--pool-hosts entry {entry!r} must be a Docker host URL ({', '.join(SCHEMES)}), "
                              f"{example}")
    if parts.scheme == "unix":
        if not parts.path.startswith("/") or parts.netloc:
            raise DockerHostError(f"--pool-hosts entry {entry!r} must name a socket path: unix:///run/docker.sock")
        return entry
    if not parts.hostname or parts.hostname.startswith("-"):
        raise DockerHostError(f"--pool-hosts entry {entry!r} names no host, {example}")
    if parts.scheme == "tcp" and port is None:
        raise DockerHostError(f"--pool-hosts entry {entry!r} needs a port: tcp://host:2376")
    if parts.password is not None or parts.query or parts.fragment:
        raise DockerHostError(f"--pool-hosts entry {entry!r} may hold only [user@]host[:port][/socket] "
                              "(SSH keys come from your SSH setup or --pool-ssh-key)")
    if parts.username is not None and (not parts.username or parts.username.startswith("-")):
        raise DockerHostError(f"--pool-hosts entry {entry!r} has an empty or bad user name")
    return entry


def ssh_destination(docker_host: str) -> list[str]:
    """The ssh arguments that reach an ``ssh://`` Docker host: ``[-p PORT] [-l USER] -- HOST``."""
    parts = urlsplit(docker_host)
    args: list[str] = []
    if parts.port is not None:
        args += ["-p", str(parts.port)]
    if parts.username:
        args += ["-l", parts.username]
    return [*args, "--", str(parts.hostname)]


@dataclass(frozen=True)
class SSHSettings:
    """The pool's SSH key and known-hosts file (None: the user's own SSH setup decides)."""

    key: Path | None = None
    known_hosts: Path | None = None

    def check(self) -> None:
        for flag, path in (("--pool-ssh-key", self.key), ("--pool-ssh-known-hosts", self.known_hosts)):
            if path is not None and not path.is_file():
                raise DockerHostError(f"{flag} {path} is not a file")


def _owner_pid(folder_fd: int) -> int | None:
    """The pid in a folder's ``owner`` file (opened without following a link), or None."""
    try:
        fd = os.open(OWNER, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=folder_fd)
    except OSError:
        return None
    try:
        text = os.read(fd, 32)
    finally:
        os.close(fd)
    return int(text) if text.strip().isdigit() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process holds the pid now: not ours to judge
        return True
    return True


def sweep_stale_folders(parent: Path) -> list[Path]:
    """Remove the host folders in ``parent`` whose maker is gone (a SIGKILLed run never reaches
    :meth:`DockerHost.close`); returns them. Only real folders of this user with an ``owner`` file
    naming a pid that no longer runs are removed: a folder still being made has no owner yet, a
    link is never followed, and another user's folder is left alone. A stale folder's shared SSH
    connection ends by itself (``ControlPersist``) once nothing uses it."""
    from pytest_agentbench.infra.safefs import remove_tree

    removed: list[Path] = []
    try:
        names = [name for name in os.listdir(parent) if name.startswith(PREFIX)]
    except OSError:
        return removed
    for name in names:
        path = parent / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            mine = os.fstat(fd).st_uid == os.getuid()
            pid = _owner_pid(fd) if mine else None
        finally:
            os.close(fd)
        if pid is None or _alive(pid):
            continue
        try:
            remove_tree(path)
        except OSError:
            continue
        removed.append(path)
    return removed


class DockerHost:
    """One leased Docker host as the environment of the processes that call ``docker``.

    For ``ssh://`` hosts it owns a small folder holding the ``ssh`` wrapper and the multiplexed
    connection's socket; :meth:`close` ends that connection and removes the folder. Making one
    first sweeps the folders killed processes left beside it."""

    def __init__(self, docker_host: str, ssh: SSHSettings | None = None, *, host_key: str | None = None) -> None:
        self.docker_host = docker_host
        self.ssh = ssh or SSHSettings()
        self.folder: Path | None = None
        self.real_ssh = "ssh"
        if urlsplit(docker_host).scheme == "ssh":
            # The master connection's socket lies in the folder, and a socket's path is limited to
            # 108 bytes: a deep TMPDIR gives way to /tmp.
            parent = Path(tempfile.gettempdir()) if len(tempfile.gettempdir()) <= MAX_TMPDIR else Path("/tmp")
            sweep_stale_folders(parent)
            self.folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
            (self.folder / OWNER).write_text(f"{os.getpid()}\n")
            if host_key:  # a cloud VM's pinned host key ("ssh-ed25519 AAAA..."): trusted, never learned
                parts = urlsplit(docker_host)
                name = parts.hostname if parts.port in (None, 22) else f"[{parts.hostname}]:{parts.port}"
                known = self.folder / "known_hosts"
                known.write_text(f"{name} {host_key}\n")
                self.ssh = SSHSettings(key=self.ssh.key, known_hosts=known)
            self._write_wrapper()

    @property
    def is_ssh(self) -> bool:
        return self.folder is not None

    def ssh_options(self, *, shared: bool = True) -> list[str]:
        """The options every ssh to this host takes: over the one shared connection (the wrapper's),
        or over a connection of its own (``shared=False``: the port forward, whose forward must end
        with its process, not linger in the shared connection)."""
        assert self.folder is not None
        control = ["ControlMaster=auto", f"ControlPath={self.folder}/{CONTROL}", "ControlPersist=60"] if shared \
            else ["ControlMaster=no", "ControlPath=none"]
        options = ["-o", "BatchMode=yes", "-o", "ConnectTimeout=20", "-o", "ServerAliveInterval=15"]
        for setting in control:
            options += ["-o", setting]
        if self.ssh.key is not None:
            options += ["-i", str(self.ssh.key), "-o", "IdentitiesOnly=yes"]
        if self.ssh.known_hosts is not None:
            options += ["-o", f"UserKnownHostsFile={self.ssh.known_hosts}", "-o", "StrictHostKeyChecking=yes"]
        return options

    def _write_wrapper(self) -> None:
        assert self.folder is not None
        real = shutil.which("ssh")
        if real is None:
            raise DockerHostError(f"{self.docker_host}: Docker's ssh:// transport needs an OpenSSH client, and no ssh "
                                  "is on PATH (Debian: apt-get install openssh-client)")
        self.real_ssh = real
        wrapper = self.folder / "ssh"
        wrapper.write_text("#!/bin/sh\nexec " + shlex.join([real, *self.ssh_options()]) + ' "$@"\n')
        wrapper.chmod(0o700)

    def forward_via(self) -> dict[str, list[str]]:
        """How the docker worker reaches the host for its port forward: ``{"ssh": [ssh, options...],
        "to": [destination...]}`` (the worker puts ``-N -L ...`` between them)."""
        return {"ssh": [self.real_ssh, *self.ssh_options(shared=False)], "to": ssh_destination(self.docker_host)}

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) pointed at this host."""
        env = dict(os.environ if base is None else base)
        env["DOCKER_HOST"] = self.docker_host
        if self.folder is not None:
            env["PATH"] = f"{self.folder}{os.pathsep}{env.get('PATH', os.defpath)}"
        return env

    def close(self) -> None:
        """End the multiplexed SSH connection and remove the folder (idempotent)."""
        folder, self.folder = self.folder, None
        if folder is None:
            return
        if (folder / CONTROL).exists():
            try:
                subprocess.run([str(folder / "ssh"), "-O", "exit", *ssh_destination(self.docker_host)],
                               capture_output=True, timeout=10, check=False)
            except (OSError, subprocess.TimeoutExpired):
                pass
        shutil.rmtree(folder, ignore_errors=True)
