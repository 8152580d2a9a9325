"""Holding SIGINT and SIGTERM back while something must finish (deleting a pool's VMs).

CI runners stop a job with SIGINT and then, seconds later, SIGTERM; people press Ctrl-C twice.
Either would raise KeyboardInterrupt in the middle of a deletion and leave VMs billing, so while
a deletion runs both signals only call ``on_signal`` (which says what is going on) and are not
re-raised afterwards: the run is ending anyway. SIGKILL cannot be held; the pool's tags and the
reaper cover that.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

HELD = (signal.SIGINT, signal.SIGTERM)
#: What ``signal.signal`` returns: a function, SIG_DFL/SIG_IGN, or None (not set from Python).
_Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


@contextmanager
def held_signals(on_signal: Callable[[int], None]) -> Iterator[list[int]]:
    """Within the block, SIGINT and SIGTERM call ``on_signal(signum)`` instead of interrupting.
    Yields the list of signals received. Outside the main thread (where handlers cannot be set)
    it changes nothing."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        with contextlib.suppress(Exception):  # a failing message must not break the deletion
            on_signal(signum)

    previous: dict[signal.Signals, _Handler] = {}
    try:
        for signum in HELD:
            previous[signum] = signal.signal(signum, handler)
        yield received
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old if old is not None else signal.SIG_DFL)
