"""The three arms of the MockMed comparison, each an agent that sees only the Observation.

* ``by-position``: the first button named "Open", then the rest by name (a Playwright script
  written the usual way);
* ``by-name``: the "Open" button in Jane Sample's row, then the rest by name;
* ``compiled``: a workflow recorded once from a demonstration on the ``clean`` app and compiled
  to a file; each step's target is described by several signals (role, name, element id, row
  context, position) and replayed by the best-supported match, with each step's expected result
  checked. It halts (``fail``) rather than guess, and makes no model calls.

The scripts stop at the first element they cannot find, as a Playwright script stops at its
first timeout; nothing they did before that is undone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...agent import Agent
from ...model import Action, Observation, Task

USERNAME = "nurse.demo"
PASSWORD = "mockmed-demo-pass"
GOLD_PATIENT = "p1"
GOLD_PATIENT_NAME = "Jane Sample"
GOLD_TYPE = "Triage"
GOLD_NOTE = "Follow-up in 2 weeks; BP recheck."
ARMS = ("compiled", "by-position", "by-name")

Node = dict[str, Any]


def walk(tree: Node | None, row: Node | None = None) -> Iterator[tuple[Node, Node | None]]:
    """Every node with the row it sits in (None outside table rows)."""
    if not tree:
        return
    if tree.get("role") == "row":
        row = tree
    yield tree, row
    for child in tree.get("children", ()) or ():
        yield from walk(child, row)


def find(tree: Node | None, role: str, name: str, *, within_row: str | None = None) -> Node | None:
    """The first node with this role and exact name (optionally in a row whose name contains
    ``within_row``), in document order, as a by-role locator finds it."""
    for node, row in walk(tree):
        if node.get("role") != role or (node.get("name") or "").strip() != name:
            continue
        if within_row is not None and (row is None or within_row not in (row.get("name") or "")):
            continue
        return node
    return None


def row_key(row: Node | None) -> str | None:
    """A row's identity for matching: its first cell (the patient), not the whole row text, which
    includes the action button's label and so changes when the button is renamed."""
    if row is None:
        return None
    for child in row.get("children", ()) or ():
        if child.get("role") == "cell":
            return str(child.get("name") or "")
    return str(row.get("name") or "")


def heading(tree: Node | None) -> str:
    """The page's first heading: what a step expects to see after it acts."""
    for node, _ in walk(tree):
        if node.get("role") == "heading":
            return str(node.get("name") or "")
    return ""


def banner(tree: Node | None) -> str | None:
    for node, _ in walk(tree):
        if node.get("role") == "status" and node.get("name"):
            return str(node["name"])
    return None


@dataclass(frozen=True)
class Step:
    """One scripted step: the element to find and what to do with it."""

    role: str
    name: str
    kind: str = "click"  # click | type
    text: str = ""
    within_row: str | None = None


def _steps(open_step: Step) -> list[Step]:
    return [
        Step("textbox", "Username"), Step("textbox", "Username", "type", USERNAME),
        Step("textbox", "Password"), Step("textbox", "Password", "type", PASSWORD),
        Step("button", "Sign In"),
        open_step,
        Step("button", "New Encounter"),
        Step("radio", GOLD_TYPE),
        Step("textbox", "Note"), Step("textbox", "Note", "type", GOLD_NOTE),
        Step("button", "Save Encounter"),
    ]


class ScriptAgent(Agent):
    """Plays fixed steps by role and name; stops (``fail``) at the first element it cannot find."""

    def __init__(self, name: str, steps: list[Step]) -> None:
        self.name = name
        self.steps = steps
        self.position = 0
        #: (step, node, tree) for each executed step: what a recorder sees.
        self.trace: list[tuple[Step, Node, Node | None]] = []

    def reset(self) -> None:
        self.position = 0
        self.trace = []

    def act(self, observation: Observation, task: Task, history: list[tuple[Observation, Action]] | None = None) -> Action:
        tree = observation.accessibility_tree
        if self.position >= len(self.steps):
            shown = banner(tree)
            if shown and shown.startswith("Encounter saved"):
                return Action(type="done")
            return Action(type="fail", reason="the saved banner did not appear")
        step = self.steps[self.position]
        node = find(tree, step.role, step.name, within_row=step.within_row)
        if node is None:
            where = f" in the row of {step.within_row}" if step.within_row else ""
            return Action(type="fail", reason=f"no {step.role} named {step.name!r}{where} (step {self.position + 1})")
        self.position += 1
        self.trace.append((step, node, tree))
        if step.kind == "type":
            return Action(type="type", text=step.text)
        return Action(type="click", target_id=str(node["id"]))


def script_by_position() -> ScriptAgent:
    return ScriptAgent("by-position", _steps(Step("button", "Open")))


def script_by_name() -> ScriptAgent:
    return ScriptAgent("by-name", _steps(Step("button", "Open", within_row=GOLD_PATIENT_NAME)))


# -- compiled replay -----------------------------------------------------------------------------
def _center(node: Node, viewport: tuple[int, int]) -> tuple[float, float]:
    x0, y0, x1, y1 = node.get("bbox") or (0, 0, 0, 0)
    return ((x0 + x1) / 2 / viewport[0], (y0 + y1) / 2 / viewport[1])


def compile_demonstration(agent: ScriptAgent, observations: list[Observation]) -> dict[str, Any]:
    """Turn a recorded demonstration into a workflow: per step, the action, the target's signals
    and the heading the next screen showed. ``observations[i]`` is the screen after step ``i``."""
    steps = []
    for index, (step, node, tree) in enumerate(agent.trace):
        after = observations[index].accessibility_tree if index < len(observations) else None
        viewport = tuple(observations[index].viewport or (1280, 800)) if index < len(observations) else (1280, 800)
        row = next((r for n, r in walk(tree) if n is node), None)
        steps.append({
            "action": step.kind,
            "text": step.text if step.kind == "type" else None,
            "target": {
                "role": node.get("role"), "name": node.get("name"), "id": node.get("id"),
                "row": row_key(row), "position": list(_center(node, viewport)),
            },
            "expect": {"heading": heading(after)},
        })
    return {"schema": "pytest-agentbench/mockmed-workflow/v1", "recorded_on": "clean", "steps": steps}


#: Signal weights: an element id is the strongest evidence, a row context next, then the name.
WEIGHTS = {"id": 3.0, "row": 2.0, "name": 2.0, "role": 1.0, "position": 1.0}
THRESHOLD = 4.0  # below this the match is a guess: halt
MARGIN = 1.0  # the best candidate must beat the runner-up by this much


def score(target: dict[str, Any], node: Node, row: Node | None, viewport: tuple[int, int]) -> float:
    total = 0.0
    if target.get("id") and node.get("id") == target["id"]:
        total += WEIGHTS["id"]
    if target.get("role") and node.get("role") == target["role"]:
        total += WEIGHTS["role"]
    if target.get("name") and (node.get("name") or "").strip() == target["name"]:
        total += WEIGHTS["name"]
    if target.get("row") and row is not None and target["row"] == row_key(row):
        total += WEIGHTS["row"]
    if target.get("position") and node.get("bbox"):
        cx, cy = _center(node, viewport)
        tx, ty = target["position"]
        if abs(cx - tx) <= 0.05 and abs(cy - ty) <= 0.05:
            total += WEIGHTS["position"]
    return total


class CompiledReplay(Agent):
    """Replays a compiled workflow by the best-supported match; halts rather than guess."""

    name = "compiled"

    def __init__(self, workflow: dict[str, Any]) -> None:
        self.workflow = workflow
        self.position = 0
        self.model_calls = 0  # the point of compiling: none, ever

    @classmethod
    def load(cls, path: str | Path) -> CompiledReplay:
        return cls(json.loads(Path(path).read_text(encoding="utf-8")))

    def reset(self) -> None:
        self.position = 0

    def act(self, observation: Observation, task: Task, history: list[tuple[Observation, Action]] | None = None) -> Action:
        tree = observation.accessibility_tree
        steps = self.workflow["steps"]
        if self.position > 0:
            expected = steps[self.position - 1]["expect"].get("heading")
            if expected and heading(tree) != expected:
                return Action(type="fail", reason=f"step {self.position}: expected the screen {expected!r}, "
                                                  f"saw {heading(tree)!r}; halting")
        if self.position >= len(steps):
            shown = banner(tree)
            if shown and shown.startswith("Encounter saved"):
                return Action(type="done")
            return Action(type="fail", reason="the saved banner did not appear; halting")
        step = steps[self.position]
        viewport = tuple(observation.viewport or (1280, 800))
        ranked = sorted(((score(step["target"], node, row, viewport), i, node)
                         for i, (node, row) in enumerate(walk(tree))), key=lambda t: (-t[0], t[1]))
        if not ranked or ranked[0][0] < THRESHOLD:
            return Action(type="fail", reason=f"step {self.position + 1}: no element matches "
                                              f"{step['target'].get('name')!r} well enough; halting")
        if len(ranked) > 1 and ranked[0][0] - ranked[1][0] < MARGIN:
            return Action(type="fail", reason=f"step {self.position + 1}: two elements match "
                                              f"{step['target'].get('name')!r} equally; halting")
        node = ranked[0][2]
        self.position += 1
        if step["action"] == "type":
            return Action(type="type", text=step["text"] or "")
        return Action(type="click", target_id=str(node["id"]))


def record_workflow(play: Callable[[Agent], list[Observation]]) -> dict[str, Any]:
    """Record the demonstration (the by-name script on ``clean``) and compile it.

    ``play(agent)`` runs the agent on a fresh clean app and returns the observation after each
    executed step."""
    demo = script_by_name()
    observations = play(demo)
    return compile_demonstration(demo, observations)
