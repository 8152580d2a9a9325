"""The arms of the MockMed comparison, each an agent that sees only the Observation.

* ``by-position``: the first button named "Open", then the rest by name (a Playwright script
  written the usual way);
* ``by-name``: the "Open" button in Jane Sample's row, then the rest by name;
* ``compiled``: a workflow recorded once from a demonstration on the ``clean`` app and compiled
  to a file; each step's target is described by several signals (role, name, element id, row
  context, position) and replayed by the best-supported match, with each step's expected result
  checked. It halts (``fail``) rather than guess, and makes no model calls. It is the general
  ``replay`` agent (``agents/replay.py``) playing one workflow for every task.

The scripts stop at the first element they cannot find, as a Playwright script stops at its
first timeout; nothing they did before that is undone.

A fourth arm, ``agent``, has no agent here: its items are played by the run's ``--bench-agent``
(a model that sees the screenshot and clicks and types at coordinates), so a model can be put
against the same app and checker. It is not in the default matrix (``ARMS``): it needs an agent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentbench.agent import Agent
from pytest_agentbench.agents.replay import ReplayAgent, banner, heading, load_workflow, row_key, walk
from pytest_agentbench.agents.replay import center as _center
from pytest_agentbench.model import Action, Observation, Task

USERNAME = "nurse.demo"
PASSWORD = "mockmed-demo-pass"
GOLD_PATIENT = "p1"
GOLD_PATIENT_NAME = "Jane Sample"
GOLD_TYPE = "Triage"
GOLD_NOTE = "Follow-up in 2 weeks; BP recheck."
#: The default matrix: the arms that play by themselves.
ARMS = ("compiled", "by-position", "by-name")
#: The arm the run's ``--bench-agent`` plays.
AGENT_ARM = "agent"
#: Every arm ``--mockmed-arm`` accepts.
ALL_ARMS = (*ARMS, AGENT_ARM)

Node = dict[str, Any]


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

    def act(self, observation: Observation, task: Task,
            history: list[tuple[Observation, Action]] | None = None) -> Action:
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
# The matching (walk, row_key, heading, banner; the scoring's weights, threshold and margin) and the
# replay itself are the general replay agent's (agents/replay.py): there is one implementation.

#: What the compiled arm checks after its last step: the saved banner, as the scripts do.
SAVED = {"banner_prefix": "Encounter saved", "reason": "the saved banner did not appear"}


def compile_demonstration(agent: ScriptAgent, observations: list[Observation]) -> dict[str, Any]:
    """Turn a recorded demonstration into a workflow: per step, the action, the target's signals
    and the heading the next screen showed. ``observations[i]`` is the screen after step ``i``."""
    steps = []
    for index, (step, node, tree) in enumerate(agent.trace):
        after = observations[index].accessibility_tree if index < len(observations) else None
        viewport = (observations[index].viewport or (1280, 800)) if index < len(observations) else (1280, 800)
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
    return {"schema": "pytest-agentbench/mockmed-workflow/v1", "recorded_on": "clean", "steps": steps,
            "finish": dict(SAVED)}


class CompiledReplay(ReplayAgent):
    """The general replay agent with one workflow for every MockMed task; a workflow without a
    ``finish`` condition (written before it existed) gets the saved-banner check."""

    name = "compiled"

    def __init__(self, workflow: dict[str, Any]) -> None:
        if not workflow.get("finish"):
            workflow = {**workflow, "finish": dict(SAVED)}
        super().__init__(default=workflow, source="the MockMed workflow")
        self.workflow = workflow

    @classmethod
    def load(cls, path: str | Path) -> CompiledReplay:
        return cls(load_workflow(path, f"MockMed workflow {path}"))


def record_workflow(play: Callable[[Agent], list[Observation]]) -> dict[str, Any]:
    """Record the demonstration (the by-name script on ``clean``) and compile it.

    ``play(agent)`` runs the agent on a fresh clean app and returns the observation after each
    executed step."""
    demo = script_by_name()
    observations = play(demo)
    return compile_demonstration(demo, observations)
