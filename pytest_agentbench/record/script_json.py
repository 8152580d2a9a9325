"""JSON text for the viewer page's ``<script type="application/json">`` blocks.

Task ids, reasons and reasoning come from benchmarks and agents, i.e. from users, and a run folder
may come from someone else, so every JSON text put in a block is escaped here, in one place, so
that no block can close its ``<script>`` tag early.
"""

from __future__ import annotations

import json
import math
from typing import Any


def escape_json_text(text: str) -> str:
    """Make JSON text safe inside ``<script type="application/json">``.

    ``<``, ``>`` and ``&`` never occur in JSON outside strings, and inside strings their ``\\uXXXX``
    escapes mean the same, so valid JSON parses to the same value; text that is not JSON stays not
    JSON. Either way no ``</script>`` or ``<!--`` survives to end the block early.
    """
    # The membership tests are cheap and usually false: most trajectories hold none of the three.
    if "&" in text:
        text = text.replace("&", "\\u0026")
    if "<" in text:
        text = text.replace("<", "\\u003c")
    if ">" in text:
        text = text.replace(">", "\\u003e")
    return text


def embed_json(data: Any, *, sort_keys: bool = False) -> str:
    """``data`` as JSON for a script block (ASCII, NaN-free, escaped)."""
    try:
        text = json.dumps(data, ensure_ascii=True, separators=(",", ":"), allow_nan=False, sort_keys=sort_keys)
    except ValueError:  # a NaN from a hand-edited file: JSON.parse would reject the whole block
        text = json.dumps(_finite(data), ensure_ascii=True, separators=(",", ":"), sort_keys=sort_keys)
    return escape_json_text(text)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value

