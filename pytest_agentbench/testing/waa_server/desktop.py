"""The simulated Windows machine behind ``FakeWAAServer``: files, windows, keyboard, observation.

It holds the state that the WAA server's endpoints read and change, and nothing about HTTP (see
``handler``). Paths are Windows paths (``C:\\Users\\Docker`` is home). What a real program would do
is modelled only for Notepad and the shell's dialogs (Start, Run, Save As); see the package
docstring for the whole list and its limits.
"""

from __future__ import annotations

import ast
import ntpath
import re
import shlex
import zlib
from typing import Any
from xml.sax.saxutils import quoteattr

HOME = "C:\\Users\\Docker"
DOCUMENTS = HOME + "\\Documents"
DESKTOP = HOME + "\\Desktop"
DOWNLOADS = HOME + "\\Downloads"
DEFAULT_FOLDERS = ("C:\\", "C:\\Users", HOME, *(
    f"{HOME}\\{name}" for name in ("Desktop", "Documents", "Downloads", "Pictures", "Music", "Videos")))
#: The namespaces of upstream's accessibility trees (``_accessibility_ns_map`` in its server), the
#: same on Windows and Linux; the fake uses st, cp, val and win.
NS = {
    "st": "uri:deskat:state.at-spi.gnome.org",
    "attr": "uri:deskat:attributes.at-spi.gnome.org",
    "cp": "uri:deskat:component.at-spi.gnome.org",
    "doc": "uri:deskat:document.at-spi.gnome.org",
    "docattr": "uri:deskat:attributes.document.at-spi.gnome.org",
    "txt": "uri:deskat:text.at-spi.gnome.org",
    "val": "uri:deskat:value.at-spi.gnome.org",
    "act": "uri:deskat:action.at-spi.gnome.org",
    "win": "uri:deskat:uia.windows.microsoft.org",
}
#: Window titles of launched programs other than Notepad and Explorer (they have no behaviour).
APP_TITLES = {
    "code": "Visual Studio Code", "chrome": "Google Chrome", "google-chrome": "Google Chrome",
    "msedge": "Microsoft Edge", "soffice": "LibreOffice", "vlc": "VLC media player",
    "calc": "Calculator", "mspaint": "Paint",
}
#: The Win32 class name of each simulated window kind or program: the Windows tree's tags are these,
#: lower-cased (``Notepad`` -> ``<notepad>``, ``#32770`` -> ``<tag-32770>``).
WINDOW_CLASSES = {
    "notepad": "Notepad", "explorer": "CabinetWClass", "run": "#32770", "save_as": "#32770",
    "start": "Windows.UI.Core.CoreWindow",
    "code": "Chrome_WidgetWin_1", "chrome": "Chrome_WidgetWin_1", "google-chrome": "Chrome_WidgetWin_1",
    "msedge": "Chrome_WidgetWin_1", "soffice": "SALFRAME", "vlc": "Qt5QWindowIcon",
    "calc": "ApplicationFrameWindow", "mspaint": "MSPaintApp",
}
#: Programs that exist on the simulated machine. ``/execute`` of any other program (without a shell)
#: fails as a missing executable does on the real server; through ``/setup/launch`` it opens nothing.
PROGRAMS = frozenset({"python", "python3", "pythonw", "notepad", "explorer", "cmd", "powershell", *APP_TITLES})
#: cmd.exe's built-in commands: through a shell they are found (and run as no-ops, except ``echo``).
CMD_BUILTINS = frozenset({
    "assoc", "call", "cd", "chdir", "cls", "copy", "del", "dir", "echo", "erase", "exit", "md", "mkdir",
    "move", "rd", "ren", "rename", "rmdir", "set", "start", "type", "ver", "vol",
})
#: Python's error text when Windows cannot find an executable (``CreateProcess`` error 2).
MISSING_EXECUTABLE = "[WinError 2] The system cannot find the file specified"


def winpath(path: str) -> str:
    """Normalise a Windows path: backslashes, ``~`` and ``%USERPROFILE%`` expanded, no trailing slash."""
    path = str(path).strip().replace("/", "\\")
    path = re.sub(r"%userprofile%", HOME.replace("\\", "\\\\"), path, flags=re.IGNORECASE)
    if path.startswith("~"):
        path = HOME + path[1:]
    path = ntpath.normpath(path)
    return path if re.fullmatch(r"[A-Za-z]:\\", path) else path.rstrip("\\")


def expand(path: str) -> str:
    """``os.path.expandvars(os.path.expanduser(path))`` as on the machine: ``~`` and ``%USERPROFILE%``
    expanded, the rest (slashes included) as given. The real server does this to upload paths."""
    path = re.sub(r"%userprofile%", HOME.replace("\\", "\\\\"), str(path), flags=re.IGNORECASE)
    return HOME + path[1:] if path.startswith("~") else path


def program_name(word: str) -> str:
    """``C:\\Windows\\notepad.exe`` -> ``notepad``: how the fake names a program."""
    return ntpath.basename(str(word).strip('"')).lower().removesuffix(".exe")


def class_tag(class_name: str) -> str:
    """A window's tag in the Windows tree, by the rule upstream's server applies to ``class_name()``:
    lower-cased, characters other than letters, digits, ``_`` and ``-`` made ``-``, and ``tag`` put
    before a tag that would not start with a letter."""
    tag = "".join(ch if ch.isalnum() or ch in "_-" else "-" for ch in class_name.lower().replace(" ", "-"))
    if not tag.strip():
        return "unknown"
    return tag if tag[0].isalpha() else "tag" + tag


def _png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    row = b"\x00" + bytes(rgb) * width
    ihdr = width.to_bytes(4, "big") + height.to_bytes(4, "big") + b"\x08\x02\x00\x00\x00"
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(row * height, 1))
            + chunk(b"IEND", b""))


class NotSimulated(Exception):
    """Code the pyautogui interpreter does not model (a real python would run it; the fake cannot)."""


class MissingProgram(FileNotFoundError):
    """A program the simulated machine does not have."""


class SimulatedDesktop:
    """The state of one simulated Windows machine (see the package docstring for what is modelled)."""

    def __init__(self, screen: tuple[int, int] = (1280, 720)) -> None:
        self.screen = screen
        self.fs: dict[str, bytes] = {}
        self.folders: set[str] = set(DEFAULT_FOLDERS)
        self.windows: list[dict[str, Any]] = []
        self.commands: list[Any] = []
        self.events: list[Any] = []
        self.pointer = (screen[0] // 2, screen[1] // 2)
        self._png_cache: dict[Any, bytes] = {}

    # ------------------------------------------------------------------ file system
    def _key(self, path: str) -> str | None:
        want = winpath(path).casefold()
        return next((k for k in self.fs if k.casefold() == want), None)

    def read_file(self, path: str) -> bytes | None:
        key = self._key(path)
        return self.fs[key] if key is not None else None

    def write_file(self, path: str, data: bytes | str) -> None:
        key = self._key(path) or winpath(path)
        self.fs[key] = data.encode("utf-8") if isinstance(data, str) else bytes(data)

    def folder_exists(self, path: str) -> bool:
        want = winpath(path).casefold()
        return any(f.casefold() == want for f in self.folders)

    def make_folder(self, path: str) -> None:
        path = winpath(path)
        while path and not self.folder_exists(path):
            self.folders.add(path)
            parent = ntpath.dirname(path)
            if parent == path:
                break
            path = parent

    def directory_tree(self, path: str) -> dict[str, Any]:
        """``/list_directory``'s tree: ``{type: "directory", name, children}`` with files as
        ``{type: "file", name}``, recursively (sorted; the real order is the file system's)."""
        root = winpath(path)
        prefix = root.casefold().rstrip("\\") + "\\"
        children: list[dict[str, Any]] = []
        for folder in sorted(self.folders, key=str.casefold):
            rest = folder[len(prefix):] if folder.casefold().startswith(prefix) else ""
            if rest and "\\" not in rest:
                children.append(self.directory_tree(folder))
        for name in sorted(self.fs, key=str.casefold):
            rest = name[len(prefix):] if name.casefold().startswith(prefix) else ""
            if rest and "\\" not in rest:
                children.append({"type": "file", "name": rest})
        return {"type": "directory", "name": ntpath.basename(root), "children": children}

    # ------------------------------------------------------------------ windows
    @property
    def focused(self) -> dict[str, Any] | None:
        return self.windows[-1] if self.windows else None

    def _open_window(self, window: dict[str, Any]) -> dict[str, Any]:
        self.windows.append(window)
        return window

    def _notepad(self, path: str | None = None) -> dict[str, Any]:
        text = ""
        if path:
            data = self.read_file(path)
            text = data.decode("utf-8", "replace") if data is not None else ""
            path = self._key(path) or winpath(path)
        title = f"{ntpath.basename(path)} - Notepad" if path else "Untitled - Notepad"
        return self._open_window({"kind": "notepad", "title": title, "text": text, "path": path, "selected": False})

    def _launch(self, command: list[str] | str) -> dict[str, Any] | None:
        """Open the window of a program this machine has; a program it lacks opens nothing."""
        argv = shlex.split(command, posix=False) if isinstance(command, str) else [str(a) for a in command]
        if not argv:
            raise ValueError("empty command")
        program = program_name(argv[0])
        args = [a.strip('"') for a in argv[1:]]
        if program == "notepad":
            return self._notepad(args[0] if args else None)
        if program == "explorer":
            folder = winpath(args[0]) if args else HOME
            return self._open_window({"kind": "explorer", "title": ntpath.basename(folder) or folder, "path": folder})
        if program in APP_TITLES:
            return self._open_window({"kind": "app", "title": APP_TITLES[program], "argv": argv,
                                      "class": WINDOW_CLASSES[program]})
        return None

    def _match_window(self, name: str, strict: bool) -> dict[str, Any] | None:
        window: dict[str, Any]  # mypy: reversed() of a list of dict[str, Any] matches two overloads, so Any
        for window in reversed(self.windows):
            if (window["title"] == name) if strict else (name.lower() in window["title"].lower()):
                return window
        return None

    # ------------------------------------------------------------------ keyboard model
    def _type(self, text: str) -> None:
        for ch in text:
            if ch == "\n":
                self._press("enter")
                continue
            window = self.focused
            if window is None:
                continue
            field = "text" if window["kind"] == "notepad" else "field" if "field" in window else None
            if field is None:
                continue
            if window.get("selected"):
                window[field] = ""
                window["selected"] = False
            window[field] += ch

    def _press(self, key: str) -> None:
        key = key.lower()
        self.events.append(("press", key))
        window = self.focused
        if key in ("win", "winleft", "winright"):
            if window is not None and window["kind"] == "start":
                self.windows.pop()
            else:
                self._open_window({"kind": "start", "title": "Start", "field": ""})
            return
        if window is None:
            return
        kind = window["kind"]
        if key in ("esc", "escape") and kind in ("start", "run", "save_as"):
            self.windows.remove(window)
        elif key in ("enter", "return"):
            if kind in ("start", "run"):
                self.windows.remove(window)
                if window["field"].strip():
                    self._launch(window["field"].strip())
            elif kind == "save_as":
                self._save_as(window)
            elif kind == "notepad":
                self._type_char(window, "\n")
        elif key == "tab" and kind == "notepad":
            self._type_char(window, "\t")
        elif key == "backspace":
            field = "text" if kind == "notepad" else "field" if "field" in window else None
            if field:
                window[field] = "" if window.get("selected") else window[field][:-1]
                window["selected"] = False

    def _type_char(self, window: dict[str, Any], ch: str) -> None:
        if window.get("selected"):
            window["text"] = ""
            window["selected"] = False
        window["text"] += ch

    def _hotkey(self, keys: list[str]) -> None:
        combo = tuple(k.lower() for k in keys)
        self.events.append(("hotkey", combo))
        mods, key = set(combo[:-1]), combo[-1]
        window = self.focused
        if mods == {"win"} and key == "r":
            self._open_window({"kind": "run", "title": "Run", "field": "", "selected": True})
        elif mods == {"alt"} and key == "f4":
            if window is not None:
                self.windows.remove(window)
        elif window is not None and window["kind"] == "notepad" and mods == {"ctrl"}:
            if key == "s":
                self._save(window)
            elif key == "a":
                window["selected"] = True
            elif key == "n":
                self._notepad()
        elif window is not None and window["kind"] == "notepad" and mods == {"ctrl", "shift"} and key == "s":
            self._open_save_as(window)
        elif len(combo) == 1:
            self._press(key)

    def _open_save_as(self, owner: dict[str, Any]) -> None:
        name = ntpath.basename(owner["path"]) if owner.get("path") else "*.txt"
        folder = ntpath.dirname(owner["path"]) if owner.get("path") else DOCUMENTS
        self._open_window({"kind": "save_as", "title": "Save As", "field": name, "selected": True,
                           "folder": folder, "owner": owner})

    def _save(self, window: dict[str, Any]) -> None:
        if window.get("path"):
            self.write_file(window["path"], window["text"])
        else:
            self._open_save_as(window)

    def _save_as(self, dialog: dict[str, Any]) -> None:
        name = dialog["field"].strip().strip('"')
        if not name or "*" in name:
            return
        path = (winpath(name) if re.match(r"^[A-Za-z]:[\\/]|^~|^%", name)
                else winpath(ntpath.join(dialog["folder"], name)))
        if "." not in ntpath.basename(path):
            path += ".txt"
        if not self.folder_exists(ntpath.dirname(path)):
            dialog["error"] = f"Path does not exist: {ntpath.dirname(path)}"
            return
        owner = dialog["owner"]
        self.windows.remove(dialog)
        owner["path"] = self._key(path) or path
        owner["title"] = f"{ntpath.basename(path)} - Notepad"
        self.write_file(path, owner["text"])

    # ------------------------------------------------------------------ pyautogui interpreter
    def run_pyautogui(self, code: str) -> str:
        """Interpret the whitelisted pyautogui subset; return stdout. Raise NotSimulated otherwise."""
        try:
            tree = ast.parse(code)
        except SyntaxError as exc:
            raise NotSimulated(f"SyntaxError: {exc}") from exc
        out: list[str] = []
        imported: set[str] = set()
        for stmt in tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in stmt.names] if isinstance(stmt, ast.Import) else [stmt.module or ""]
                if not set(names) <= {"pyautogui", "time"} or isinstance(stmt, ast.ImportFrom):
                    raise NotSimulated(f"import of {names} is not simulated")
                imported.update(names)
                continue
            used = {node.id for node in ast.walk(stmt) if isinstance(node, ast.Name)} & {"pyautogui", "time"}
            if used - imported:
                raise NotSimulated(f"name {min(used - imported)!r} is not defined")
            if isinstance(stmt, ast.Assign) and ast.unparse(stmt.targets[0]) == "pyautogui.FAILSAFE":
                continue
            if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
                raise NotSimulated(f"statement not simulated: {ast.unparse(stmt)}")
            call = stmt.value
            name = ast.unparse(call.func)
            if name == "print" and len(call.args) == 1 and ast.unparse(call.args[0]) == "pyautogui.position()":
                out.append(f"Point(x={self.pointer[0]}, y={self.pointer[1]})\n")
                continue
            try:
                args = [ast.literal_eval(a) for a in call.args]
                kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
            except ValueError as exc:
                raise NotSimulated(f"non-literal arguments in {ast.unparse(call)}") from exc
            self._call(name, args, kwargs)
        return "".join(out)

    def _call(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
        self.events.append((name, args, kwargs))
        if name in ("pyautogui.click", "pyautogui.doubleClick", "pyautogui.rightClick", "pyautogui.moveTo",
                    "pyautogui.dragTo", "pyautogui.mouseDown", "pyautogui.mouseUp"):
            if len(args) >= 2:
                self.pointer = (int(args[0]), int(args[1]))
            elif "x" in kwargs and "y" in kwargs:
                self.pointer = (int(kwargs["x"]), int(kwargs["y"]))
        elif name in ("pyautogui.typewrite", "pyautogui.write"):
            text = args[0] if args else kwargs.get("message", "")
            if isinstance(text, list):
                for key in text:
                    self._press(key)
            else:
                self._type(str(text))
        elif name == "pyautogui.press":
            keys = args[0] if args else kwargs.get("keys")
            for key in keys if isinstance(keys, list) else [keys]:
                for _ in range(int(kwargs.get("presses", 1))):
                    self._press(str(key))
        elif name == "pyautogui.hotkey":
            self._hotkey([str(k) for k in args])
        elif name in ("pyautogui.scroll", "pyautogui.hscroll", "pyautogui.vscroll", "time.sleep"):
            pass  # recorded in .events only
        else:
            raise NotSimulated(f"{name} is not simulated")


    def run_command(self, command: list[str] | str, shell: Any) -> dict[str, Any]:
        """What ``/execute`` replies for ``command``: ``{status, output, error, returncode}``.

        Raises :class:`MissingProgram` for a program this machine lacks when no shell is asked for
        (the real server then answers 500). Through a shell (cmd.exe on Windows) a missing program
        is cmd's "not recognized" error, returncode 1. ``python -c`` runs the pyautogui subset;
        Notepad, Explorer and the programs of ``APP_TITLES`` open their window and answer at once
        (the real server waits for them to exit, up to 120 s); ``cmd``, ``powershell`` and cmd's
        built-ins are recorded and succeed with no output (``echo`` prints its words).
        """
        self.commands.append(command)
        if shell:
            line = command if isinstance(command, str) else " ".join(str(a) for a in command)
            argv = shlex.split(line, posix=False)
        else:
            argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
        if not argv:
            if shell:
                return {"status": "success", "output": "", "error": "", "returncode": 0}
            raise IndexError("list index out of range")
        program = program_name(argv[0])
        if program not in PROGRAMS and not (shell and program in CMD_BUILTINS):
            if shell:
                return {"status": "success", "output": "", "returncode": 1,
                        "error": f"'{argv[0]}' is not recognized as an internal or external command,\r\n"
                                 "operable program or batch file.\r\n"}
            raise MissingProgram(MISSING_EXECUTABLE)
        if program in ("python", "python3", "pythonw"):
            if len(argv) < 3 or argv[1] != "-c":
                return {"status": "success", "output": "", "returncode": 1,
                        "error": "(fake) only `python -c <pyautogui code>` is simulated\n"}
            try:
                output = self.run_pyautogui(str(argv[2]))
            except (NotSimulated, KeyError, TypeError, ValueError) as exc:
                return {"status": "success", "output": "", "error": f"Traceback (fake):\n{exc}\n", "returncode": 1}
            return {"status": "success", "output": output, "error": "", "returncode": 0}
        if program in ("notepad", "explorer") or program in APP_TITLES:
            self._launch(argv)
        output = " ".join(argv[1:]) + "\r\n" if shell and program == "echo" else ""
        return {"status": "success", "output": output, "error": "", "returncode": 0}

    # ------------------------------------------------------------------ observation
    def screenshot(self) -> bytes:
        """A solid-colour PNG whose colour follows the windows and their text (no pixels are drawn)."""
        state = tuple((w["kind"], w["title"], len(w.get("text", "") or w.get("field", ""))) for w in self.windows)
        if state not in self._png_cache:
            digest = zlib.crc32(repr(state).encode())
            rgb = (digest & 0xFF, (digest >> 8) & 0xFF, (digest >> 16) & 0xFF)
            self._png_cache[state] = _png(self.screen[0], self.screen[1], rgb)
        return self._png_cache[state]

    def accessibility_xml(self) -> str:
        """The tree as upstream's server builds it on Windows: ``<desktop>`` (no attributes) holding
        one element per top-level window, tagged by its lower-cased class name, the foreground window
        ``st:active="true"`` (others ``"false"``; there is no ``st:focused``)."""
        w, h = self.screen
        decl = " ".join(f'xmlns:{p}="{u}"' for p, u in NS.items())
        parts = [f"<desktop {decl}>"]
        for i, window in enumerate(self.windows):
            active = "true" if i == len(self.windows) - 1 else "false"
            tag = class_tag(window.get("class") or WINDOW_CLASSES.get(window["kind"], "Window"))
            parts.append(f'<{tag} name={quoteattr(window["title"])} st:enabled="true" st:visible="true" '
                         f'st:active="{active}" cp:screencoord="(0, 0)" cp:size="({w}, {h})">')
            if window["kind"] == "notepad":
                parts.append(f'<edit name="Text Editor" val:value={quoteattr(window["text"])} st:enabled="true" '
                             f'st:visible="true" cp:screencoord="(0, 60)" cp:size="({w}, {h - 90})"/>')
            elif "field" in window:
                parts.append(f'<edit name="File name" val:value={quoteattr(window["field"])} st:enabled="true" '
                             f'st:visible="true" cp:screencoord="(100, 300)" cp:size="(400, 30)"/>')
            parts.append(f"</{tag}>")
        parts.append("</desktop>")
        return "".join(parts)

    # ------------------------------------------------------------------ opening
    def open_path(self, path: str) -> dict[str, Any]:
        """Open a folder in Explorer, a ``.txt`` in Notepad, anything else as a titled window."""
        if self.folder_exists(path):
            return self._open_window({"kind": "explorer", "title": ntpath.basename(winpath(path)),
                                      "path": winpath(path)})
        if self.read_file(path) is None:
            raise FileNotFoundError(path)
        if winpath(path).lower().endswith(".txt"):
            return self._notepad(path)
        return self._open_window({"kind": "app", "title": ntpath.basename(winpath(path)), "path": winpath(path)})
