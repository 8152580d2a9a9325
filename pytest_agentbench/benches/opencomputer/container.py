"""An item's desktop in a container of OpenComputer's image, made by OpenComputer's own Docker
backend from the user's checkout (``--opencomputer-backend docker``).

Why: OpenComputer runs every task in a fresh container of its desktop image; doing the same, with
its own ``setup_sandbox_session`` (``docker_worker.py``, a process per item), keeps the start state,
the app launch, the ready checks and the screenshots OpenComputer's. Grading runs its
``verify_task`` INSIDE the container (``harness_worker.py verify``, as for the bubblewrap sandbox):
the task's ``eval`` expressions never run in a process on the host.

Every container carries OpenComputer's labels plus ``gui-synth-env.meta.run_id=agentbench-<run
id>`` (:data:`RUN_LABEL`); the worker removes its container when asked, when its stdin closes
(pytest gone) and at its exit (OpenComputer's ``atexit``); :func:`reap` removes what a killed run
left, by that label.
"""

from __future__ import annotations

import base64
import io
import json
import os
import secrets
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentbench.infra.docker_hosts import DockerHost
from pytest_agentbench.text import shorten

WORKER = Path(__file__).with_name("docker_worker.py")
HARNESS_WORKER = Path(__file__).with_name("harness_worker.py")
#: OpenComputer's backend defaults (``computer_env/config.py``).
DEFAULT_IMAGE = "gui-synth-env-desktop:latest"
DEFAULT_SHM_SIZE = "2g"
DEFAULT_READY_TIMEOUT = 90
#: OpenComputer's label for ``setup_sandbox_session``'s ``run_id``; the value starts with RUN_PREFIX.
RUN_LABEL = "gui-synth-env.meta.run_id"
RUN_PREFIX = "agentbench-"
#: OpenComputer's label for the process that made a container (the item's worker here).
PID_LABEL = "gui-synth-env.meta.pid"
#: The label this project's test image lists its apps in (``desktop_image.py``).
APPS_LABEL = "org.agentbench.opencomputer-desktop.apps"
#: where the grading code is put in the container (root-owned)
INSIDE = "/opt/agentbench"
CREATE_TIMEOUT_FLOOR = 300.0
VERIFY_TIMEOUT_PER_CHECK = 35.0
MAX_ANSWER_BYTES = 96 << 20


class ContainerError(RuntimeError):
    """Docker, the image or the container failed; the message is one line."""


@dataclass(frozen=True)
class DockerOptions:
    """``--opencomputer-image`` and the resources OpenComputer's backend takes (its defaults)."""

    image: str = DEFAULT_IMAGE
    shm_size: str = DEFAULT_SHM_SIZE
    memory: str | None = None
    cpus: str | None = None
    ready_timeout: int = DEFAULT_READY_TIMEOUT

    def as_request(self) -> dict[str, Any]:
        return {"image": self.image, "shm_size": self.shm_size, "memory": self.memory, "cpus": self.cpus,
                "ready_timeout": self.ready_timeout}


def docker(*args: str, timeout: float = 30.0, input: bytes | None = None,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """``docker ARGS`` (in ``env``: a pool's host, see ``infra/docker_hosts.py``); ``ContainerError``
    when the CLI is missing or the call hangs."""
    try:
        return subprocess.run(["docker", *args], input=input, capture_output=True, timeout=timeout, check=False,
                              env=env)
    except FileNotFoundError:
        raise ContainerError("the docker command is not installed (Debian: apt-get install docker.io)") from None
    except subprocess.TimeoutExpired:
        raise ContainerError(f"docker {args[0]} did not answer within {timeout:g} s") from None


def _why(done: subprocess.CompletedProcess[bytes]) -> str:
    text = (done.stderr or done.stdout or b"").decode(errors="replace").strip()
    line = text.splitlines()[-1] if text else f"exit status {done.returncode}"
    # Over ssh:// the CLI wraps what ssh said ("... has exited with exit status 255, make sure the
    # URL is valid ...: stderr=ssh: connect to host h port 22: Connection refused"): keep ssh's words.
    _, ssh_said, said = line.partition("stderr=")
    return shorten(said.strip() if ssh_said and said.strip() else line, 300, "")


def check_docker(image: str, env: dict[str, str] | None = None) -> None:
    """The daemon (``env``'s ``DOCKER_HOST``, default this process's) answers and ``image`` is an
    OpenComputer desktop image; else ``ContainerError`` saying what to do (called at configure time)."""
    where = (env if env is not None else os.environ).get("DOCKER_HOST") or "the default socket"
    done = docker("version", "--format", "{{.Server.Version}}", timeout=45, env=env)
    if done.returncode != 0:
        fix = "check that it runs dockerd and that ssh reaches it" if where.startswith("ssh://") else \
            "start dockerd or set DOCKER_HOST"
        raise ContainerError(f"no Docker daemon answers at {where} ({_why(done)}): {fix}")
    done = docker("image", "inspect", "--format", "{{json .Config.Entrypoint}}", image, env=env)
    if done.returncode != 0:
        raise ContainerError(f"Docker image {image!r} is not there (at {where}): build OpenComputer's image, or this "
                             "project's test image: python -m pytest_agentbench.benches.opencomputer.desktop_image "
                             "CHECKOUT")
    entrypoint = json.loads(done.stdout or b"null") or []
    if not any("gui-synth-entrypoint" in str(part) for part in entrypoint):
        raise ContainerError(f"Docker image {image!r} is not an OpenComputer desktop image (its entrypoint is "
                             f"{entrypoint!r}, not gui-synth-entrypoint.sh)")


#: The run's id on its containers' labels: ``AGENTBENCH_RUN_ID`` when set, else the xdist run's id
#: (``PYTEST_XDIST_TESTRUNUID``, the same in every worker of a run), else made once per process.
_RUN_ID: list[str] = []


def run_id() -> str:
    if not _RUN_ID:
        _RUN_ID.append(os.environ.get("AGENTBENCH_RUN_ID") or os.environ.get("PYTEST_XDIST_TESTRUNUID", "")[:16] or
                       time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + f"-{os.getpid()}-{secrets.token_hex(3)}")
    return _RUN_ID[0]


def image_apps(image: str, env: dict[str, str] | None = None) -> frozenset[str]:
    """The apps this project's test image says it holds (its label); empty for any other image."""
    done = docker("image", "inspect", "--format", "{{json .Config.Labels}}", image, env=env)
    if done.returncode != 0:
        return frozenset()
    labels = json.loads(done.stdout or b"null") or {}
    listed = labels.get(APPS_LABEL, "") if isinstance(labels, dict) else ""
    return frozenset(app for app in str(listed).split(",") if app)


def reap(run_id: str | None = None, env: dict[str, str] | None = None) -> tuple[list[str], list[str]]:
    """Remove the containers that runs of this plugin left (only ``run_id``'s when given) on the
    daemon of ``env`` (default: this process's); the removed names and the failures, one line each."""
    label = f"{RUN_LABEL}={RUN_PREFIX}{run_id}" if run_id else RUN_LABEL
    done = docker("ps", "-a", "--filter", f"label={label}", "--format", "{{.ID}} {{.Names}} {{.Label \"" + RUN_LABEL
                  + "\"}}", env=env)
    if done.returncode != 0:
        raise ContainerError(f"docker ps failed: {_why(done)}")
    removed: list[str] = []
    failures: list[str] = []
    for line in done.stdout.decode().splitlines():
        parts = line.split()
        if len(parts) != 3 or not parts[2].startswith(RUN_PREFIX):
            continue
        gone = docker("rm", "-f", parts[0], timeout=60, env=env)
        (removed if gone.returncode == 0 else failures).append(
            f"{parts[1]} ({parts[2]})" if gone.returncode == 0 else f"{parts[1]}: {_why(gone)}")
    return removed, failures


def _owned(uid: int, name: str, keep: Callable[[tarfile.TarInfo], bool],
           ) -> Callable[[tarfile.TarInfo], tarfile.TarInfo | None]:
    """A tar filter: the members ``keep`` accepts, owned by ``uid``/``name`` in the archive."""
    def owned(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if not keep(info):
            return None
        info.uid = info.gid = uid
        info.uname = info.gname = name
        return info

    return owned


def _grading_tar(checkout: Path, verifiers: Path, task_dir: Path, app: str) -> bytes:
    """The harness worker, the checkout's ``evaluation`` and ``computer_env``, the app's verifier
    folder and this task's folder, laid out as ``harness.py`` binds them into a sandbox."""
    buffer = io.BytesIO()

    skip = _owned(0, "root", lambda info: "__pycache__" not in info.name.split("/") and not info.issym()
                  and not info.islnk())

    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(HARNESS_WORKER, "harness_worker.py", filter=skip)
        for part in ("evaluation", "computer_env"):
            tar.add(checkout / part, f"oc/{part}", filter=skip)
        if (verifiers / app).is_dir():
            tar.add(verifiers / app, f"oc/verifiers/{app}", filter=skip)
        tar.add(task_dir, f"oc/task_generator/tasks/{task_dir.name}", filter=skip)
    return buffer.getvalue()


class ContainerSession:
    """One item's container: OpenComputer's ``setup_sandbox_session`` in a worker process, then
    screenshots, pyautogui code and grading in the container, then removal."""

    def __init__(self, checkout: Path, tasks_dir: Path, options: DockerOptions, run_id: str,
                 host: DockerHost | None = None) -> None:
        self.checkout = checkout
        #: the Docker host a pool leased this process (None: this process's DOCKER_HOST)
        self.host = host
        #: the environment of every docker call
        self.env = host.env() if host is not None else None
        self.tasks_dir = tasks_dir
        self.options = options
        self.run_id = run_id
        self.container_id: str | None = None
        self.create_seconds: float | None = None
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None

    def _request(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise ContainerError("the container's worker is not running")
        with self._lock:
            try:
                proc.stdin.write(json.dumps(request) + "\n")
                proc.stdin.flush()
            except (BrokenPipeError, OSError):
                raise ContainerError(f"the container's worker exited ({self._stderr_tail()})") from None
            line = _readline(proc, timeout)
        if line is None:
            self.close()
            raise ContainerError(f"OpenComputer's Docker backend did not answer {request['op']} within "
                                 f"{timeout:g} s; the container was removed")
        if not line:
            raise ContainerError(f"the container's worker exited during {request['op']} ({self._stderr_tail()})")
        answer = json.loads(line)
        if not isinstance(answer, dict):
            raise ContainerError(f"the container's worker answered {request['op']} with a non-object")
        if answer.get("error"):
            raise ContainerError(f"OpenComputer's Docker backend ({request['op']}): {answer['error']}")
        return answer

    def _stderr_tail(self) -> str:
        proc = self._proc
        if proc is None or proc.stderr is None:
            return "no output"
        try:
            proc.wait(timeout=5)
            text = proc.stderr.read()
        except (subprocess.TimeoutExpired, OSError, ValueError):
            return "still running"
        lines = [line for line in text.strip().splitlines() if line.strip()]
        return shorten(lines[-1], 300, "") if lines else f"exit status {proc.returncode}"

    def create(self, task: dict[str, Any]) -> None:
        """The task's start state with its app open, as ``setup_sandbox_session`` makes it."""
        argv = [sys.executable, "-I", str(WORKER), "--checkout", str(self.checkout), "--tasks", str(self.tasks_dir)]
        if self.host is not None and self.host.is_ssh:
            argv += ["--forward-via", json.dumps(self.host.forward_via())]
        self._proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
            start_new_session=True, env=self.env)  # a Ctrl-C reaches pytest, which closes the session in order
        timeout = max(CREATE_TIMEOUT_FLOOR, 4.0 * self.options.ready_timeout)
        answer = self._request({"op": "create", "task": task, "options": self.options.as_request(),
                                "run_id": f"{RUN_PREFIX}{self.run_id}"}, timeout)
        self.container_id = str(answer["container_id"])
        self.create_seconds = float(answer.get("seconds", 0.0))

    def screenshot(self) -> bytes:
        answer = self._request({"op": "screenshot"}, 90.0)
        return base64.b64decode(answer["png_b64"])

    def run(self, command: str, timeout: float = 60.0) -> tuple[int, str, str]:
        """``bash -lc command`` as the image's user, through the backend: (exit code, stdout, stderr)."""
        answer = self._request({"op": "run", "command": command, "timeout": int(timeout)}, timeout + 30.0)
        return int(answer["exit_code"]), str(answer["stdout"]), str(answer["stderr"])

    def verify(self, verifiers: Path, task_dir: Path, task: dict[str, Any], *, save: bool = True) -> dict[str, Any]:
        """OpenComputer's ``auto_save_app`` (when the app has a save shortcut) and ``verify_task``,
        run in the container; the worker's answer (``details``...)."""
        if self.container_id is None:
            raise ContainerError("no container to grade (create failed or was not called)")
        payload = _grading_tar(self.checkout, verifiers, task_dir, task["app"])
        done = docker("exec", "-i", "--user", "root", self.container_id, "sh", "-c",
                      f"rm -rf {INSIDE} && mkdir -p {INSIDE} && tar -x -C {INSIDE} && chmod -R a+rX,go-w {INSIDE}",
                      input=payload, timeout=120, env=self.env)
        if done.returncode != 0:
            raise ContainerError(f"the grading code could not be put in the container: {_why(done)}")
        request = json.dumps({"task": task, "sleep": True, "save": save}).encode()
        timeout = 90.0 + VERIFY_TIMEOUT_PER_CHECK * len(task["verification"])
        done = docker("exec", "-i", self.container_id, "python3", "-I", f"{INSIDE}/harness_worker.py",
                      "--checkout", f"{INSIDE}/oc", "verify", input=request, timeout=timeout, env=self.env)
        if len(done.stdout) > MAX_ANSWER_BYTES:
            raise ContainerError(f"the grading in the container answered more than {MAX_ANSWER_BYTES} bytes")
        try:
            answer = json.loads(done.stdout) if done.returncode == 0 else None
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise ContainerError(f"OpenComputer's verify_task in the container failed: {_why(done)}")
        return answer

    def empty_home(self) -> None:
        """Remove everything in the container's ``/home/user`` (before a whole-home snapshot)."""
        if self.container_id is None:
            raise ContainerError("no container to lay the end state in")
        done = docker("exec", "--user", "root", self.container_id, "find", "/home/user", "-mindepth", "1",
                      "-maxdepth", "1", "-exec", "rm", "-rf", "--", "{}", "+", timeout=120, env=self.env)
        if done.returncode != 0:
            raise ContainerError(f"the container's /home/user could not be emptied: {_why(done)}")

    def lay_overlay(self, folder: Path, removals: list[str]) -> list[str]:
        """Lay an end-state folder over the container's ``/home/user`` (as its user; symlinks are
        copied as symlinks, never read here), then remove ``removals`` (paths relative to the home);
        the ones that were there."""
        if self.container_id is None:
            raise ContainerError("no container to lay the end state in")
        buffer = io.BytesIO()

        own = _owned(1000, "user", lambda info: info.name not in ("./.deleted", "./.snapshot")
                     and (info.isfile() or info.isdir() or info.issym()))

        with tarfile.open(fileobj=buffer, mode="w") as tar:
            tar.add(folder, ".", filter=own)
        done = docker("exec", "-i", "--user", "user", self.container_id, "tar", "-x", "--no-same-owner", "-C",
                      "/home/user", input=buffer.getvalue(), timeout=300, env=self.env)
        if done.returncode != 0:
            raise ContainerError(f"the end state {folder} could not be laid in the container: {_why(done)}")
        removed = []
        for rel in removals:
            path = f"/home/user/{rel}"
            done = docker("exec", "--user", "user", self.container_id, "sh", "-c",
                          'if [ -e "$1" ] || [ -L "$1" ]; then rm -rf -- "$1" && echo removed; fi', "sh", path,
                          env=self.env)
            if done.returncode != 0:
                raise ContainerError(f"{rel} could not be removed in the container: {_why(done)}")
            if done.stdout.strip() == b"removed":
                removed.append(rel)
        return removed

    def close(self) -> None:
        """Remove the container (through the backend, then by id should the worker be gone)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                if proc.poll() is None and proc.stdin is not None:
                    proc.stdin.write(json.dumps({"op": "close"}) + "\n")
                    proc.stdin.close()
                proc.wait(timeout=60)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        left: list[str] = []
        if proc is not None:  # the worker's container (its labels), should the worker not have removed it
            done = docker("ps", "-aq", "--filter", f"label={RUN_LABEL}={RUN_PREFIX}{self.run_id}", "--filter",
                          f"label={PID_LABEL}={proc.pid}", timeout=30, env=self.env)
            left = done.stdout.decode().split() if done.returncode == 0 else [self.container_id or ""]
        elif self.container_id is not None:
            left = [self.container_id]
        for cid in filter(None, left):
            docker("rm", "-f", cid, timeout=60, env=self.env)
        self.container_id = None


def _readline(proc: subprocess.Popen[str], timeout: float) -> str | None:
    """One line of the worker's stdout; None when none came within ``timeout`` (the worker is killed)."""
    result: list[str] = []
    reader = threading.Thread(target=lambda: result.append(proc.stdout.readline() if proc.stdout else ""),
                              daemon=True)
    reader.start()
    reader.join(timeout)
    if reader.is_alive():
        proc.kill()
        return None
    return result[0] if result else ""
