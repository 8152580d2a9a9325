"""Pool options that need no cloud: the cost arithmetic, the dry run's estimate for each kind of
pool, and the usage errors of bad pool options (each one line, exit 4, nothing created)."""

from __future__ import annotations

import pytest
from conftest import notepad_project

from pytest_agentbench.infra.prices import HOURLY_USD, estimate, hourly_price, vm_hours
from pytest_agentbench.infra.providers.base import VM


def test_the_price_is_the_created_sizes_and_an_override_wins():
    assert hourly_price("azure", "Standard_D8ds_v5") == HOURLY_USD[("azure", "Standard_D8ds_v5")] == 0.452
    assert hourly_price("aws", "m8i.2xlarge") == 0.42336
    assert hourly_price("aws", "m9z.huge") is None  # unknown: no guess
    assert hourly_price("aws", "m9z.huge", override=1.5) == 1.5


def test_estimate_bills_every_vm_until_the_busiest_finishes():
    # 154 tasks on 4 VMs: the busiest runs 39 tasks at 3 minutes, plus a quarter hour to boot.
    est = estimate(154, 4, 0.452, minutes_per_task=3.0)
    assert est.vm_hours == pytest.approx(4 * (39 * 3 / 60 + 0.25))
    assert est.vm_usd == pytest.approx(est.vm_hours * 0.452)
    assert estimate(0, 2, None).vm_usd is None and estimate(0, 2, None).vm_hours == pytest.approx(0.5)


def test_vm_hours_run_from_creation_to_deletion():
    def vm(created: float, deleted: float | None) -> VM:
        return VM(name="v", provider="aws", resource_id="i", region="r", size="s", ssh_user="u",
                  created_at=created, deleted_at=deleted)

    assert vm_hours([vm(100.0, 3700.0), vm(1900.0, None)], now=5500.0) == pytest.approx(2.0)
    assert vm_hours([vm(0.0, None)], now=5500.0) == 0.0  # never accepted by the cloud: nothing billed


@pytest.fixture
def project(pytester):
    return [*notepad_project(pytester.path, 5), "--waa-evaluate-url", "http://127.0.0.1:9"]


def test_azure_dry_run_needs_no_account_and_prices_the_default_size(run_sub, pytester, project, monkeypatch):
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID", raising=False)
    result = run_sub(*project, "--pool", "azure", "--pool-dry-run", "-n", "4")
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "*Pool dry run (azure, Standard_D8ds_v5 in eastus, 4 VM(s)): 5 tasks",
        "*VM-hours:   1.40 vm-hours @ $0.4520/hr = $0.63   ($0.1266/task)",
        "*Assumes 3 min per task and 0.25 h per VM*",
        "*Nothing was started.",
    ])
    assert not (pytester.path / "benchmark_results").exists()  # nothing ran, nothing was written


def test_dry_run_of_an_unknown_size_says_the_price_is_unknown(run, project):
    result = run(*project, "--pool", "aws", "--pool-size", "x9.mega", "--pool-dry-run", "--pool-minutes-per-task", "6")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*VM-hours:   0.75 vm-hours @ price unknown (give --pool-hourly-usd) = unknown"])


def test_dry_run_with_a_negotiated_price(run, project):
    result = run(*project, "--pool", "aws", "--pool-dry-run", "--pool-hourly-usd", "0.2", "-k", "t1")
    result.stdout.fnmatch_lines(["*1 VM(s)): 1 tasks", "*0.30 vm-hours @ $0.2000/hr = $0.06*"])


def test_static_dry_run_has_no_vm_cost(run, project):
    result = run(*project, "--pool", "static", "--pool-hosts", "http://127.0.0.1:9", "--pool-dry-run")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*Pool dry run (static): 5 tasks on existing hosts; no VM is created, no VM cost."])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pool-dry-run"], "*--pool-dry-run needs --pool static|aws|azure*"),
        (["--pool", "aws", "--pool-hourly-usd", "cheap", "--pool-dry-run"],
         "*--pool-hourly-usd must be a number of US dollars, got 'cheap'*"),
        (["--pool", "aws", "--pool-workers", "0"], "*--pool-workers*"),
        (["--agentbench-reap"], "*--agentbench-reap needs --pool aws or --pool azure*"),
        (["--agentbench-reap", "--pool", "static"], "*--agentbench-reap needs --pool aws or --pool azure*"),
    ],
)
def test_bad_pool_options_are_one_line_usage_errors(run_sub, project, args, message):
    result = run_sub(*project, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (result.stderr if any(m.startswith("ERROR") for m in result.stderr.lines)
     else result.stdout).fnmatch_lines([message])


def test_azure_without_a_subscription_is_a_usage_error(run_sub, project, monkeypatch):
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID", raising=False)
    result = run_sub(*project, "--pool", "azure", "--pool-image", "Canonical:ubuntu-24_04-lts:server:latest")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --pool azure: *AZURE_SUBSCRIPTION_ID*"])


def test_bench_options_without_a_benchmark_say_they_do_nothing(run, pytester):
    pytester.makepyfile("def test_x():\n    pass\n")
    result = run("--pool", "aws", "--bench-dry-run")
    assert result.ret == 0  # --bench-dry-run still only collects; nothing was created or priced
    result.stdout.fnmatch_lines([
        "*PytestConfigWarning: --pool, --bench-dry-run given without --bench: nothing uses it*"])


def test_a_plain_run_warns_about_nothing(run, pytester):
    pytester.makepyfile("def test_x():\n    pass\n")
    result = run()
    result.assert_outcomes(passed=1)
    assert "given without --bench" not in result.stdout.str()


def test_a_dry_run_shows_counts_not_every_item(run):
    result = run("--bench=mock", "--bench-limit", "40", "--bench-dry-run")
    assert result.ret == 0
    assert "bench/mock: 40" in result.outlines
    assert not [line for line in result.outlines if line.startswith("bench/mock::")]
    result.stdout.fnmatch_lines(["*Dry run: estimated cost*"])
