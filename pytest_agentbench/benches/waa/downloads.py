"""Fetching a task's ``download`` files on the harness host, without trusting the task file.

A WAA task's ``download`` step names URLs that the harness fetches and then uploads into the VM.
Task files come from wherever the user got them, so a URL may point anywhere: at a cloud metadata
address, at a service on the harness's loopback, at a private network, through redirects. The
fetch therefore:

* takes only ``http`` and ``https`` URLs;
* resolves the host and refuses it when any address is loopback, private, link-local, multicast,
  reserved or unspecified, unless the user allowed that host (``--waa-download-allow HOST``);
* follows at most :data:`MAX_REDIRECTS` redirects, checking each hop the same way;
* stops at ``max_bytes`` (``--waa-download-max-mb``) and at the timeout.

Upstream retries a failed download three times and then raises; so does :func:`fetch`.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from urllib.parse import urljoin, urlsplit

import httpx

MAX_REDIRECTS = 5
ATTEMPTS = 3
DEFAULT_MAX_BYTES = 512 * 1024 * 1024


class DownloadRefused(ValueError):
    """The URL is not one the harness fetches on a task's behalf. The message is one line."""


Resolver = Callable[[str], Iterable[str]]


def _resolve(host: str) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise DownloadRefused(f"cannot resolve {host!r}: {exc}") from None
    return sorted({str(info[4][0]) for info in infos})


def _is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not (ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_reserved
                or ip.is_unspecified)


def check_url(url: str, allow: frozenset[str] = frozenset(), resolve: Resolver = _resolve) -> None:
    """Raise DownloadRefused unless ``url`` is http(s) to a public host (or an allowed one)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise DownloadRefused(f"download URL {url!r}: only http and https are fetched")
    host = (parts.hostname or "").lower()
    if not host:
        raise DownloadRefused(f"download URL {url!r} has no host")
    if host in allow:
        return
    for address in resolve(host):
        if not _is_public(address):
            raise DownloadRefused(
                f"download URL {url!r}: {host} resolves to {address}, a non-public address; a task file may not "
                f"make the harness fetch it (allow the host with --waa-download-allow {host})")


def fetch(http: httpx.Client, url: str, *, allow: frozenset[str] = frozenset(), max_bytes: int = DEFAULT_MAX_BYTES,
          timeout: float = 120.0, resolve: Resolver = _resolve,
          sleep: Callable[[float], None] | None = None) -> bytes:
    """GET ``url`` under the rules above; raise DownloadRefused, or OSError after ``ATTEMPTS`` tries."""
    last = ""
    for attempt in range(ATTEMPTS):
        if attempt and sleep is not None:
            sleep(1.0)
        try:
            return _fetch_once(http, url, allow, max_bytes, timeout, resolve)
        except (httpx.HTTPError, OSError) as exc:
            last = f"{type(exc).__name__}: {exc}"
    raise OSError(f"download of {url} failed after {ATTEMPTS} attempts: {last}")


def _fetch_once(http: httpx.Client, url: str, allow: frozenset[str], max_bytes: int, timeout: float,
                resolve: Resolver) -> bytes:
    current = url
    for _ in range(MAX_REDIRECTS + 1):
        check_url(current, allow, resolve)
        with http.stream("GET", current, timeout=timeout, follow_redirects=False) as response:
            if response.is_redirect:
                location = response.headers.get("location")
                if not location:
                    raise OSError(f"{current}: redirect without a Location")
                current = urljoin(current, location)
                continue
            if response.status_code != 200:
                raise OSError(f"{current}: HTTP {response.status_code}")
            declared = response.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > max_bytes:
                raise DownloadRefused(f"download {url}: {int(declared)} bytes is over the {max_bytes}-byte cap "
                                      "(--waa-download-max-mb)")
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > max_bytes:
                    raise DownloadRefused(f"download {url}: more than the {max_bytes}-byte cap (--waa-download-max-mb)")
                chunks.append(chunk)
            return b"".join(chunks)
    raise DownloadRefused(f"download {url}: more than {MAX_REDIRECTS} redirects")
