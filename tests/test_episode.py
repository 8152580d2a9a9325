"""The pytest-free episode loop: step-limit rule, step counting, terminal actions, error types."""

from __future__ import annotations

import os
import signal
import tempfile
import time

import pytest

from pytest_agentbench import Action, Agent, MockBenchmark, Task, Verdict, run_episode, step_limit
from pytest_agentbench.episode import DEFAULT_MAX_STEPS


class Clicker(Agent):
    """Clicks OK forever, or a fixed number of times before its final word."""

    name = "clicker"

    def __init__(self, clicks: int | None = None, final: Action | None = None) -> None:
        self.clicks, self.final, self.seen = clicks, final, []

    def act(self, observation, task, history=None):
        self.seen.append(len(history or []))
        if self.clicks is not None and len(history or []) >= self.clicks:
            return self.final or Action(type="done")
        return Action(type="click", target_id="1")


class Spy(MockBenchmark):
    def __init__(self) -> None:
        super().__init__(num_tasks=1)
        self.executed: list[str] = []
        self.final_seen: list[Action | None] = []

    def step(self, action):
        self.executed.append(action.type)
        return super().step(action)

    def evaluate(self, task, final_action):
        self.final_seen.append(final_action)
        return super().evaluate(task, final_action)


def task(limit: int | None = 15) -> Task:
    return Task(task_id="t1", domain="chrome", time_limit_steps=limit)


def test_explicit_max_steps_beats_the_task_limit():
    assert step_limit(task(15), 3) == 3
    assert step_limit(task(15), 40) == 40
    assert step_limit(task(15), None) == 15
    assert step_limit(task(None), None) == DEFAULT_MAX_STEPS
    bench = Spy()
    record = run_episode(Clicker(), bench, task(15), max_steps=3)
    assert record.num_steps == 3 and bench.executed == ["click"] * 3
    assert record.error_type == "agent" and "step limit reached" in record.error


def test_task_limit_applies_without_an_explicit_limit():
    record = run_episode(Clicker(), Spy(), task(4))
    assert record.num_steps == 4 and record.step_limit == 4


def test_terminal_actions_are_recorded_not_counted_and_reach_the_checker():
    bench = Spy()
    fail = Action(type="fail", reason="task is infeasible")
    record = run_episode(Clicker(clicks=2, final=fail), bench, task())
    assert record.num_steps == 2
    assert [s.action.type for s in record.steps] == ["click", "click", "fail"]
    assert bench.executed == ["click", "click"]
    assert bench.final_seen == [fail] and record.final_action == fail


def test_answer_reaches_the_checker():
    bench = Spy()
    run_episode(Clicker(clicks=0, final=Action(type="answer", answer="42")), bench, task())
    assert bench.final_seen[0].answer == "42"


def test_step_count_is_the_same_rule_when_something_raises():
    class BreaksOnThird(Spy):
        def step(self, action):
            if len(self.executed) == 2:
                raise ConnectionError("VM went away")
            return super().step(action)

    record = run_episode(Clicker(), BreaksOnThird(), task())
    assert record.error_type == "infrastructure"
    assert record.num_steps == 2  # executed actions only, as on the normal path
    assert len(record.steps) == 3  # the action that broke is still in the trace


def test_agent_error_action_skips_the_checker():
    bench = Spy()
    record = run_episode(Clicker(clicks=0, final=Action(type="error", reason="parse error")), bench, task())
    assert record.error_type == "agent" and "parse error" in record.error
    assert bench.final_seen == [] and record.verdict is None


@pytest.mark.parametrize(
    ("where", "error_type", "text"),
    [("reset", "infrastructure", "environment reset failed"), ("act", "agent", "agent failed"),
     ("evaluate", "evaluation", "checker failed")],
)
def test_exceptions_are_typed_by_phase(where, error_type, text):
    class Broken(Spy):
        def reset(self, t):
            if where == "reset":
                raise OSError("boom")
            return super().reset(t)

        def evaluate(self, t, final_action):
            if where == "evaluate":
                raise KeyError("getter")
            return super().evaluate(t, final_action)

    class BrokenAgent(Clicker):
        def act(self, observation, t, history=None):
            if where == "act":
                raise RuntimeError("model down")
            return super().act(observation, t, history)

    record = run_episode(BrokenAgent(clicks=1), Broken(), task())
    assert record.error_type == error_type and record.error.startswith(text)
    assert record.is_outcome is (error_type == "agent")


def test_exception_error_type_attribute_overrides_the_phase():
    class Unreachable(Exception):
        error_type = "infrastructure"

    class Agentish(Clicker):
        def act(self, observation, t, history=None):
            raise Unreachable("model API unreachable")

    assert run_episode(Agentish(), Spy(), task()).error_type == "infrastructure"


def test_returning_a_non_action_is_an_agent_error():
    class Bad(Agent):
        def act(self, observation, t, history=None):
            return {"type": "done"}

    record = run_episode(Bad(), Spy(), task())
    assert record.error_type == "agent" and "must return an Action" in record.error


def test_history_grows_per_step_and_agent_is_reset():
    agent = Clicker(clicks=2)
    run_episode(agent, Spy(), task())
    run_episode(agent, Spy(), task())
    assert agent.seen == [0, 1, 2, 0, 1, 2]


def test_final_observation_is_after_the_last_action():
    record = run_episode(Clicker(clicks=1), Spy(), task())
    assert record.final_observation is not None
    assert record.steps[0].observation is not record.final_observation


def test_mock_checker_partial_credit_and_reason():
    bench = MockBenchmark(num_tasks=1)
    t = bench.list_tasks()[0]
    record = run_episode(Clicker(clicks=1), bench, t)  # OK only: 0.3 + 0.1
    assert record.verdict.score == pytest.approx(0.4) and record.verdict.passed is False
    assert record.verdict.reason == "clicked=['1'], typed='', final=done"


def test_mock_checker_accepts_typed_text_and_ok_and_coordinates():
    class Typist(Agent):
        def act(self, observation, t, history=None):
            script = [Action(type="type", text="hello"), Action(type="click", x=150, y=120), Action(type="done")]
            return script[len(history or [])]

    bench = MockBenchmark(num_tasks=1)
    record = run_episode(Typist(), bench, bench.list_tasks()[0])
    assert record.success and record.num_steps == 2


def test_mock_click_by_fraction_hits_submit():
    bench = MockBenchmark(num_tasks=1)
    bench.reset(bench.list_tasks()[0])
    bench.step(Action(type="click", x=400 / 1920, y=120 / 1200))
    assert bench.evaluate(bench.list_tasks()[0], None).passed


def test_mock_screenshots_are_rendered_only_when_read_and_leave_no_temp_files(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # a private temp dir: no other process writes it
    before = set(os.listdir(tempfile.gettempdir()))
    bench = MockBenchmark(num_tasks=1)
    observation = bench.reset(bench.list_tasks()[0])
    assert observation.has_screenshot and observation._screenshot is None  # nothing drawn yet
    png = observation.screenshot
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    import io

    from PIL import Image

    assert Image.open(io.BytesIO(png)).size == (1920, 1200)
    bench.close()
    assert set(os.listdir(tempfile.gettempdir())) - before == set()


def test_verdict_from_criteria_counts_evaluated_only():
    from pytest_agentbench import Criterion

    v = Verdict.from_criteria([Criterion(name="a", passed=True), Criterion(name="b", passed=None),
                               Criterion(name="c", passed=False)])
    assert v.score == 0.5 and v.passed is False and v.reason == "failed: c"
    assert Verdict.from_criteria([Criterion(name="a", passed=None)]).passed is None
    assert Verdict.from_criteria([Criterion(name="a", passed=True)]).passed is True


class Sleeper(Agent):
    """Each act takes ``seconds`` (a blocking sleep), then clicks; never says done."""

    name = "sleeper"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def act(self, observation, task, history=None):
        time.sleep(self.seconds)
        return Action(type="click", target_id="1")


def test_a_deadline_interrupts_a_blocking_agent():
    from pytest_agentbench.deadline import Deadline

    bench = Spy()
    started = time.monotonic()
    record = run_episode(Sleeper(30), bench, task(), deadline=Deadline(0.3, "test"))
    assert time.monotonic() - started < 5
    assert record.error_type == "agent" and record.num_steps == 0
    assert record.error == "task timeout: 0.3 s (test) ran out while the agent was acting"
    assert bench.final_seen == []  # the checker is not asked about a timed-out episode
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL


def test_a_deadline_holds_between_steps_where_no_alarm_can_fire():
    """Off the main thread there is no SIGALRM: the loop's check before each action stops it."""
    import threading

    from pytest_agentbench.deadline import Deadline

    out = {}
    worker = threading.Thread(target=lambda: out.update(record=run_episode(
        Sleeper(0.1), Spy(), task(None), deadline=Deadline(0.35, "test"))))
    worker.start()
    worker.join(10)
    record = out["record"]
    assert record.error_type == "agent" and record.error.startswith("task timeout: 0.35 s (test) ran out")
    assert 2 <= record.num_steps <= 4


def test_a_deadline_in_reset_is_an_infrastructure_error():
    from pytest_agentbench.deadline import Deadline

    class SlowReset(Spy):
        def reset(self, task):
            time.sleep(30)

    record = run_episode(Clicker(0), SlowReset(), task(), deadline=Deadline(0.2, "test"))
    assert record.error_type == "infrastructure"
    assert record.error == "task timeout: 0.2 s (test) ran out while the environment reset"


def test_a_deadline_gives_back_an_alarm_armed_before():
    from pytest_agentbench.deadline import Deadline

    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *a: fired.append(time.monotonic()))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        started = time.monotonic()
        record = run_episode(Clicker(0), Spy(), task(), deadline=Deadline(60, "test"))
        assert record.error is None
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < left <= 0.5  # still armed, for what was left of it
        time.sleep(1)
        assert len(fired) == 1 and fired[0] - started < 0.9
        # An earlier alarm fires through its own handler while the episode plays; ours stays armed.
        fired.clear()
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        record = run_episode(Sleeper(0.1), Spy(), task(None), deadline=Deadline(0.6, "test"))
        assert len(fired) == 1 and record.error.startswith("task timeout: 0.6 s (test) ran out")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
