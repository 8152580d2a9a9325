"""One episode, without pytest: reset, let the agent act until it stops, then ask the checker.

Rules (each fixes a fault of the reference runner):

* **Step limit.** An explicit ``max_steps`` (``--bench-max-steps``) beats the task's own
  ``time_limit_steps``; without one the task's limit applies, and without either
  ``DEFAULT_MAX_STEPS``. See :func:`step_limit`.
* **Step counting.** ``num_steps`` is the number of actions the environment executed. Terminal
  actions (done, fail, answer, error) are recorded in ``steps`` but never counted, on every path,
  including when something raises.
* **The agent's last word reaches the checker.** The terminal action is passed to
  ``Benchmark.evaluate`` so checkers that need it (WAA's infeasible tasks need FAIL) can see it.
* **Running out of steps is an agent error**: the checker still scores the end state (so the
  record shows how far the agent got), but the episode counts as a failure.
* **Errors by phase.** reset and step raise -> ``infrastructure``; act raises or returns ``error``
  -> ``agent`` (the checker is not called); evaluate raises -> ``evaluation``. An exception with an
  ``error_type`` attribute overrides the phase's type.
* **Model usage and budgets.** After every ``act`` the agent's ``take_usage()`` is recorded on the
  step and charged to the budget; before every ``act`` the budget is checked. A spent per-task cap
  ends the episode as an agent error (the checker still scores the end state, as with the step
  limit); a spent run cap ends it not evaluated (``verdict.passed is None``), so pytest skips it.
* **Deadline.** With ``deadline`` (``--bench-task-timeout``, or pytest-timeout's timeout for the
  item) the loop checks it before every action, and an alarm interrupts a call that blocks past
  it (see ``deadline.py``). The phase it passes in types the error, as any fault there: while the
  agent acts it is an agent error (the checker is not called), in reset or step an
  infrastructure error, in the checker an evaluation error.
* **The end state is kept.** An episode that ends early (a timeout, an exception) keeps the last
  observation the agent was given as its final observation, so its screenshot is saved and shown
  as any episode's end state.
* **Crashes.** ``on_phase`` (when given) is told each phase as it begins, so that a process dying
  in the episode, which raises nothing, is typed by the same rule from outside (``phases.py``).
* **Scrubbing.** ``scrub`` (when given) replaces every observation before the agent sees it and
  before it is recorded, so a screenshot scrubber runs ahead of everything that reads pixels.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from pytest_agentbench.benchmark import EvaluationError
from pytest_agentbench.budget import BudgetSpent
from pytest_agentbench.deadline import Alarm, DeadlinePassed
from pytest_agentbench.model import Action, EpisodeRecord, Observation, Step, Verdict
from pytest_agentbench.phases import PHASES
from pytest_agentbench.text import shorten

if TYPE_CHECKING:
    from pytest_agentbench.agent import Agent
    from pytest_agentbench.benchmark import Benchmark
    from pytest_agentbench.budget import Budget
    from pytest_agentbench.deadline import Deadline
    from pytest_agentbench.model import Task

DEFAULT_MAX_STEPS = 50


def step_limit(task: Task, max_steps: int | None) -> int:
    """The one rule for which limit wins: explicit ``max_steps``, else the task's, else the default."""
    if max_steps is not None:
        return max_steps
    return task.time_limit_steps or DEFAULT_MAX_STEPS


def _agent_name(agent: Agent) -> str:
    name = getattr(agent, "name", None)
    return name if name and name != "agent" else type(agent).__name__


def _error_type(exc: BaseException, default: str) -> str:
    kind = getattr(exc, "error_type", None)
    return kind if kind in ("agent", "infrastructure", "evaluation") else default




def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def run_episode(
    agent: Agent,
    benchmark: Benchmark,
    task: Task,
    *,
    max_steps: int | None = None,
    agent_name: str | None = None,
    on_step: Callable[[Step], None] | None = None,
    budget: Budget | None = None,
    scrub: Callable[[Observation], Observation] | None = None,
    deadline: Deadline | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> EpisodeRecord:
    """Play ``task`` once and return its record. Never raises for agent, environment or checker
    faults: they become the record's ``error_type`` (KeyboardInterrupt and SystemExit pass)."""
    limit = step_limit(task, max_steps)
    record = EpisodeRecord(
        task_id=task.task_id,
        benchmark=task.benchmark or benchmark.name,
        domain=task.domain,
        agent=agent_name or _agent_name(agent),
        instruction=task.instruction,
        step_limit=limit,
    )
    started = time.perf_counter()
    history: list[tuple[Observation, Action]] = []
    phase = "reset"
    if budget is not None:
        budget.start_task()
        agent.budget = budget
    timer = Alarm(deadline) if deadline is not None else None
    if on_phase is not None:
        on_phase(phase)
    #: The last observation the agent was given (scrubbed): the end state shown when the episode
    #: ends early (a timeout, a raise), as the final observation is when it ends by itself.
    seen: Observation | None = None
    try:
        agent.reset()
        observation = benchmark.reset(task)
        if scrub is not None:
            observation = scrub(observation)
        seen = observation
        while True:
            if record.num_steps >= limit:
                record.error_type = "agent"
                record.error = f"step limit reached: the agent took {limit} steps without done, fail or answer"
                break
            phase = "act"
            if on_phase is not None:
                on_phase(phase)
            step_started = time.perf_counter()
            if deadline is not None:
                deadline.check()
            try:
                if budget is not None:
                    budget.check()
                action = agent.act(observation, task, history)
            except BudgetSpent as spent:
                _charge(agent, budget, None)
                if spent.scope == "run":
                    record.verdict = Verdict(score=0.0, passed=None, reason=str(spent))
                    record.final_observation = observation
                    record.total_time_seconds = time.perf_counter() - started
                    record.cost_usd = sum(s.cost_usd for s in record.steps)
                    return record
                record.error_type = "agent"
                record.error = str(spent)
                break
            if not isinstance(action, Action):
                raise TypeError(f"act() must return an Action, got {type(action).__name__}")
            # Built from already-validated parts: skip re-validation on the per-step path, and
            # name every field, so that model_construct copies no default.
            step = Step.model_construct(index=len(record.steps), action=action, observation=observation,
                                        reasoning=action.reason, seconds=0.0, screenshot_path=None,
                                        cost_usd=0.0, usage=None)
            _charge(agent, budget, step)
            history.append((observation, action))
            record.steps.append(step)
            if action.is_terminal:
                step.seconds = time.perf_counter() - step_started
                if on_step:
                    on_step(step)
                record.final_action = action
                if action.type == "error":
                    record.error_type = "agent"
                    record.error = f"agent reported an error: {action.reason or 'no reason given'}"
                break
            phase = "step"
            if on_phase is not None:
                on_phase(phase)
            observation = benchmark.step(action)
            if scrub is not None:
                observation = scrub(observation)
            seen = observation
            record.num_steps += 1
            step.seconds = time.perf_counter() - step_started
            if on_step:
                on_step(step)
        record.final_observation = observation
        if record.final_action is None or record.final_action.type != "error":
            phase = "evaluate"
            if on_phase is not None:
                on_phase(phase)
            verdict = benchmark.evaluate(task, record.final_action)
            if not isinstance(verdict, Verdict):
                raise EvaluationError(f"{type(benchmark).__name__}.evaluate() returned {type(verdict).__name__} "
                                      f"{shorten(repr(verdict), 60)}, not a Verdict: "
                                      "return Verdict(score=..., passed=..., reason=...)")
            record.verdict = verdict
    except (KeyboardInterrupt, SystemExit):
        raise
    except DeadlinePassed as passed:
        record.error_type, words = PHASES[phase]  # type: ignore[assignment]
        record.error = f"{passed} {words}"
    except BaseException as exc:  # noqa: BLE001 - every other fault becomes part of the record
        kind = _error_type(exc, PHASES[phase][0])
        record.error_type = kind  # type: ignore[assignment]
        where = {"reset": "environment reset", "step": "environment step", "act": "agent", "evaluate": "checker"}[phase]
        record.error = f"{where} failed: {_describe(exc)}"
        record._exception = exc
    finally:
        if timer is not None:
            timer.stop()
    if record.final_observation is None:
        record.final_observation = seen
    record.total_time_seconds = time.perf_counter() - started
    record.cost_usd = sum(s.cost_usd for s in record.steps)
    return record


def _charge(agent: Agent, budget: Budget | None, step: Step | None) -> None:
    """Record the agent's reported usage on ``step`` and charge it to the budget."""
    take = getattr(agent, "take_usage", None)
    usage = take() if take is not None else None
    if usage is None:
        return
    if step is not None:
        step.cost_usd = float(usage.cost_usd)
        step.usage = usage.to_dict()
    if budget is not None:
        budget.charge(float(usage.cost_usd))
