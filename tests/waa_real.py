"""The real WAA server tier: upstream's own Flask server, unmodified, on a private Linux desktop.

A fake we wrote is no evidence that we speak WAA's protocol; this tier runs the real server so that
tests can pin what it does. Per pytest(-xdist) worker, ``real_waa_server`` starts:

* ``Xvfb`` on a free display (``-displayfd``), 1280x720x24, and ``openbox`` as window manager;
* a private dbus session bus and ``at-spi-bus-launcher --launch-immediately``, so GTK programs
  register with AT-SPI and the server's Linux ``/accessibility`` branch (pyatspi) sees their windows;
  their sockets live in a short ``/tmp/agentbench-waa-*`` folder (``XDG_RUNTIME_DIR``), since a unix
  socket path is limited to 107 bytes;
* a temporary ``HOME`` with ``Desktop/ Documents/ Downloads/`` and a ``.Xauthority`` with an entry for
  the display (python-xlib refuses to connect without the file and warns on stdout without the
  entry), ``XDG_SESSION_TYPE=x11`` (the server then screenshots with scrot);
* upstream's ``vm/setup/server/main.py`` through ``tests/waa_server_launcher.py`` with the server venv's
  python (``$AGENTBENCH_WAA_SERVER_PYTHON``), ``--port`` a free port, ``WAA_LOG`` and
  ``WAA_PATCH_CLEAR_TASK_FILES=1``. The venv's ``bin`` leads ``PATH``, so the ``python -c`` of actions
  is a python with pyautogui, as in the WAA VM.

The project's own launcher is used rather than the snapshot's ``run_server_on_linux.py``: that one
runs ``main.py`` inside the snapshot, which then writes its log, screenshots and recordings into the
shared snapshot, and two workers race on one ``screenshot.png``. Ours stubs the same Windows-only
imports and runs the snapshot's ``main.py`` from a per-worker folder (see its docstring).

The snapshot is found through ``$AGENTBENCH_WAA_UPSTREAM`` (the root of an unmodified
microsoft/WindowsAgentArena checkout). Without it or the server python the tier skips, naming what is
missing; under ``AGENTBENCH_REQUIRE_INTEROP=1`` (set by ``.ci/run``) it fails instead.
"""

from __future__ import annotations

import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import httpx
import pytest

LAUNCHER = Path(__file__).with_name("waa_server_launcher.py")
SCREEN = (1280, 720)
#: Bounds for the desktop's parts to come up; generous for a loaded 2-core machine.
START_TIMEOUT = 60.0
#: The user folders of the desktop's HOME; a reset empties them (tasks write and download there).
DESKTOP_FOLDERS = ("Desktop", "Documents", "Downloads")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "waa_real: runs against upstream's real WAA server on a private Xvfb desktop "
        "(needs $AGENTBENCH_WAA_UPSTREAM and $AGENTBENCH_WAA_SERVER_PYTHON; see .ci/run)",
    )


def interop_unavailable(reason: str) -> NoReturn:
    """Skip, naming what is missing; fail under ``AGENTBENCH_REQUIRE_INTEROP=1`` (CI must have it)."""
    if os.environ.get("AGENTBENCH_REQUIRE_INTEROP") == "1":
        pytest.fail(f"{reason}; AGENTBENCH_REQUIRE_INTEROP=1, so this fails instead of skipping")
    pytest.skip(reason)


def _tail(path: Path, limit: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-limit:]
    except OSError:
        return "(none)"


def _stop(process: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    """Stop a process and its process group (each part runs in its own session)."""
    if process.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


@dataclass
class RealWAAServer:
    """One running upstream WAA server and the desktop it drives."""

    url: str
    home: Path
    display: str
    #: The desktop's environment (DISPLAY, HOME, dbus, PATH with the server venv first), for programs.
    env: dict[str, str]
    #: The request log the launcher writes, one JSON object a line.
    log: Path
    #: The snapshot root ($AGENTBENCH_WAA_UPSTREAM).
    upstream: Path
    #: ``upstream/client``: holds upstream's ``desktop_env`` package.
    client_dir: Path
    #: The server venv's python (it has gi, pyatspi and pyautogui).
    python: str
    #: The server's stdout/stderr file.
    server_output: Path
    workdir: Path
    #: The short folder of the desktop's sockets (XDG_RUNTIME_DIR), removed at stop.
    runtime: Path
    #: Seconds from the first process to the server's first 200 on /probe.
    started_in: float = 0.0
    _infrastructure: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _apps: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start_app(self, argv: Sequence[str], **kwargs: object) -> subprocess.Popen[bytes]:
        """Start a program on this desktop (its own process group, stopped at reset and teardown)."""
        out = self.workdir / f"app-{len(self._apps)}.log"
        with out.open("wb") as fh:
            process = subprocess.Popen(list(argv), env=self.env, stdout=fh, stderr=subprocess.STDOUT,
                                       start_new_session=True, **kwargs)  # type: ignore[call-overload]
        self._apps.append(process)
        return process

    def _client_windows(self) -> list[tuple[str, int, str]]:
        """``(window id, pid, title)`` of each client window of the window manager (``wmctrl -lp``)."""
        result = subprocess.run(["wmctrl", "-lp"], env=self.env, capture_output=True, text=True, timeout=10,
                                check=False)
        windows = []
        for line in result.stdout.splitlines():
            parts = line.split(None, 4)
            if len(parts) >= 4:
                windows.append((parts[0], int(parts[2]), parts[4] if len(parts) == 5 else ""))
        return windows

    def windows(self) -> list[str]:
        """The titles of the window manager's client windows."""
        return [title for _, _, title in self._client_windows()]

    def wait_for_window(self, title: str, timeout: float = 20.0) -> None:
        """Wait until a client window with exactly ``title`` is mapped."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if title in self.windows():
                return
            time.sleep(0.1)
        raise AssertionError(f"no window titled {title!r} within {timeout:g}s; windows: {self.windows()}")

    def reset(self) -> None:
        """Stop every program started here, close whatever windows are left, empty the task folders."""
        for process in self._apps:
            _stop(process, grace=3.0)
        self._apps.clear()
        # Windows opened through the server (/setup/launch) are not ours to track: close each one
        # through the window manager, then stop the programs of those that stay.
        for window_id, _, _ in self._client_windows():
            subprocess.run(["wmctrl", "-i", "-c", window_id], env=self.env, capture_output=True, timeout=10,
                           check=False)
        deadline = time.monotonic() + 5
        while self._client_windows() and time.monotonic() < deadline:
            time.sleep(0.1)
        for _, pid, _ in self._client_windows():
            if pid > 0:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for name in DESKTOP_FOLDERS:
            folder = self.home / name
            if folder.is_dir():
                for entry in folder.iterdir():
                    if entry.is_dir() and not entry.is_symlink():
                        shutil.rmtree(entry)
                    else:
                        entry.unlink()
            else:
                folder.mkdir(parents=True)

    def stop(self) -> None:
        """Stop the programs, then the server and the desktop, newest first, each by process group."""
        for process in self._apps:
            _stop(process, grace=2.0)
        self._apps.clear()
        for process in reversed(self._infrastructure):
            _stop(process, grace=3.0)
        self._infrastructure.clear()
        shutil.rmtree(self.runtime, ignore_errors=True)


def _interop_paths() -> tuple[Path, str]:
    upstream = os.environ.get("AGENTBENCH_WAA_UPSTREAM")
    python = os.environ.get("AGENTBENCH_WAA_SERVER_PYTHON")
    if not upstream or not python:
        interop_unavailable(
            "interop: set AGENTBENCH_WAA_UPSTREAM (an unmodified WindowsAgentArena snapshot) and "
            "AGENTBENCH_WAA_SERVER_PYTHON (a python with the server's requirements) (see .ci/run)"
        )
    root = Path(upstream).resolve()
    if not (root / "vm" / "setup" / "server" / "main.py").is_file():
        interop_unavailable(f"interop: {root} has no vm/setup/server/main.py (AGENTBENCH_WAA_UPSTREAM)")
    if not os.access(python, os.X_OK):
        interop_unavailable(f"interop: AGENTBENCH_WAA_SERVER_PYTHON={python} is not executable (see .ci/run)")
    missing = [tool for tool in ("Xvfb", "xauth", "openbox", "dbus-daemon", "wmctrl", "scrot")
               if not shutil.which(tool)]
    if not Path("/usr/libexec/at-spi-bus-launcher").exists():
        missing.append("/usr/libexec/at-spi-bus-launcher")
    if missing:
        interop_unavailable(f"interop: the WAA desktop needs {', '.join(missing)} (Debian packages; see .ci/run)")
    return root, python


def _start_xvfb(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    read_fd, write_fd = os.pipe()
    log = (workdir / "xvfb.log").open("wb")
    process = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", f"{SCREEN[0]}x{SCREEN[1]}x24", "-nolisten", "tcp",
         "-noreset"],
        pass_fds=(write_fd,), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    log.close()
    os.close(write_fd)
    number = b""
    deadline = time.monotonic() + START_TIMEOUT
    try:
        while not number.endswith(b"\n"):
            ready, _, _ = select.select([read_fd], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(read_fd, 16) if ready else b""
            if not chunk:
                _stop(process)
                raise RuntimeError(f"Xvfb did not report a display: {_tail(workdir / 'xvfb.log')}")
            number += chunk
    finally:
        os.close(read_fd)
    return process, f":{number.decode().strip()}"


def _spawn(argv: list[str], env: dict[str, str], log: Path, pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
    with log.open("wb") as fh:
        return subprocess.Popen(argv, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
                                pass_fds=pass_fds)


def _wait_until(what: str, check: Callable[[], bool], timeout: float, detail: Callable[[], str],
                watch: subprocess.Popen[bytes] | None = None) -> None:
    """Poll ``check`` until it holds; else RuntimeError naming ``what`` with ``detail()`` (a log tail),
    at once if the ``watch``ed process has exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if watch is not None and watch.poll() is not None:
            raise RuntimeError(f"{what}: it exited with {watch.returncode}: {detail()}")
        time.sleep(0.1)
    raise RuntimeError(f"{what} within {timeout:g}s: {detail()}")


def start_real_server(workdir: Path) -> RealWAAServer:
    """Start a desktop and upstream's server in ``workdir``; stop what started if any part fails."""
    upstream, python = _interop_paths()
    home = workdir / "home"
    for name in DESKTOP_FOLDERS:
        (home / name).mkdir(parents=True, exist_ok=True)
    (home / ".Xauthority").touch()
    # Sockets (the session bus, AT-SPI's bus under XDG_RUNTIME_DIR) live in a short folder of their
    # own: a unix socket path has at most 107 bytes, and pytest's temporary folders can be longer.
    runtime = Path(tempfile.mkdtemp(prefix="agentbench-waa-", dir="/tmp" if os.path.isdir("/tmp") else None))
    started = time.monotonic()
    parts: list[subprocess.Popen[bytes]] = []
    try:
        xvfb, display = _start_xvfb(workdir)
        parts.append(xvfb)
        # An entry for the display, so python-xlib (pyautogui) connects without warning on every
        # command's stdout; Xvfb runs without -auth, so the cookie is not checked.
        subprocess.run(["xauth", "-f", str(home / ".Xauthority"), "add", display, ".", secrets.token_hex(16)],
                       check=True, capture_output=True, timeout=30)
        bus = runtime / "session.bus"
        env = {
            key: value for key, value in os.environ.items()
            if key not in ("NO_AT_BRIDGE", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "SESSION_MANAGER")
        }
        env.update(
            DISPLAY=display, HOME=str(home), XAUTHORITY=str(home / ".Xauthority"), XDG_SESSION_TYPE="x11",
            XDG_RUNTIME_DIR=str(runtime), DBUS_SESSION_BUS_ADDRESS=f"unix:path={bus}",
            PATH=f"{Path(python).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        )
        parts.append(_spawn(["dbus-daemon", "--session", "--nofork", f"--address=unix:path={bus}"], env,
                            workdir / "dbus.log"))
        _wait_until("the session bus did not come up", bus.exists, START_TIMEOUT, lambda: _tail(workdir / "dbus.log"),
                    watch=parts[-1])
        parts.append(_spawn(["/usr/libexec/at-spi-bus-launcher", "--launch-immediately"], env, workdir / "at-spi.log"))
        parts.append(_spawn(["openbox"], env, workdir / "openbox.log"))

        def window_manager_up() -> bool:
            return subprocess.run(["wmctrl", "-m"], env=env, capture_output=True, timeout=10,
                                  check=False).returncode == 0

        _wait_until("openbox did not start", window_manager_up, START_TIMEOUT, lambda: _tail(workdir / "openbox.log"),
                    watch=parts[-1])
        # The server inherits a socket listening already, so no other process (another worker's
        # server, a client's ephemeral port) can take the port between choosing and binding it.
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(64)
            port = int(listener.getsockname()[1])
            log = workdir / "requests.jsonl"
            server_env = dict(env, WAA_LOG=str(log), WAA_PATCH_CLEAR_TASK_FILES="1", PYTHONUNBUFFERED="1",
                              WAA_LISTEN_FD=str(listener.fileno()))
            output = workdir / "server.out"
            server = _spawn([python, str(LAUNCHER), str(upstream / "vm" / "setup" / "server"),
                             str(workdir / "server"), "--port", str(port)], server_env, output,
                            pass_fds=(listener.fileno(),))
        parts.append(server)
        url = f"http://127.0.0.1:{port}"

        def probed() -> bool:
            if server.poll() is not None:
                raise RuntimeError(f"the WAA server exited with {server.returncode}: {_tail(output)}")
            try:
                return httpx.get(url + "/probe", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        _wait_until("the WAA server did not answer GET /probe", probed, START_TIMEOUT, lambda: _tail(output))
    except BaseException:
        for process in reversed(parts):
            _stop(process)
        shutil.rmtree(runtime, ignore_errors=True)
        raise
    return RealWAAServer(
        url=url, home=home, display=display, env=env, log=log, upstream=upstream, client_dir=upstream / "client",
        python=python, server_output=output, workdir=workdir, runtime=runtime, started_in=time.monotonic() - started,
        _infrastructure=parts,
    )


@pytest.fixture(scope="session")
def real_waa_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealWAAServer]:
    """Upstream's WAA server on this worker's own desktop, for the whole session (see the module docstring)."""
    _interop_paths()  # skip or fail before making folders
    try:
        server = start_real_server(tmp_path_factory.mktemp("waa-real"))
    except RuntimeError as exc:
        pytest.fail(f"the real WAA server tier could not start: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def waa_desktop(real_waa_server: RealWAAServer) -> Iterator[RealWAAServer]:
    """The real server with a clean desktop: no programs or windows, empty Desktop/Documents/Downloads,
    before and after the test, so tests do not see each other's windows or files."""
    real_waa_server.reset()
    yield real_waa_server
    real_waa_server.reset()
