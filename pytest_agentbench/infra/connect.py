"""One process's way to its leased VM: the WAA server, evaluate server and Chrome DevTools URLs
(the ``server_url``, ``evaluate_url`` and ``cdp_url`` of :meth:`VMConnection.open`), through an SSH tunnel
(the default) or straight to the VM's address (``--pool-connect direct``, for a harness inside
the VM's network).

A VM that was just created may not accept SSH for a minute or two: the tunnel is retried until
the lease's ready timeout. A conftest (or plugin) can choose the endpoints itself with the
``pytest_agentbench_vm_endpoints`` hook (a bastion, a VPN address, a test double); then no tunnel
is opened here.
"""

from __future__ import annotations

import time
from typing import Any

from pytest_agentbench.benchmark import InfrastructureError


class VMConnection:
    """Opened once per process; ``open`` returns ``{"server_url", "evaluate_url", "cdp_url"}``."""

    def __init__(self, lease: dict[str, Any], endpoints: dict[str, str] | None = None) -> None:
        self.lease = lease
        self.vm = lease["vm"]
        self._endpoints = endpoints
        self._tunnel: Any = None
        self.deadline = time.monotonic() + float(lease.get("ready_timeout") or 0)

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def address(self) -> str:
        """The VM's address this process connects to (``--pool-address``)."""
        vm = self.vm
        if self.lease.get("address") == "private":
            address = vm.get("private_ip") or vm.get("public_ip")
        else:
            address = vm.get("public_ip") or vm.get("private_ip")
        if not address:
            raise InfrastructureError(f"VM {vm['name']} has no IP address; check it in the {vm['provider']} console")
        return str(address)

    def open(self) -> dict[str, str | None]:
        if self._endpoints:
            return {"server_url": self._endpoints["server_url"], "evaluate_url": self._endpoints.get("evaluate_url"),
                    "cdp_url": self._endpoints.get("cdp_url")}
        waa, evaluate = int(self.lease["waa_port"]), int(self.lease["evaluate_port"])
        cdp = int(self.lease.get("cdp_port") or 9222)
        if self.lease.get("connect") == "direct":
            host = self.address()
            return {"server_url": f"http://{host}:{waa}", "evaluate_url": f"http://{host}:{evaluate}",
                    "cdp_url": f"http://{host}:{cdp}"}
        return self._open_tunnel(waa, evaluate, cdp)

    def _open_tunnel(self, waa: int, evaluate: int, cdp: int) -> dict[str, str | None]:
        from pytest_agentbench.infra.tunnel import SSHTunnel, TunnelError

        host = self.address()
        last = ""
        while True:
            port = int((self.vm.get("extra") or {}).get("ssh_port", 22))
            tunnel = SSHTunnel(host, port, self.vm["ssh_user"], key_filename=self.lease["ssh_key"],
                               host_key=self.vm.get("host_key"),
                               forwards=[(0, "127.0.0.1", port) for port in dict.fromkeys((waa, evaluate, cdp))],
                               connect_timeout=min(10.0, max(1.0, self.remaining())))
            try:
                tunnel.start()
            except TunnelError as exc:
                last = str(exc)
                if self.remaining() <= 0:
                    raise InfrastructureError(f"VM {self.vm['name']}: no SSH tunnel within the ready timeout: "
                                              f"{last}") from None
                time.sleep(min(5.0, self.remaining()))
                continue
            self._tunnel = tunnel
            return {"server_url": tunnel.local_url(waa), "evaluate_url": tunnel.local_url(evaluate),
                    "cdp_url": tunnel.local_url(cdp)}

    def close(self) -> None:
        tunnel, self._tunnel = self._tunnel, None
        if tunnel is not None:
            tunnel.stop()
