"""Running a worker script in another interpreter, bounded in time, and killing all it started.

The AppWorld adapter and the WAA scorer both run code that must not enter the pytest process in
the interpreter that has its dependencies. Both need the same three things: start it in a session
of its own (so a kill reaches every process it started), wait at most ``timeout`` seconds while
keeping its stderr for the error message, and on a timeout or an interrupt kill the whole group.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence


class WorkerTimeout(Exception):
    """The worker did not finish in time; it and everything it started were killed."""

    def __init__(self, timeout: float, stderr: str) -> None:
        super().__init__(f"did not finish within {timeout:g}s")
        self.timeout = timeout
        self.stderr = stderr


def run_worker(argv: Sequence[str], *, cwd: str, env: Mapping[str, str], timeout: float) -> tuple[int, str]:
    """Run ``argv`` with stdout discarded; return ``(returncode, stderr)``. Raises OSError when it
    cannot start and :class:`WorkerTimeout` after ``timeout`` seconds."""
    proc = subprocess.Popen(list(argv), cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace",
                            start_new_session=(os.name == "posix"))
    try:
        _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise WorkerTimeout(timeout, _drain(proc)) from None
    except BaseException:
        kill_group(proc)
        raise
    return proc.returncode, stderr or ""


def kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the worker's session (it and what it started), or the worker alone off POSIX."""
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _drain(proc: subprocess.Popen[str]) -> str:
    try:
        _, stderr = proc.communicate(timeout=5)
    except (subprocess.TimeoutExpired, ValueError):
        return ""
    return stderr or ""
