"""The data model every benchmark, agent and report shares.

These are pydantic v2 models so that a record written by one run can be read back, validated and
re-graded by another, and so that bad input fails with an error naming the field and the value.
They are plain data: nothing here talks to a VM, a model API or pytest.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from pytest_agentbench.names import name_problem, shown

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
    model_config = ConfigDict(extra="forbid", validate_assignment=False, defer_build=True)


class Task(_Model):
    """One benchmark task. ``task_id`` is the benchmark's own id (for WAA the file stem)."""

    # The descriptions document the task's JSON form in the run record's schemas (record/models.py).
    model_config = ConfigDict(json_schema_extra={
        "description": "The task as played (pytest_agentbench.Task). Runs through pytest write every field; "
                       "evaluate_agent_on_benchmark writes only task_id for an id the benchmark does not know."})

    task_id: str = Field(min_length=1, description="The benchmark's own task id (no brackets, '::' or whitespace).")
    instruction: str = Field(default="", description="What the agent is asked to do.")
    domain: str = Field(default="default",
                        description="Domain (application or area) of the task; also a pytest marker.")
    benchmark: str = Field(default="", description="Registry name of the benchmark.")
    #: The task's own step limit. An explicit ``--bench-max-steps`` beats it (see ``episode.step_limit``).
    time_limit_steps: int | None = Field(default=None, ge=1,
                                         description="The task's own step limit; an explicit --bench-max-steps "
                                                     "beats it.")
    tags: list[str] = Field(default_factory=list, description="Free tags; -k matches them.")
    initial_state_ref: str | None = Field(
        default=None, description="Reference to the task's start state (snapshot, fixture file), if any.")
    raw_config: dict[str, Any] = Field(default_factory=dict,
                                       description="The benchmark's own task configuration, unchanged.")
    evaluation_spec: dict[str, Any] | None = Field(
        default=None, description="The benchmark's own checker configuration, if kept apart from raw_config.")

    @field_validator("task_id", "domain")
    @classmethod
    def _node_name(cls, value: str, info: Any) -> str:
        # Ids and domains become node names, shown unescaped by some reports (see names.py).
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

    model_config = ConfigDict(extra="forbid", populate_by_name=True, json_schema_extra={
        "description": "One agent action (pytest_agentbench.Action) as JSON. Records written by a pytest run leave "
                       "out fields that are null or at their default; records written by evaluate_agent_on_benchmark "
                       "may carry every field, with nulls."})

    type: ActionType = Field(description="The action kind. done, fail, answer and error are terminal: they end the "
                                         "episode, are never executed and are not counted as steps.")
    x: float | None = Field(default=None, json_schema_extra={"minimum": 0}, description=(
        "Horizontal coordinate, in pixels or as a fraction of the screen (see unit)."))
    y: float | None = Field(default=None, json_schema_extra={"minimum": 0}, description=(
        "Vertical coordinate, in pixels or as a fraction of the screen (see unit)."))
    unit: Literal["px", "fraction"] | None = Field(default=None, description=(
        "Unit of x/y/end_x/end_y. Null means inferred: both values in [0, 1] and at least one not an integer means "
        "fractions, otherwise pixels."))
    # Input may say target_node_id (the reference tool's name); the record always says target_id.
    target_id: str | None = Field(default=None, validation_alias=AliasChoices("target_node_id", "target_id"),
                                  description="Id of the accessibility-tree element a click names instead of "
                                              "coordinates (accepted on input as target_node_id).")
    end_x: float | None = Field(default=None, json_schema_extra={"minimum": 0}, description="Drag end, horizontal.")
    end_y: float | None = Field(default=None, json_schema_extra={"minimum": 0}, description="Drag end, vertical.")
    text: str | None = Field(default=None, description="Text of a type action.")
    key: str | None = Field(default=None, description="Key of a key action, e.g. enter.")
    keys: list[str] = Field(default_factory=list, description='Keys of a hotkey action, e.g. ["ctrl", "s"].')
    scroll_direction: Literal["up", "down", "left", "right"] | None = Field(
        default=None, description="Direction of a scroll action.")
    scroll_amount: int | None = Field(
        default=None, description="Amount of a scroll action, in the environment's units.")
    seconds: float | None = Field(default=None, ge=0, description="Duration of a wait action.")
    answer: str | None = Field(default=None, description="The agent's answer (answer actions).")
    reason: str | None = Field(default=None, description="The agent's stated reason or reasoning for this action.")
    raw: dict[str, Any] | None = Field(default=None, description="Agent-specific extra data, passed through unchanged.")

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

    # Records always carry every field (a full model_dump): the schema requires them all.
    model_config = ConfigDict(json_schema_serialization_defaults_required=True, json_schema_extra={
        "description": "One check behind a verdict (pytest_agentbench.Criterion)."})

    name: str = Field(description="What the checker checked.")
    passed: bool | None = Field(description="Whether the check held; null when the checker could not evaluate it.")
    detail: str = Field(default="", description="Free-text explanation (may be empty).")
    expected: Any = Field(default=None, description="The expected value, any JSON (null when the checker gave none).")
    actual: Any = Field(default=None, description="The observed value, any JSON (null when the checker gave none).")


class Verdict(_Model):
    """The benchmark checker's judgement of one episode. The agent's claim never enters it."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=True, json_schema_extra={
        "description": "The benchmark checker's judgement (pytest_agentbench.Verdict). The agent's claim never "
                       "enters it."})

    score: float = Field(ge=0.0, le=1.0, description=(
        "Score in [0, 1]; partial credit is passed criteria over evaluated criteria unless the benchmark has its own "
        "rule."))
    passed: bool | None = Field(description="Whether the task passed; null when the checker could not evaluate it.")
    criteria: list[Criterion] = Field(default_factory=list, description="The checks behind the verdict.")
    reason: str = Field(default="", description="One-line explanation from the checker.")

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
    #: the exception behind ``error`` (the agent's, the environment's or the checker's own), kept
    #: so a report can show the user's frames; never serialized, and taken by the first reader
    _exception: BaseException | None = PrivateAttr(default=None)

    def take_exception(self) -> BaseException | None:
        """The exception behind ``error``, once (the record is held to the end of the run; its
        traceback, with every frame's locals, is not)."""
        exc, self._exception = self._exception, None
        return exc

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
