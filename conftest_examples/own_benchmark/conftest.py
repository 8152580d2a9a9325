"""Your own benchmark: a ready-to-copy ``conftest.py`` that registers a small to-do list benchmark.

Copy this file into the folder you run pytest from, then::

    pytest --bench=todo --bench-agent todo-agent                                # its own agent: 3 passed
    pytest --bench=todo --bench-agent noop                                      # says done at once: 3 failed
    pytest --bench=todo --bench-agent todo-agent -m add --strict-markers        # one domain: 2 passed
    pytest --bench=todo --bench-agent todo-agent --bench-task complete_laundry  # one task by its exact id
    pytest --bench=todo --collect-only -q                                 # list the node ids
    pytest --bench=todo --bench-agent scripted --bench-agent-script script.json       # 2 passed, 1 failed

with ``script.json`` holding actions per task id (``"*"`` is the fallback for tasks without an
entry)::

    {
      "add_milk":         [{"type": "type", "text": "milk"}, {"type": "click", "target_id": "add"}],
      "add_eggs_bread":   [{"type": "type", "text": "eggs"}, {"type": "key", "key": "enter"}],
      "complete_laundry": [{"type": "click", "x": 35, "y": 85, "unit": "px"}]
    }

That script forgets the bread, so ``add_eggs_bread`` fails with partial credit 0.667 (two of its
three criteria hold); ``results.jsonl`` and ``trajectory.json`` show the score and each criterion.

What a benchmark implements (:class:`pytest_agentbench.Benchmark`):

* ``list_tasks(limit)`` returns :class:`pytest_agentbench.Task` objects. ``task_id`` is your own id
  (no brackets, ``::`` or spaces), ``domain`` becomes a pytest marker and a node-id level:
  ``bench/todo::add::add_milk``.
* ``reset(task)`` brings the environment to the task's start state and returns the first
  :class:`pytest_agentbench.Observation`. One instance serves one process and plays its tasks one
  after another, so reset must undo whatever ran before.
* ``step(action)`` executes one non-terminal action and returns the next observation.
* ``evaluate(task, final_action)`` is the checker. It looks at the environment, never at what the
  agent claims, and returns a :class:`pytest_agentbench.Verdict`. ``Verdict.from_criteria`` gives
  partial credit: passed criteria over evaluated criteria; the task passes at score 1.0 (change
  it with ``threshold=``). A criterion with ``passed=None`` was not evaluated; when none could be,
  the item is skipped as "not evaluated" and left out of the success rate.
* Raise :class:`pytest_agentbench.InfrastructureError` from ``reset``/``step`` when the environment
  is down: the item becomes a pytest error and is left out of the success rate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_agentbench import Action, Agent, Benchmark, Criterion, Observation, Task, Verdict

SCREEN = (420, 320)
INPUT_BOX = (20, 20, 320, 50)
ADD_BOX = (330, 20, 400, 50)


def row_boxes(index: int) -> tuple[tuple[int, int, int, int], tuple[int, int, int, int]]:
    """The checkbox and label boxes (left, top, right, bottom) of list row ``index``."""
    top = 70 + 40 * index
    return (20, top, 50, top + 30), (60, top, 400, top + 30)


def make_task(task_id: str, domain: str, instruction: str, start: list[str], want: dict[str, bool]) -> Task:
    return Task(
        task_id=task_id,
        domain=domain,
        benchmark="todo",
        instruction=instruction,
        time_limit_steps=10,
        tags=["todo", "offline"],
        raw_config={"start": start},
        # name -> required done flag; everything else must stay as it started
        evaluation_spec={"want": want},
    )


TASKS = [
    make_task("add_milk", "add", 'Add "milk" to the to-do list.', ["laundry"], {"milk": False}),
    make_task("add_eggs_bread", "add", 'Add "eggs" and "bread" to the to-do list.', ["laundry"],
              {"eggs": False, "bread": False}),
    make_task("complete_laundry", "complete", 'Mark "laundry" as done.', ["laundry", "call mum"],
              {"laundry": True}),
]


@dataclass
class TodoState:
    start: list[tuple[str, bool]]
    items: list[list[Any]] = field(default_factory=list)  # [name, done]
    draft: str = ""


class TodoBenchmark(Benchmark):
    """A to-do list app: a text field, an Add button and one checkbox per item."""

    name = "todo"

    def __init__(self) -> None:
        self.state: TodoState | None = None

    # -- tasks ---------------------------------------------------------------------------------
    def list_tasks(self, limit: int | None = None) -> list[Task]:
        return [task.model_copy(deep=True) for task in TASKS]  # the caller sorts and applies limit

    # -- environment ---------------------------------------------------------------------------
    def reset(self, task: Task) -> Observation:
        start = [(name, False) for name in task.raw_config.get("start", [])]
        self.state = TodoState(start=start, items=[[name, done] for name, done in start])
        return self.observe()

    def step(self, action: Action) -> Observation:
        state = self._state()
        if action.type == "type":
            state.draft += action.text or ""
        elif action.type == "key" and action.key in ("enter", "return"):
            self._add()
        elif action.type == "click":
            target = action.target_id or self._hit(action)
            if target == "add":
                self._add()
            elif target and target.startswith("item-"):
                index = int(target.split("-", 1)[1])
                if 0 <= index < len(state.items):
                    state.items[index][1] = not state.items[index][1]
        # other actions (scroll, wait, clicks on nothing) change nothing
        return self.observe()

    def _add(self) -> None:
        state = self._state()
        if state.draft.strip():
            state.items.append([state.draft.strip(), False])
        state.draft = ""

    def _hit(self, action: Action) -> str | None:
        point = action.to_pixels(*SCREEN)
        if point is None:
            return None
        x, y = point
        boxes = [("input", INPUT_BOX), ("add", ADD_BOX)]
        boxes += [(f"item-{i}", row_boxes(i)[0]) for i in range(len(self._state().items))]
        for element_id, (left, top, right, bottom) in boxes:
            if left <= x <= right and top <= y <= bottom:
                return element_id
        return None

    def observe(self) -> Observation:
        state = self._state()
        rows = [
            {"role": "checkbox", "name": name, "id": f"item-{i}", "checked": done,
             "bbox": list(row_boxes(i)[0]), "children": []}
            for i, (name, done) in enumerate(state.items)
        ]
        tree = {
            "role": "window", "name": "To-do", "id": "root", "bbox": [0, 0, *SCREEN],
            "children": [
                {"role": "edit", "name": "New item", "id": "input", "value": state.draft,
                 "bbox": list(INPUT_BOX), "children": []},
                {"role": "button", "name": "Add", "id": "add", "bbox": list(ADD_BOX), "children": []},
                {"role": "list", "name": "Items", "id": "items", "children": rows},
            ],
        }
        items, draft = [tuple(item) for item in state.items], state.draft
        # The screenshot is drawn only when the agent or --bench-screenshots reads it.
        return Observation(renderer=lambda: render(items, draft), accessibility_tree=tree,
                           window_title="To-do", app_name="todo", viewport=SCREEN)

    def _state(self) -> TodoState:
        if self.state is None:
            raise RuntimeError("todo benchmark used before reset()")
        return self.state

    # -- checker -------------------------------------------------------------------------------
    def evaluate(self, task: Task, final_action: Action | None) -> Verdict:
        state = self._state()
        want: dict[str, bool] = (task.evaluation_spec or {}).get("want", {})
        final = [(name, done) for name, done in state.items]
        criteria = []
        for name, done in want.items():
            found = [d for n, d in final if n == name]
            criteria.append(Criterion(
                name=f"{name!r} {'done' if done else 'on the list'}",
                passed=found == [done],  # exactly once, with the right flag
                expected=[done],
                actual=found,
            ))
        others_now = [(n, d) for n, d in final if n not in want]
        others_before = [(n, d) for n, d in state.start if n not in want]
        criteria.append(Criterion(
            name="nothing else changed",
            passed=others_now == others_before,
            expected=[list(i) for i in others_before],
            actual=[list(i) for i in others_now],
        ))
        return Verdict.from_criteria(criteria)


def render(items: list[tuple[str, bool]], draft: str) -> bytes:
    import io

    from PIL import Image, ImageDraw

    image = Image.new("RGB", SCREEN, "#ffffff")
    draw = ImageDraw.Draw(image)
    draw.rectangle(INPUT_BOX, outline="#555555")
    draw.text((INPUT_BOX[0] + 6, INPUT_BOX[1] + 9), draft or "New item", fill="#000000" if draft else "#999999")
    draw.rectangle(ADD_BOX, fill="#2e6fdf")
    draw.text((ADD_BOX[0] + 22, ADD_BOX[1] + 9), "Add", fill="#ffffff")
    for i, (name, done) in enumerate(items):
        box, label = row_boxes(i)
        draw.rectangle(box, outline="#555555", fill="#2e9b4f" if done else "#ffffff")
        draw.text((label[0], label[1] + 9), name, fill="#000000")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


class TodoAgent(Agent):
    """Reads the quoted names in the instruction and plays them: add them, or tick their boxes."""

    name = "todo-agent"

    def __init__(self) -> None:
        self.plan: list[Action] = []

    def reset(self) -> None:
        self.plan = []

    def act(self, observation: Observation, task: Task,
            history: list[tuple[Observation, Action]] | None = None) -> Action:
        if not history:
            self.plan = self.make_plan(observation, task)
        return self.plan.pop(0) if self.plan else Action(type="done")

    @staticmethod
    def make_plan(observation: Observation, task: Task) -> list[Action]:
        names = re.findall(r'"([^"]+)"', task.instruction)
        if task.instruction.startswith("Add"):
            plan = []
            for name in names:
                plan += [Action(type="type", text=name), Action(type="click", target_id="add")]
            return plan
        if task.instruction.startswith("Mark"):
            tree = observation.accessibility_tree or {}
            rows = next((c["children"] for c in tree.get("children", []) if c.get("id") == "items"), [])
            boxes = [r["id"] for r in rows if r["name"] in names and not r.get("checked")]
            return [Action(type="click", target_id=box) for box in boxes]
        return [Action(type="fail", reason="instruction not understood")]


def pytest_agentbench_register_benchmarks(registry):  # type: ignore[no-untyped-def]
    registry.register("todo", lambda config: TodoBenchmark(),
                      description="offline to-do list: 3 tasks in 2 domains (add, complete)")


def pytest_agentbench_register_agents(registry):  # type: ignore[no-untyped-def]
    registry.register("todo-agent", lambda config: TodoAgent(),
                      description="adds or ticks the quoted items of the instruction")


# Optional: inspect each finished episode; keys under payload["extra"] land in results.jsonl.
@pytest.hookimpl
def pytest_agentbench_episode_finished(record, item, payload):  # type: ignore[no-untyped-def]
    if record.benchmark == "todo" and record.verdict is not None:
        payload["extra"]["criteria_met"] = sum(1 for c in record.verdict.criteria if c.passed)
