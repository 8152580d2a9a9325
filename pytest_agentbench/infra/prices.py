"""VM prices and cost arithmetic for pools: the price of the size actually created, never a
default rate for another size.

``HOURLY_USD`` holds public on-demand Linux list prices (USD per hour) for the sizes a WAA pool
uses, in the default regions (AWS us-east-1, Azure eastus). Prices differ by region, change over
time and are lower under discounts, so ``--pool-hourly-usd`` overrides them; a size not in the
table has no price, and the cost is then reported as unknown rather than guessed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: (provider, size) -> USD per hour, on-demand Linux, us-east-1 / eastus list prices.
HOURLY_USD: dict[tuple[str, str], float] = {
    ("aws", "m8i.2xlarge"): 0.42336,
    ("aws", "m8i.4xlarge"): 0.84672,
    ("aws", "m7i.2xlarge"): 0.4032,
    ("aws", "m5.2xlarge"): 0.384,
    ("aws", "m5.metal"): 4.608,
    ("azure", "Standard_D8ds_v5"): 0.452,
    ("azure", "Standard_D8s_v5"): 0.384,
    ("azure", "Standard_D8ds_v4"): 0.452,
    ("azure", "Standard_D8as_v5"): 0.344,
    ("azure", "Standard_D4s_v5"): 0.192,
}

#: What the dry-run estimate assumes unless told otherwise (both are options).
DEFAULT_MINUTES_PER_TASK = 3.0
#: Per VM: boot, Windows guest start and WAA readiness before the first task.
BOOT_HOURS_PER_VM = 0.25


def hourly_price(provider: str, size: str, override: float | None = None) -> float | None:
    """The hourly price for ``size`` on ``provider`` (``override`` wins); None when unknown."""
    if override is not None:
        return float(override)
    return HOURLY_USD.get((provider, size))


@dataclass(frozen=True)
class Estimate:
    tasks: int
    workers: int
    minutes_per_task: float
    vm_hours: float
    hourly_usd: float | None

    @property
    def vm_usd(self) -> float | None:
        return None if self.hourly_usd is None else self.vm_hours * self.hourly_usd


def estimate(tasks: int, workers: int, hourly_usd: float | None,
             minutes_per_task: float = DEFAULT_MINUTES_PER_TASK,
             boot_hours: float = BOOT_HOURS_PER_VM) -> Estimate:
    """VM-hours for ``tasks`` spread over ``workers`` VMs: each VM runs its share of the tasks
    plus ``boot_hours``, and every VM bills until the last one finishes."""
    workers = max(1, workers)
    share = -(-tasks // workers) if tasks else 0  # the busiest VM's task count
    vm_hours = workers * (share * minutes_per_task / 60.0 + boot_hours)
    return Estimate(tasks, workers, minutes_per_task, vm_hours, hourly_usd)


def vm_hours(vms: Iterable[Any], now: float | None = None) -> float:
    """Billed hours so far of VMs with ``created_at`` / ``deleted_at`` (epoch seconds)."""
    now = time.time() if now is None else now
    total = 0.0
    for vm in vms:
        if not vm.created_at:
            continue
        end = vm.deleted_at or now
        total += max(0.0, end - vm.created_at) / 3600.0
    return total


def money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.2f}"
