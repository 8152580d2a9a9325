"""A fake of the WAA server (the Flask server in the Windows VM), for trying agents offline.

``FakeWAAServer`` is a real HTTP server on 127.0.0.1 that answers WAA's endpoints over a simulated
Windows machine. It is a convenience, not evidence: the protocol is tested against upstream's real
server (``tests/test_waa_real_server.py``, run on a Linux desktop), and where the two were compared
the fake copies what the real one does. Parts: ``desktop`` (the simulated machine), ``handler``
(routes and reply conventions), ``evaluate`` (the reference tool's evaluate server, opt-in),
``server`` (the HTTP lifecycle).

What it models as the real server behaves:

* **Error conventions.** Unknown routes and wrong methods are HTTP 500 JSON
  ``{"status": "error", "message": "404 Not Found: ..."}`` / ``"405 Method Not Allowed: ..."``;
  other failures are 500 ``{"status": "error", "message": ...}``; a JSON route without a JSON body
  is a 500 "415 Unsupported Media Type", bad JSON a 500 "400 Bad Request".
* **Commands** (``/execute``, ``/setup/execute``): ``{status, output, error, returncode}``. A program
  the machine does not have is a 500 (Python's "[WinError 2] The system cannot find the file
  specified") without a shell, and cmd's "is not recognized" with returncode 1 through one. The
  machine has ``python`` (``-c`` with a pyautogui subset, below), ``notepad``, ``explorer``, the
  programs of ``APP_TITLES``, ``cmd``, ``powershell`` and cmd's built-ins. ``/setup/launch`` is 200
  for any command, as upstream's (it forces a shell and does not wait); only known programs open a
  window. ``/execute_windows`` runs the same pyautogui subset (upstream runs any Python with its
  ``computer`` object); printed output mentioning "error" fails it, as upstream's does.
* **Files** (``.fs``: Windows path -> bytes, case-insensitive, ``/`` or ``\\``, ``~`` is
  ``C:\\Users\\Docker``; ``.folders``, the user folders exist at start). ``/setup/upload`` into a
  folder that does not exist is a 500 (Flask never creates folders); ``/setup/open_file`` of a
  missing file is a 404 text; ``/file`` is an attachment or 404 ``{"error": "File not found"}``.
  Getters with upstream's reply shapes: ``/list_directory`` (``{"directory_tree": ...}``),
  ``/file_exists``, ``/folder_exists``, ``/desktop_path``, ``/documents_path``, ``/platform``
  (``Windows``), ``/screen_size``, ``/wallpaper`` (the machine has none: upstream's 404 abort, a 500).
* **Windows setup steps**: ``/setup/activate_window`` and ``/setup/close_window`` as upstream's
  Windows branch has them: a title-substring match in any case, topmost first; activation moves a
  window to the front only with ``strict``; ``close_window`` with ``strict`` never matches; ``by_class``
  is a 500.
* **Accessibility tree** (``/accessibility``): Windows' shape, ``<desktop>`` holding one element per
  top-level window tagged by its lower-cased class name (``<notepad>``), the foreground window
  ``st:active="true"`` (never ``st:focused``), upstream's namespace URIs.

What it simulates, and how far:

* **Windows** (``.windows``: dicts ``{kind, title, ...}``, the last one in the foreground): Notepad,
  Explorer, Run (Win+R), Start (Win), Save As, and titled windows of other known programs.
* **Keyboard** through pyautogui code (``python -c`` or ``/execute_windows``), a whitelisted subset
  read with ``ast`` (literal arguments, names imported first): ``click/doubleClick/rightClick/moveTo/
  dragTo/mouseDown/mouseUp`` (move the pointer; clicks do not change focus), ``typewrite/write``,
  ``press``, ``hotkey``, ``scroll/hscroll/vscroll`` and ``time.sleep`` (recorded, not slept) and
  ``print(pyautogui.position())``. Other code fails with returncode 1. Win opens Start, Win+R Run;
  a program name and Enter launch it. In Notepad typing edits the buffer, Ctrl+A selects all, Ctrl+S
  saves (Save As for a new file), Ctrl+Shift+S is Save As, Ctrl+N a new Notepad. In Save As Enter
  saves to the typed path (relative to Documents, ``.txt`` added; the folder must exist). Esc closes
  dialogs, Alt+F4 the foreground window.
* ``/screenshot`` is a solid-colour PNG whose colour follows the state.

Not modelled: real applications other than Notepad, mouse-driven UI, Chrome/CDP, window geometry
(every window fills the screen), the real tree's content (pywinauto's attributes beyond name,
enabled, visible, active, position, size and Notepad's text), the real server waiting for a GUI
program run through ``/execute`` (up to 120 s: the fake answers at once), the win32 backend's tree
(both backends get the one tree), and HEAD/OPTIONS requests. The text of a missing program's
error is Python's on Windows; it was not observed (the real tier runs on Linux).

``FakeWAAServer(evaluate=True)`` also serves ``POST /evaluate``, standing for the reference tool's
separate evaluate server (see ``evaluate``): the real WAA server has no such route.
"""

from __future__ import annotations

from pytest_agentbench.testing.waa_server.desktop import (
    APP_TITLES,
    DOCUMENTS,
    DOWNLOADS,
    HOME,
    NS,
    SimulatedDesktop,
    winpath,
)
from pytest_agentbench.testing.waa_server.evaluate import ReferenceEvaluator
from pytest_agentbench.testing.waa_server.server import FakeWAAServer

__all__ = ["APP_TITLES", "DOCUMENTS", "DOWNLOADS", "HOME", "NS", "FakeWAAServer", "ReferenceEvaluator",
           "SimulatedDesktop", "winpath"]
