"""Fresh, isolated folders in which an environment is set up and commands run.

Why: a benchmark's setup scripts and checkers are code from task files, and its end state is
written by an agent. Running them in the pytest process's own file system and network would let
one task read another's files, write outside its folder or call the network. A :class:`Sandbox`
is one fresh folder per item; with bubblewrap (``bwrap``, Debian package ``bubblewrap``) every
command it runs sees:

* ``/home/user`` (the sandbox's ``home/`` folder) and ``/tmp`` (its ``tmp/`` folder), the only
  writable places; ``/tmp`` is the sandbox's own, so a file placed there by one command (as
  OpenComputer places ``/tmp/create_env.py``) is there for the next;
* ``/usr``, ``/etc`` and the ``/bin``, ``/sbin``, ``/lib*`` links or folders, read-only; nothing
  else of the host (no ``/root``, no other home folders, no pytest temporary folders);
* no network at all (``--unshare-net``: not even the host's loopback), no capabilities, its own
  process tree, killed with the whole tree when the command times out or pytest dies.

Where bubblewrap is missing or cannot run (containers without user namespaces), a trial run says
so once and the sandbox falls back to a plain temporary folder: commands run with the folder as
home and working directory and with ``/home/user`` and ``/tmp`` at the start of an argument
rewritten to the folder's ``home/`` and ``tmp/`` (and back in the output), but nothing stops them
from writing elsewhere or using the network. The caller warns about it once per session
(:func:`session_isolation`).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

import pytest

#: The home folder commands see inside the sandbox (OpenComputer's user).
HOME = "/home/user"
#: The temporary folder commands see inside the sandbox.
TMP = "/tmp"
#: PATH inside the sandbox: only what the read-only system folders hold.
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: System folders bound read-only (or recreated as the same symlink) when they exist on the host.
SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: ``/home/user`` as a path in a script's text (followed by a separator, a quote, space or the end)
_HOME_IN_TEXT = re.compile(re.escape(HOME) + r"""(?=[/'"\s]|$)""", re.MULTILINE)
#: Seconds to wait for a killed command's pipes to close before giving up on its output.
_DRAIN_SECONDS = 5.0

IsolationMode = Literal["auto", "bwrap", "none"]
MODES: tuple[str, ...] = ("auto", "bwrap", "none")


class SandboxError(RuntimeError):
    """The sandbox cannot be used as asked (bubblewrap required but unusable, a path outside it)."""


class SandboxWarning(pytest.PytestWarning):
    """Commands run without isolation because bubblewrap is missing or unusable."""


@dataclass(frozen=True)
class Isolation:
    """How a sandbox's commands are isolated: ``bwrap`` (with the executable's path) or ``none``.

    ``reason`` says why a requested isolation is not in place (empty when it is, or when ``none``
    was chosen on purpose)."""

    mode: Literal["bwrap", "none"]
    bwrap: str | None = None
    reason: str = ""

    @property
    def isolated(self) -> bool:
        return self.mode == "bwrap"

    def describe(self) -> str:
        if self.isolated:
            return f"bubblewrap ({self.bwrap})"
        return "none: " + (self.reason or "chosen with --sandbox-isolation none")


@dataclass(frozen=True)
class RunResult:
    """One finished command. ``returncode`` is None when it was killed at its timeout."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def summary(self) -> str:
        """One line for error messages: how it ended and the last line of stderr."""
        if self.timed_out:
            how = f"timed out after {self.seconds:.1f} s and was killed"
        else:
            how = f"exited {self.returncode}"
        tail = [line for line in self.stderr.strip().splitlines() if line.strip()]
        return how + (f": {tail[-1].strip()[:200]}" if tail else "")


def _system_binds() -> list[str]:
    """bwrap arguments for the read-only system folders (symlinks stay symlinks, as on merged-/usr
    systems where ``/bin`` is ``usr/bin``)."""
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def bwrap_argv(bwrap: str, home: str | Path, tmp: str | Path, *, env: Mapping[str, str],
               ro_binds: Sequence[tuple[str, str]] = (), cwd: str = HOME, uid: int | None = None) -> list[str]:
    """The bubblewrap command line that runs a command in the sandbox (the command follows it).

    ``uid``: the user (and group) id commands run as inside (OpenComputer's image runs its user as
    1000); None keeps the caller's."""
    args = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            *_system_binds(), "--proc", "/proc", "--dev", "/dev",
            "--bind", str(home), HOME, "--bind", str(tmp), TMP]
    for source, target in ro_binds:
        args += ["--ro-bind", source, target]
    if uid is not None:
        args += ["--uid", str(uid), "--gid", str(uid)]
    args += ["--chdir", cwd, "--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    return [*args, "--"]


@functools.lru_cache(maxsize=8)
def probe_bwrap(executable: str = "bwrap") -> tuple[str | None, str]:
    """``(path, "")`` when bubblewrap runs a trial command here, else ``(None, why not)``.

    A trial run, not only a look-up: bwrap may be installed where it cannot work (a container
    without user namespaces, a seccomp profile that refuses ``unshare``). Cached per process."""
    path = shutil.which(executable)
    if path is None:
        return None, f"bubblewrap ({executable}) is not installed (Debian: apt-get install bubblewrap)"
    with tempfile.TemporaryDirectory(prefix="agentbench-bwrap-probe-") as folder:
        home, tmp = Path(folder, "home"), Path(folder, "tmp")
        home.mkdir()
        tmp.mkdir()
        argv = [*bwrap_argv(path, home, tmp, env={"PATH": SANDBOX_PATH}), "sh", "-c", "echo ok > probe"]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"bubblewrap ({path}) cannot run here: {exc}"
        if done.returncode != 0 or not (home / "probe").is_file():
            detail = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
            return None, f"bubblewrap ({path}) cannot run here: {detail.strip()[:200]}"
    return path, ""


def choose_isolation(mode: str = "auto", executable: str = "bwrap") -> Isolation:
    """``auto``: bubblewrap when it works, else none (with the reason); ``bwrap``: bubblewrap or
    :class:`SandboxError`; ``none``: a plain folder on purpose."""
    if mode not in MODES:
        raise SandboxError(f"sandbox isolation must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "none":
        return Isolation("none")
    path, reason = probe_bwrap(executable)
    if path is not None:
        return Isolation("bwrap", path)
    if mode == "bwrap":
        raise SandboxError(f"--sandbox-isolation bwrap: {reason}")
    return Isolation("none", reason=reason)


class Sandbox:
    """One fresh folder, ``root``, holding the sandbox's ``home/`` (``/home/user`` inside) and
    ``tmp/`` (``/tmp`` inside). Create one per item; :meth:`close` deletes it."""

    def __init__(self, root: str | Path, isolation: Isolation, *, env: Mapping[str, str] | None = None,
                 ro_binds: Sequence[tuple[str, str]] = (), uid: int | None = None) -> None:
        self.root = Path(root)
        self.isolation = isolation
        self.home = self.root / "home"
        self.tmp = self.root / "tmp"
        self.home.mkdir(parents=True, exist_ok=True)
        self.tmp.mkdir(parents=True, exist_ok=True)
        #: extra environment for every command (DISPLAY for a desktop app, say)
        self.env = dict(env or {})
        #: extra read-only binds ``(host path, sandbox path)``, honoured with bubblewrap only
        self.ro_binds = list(ro_binds)
        #: the user id commands run as, with bubblewrap only (None: the caller's)
        self.uid = uid
        self._background: list[subprocess.Popen[bytes]] = []
        self.closed = False

    @classmethod
    def create(cls, isolation: Isolation, base: str | Path | None = None, **kwargs: object) -> Sandbox:
        """A new sandbox in a fresh folder under ``base`` (the system temporary folder by default)."""
        if base is not None:
            Path(base).mkdir(parents=True, exist_ok=True)
        root = tempfile.mkdtemp(prefix="agentbench-sandbox-", dir=base)
        return cls(root, isolation, **kwargs)  # type: ignore[arg-type]

    @property
    def isolated(self) -> bool:
        return self.isolation.isolated

    # -- paths ---------------------------------------------------------------------------------
    def path(self, sandbox_path: str) -> Path:
        """The host path of ``sandbox_path`` (``/home/user/...`` or ``/tmp/...``).

        ``ValueError`` for anything else, or for a path that climbs out with ``..``: only the
        sandbox's own folders can be written from outside it."""
        pure = PurePosixPath(sandbox_path)
        if not pure.is_absolute() or ".." in pure.parts:
            raise ValueError(f"sandbox path {sandbox_path!r} must be absolute, without '..'")
        for inside, host in ((PurePosixPath(HOME), self.home), (PurePosixPath(TMP), self.tmp)):
            if pure == inside or inside in pure.parents:
                return host.joinpath(*pure.relative_to(inside).parts)
        raise ValueError(f"sandbox path {sandbox_path!r} is outside the sandbox's {HOME} and {TMP}")

    def place(self, source: str | Path, sandbox_path: str) -> Path:
        """Copy the host file ``source`` to ``sandbox_path`` (parents made, mode kept)."""
        target = self.path(sandbox_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
        return target

    def localize(self, sandbox_path: str) -> None:
        """Make a script in the sandbox use the sandbox's home when it names ``/home/user``.

        With bubblewrap a no-op: ``/home/user`` is the sandbox's home. In the plain-folder fallback
        the file's ``/home/user`` paths are rewritten to the folder's ``home/``, so a setup script
        or verifier with literal paths works there and does not write to a real ``/home/user``.
        Files that are not UTF-8 text are left alone."""
        if self.isolated:
            return
        path = self.path(sandbox_path)
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            return
        home = str(self.home)
        changed = _HOME_IN_TEXT.sub(lambda _: home, text)
        if changed != text:
            path.write_text(changed, encoding="utf-8")

    def write(self, sandbox_path: str, data: str | bytes) -> Path:
        target = self.path(sandbox_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            target.write_text(data, encoding="utf-8")
        else:
            target.write_bytes(data)
        return target

    # -- commands ------------------------------------------------------------------------------
    def _inside_env(self) -> dict[str, str]:
        env = {"PATH": SANDBOX_PATH, "HOME": HOME, "TMPDIR": TMP, "USER": "user", "LANG": "C.UTF-8"}
        env.update(self.env)
        return env

    def _host_env(self) -> dict[str, str]:
        env = {"PATH": os.environ.get("PATH", SANDBOX_PATH), "HOME": str(self.home), "TMPDIR": str(self.tmp),
               "USER": "user", "LANG": "C.UTF-8"}
        for key in ("PYENV_ROOT", "PYENV_VERSION", "VIRTUAL_ENV"):  # so python3 finds itself
            if key in os.environ:
                env[key] = os.environ[key]
        env.update(self.env)
        return env

    def _to_host(self, arg: str) -> str:
        for inside, host in ((HOME, self.home), (TMP, self.tmp)):
            if arg == inside or arg.startswith(inside + "/"):
                return str(host) + arg[len(inside):]
        return arg

    def _from_host(self, text: str) -> str:
        return text.replace(str(self.home), HOME).replace(str(self.tmp), TMP)

    def command(self, argv: Sequence[str], *, cwd: str = HOME, ro_binds: Sequence[tuple[str, str]] = (),
                ) -> tuple[list[str], dict[str, str] | None, str | None]:
        """``(argv, env, cwd)`` for ``subprocess`` that run ``argv`` in this sandbox; ``ro_binds``
        are extra read-only binds for this command only (bubblewrap only)."""
        if self.isolated:
            assert self.isolation.bwrap is not None
            prefix = bwrap_argv(self.isolation.bwrap, self.home, self.tmp, env=self._inside_env(),
                                ro_binds=[*self.ro_binds, *ro_binds], cwd=cwd, uid=self.uid)
            return [*prefix, *argv], {}, None
        return [self._to_host(a) for a in argv], self._host_env(), self._to_host(cwd)

    def run(self, argv: Sequence[str], *, timeout: float, input: str | bytes | None = None,
            cwd: str = HOME, ro_binds: Sequence[tuple[str, str]] = ()) -> RunResult:
        """Run ``argv`` in the sandbox and wait at most ``timeout`` seconds.

        At the timeout the command's whole process tree is killed (its process group; with
        bubblewrap also its PID namespace) and the result says ``timed_out``. Never raises for
        what the command does; ``OSError`` when it cannot be started at all."""
        if self.closed:
            raise SandboxError(f"sandbox {self.root} is closed")
        full, env, workdir = self.command(argv, cwd=cwd, ro_binds=ro_binds)
        data = input.encode("utf-8") if isinstance(input, str) else input
        started = time.perf_counter()
        proc = subprocess.Popen(full, stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=workdir,
                                start_new_session=True)
        timed_out = False
        try:
            out, err = proc.communicate(data, timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_tree(proc)
            try:
                out, err = proc.communicate(timeout=_DRAIN_SECONDS)
            except subprocess.TimeoutExpired:  # a descendant escaped the group and holds the pipes
                out, err = b"", b""
                for pipe in (proc.stdout, proc.stderr):
                    if pipe is not None:
                        pipe.close()
                proc.wait()
        seconds = time.perf_counter() - started
        stdout = out.decode("utf-8", errors="replace")
        stderr = err.decode("utf-8", errors="replace")
        if not self.isolated:
            stdout, stderr = self._from_host(stdout), self._from_host(stderr)
        return RunResult(tuple(argv), None if timed_out else proc.returncode, stdout, stderr, timed_out, seconds)

    def spawn(self, argv: Sequence[str], *, cwd: str = HOME) -> subprocess.Popen[bytes]:
        """Start ``argv`` in the background (a desktop app); it is killed by :meth:`close`."""
        full, env, workdir = self.command(argv, cwd=cwd)
        proc = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=env, cwd=workdir, start_new_session=True)
        self._background.append(proc)
        return proc

    def close(self) -> None:
        """Kill background commands and delete the folder. Safe to call twice."""
        if self.closed:
            return
        self.closed = True
        for proc in self._background:
            if proc.poll() is None:
                _kill_tree(proc)
                proc.wait()
        self._background.clear()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Sandbox({str(self.root)!r}, {self.isolation.describe()})"


def _kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the command's process group (bwrap's PID namespace dies with it)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass


# -- per pytest session: the isolation chosen once, the warning given once ---------------------------
@dataclass
class _SessionIsolation:
    isolation: Isolation
    warned: bool = False


def isolation_mode(config: pytest.Config) -> str:
    """``--sandbox-isolation``, else the ini key ``agentbench_sandbox_isolation``, else ``auto``."""
    value = config.getoption("sandbox_isolation", None)
    if not value:
        try:
            value = str(config.getini("agentbench_sandbox_isolation")).strip()
        except ValueError:  # the ini key is not registered (options not added)
            value = ""
    return value or "auto"


def session_isolation(config: pytest.Config) -> Isolation:
    """The isolation of this pytest session's sandboxes, decided once (a trial run of bwrap).

    The first call that falls back to a plain folder warns (a :class:`SandboxWarning`, shown in
    pytest's warnings summary); later calls do not. ``--sandbox-isolation bwrap`` with an
    unusable bwrap is a usage error."""
    import warnings

    state = config.stash.get(_STATE_KEY, None)
    if state is None:
        mode = isolation_mode(config)
        try:
            state = _SessionIsolation(choose_isolation(mode))
        except SandboxError as exc:
            raise pytest.UsageError(str(exc)) from None
        config.stash[_STATE_KEY] = state
    if not state.isolation.isolated and state.isolation.reason and not state.warned:
        state.warned = True
        warnings.warn(SandboxWarning(
            f"sandboxes are plain temporary folders, not isolated: {state.isolation.reason}; commands "
            "can write outside them and use the network (install bubblewrap, or pass "
            "--sandbox-isolation none to accept this without a warning)"), stacklevel=2)
    return state.isolation


_STATE_KEY = pytest.StashKey[_SessionIsolation]()
