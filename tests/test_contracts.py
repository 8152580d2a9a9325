"""A conftest's factory or checker that breaks its contract is one line naming the contract: a
usage error for a factory, an item error for a checker; never an INTERNALERROR or a traceback."""

from __future__ import annotations

import pytest

CONFTEST = '''
from pytest_agentbench import Benchmark, Task, Observation

class B(Benchmark):
    name = "b"
    def list_tasks(self, limit=None): return [Task(task_id="t1", domain="d")]
    def reset(self, task): return Observation()
    def step(self, action): return Observation()
    def evaluate(self, task, final_action): return True

def pytest_agentbench_register_benchmarks(registry):
    registry.register("b", lambda config: B())
    registry.register("none", lambda config: None)
    registry.register("cls", lambda config: B)
    registry.register("text", lambda config: "hello")

def pytest_agentbench_register_agents(registry):
    registry.register("nobody", lambda config: None)
'''


@pytest.mark.parametrize(("args", "line"), [
    (("--bench=none",), ("ERROR: the factory registered for benchmark 'none' returned NoneType None, which lacks "
                        "list_tasks(), reset(), step(), evaluate(): *")),
    (("--bench=text",), "ERROR: the factory registered for benchmark 'text' returned str 'hello'*"),
    (("--bench=cls",), ("ERROR: the factory registered for benchmark 'cls' returned the class B, not an instance: "
                       "return B(...)")),
    (("--bench=mock", "--bench-agent=nobody"), ("ERROR: the factory registered for agent 'nobody' returned NoneType "
                                               "None, which lacks act(): *")),
])
def test_a_factory_returning_no_object_is_one_usage_line(run, pytester, args, line):
    pytester.makeconftest(CONFTEST)
    result = run(*args, "--bench-limit", "1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([line])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_an_evaluate_returning_a_bool_is_one_item_error_naming_the_contract(run, pytester):
    pytester.makeconftest(CONFTEST)
    result = run("--bench=b", "-rE")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([("*B.evaluate() returned bool True, not a Verdict: return Verdict(score=..., "
                                 "passed=..., reason=...)*")])
    assert "Traceback" not in result.stdout.str()


def test_a_missing_waa_examples_folder_is_named(run, pytester):
    result = run("--bench=waa", "--waa-examples", "no/such/examples")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([("ERROR: --waa-examples */no/such/examples does not exist: pass the "
                                 "evaluation_examples_windows folder*")])


def test_examples_without_upstream_code_beside_them_name_where_it_looked(run, pytester):
    (pytester.path / "examples").mkdir()
    result = run("--bench=waa", "--waa-examples", "examples")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([("ERROR: --bench=waa cannot score: no upstream evaluator code found (looked beside "
                                 "--waa-examples */examples); pass --waa-upstream DIR*")])


ESCAPING = '''
from pytest_agentbench import Benchmark, Task, Observation, Verdict, Criterion

class B(Benchmark):
    name = "esc"
    def list_tasks(self, limit=None): return [Task(task_id="t1", domain="d")]
    def reset(self, task): return Observation()
    def step(self, action): return Observation()
    def evaluate(self, task, final_action):
        return Verdict(score=0.0, passed=False, reason="\\x1b[2J\\x1b]0;owned\\x07cleared",
                       criteria=[Criterion(name="c\\x1b[31m", passed=False, detail="\\x1b[1Adetail")])

def pytest_agentbench_register_benchmarks(registry):
    registry.register("esc", lambda config: B())
'''


def test_checker_output_cannot_send_escape_sequences_to_the_terminal(run, pytester):
    pytester.makeconftest(ESCAPING)
    result = run("--bench=esc", "-rf")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b[2J\\x1b]0;owned\\x07cleared" in out


RAISING = '''
from pytest_agentbench import Agent, Action, Benchmark, Observation, Task, Verdict

def choose(items):
    return items[5]

class MyAgent(Agent):
    name = "mine"
    def act(self, observation, task, history=None):
        return Action(type="click", x=choose([1, 2]), y=3)

def open_app(path):
    raise ConnectionError(f"no app at {path}")

class Env(Benchmark):
    name = "env"
    def list_tasks(self, limit=None): return [Task(task_id="t1", domain="d")]
    def reset(self, task): return open_app("/opt/app")
    def step(self, action): return Observation()
    def evaluate(self, task, final_action): return Verdict(score=1.0, passed=True)

def pytest_agentbench_register_agents(registry):
    registry.register("mine", lambda config: MyAgent())

def pytest_agentbench_register_benchmarks(registry):
    registry.register("env", lambda config: Env())
'''


def test_an_exception_in_the_users_agent_shows_the_users_frames_not_the_plugins(run, pytester):
    pytester.makeconftest(RAISING)
    result = run("--bench=mock", "--bench-agent=mine", "--bench-limit=1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["conftest.py:*: in act", "*def choose(items):", ">*return items?5?",
                                 "E       IndexError: list index out of range", "conftest.py:*: IndexError",
                                 "*direct cause*", "E   Failed: agent error: agent failed: IndexError*"])
    assert "pytest_agentbench" not in result.stdout.str().split("FAILURES", 1)[1].split("= agentbench =")[0]


def test_an_exception_in_the_users_reset_is_a_setup_error_with_the_users_frames(run, pytester):
    pytester.makeconftest(RAISING)
    result = run("--bench=env")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*def open_app(path):", ">*raise ConnectionError*",
                                 "E       ConnectionError: no app at /opt/app", "*direct cause*",
                                 "E   Failed: infrastructure error:*"])


def test_pdb_stops_in_the_users_frame(pytester):
    import sys

    pytester.makeconftest(RAISING)
    result = pytester.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--bench=mock",
                          "--bench-agent=mine", "--bench-limit=1", "--pdb", stdin=b"p items\ncontinue\n", timeout=120)
    result.stdout.fnmatch_lines(["*PDB post_mortem*", "> */conftest.py(4)choose()", "-> return items?5?",
                                 "(Pdb) ?1, 2?"])
