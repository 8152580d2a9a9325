"""The option table: only prefixed option and fixture names in a project that merely has the plugin
installed, the old spellings still accepted (with one warning naming the new one), an ini key for
every setting whose value is used, and both fixture overrides (``agent``, ``agentbench_agent``)
playing the episode. Every check runs a real pytest session through ``pytester``.

This module names the old spellings on purpose: ``tools/rename_options.py`` leaves it alone."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from pytest_agentbench.plugin.options import OLD_SPELLINGS, OPTIONS

#: Names a plugin option may have: the mission's own words, or a prefix that says whose it is.
ALLOWED_NAMES = ("--bench", "--audit-verifier", "--pool")
ALLOWED_PREFIXES = ("--bench-", "--agentbench-", "--pool-", "--waa-", "--mockmed-", "--opencomputer-", "--audit-",
                    "--sandbox-", "--trajectory-", "--appworld-")
#: ``pytest --help`` group titles of this plugin end with this.
OUR_GROUPS = "(pytest-agentbench):"
SHORT_FIXTURES = ("agent", "vm", "sandbox", "episode", "bench_task", "bench_env", "run_record", "audit_run")

#: dest -> (ini text, the value it must become). Options not listed take their text as it is
#: (lists: one entry; flags: "true"; choices: the first choice).
SAMPLES: dict[str, tuple[str, object]] = {
    "bench": ("mock", ["mock"]), "tasks": ("3", 3), "max_steps": ("4", 4), "run_name": ("r1", "r1"),
    "min_success": ("80%", 0.8), "sandbox_memory_mb": ("0", 0), "sandbox_max_procs": ("64", 64),
    "sandbox_output_mb": ("2", 2), "sandbox_disk_mb": ("0", 0), "audit_verifier": ("toy", "toy"),
    "audit_limit": ("5", 5), "mockmed_runs": ("2", 2),
    "waa_server": ("http://h:1/", "http://h:1"), "waa_evaluate_url": ("http://e:2", "http://e:2"),
    "waa_cdp_url": ("https://c:3", "https://c:3"), "waa_ready_timeout": ("2", 2.0), "waa_settle": ("0", 0.0),
    "waa_step_pause": ("0", 0.0), "waa_open_wait": ("0", 0.0), "waa_command_timeout": ("9", 9.0),
    "waa_tree_timeout": ("8", 8.0), "waa_evaluate_timeout": ("7", 7.0), "waa_download_max_mb": ("3", 3.0),
    "pool_workers": ("2", 2), "pool_ssh_cidr": ("10.0.0.1", "10.0.0.1/32"), "pool_waa_port": ("6000", 6000),
    "pool_evaluate_port": ("6001", 6001), "pool_cdp_port": ("6002", 6002), "pool_ready_timeout": ("9", 9.0),
    "pool_auto_shutdown_hours": ("0", 0.0), "pool_hourly_usd": ("0.5", 0.5), "pool_poll_interval": ("1", 1.0),
    "pool_minutes_per_task": ("2", 2.0), "aws_subnet": ("subnet-0abc1234", "subnet-0abc1234"),
    "agent_url": ("http://127.0.0.1:9", "http://127.0.0.1:9"), "agent_timeout": ("5", 5.0),
    "max_cost_usd": ("$2", 2.0), "max_cost_usd_per_task": ("0.25", 0.25), "opencomputer_timeout": ("7", 7.0),
    "opencomputer_docker_ready_timeout": ("45", 45.0),
    "trajectory_min": ("0.5", 0.5), "trajectory_failures_shown": ("5", 5),
    "trials": ("2", 2), "trial_seed": ("3", 3), "regression_alpha": ("0.01", 0.01),
    "opencomputer_python": ("current", "current"), "waa_index": ("small", "small"), "task_timeout": ("30", 30.0),
}
#: What an option needs besides itself to run without acting (``--pool-dry-run`` prices a pool).
NEEDS = {"pool_dry_run": ("--pool", "static"), "bench": ("--collect-only",), "audit_verifier": ("--collect-only",)}
#: ``--agentbench-reap`` is a command (it deletes cloud resources), not tried here.
COMMANDS = ("agentbench_reap",)

SHOW = """
import json
from pytest_agentbench.plugin import options

def pytest_sessionstart(session):
    config = session.config
    shown = {dest: config.getoption(dest) for dest in %r}
    print("AGENTBENCH-VALUES " + json.dumps(shown, sort_keys=True))
"""


def sample(opt) -> tuple[str, object]:
    if opt.dest in SAMPLES:
        return SAMPLES[opt.dest]
    if opt.kind == "flag":
        return "true", True
    if opt.choices:
        return opt.choices[0], opt.choices[0]
    if opt.kind == "list":
        return "a,b", ["a,b"]
    return "some/thing" if opt.path else "x1", None  # None: a path or a plain string, checked below


def shown_values(result) -> dict:
    line = next(line for line in result.stdout.lines if line.startswith("AGENTBENCH-VALUES "))
    return json.loads(line.removeprefix("AGENTBENCH-VALUES "))


def run_showing(pytester, run, dests, *args):
    pytester.makeconftest(SHOW % (tuple(dests),))
    return run("-s", *args)


def help_options(text: str) -> list[str]:
    """The option names listed in this plugin's ``--help`` groups."""
    names: list[str] = []
    ours = False
    for line in text.splitlines():
        if line and not line.startswith(" "):
            ours = line.rstrip().endswith(OUR_GROUPS)
            continue
        if ours and line.startswith("  --"):
            names.extend(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", line.split("  ", 2)[1] if "  " in line[2:] else line))
    return names


def test_help_of_an_installed_plugin_shows_only_prefixed_options(run):
    result = run("--help")
    names = help_options(result.stdout.str())
    assert "--bench-limit" in names and "--pool-keep" in names  # the parser found the groups
    bad = [n for n in names if n not in ALLOWED_NAMES and not n.startswith(ALLOWED_PREFIXES)]
    assert bad == []
    assert not set(OLD_SPELLINGS) & set(names)  # the old spellings work but are not advertised


def test_every_option_of_the_table_is_prefixed():
    bad = [opt.flag for opt in OPTIONS if opt.flag not in ALLOWED_NAMES and not opt.flag.startswith(ALLOWED_PREFIXES)]
    assert bad == []


def test_fixtures_of_an_installed_plugin_are_all_prefixed(run):
    result = run("--fixtures")
    out = result.stdout.str()
    section = out.split("fixtures defined from pytest_agentbench.plugin", 1)[1].split("\n---", 1)[0]
    names = re.findall(r"^(\w+)", section, re.MULTILINE)
    assert "agentbench_agent" in names and "agentbench_episode" in names
    assert [n for n in names if not n.startswith("agentbench_")] == []
    listed = set(re.findall(r"^(\w+)", out, re.MULTILINE))
    assert not listed & set(SHORT_FIXTURES)


def test_a_plain_project_has_no_agent_fixture(run, pytester):
    pytester.makepyfile(test_uses="def test_uses(agent): pass")
    result = run()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'agent' not found*"])


@pytest.mark.parametrize("args", [("--bench=mock",), ("--audit-verifier=toy",)])
def test_benchmark_and_audit_runs_have_the_short_names(run, args):
    out = run(*args, "--fixtures").stdout.str()
    listed = set(re.findall(r"^(\w+)", out, re.MULTILINE))
    assert set(SHORT_FIXTURES) <= listed


def test_the_short_names_with_the_benchmark_in_the_ini_file(run, pytester):
    pytester.makeini("[pytest]\nagentbench_benchmarks = mock\n")
    assert "agent [session scope]" in run("--fixtures").stdout.str()


NOOP_AGENT = """
import pytest
from pytest_agentbench.agents import NoopAgent

@pytest.fixture(scope="session")
def {name}():
    return NoopAgent()
"""


@pytest.mark.parametrize("name", ["agent", "agentbench_agent"])
def test_a_conftest_agent_override_plays_the_episode(run, pytester, name):
    assert run("--bench=mock", "--bench-limit=2").ret == 0  # the mock agent passes them
    pytester.makeconftest(NOOP_AGENT.format(name=name))
    result = run("--bench=mock", "--bench-limit=2")
    result.assert_outcomes(failed=2)  # the noop agent, not --bench-agent mock, played


def test_the_prefixed_fixtures_work_in_a_benchmark_run(run, pytester):
    pytester.makeconftest("""
import pytest

@pytest.fixture(autouse=True)
def _show(request):
    print("AGENT", type(request.getfixturevalue("agentbench_agent")).__name__,
          request.getfixturevalue("agentbench_task").task_id,
          type(request.getfixturevalue("agentbench_env")).__name__,
          request.getfixturevalue("agentbench_run_record") is not None)
""")
    result = run("--bench=mock", "--bench-limit=1", "-s")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*AGENT MockAgent mock_* MockBenchmark True*"])


# -- old spellings ------------------------------------------------------------------------------------------
def old_cases() -> list[Any]:
    return [pytest.param(old, opt, id=old) for old, opt in OLD_SPELLINGS.items()]


@pytest.mark.parametrize(("old", "opt"), old_cases())
def test_an_old_spelling_sets_the_same_setting_and_warns_once_naming_the_new_one(run, pytester, old, opt):
    text, expected = sample(opt)
    words = [old] if opt.kind == "flag" else [f"{old}={text}", old, text]  # both forms, and twice
    result = run_showing(pytester, run, [opt.dest], *words)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED, result.stdout.str() + result.stderr.str()
    warnings = [line for line in result.stdout.lines if "AgentbenchDeprecationWarning: " in line]
    assert len(warnings) == 1, result.stdout.str()
    assert f"{old} is now spelled {opt.flag}" in warnings[0]
    value = shown_values(result)[opt.dest]
    if opt.kind == "list":
        assert value == [text, text]
    elif expected is not None:
        assert value == expected
    else:
        assert value in (text, str(pytester.path / text))


def test_a_new_spelling_gives_no_deprecation_warning(run, pytester):
    result = run_showing(pytester, run, ["tasks"], "--bench-limit=2", "--audit-operators", "omit")
    assert "AgentbenchDeprecationWarning" not in result.stdout.str()
    assert shown_values(result) == {"tasks": 2}


def test_old_spellings_in_addopts_and_pytest_addopts_warn_too(run, pytester, monkeypatch):
    pytester.makeini("[pytest]\naddopts = --tasks 4\n")
    monkeypatch.setenv("PYTEST_ADDOPTS", "--keep-pool")
    result = run_showing(pytester, run, ["tasks", "keep_pool"])
    out = result.stdout.str()
    assert "--tasks is now spelled --bench-limit" in out and "--keep-pool is now spelled --pool-keep" in out
    assert shown_values(result) == {"keep_pool": True, "tasks": 4}


def test_an_old_spelling_after_a_double_dash_is_not_an_option(run, pytester):
    pytester.makepyfile(**{"--tasks": "def test_x(): pass"})
    result = run("--", "--tasks")
    assert "AgentbenchDeprecationWarning" not in result.stdout.str()


def test_the_warning_can_be_made_an_error(run):
    result = run("-W", "error::pytest_agentbench.plugin.options.AgentbenchDeprecationWarning", "--tasks", "2")
    assert result.ret != 0
    assert "--tasks is now spelled --bench-limit" in result.stdout.str() + result.stderr.str()


def test_a_bad_value_under_an_old_spelling_is_a_usage_error(run):
    result = run("--bench=mock", "--tasks", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert any("--bench-limit must be >= 1, got 0" in line for line in result.stderr.lines)


# -- ini keys ---------------------------------------------------------------------------------------------
def test_every_option_has_its_own_ini_key():
    keys = [opt.ini for opt in OPTIONS]
    assert all(key.startswith("agentbench_") for key in keys)
    assert len(set(keys)) == len(keys)


@pytest.mark.parametrize("opt", [o for o in OPTIONS if o.dest not in COMMANDS], ids=lambda o: o.ini)
def test_an_ini_value_is_used(run, pytester, opt):
    text, expected = sample(opt)
    pytester.makeini(f"[pytest]\n{opt.ini} = {text}\n")
    result = run_showing(pytester, run, [opt.dest], *NEEDS.get(opt.dest, ()))
    assert result.ret in (0, pytest.ExitCode.NO_TESTS_COLLECTED), result.stdout.str() + result.stderr.str()
    value = shown_values(result)[opt.dest]
    if expected is None:  # a path from the ini file's folder, or a plain string
        expected = str(pytester.path / text) if opt.path else text
    assert value == expected


def test_the_command_line_wins_over_the_ini_key(run, pytester):
    pytester.makeini("[pytest]\nagentbench_pool_workers = 3\nagentbench_waa_examples = from_ini\n")
    result = run_showing(pytester, run, ["pool_workers", "waa_examples"], "--pool-workers", "5",
                         "--waa-examples", "given")
    assert shown_values(result) == {"pool_workers": 5, "waa_examples": str(pytester.path / "given")}


def test_an_ini_path_is_taken_from_the_ini_files_folder(run, pytester):
    (pytester.path / "sub").mkdir()
    (pytester.path / "sub" / "pytest.ini").write_text("[pytest]\nagentbench_opencomputer_tasks = tasks\n")
    (pytester.path / "sub" / "conftest.py").write_text(SHOW % (("opencomputer_tasks",),))
    result = run("-s", "-c", "sub/pytest.ini", "sub")
    assert shown_values(result) == {"opencomputer_tasks": str(pytester.path / "sub" / "tasks")}


@pytest.mark.parametrize(("key", "value", "flag"), [
    ("agentbench_pool_workers", "0", "--pool-workers"), ("agentbench_pool_waa_port", "70000", "--pool-waa-port"),
    ("agentbench_screenshots", "sometimes", "--bench-screenshots"), ("agentbench_trials", "0", "--bench-trials"),
    ("agentbench_opencomputer_timeout", "-1", "--opencomputer-timeout"),
    ("agentbench_mockmed_runs", "1001", "--mockmed-runs"),
])
def test_a_bad_ini_value_of_any_setting_is_one_usage_line(run, pytester, key, value, flag):
    pytester.makeini(f"[pytest]\n{key} = {value}\n")
    result = run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR")]
    assert len(errors) == 1 and key in errors[0] and flag in errors[0], errors
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
