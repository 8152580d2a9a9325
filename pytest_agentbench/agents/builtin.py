"""The offline agents: ``mock`` (passes mock tasks), ``noop`` (gives up at once), ``scripted``.

The models (pydantic) load when an agent first acts, not with this module: every run of a
benchmark builds its agent once to check it, also a run of suite benchmarks alone (ExtraDup),
which plays no episode.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentbench.agent import Agent
from pytest_agentbench.untrusted import loads, read_text

if TYPE_CHECKING:
    from pytest_agentbench.model import Action, Observation, Task


def _find(tree: dict[str, Any] | None, name: str) -> dict[str, Any] | None:
    if not tree:
        return None
    if tree.get("name") == name:
        return tree
    for child in tree.get("children", ()):
        found = _find(child, name)
        if found is not None:
            return found
    return None


class MockAgent(Agent):
    """Clicks the Submit button it finds in the accessibility tree, then says done."""

    name = "mock"

    def act(self, observation: Observation, task: Task,
            history: list[tuple[Observation, Action]] | None = None) -> Action:
        from pytest_agentbench.model import Action

        if history:
            return Action(type="done")
        submit = _find(observation.accessibility_tree, "Submit")
        if submit is None:
            return Action(type="fail", reason="no Submit button on screen")
        return Action(type="click", target_id=str(submit["id"]))


class NoopAgent(Agent):
    """Reports done without doing anything: the checker, not the claim, decides."""

    name = "noop"

    def act(self, observation: Observation, task: Task,
            history: list[tuple[Observation, Action]] | None = None) -> Action:
        from pytest_agentbench.model import Action

        return Action(type="done")


class ScriptedAgent(Agent):
    """Plays a fixed list of actions per task id, then ``done``.

    The key ``"*"`` is the script for tasks with no entry of their own. A task with neither gets an
    ``error`` action, so a typo in the script shows up as an agent failure rather than a pass.
    """

    name = "scripted"

    def __init__(self, scripts: dict[str, list[Action]]) -> None:
        self.scripts = scripts
        self._position = 0

    def reset(self) -> None:
        self._position = 0

    def act(self, observation: Observation, task: Task,
            history: list[tuple[Observation, Action]] | None = None) -> Action:
        from pytest_agentbench.model import Action

        script = self.scripts.get(task.task_id, self.scripts.get("*"))
        if script is None:
            return Action(type="error", reason=f"the script has no entry for task {task.task_id!r} and no '*' entry")
        if self._position >= len(script):
            return Action(type="done")
        action = script[self._position]
        self._position += 1
        return action


class ScriptError(ValueError):
    """An agent script that cannot be used; the message names the file and the bad entry."""


def load_script(path: str | Path) -> dict[str, list[Action]]:
    """Read ``{"task_id": [action, ...], "*": [...]}`` from JSON. Raises ValueError naming the file,
    the line and the bad entry."""
    from pydantic import ValidationError

    from pytest_agentbench.model import Action

    path = Path(path)
    try:
        text = read_text(path)
        data = loads(text)
    except FileNotFoundError:
        raise ScriptError(f"agent script {path} does not exist") from None
    except OSError as exc:
        raise ScriptError(f"agent script {path} cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ScriptError(f"agent script {path} is not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ScriptError(f"agent script {path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ScriptError(f"agent script {path} must be a JSON object mapping task ids to action lists")
    scripts: dict[str, list[Action]] = {}
    for task_id, actions in data.items():
        if not isinstance(actions, list):
            raise ScriptError(f"agent script {path}: entry {task_id!r} must be a list of actions")
        parsed = []
        for index, raw in enumerate(actions):
            try:
                parsed.append(Action.model_validate(raw))
            except ValidationError as exc:
                from pytest_agentbench.json_position import json_line

                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "action"
                # The line of the offending field when the error names one, else of the entry.
                field = tuple(p for p in first["loc"] if isinstance(p, (str, int)))[:1]
                line = json_line(text, (task_id, index, *field), (task_id, index))
                at = f" line {line}" if line else ""
                raise ScriptError(
                    f"agent script {path}{at}: {task_id}[{index}] {where}: {first['msg']} (got {first.get('input')!r})"
                ) from None
        scripts[str(task_id)] = parsed
    return scripts
