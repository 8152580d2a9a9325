"""Checks of the values users give on the command line and in ini files: whole numbers and
numbers in a range, rates, dollar amounts, ports, URLs, CIDR blocks, AWS subnet ids and run names.

Each check returns the value in its normal form or raises ``ValueError`` with one line naming the
option, the bad value and what a good one looks like. ``options.py`` turns them into argparse
types (command line) and runs them over the ini keys at configure time, so a bad value stops a run
before anything starts; library code (the static pool's host list) calls them directly.
"""

from __future__ import annotations

import ipaddress
import math
import re
import urllib.parse

_SUBNET = re.compile(r"subnet-[0-9a-f]{8}(?:[0-9a-f]{9})?")
#: The longest run name: it is a folder name, and shown in every report.
MAX_RUN_NAME = 100


def number(flag: str, text: str, *, low: float, high: float, low_open: bool = False, zero: bool = False,
           unit: str = "") -> float:
    """A finite number in ``[low, high]`` (``(low, high]`` when ``low_open``; also 0 when ``zero``)."""
    try:
        value = float(str(text).strip())
    except ValueError:
        raise ValueError(f"{flag} must be a number{f' of {unit}' if unit else ''}, got {text!r}") from None
    if zero and value == 0:
        return 0.0
    ok = math.isfinite(value) and (value > low if low_open else value >= low) and value <= high
    if not ok:
        lower = f"more than {low:g}" if low_open else f"at least {low:g}"
        zero_text = "0 or " if zero else ""
        raise ValueError(f"{flag} must be {zero_text}{lower} and at most {high:g}{f' {unit}' if unit else ''}, "
                         f"got {text!r}")
    return value


def whole(flag: str, text: str, *, low: int, high: int | None = None, note: str = "") -> int:
    """A whole number in ``[low, high]`` (no upper bound when ``high`` is None)."""
    try:
        value = int(str(text).strip())
    except ValueError:
        raise ValueError(f"{flag} must be a whole number >= {low}{note}, got {text!r}") from None
    if value < low:
        raise ValueError(f"{flag} must be >= {low}{note}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{flag} must be at most {high}{note}, got {value}")
    return value


def rate(flag: str, text: str) -> float:
    """A share from 0 to 1, written ``0.8`` or ``80%``."""
    raw = str(text).strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise ValueError(f"{flag} must be a rate such as 0.8 or 80%, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{flag} must be between 0 and 1 (or 0% and 100%), got {text!r}")
    return value


def money(flag: str, text: str) -> float:
    """An amount in US dollars > 0 (``5``, ``0.50``, ``$5``)."""
    raw = str(text).strip()
    try:
        value = float(raw.lstrip("$"))
    except ValueError:
        raise ValueError(f"{flag} must be an amount in US dollars such as 5 or 0.50, got {text!r}") from None
    if not 0 < value < math.inf:
        raise ValueError(f"{flag} must be more than 0, got {text!r}")
    return value


def limit(flag: str, text: str, *, low: int, high: int, unit: str) -> int:
    """A whole number in ``[low, high]``, or 0 for no limit."""
    try:
        value = int(str(text).strip())
    except ValueError:
        raise ValueError(f"{flag} must be a whole number of {unit} (0 for no limit), got {text!r}") from None
    if value != 0 and not low <= value <= high:
        raise ValueError(f"{flag} must be 0 (no limit) or {low} to {high} {unit}, got {text!r}")
    return value


def port(flag: str, text: str) -> int:
    """A TCP port, 1..65535."""
    try:
        value = int(str(text).strip())
    except ValueError:
        raise ValueError(f"{flag} must be a port number (1-65535), got {text!r}") from None
    if not 1 <= value <= 65535:
        raise ValueError(f"{flag} must be a port number (1-65535), got {text!r}")
    return value


def url(flag: str, text: str) -> str:
    """An ``http://`` or ``https://`` URL with a host (and a valid port, if any), without the
    trailing slash. Whitespace and control characters are refused: a URL goes into requests and
    terminal lines."""
    raw = str(text).strip()
    example = "such as http://localhost:5000"
    if not raw or any(not c.isprintable() or c.isspace() for c in raw):
        raise ValueError(f"{flag} must be a URL {example}, got {text!r}")
    parts = urllib.parse.urlsplit(raw)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"{flag} must be an http:// or https:// URL {example}, got {text!r}")
    try:
        host, given_port = parts.hostname, parts.port
    except ValueError:
        raise ValueError(f"{flag} has a bad port in {text!r}; give a port from 1 to 65535") from None
    if not host:
        raise ValueError(f"{flag} must name a host, {example}, got {text!r}")
    if given_port == 0:
        raise ValueError(f"{flag} has a bad port in {text!r}; give a port from 1 to 65535")
    return raw.rstrip("/")


def cidr(flag: str, text: str) -> str:
    """An IPv4 or IPv6 network in CIDR form (``203.0.113.7/32``); a bare address means that one host."""
    raw = str(text).strip()
    try:
        network = ipaddress.ip_network(raw, strict=False)
    except ValueError:
        raise ValueError(f"{flag} must be an address block such as 203.0.113.7/32, got {text!r}") from None
    return str(network)


def aws_subnet(flag: str, text: str) -> str:
    """An EC2 subnet id: ``subnet-`` and 8 or 17 hex digits."""
    raw = str(text).strip()
    if not _SUBNET.fullmatch(raw):
        raise ValueError(f"{flag} must be a subnet id such as subnet-0abc1234def567890, got {text!r}")
    return raw


def run_name(flag: str, text: str) -> str:
    """A run folder's name: one plain folder name of printable characters."""
    raw = str(text)
    if not raw or raw in (".", "..") or "/" in raw or "\\" in raw or raw != raw.strip():
        raise ValueError(f"{flag} must be a plain folder name (no '/', '\\', '.' or '..', no surrounding spaces), "
                         f"got {text!r}")
    if any(not c.isprintable() for c in raw):
        raise ValueError(f"{flag} must not contain control characters (newlines, escapes), got {text!r}")
    if len(raw) > MAX_RUN_NAME:
        raise ValueError(f"{flag} must be at most {MAX_RUN_NAME} characters, got {len(raw)}")
    return raw
