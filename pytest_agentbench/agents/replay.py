"""The ``replay`` agent: plays a compiled workflow per task, matching targets by several signals.

A workflow is a list of steps recorded once (by a person, a script or a model) and replayed without
any model call. Each targeted step describes its element by several signals (element id, table row,
name, role, position) and clicks the best-supported match, halting (``fail``) rather than guessing
when no element is supported well enough or two are supported equally. A screen without an
accessibility tree (a desktop seen only through screenshots) is clicked by a point instead (``at``,
fractions of the screen): there is nothing to match, so the step says where. Each step may say what the
next screen must show (``expect``); a mismatch halts too. Keyboard steps (``key``, ``hotkey``,
``type`` without a target, ``wait``, ``scroll``) need no element, which is how a WAA task such as the
Notepad one is replayed.

``--bench-agent replay --bench-replay-bundles DIR`` reads ``DIR/<task id>/workflow.json`` per task. Every file is
validated when the agent is built, so a bad bundle is a usage error naming the file and the line
before any VM starts. The MockMed benchmark's compiled arm is this agent with one workflow for every
task (``benches/mockmed/arms.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentbench.agent import Agent
from pytest_agentbench.json_position import json_line
from pytest_agentbench.model import Action, Observation, Task
from pytest_agentbench.settings import settings_of
from pytest_agentbench.untrusted import loads, read_text

if TYPE_CHECKING:
    from pytest_agentbench.settings import Settings

#: Accepted values of a workflow's ``schema`` key (it may be left out).
SCHEMAS = ("pytest-agentbench/workflow/v1", "pytest-agentbench/mockmed-workflow/v1")
#: Step types that act on an element found by its signals.
TARGETED = ("click", "double_click", "right_click")
#: Every step type, in the order error messages list them.
STEP_TYPES = (*TARGETED, "type", "key", "hotkey", "scroll", "wait")
#: What ``expect`` (checked on the next screen) and ``finish`` (after the last step) may test.
CONDITIONS = ("heading", "window_title", "window_title_contains", "banner_prefix")
TARGET_KEYS = ("role", "name", "id", "row", "position")
STEP_KEYS = ("action", "text", "target", "at", "expect", "key", "keys", "seconds", "direction", "amount", "note")

#: Signal weights: an element id is the strongest evidence, a row context next, then the name.
WEIGHTS = {"id": 3.0, "row": 2.0, "name": 2.0, "role": 1.0, "position": 1.0}
THRESHOLD = 4.0  # below this the match is a guess: halt
MARGIN = 1.0  # the best candidate must beat the runner-up by this much
POSITION_TOLERANCE = 0.05  # a position signal matches within 5% of the screen each way

Node = dict[str, Any]
Workflow = dict[str, Any]


# -- reading the accessibility tree --------------------------------------------------------------
def walk(tree: Node | None, row: Node | None = None) -> Iterator[tuple[Node, Node | None]]:
    """Every node with the row it sits in (None outside table rows)."""
    if not tree:
        return
    if tree.get("role") == "row":
        row = tree
    yield tree, row
    for child in tree.get("children", ()) or ():
        yield from walk(child, row)


def node_role(node: Node) -> str | None:
    """A node's role; WAA's trees (``{id, tag, attrs}``) have the element tag instead."""
    return node.get("role") or node.get("tag")


def node_name(node: Node) -> str:
    attrs = node.get("attrs") or {}
    return str(node.get("name") or attrs.get("name") or attrs.get("title") or "").strip()


def node_bbox(node: Node) -> tuple[float, float, float, float] | None:
    """``[x0, y0, x1, y1]`` in pixels; from ``cp:screencoord`` and ``cp:size`` on WAA trees."""
    if node.get("bbox"):
        x0, y0, x1, y1 = node["bbox"]
        return float(x0), float(y0), float(x1), float(y1)
    attrs = node.get("attrs") or {}
    pos = re.findall(r"-?\d+(?:\.\d+)?", str(attrs.get("cp:screencoord") or ""))
    size = re.findall(r"-?\d+(?:\.\d+)?", str(attrs.get("cp:size") or ""))
    if len(pos) >= 2 and len(size) >= 2:
        x, y, w, h = float(pos[0]), float(pos[1]), float(size[0]), float(size[1])
        return x, y, x + w, y + h
    return None


def row_key(row: Node | None) -> str | None:
    """A row's identity for matching: its first cell, not the whole row text, which includes the
    action button's label and so changes when the button is renamed."""
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
    """The first status message (role ``status``) on screen, if any."""
    for node, _ in walk(tree):
        if node.get("role") == "status" and node.get("name"):
            return str(node["name"])
    return None


def center(node: Node, viewport: tuple[int, int]) -> tuple[float, float]:
    """The node's centre as fractions of the screen."""
    x0, y0, x1, y1 = node_bbox(node) or (0, 0, 0, 0)
    return ((x0 + x1) / 2 / viewport[0], (y0 + y1) / 2 / viewport[1])


# -- matching ------------------------------------------------------------------------------------
def score(target: dict[str, Any], node: Node, row: Node | None, viewport: tuple[int, int]) -> float:
    """How well ``node`` fits the recorded target: the sum of the weights of the signals it matches."""
    total = 0.0
    if target.get("id") and node.get("id") == target["id"]:
        total += WEIGHTS["id"]
    if target.get("role") and node_role(node) == target["role"]:
        total += WEIGHTS["role"]
    if target.get("name") and node_name(node) == target["name"]:
        total += WEIGHTS["name"]
    if target.get("row") and row is not None and target["row"] == row_key(row):
        total += WEIGHTS["row"]
    if target.get("position") and node_bbox(node):
        cx, cy = center(node, viewport)
        tx, ty = target["position"]
        if abs(cx - tx) <= POSITION_TOLERANCE and abs(cy - ty) <= POSITION_TOLERANCE:
            total += WEIGHTS["position"]
    return total


def threshold_for(target: dict[str, Any]) -> float:
    """THRESHOLD, or every signal the target gives when together they weigh less: a hand-written
    target naming only a button's name and role must match both, and it cannot reach 4."""
    attainable = sum(weight for key, weight in WEIGHTS.items() if target.get(key))
    return min(THRESHOLD, attainable)


def describe_target(target: dict[str, Any]) -> str:
    if target.get("name"):
        return repr(target["name"])
    return " ".join(f"{k}={target[k]!r}" for k in TARGET_KEYS if target.get(k)) or "{}"


def match(target: dict[str, Any], tree: Node | None, viewport: tuple[int, int]) -> tuple[Node | None, str]:
    """The best-supported node, or None and why (no match good enough, or a tie within MARGIN)."""
    ranked = sorted(((score(target, node, row, viewport), i, node) for i, (node, row) in enumerate(walk(tree))),
                    key=lambda t: (-t[0], t[1]))
    if not ranked or ranked[0][0] < threshold_for(target):
        return None, f"no element matches {describe_target(target)} well enough"
    if len(ranked) > 1 and ranked[0][0] - ranked[1][0] < MARGIN:
        return None, f"two elements match {describe_target(target)} equally"
    return ranked[0][2], ""


def unmet(condition: Mapping[str, Any], observation: Observation) -> str | None:
    """Why the observation does not satisfy an ``expect``/``finish`` condition; None when it does.
    Empty values are not checked (a recorded step whose next screen had no heading)."""
    tree = observation.accessibility_tree
    if condition.get("heading") and heading(tree) != condition["heading"]:
        return f"expected the screen {condition['heading']!r}, saw {heading(tree)!r}"
    title = observation.window_title
    if condition.get("window_title") and title != condition["window_title"]:
        return f"expected the window {condition['window_title']!r}, saw {title!r}"
    if condition.get("window_title_contains") and condition["window_title_contains"] not in (title or ""):
        return f"expected a window whose title contains {condition['window_title_contains']!r}, saw {title!r}"
    prefix = condition.get("banner_prefix")
    if prefix:
        shown = banner(tree)
        if not (shown and shown.startswith(prefix)):
            return f"expected a banner starting with {prefix!r}, saw {shown!r}"
    return None


# -- validation ----------------------------------------------------------------------------------
class WorkflowError(ValueError):
    """A workflow file that cannot be replayed; the message names the file and the line."""


def _check_condition(value: Any, where: str) -> str | None:
    if not isinstance(value, dict):
        return f"{where} must be an object with keys among {', '.join(CONDITIONS)}"
    unknown = [k for k in value if k not in CONDITIONS and k != "reason"]
    if unknown:
        return f"unknown {where} key {unknown[0]!r} (known: {', '.join(CONDITIONS)})"
    bad = [k for k in CONDITIONS if value.get(k) is not None and not isinstance(value[k], str)]
    if bad:
        return f"{where} {bad[0]} must be a string, got {value[bad[0]]!r}"
    return None


def _check_target(target: Any) -> tuple[str, str | None] | None:
    """(message, key the message is about) when the target is bad."""
    if not isinstance(target, dict):
        return "target must be an object with some of " + ", ".join(TARGET_KEYS), None
    unknown = [k for k in target if k not in TARGET_KEYS]
    if unknown:
        return f"unknown target key {unknown[0]!r} (known: {', '.join(TARGET_KEYS)})", unknown[0]
    if not any(target.get(k) for k in TARGET_KEYS):
        return "target gives no signal: give at least one of " + ", ".join(TARGET_KEYS), None
    position = target.get("position")
    if position is not None and not (
            isinstance(position, list) and len(position) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in position)):
        return f"target position must be [x, y] as fractions of the screen, got {position!r}", "position"
    return None


def _check_point(at: Any) -> str | None:
    """Why ``at`` is not ``[x, y]`` as fractions of the screen; None when it is."""
    if not (isinstance(at, list) and len(at) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1 for v in at)):
        return f"at must be [x, y] as fractions of the screen (each from 0 to 1), got {at!r}"
    return None


def _check_step(step: Any) -> tuple[str, tuple[str | int, ...]] | None:
    """(message, path inside the step the message is about) when the step is bad."""
    if not isinstance(step, dict):
        return "expected an object with an \"action\"", ()
    kind = step.get("action")
    if "action" not in step:
        return "no \"action\"", ()
    if kind not in STEP_TYPES:
        return f"unknown action type {kind!r} (known: {', '.join(STEP_TYPES)})", ("action",)
    unknown = [k for k in step if k not in STEP_KEYS]
    if unknown:
        return f"unknown step key {unknown[0]!r} (known: {', '.join(STEP_KEYS)})", (unknown[0],)
    target, at = step.get("target"), step.get("at")
    if at is not None:
        if kind not in (*TARGETED, "scroll"):
            return f"a {kind} step takes no at (only click, double_click, right_click and scroll do)", ("at",)
        if target is not None:
            return "a step gives a target or at, not both", ("at",)
        why = _check_point(at)
        if why:
            return why, ("at",)
    if kind in TARGETED and target is None and at is None:
        return f"a {kind} step needs a target (or at: [x, y] on a screen without an accessibility tree)", ("action",)
    if target is not None:
        bad = _check_target(target)
        if bad:
            return bad[0], ("target", bad[1]) if bad[1] else ("target",)
    if kind == "type" and not isinstance(step.get("text"), str):
        return "a type step needs text (a string)", ("text",) if "text" in step else ("action",)
    if kind == "key" and not (isinstance(step.get("key"), str) and step["key"]):
        return "a key step needs key, e.g. \"enter\"", ("key",) if "key" in step else ("action",)
    if kind == "hotkey":
        keys = step.get("keys")
        if not (isinstance(keys, list) and keys and all(isinstance(k, str) and k for k in keys)):
            return "a hotkey step needs keys, e.g. [\"ctrl\", \"s\"]", ("keys",) if "keys" in step else ("action",)
    if kind == "wait" and step.get("seconds") is not None:
        seconds = step["seconds"]
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds < float("inf"):
            return f"wait seconds must be a number >= 0, got {seconds!r}", ("seconds",)
    if kind == "scroll":
        direction = step.get("direction", "down")
        if direction not in ("up", "down", "left", "right"):
            return f"scroll direction must be up, down, left or right, got {direction!r}", ("direction",)
        amount = step.get("amount")
        if amount is not None and (isinstance(amount, bool) or not isinstance(amount, int) or amount < 1):
            return f"scroll amount must be a whole number >= 1, got {amount!r}", ("amount",)
    if step.get("expect") is not None:
        why = _check_condition(step["expect"], "expect")
        if why:
            return why, ("expect",)
    return None


def validate_workflow(data: Any, text: str, source: str) -> Workflow:
    """Check a parsed workflow; raise WorkflowError naming ``source`` and the line of the offending
    step. ``text`` is the file's JSON, used only to find lines."""
    def fail(message: str, *paths: tuple[str | int, ...]) -> WorkflowError:
        line = json_line(text, *paths, ())
        return WorkflowError(f"{source} line {line}: {message}" if line else f"{source}: {message}")

    if not isinstance(data, dict):
        raise fail("a workflow must be a JSON object with a \"steps\" list")
    schema = data.get("schema")
    if schema is not None and schema not in SCHEMAS:
        raise fail(f"unknown schema {schema!r} (known: {', '.join(SCHEMAS)})", ("schema",))
    steps = data.get("steps")
    if not isinstance(steps, list):
        raise fail("a workflow needs a \"steps\" list", ("steps",))
    for index, step in enumerate(steps):
        bad = _check_step(step)
        if bad:
            message, inner = bad
            raise fail(f"{message} in step {index + 1}", ("steps", index, *inner), ("steps", index))
    if data.get("finish") is not None:
        why = _check_condition(data["finish"], "finish")
        if why:
            raise fail(why, ("finish",))
    return data


def load_workflow(path: str | Path, source: str | None = None) -> Workflow:
    """Read and validate one workflow file; errors are WorkflowError naming the file and line."""
    path = Path(path)
    source = source or f"workflow {path}"
    try:
        text = read_text(path)
    except FileNotFoundError:
        raise WorkflowError(f"{source} does not exist") from None
    except OSError as exc:
        raise WorkflowError(f"{source} cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise WorkflowError(f"{source} cannot be read: {exc}") from None
    try:
        data = loads(text)
    except json.JSONDecodeError as exc:
        raise WorkflowError(f"{source} line {exc.lineno}: not valid JSON: {exc.msg} (column {exc.colno})") from None
    return validate_workflow(data, text, source)


def load_bundles(folder: Path, shown: str | None = None) -> dict[str, Workflow]:
    """Every ``folder/<task id>/workflow.json``, validated, by task id. Other files (a bundle's
    ``manifest.json``) are ignored."""
    shown = shown or str(folder)
    workflows: dict[str, Workflow] = {}
    for bundle in sorted(p for p in folder.iterdir() if p.is_dir()):
        file = bundle / "workflow.json"
        if file.is_file():
            workflows[bundle.name] = load_workflow(file, f"replay bundle {Path(shown) / bundle.name / 'workflow.json'}")
    return workflows


# -- the agent -----------------------------------------------------------------------------------
class ReplayAgent(Agent):
    """Replays the task's workflow by the best-supported match; halts rather than guess.

    ``workflows`` maps task ids to workflows; ``default`` is played for tasks without one (the
    MockMed arm plays one workflow for every task). A task with neither gets an ``error`` action.
    """

    name = "replay"

    def __init__(self, workflows: Mapping[str, Workflow] | None = None, *, default: Workflow | None = None,
                 source: str = "the replay bundles") -> None:
        self.workflows = dict(workflows or {})
        self.default = default
        self.source = source
        self.position = 0
        self.model_calls = 0  # the point of compiling: none, ever
        self._task_id: str | None = None

    def reset(self) -> None:
        self.position = 0
        self._task_id = None

    def workflow_for(self, task: Task) -> Workflow | None:
        return self.workflows.get(task.task_id, self.default)

    def act(self, observation: Observation, task: Task,
            history: list[tuple[Observation, Action]] | None = None) -> Action:
        workflow = self.workflow_for(task)
        if workflow is None:
            return Action(type="error", reason=f"no compiled workflow for task {task.task_id} in {self.source}")
        if self._task_id != task.task_id:  # a new task without reset(): start from the top
            self._task_id, self.position = task.task_id, 0
        steps = workflow["steps"]
        if self.position > 0:
            why = unmet(steps[self.position - 1].get("expect") or {}, observation)
            if why:
                return Action(type="fail", reason=f"step {self.position}: {why}; halting")
        if self.position >= len(steps):
            return self.finish(workflow, observation)
        step = steps[self.position]
        action = self.action_for(step, observation)
        if action.type == "fail":
            return action
        self.position += 1
        return action

    def finish(self, workflow: Workflow, observation: Observation) -> Action:
        """After the last step: ``done`` (the checker decides), or ``fail`` when the workflow's
        ``finish`` condition does not hold on the final screen."""
        condition = workflow.get("finish") or {}
        why = unmet(condition, observation)
        if why is None:
            return Action(type="done")
        return Action(type="fail", reason=f"{condition.get('reason') or 'finish: ' + why}; halting")

    def action_for(self, step: dict[str, Any], observation: Observation) -> Action:
        """The action of one step, or ``fail`` when its target cannot be found with confidence."""
        kind = step["action"]
        node: Node | None = None
        if step.get("target") is not None:
            node, why = match(step["target"], observation.accessibility_tree, observation.viewport or (1280, 800))
            if node is None:
                return Action(type="fail", reason=f"step {self.position + 1}: {why}; halting")
        if kind == "type":
            # As recorded: the target (when given) is only found, the text goes to the focused field.
            return Action(type="type", text=step["text"])
        if kind == "key":
            return Action(type="key", key=step["key"])
        if kind == "hotkey":
            return Action(type="hotkey", keys=list(step["keys"]))
        if kind == "wait":
            return Action(type="wait", seconds=step.get("seconds"))
        at: dict[str, Any] = {}
        if step.get("at") is not None:
            at = {"x": float(step["at"][0]), "y": float(step["at"][1]), "unit": "fraction"}
        if kind == "scroll":
            extra = self._point(node, coordinates=True) if node is not None else at
            return Action(type="scroll", scroll_direction=step.get("direction", "down"),
                          scroll_amount=step.get("amount"), **extra)
        if at:
            return Action(type=kind, **at)
        assert node is not None  # a targeted step has a target or at (validated)
        point = self._point(node)
        if not point:
            return Action(type="fail", reason=f"step {self.position + 1}: the element matching "
                                              f"{describe_target(step['target'])} has no id or position; halting")
        return Action(type=kind, **point)

    @staticmethod
    def _point(node: Node, *, coordinates: bool = False) -> dict[str, Any]:
        """Where to act on a node: its id (the environment finds it in the tree it showed), plus its
        centre in pixels when ``coordinates`` is asked for (WAA scrolls by position) or it has no id."""
        out: dict[str, Any] = {}
        if node.get("id") is not None:
            out["target_id"] = str(node["id"])
        box = node_bbox(node)
        if box is not None and (coordinates or "target_id" not in out):
            out.update(x=max(0.0, (box[0] + box[2]) / 2), y=max(0.0, (box[1] + box[3]) / 2), unit="px")
        return out


def make_agent(settings: Settings | None) -> ReplayAgent:
    """``--bench-agent replay``: validate every bundle in ``--bench-replay-bundles DIR`` now, so a bad one is a
    usage error before anything runs."""
    from pytest_agentbench.errors import ConfigError

    settings = settings_of(settings)
    given = settings.get("replay_bundles") if settings is not None else None
    if not given:
        raise ConfigError("--bench-agent replay needs --bench-replay-bundles DIR (a folder of <task id>/workflow.json)")
    folder = Path(given)
    if not folder.is_absolute() and settings is not None:
        folder = settings.invocation_dir / folder
    if not folder.is_dir():
        raise ConfigError(f"--bench-replay-bundles {given} is not a folder; give the folder that holds "
                                "<task id>/workflow.json")
    try:
        workflows = load_bundles(folder, given)
    except WorkflowError as exc:
        raise ConfigError(str(exc)) from None
    if not workflows:
        hint = " (it is one bundle: give the folder above it)" if (folder / "workflow.json").is_file() else ""
        raise ConfigError(f"--bench-replay-bundles {given} holds no <task id>/workflow.json{hint}")
    return ReplayAgent(workflows, source=given)
