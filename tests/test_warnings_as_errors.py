"""Every kind of run is clean under ``-W error`` on the installed pytest: a project that sets
``filterwarnings = error`` (or a CI job that passes ``-W error``) gets the same outcomes as without
it, and no warning. A deprecation in a new pytest release fails here the day it ships."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

CASES = Path(__file__).parent / "data" / "trajectory_cases"

RUNS = {
    "mock": ("--bench=mock", "--bench-limit=3"),
    "mockmed": ("--bench=mockmed",),
    "audit": ("--audit-verifier=toy",),
    "extradup": ("--bench=extradup",),
    "cases": ("cases",),
}


def outcomes(result: pytest.RunResult) -> dict[str, int]:
    return {k: v for k, v in result.parseoutcomes().items() if k not in ("warnings", "warning", "seconds")}


@pytest.mark.parametrize("kind", sorted(RUNS))
def test_a_run_under_warnings_as_errors_has_the_outcomes_of_a_plain_run(kind: str, pytester: pytest.Pytester):
    shutil.copytree(CASES, pytester.path / "cases")
    args = ("-p", "no:cacheprovider", *RUNS[kind])
    plain = pytester.runpytest_subprocess(*args)
    assert "warnings summary" not in plain.stdout.str(), plain.stdout.str()
    pytester.makeini("[pytest]\nfilterwarnings =\n    error\n")
    strict = pytester.runpytest_subprocess("-W", "error", *args)
    out = strict.stdout.str()
    assert "INTERNALERROR" not in out and "warnings summary" not in out, out
    assert strict.ret == plain.ret and outcomes(strict) == outcomes(plain), out
    assert outcomes(plain).get("passed", 0) >= 1  # each kind plays something that passes


def test_an_old_option_spelling_under_warnings_as_errors_is_a_usage_line(pytester: pytest.Pytester):
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-W", "error::DeprecationWarning",
                                           "--bench=mock", "--bench-limit=1", "--trials=2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.stderr.lines if line.strip()][-1].startswith(
        "ERROR: --trials is now spelled --bench-trials;"), result.stderr.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    warned = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--bench=mock", "--bench-limit=1", "--trials=2")
    warned.assert_outcomes(passed=2, warnings=1)
