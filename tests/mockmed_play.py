"""MockMed's task as a model sees it: where to click and what to type, found by playing it once.

The model-agent fakes (``fake_anthropic``, ``fake_openai``, ``fake_chat``) only see screenshots, so,
as the mock benchmark's tests know where Submit is, these know where MockMed's controls are: a
fresh ``clean`` app is played here, in the test process, by coordinates only (a click at each
control's centre, typing into the focused field) with the headless driver the benchmark uses,
and each step is kept as fractions of the screen. Playing it also proves that clicks at those points
complete the task (the saved banner shows), so a fake that replays them plays what a model would.

``screen_steps(row)`` opens the patient in ``row``: Jane Sample's is the task; another row's is the
wrong click the checker must catch."""

from __future__ import annotations

import functools
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

GOLD_ROW = "Jane Sample"
WRONG_ROW = "Alex Testcase"


@dataclass(frozen=True)
class ScreenStep:
    """One step by coordinates: ``click`` at (x, y), fractions of the screen, or ``type`` ``text``;
    ``words`` is how a planner would say it."""

    kind: str
    words: str
    x: float = 0.0
    y: float = 0.0
    text: str = ""

    def pixels(self, width: int, height: int) -> list[int]:
        return [round(self.x * width), round(self.y * height)]

    def thousandths(self) -> list[int]:
        """Qwen3-VL's [0, 1000] coordinates."""
        return [round(self.x * 1000), round(self.y * 1000)]


@functools.cache
def screen_steps(row: str = GOLD_ROW) -> tuple[ScreenStep, ...]:
    from pytest_agentbench.agents.replay import banner, center
    from pytest_agentbench.benches.mockmed.app import serve
    from pytest_agentbench.benches.mockmed.arms import Step, _steps, find
    from pytest_agentbench.benches.mockmed.driver import HeadlessDriver
    from pytest_agentbench.model import Action

    steps = []
    with tempfile.TemporaryDirectory(prefix="mockmed-play-") as folder:
        server = serve(Path(folder) / "mockmed.sqlite")
        try:
            with HeadlessDriver(server.url) as driver:
                observation = driver.observe()
                for step in _steps(Step("button", "Open", within_row=row)):
                    if step.kind == "type":
                        done = ScreenStep("type", f"Type {step.text!r}", text=step.text)
                        observation = driver.act(Action(type="type", text=step.text))
                    else:
                        node = find(observation.accessibility_tree, step.role, step.name, within_row=step.within_row)
                        assert node is not None, f"no {step.role} {step.name!r} on {driver.url}"
                        x, y = center(node, observation.viewport or (1280, 800))
                        where = f" in the row of {step.within_row}" if step.within_row else ""
                        done = ScreenStep("click", f"Click the {step.name} {step.role}{where}.", x, y)
                        observation = driver.act(Action(type="click", x=x, y=y, unit="fraction"))
                    steps.append(done)
                shown = banner(observation.accessibility_tree) or ""
                assert shown.startswith("Encounter saved"), f"played by coordinates, MockMed shows {shown!r}"
        finally:
            server.stop()
    return tuple(steps)


class Replayer:
    """The steps in order, one per model call, then None (the task is done). A stateful script: the
    tests play one MockMed item, so one conversation, whatever history the agent trims."""

    def __init__(self, row: str = GOLD_ROW) -> None:
        self.steps = list(screen_steps(row))
        self.calls = 0
        self._lock = threading.Lock()

    def next(self) -> ScreenStep | None:
        with self._lock:
            index, self.calls = self.calls, self.calls + 1
        return self.steps[index] if index < len(self.steps) else None

    def grounding(self, words: str) -> ScreenStep | None:
        """The click the planner's ``words`` describe (for a grounder), or None."""
        return next((s for s in self.steps if s.kind == "click" and s.words in words), None)
