"""The retry policy of this package's HTTP clients (the ``http`` agent and the WAA client), on tenacity.

Both talk to servers that restart, sit behind proxies and get overloaded by many xdist workers at
once, so a failed request is tried again after an exponentially growing wait with random jitter
added (workers that failed together do not all come back in the same instant). A server that says
when to come back (``Retry-After``, RFC 9110 §10.2.3, as delta-seconds or as an HTTP-date) is
listened to, up to a cap the caller sets from its own timeout, so a server asking for an hour
cannot stall a run. Which failures are worth retrying stays each client's own decision (its
``retry`` predicate); this module only says how long to wait and how many times to try.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import TypeVar

import httpx
import tenacity
from tenacity.retry import retry_base
from tenacity.wait import wait_base, wait_exponential, wait_random

T = TypeVar("T")


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds a ``Retry-After`` header value asks to wait: delta-seconds (``"120"``, decimals
    accepted) or an HTTP-date (IMF-fixdate, RFC 850 or asctime, all three of which RFC 9110 says a
    recipient must read). A date in the past means 0. None when there is no usable value, so the
    caller falls back to its own backoff."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return seconds if 0 <= seconds < math.inf else None
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # asctime dates carry no zone; HTTP-dates are always GMT
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())


def response_retry_after(state: tenacity.RetryCallState) -> float | None:
    """The Retry-After of the reply that ended this attempt, when the attempt got a reply: one
    returned, or one carried by the error raised (an SDK's status error has it as ``.response``,
    whichever HTTP library the SDK is built on). ``retry-after-ms`` (OpenAI's and Anthropic's
    finer header) is read when there is no ``retry-after``."""
    outcome = state.outcome
    if outcome is None:
        return None
    response = getattr(outcome.exception(), "response", None) if outcome.failed else outcome.result()
    headers = getattr(response, "headers", None) if isinstance(response, httpx.Response) or outcome.failed else None
    if headers is None or not hasattr(headers, "get"):
        return None
    seconds = retry_after_seconds(headers.get("retry-after"))
    if seconds is None:
        millis = retry_after_seconds(headers.get("retry-after-ms"))
        seconds = None if millis is None else millis / 1000
    return seconds


class wait_backoff_or_retry_after(wait_base):
    """``backoff * 2**(n-1)`` plus up to ``jitter`` seconds at random, or the server's Retry-After
    when that is longer, the Retry-After being cut to ``cap`` seconds."""

    def __init__(self, backoff: float, jitter: float, cap: float) -> None:
        self.backoff = wait_exponential(multiplier=backoff, exp_base=2) + wait_random(0, jitter)
        self.cap = cap

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        wait = self.backoff(retry_state)
        asked = response_retry_after(retry_state)
        if asked is not None:
            wait = max(wait, min(asked, self.cap))
        return wait


def _last_outcome(state: tenacity.RetryCallState) -> object:
    """Once the attempts are used up: the last reply, or the last error raised again, so the caller
    reports it in its own words."""
    assert state.outcome is not None
    return state.outcome.result()


def call_with_retries(
    send: Callable[[], T],
    *,
    attempts: int,
    retry: retry_base,
    backoff: float,
    jitter: float,
    cap: float,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``send()`` up to ``attempts`` times while ``retry`` says the outcome is worth another try,
    waiting as :class:`wait_backoff_or_retry_after` says through ``sleep`` (replaceable, so tests
    record the waits instead of sleeping). Returns the last reply, or raises the last error, exactly
    as one plain ``send()`` would have."""
    retrying = tenacity.Retrying(
        sleep=sleep,
        stop=tenacity.stop_after_attempt(max(1, attempts)),
        wait=wait_backoff_or_retry_after(backoff, jitter, cap),
        retry=retry,
        retry_error_callback=_last_outcome,
    )
    return retrying(send)
