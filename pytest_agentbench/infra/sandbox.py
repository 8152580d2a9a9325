"""Fresh, isolated folders in which an environment is set up and commands run.

Why one module of over 500 lines: isolation modes, limits, the bwrap command line and the kill and
cleanup paths are one security boundary, reviewed as a whole.

Why: a benchmark's setup scripts and checkers are code from task files, and its end state is
written by an agent. Running them in the pytest process's own file system and network would let
one task read another's files, write outside its folder or call the network. A :class:`Sandbox`
is one fresh folder per item; with bubblewrap (``bwrap``, Debian package ``bubblewrap``) every
command it runs sees:

* ``/home/user`` (the sandbox's ``home/`` folder) and ``/tmp`` (its ``tmp/`` folder), the only
  writable places; ``/tmp`` is the sandbox's own, so a file placed there by one command (as
  OpenComputer places ``/tmp/create_env.py``) is there for the next;
* ``/usr`` and the ``/bin``, ``/sbin``, ``/lib*`` links or folders, read-only; a minimal ``/etc``
  (:data:`ETC_ENTRIES` of the host's, read-only, and its own ``passwd``/``group`` naming only
  ``root``, ``user`` (1000) and ``nobody``: no ``shadow``, no SSH host keys); nothing else of the
  host (no ``/root``, no other home folders, no pytest temporary folders);
* user id 1000 (:data:`SANDBOX_UID`), unprivileged on the host too: when pytest runs as root,
  bubblewrap runs without a user namespace and ``setpriv`` drops to host uid 1000 with no
  capabilities and ``no_new_privs`` before the command starts, so files only root may read stay
  unreadable and a setuid program gains nothing;
* :class:`Limits`: address space (``RLIMIT_AS``), processes of uid 1000 (``RLIMIT_NPROC``),
  bytes of output read back (the command is killed past it), the caller's wall time and, when
  pytest is root, disk: ``home/`` and ``tmp/`` lie on a tmpfs of the sandbox's own whose size is
  the cap (a write past it fails with ``ENOSPC`` inside the sandbox, the host's disk untouched);
* no network at all (``--unshare-net``: not even the host's loopback), no capabilities, its own
  process tree, killed with the whole tree when the command times out or pytest dies.

The pytest process writes into the sandbox's folders only through :mod:`.safefs`, which never
follows a symlink found there (code in the sandbox can plant one anywhere it can write).

Where bubblewrap is missing or cannot run (containers without user namespaces), a trial run says
so once and the sandbox falls back to a plain temporary folder: commands run with the folder as
home and working directory and with ``/home/user`` and ``/tmp`` at the start of an argument
rewritten to the folder's ``home/`` and ``tmp/`` (and back in the output), but nothing stops them
from writing elsewhere or using the network. The caller warns about it once per session
(``plugin/isolation.py``'s :func:`session_isolation`).
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from typing_extensions import Self

#: The home folder commands see inside the sandbox (OpenComputer's user).
HOME = "/home/user"
#: The temporary folder commands see inside the sandbox.
TMP = "/tmp"
#: PATH inside the sandbox: only what the read-only system folders hold.
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: System folders bound read-only (or recreated as the same symlink) when they exist on the host.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: The user (and group) id commands run as (OpenComputer's image's ``user``).
SANDBOX_UID = 1000
#: What of the host's ``/etc`` the sandbox sees (glob patterns, those that exist; read-only): the
#: dynamic linker's cache, ``alternatives`` links, certificates, fonts, time zone, name service
#: and shell start-up files, and the configuration of the apps and libraries verifiers use.
#: Not there: ``shadow``, ``gshadow``, ``ssh``, ``sudoers``, credentials of any service.
ETC_ENTRIES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "ssl", "ca-certificates",
               "ca-certificates.conf", "fonts", "localtime", "timezone", "nsswitch.conf", "host.conf", "hosts",
               "hostname", "mime.types", "mailcap", "magic", "magic.mime", "os-release", "debian_version",
               "profile", "profile.d", "bash.bashrc", "bash_completion.d", "environment", "inputrc", "shells",
               "locale.alias", "locale.conf", "default", "xdg", "X11", "gtk-2.0", "gtk-3.0", "dconf",
               "dbus-1", "machine-id", "python3", "python3.*", "java-*", "ImageMagick-*", "libreoffice",
               "chromium", "chromium.d", "thunderbird", "gimp", "vlc", "ghostscript", "papersize",
               "libpaper.d", "xml", "sgml", "glvnd", "pulse", "vulkan", "drirc", "gitconfig", "gai.conf",
               "mtab", "login.defs", "lsb-release", "perl", "emacs", "vim", "nanorc", "zsh", "gdb")
#: ``/home/user`` as a path in a script's text (followed by a separator, a quote, space or the end)
_HOME_IN_TEXT = re.compile(re.escape(HOME) + r"""(?=[/'"\s]|$)""", re.MULTILINE)

IsolationMode = Literal["auto", "bwrap", "none"]
MODES: tuple[str, ...] = ("auto", "bwrap", "none")


class SandboxError(RuntimeError):
    """The sandbox cannot be used as asked (bubblewrap required but unusable, a path outside it)."""


class SandboxWarning(UserWarning):
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
    """One finished command. ``returncode`` is None when the sandbox killed it (at its timeout, or
    past the output limit)."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    seconds: float = 0.0
    #: the output limit in MB when the command was killed for printing more (0: it was not)
    output_over: int = 0
    #: the process limit the command ran under (0: none), named when a fork failed against it
    max_procs: int = 0
    #: the disk cap in MB when the command left the sandbox's file system full or was told it was
    #: (``ENOSPC``); 0 otherwise
    disk_full: int = 0

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.output_over

    @property
    def killed_why(self) -> str | None:
        """Why the sandbox killed the command (a timeout, too much output), or None."""
        if self.timed_out:
            return f"timed out after {self.seconds:.1f} s and was killed"
        if self.output_over:
            return f"output over {self.output_over} MB: killed"
        return None

    def summary(self) -> str:
        """One line for error messages: how it ended and the last line of stderr."""
        if self.output_over:
            return f"printed output over {self.output_over} MB and was killed"
        how = f"timed out after {self.seconds:.1f} s and was killed" if self.timed_out else f"exited {self.returncode}"
        tail = [line for line in self.stderr.strip().splitlines() if line.strip()]
        said = how + (f": {tail[-1].strip()[:200]}" if tail else "")
        if self.max_procs and "Resource temporarily unavailable" in self.stderr:  # EAGAIN from fork
            said += (f" (a fork failed: the sandbox's process limit, {self.max_procs} processes and threads, was "
                     "reached; raise it with --sandbox-max-procs)")
        if self.disk_full:
            said += f" ({disk_full_note(self.disk_full)})"
        return said


def disk_full_note(mb: int) -> str:
    """What to say when a sandbox's capped file system filled up: the one place that names the option."""
    return (f"the sandbox's disk cap, {mb} MB for /home/user and /tmp together, was reached; raise it with "
            "--sandbox-disk-mb")


@dataclass(frozen=True)
class Limits:
    """What one sandboxed command may use. 0 for a limit means none.

    ``memory_mb``: its address space (``RLIMIT_AS``, per process); ``max_procs``: processes and
    threads of the sandbox's user at once (``RLIMIT_NPROC``; with pytest not root the user's other
    processes count too, so the limit is set that many above what it already runs);
    ``output_mb``: bytes of stdout plus stderr read back before the command is killed;
    ``disk_mb``: the size of the tmpfs that holds the sandbox's ``home/`` and ``tmp/`` together
    (``/home/user`` and ``/tmp``, the only places its commands can write), mounted by
    :class:`Sandbox` when pytest is root and the sandbox is isolated (mounting needs root; without
    it the two folders lie on the disk of the sandbox's folder, uncapped). The default is
    OpenComputer's container's: a 4 GiB tmpfs on ``/home/user`` and a 2 GiB one on ``/tmp``. Wall
    time is each call's ``timeout``."""

    memory_mb: int = 2048
    max_procs: int = 256
    output_mb: int = 16
    disk_mb: int = 6144

    @property
    def output_bytes(self) -> int:
        return self.output_mb << 20


DEFAULT_LIMITS = Limits()


def _system_binds(uid: int = SANDBOX_UID) -> list[str]:
    """bwrap arguments for the read-only system folders (symlinks stay symlinks, as on merged-/usr
    systems where ``/bin`` is ``usr/bin``) and the minimal ``/etc``, whose ``passwd`` names ``uid``
    ``user``."""
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--perms", "0755", "--dir", "/etc"]
    for source, target in (*etc_binds(), *_account_binds(uid)):
        args += ["--ro-bind", source, target]
    return args


@functools.lru_cache(maxsize=1)
def etc_binds() -> tuple[tuple[str, str], ...]:
    """``(host path, sandbox path)`` of the host's ``/etc`` entries the sandbox sees: those of
    :data:`ETC_ENTRIES` that exist and can be read."""
    import glob

    binds: list[tuple[str, str]] = []
    for pattern in ETC_ENTRIES:
        for path in sorted(glob.glob(os.path.join("/etc", pattern))):
            if os.path.exists(path) and os.access(path, os.R_OK):
                binds.append((path, path))
    return tuple(binds)


@functools.lru_cache(maxsize=64)
def _account_binds(uid: int) -> tuple[tuple[str, str], ...]:
    """The sandbox's ``/etc/passwd`` and ``/etc/group``, naming ``uid`` ``user`` (written once per
    uid, in a folder removed at exit; a process uses at most 64 uids, see :func:`host_uid`)."""
    import atexit

    folder = tempfile.mkdtemp(prefix="agentbench-etc-")
    atexit.register(shutil.rmtree, folder, True)
    os.chmod(folder, 0o755)
    files = {"passwd": f"root:x:0:0:root:/root:/bin/bash\nuser:x:{uid}:{uid}:user:{HOME}:/bin/bash\n"
                       "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
             "group": f"root:x:0:\nuser:x:{uid}:\nnogroup:x:65534:\n"}
    binds: list[tuple[str, str]] = []
    for name, text in files.items():
        path = os.path.join(folder, name)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(path, 0o644)
        binds.append((path, f"/etc/{name}"))
    return tuple(binds)


def _privileged() -> bool:
    """True when this process is root: bubblewrap then runs without a user namespace and each
    sandbox's commands run as a host uid of its own (:func:`host_uid`), dropped to by ``setpriv``."""
    return os.geteuid() == 0


#: The first host uid given to sandboxes when pytest runs as root: far above any account (Debian
#: gives users 1000-59999 and systemd's dynamic users 61184-65519) and below the 32-bit limit.
HOST_UID_BASE = 1 << 30
#: Sandboxes one process may hold at once with distinct uids (a process makes them one after another).
_UIDS_PER_PROCESS = 64
_uid_counter = itertools.count()


def host_uid() -> int:
    """A host uid no other live sandbox has and no account owns: made from this process's id
    (unique among live processes) and a counter, so sandboxes of concurrent xdist workers and
    of other pytest sessions on the machine never share one.

    Why a uid of its own: with the sandbox's user a real host account (uid 1000), any host
    process of that account could reach into a running sandbox (``/proc/<pid>/root``), and
    ``RLIMIT_NPROC``, which counts every process of a uid, counted all of that account's
    processes against each sandbox's limit."""
    # Linux pids are below 2^22, so the uid stays below 2^30 + 2^28
    return HOST_UID_BASE + os.getpid() % (1 << 22) * _UIDS_PER_PROCESS + next(_uid_counter) % _UIDS_PER_PROCESS


def drop_argv(uid: int) -> list[str]:
    """The ``setpriv`` prefix that drops root to host ``uid`` for good before bubblewrap starts."""
    setpriv = shutil.which("setpriv", path=SANDBOX_PATH)
    if setpriv is None:
        raise SandboxError("running sandboxes as root needs setpriv (Debian package util-linux) to drop to "
                           f"uid {uid}")
    return [setpriv, "--reuid", str(uid), "--regid", str(uid), "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs", "--"]


#: mount(2) and umount2(2) flags (linux/mount.h)
_MS_NOSUID, _MS_NODEV, _MNT_DETACH, _UMOUNT_NOFOLLOW = 2, 4, 2, 8
#: A capped file system with less free than this is full (tmpfs counts in pages; a writer stopped
#: by ENOSPC leaves none).
_FULL_BYTES = 1 << 20
#: Inodes of a capped file system: one per this many bytes of the cap. Empty files and folders use
#: no pages of a tmpfs but each costs kernel memory, so their number is capped too (524,288 at 6 GiB).
_BYTES_PER_INODE = 12 << 10


@functools.lru_cache(maxsize=1)
def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def mount_disk_cap(folder: Path, mb: int) -> None:
    """Mount a tmpfs of ``mb`` MB (mode 0700, no setuid, no devices) on ``folder``: the sandbox's
    ``home/`` and ``tmp/`` are made inside it, so what its commands write counts against the cap
    and never reaches the disk that holds ``folder``. Root only; ``SandboxError`` when it fails.

    Why a mount of the host's and not bubblewrap's ``--size --tmpfs``: the home is prepared on the
    host before the first command, shared by every command of the sandbox (and the desktop's
    apps), and read back after the last, so it must outlive each bubblewrap."""
    import ctypes

    size = mb << 20
    options = f"size={size},nr_inodes={max(size // _BYTES_PER_INODE, 1024)},mode=0700".encode()
    if _libc().mount(b"agentbench-sandbox", os.fsencode(folder), b"tmpfs", _MS_NOSUID | _MS_NODEV, options) != 0:
        errno = ctypes.get_errno()
        raise SandboxError(f"cannot cap the sandbox's disk at {mb} MB: mounting a tmpfs on {folder} failed: "
                           f"{os.strerror(errno)} (pass --sandbox-disk-mb 0 to run without a disk cap)")


def unmount_disk_cap(folder: Path) -> None:
    """Detach the tmpfs on ``folder`` (its contents are freed once no process holds them open);
    ``OSError`` when it cannot."""
    import ctypes

    if _libc().umount2(os.fsencode(folder), _MNT_DETACH | _UMOUNT_NOFOLLOW) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"cannot unmount the sandbox's tmpfs: {os.strerror(errno)}", str(folder))


def _bind_mounts(ro_binds: Sequence[tuple[str, str]]) -> list[str]:
    """bwrap arguments for read-only binds, such that bubblewrap never creates a bind's target in a
    folder the sandbox can write.

    Why: bubblewrap makes a missing target itself (``creat``, ``mkdir -p``), following symlinks.
    Under ``/home/user`` or ``/tmp`` a process still running in the sandbox can swap the target,
    or a folder on its way, for a link out of the sandbox between any preparation and bwrap's
    start. So a target there lies in a fresh tmpfs mounted on its first folder (``/tmp/.X11-unix``
    for ``/tmp/.X11-unix/X0``): that tmpfs exists only in this command's mount namespace, where no
    other process can plant anything, and mounting it creates nothing through a link (``mkdir``
    never follows one; a mount through a link lands in this namespace alone). A folder bound
    directly as a first-level folder needs no tmpfs (its ``mkdir`` is safe the same way); a file
    there is refused. Targets elsewhere are made by bubblewrap in its own fresh root."""
    args: list[str] = []
    made: set[str] = set()
    tmpfs: list[str] = []
    for source, target in ro_binds:
        pure = PurePosixPath(target)
        inside = next((PurePosixPath(r) for r in (HOME, TMP) if PurePosixPath(r) in pure.parents), None)
        if inside is not None:
            first = str(inside / pure.relative_to(inside).parts[0])
            if str(pure) == first:
                if not os.path.isdir(source):
                    raise SandboxError(f"read-only bind {target}: a file bound into {inside} must lie in a folder "
                                       f"of its own there (e.g. {first}/{pure.name})")
            else:
                if first not in made:
                    made.add(first)
                    tmpfs.append(first)
                    args += ["--perms", "0755", "--tmpfs", first]
                for parent in reversed(pure.parents):  # inside the fresh tmpfs; bwrap would make them 0700
                    folder = str(parent)
                    if folder.startswith(first + "/") and folder not in made:
                        made.add(folder)
                        args += ["--perms", "0755", "--dir", folder]
        else:
            for parent in reversed(pure.parents):  # bwrap would make them 0700
                folder = str(parent)
                if folder not in made and folder not in ("/", "/home"):
                    made.add(folder)
                    args += ["--perms", "0755", "--dir", folder]
        args += ["--ro-bind", source, target]
    for first in tmpfs:  # once its binds are in, nothing may write to it (see bwrap_argv)
        args += ["--remount-ro", first]
    return args


def map_argv(uid: int) -> list[str]:
    """The ``unshare`` prefix that shows the host uid a command was dropped to as ``uid``, in a
    user namespace of the command's own (its files on the host, owned by that uid, show as ``uid``)."""
    unshare = shutil.which("unshare", path=SANDBOX_PATH)
    if unshare is None:
        raise SandboxError("running sandboxes as root needs unshare (Debian package util-linux)")
    return [unshare, "--user", f"--map-user={uid}", f"--map-group={uid}", "--"]


def bwrap_argv(bwrap: str, home: str | Path, tmp: str | Path, *, env: Mapping[str, str],
               ro_binds: Sequence[tuple[str, str]] = (), cwd: str = HOME, uid: int = SANDBOX_UID,
               host: int | None = None) -> list[str]:
    """The bubblewrap command line that runs a command in the sandbox (the command follows it).

    ``uid``: the user (and group) id commands see as their own (never 0). When pytest is not root,
    bubblewrap runs in a user namespace that shows pytest's uid as ``uid``. When pytest is root,
    bubblewrap needs no user namespace: ``setpriv`` drops the command to the host uid ``host`` (a
    uid of the sandbox's own, :func:`host_uid`, never an account's) and ``unshare`` shows it as
    ``uid`` in a user namespace of its own."""
    if uid == 0:
        raise SandboxError("sandboxed commands do not run as root")
    privileged = _privileged()
    if privileged:  # no user namespace: the uid inside is the host's
        if not host:
            raise SandboxError("a sandbox started by root needs a host uid of its own (host_uid())")
        namespaces = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    else:
        namespaces = ["--unshare-all", "--uid", str(uid), "--gid", str(uid)]
    args = [bwrap, *namespaces, "--die-with-parent", "--new-session"]
    if not privileged:
        args += ["--cap-drop", "ALL"]  # as root, setpriv drops them (it needs them to change uid)
    args += [*_system_binds(uid), "--proc", "/proc", "--dev", "/dev", "--perms", "0755", "--dir", "/home",
             "--bind", str(home), HOME, "--bind", str(tmp), TMP]
    args += _bind_mounts(ro_binds)
    # What bubblewrap made itself (its root, /home, /dev and /dev/shm) is read-only once set up:
    # with pytest not root its tmpfs belongs to the command's user, and is sized to half the RAM.
    args += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", cwd, "--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    args.append("--")
    if privileged:
        assert host is not None
        args += [*drop_argv(host), *map_argv(uid)]
    return args


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
        host = None
        if _privileged():
            host = host_uid()
            for part in (home, tmp):
                os.chown(part, host, host)
        try:
            prefix = bwrap_argv(path, home, tmp, env={"PATH": SANDBOX_PATH}, host=host)
            argv = [*prefix, "sh", "-c", "echo ok > probe"]
            done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
        except SandboxError as exc:
            return None, str(exc)
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
                 ro_binds: Sequence[tuple[str, str]] = (), uid: int | None = None,
                 limits: Limits | None = None) -> None:
        self.root = Path(root)
        self.isolation = isolation
        self.home = self.root / "home"
        self.tmp = self.root / "tmp"
        #: extra environment for every command (DISPLAY for a desktop app, say)
        self.env = dict(env or {})
        #: extra read-only binds ``(host path, sandbox path)``, honoured with bubblewrap only
        self.ro_binds = list(ro_binds)
        #: the user id commands run as, with bubblewrap (never root; None means the default 1000)
        self.uid = SANDBOX_UID if uid is None else uid
        if self.uid == 0:
            raise SandboxError("sandboxed commands do not run as root")
        self.limits = limits or DEFAULT_LIMITS
        privileged = self.isolated and _privileged()
        #: the disk cap in MB on ``home/`` and ``tmp/`` together (0: none; see :class:`Limits`)
        self.disk_mb = self.limits.disk_mb if privileged else 0
        #: a command left the capped file system full, or was told it was (stays set)
        self.disk_filled = False
        #: the host uid commands run as when pytest is root (:func:`host_uid`, one per sandbox, shown
        #: to them as ``uid``); the owner of what the host writes into the sandbox then, so commands
        #: can change the files they were given. None when pytest is not root (commands run as
        #: pytest's own uid, which a user namespace shows as ``uid``).
        self.host_uid = host_uid() if privileged else None
        self.owner = (self.host_uid, self.host_uid) if self.host_uid is not None else None
        self._background: list[subprocess.Popen[bytes]] = []
        self.closed = False
        self.root.mkdir(parents=True, exist_ok=True)
        if self.disk_mb:
            mount_disk_cap(self.root, self.disk_mb)
        try:
            for folder in (self.home, self.tmp):
                folder.mkdir(exist_ok=True)
                if self.host_uid is not None:
                    os.chown(folder, self.host_uid, self.host_uid)
        except BaseException:
            self.close()
            raise

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
    def _split(self, sandbox_path: str) -> tuple[Path, PurePosixPath]:
        """``(host folder, path relative to it)`` of ``sandbox_path``; ``ValueError`` as :meth:`path`."""
        pure = PurePosixPath(sandbox_path)
        if not pure.is_absolute() or ".." in pure.parts:
            raise ValueError(f"sandbox path {sandbox_path!r} must be absolute, without '..'")
        for inside, host in ((PurePosixPath(HOME), self.home), (PurePosixPath(TMP), self.tmp)):
            if pure == inside or inside in pure.parents:
                return host, pure.relative_to(inside)
        raise ValueError(f"sandbox path {sandbox_path!r} is outside the sandbox's {HOME} and {TMP}")

    def path(self, sandbox_path: str) -> Path:
        """The host path of ``sandbox_path`` (``/home/user/...`` or ``/tmp/...``).

        ``ValueError`` for anything else, or for a path that climbs out with ``..``. The path is for
        reading names only: code in the sandbox may have made any part of it a symlink, so write,
        read and remove through :meth:`write`, :meth:`place`, :meth:`read` and :meth:`remove`."""
        host, rel = self._split(sandbox_path)
        return host.joinpath(*rel.parts)

    def _file_target(self, sandbox_path: str) -> tuple[Path, PurePosixPath]:
        host, rel = self._split(sandbox_path)
        if not rel.parts:
            raise ValueError(f"sandbox path {sandbox_path!r} is a folder of the sandbox, not a file")
        return host, rel

    def place(self, source: str | Path, sandbox_path: str, *, within: str | Path | None = None) -> Path:
        """Copy the host file ``source`` to ``sandbox_path`` (parents made, mode kept), replacing
        whatever is there without following a symlink on the way. ``within``: the folder
        ``source`` lies in when its contents are not the caller's (a task folder): ``source`` is
        then read without following a symlink below it, and must be a regular file (``OSError``)."""
        from pytest_agentbench.infra import safefs

        host, rel = self._file_target(sandbox_path)
        safefs.copy_in(source, host, rel, owner=self.owner, within=within)
        return self.path(sandbox_path)

    def mkdir(self, sandbox_path: str, mode: int = 0o755) -> Path:
        """Make the folder ``sandbox_path`` (and its parents), replacing symlinks or files in the way."""
        from pytest_agentbench.infra import safefs

        host, rel = self._split(sandbox_path)
        with safefs.open_dir(host, rel, create=True, owner=self.owner) as fd:
            os.fchmod(fd, mode)
        return self.path(sandbox_path)

    def read(self, sandbox_path: str, limit: int) -> bytes:
        """The bytes of the regular file at ``sandbox_path``; ``OSError`` for a symlink, anything
        not a regular file, or over ``limit`` bytes."""
        from pytest_agentbench.infra import safefs

        host, rel = self._file_target(sandbox_path)
        return safefs.read_file(host, rel, limit)

    def remove(self, sandbox_path: str) -> bool:
        """Remove whatever is at ``sandbox_path`` (no symlink followed); True when there was something."""
        from pytest_agentbench.infra import safefs

        host, rel = self._file_target(sandbox_path)
        return safefs.remove(host, rel)

    def localize(self, sandbox_path: str) -> None:
        """Make a script in the sandbox use the sandbox's home when it names ``/home/user``.

        With bubblewrap a no-op: ``/home/user`` is the sandbox's home. In the plain-folder fallback
        the file's ``/home/user`` paths are rewritten to the folder's ``home/``, so a setup script
        or verifier with literal paths works there and does not write to a real ``/home/user``.
        Files that are not UTF-8 text (or not regular files) are left alone."""
        if self.isolated:
            return
        try:
            text = self.read(sandbox_path, 64 << 20).decode("utf-8")
        except (UnicodeDecodeError, OSError):
            return
        home = str(self.home)
        changed = _HOME_IN_TEXT.sub(lambda _: home, text)
        if changed != text:
            self.write(sandbox_path, changed)

    def write(self, sandbox_path: str, data: str | bytes, mode: int = 0o644) -> Path:
        """Write ``data`` to ``sandbox_path`` as a fresh file, without following a symlink on the way."""
        from pytest_agentbench.infra import safefs

        host, rel = self._file_target(sandbox_path)
        payload = data.encode("utf-8") if isinstance(data, str) else data
        safefs.write_file(host, rel, payload, mode=mode, owner=self.owner)
        return self.path(sandbox_path)

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
                                ro_binds=[*self.ro_binds, *ro_binds], cwd=cwd, uid=self.uid, host=self.host_uid)
            return [*self._limits_prefix(), *prefix, *argv], {}, None
        return [*self._limits_prefix(), *(self._to_host(a) for a in argv)], self._host_env(), self._to_host(cwd)

    def _limits_prefix(self) -> list[str]:
        """The ``prlimit`` prefix that puts :attr:`limits` on a command."""
        return limit_argv(self.limits, self.host_uid if self.host_uid is not None else os.getuid())

    def run(self, argv: Sequence[str], *, timeout: float, input: str | bytes | None = None,
            cwd: str = HOME, ro_binds: Sequence[tuple[str, str]] = ()) -> RunResult:
        """Run ``argv`` in the sandbox and wait at most ``timeout`` seconds.

        At the timeout, or once its stdout and stderr together pass :attr:`limits`' output size,
        the command's whole process tree is killed (its process group; with bubblewrap also its PID
        namespace) and the result says ``timed_out`` or ``output_over``. Output is read as it
        comes, so a command that prints without end costs pytest at most the limit. Never raises
        for what the command does; ``OSError`` when it cannot be started at all."""
        if self.closed:
            raise SandboxError(f"sandbox {self.root} is closed")
        data = input.encode("utf-8") if isinstance(input, str) else input
        started = time.perf_counter()
        full, env, workdir = self.command(argv, cwd=cwd, ro_binds=ro_binds)
        proc = subprocess.Popen(full, stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=workdir,
                                start_new_session=True)
        out, err, why = _collect(proc, data, timeout, self.limits.output_bytes)
        seconds = time.perf_counter() - started
        stdout = out.decode("utf-8", errors="replace")
        stderr = err.decode("utf-8", errors="replace")
        if not self.isolated:
            stdout, stderr = self._from_host(stdout), self._from_host(stderr)
        killed = why is not None
        filled = bool(self.disk_mb) and (self._disk_is_full() or "No space left on device" in stderr)
        self.disk_filled = self.disk_filled or filled
        return RunResult(tuple(argv), None if killed else proc.returncode, stdout, stderr, why == "timeout", seconds,
                         output_over=self.limits.output_mb if why == "output" else 0, max_procs=self.limits.max_procs,
                         disk_full=self.disk_mb if filled else 0)

    def _disk_is_full(self) -> bool:
        try:
            stats = os.statvfs(self.root)
        except OSError:
            return False
        return stats.f_bavail * stats.f_frsize < _FULL_BYTES

    def disk_note(self) -> str | None:
        """A line naming the disk cap when the sandbox's capped file system is full or a command
        filled it earlier (a writer may delete what it wrote after ``ENOSPC``); else None. For
        callers that report what went wrong in a sandbox as a whole (an item's error or verdict)."""
        if self.disk_mb and (self.disk_filled or (not self.closed and self._disk_is_full())):
            return disk_full_note(self.disk_mb)
        return None

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
                inits = _kill_tree(proc)
                proc.wait()
                _wait_gone(inits)
        self._background.clear()
        from pytest_agentbench.infra import safefs

        try:
            if self.disk_mb:  # frees the whole tree at once; the folder it was mounted on is left, empty
                unmount_disk_cap(self.root)
            # by descriptor and without recursion: code in the sandbox may leave any tree behind
            safefs.remove_tree(self.root)
        except OSError as exc:
            warnings.warn(SandboxWarning(f"sandbox {self.root} could not be removed: {exc}"), stacklevel=2)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Sandbox({str(self.root)!r}, {self.isolation.describe()})"


def _count_processes(uid: int) -> int:
    """Processes and threads of ``uid`` now (what ``RLIMIT_NPROC`` counts)."""
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                continue
    return count


def limit_values(limits: Limits, uid: int) -> list[tuple[str, int]]:
    """``(prlimit option, value)`` for ``RLIMIT_AS`` and ``RLIMIT_NPROC`` (none for a 0 limit),
    each at most this process's own hard limit (which an unprivileged process cannot raise).

    ``RLIMIT_NPROC`` counts every process of the real uid and does not bind root, so it is set for
    the uid the command ends up as; for a uid that already runs processes here (pytest not root)
    it is set that many above its present count."""
    import resource

    wanted: list[tuple[str, int, int]] = []
    if limits.memory_mb > 0:
        wanted.append(("--as", resource.RLIMIT_AS, limits.memory_mb << 20))
    if limits.max_procs > 0:
        base = 0 if uid >= HOST_UID_BASE else _count_processes(uid)  # a sandbox's own uid runs nothing else
        wanted.append(("--nproc", resource.RLIMIT_NPROC, base + limits.max_procs))
    values = []
    for option, which, value in wanted:
        hard = resource.getrlimit(which)[1]
        values.append((option, value if hard == resource.RLIM_INFINITY else min(value, hard)))
    return values


def limit_argv(limits: Limits, uid: int) -> list[str]:
    """The ``prlimit`` prefix that sets :func:`limit_values` on the command, inherited by all it
    starts (set in the child by a program, not by a ``preexec_fn``: pytest may run threads, and
    Python code between fork and exec is not safe with them). ``SandboxError`` without prlimit."""
    values = limit_values(limits, uid)
    if not values:
        return []
    prlimit = shutil.which("prlimit", path=SANDBOX_PATH)
    if prlimit is None:
        raise SandboxError("sandbox limits need prlimit (Debian package util-linux); or pass --sandbox-memory-mb 0 "
                           "and --sandbox-max-procs 0")
    return [prlimit, *(f"{option}={value}:{value}" for option, value in values), "--"]


def _collect(proc: subprocess.Popen[bytes], data: bytes | None, timeout: float,
             limit: int) -> tuple[bytes, bytes, str | None]:
    """Feed ``data`` to ``proc`` and read its stdout and stderr as they come, up to ``limit``
    bytes together (0: no limit). ``(stdout, stderr, why killed)``: why is None, ``"timeout"`` or
    ``"output"``; a killed command's output is what was read until then."""
    import selectors

    deadline = time.monotonic() + timeout
    chunks: dict[int, list[bytes]] = {}
    total = 0
    why: str | None = None
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    for pipe in (proc.stdout, proc.stderr):
        os.set_blocking(pipe.fileno(), False)
        sel.register(pipe, selectors.EVENT_READ)
        chunks[pipe.fileno()] = []
    pending = memoryview(data) if data else None
    if proc.stdin is not None:
        if pending is None:
            proc.stdin.close()
        else:
            os.set_blocking(proc.stdin.fileno(), False)
            sel.register(proc.stdin, selectors.EVENT_WRITE)
    try:
        while len(sel.get_map()) > 0:
            left = deadline - time.monotonic()
            if left <= 0:
                why = "timeout"
                break
            for key, _ in sel.select(min(left, 1.0)):
                if key.fileobj is proc.stdin:
                    try:
                        assert pending is not None
                        pending = pending[os.write(key.fd, pending[:65536]):]
                    except BrokenPipeError:
                        pending = pending[:0] if pending is not None else None
                    if not pending:
                        sel.unregister(key.fileobj)
                        proc.stdin.close()
                    continue
                want = 65536 if not limit else min(65536, limit - total + 1)
                try:
                    chunk = os.read(key.fd, want)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                chunks[key.fd].append(chunk)
                total += len(chunk)
                if limit and total > limit:
                    why = "output"
                    break
            if why:
                break
        if why is None:
            left = max(deadline - time.monotonic(), 0.0)
            try:
                proc.wait(timeout=left)
            except subprocess.TimeoutExpired:
                why = "timeout"
    finally:
        sel.close()
    if why is not None:
        inits = _kill_tree(proc)
        proc.wait()
        _wait_group_gone(proc.pid)
        _wait_gone(inits)
    out = b"".join(chunks[out_fd])
    err = b"".join(chunks[err_fd])
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None and not stream.closed:
            stream.close()
    if limit:  # what was read past the limit is dropped too
        out = out[:limit]
        err = err[:max(limit - len(out), 0)]
    return out, err, why


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as handle:
            return [int(child) for child in handle.read().split()]
    except (OSError, ValueError):
        return []


def _wait_group_gone(pgid: int, seconds: float = 2.0) -> None:
    """Wait (briefly) until no process of the killed group is left, so a caller that looks right
    after a kill finds nothing of the command (SIGKILLed processes take a moment to exit)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.01)


def _wait_gone(pids: list[int], seconds: float = 5.0) -> None:
    """Wait (briefly) until each of ``pids`` has exited and been reaped. A PID namespace's init is
    reaped only after every process in its namespace is gone; the command runs in a session of its
    own, so its processes are not in bubblewrap's group and ``_wait_group_gone`` cannot see them."""
    deadline = time.monotonic() + seconds
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except (ProcessLookupError, PermissionError):
                break
            time.sleep(0.01)


def _kill_tree(proc: subprocess.Popen[bytes]) -> list[int]:
    """SIGKILL the command's process group and, first, bubblewrap's children: the first is the
    init of the command's PID namespace, and the kernel kills everything in the namespace before
    that init is gone, so once bubblewrap is reaped nothing of the command is left (killing only
    bubblewrap leaves the namespace to die a moment later, through its parent-death signal).
    Returns those children, for :func:`_wait_gone`."""
    children = _children(proc.pid)
    for child in children:
        try:
            os.kill(child, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass
    return children
