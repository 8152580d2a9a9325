"""Spending caps: ``--bench-max-cost-usd`` for the run and ``--bench-max-cost-usd-per-task`` for each task.

The runner checks the budget before every ``act`` (and agents that call their model more than
once per ``act`` check before each call), and charges each step's reported cost after it. Two
things can run out:

* **the task's cap**: the episode ends as an agent error ("per-task budget spent"), like a step
  limit: the agent could not finish within what it was allowed;
* **the run's cap**: the current episode ends not evaluated and every later item is skipped with
  "budget spent", so a cap never turns into failures that were not the agent's.

Under xdist every worker charges the same ledger file in the run folder (one line per charge,
appended with O_APPEND), so the run's cap holds across workers.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path


class BudgetSpent(Exception):
    """Raised by :meth:`Budget.check`; ``scope`` is "run" or "task"."""

    def __init__(self, scope: str, message: str) -> None:
        super().__init__(message)
        self.scope = scope
        self.error_type = "agent"


def _usd(value: float) -> str:
    return f"${value:.2f}" if value >= 0.01 or value == 0 else f"${value:.4f}"


class Budget:
    def __init__(self, run_limit: float | None = None, task_limit: float | None = None,
                 ledger: Path | None = None) -> None:
        self.run_limit = run_limit
        self.task_limit = task_limit
        self.ledger = ledger
        self.task_spent = 0.0
        self._local = 0.0  # without a ledger
        self._lock = threading.Lock()
        self._cache_size = -1
        self._cache_total = 0.0

    @property
    def active(self) -> bool:
        return self.run_limit is not None or self.task_limit is not None

    def start_task(self) -> None:
        self.task_spent = 0.0

    @property
    def run_spent(self) -> float:
        """What the whole run has spent (all workers)."""
        if self.ledger is None:
            return self._local
        with self._lock:
            try:
                size = self.ledger.stat().st_size
            except FileNotFoundError:
                return 0.0
            if size != self._cache_size:
                text = self.ledger.read_text(encoding="ascii")
                self._cache_total = sum(float(line) for line in text.split() if line)
                self._cache_size = size
            return self._cache_total

    def run_exhausted(self) -> bool:
        return self.run_limit is not None and self.run_spent >= self.run_limit

    def run_message(self) -> str:
        return (f"budget spent: the run's --bench-max-cost-usd {_usd(self.run_limit or 0)} is spent "
                f"({_usd(self.run_spent)})")

    def check(self, pending: float = 0.0) -> None:
        """Raise :class:`BudgetSpent` if the next model call may not be made. ``pending`` is cost
        an agent has incurred in this step but not reported yet."""
        if self.run_limit is not None and self.run_spent + pending >= self.run_limit:
            raise BudgetSpent("run", self.run_message())
        if self.task_limit is not None and self.task_spent + pending >= self.task_limit:
            raise BudgetSpent("task", f"per-task budget spent: --bench-max-cost-usd-per-task {_usd(self.task_limit)} "
                                      f"reached ({_usd(self.task_spent + pending)})")

    def charge(self, usd: float) -> None:
        if usd <= 0:
            return
        self.task_spent += usd
        if self.ledger is None:
            self._local += usd
            return
        line = f"{usd:.10f}\n".encode("ascii")
        fd = os.open(self.ledger, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line)  # one small write with O_APPEND: whole lines, whatever the workers do
        finally:
            os.close(fd)
