"""The static viewer's page: its template, style and script (package data under ``assets/``) filled
with a ``RunView`` into one self-contained HTML file.

The assets are files rather than Python strings so they can be read, linted and edited as what
they are; they are read once per process and inlined, so the written page still needs nothing
beside it but the run folder's screenshots. The page writes text only with ``textContent``, and
its Content Security Policy admits only its own inline script and style (by hash) and local
images, so it makes no network request.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections.abc import Callable, Iterator
from functools import cache, lru_cache
from importlib import resources

from pytest_agentbench.record.packed import pack
from pytest_agentbench.record.script_json import embed_json
from pytest_agentbench.record.viewer_data import RunView

_PLACEHOLDER = re.compile(r"__(CSP|TITLE|CSS|JS|DATA|ROWS|BLOCKS)__")

#: The page's file name in a run folder.
VIEWER_NAME = "viewer.html"


#: The type of a packed block's script element: not a script type, so the browser never runs it.
PACKED_TYPE = "application/octet-stream"


@cache
def asset(name: str) -> str:
    """The text of ``assets/<name>``, read through ``importlib.resources`` so it is found in a
    wheel, a zip or a source tree alike."""
    return (resources.files(__name__.rpartition(".")[0]) / "assets" / name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def _csp() -> str:
    return "; ".join([
        "default-src 'none'",
        "img-src 'self' file:",
        f"style-src {csp_hash(asset('viewer.css'))}",
        f"script-src {csp_hash(asset('viewer.js'))}",
        "base-uri 'none'",
        "form-action 'none'",
    ])


def render_html(view: RunView) -> str:
    """The whole page as one string (``page_pieces`` joined)."""
    return "".join(page_pieces(view))


def page_pieces(view: RunView) -> Iterator[str]:
    """The page in order, piece by piece, for writing as it is made: the template's text between
    its placeholders and each placeholder's value, no value ever re-scanned for placeholders.
    The packed blocks come before the data and rows blocks, so a lazy ``view`` (see ``RunView``)
    has read every trajectory, and completed ``data`` and ``rows``, by the time they are embedded.
    A packed block is inert: its type is no script's, and its text is base64 (``packed``)."""
    values: dict[str, Callable[[], str]] = {
        "CSP": _csp,
        "TITLE": lambda: html.escape(f"{view.data['run']['name']} \u00b7 agentbench", quote=True),
        "CSS": lambda: asset("viewer.css"),
        "JS": lambda: asset("viewer.js"),
        "DATA": lambda: embed_json(view.data),
        "ROWS": lambda: pack(embed_json(view.rows).encode("ascii")),
    }
    for index, piece in enumerate(_PLACEHOLDER.split(asset("viewer.html"))):
        if index % 2 == 0:  # the template's own text
            yield piece
        elif piece == "BLOCKS":
            for number, text in enumerate(view.blocks):
                yield f'<script type="{PACKED_TYPE}" id="z-{number}">{text}</script>\n'
        else:
            yield values[piece]()


def csp_hash(source: str) -> str:
    """The Content Security Policy source that admits exactly this inline script or style."""
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"

