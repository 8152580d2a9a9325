"""The phases of a benchmark item, whose fault a failure in each is, and a note of the phase a
worker process is in that outlives the worker.

An episode's faults are typed by the phase they happen in (``episode.py``): the agent's ``act``
is the agent's, the environment's ``reset`` and ``step`` are infrastructure, the checker's is
evaluation. A worker process that dies (an agent calling ``os._exit``, a SIGKILL, the kernel's
out-of-memory killer) raises nothing, so the phase is kept outside it: each xdist worker writes
where it is to a small file of its own (one ``pwrite``, no flush: the kernel keeps what a killed
process wrote), and the controller reads it when xdist reports the worker's crash. Without a
note for the crashed item, or after its episode ended, the plugin cannot tell whose fault the
crash is and follows pytest, which reports the item failed.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Per phase: the error type of a fault in it, and the words saying what was running.
PHASES: dict[str, tuple[str, str]] = {
    "setup": ("infrastructure", "while its fixtures were set up and its environment connected"),
    "reset": ("infrastructure", "while the environment reset"),
    "act": ("agent", "while the agent was acting"),
    "step": ("infrastructure", "while the environment ran a step"),
    "evaluate": ("evaluation", "while the checker ran"),
}

#: The phase noted once the episode has ended: a crash after it is not told apart.
ENDED = "ended"

#: At most this much of a note is read (a phase and a node id).
_NOTE_LIMIT = 8192


class PhaseNote:
    """The phase file of one worker process: rewritten in place at every phase change."""

    def __init__(self, path: Path) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        self._fd: int | None = os.open(path, flags, 0o600)

    def write(self, nodeid: str, phase: str, agent: str = "") -> None:
        """``phase`` of item ``nodeid`` as a line at the start of the file, and the name of the
        agent playing it as a second line (a conftest's agent is known only in the worker, so a
        crash record could not name it otherwise). What follows, left from a longer earlier note,
        is never read."""
        if self._fd is not None:
            agent = " ".join(agent.split())[:200]
            os.pwrite(self._fd, f"{phase} {nodeid}\n{agent}\n".encode(errors="replace"), 0)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def read_phase(path: Path, nodeid: str) -> str | None:
    """The phase the note at ``path`` gives for ``nodeid``; None when there is no note, or it is
    about another item (the crash came before this item's setup), or unreadable."""
    note = read_note(path, nodeid)
    return note[0] if note is not None else None


def read_note(path: Path, nodeid: str) -> tuple[str, str | None] | None:
    """The phase and the agent's name (None when not noted) the note at ``path`` gives for
    ``nodeid``; None as for :func:`read_phase`."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        data = os.read(fd, _NOTE_LIMIT)
    except OSError:
        return None
    finally:
        os.close(fd)
    line, newline, rest = data.decode(errors="replace").partition("\n")
    phase, _, noted = line.partition(" ")
    if not newline or noted != nodeid:
        return None
    agent, complete, _ = rest.partition("\n")
    return phase, (agent or None) if complete else None


def crash_cause(phase: str | None) -> tuple[str, str]:
    """The error type of an item whose process died in ``phase``, and the words saying where.
    A phase that names no fault (none noted, or the episode had ended) is the agent's failure,
    as pytest reports the item failed: the plugin follows it when it cannot tell."""
    known = PHASES.get(phase or "")
    if known is not None:
        return known
    where = "after its episode ended" if phase == ENDED else "before its setup began"
    return "agent", f"{where}, where the plugin cannot tell whose fault it is (counted as the failure pytest reports)"
