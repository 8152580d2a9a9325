"""``--pool static``: one WAA host per process, leased on the controller from a free list. Tested
with real loopback servers (``FakeWAAServer``), one per host."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import notepad_project, only_run_folder, results

from pytest_agentbench.testing import NOTEPAD_TASK as NOTEPAD

EXAMPLES = Path(__file__).parent / "data" / "waa" / "examples"


@pytest.fixture
def hosts():
    from pytest_agentbench.testing import FakeWAAServer, serve_notepad_gold

    task = json.loads((EXAMPLES / "notepad" / f"{NOTEPAD}.json").read_text())
    servers = [FakeWAAServer(evaluate=True), FakeWAAServer(evaluate=True)]
    for server in servers:
        server.start()
        serve_notepad_gold(server, task)
    yield servers
    for server in servers:
        server.stop()


@pytest.fixture
def project(pytester):
    """Four copies of the notepad task (ids t1..t4) and an index naming them."""
    return notepad_project(pytester.path, 4)


def evaluations(server) -> int:
    return sum(1 for r in server.requests if r["path"] == "/evaluate")


def test_each_worker_plays_on_its_own_host(run_sub, pytester, hosts, project):
    # URL|EVALUATE_URL: each host scores with its own (fake) evaluate server.
    urls = ",".join(f"{h.url}|{h.evaluate_url}" for h in hosts)
    result = run_sub(*project, "--pool", "static", "--pool-hosts", urls, "-n", "2", "--waa-evaluate-url", "http://x:9")
    result.assert_outcomes(passed=4)
    per_worker = Counter(r["worker"] for r in results(only_run_folder(pytester.path)))
    # Every evaluation landed on exactly one host, and the hosts split the tasks as the workers did.
    assert sorted(evaluations(h) for h in hosts) == sorted(per_worker.values())
    assert sum(evaluations(h) for h in hosts) == 4


def test_without_xdist_the_first_host_is_used(run, hosts, project):
    result = run(*project, "--pool", "static", "--pool-hosts",
                 f"{hosts[0].url}|{hosts[0].evaluate_url},{hosts[1].url}|{hosts[1].evaluate_url}",
                 "--waa-evaluate-url", "http://x:9")
    result.assert_outcomes(passed=4)
    assert (evaluations(hosts[0]), evaluations(hosts[1])) == (4, 0)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--pool", "static"], "*--pool static needs --pool-hosts URL*"),
        (["--pool", "static", "--pool-hosts", "not-a-url"], "*--pool-hosts entry 'not-a-url' must be a URL*"),
        (["--pool", "static", "--pool-hosts", "http://127.0.0.1:9", "-n", "2"],
         "*--pool static has 1 host(s) for 2 workers; give one host per worker (-n 1)*"),
    ],
)
def test_bad_pool_options_are_usage_errors(run_sub, project, extra, expected):
    result = run_sub(*project, "--waa-evaluate-url", "http://127.0.0.1:9", *extra)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([expected])


def test_each_host_has_its_devtools_endpoint():
    from pytest_agentbench.infra.connect import VMConnection
    from pytest_agentbench.infra.pool import parse_hosts

    (host,) = parse_hosts(["http://10.0.0.5:5000|http://10.0.0.5:5051"], cdp_port=9333)
    assert host["cdp_url"] == "http://10.0.0.5:9333" and host["evaluate_url"] == "http://10.0.0.5:5051"
    lease = {"vm": {"name": "vm1", "public_ip": "203.0.113.9"}, "connect": "direct", "waa_port": 5000,
             "evaluate_port": 5051, "cdp_port": 9222}
    assert VMConnection(lease).open() == {"server_url": "http://203.0.113.9:5000",
                                          "evaluate_url": "http://203.0.113.9:5051",
                                          "cdp_url": "http://203.0.113.9:9222"}
