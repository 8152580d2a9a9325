"""``--bench-agent planner-grounder``: two agents by name, one deciding what to do, one deciding where.

``--bench-planner NAME`` plays the episode: each step it is asked for its next action as usual.
When that action points somewhere (a click, double click, right click, drag or a scroll at a
point), its words (the action's ``reason``: what the model said it was doing) go to
``--bench-grounder NAME`` as a one-step task on the same screenshot, and the grounder's point
replaces the planner's: a strong reasoner that is vague about pixels, with a model trained to
find them (e.g. ``--bench-planner api-claude --bench-grounder api-vlm``). Any other action (typing,
keys, waiting, done, fail) is played as the planner gave it.

The grounder starts fresh for every grounding (``reset``), so its history never mixes tasks. When
it gives no point (an error, ``done``...) the planner's own point is played and the step's record
says so. A planner action with no words cannot be grounded and is played as it is.

Settings: both agents read the run's agent options, except that ``--bench-planner-model`` and
``--bench-grounder-model`` give each its own ``--bench-agent-model`` (the planner a Claude model,
the grounder a VLM served at ``--bench-agent-url``, say).

Cost: each agent's usage is taken after every step and recorded separately on the action
(``raw["planner_grounder"]["planner"]`` / ``["grounder"]``); the step's usage is their sum (so
budgets see both), its model named ``planner-model + grounder-model``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_agentbench.agent import Agent, Usage
from pytest_agentbench.model import Action, Observation, Task

if TYPE_CHECKING:
    from pytest_agentbench.budget import Budget

#: Actions whose target the grounder decides.
POINTED = frozenset({"click", "double_click", "right_click", "drag", "scroll"})

GROUNDING_INSTRUCTION = "On the current screen, do exactly this one step and nothing else: {words}"


class PlannerGrounderAgent(Agent):
    """See the module docstring."""

    name = "planner-grounder"

    def __init__(self, planner: Agent, grounder: Agent) -> None:
        self.planner, self.grounder = planner, grounder
        self._usage: Usage | None = None

    def __repr__(self) -> str:
        return f"PlannerGrounderAgent(planner={self.planner!r}, grounder={self.grounder!r})"

    @property
    def budget(self) -> Budget | None:
        return self.planner.budget

    @budget.setter
    def budget(self, value: Budget | None) -> None:
        self.planner.budget = value
        self.grounder.budget = value

    def reset(self) -> None:
        self.planner.reset()
        self.grounder.reset()
        self._usage = None

    def close(self) -> None:
        try:
            self.planner.close()
        finally:
            self.grounder.close()

    def take_usage(self) -> Usage | None:
        usage, self._usage = self._usage, None
        return usage

    def act(self, observation: Observation, task: Task,
            history: list[tuple[Observation, Action]] | None = None) -> Action:
        planned = self.planner.act(observation, task, history)
        planner_usage = self.planner.take_usage()
        grounded, note, grounder_usage = planned, None, None
        words = (planned.reason or "").strip()
        if planned.type in POINTED and (planned.x is not None or planned.target_id is not None):
            if words:
                grounded, note, grounder_usage = self._ground(planned, words, observation, task)
            else:
                note = "not grounded: the planner gave no words for this step"
        self._usage = _combined(planner_usage, grounder_usage)
        record: dict[str, Any] = {"planner": planner_usage.to_dict() if planner_usage else None,
                                  "grounder": grounder_usage.to_dict() if grounder_usage else None,
                                  "planned": planned.model_dump(exclude_none=True, exclude={"raw"})}
        if note:
            record["note"] = note
        return grounded.model_copy(update={"raw": {**(grounded.raw or {}), "planner_grounder": record}})

    def _ground(self, planned: Action, words: str, observation: Observation,
                task: Task) -> tuple[Action, str | None, Usage | None]:
        self.grounder.reset()
        step = Task(task_id=task.task_id, instruction=GROUNDING_INSTRUCTION.format(words=words),
                    benchmark=task.benchmark, domain=task.domain)
        answer = self.grounder.act(observation, step, [])
        usage = self.grounder.take_usage()
        if answer.x is None or answer.y is None or answer.unit is None:
            why = (f"the grounder gave no point ({answer.type}: {answer.reason or ''}); the planner's own "
                   "target was played")
            return planned, why, usage
        update: dict[str, Any] = {"x": answer.x, "y": answer.y, "unit": answer.unit, "target_id": None}
        if planned.type == "drag" and answer.end_x is not None and answer.end_y is not None:
            update.update(end_x=answer.end_x, end_y=answer.end_y)
        elif planned.type == "drag" and planned.x is not None and planned.end_x is not None:
            # the grounder found the start; the drag keeps the planner's offset
            dx, dy = planned.end_x - planned.x, (planned.end_y or 0) - (planned.y or 0)
            update.update(end_x=answer.x + dx, end_y=answer.y + dy)
        return planned.model_copy(update=update), None, usage


def _combined(planner: Usage | None, grounder: Usage | None) -> Usage | None:
    parts = [u for u in (planner, grounder) if u is not None]
    if not parts:
        return None
    return Usage(input_tokens=sum(u.input_tokens for u in parts), output_tokens=sum(u.output_tokens for u in parts),
                 cost_usd=sum(u.cost_usd for u in parts), calls=sum(u.calls for u in parts),
                 model=" + ".join(u.model or "?" for u in parts))


class RoleSettings:
    """The run's settings with one role's own model: what ``--bench-planner-model`` /
    ``--bench-grounder-model`` change for that agent alone."""

    def __init__(self, base: Any, model: str | None) -> None:
        self._base, self._model = base, model
        self.invocation_dir, self.rootdir = base.invocation_dir, base.rootdir

    def get(self, dest: str) -> Any:
        if dest == "agent_model" and self._model:
            return self._model
        return self._base.get(dest)


class RoleConfig:
    """The pytest config as an agent factory sees it for one role: everything the config has, and
    settings (:data:`~pytest_agentbench.settings.ATTRIBUTE`) with that role's model."""

    def __init__(self, config: Any, settings: RoleSettings) -> None:
        from pytest_agentbench.settings import ATTRIBUTE

        self._config = config
        setattr(self, ATTRIBUTE, settings)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._config, name)
