"""Screenshot redaction: what an agent sees, with given regions and text matches blanked.

``--bench-redact-region X,Y,W,H`` (screen pixels) and ``--bench-redact-text REGEX`` (repeatable,
case-insensitive) wrap whatever ``--bench-agent`` plays in a :class:`RedactingAgent`. Before every
``act`` the observation is copied with

* each region filled black in the screenshot;
* each accessibility-tree node whose ``name``, ``text``, ``value`` or ``description`` matches a
  pattern blanked: the matching text becomes ``[redacted]`` and the node's ``bbox``
  (``[left, top, right, bottom]``) is filled black in the screenshot;
* matches in the window title and URL replaced by ``[redacted]``.

Every action the agent returns carries what was blanked under ``raw["redaction"]`` (the regions,
the boxes of matched nodes and the count of text replacements), so the trajectory records that the
agent worked on a redacted screen. Matching is on the text the environment reports, not on pixels:
a name drawn only in the image (no tree node) is blanked by a region, not by a pattern.

Why a wrapper and not the ``pytest_agentbench_scrub_screenshot`` hook: the hook rewrites the screenshot
for everything downstream (records included) and sees only pixels; this keeps the record as the
environment showed it, reads the accessibility tree to find the text, and works for any agent,
built in or your own. Both can be used together.
"""

from __future__ import annotations

import copy
import io
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_agentbench.agent import Agent, StepEstimate, Usage
from pytest_agentbench.model import Action, Observation, Task

if TYPE_CHECKING:
    from pytest_agentbench.budget import Budget

REPLACEMENT = "[redacted]"
#: Node fields whose text is matched.
TEXT_FIELDS = ("name", "text", "value", "description")
#: The deepest tree walked (a hostile tree cannot recurse without end).
MAX_DEPTH = 64
#: The most patterns and regions one run may give (each is applied to every observation).
MAX_RULES = 100


@dataclass(frozen=True)
class Region:
    """A rectangle in screen pixels."""

    x: int
    y: int
    width: int
    height: int

    def box(self) -> tuple[int, int, int, int]:
        return self.x, self.y, self.x + self.width, self.y + self.height


def parse_region(text: str) -> Region:
    """``X,Y,W,H`` in screen pixels (whole numbers, W and H > 0). ValueError naming the fix."""
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) != 4 or not all(re.fullmatch(r"\d{1,6}", p) for p in parts):
        raise ValueError(f"--bench-redact-region must be X,Y,W,H in screen pixels such as 0,0,400,60, got {text!r}")
    x, y, width, height = map(int, parts)
    if width == 0 or height == 0:
        raise ValueError(f"--bench-redact-region {text!r} has no area: W and H must be > 0")
    return Region(x, y, width, height)


def parse_pattern(text: str) -> re.Pattern[str]:
    """A case-insensitive regular expression. ValueError naming the fix."""
    if not str(text).strip():
        raise ValueError("--bench-redact-text must be a non-empty regular expression such as 'Jane Doe|\\d{3}-\\d{4}'")
    try:
        return re.compile(str(text), re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"--bench-redact-text {text!r} is not a regular expression: {exc}") from None


class Redactor:
    """Applies the regions and patterns to one observation; see the module docstring."""

    def __init__(self, regions: list[Region], patterns: list[re.Pattern[str]]) -> None:
        if len(regions) + len(patterns) > MAX_RULES:
            raise ValueError(f"at most {MAX_RULES} --bench-redact-region / --bench-redact-text rules, "
                             f"got {len(regions) + len(patterns)}")
        self.regions, self.patterns = regions, patterns

    def _text(self, value: str) -> tuple[str, int]:
        count = 0
        for pattern in self.patterns:
            value, n = pattern.subn(REPLACEMENT, value)
            count += n
        return value, count

    def _tree(self, node: Any, boxes: list[list[int]], depth: int = 0) -> int:
        """Replace matches in ``node`` (a copy) in place; collect the boxes of matched nodes."""
        if not isinstance(node, dict) or depth > MAX_DEPTH:
            return 0
        count = 0
        for field in TEXT_FIELDS:
            if isinstance(node.get(field), str):
                node[field], n = self._text(node[field])
                count += n
                if n:
                    box = node.get("bbox")
                    if (isinstance(box, list) and len(box) == 4
                            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in box)):
                        boxes.append([int(v) for v in box])
        for child in node.get("children") or []:
            count += self._tree(child, boxes, depth + 1)
        return count

    def apply(self, observation: Observation) -> tuple[Observation, dict[str, Any]]:
        """A redacted copy of ``observation`` and the record of what was blanked."""
        boxes: list[list[int]] = []
        tree = copy.deepcopy(observation.accessibility_tree) if observation.accessibility_tree else None
        replaced = self._tree(tree, boxes) if tree is not None and self.patterns else 0
        title, url = observation.window_title, observation.url
        if title and self.patterns:
            title, n = self._text(title)
            replaced += n
        if url and self.patterns:
            url, n = self._text(url)
            replaced += n
        fills = [r.box() for r in self.regions] + [(b[0], b[1], b[2], b[3]) for b in boxes]
        screenshot = observation.screenshot
        if screenshot is not None and fills:
            screenshot = _blank(screenshot, fills)
        redacted = Observation(screenshot=screenshot, accessibility_tree=tree, window_title=title, url=url,
                               app_name=observation.app_name, viewport=observation.viewport, raw=observation.raw)
        report = {"regions": [list(r.box()) for r in self.regions], "matched_boxes": boxes,
                  "text_replacements": replaced}
        return redacted, report


def _blank(png: bytes, boxes: list[tuple[int, int, int, int]]) -> bytes:
    from PIL import Image, ImageDraw

    with Image.open(io.BytesIO(png)) as image:
        canvas = image.convert("RGB")
    draw = ImageDraw.Draw(canvas)
    width, height = canvas.size
    for left, top, right, bottom in boxes:
        box = (max(0, min(left, right)), max(0, min(top, bottom)), min(width, max(left, right)),
               min(height, max(top, bottom)))
        if box[2] > box[0] and box[3] > box[1]:
            draw.rectangle((box[0], box[1], box[2] - 1, box[3] - 1), fill="black")
    out = io.BytesIO()
    canvas.save(out, format="PNG")
    return out.getvalue()


class RedactingAgent(Agent):
    """``inner`` acting on redacted observations; every action notes what was blanked."""

    def __init__(self, inner: Agent, redactor: Redactor) -> None:
        self.inner, self.redactor = inner, redactor
        self.name = getattr(inner, "name", "agent")

    @property  # the runner sets the budget on the agent it plays: it goes to the inner one
    def budget(self) -> Budget | None:
        return self.inner.budget

    @budget.setter
    def budget(self, value: Budget | None) -> None:
        self.inner.budget = value

    def act(self, observation: Observation, task: Task,
            history: list[tuple[Observation, Action]] | None = None) -> Action:
        redacted, report = self.redactor.apply(observation)
        action = self.inner.act(redacted, task, history)
        return action.model_copy(update={"raw": {**(action.raw or {}), "redaction": report}})

    def reset(self) -> None:
        self.inner.reset()

    def close(self) -> None:
        self.inner.close()

    def take_usage(self) -> Usage | None:
        return self.inner.take_usage()

    def estimate_step(self, screen: tuple[int, int]) -> StepEstimate | None:
        return self.inner.estimate_step(screen)


def wrap(agent: Agent, regions: list[str] | None, patterns: list[str] | None) -> Agent:
    """``agent`` wrapped when any rule is given (checked: ValueError naming the bad one), else as is."""
    if not regions and not patterns:
        return agent
    return RedactingAgent(agent, Redactor([parse_region(r) for r in regions or []],
                                          [parse_pattern(p) for p in patterns or []]))
