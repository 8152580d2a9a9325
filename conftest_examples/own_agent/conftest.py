"""Score your own agent: a ready-to-copy ``conftest.py`` that registers an agent named ``my-agent``.

Copy this file into the folder you run pytest from (or merge it into your ``conftest.py``), then::

    pytest --bench=mock --bench-agent my-agent --bench-limit 5    # 5 mock tasks, all pass
    pytest --bench=mock --bench-agent my-agent --bench-limit 20 -n 4
    pytest --bench=mock --bench-agent my-agent -m chrome    # one domain

The agent reads the accessibility tree of the observation, finds the element named ``Submit``,
and clicks the centre of its bounding box **by pixel coordinates** (``unit="px"``), the way a GUI
agent that sees a screen would. It then says ``done``. The benchmark's own checker, not the
agent's ``done``, decides whether the task passed.

Replace ``act`` with your model call. ``observation.screenshot`` holds PNG bytes (rendered only when
read), ``observation.accessibility_tree`` a nested dict of ``role``/``name``/``id``/``bbox``
(left, top, right, bottom) and ``children``, and ``task.instruction`` says what to do. Return one
:class:`pytest_agentbench.Action` per call:

* ``Action(type="click", x=..., y=..., unit="px")`` or ``Action(type="click", target_id="4")``
* ``Action(type="type", text="hello")``, ``Action(type="key", key="enter")``,
  ``Action(type="hotkey", keys=["ctrl", "s"])``
* ``Action(type="done")`` when finished, ``Action(type="fail", reason=...)`` when the task cannot
  be done, ``Action(type="error", reason=...)`` when the agent itself broke (a scored failure).

Another way, without registering a name: override the ``agent`` fixture in a conftest.py::

    @pytest.fixture
    def agent():
        return SubmitByPixelsAgent()

The registry way is better for anything you run often: the name shows in the run record, a bad
configuration (a missing API key, say) is reported once before any task runs, and xdist workers
build the agent from its name.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from pytest_agentbench import Action, Agent, Observation, Task


def find_element(tree: dict[str, Any] | None, name: str) -> dict[str, Any] | None:
    """Depth-first search of an accessibility tree for the first element called ``name``."""
    if not tree:
        return None
    if tree.get("name") == name:
        return tree
    for child in tree.get("children", ()):
        found = find_element(child, name)
        if found is not None:
            return found
    return None


class SubmitByPixelsAgent(Agent):
    """Clicks the centre of the Submit button's bounding box in pixels, then says done."""

    name = "my-agent"

    def __init__(self, target: str = "Submit") -> None:
        self.target = target

    def reset(self) -> None:
        """Called before every task: forget the previous episode."""

    def act(
        self,
        observation: Observation,
        task: Task,
        history: list[tuple[Observation, Action]] | None = None,
    ) -> Action:
        if history:  # the click has been executed; the checker decides whether it was right
            return Action(type="done", reason="clicked the button")
        element = find_element(observation.accessibility_tree, self.target)
        if element is None or not element.get("bbox"):
            return Action(type="fail", reason=f"no {self.target!r} element with a bounding box on screen")
        left, top, right, bottom = element["bbox"]
        return Action(
            type="click",
            x=(left + right) / 2,
            y=(top + bottom) / 2,
            unit="px",  # say so: pixel (1, 1) would otherwise read as a fraction of the screen
            reason=f"click {self.target} at the centre of its box",
        )


def pytest_agentbench_register_agents(registry):  # type: ignore[no-untyped-def]
    """Called once per process. ``factory(config)`` gets the ``pytest.Config`` (None outside pytest)."""

    def make(config: pytest.Config | None) -> Agent:
        # Read settings here, not at import time. Raising pytest.UsageError stops the run before
        # any task starts, with your message (for example when an API key is missing).
        target = os.environ.get("MY_AGENT_TARGET", "Submit")
        if not target:
            raise pytest.UsageError("MY_AGENT_TARGET is set but empty; unset it or name an element")
        return SubmitByPixelsAgent(target=target)

    registry.register("my-agent", make, description="clicks Submit by its pixel centre, then done")
