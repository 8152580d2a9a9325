"""An episode's deadline, without pytest: how long one episode may take, and the alarm that stops
a call that blocks past it.

The episode loop checks the deadline before every action; a call that blocks (an agent waiting on
a model, an environment that hangs) is interrupted by ``SIGALRM`` where that exists and the episode
plays on the main thread (pytest's, and each xdist worker's). Elsewhere (Windows, a thread) only
the check between actions applies.
"""

from __future__ import annotations

import signal
import threading
import time
from types import FrameType
from typing import Any


class DeadlinePassed(BaseException):
    """Raised into the episode when its deadline passes. A ``BaseException``, as pytest-timeout's
    own, so that an agent's ``except Exception`` around its model call does not swallow it."""

    def __init__(self, deadline: Deadline) -> None:
        super().__init__(deadline.text)
        self.deadline = deadline


class Deadline:
    """``seconds`` from now; ``source`` says who set it (shown in the failure)."""

    def __init__(self, seconds: float, source: str) -> None:
        self.seconds = float(seconds)
        self.source = source
        self.ends = time.monotonic() + self.seconds

    @property
    def text(self) -> str:
        return f"task timeout: {self.seconds:g} s ({self.source}) ran out"

    def left(self) -> float:
        return self.ends - time.monotonic()

    def check(self) -> None:
        if self.left() <= 0:
            raise DeadlinePassed(self)


class Alarm:
    """Raises :class:`DeadlinePassed` in the episode when ``deadline`` passes, even inside a
    blocking call; armed from construction to :meth:`stop`. Without ``SIGALRM`` on this thread it
    does nothing (the loop's own check remains). An interval timer armed before (another tool's
    alarm) still fires at its own time, through its own handler, when that comes first, and is
    re-armed for what is left of it after."""

    def __init__(self, deadline: Deadline) -> None:
        self.deadline = deadline
        self.armed = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
        if not self.armed:
            return
        self._stopped = False
        self._previous: Any = signal.getsignal(signal.SIGALRM)
        delay, self._old_interval = signal.getitimer(signal.ITIMER_REAL)
        self._old_ends: float | None = time.monotonic() + delay if delay else None
        signal.signal(signal.SIGALRM, self._fire)
        first = max(deadline.left(), 1e-3)
        signal.setitimer(signal.ITIMER_REAL, min(first, delay) if delay else first)

    def _fire(self, signum: int, frame: FrameType | None) -> None:
        if self._stopped:
            return
        left = self.deadline.left()
        if left <= 0:
            raise DeadlinePassed(self.deadline)
        signal.setitimer(signal.ITIMER_REAL, left)  # the other, earlier alarm fired: ours stays armed
        if self._old_ends is not None and time.monotonic() >= self._old_ends:
            self._old_ends = None
            if callable(self._previous):
                self._previous(signum, frame)

    def stop(self) -> None:
        """Disarm, and give back the handler and any timer that was armed before."""
        if not self.armed or self._stopped:
            return
        self._stopped = True
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self._previous)
        if self._old_ends is not None:
            signal.setitimer(signal.ITIMER_REAL, max(self._old_ends - time.monotonic(), 1e-3), self._old_interval)
