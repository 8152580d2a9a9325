"""Model list prices and token estimates, for the cost of each step and for ``--bench-dry-run``.

Prices are Anthropic list prices in US dollars per million tokens (MTok), from the pricing page
(https://platform.claude.com/docs/en/about-claude/pricing, "Model pricing"), as of 2026-11-30:
base input, output, 5-minute cache writes and cache hits. Batch discounts, 1-hour cache writes,
long-context and regional surcharges are not modelled: a step's cost here is what the standard
Messages API charges for its ``usage``. Prices change; a model missing from the table costs 0 and
the agent warns once (its tokens are still recorded).

Image tokens follow Anthropic's vision guide: an image of ``w`` x ``h`` pixels costs about
``w * h / 750`` tokens (images are sent at most 1568 px on the long edge, and our screenshots are
smaller). Text is estimated at about four characters per token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Where the prices come from and when they were read (shown in docs and ``--bench-dry-run``).
PRICES_SOURCE = "Anthropic list prices (platform.claude.com/docs/en/about-claude/pricing), 2026-11-30"


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float
    cache_write: float  # 5-minute cache writes (1.25 x input)
    cache_read: float  # cache hits and refreshes (0.1 x input for most models)


_OPUS_NEW = Price(5.00, 25.00, 6.25, 0.50)
_OPUS_OLD = Price(15.00, 75.00, 18.75, 1.50)
_SONNET = Price(3.00, 15.00, 3.75, 0.30)

#: Model family (the id without its date suffix) -> price.
PRICES: dict[str, Price] = {
    # The 5.5 models' cache reads cost 0.05 x input (their model pages, platform.claude.com/docs/en/models/).
    "claude-opus-5-5": Price(4.00, 20.00, 5.00, 0.20),
    "claude-sonnet-5-5": Price(2.00, 10.00, 2.50, 0.20),
    "claude-opus-5": _OPUS_NEW,
    "claude-opus-4-8": _OPUS_NEW,
    "claude-opus-4-7": _OPUS_NEW,
    "claude-opus-4-6": _OPUS_NEW,
    "claude-opus-4-5": _OPUS_NEW,
    "claude-opus-4-1": _OPUS_OLD,
    "claude-opus-4": _OPUS_OLD,
    "claude-opus-4-0": _OPUS_OLD,
    "claude-sonnet-5": Price(2.00, 10.00, 2.50, 0.20),
    "claude-sonnet-4-6": _SONNET,
    "claude-sonnet-4-5": _SONNET,
    "claude-sonnet-4": _SONNET,
    "claude-sonnet-4-0": _SONNET,
    "claude-3-7-sonnet": _SONNET,
    "claude-haiku-4-5": Price(1.00, 5.00, 1.25, 0.10),
    "claude-3-5-haiku": Price(0.80, 4.00, 1.00, 0.08),
}

_DATED = re.compile(r"-(\d{8}|latest)$")


def model_family(model: str) -> str:
    """``claude-sonnet-4-5-20250929`` -> ``claude-sonnet-4-5``; ``...-latest`` likewise."""
    return _DATED.sub("", model.strip().lower())


def price_of(model: str) -> Price | None:
    """The list price of ``model`` (a family or a dated id), or None when it is not in the table."""
    return PRICES.get(model_family(model))


def cost_usd(model: str, input_tokens: int, output_tokens: int, cache_write_tokens: int = 0,
             cache_read_tokens: int = 0) -> float | None:
    """What one call cost; ``input_tokens`` are the uncached input tokens (the API's
    ``usage.input_tokens``). None when the model has no price here."""
    price = price_of(model)
    if price is None:
        return None
    return (input_tokens * price.input + output_tokens * price.output
            + cache_write_tokens * price.cache_write + cache_read_tokens * price.cache_read) / 1_000_000


def image_tokens(width: int, height: int) -> int:
    """Anthropic's estimate of the tokens an image of ``width`` x ``height`` pixels costs."""
    return round(width * height / 750)


def text_tokens(text: str) -> int:
    """A rough token count for text: about four characters per token."""
    return (len(text) + 3) // 4
