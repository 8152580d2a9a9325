"""Installed but not asked for, the plugin does nothing and loads nothing heavy."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("pydantic", "httpx", "PIL", "pytest_agentbench.model", "pytest_agentbench.plugin.session")


def test_importing_the_plugin_loads_no_heavy_module():
    code = f"import sys, pytest_agentbench.plugin, pytest_agentbench; print([m for m in {HEAVY!r} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_plain_pytest_run_never_imports_the_plugin_internals(pytester):
    pytester.makeconftest(
        """
import sys
def pytest_sessionfinish(session):
    # the entry point, its hook specs and option table, and heap.py (its thaw must be registered
    # before configure in any run that may collect case files; it imports only gc and pytest)
    loaded = sorted(m for m in sys.modules if m.startswith("pytest_agentbench.") and m not in (
        "pytest_agentbench.plugin", "pytest_agentbench.plugin.hookspecs", "pytest_agentbench.plugin.options",
        "pytest_agentbench.plugin.heap"))
    print("AGENTBENCH-LOADED", loaded)
"""
    )
    pytester.makepyfile(test_plain="def test_plain(): pass")
    result = pytester.runpytest_subprocess("-s", "-p", "no:benchmark")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*AGENTBENCH-LOADED []*"])


def test_fixtures_outside_a_benchmark_run_say_what_is_missing(pytester):
    pytester.makepyfile(test_uses="def test_uses(agentbench_run_record): pass")
    result = pytester.runpytest("-p", "no:benchmark")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the agentbench fixtures need a benchmark run (--bench NAME)*"])
