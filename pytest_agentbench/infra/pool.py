"""Host pools, leased one host per pytest process (one per xdist worker).

The pool lives on the controller: ``lease`` pops a host from the free list when a worker starts
(a replacement worker gets the next free host, not its predecessor's id), ``release`` puts it back
when the worker goes down. Leases are plain dicts so they travel to workers in ``workerinput``.

Only the ``static`` provider exists so far: a list of already-running WAA servers. Cloud
providers that create and delete VMs plug in here later.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from pytest_agentbench.values import url

Lease = dict[str, Any]


def parse_hosts(entries: list[str], cdp_port: int = 9222) -> list[Lease]:
    """``URL`` or ``URL|EVALUATE_URL`` entries, comma-separated or repeated, into leases. Each host's
    Chrome DevTools endpoint is ``cdp_port`` on the server's host (``--pool-cdp-port``)."""
    hosts: list[Lease] = []
    for text in entries:
        for entry in str(text).split(","):
            entry = entry.strip()
            if not entry:
                continue
            server, _, evaluate = entry.partition("|")
            if not server.startswith(("http://", "https://")):
                raise ValueError(f"--pool-hosts entry {entry!r} must be a URL such as http://10.0.0.5:5000")
            server_url = url("--pool-hosts entry", server)
            host = urlsplit(server_url).hostname or "localhost"
            hosts.append({"name": f"host{len(hosts)}", "server_url": server_url,
                          "evaluate_url": url("--pool-hosts evaluate URL", evaluate) if evaluate.strip() else None,
                          "cdp_url": f"http://{host}:{cdp_port}"})
    return hosts


@dataclass
class StaticPool:
    hosts: list[Lease]
    free: list[Lease] = field(default_factory=list)
    leased: dict[str, Lease] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.free = list(self.hosts)

    def lease(self, holder: str) -> Lease | None:
        if holder in self.leased:
            return self.leased[holder]
        if not self.free:
            return None
        lease = self.free.pop(0)
        self.leased[holder] = lease
        return lease

    def release(self, holder: str) -> None:
        lease = self.leased.pop(holder, None)
        if lease is not None:
            self.free.append(lease)
