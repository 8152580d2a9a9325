"""The mock benchmark: offline tasks that exercise the harness, not an agent's skill.

Every task shows the same synthetic 1920x1200 window (OK, Cancel and Submit buttons and a text
field). The checker is the reference tool's: the task succeeds when Submit is clicked, or when text
was typed and OK clicked; otherwise partial credit 0.3 + 0.1 per distinct element clicked (at most
3) + 0.2 if anything was typed, or 0 when the agent did nothing. Screenshots are drawn only when
something reads them.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_agentbench.benches.mock.png import BAND_ROWS, BandedEncoder
from pytest_agentbench.benchmark import Benchmark
from pytest_agentbench.model import Action, Criterion, Observation, Task, Verdict

if TYPE_CHECKING:
    from PIL import Image, ImageFont

#: The Windows Agent Arena domains, in the reference tool's order; mock tasks use the first three
#: unless told otherwise.
MOCK_DOMAINS: tuple[str, ...] = (
    "chrome", "clock", "file_explorer", "libreoffice_calc", "libreoffice_writer", "microsoft_paint",
    "msedge", "notepad", "settings", "vlc", "vs_code", "windows_calc",
)
SCREEN = (1920, 1200)
TITLE = "Mock Window - Testing"


@dataclass(frozen=True)
class Element:
    id: str
    role: str
    name: str
    box: tuple[int, int, int, int]  # left, top, right, bottom
    fill: str

    def contains(self, x: int, y: int) -> bool:
        left, top, right, bottom = self.box
        return left <= x <= right and top <= y <= bottom


ELEMENTS: tuple[Element, ...] = (
    Element("1", "button", "OK", (100, 100, 200, 140), "#2f6fdf"),
    Element("2", "edit", "Input", (100, 160, 500, 200), "#ffffff"),
    Element("3", "button", "Cancel", (220, 100, 320, 140), "#8a8f98"),
    Element("4", "button", "Submit", (350, 100, 450, 140), "#2e9b4f"),
)
_BY_ID = {e.id: e for e in ELEMENTS}


def accessibility_tree() -> dict[str, Any]:
    """The window's tree. The same object every time: agents must treat it as read-only."""
    return _TREE


def _build_tree() -> dict[str, Any]:
    return {
        "role": "window",
        "name": "Mock Window",
        "id": "0",
        "bbox": [0, 0, *SCREEN],
        "children": [
            {"role": e.role, "name": e.name, "id": e.id, "bbox": list(e.box), "children": []} for e in ELEMENTS
        ],
    }


_TREE = _build_tree()


@dataclass
class _State:
    task: Task
    step: int = 0
    clicked: list[str] = field(default_factory=list)
    typed: str = ""
    actions: list[str] = field(default_factory=list)


def render_window(task_id: str, step: int, typed: str, clicked: list[str]) -> bytes:
    """Draw the synthetic window as PNG. Called only when someone reads the screenshot.

    Only the bands of rows that the task line, the clicked outlines and the typed text can change
    are read off the canvas and encoded; the others are the template's (the window as no step has
    changed it), which they equal: the rest of the drawing does not depend on the state. Reading the
    whole 7 MB canvas, cutting it into rows and comparing every band cost two thirds of a screenshot.
    """
    task_line = f"task {task_id} - step {step}"
    encoder = _encoder()
    changed: dict[int, bytes] = {}
    with _CANVAS_LOCK:
        canvas = _draw(_canvas(), task_line, typed, clicked)
        for index in sorted(_changed_bands(encoder, task_line, typed, clicked)):
            rows = encoder.band_rows(index)
            changed[index] = canvas.crop((0, rows.start, SCREEN[0], rows.stop)).tobytes()
    return encoder.encode_bands(changed)


#: Rows added on each side of a text's box when finding the bands it changes: a safety margin for
#: anti-aliasing, which costs nothing unless it reaches into another band.
_MARGIN_ROWS = 2


def _changed_bands(encoder: BandedEncoder, task_line: str, typed: str, clicked: list[str]) -> set[int]:
    """The bands in which ``_draw`` for this state can differ from the template: the task line's,
    each clicked element's (its outline), and with text typed the edit field's and the text's."""
    from PIL import Image, ImageDraw

    measure = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    font = _font()
    spans = [measure.textbbox((100, 240), task_line, font=font)[1::2]]
    for element in ELEMENTS:
        if element.id in clicked or (element.role == "edit" and typed):
            spans.append(element.box[1::2])
        if element.role == "edit" and typed:
            for label in (typed, element.name):
                spans.append(measure.textbbox((element.box[0] + 10, element.box[1] + 10), label, font=font)[1::2])
    bands: set[int] = set()
    for first, last in spans:
        top = max(0, int(first) - _MARGIN_ROWS)
        bottom = min(SCREEN[1] - 1, int(last) + 1 + _MARGIN_ROWS)
        bands.update(range(top // BAND_ROWS, bottom // BAND_ROWS + 1))
    return bands


#: One canvas drawn over at every screenshot: a new 1920x1200 image is 9 MB that Pillow returns to
#: the system when it is freed, and faulting it in again cost more than the encoding (13 ms a time).
_CANVAS_LOCK = threading.Lock()


@functools.cache
def _canvas() -> Image.Image:
    from PIL import Image

    return Image.new("RGB", SCREEN)


@functools.cache
def _encoder() -> BandedEncoder:
    """The PNG encoder, with the window as no step has changed it (no task line) for template."""
    from PIL import Image

    return BandedEncoder(SCREEN, _draw(Image.new("RGB", SCREEN), None, "", []).tobytes())


def _draw(image: Image.Image, task_line: str | None, typed: str, clicked: list[str]) -> Image.Image:
    """The window drawn over the whole of ``image`` (of size ``SCREEN``); returns ``image``."""
    from PIL import ImageDraw

    draw = ImageDraw.Draw(image)
    font = _font()
    draw.rectangle((0, 0, SCREEN[0], SCREEN[1]), fill="#eef0f3")
    draw.rectangle((0, 0, SCREEN[0], 60), fill="#1f2a3a")
    draw.text((20, 18), TITLE, fill="#ffffff", font=font)
    for element in ELEMENTS:
        outline = "#f5a623" if element.id in clicked else "#3b4656"
        draw.rectangle(element.box, fill=element.fill, outline=outline, width=3)
        label = typed if element.role == "edit" and typed else element.name
        color = "#000000" if element.role == "edit" else "#ffffff"
        draw.text((element.box[0] + 10, element.box[1] + 10), label, fill=color, font=font)
    if task_line is not None:
        draw.text((100, 240), task_line, fill="#3b4656", font=font)
    return image


@functools.cache
def _font() -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    """Pillow's built-in font at a readable size (Pillow >= 10.1), else its small bitmap font;
    loaded once (it is decoded from Pillow's embedded copy on every call)."""
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=20)
    except TypeError:
        return ImageFont.load_default()


class MockBenchmark(Benchmark):
    """``num_tasks`` tasks spread evenly over ``domains`` (the remainder goes to the first ones).

    Ids are ``mock_<domain>_<NNN>``, numbered from 1 within each domain, as in the reference tool.
    """

    name = "mock"
    #: the window's size: what a step's screenshot is priced at by ``--bench-dry-run``
    screen_size = (1920, 1200)

    def __init__(self, num_tasks: int = 10, domains: list[str] | tuple[str, ...] | None = None) -> None:
        if num_tasks < 0:
            raise ValueError(f"num_tasks must be >= 0, got {num_tasks}")
        self.num_tasks = num_tasks
        self.domains = tuple(domains) if domains else MOCK_DOMAINS[:3]
        self._state: _State | None = None

    # -- tasks -------------------------------------------------------------------------------
    def list_tasks(self, limit: int | None = None) -> list[Task]:
        count = self.num_tasks if limit is None else limit
        per_domain, remainder = divmod(count, len(self.domains))
        tasks: list[Task] = []
        for index, domain in enumerate(self.domains):
            for number in range(1, per_domain + (1 if index < remainder else 0) + 1):
                tasks.append(
                    Task(
                        task_id=f"mock_{domain}_{number:03d}",
                        instruction=f"Mock task {number} in {domain} domain: click the Submit button.",
                        domain=domain,
                        benchmark=self.name,
                        time_limit_steps=15,
                        raw_config={"mock": True, "synthetic": True},
                    )
                )
        return tasks

    def load_task(self, task_id: str) -> Task:
        prefix, _, rest = task_id.partition("_")
        domain, _, number = rest.rpartition("_")
        if prefix != "mock" or domain not in MOCK_DOMAINS or not number.isdigit() or int(number) < 1:
            raise KeyError(task_id)
        return Task(
            task_id=task_id,
            instruction=f"Mock task {int(number)} in {domain} domain: click the Submit button.",
            domain=domain,
            benchmark=self.name,
            time_limit_steps=15,
            raw_config={"mock": True, "synthetic": True},
        )

    # -- environment -------------------------------------------------------------------------
    def reset(self, task: Task) -> Observation:
        self._state = _State(task=task)
        return self._observe()

    def step(self, action: Action) -> Observation:
        state = self._require_state()
        state.step += 1
        state.actions.append(action.type)
        if action.type in ("click", "double_click"):
            element = self._hit(action)
            if element is not None:
                state.clicked.append(element.id)
        elif action.type == "type":
            state.typed += action.text or ""
        return self._observe()

    def observe(self) -> Observation:
        return self._observe()

    def _observe(self) -> Observation:
        state = self._require_state()
        task_id, step, typed, clicked = state.task.task_id, state.step, state.typed, list(state.clicked)
        return Observation(
            renderer=lambda: render_window(task_id, step, typed, clicked),
            accessibility_tree=accessibility_tree(),
            window_title=TITLE,
            app_name="mock",
            viewport=SCREEN,
        )

    def _hit(self, action: Action) -> Element | None:
        if action.target_id is not None:
            return _BY_ID.get(str(action.target_id))
        point = action.to_pixels(*SCREEN)
        if point is None:
            return None
        return next((e for e in ELEMENTS if e.contains(*point)), None)

    def _require_state(self) -> _State:
        if self._state is None:
            raise RuntimeError("mock benchmark used before reset()")
        return self._state

    # -- checker -----------------------------------------------------------------------------
    def evaluate(self, task: Task, final_action: Action | None) -> Verdict:
        state = self._require_state()
        distinct = list(dict.fromkeys(state.clicked))
        submit = "4" in distinct
        typed = bool(state.typed)
        ok_after_typing = typed and "1" in distinct
        if submit:
            how = "Submit was clicked"
        elif ok_after_typing:
            how = "text was typed and OK clicked"
        else:
            how = "neither Submit clicked nor text typed and OK clicked"
        # One criterion: the two ways to pass are alternatives, not separate requirements.
        criteria = [Criterion(name="form submitted", passed=submit or ok_after_typing, detail=how,
                              actual={"clicked": distinct, "typed": state.typed})]
        final = final_action.type if final_action else None
        reason = f"clicked={distinct}, typed={state.typed!r}, final={final}"
        if submit or ok_after_typing:
            return Verdict(score=1.0, passed=True, criteria=criteria, reason=reason)
        score = 0.0
        if distinct or typed:
            score = round(0.3 + 0.1 * min(len(distinct), 3) + (0.2 if typed else 0.0), 10)
        return Verdict(score=score, passed=False, criteria=criteria, reason=reason)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "synthetic": True, "domains": list(self.domains), "screen": list(SCREEN)}
