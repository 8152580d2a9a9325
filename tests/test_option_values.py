"""Every option's bad values, table-driven: each is a usage error (exit 4) at configure time,
naming the option, with no traceback and before any item runs; the same values in the ini keys
too. Options that act only on benchmark items say so when given without one.

Run ``pytest tests/test_option_values.py -q`` to see the counts: one item per bad input."""

from __future__ import annotations

import json

import pytest

USAGE = pytest.ExitCode.USAGE_ERROR
B = ["--bench=mock"]

BAD_VALUES = {
    "--bench-limit": ["0", "-1", "x", "1e3", str(10**12), ""],
    "--bench-max-steps": ["0", "x", "-5"],
    "--bench-run-name": ["a\nb", "\x1b[31mred", "a/b", "..", ".", " x", "x" * 101, "tab\there"],
    "--bench-min-success": ["2", "-0.1", "x", "150%", "nan", "inf"],
    "--bench-screenshots": ["sometimes"],
    "--pool-waa-port": ["0", "70000", "x", "-1", "1.5"],
    "--pool-evaluate-port": ["65536", "port"],
    "--pool-ready-timeout": ["1e308", "0", "-1", "inf", "nan", "x"],
    "--pool-auto-shutdown-hours": ["0.001", "1e308", "-1", "x", "inf", "721"],
    "--pool-minutes-per-task": ["0", "-3", "x", "1e9"],
    "--pool-poll-interval": ["-1", "1e308", "x"],
    "--pool-hourly-usd": ["-1", "x", "inf"],
    "--pool-ssh-cidr": ["everyone", "1.2.3.4/33", "1.2.3.4/32\nx", "999.1.1.1"],
    "--pool-aws-subnet": ["subnet-xyz", "vpc-0abc1234", "subnet-12345678; rm -rf /", "subnet-"],
    "--waa-server": ["http://", "ftp://host", "localhost:5000", "http://x:99999", "http://a b", "javascript:alert(1)",
                     "http://:80", "http://x:0"],
    "--waa-evaluate-url": ["http://", "host"],
    "--bench-agent-url": ["http://", "x", "http://h\x1b[2J"],
    "--bench-agent-timeout": ["0", "-1", "x", "1e308"],
    "--bench-max-cost-usd": ["0", "-1", "x", "inf"],
    "--bench-max-cost-usd-per-task": ["0", "nope"],
    "--pool-workers": ["0", "100000"],
    "--mockmed-runs": ["0", "100000"],
    "--waa-ready-timeout": ["-1", "1e308", "x"],
}
CASES = [(flag, value) for flag, values in BAD_VALUES.items() for value in values]

BAD_INI = [
    ("agentbench_tasks", str(10**12)), ("agentbench_run_name", "a/b"), ("agentbench_pool_ready_timeout", "1e308"),
    ("agentbench_pool_auto_shutdown_hours", "0.001"), ("agentbench_pool_minutes_per_task", "0"),
    ("agentbench_pool_ssh_cidr", "anywhere"), ("agentbench_aws_subnet", "x"), ("agentbench_waa_server", "http://"),
    ("agentbench_waa_evaluate_url", "localhost"), ("agentbench_agent_url", "x"), ("agentbench_agent_timeout", "0"),
    ("agentbench_max_cost_usd", "0"), ("agentbench_pool_poll_interval", "-1"), ("agentbench_pool_hourly_usd", "x"),
    ("agentbench_min_success", "2"), ("agentbench_max_steps", "0"), ("agentbench_waa_ready_timeout", "1e308"),
]


def check_usage_error(result, *names: str) -> None:
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == USAGE, out
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    errors = [line for line in result.stderr.lines if "error" in line.lower()]
    assert errors and any(name in line for line in errors for name in names), out
    assert "passed" not in result.stdout.str()  # nothing ran


@pytest.mark.parametrize(("flag", "value"), CASES, ids=[f"{f}={v!r}"[:60] for f, v in CASES])
def test_a_bad_option_value_is_a_usage_error_naming_the_option(run, flag, value):
    check_usage_error(run(*B, f"{flag}={value}"), flag)


@pytest.mark.parametrize(("key", "value"), BAD_INI, ids=[k for k, _ in BAD_INI])
def test_a_bad_ini_value_is_a_usage_error_naming_the_key(run, pytester, key, value):
    pytester.makeini(f"[pytest]\nagentbench_benchmarks = mock\n{key} = {value}\n")
    result = run()
    check_usage_error(result, key, "--" + key.removeprefix("agentbench_").replace("_", "-"))


def test_bad_values_are_found_at_configure_time_even_without_a_benchmark(run):
    check_usage_error(run("--pool-ready-timeout", "1e308"), "--pool-ready-timeout")


@pytest.mark.parametrize("hosts", ["http://", "x", "http://ok:5000|http://", "http://h:70000"])
def test_a_bad_static_pool_host_is_a_usage_error(run, hosts):
    check_usage_error(run(*B, "--pool", "static", "--pool-hosts", hosts), "--pool-hosts")


def test_a_deeply_nested_agent_script_is_a_usage_error(run, pytester):
    script = pytester.path / "deep.json"
    script.write_text("[" * 100_000 + "]" * 100_000)
    check_usage_error(run(*B, "--bench-agent", "scripted", "--bench-agent-script", str(script)), "--bench-agent-script")


@pytest.mark.parametrize("content, message", [
    ("{", "not valid JSON"),
    ("[" * 100_000 + "]" * 100_000, "nested more than 200 levels deep"),
    (json.dumps({"steps": "nope"}), "MockMed workflow"),
    (json.dumps([1, 2]), "MockMed workflow"),
])
def test_a_malformed_mockmed_workflow_is_one_usage_line(run, pytester, content, message):
    workflow = pytester.path / "workflow.json"
    workflow.write_text(content)
    result = run("--bench=mockmed", "--mockmed-arm", "compiled", "--mockmed-workflow", str(workflow))
    check_usage_error(result, "workflow")
    assert message in result.stderr.str()
    assert len([line for line in result.stderr.lines if line.startswith("ERROR")]) == 1


def test_the_browser_driver_without_playwright_is_one_usage_line(run, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "playwright" else real(name, *a))
    result = run("--bench=mockmed", "--mockmed-driver", "browser")
    check_usage_error(result, "--mockmed-driver browser")
    result.stderr.fnmatch_lines(["ERROR: *--mockmed-driver browser needs the playwright package*"])


@pytest.mark.parametrize("args", [["--bench-limit", "3"], ["--bench-task", "x"], ["--bench-min-success", "0.5"],
                                  ["--bench-screenshots", "on"], ["--bench-max-steps", "3"], ["--bench-run-name", "r"],
                                  ["--bench-trials", "3"], ["--bench-compare", "earlier"],
                                  ["--bench-resume", "earlier"]])
def test_benchmark_options_without_a_benchmark_say_so(run, args):
    result = run(*args)
    result.stdout.fnmatch_lines([f"*PytestConfigWarning: {args[0]} given without --bench: nothing uses it*"])


def test_mockmed_options_with_another_benchmark_say_so(run):
    result = run(*B, "--bench-limit", "1", "--mockmed-runs", "2", "--mockmed-arm", "compiled")
    assert result.ret == 0
    result.stdout.fnmatch_lines([("*PytestConfigWarning: --mockmed-arm, --mockmed-runs given, but --bench has no "
                                  "mockmed: nothing uses it*")])


def test_help_reads_no_setting_a_bad_ini_value_does_not_hide_it(run, pytester):
    """``pytest --help`` configures the plugins too; ours reads and checks nothing there, so a broken
    ini key does not stand between a user and the help that documents it. The same ini file stops a
    real run with the usage error naming the key."""
    pytester.makeini("[pytest]\nagentbench_benchmarks = mock\nagentbench_tasks = many\n")
    result = run("--help")
    assert result.ret == 0
    assert "--bench-limit=N" in result.stdout.str() and "agentbench_tasks (string):" in result.stdout.str()
    assert "agentbench_tasks" not in result.stderr.str()
    check_usage_error(run(), "agentbench_tasks", "--bench-limit")


def test_help_and_version_start_nothing_for_an_old_spelling_either(run):
    """Neither answer warns about the old spelling it was given (no run follows) nor fails."""
    for answer in ("--help", "--version"):
        result = run(answer, "--tasks", "3")
        assert result.ret == 0, answer
        assert "is now spelled" not in result.stdout.str() + result.stderr.str()
