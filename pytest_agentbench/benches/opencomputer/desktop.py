"""Playing an OpenComputer task with an agent: the app on a desktop, driven the way OpenComputer
drives it.

OpenComputer's apps are desktop apps (LibreOffice, draw.io, Audacity, ...) on a 1920x1080 X
display; its agents' actions are pyautogui code run inside the sandbox after the preamble
``import pyautogui; import pyperclip; import time; pyautogui.FAILSAFE = False``. Here an agent can
play a task when the app exists for the sandbox: a local X display (``DISPLAY=:N`` with its socket
in ``/tmp/.X11-unix``), the app's launcher on the sandbox's PATH and ``pyautogui`` in the
sandbox's ``python3``. Otherwise :func:`unavailable` says why and the item is skipped with that
reason; grading a given end state (``--opencomputer-end-state``) needs none of this.

The launchers are a small table of the common apps (the reference's per-app launch specs, hooks and
ready checks are not reproduced); an app not in it is launched by its own name.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentbench.model import Observation

if TYPE_CHECKING:
    from pytest_agentbench.infra.sandbox import Sandbox
    from pytest_agentbench.model import Action

SCREEN = (1920, 1080)
PREAMBLE = "import pyautogui; import pyperclip; import time; pyautogui.FAILSAFE = False; "
X11_DIR = Path("/tmp/.X11-unix")
SCREENSHOT = "/tmp/agentbench-screen.png"
ACTION_TIMEOUT = 60.0
MAX_SCREENSHOT_BYTES = 64 << 20
#: where scrot is looked for (the sandbox's system folders)
SCRSHOT_PATH = "/usr/bin:/bin"
#: seconds the app is given to open its window before the first screenshot
LAUNCH_SETTLE = 5.0
#: app -> launch command (the task's first env file is appended when it has one)
LAUNCHERS: dict[str, tuple[str, ...]] = {
    "libreoffice_calc": ("soffice", "--calc"),
    "libreoffice_writer": ("soffice", "--writer"),
    "libreoffice_impress": ("soffice", "--impress"),
    "drawio": ("drawio",),
    "audacity": ("audacity",),
    "gimp": ("gimp",),
    "inkscape": ("inkscape",),
    "vlc": ("vlc",),
    "thunderbird": ("thunderbird",),
    "chrome": ("google-chrome",),
    "brave": ("brave-browser",),
    "vscode": ("code",),
}


class UnsupportedAction(ValueError):
    """An action this desktop cannot perform (a click on an element id: there is no tree here)."""

    error_type = "agent"


def launcher(app: str) -> tuple[str, ...]:
    return LAUNCHERS.get(app, (app,))


def display_socket(environ: Mapping[str, str], x11_dir: Path = X11_DIR) -> tuple[str | None, str]:
    """``(display number, "")`` for a usable local X display, else ``(None, why not)``."""
    display = environ.get("DISPLAY", "")
    if not display:
        return None, "no desktop here: DISPLAY is not set (OpenComputer apps need an X display)"
    match = re.fullmatch(r":(\d+)(?:\.\d+)?", display)
    if not match:
        return None, f"DISPLAY {display!r} is not a local X display (the sandbox has no network to reach it)"
    if not (x11_dir / f"X{match[1]}").exists():
        return None, f"no X server for DISPLAY {display}: {x11_dir / ('X' + match[1])} does not exist"
    return match[1], ""


def unavailable(app: str, *, environ: Mapping[str, str] | None = None, search_path: str | None = None,
                x11_dir: Path = X11_DIR) -> str | None:
    """Why the app cannot run for a sandbox here, or None when it can (display and launcher found;
    pyautogui is checked when the first episode starts)."""
    environ = os.environ if environ is None else environ
    number, why = display_socket(environ, x11_dir)
    if number is None:
        return f"app {app!r} cannot run: {why}"
    exe = launcher(app)[0]
    if shutil.which(exe, path=search_path) is None:
        return f"app {app!r} is not installed for the sandbox ({exe} is not on its PATH)"
    return None


def sandbox_options(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``env``, ``ro_binds`` and ``files`` (host file, sandbox path: copied in) that give a sandbox
    the X display. The X cookie is copied, not bound: the sandbox's user could not read a host
    file only its owner may read, and the copy is the sandbox's own."""
    environ = os.environ if environ is None else environ
    number, _ = display_socket(environ)
    if number is None:
        return {}
    socket = str(X11_DIR / f"X{number}")
    env = {"DISPLAY": f":{number}"}
    options: dict[str, Any] = {"env": env, "ro_binds": [(socket, socket)]}
    auth = environ.get("XAUTHORITY")
    if auth and Path(auth).is_file():
        options["files"] = [(auth, "/tmp/.Xauthority")]
        env["XAUTHORITY"] = "/tmp/.Xauthority"
    return options


def _xy(action: Action, screen: tuple[int, int]) -> str:
    point = action.to_pixels(*screen)
    if point is None:
        raise UnsupportedAction(f"a {action.type} action needs x and y here (there is no accessibility tree "
                                "for target_id)")
    return f"{point[0]}, {point[1]}"


def to_pyautogui(action: Action, screen: tuple[int, int] = SCREEN) -> str:
    """The pyautogui code OpenComputer would run for this (non-terminal) action."""
    kind = action.type
    if kind == "click":
        return f"pyautogui.click({_xy(action, screen)})"
    if kind == "double_click":
        return f"pyautogui.doubleClick({_xy(action, screen)})"
    if kind == "right_click":
        return f"pyautogui.rightClick({_xy(action, screen)})"
    if kind == "type":
        return f"pyautogui.write({action.text!r}, interval=0.02)"
    if kind == "key":
        return f"pyautogui.press({action.key!r})"
    if kind == "hotkey":
        return f"pyautogui.hotkey({', '.join(repr(k) for k in action.keys)})"
    if kind == "scroll":
        amount = action.scroll_amount or 3
        where = f", {_xy(action, screen)}" if action.x is not None and action.y is not None else ""
        if action.scroll_direction in ("left", "right"):
            sign = -1 if action.scroll_direction == "left" else 1
            return f"pyautogui.hscroll({sign * amount}{where})"
        sign = -1 if action.scroll_direction == "down" else 1
        return f"pyautogui.scroll({sign * amount}{where})"
    if kind == "drag":
        end = action.model_copy(update={"x": action.end_x, "y": action.end_y})
        return (f"pyautogui.moveTo({_xy(action, screen)}); "
                f"pyautogui.dragTo({_xy(end, screen)}, duration=0.5, button='left')")
    if kind == "wait":
        return f"time.sleep({action.seconds if action.seconds is not None else 5})"
    raise UnsupportedAction(f"{kind} actions end an episode; they are not run on the desktop")


class Desktop:
    """The app of one episode, on the display the sandbox was given."""

    def __init__(self, app: str, screen: tuple[int, int] = SCREEN) -> None:
        self.app = app
        self.screen = screen

    def launch(self, sandbox: Sandbox, task: dict[str, Any], command: str | None = None) -> None:
        """Start the app: ``command`` (OpenComputer's launch command for the task, run with
        ``bash -lc``) when given, else the launcher table's."""
        probe = sandbox.run(["python3", "-c", "import pyautogui, pyperclip"], timeout=ACTION_TIMEOUT)
        if not probe.ok:
            from pytest_agentbench.benchmark import InfrastructureError

            raise InfrastructureError("pyautogui and pyperclip must be importable by the sandbox's python3 to "
                                      f"play on the desktop: {probe.summary()}")
        if command is not None:
            sandbox.spawn(["bash", "-lc", command])
        else:
            files = [f["sandbox_path"] for f in task.get("env", {}).get("files", [])
                     if not f["filename"].startswith("setup_")]
            sandbox.spawn([*launcher(self.app), *files[:1]])
        time.sleep(LAUNCH_SETTLE)  # the reference waits for a ready check and a stable window

    def observe(self, sandbox: Sandbox) -> Observation:
        """A screenshot, taken as OpenComputer's Docker backend takes it (``scrot --pointer``; with
        pyautogui where scrot is missing). The file is read without following a symlink the
        sandbox could have put in its place."""
        sandbox.remove(SCREENSHOT)
        if shutil.which("scrot", path=SCRSHOT_PATH) is not None:
            argv = ["scrot", "--pointer", SCREENSHOT]
        else:
            argv = ["python3", "-c", f"import pyautogui; pyautogui.screenshot({SCREENSHOT!r})"]
        done = sandbox.run(argv, timeout=ACTION_TIMEOUT)
        if not done.ok:
            from pytest_agentbench.benchmark import InfrastructureError

            raise InfrastructureError(f"screenshot failed: {done.summary()}")
        try:
            png = sandbox.read(SCREENSHOT, MAX_SCREENSHOT_BYTES)
        except OSError as exc:
            from pytest_agentbench.benchmark import InfrastructureError

            raise InfrastructureError(f"screenshot {SCREENSHOT} cannot be read: {exc.strerror or exc}") from None
        return Observation(screenshot=png, app_name=self.app, viewport=self.screen)

    def act(self, sandbox: Sandbox, action: Action) -> None:
        done = sandbox.run(["python3", "-c", PREAMBLE + to_pyautogui(action, self.screen)], timeout=ACTION_TIMEOUT)
        if not done.ok:
            from pytest_agentbench.benchmark import InfrastructureError

            raise InfrastructureError(f"action {action.describe()} failed on the desktop: {done.summary()}")
