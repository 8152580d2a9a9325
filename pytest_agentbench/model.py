"""The data model every benchmark, agent and report shares.

These are pydantic v2 models so that a record written by one run can be read back, validated and
re-graded by another, and so that bad input fails with an error naming the field and the value.
They are plain data: nothing here talks to a VM, a model API or pytest.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

ActionType = Literal[
    "click",
    "double_click",
    "right_click",
    "type",
    "key",
    "hotkey",
    "scroll",
    "drag",
    "wait",
    "done",
    "fail",
    "answer",
    "error",
]

#: Actions that end an episode. They are never executed by the environment; the last one is handed
#: to the benchmark's checker (WAA's infeasible tasks pass only when the agent's final word is FAIL).
TERMINAL_ACTIONS: frozenset[str] = frozenset({"done", "fail", "answer", "error"})

ErrorType = Literal["agent", "infrastructure", "evaluation"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


class Task(_Model):
    """One benchmark task. ``task_id`` is the benchmark's own id (for WAA the file stem)."""

    task_id: str = Field(min_length=1)
    instruction: str = ""
    domain: str = "default"
    benchmark: str = ""
    #: The task's own step limit. An explicit ``--max-steps`` beats it (see ``episode.step_limit``).
    time_limit_steps: int | None = Field(default=None, ge=1)
    tags: list[str] = Field(default_factory=list)
    initial_state_ref: str | None = None
    raw_config: dict[str, Any] = Field(default_factory=dict)
    evaluation_spec: dict[str, Any] | None = None

    @field_validator("task_id", "domain")
    @classmethod
    def _node_name(cls, value: str, info: Any) -> str:
        # Ids and domains become node names, shown unescaped by some reports (see names.py).
        from .names import name_problem, shown

        problem = name_problem(value)
        if problem is not None:
            raise ValueError(f"{info.field_name} {shown(value)} {problem}")
        return value


class Observation(_Model):
    """What the agent sees before it acts.

    The screenshot is PNG bytes, given directly or produced on first access by a renderer, so that
    benchmarks whose screenshots nobody reads never pay for PNG encoding.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    accessibility_tree: dict[str, Any] | None = None
    window_title: str | None = None
    url: str | None = None
    app_name: str | None = None
    viewport: tuple[int, int] | None = None
    raw: dict[str, Any] | None = None

    _screenshot: bytes | None = PrivateAttr(default=None)
    _renderer: Callable[[], bytes] | None = PrivateAttr(default=None)

    def __init__(
        self,
        *,
        screenshot: bytes | None = None,
        renderer: Callable[[], bytes] | None = None,
        **data: Any,
    ) -> None:
        super().__init__(**data)
        if screenshot is not None and not isinstance(screenshot, (bytes, bytearray)):
            raise TypeError(f"screenshot must be PNG bytes, got {type(screenshot).__name__}")
        self._screenshot = bytes(screenshot) if screenshot is not None else None
        self._renderer = renderer

    @property
    def screenshot(self) -> bytes | None:
        """PNG bytes of the screen, rendered on first access when the benchmark renders lazily."""
        if self._screenshot is None and self._renderer is not None:
            self._screenshot = self._renderer()
            self._renderer = None
        return self._screenshot

    @property
    def has_screenshot(self) -> bool:
        return self._screenshot is not None or self._renderer is not None


class Action(_Model):
    """One agent action.

    Coordinates are pixels or fractions of the screen: ``unit`` says which. Left as ``None`` the
    unit is inferred (both values within [0, 1] and at least one not an integer means fractions),
    which is what the reference tool does; agents that may click pixel (1, 1) should set ``unit``.
    A click may instead name an element of the accessibility tree with ``target_id``.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    type: ActionType
    x: float | None = None
    y: float | None = None
    unit: Literal["px", "fraction"] | None = None
    target_id: str | None = Field(default=None, alias="target_node_id")
    end_x: float | None = None
    end_y: float | None = None
    text: str | None = None
    key: str | None = None
    keys: list[str] = Field(default_factory=list)
    scroll_direction: Literal["up", "down", "left", "right"] | None = None
    scroll_amount: int | None = None
    seconds: float | None = Field(default=None, ge=0)
    answer: str | None = None
    reason: str | None = None
    raw: dict[str, Any] | None = None

    @field_validator("x", "y", "end_x", "end_y")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and (not math.isfinite(value) or value < 0):
            raise ValueError(f"coordinate {value!r} must be a finite number >= 0")
        return value

    @model_validator(mode="after")
    def _required_fields(self) -> Action:
        kind = self.type
        if kind in ("click", "double_click", "right_click"):
            if self.target_id is None and (self.x is None or self.y is None):
                raise ValueError(f"a {kind} action needs x and y or target_id, got x={self.x!r} y={self.y!r}")
        elif kind == "type" and self.text is None:
            raise ValueError("a type action needs text")
        elif kind == "key" and not self.key:
            raise ValueError("a key action needs key")
        elif kind == "hotkey" and not self.keys:
            raise ValueError("a hotkey action needs keys, e.g. ['ctrl', 's']")
        elif kind == "drag" and None in (self.x, self.y, self.end_x, self.end_y):
            raise ValueError("a drag action needs x, y, end_x and end_y")
        return self

    @property
    def is_terminal(self) -> bool:
        return self.type in TERMINAL_ACTIONS

    def is_fraction(self) -> bool:
        """Whether ``x``/``y`` are fractions of the screen (see the class docstring)."""
        if self.unit is not None:
            return self.unit == "fraction"
        if self.x is None or self.y is None:
            return False
        in_unit = 0.0 <= self.x <= 1.0 and 0.0 <= self.y <= 1.0
        return in_unit and not (float(self.x).is_integer() and float(self.y).is_integer())

    def to_pixels(self, width: int, height: int) -> tuple[int, int] | None:
        """The click point in pixels on a ``width`` x ``height`` screen, or None without coordinates."""
        if self.x is None or self.y is None:
            return None
        if self.is_fraction():
            return round(self.x * width), round(self.y * height)
        return round(self.x), round(self.y)

    def describe(self) -> str:
        """A short human label, used in logs, reports and the viewer."""
        if self.target_id is not None:
            where = f" #{self.target_id}"
        elif self.x is not None and self.y is not None:
            where = f" ({self.x:g}, {self.y:g})"
        else:
            where = ""
        detail = self.text or self.key or "+".join(self.keys) or self.answer or self.reason or ""
        return f"{self.type}{where}" + (f" {detail!r}" if detail else "")


class Criterion(_Model):
    """One check behind a verdict. ``passed`` is None when the checker could not evaluate it."""

    name: str
    passed: bool | None
    detail: str = ""
    expected: Any = None
    actual: Any = None


class Verdict(_Model):
    """The benchmark checker's judgement of one episode. The agent's claim never enters it."""

    score: float = Field(ge=0.0, le=1.0)
    passed: bool | None
    criteria: list[Criterion] = Field(default_factory=list)
    reason: str = ""

    @classmethod
    def from_criteria(cls, criteria: list[Criterion], *, threshold: float = 1.0, reason: str = "") -> Verdict:
        """Partial credit: passed criteria over evaluated criteria; None when nothing was evaluated."""
        evaluated = [c for c in criteria if c.passed is not None]
        if not evaluated:
            why = reason or "no criterion could be evaluated"
            return cls(score=0.0, passed=None, criteria=criteria, reason=why)
        score = sum(1 for c in evaluated if c.passed) / len(evaluated)
        if not reason:
            failed = [c.name for c in evaluated if not c.passed]
            reason = "all criteria met" if not failed else "failed: " + ", ".join(failed)
        return cls(score=score, passed=score >= threshold, criteria=criteria, reason=reason)


class Step(_Model):
    """One executed (or terminal) action, with the observation the agent saw before it."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    index: int = Field(ge=0)
    action: Action
    reasoning: str | None = None
    seconds: float = 0.0
    screenshot_path: str | None = None
    cost_usd: float = 0.0
    #: the model usage the agent reported for this step (tokens, calls, model); None without a model
    usage: dict[str, Any] | None = None
    observation: Observation | None = Field(default=None, exclude=True)


class EpisodeRecord(_Model):
    """Everything one episode produced: the steps, the verdict and how it ended.

    ``error_type`` follows the reference tool's taxonomy: ``agent`` errors are outcomes counted as
    failures; ``infrastructure`` and ``evaluation`` errors are unscored and left out of the success
    rate.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    task_id: str
    benchmark: str = ""
    domain: str = "default"
    agent: str = ""
    instruction: str = ""
    steps: list[Step] = Field(default_factory=list)
    num_steps: int = Field(default=0, ge=0)
    step_limit: int = Field(default=0, ge=0)
    final_action: Action | None = None
    verdict: Verdict | None = None
    error: str | None = None
    error_type: ErrorType | None = None
    total_time_seconds: float = Field(default=0.0, ge=0.0)
    cost_usd: float = 0.0
    final_observation: Observation | None = Field(default=None, exclude=True)

    @property
    def success(self) -> bool:
        return self.error_type is None and self.verdict is not None and self.verdict.passed is True

    @property
    def score(self) -> float:
        if self.error_type in ("infrastructure", "evaluation") or self.verdict is None:
            return 0.0
        return self.verdict.score

    @property
    def reason(self) -> str | None:
        if self.error:
            return self.error
        return self.verdict.reason if self.verdict else None

    @property
    def is_outcome(self) -> bool:
        """Scored attempts: everything but infrastructure and evaluation errors and unevaluated ones."""
        if self.error_type in ("infrastructure", "evaluation"):
            return False
        if self.error_type == "agent":
            return True
        return self.verdict is not None and self.verdict.passed is not None
