"""The real-server fixture itself: it skips with a reason, fails under AGENTBENCH_REQUIRE_INTEROP=1,
and a server that cannot start fails with the server's own output in the message."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from waa_real import interop_unavailable

TESTS = Path(__file__).parent
#: Read before the ``inner`` fixture clears the variables for the inner runs.
UPSTREAM = os.environ.get("AGENTBENCH_WAA_UPSTREAM")
INNER_CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
pytest_plugins = ["waa_real"]
"""
INNER_TEST = """
def test_uses_the_server(real_waa_server):
    assert real_waa_server.url
"""


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeconftest(INNER_CONFTEST)
    pytester.makepyfile(test_inner=INNER_TEST)
    for name in ("AGENTBENCH_WAA_UPSTREAM", "AGENTBENCH_WAA_SERVER_PYTHON", "AGENTBENCH_REQUIRE_INTEROP"):
        monkeypatch.delenv(name, raising=False)
    return pytester


def test_without_the_snapshot_it_skips_naming_what_to_set(run_sub, inner) -> None:
    result = run_sub("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*interop: set AGENTBENCH_WAA_UPSTREAM*AGENTBENCH_WAA_SERVER_PYTHON*(see .ci/run)*"])


def test_under_require_interop_it_fails_instead(run_sub, inner, monkeypatch) -> None:
    monkeypatch.setenv("AGENTBENCH_REQUIRE_INTEROP", "1")
    result = run_sub()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*AGENTBENCH_REQUIRE_INTEROP=1, so this fails instead of skipping*"])


def test_a_server_that_cannot_start_fails_with_its_output(run_sub, inner, monkeypatch) -> None:
    if not UPSTREAM:
        interop_unavailable("interop: set AGENTBENCH_WAA_UPSTREAM (see .ci/run)")
    monkeypatch.setenv("AGENTBENCH_WAA_UPSTREAM", UPSTREAM)
    # Debian's python3 has no flask: upstream's main.py dies on import, and the message says so.
    monkeypatch.setenv("AGENTBENCH_WAA_SERVER_PYTHON", "/usr/bin/python3")
    result = run_sub()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the real WAA server tier could not start: the WAA server exited with 1*",
                                 "*ModuleNotFoundError: No module named *"])
