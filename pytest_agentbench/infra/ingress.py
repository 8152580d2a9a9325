"""Who may reach a cloud pool's VMs on port 22: ``--pool-ssh-cidr``, else this machine's public
address as a single-host block (``/32``, or ``/128`` for IPv6).

The VMs accept keys only, but an SSH port open to the whole internet is scanned within minutes
and needlessly exposes sshd; so the default is the one address the harness connects from. That
address is what the internet sees, not a local interface's, so it is asked of an address echo
service (``DEFAULT_ECHO_URL``, which answers with the caller's address as plain text; the
environment variable ``AGENTBENCH_ADDRESS_ECHO_URL`` names another). When the service cannot be
reached or answers nonsense, the run stops with a usage error asking for ``--pool-ssh-cidr``;
the block is never widened silently.
"""

from __future__ import annotations

import ipaddress
import os

DEFAULT_ECHO_URL = "https://checkip.amazonaws.com"
ECHO_URL_ENV = "AGENTBENCH_ADDRESS_ECHO_URL"
#: The echo service's answer is untrusted: an address is a few dozen bytes.
MAX_ANSWER = 256


class IngressError(RuntimeError):
    """The public address could not be learned; one line naming the fix."""


def echo_url() -> str:
    return os.environ.get(ECHO_URL_ENV, "").strip() or DEFAULT_ECHO_URL


def public_cidr(timeout: float = 10.0) -> str:
    """This machine's public address as a one-host CIDR block, from the echo service."""
    import httpx

    url = echo_url()
    fix = "give --pool-ssh-cidr with your public address (e.g. 203.0.113.7/32) or your network's block"
    try:
        with httpx.stream("GET", url, timeout=timeout, follow_redirects=False) as response:
            response.raise_for_status()
            body = b""
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_ANSWER:
                    break
    except httpx.HTTPError as exc:
        raise IngressError(f"could not learn this machine's public address from {url} "
                           f"({type(exc).__name__}); {fix}") from None
    text = body[:MAX_ANSWER].decode("ascii", "replace").strip()
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise IngressError(f"{url} did not answer with an IP address (got {text[:40]!r}); {fix}") from None
    if not address.is_global:
        raise IngressError(f"{url} answered {address}, which is not a public address; {fix}")
    return f"{address}/{address.max_prefixlen}"
