"""What the model agents (``api-claude``, ``api-openai``) make of a model's reply beyond its actions:
how a reply without an action ends the episode, and how an unusable reply counts.

Why one module: both agents promise the same rules (the user guide states them once), so the
rules live once.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pytest_agentbench.model import Action

if TYPE_CHECKING:
    from pytest_agentbench.model import ActionType


def final_word(text: str) -> ActionType:
    """``fail`` when the last line says FAIL/INFEASIBLE, ``done`` when it says DONE; otherwise
    ``fail`` if the text calls the task infeasible or impossible, else ``done``."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if re.search(r"\b(FAIL|FAILED|INFEASIBLE)\b", last, re.IGNORECASE):
        return "fail"
    if re.search(r"\bDONE\b", last, re.IGNORECASE):
        return "done"
    if re.search(r"\b(infeasible|impossible|cannot be (done|completed)|not possible)\b", text, re.IGNORECASE):
        return "fail"
    return "done"


def unusable(strikes: int, why: str, reply: Any) -> Action:
    """The step for the ``strikes``-th unusable reply in a row: a ``wait`` 0 s the first time (the
    model is told and tries again), an agent error from the second on."""
    raw = {"unparsed_reply": reply}
    if strikes >= 2:
        return Action(type="error", reason=f"unparseable reply twice: {why}", raw=raw)
    return Action(type="wait", seconds=0.0, reason=f"unparseable reply: {why}", raw=raw)


def with_text(action: Action, text: str) -> Action:
    """``action`` with the reply's text before its own reason (the model's words for the step)."""
    if not text:
        return action
    return action.model_copy(update={"reason": f"{text}\n{action.reason}" if action.reason else text})
