"""The parts of OpenComputer's Docker image a grading sandbox reproduces: its user, its
environment and its Python packages.

Why: verifiers answer differently without them. OpenComputer's image runs commands as ``user``
(uid 1000) with ``DISPLAY=:0``, ``HOME=/home/user``, ``SHELL=/bin/bash``, ``LANG``/``LC_ALL``
``C.UTF-8`` and ``XDG_RUNTIME_DIR=/tmp/runtime-user``, and its ``python3`` has Pillow, openpyxl,
python-docx, python-pptx, pyautogui, pyperclip and python-xlib (the gimp verifier answers
"Pillow not installed" without them).

The packages come from an interpreter on the host that has them (the ``opencomputer``
extra puts them in the current one), bound read-only into the
sandbox at its own path and made the sandbox's ``python3``: commands run under ``bash -l``, whose
``/etc/profile`` resets ``PATH``, so the sandbox gets a read-only ``/usr/local/bin`` of its own
that holds the host's ``/usr/local/bin`` entries (as links) plus ``python3`` and ``python`` scripts
that ``exec`` that interpreter by its own path (a link would start a virtualenv's interpreter
without its packages). :func:`choose_python` picks it; ``system`` keeps the host's ``/usr/bin/python3``.
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from pytest_agentbench.extras import install_hint

#: The image's user id (``useradd -m user`` in OpenComputer's Dockerfile).
UID = 1000
#: The environment OpenComputer's Dockerfile sets (``ENV`` lines) that commands see.
ENV = {"DISPLAY": ":0", "HOME": "/home/user", "USER": "user", "SHELL": "/bin/bash", "LANG": "C.UTF-8",
       "LC_ALL": "C.UTF-8", "XDG_RUNTIME_DIR": "/tmp/runtime-user"}
#: Import names of the image's pip packages that verifiers use.
PACKAGES = ("PIL", "openpyxl", "docx", "pptx")
CHOICES = ("auto", "system", "current")
SYSTEM_PYTHON = "/usr/bin/python3"
LOCAL_BIN = "/usr/local/bin"
#: where the host's own /usr/local/bin stays reachable inside (the links of the sandbox's point there)
HIDDEN_LOCAL_BIN = "/opt/agentbench/usr-local-bin"


class ImageError(ValueError):
    """The interpreter asked for cannot serve as the image's ``python3``; the message says why."""


@dataclass(frozen=True)
class ImagePython:
    """The sandbox's ``python3``: ``executable`` (a host path, visible at the same path inside)
    and the read-only binds that make it so; no binds for the system interpreter."""

    executable: str
    binds: tuple[tuple[str, str], ...] = ()
    missing: tuple[str, ...] = field(default=())

    def describe(self) -> str:
        lacks = f" (without {', '.join(self.missing)})" if self.missing else ""
        return f"{self.executable}{lacks}"


def missing_packages(python: str | None = None) -> tuple[str, ...]:
    """Which of :data:`PACKAGES` ``python`` (the current interpreter by default) cannot import."""
    if python is None:
        return tuple(name for name in PACKAGES if importlib.util.find_spec(name) is None)
    code = ("import importlib.util, json, sys; "
            "print(json.dumps([n for n in sys.argv[1:] if importlib.util.find_spec(n) is None]))")
    try:
        done = subprocess.run([python, "-I", "-c", code, *PACKAGES], capture_output=True, text=True, timeout=60,
                              check=False)
        return tuple(json.loads(done.stdout)) if done.returncode == 0 else PACKAGES
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return PACKAGES


@functools.lru_cache(maxsize=8)
def _prefixes(python: str) -> tuple[str, ...]:
    code = "import json, os, sys; print(json.dumps([sys.prefix, sys.base_prefix, os.path.realpath(sys.executable)]))"
    done = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise ImageError(f"--opencomputer-python {python} does not run: {done.stderr.strip()[-200:]}")
    prefix, base, real = json.loads(done.stdout)
    return tuple(dict.fromkeys([prefix, base, str(Path(real).parent.parent)]))


_FARMS: list[str] = []


@functools.lru_cache(maxsize=8)
def _bin_farm(python: str) -> str:
    """A folder (removed at exit) holding links to the host's ``/usr/local/bin`` entries and
    ``python3``/``python`` scripts that start ``python``, bound read-only over the sandbox's ``/usr/local/bin``."""
    folder = tempfile.mkdtemp(prefix="agentbench-image-bin-")
    _FARMS.append(folder)
    local = Path(LOCAL_BIN)
    if local.is_dir():
        for entry in local.iterdir():
            if entry.name not in ("python3", "python"):
                os.symlink(f"{HIDDEN_LOCAL_BIN}/{entry.name}", Path(folder, entry.name))
    # A script, not a link: a virtualenv's interpreter finds its pyvenv.cfg next to the path it was
    # started by, so through a link in another folder it runs as the base interpreter and sees
    # none of the venv's packages. ``exec`` keeps one process (signals and exit codes unchanged).
    script = f"#!/bin/sh\nexec {shlex.quote(python)} \"$@\"\n"
    for name in ("python3", "python"):
        target = Path(folder, name)
        target.write_text(script, encoding="utf-8")
        target.chmod(0o755)
    os.chmod(folder, 0o755)
    return folder


@atexit.register
def _remove_farms() -> None:
    for folder in _FARMS:
        shutil.rmtree(folder, ignore_errors=True)


def _bound(python: str) -> ImagePython:
    binds = [(p, p) for p in _prefixes(python) if not (p == "/usr" or p.startswith("/usr/")) and Path(p).is_dir()]
    if Path(LOCAL_BIN).is_dir():
        binds.append((LOCAL_BIN, HIDDEN_LOCAL_BIN))
    binds.append((_bin_farm(python), LOCAL_BIN))
    return ImagePython(python, tuple(binds), missing_packages(None if python == sys.executable else python))


def choose_python(choice: str) -> ImagePython:
    """``auto``: the current interpreter when it has the image's packages, else the system's;
    ``system``: ``/usr/bin/python3``; ``current``: the current interpreter (``ImageError`` without
    the packages); else a path to an interpreter that has them."""
    if choice == "system":
        return ImagePython(SYSTEM_PYTHON, (), ())
    if choice in ("auto", "current"):
        missing = missing_packages()
        if not missing:
            return _bound(sys.executable)
        if choice == "current":
            raise ImageError(f"--opencomputer-python current: {sys.executable} lacks {', '.join(missing)}; "
                             f"install them with {install_hint('opencomputer')}")
        return ImagePython(SYSTEM_PYTHON, (), missing_packages(SYSTEM_PYTHON))
    path = Path(choice).expanduser()
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise ImageError(f"--opencomputer-python {choice}: not an executable file (use auto, system, current "
                         "or the path of a Python interpreter)")
    missing = missing_packages(str(path))
    if missing:
        raise ImageError(f"--opencomputer-python {choice} lacks {', '.join(missing)}; install them into it with "
                         f"{install_hint('opencomputer', pip=f'{choice} -m pip')}")
    return _bound(str(path.absolute()))
