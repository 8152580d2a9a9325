"""Drivers that show MockMed to an agent and carry out its actions.

Both satisfy :class:`Driver` (``protocol.py``). The headless driver is a small browser engine in
stages, one module each: ``dom`` (parse), ``style`` (the driver's style sheet, the page's palette),
``fonts``, ``layout`` (boxes), ``accessibility`` (the tree), ``paint`` (the screenshot) and
``headless`` (pages and actions); ``browser`` holds the Playwright driver.

:class:`HeadlessDriver` needs no browser. It fetches pages with httpx (cookies kept), parses the HTML
with the stdlib parser, lays the page out with a small deterministic block layout (normal flow, flex
rows, tables) so that every visible element gets a pixel box, and turns that into

* an accessibility tree of nested dicts::

      {"role": "row", "name": "Jane Sample Knee pain referral High Open", "id": "row:5.1",
       "bbox": [x0, y0, x1, y1], "children": [...]}

  plus ``"value"`` on textboxes and ``"checked"`` on radios. Roles: document, heading, text, link,
  button, textbox, radio, table, row, cell, status (the saved banner), alert (a form error), form. A
  row's name is its cells' names joined with spaces. ``id`` is the HTML id when the element has one,
  else a generated id ``"<role>:<path>"`` (the node's child indexes from the root, e.g. ``"row:5.1"``;
  the root is ``"document"``), stable for the same page structure;
* a screenshot drawn with pillow from the same layout, on demand only (``Observation.screenshot``),
  in the page's own palette and fonts (read from its CSS custom properties).

It performs the core's actions over HTTP: a click (by ``target_id`` or by coordinates, pixels or
fractions) follows a link, checks a radio, focuses a field or submits a form with the current field
values; ``type`` appends to the focused field; ``key`` handles Enter (submits from a text input, new
line in a textarea), Tab, Backspace and Space; ``hotkey`` ctrl+a selects the field's text so the next
``type`` or Backspace replaces it; ``scroll`` moves the viewport; ``wait`` and the terminal actions do
nothing. An unknown ``target_id`` raises :class:`LookupError`.

:class:`PlaywrightDriver` has the same interface over headless Chromium (Debian's ``/usr/bin/chromium``
through the ``playwright`` package, imported on first use; it never downloads a browser).
"""

from __future__ import annotations

from pytest_agentbench.benches.mockmed.driver.accessibility import center, find_nodes, iter_nodes
from pytest_agentbench.benches.mockmed.driver.browser import CHROMIUM, CHROMIUM_ARGS, PlaywrightDriver, browser_problem
from pytest_agentbench.benches.mockmed.driver.dom import Element, parse_html
from pytest_agentbench.benches.mockmed.driver.headless import HeadlessDriver
from pytest_agentbench.benches.mockmed.driver.paint import paint
from pytest_agentbench.benches.mockmed.driver.protocol import APP_NAME, VIEWPORT, Driver
from pytest_agentbench.benches.mockmed.driver.style import page_vars

__all__ = [
    "APP_NAME",
    "CHROMIUM",
    "CHROMIUM_ARGS",
    "VIEWPORT",
    "Driver",
    "Element",
    "HeadlessDriver",
    "PlaywrightDriver",
    "browser_problem",
    "center",
    "find_nodes",
    "iter_nodes",
    "page_vars",
    "paint",
    "parse_html",
]
