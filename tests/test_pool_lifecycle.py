"""Cloud pools end to end: real pytest runs (subprocesses, with xdist) create VMs in moto's server
over real HTTP, play WAA tasks on them, and leave nothing behind on any exit path: a normal end,
``-x``, an item that cannot reach its VM, a creation that fails half way, Ctrl-C, SIGTERM and a
worker that dies.

moto's VMs have no network, so the project's conftest answers the ``pytest_agentbench_vm_endpoints``
hook with a loopback fake WAA server per process (the SSH tunnel to a VM is tested against a real
sshd in test_pool_connect.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import QUIET, notepad_project, only_run_folder, results

from pytest_agentbench.testing import NOTEPAD_SOLUTION
from pytest_agentbench.testing import NOTEPAD_TASK as NOTEPAD

pytest.importorskip("boto3")
pytest.importorskip("moto")

EXAMPLES = Path(__file__).parent / "data" / "waa" / "examples"

CONFTEST = r'''
import json, os, signal, time
from pathlib import Path

import pytest

_server = None

if os.environ.get("LIFECYCLE_FAIL_SECOND_CREATE"):
    from pytest_agentbench.infra.providers.aws import AWSProvider
    from pytest_agentbench.infra.providers.base import ProviderError

    _create = AWSProvider.create_vm
    _calls = []

    def create_vm(self, spec):
        _calls.append(spec.name)
        if len(_calls) == 2:
            raise ProviderError("instance limit exceeded for m8i.2xlarge in us-east-1 (test)")
        return _create(self, spec)

    AWSProvider.create_vm = create_vm

if os.environ.get("LIFECYCLE_SLOW_CREATE"):
    # Creation requests take a while: the run is stopped, and stopped again, while they are in flight.
    from pytest_agentbench.infra.providers.aws import AWSProvider

    _create_slowly = AWSProvider.create_vm

    def create_vm(self, spec):
        marks = Path(os.environ["LIFECYCLE_MARKS"])
        marks.mkdir(exist_ok=True)
        (marks / f"creating-{spec.name}").write_text("x")
        for _ in range(200):
            if (marks / "signalled").exists():
                break
            time.sleep(0.05)
        return _create_slowly(self, spec)

    AWSProvider.create_vm = create_vm

if os.environ.get("LIFECYCLE_SLOW_BOOT"):
    # VMs take long to boot: the run is stopped while every VM is still being waited for.
    import boto3
    from pytest_agentbench.infra.providers.aws import AWSProvider
    from pytest_agentbench.infra.providers.base import ProviderError

    _wait = AWSProvider.wait_running

    def wait_running(self, vm):
        marks = Path(os.environ["LIFECYCLE_MARKS"])
        marks.mkdir(exist_ok=True)
        (marks / f"booting-{vm.name}").write_text(vm.resource_id)
        ec2 = boto3.client("ec2", region_name="us-east-1")
        for _ in range(300):
            state = (ec2.describe_instances(InstanceIds=[vm.resource_id])
                     ["Reservations"][0]["Instances"][0]["State"]["Name"])
            if state in ("shutting-down", "terminated"):
                raise ProviderError(f"{vm.name} was terminated while booting")
            time.sleep(0.1)
        return _wait(self, vm)

    AWSProvider.wait_running = wait_running

if os.environ.get("LIFECYCLE_SLOW_DELETE"):
    # Deleting takes a while in a real cloud: the test's further signals land in it.
    from pytest_agentbench.infra.providers.aws import AWSProvider

    _destroy = AWSProvider.destroy

    def destroy(self, vms):
        marks = Path(os.environ["LIFECYCLE_MARKS"])
        (marks / "deleting").write_text("x")
        for _ in range(100):
            if (marks / "signalled").exists():
                break
            time.sleep(0.05)
        time.sleep(0.5)
        return _destroy(self, vms)

    AWSProvider.destroy = destroy


def pytest_agentbench_vm_endpoints(vm, config):
    global _server
    marks = Path(os.environ["LIFECYCLE_MARKS"])
    marks.mkdir(exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    (marks / f"vm-{worker}-{os.getpid()}").write_text(json.dumps(vm))
    if os.environ.get("LIFECYCLE_CRASH") and worker == "gw0" and not (marks / "crashed").exists():
        (marks / "crashed").write_text("x")
        os.kill(os.getpid(), signal.SIGKILL)  # the kernel kills it: nothing of it runs on
    if os.environ.get("LIFECYCLE_BLOCK"):
        (marks / f"blocked-{worker}").write_text("x")
        for _ in range(300):
            time.sleep(0.1)
    if os.environ.get("LIFECYCLE_UNREACHABLE"):
        return {"server_url": "http://127.0.0.1:9", "evaluate_url": "http://127.0.0.1:9"}
    if _server is None:
        from pytest_agentbench.testing import FakeWAAServer, serve_notepad_gold
        _server = FakeWAAServer(evaluate=True)
        _server.start()
        serve_notepad_gold(_server, json.loads(Path(os.environ["LIFECYCLE_TASK"]).read_text()))
    return {"server_url": _server.url, "evaluate_url": _server.evaluate_url}
'''


def address_echo(answer: str, status: int = 200) -> str:
    """A loopback stand-in for the public-address echo service; returns its URL."""
    import http.server
    import threading

    from pytest_agentbench.sockets import HTTPServer

    class Echo(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = answer.encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/"


@pytest.mark.parametrize("answer, status, expected", [
    ("1.2.3.4\n", 200, None),
    ("<html>captive portal</html>", 200, "did not answer with an IP address"),
    ("10.1.2.3", 200, "which is not a public address"),
    ("", 503, "could not learn this machine's public address"),
])
def test_ssh_ingress_defaults_to_the_callers_public_address(run_sub, pytester, project, monkeypatch, answer, status,
                                                            expected):
    monkeypatch.setenv("AGENTBENCH_ADDRESS_ECHO_URL", address_echo(answer, status))
    args = [a for a in project if a not in ("--pool-ssh-cidr", "203.0.113.7/32")]
    result = run_sub(*args, "-k", "t1", "-n", "1")
    if expected is None:
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["agentbench pool: creating 1 VM(s), * SSH from 1.2.3.4/32 only)"])
        return
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --pool-ssh-cidr: *{expected}*; give --pool-ssh-cidr *"])
    assert all_instances() == []


def ec2():
    import boto3

    return boto3.client("ec2", region_name="us-east-1")


def live_instances() -> list[dict]:
    found = ec2().describe_instances(Filters=[
        {"Name": "tag-key", "Values": ["agentbench-run"]},
        {"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped"]}])
    return [i for r in found["Reservations"] for i in r["Instances"]]


def all_instances() -> list[dict]:
    found = ec2().describe_instances(Filters=[{"Name": "tag-key", "Values": ["agentbench-run"]}])
    return [i for r in found["Reservations"] for i in r["Instances"]]


def run_groups() -> list[dict]:
    found = ec2().describe_security_groups(Filters=[{"Name": "tag-key", "Values": ["agentbench-run"]}])
    return found["SecurityGroups"]


def live_volumes() -> list[dict]:
    found = ec2().describe_volumes(Filters=[{"Name": "tag-key", "Values": ["agentbench-run"]}])
    return [v for v in found["Volumes"] if v["State"] not in ("deleting", "deleted")]


@pytest.fixture
def ami(aws_env, moto_ami) -> str:
    return moto_ami


@pytest.fixture
def project(pytester, aws_env, ami, monkeypatch):
    """Four notepad tasks, a scripted agent that solves them, and a cloud pool on moto."""
    pytester.makeconftest(CONFTEST)
    return [*lifecycle_project(pytester, monkeypatch),
            "--pool", "aws", "--pool-image", ami, "--pool-poll-interval", "0", "--pool-ready-timeout", "20",
            "--pool-ssh-cidr", "203.0.113.7/32"]


def lifecycle_project(pytester, monkeypatch) -> list[str]:
    monkeypatch.setenv("LIFECYCLE_MARKS", str(pytester.path / "marks"))
    monkeypatch.setenv("LIFECYCLE_TASK", str(EXAMPLES / "notepad" / f"{NOTEPAD}.json"))
    # Scored by the fake's evaluate server, which the endpoints hook names for each VM.
    return [*notepad_project(pytester.path, 4), "--waa-evaluate-url", "http://127.0.0.1:9"]


def summary(root: Path) -> dict:
    return json.loads((only_run_folder(root) / "summary.json").read_text())


def test_xdist_run_creates_one_vm_per_worker_and_deletes_them(run_sub, pytester, project):
    result = run_sub(*project, "-n", "2")
    result.assert_outcomes(passed=4)
    assert live_instances() == [] and run_groups() == []
    created = all_instances()
    assert len(created) == 2
    # Each worker got its own VM, and every VM was tagged with the one run id.
    used = {json.loads(p.read_text())["resource_id"] for p in (pytester.path / "marks").glob("vm-gw*")}
    assert used == {i["InstanceId"] for i in created}
    run_ids = {t["Value"] for i in created for t in i["Tags"] if t["Key"] == "agentbench-run"}
    assert len(run_ids) == 1
    cost = summary(pytester.path)["vm_cost"]
    assert cost["final"] is True and cost["vms"] == 2 and cost["size"] == "m8i.2xlarge"
    assert cost["hourly_usd"] == pytest.approx(0.42336)
    assert cost["vm_usd"] == pytest.approx(cost["vm_hours"] * 0.42336, abs=1e-4)
    result.stdout.fnmatch_lines(["*VM cost: 2 aws m8i.2xlarge VM(s), * vm-hours @ $0.4234/hr = $*(deleted)*",
                                 "Model cost: $0.00 (from the agents); total $*"])
    pool = json.loads((only_run_folder(pytester.path) / "pool" / "pool.json").read_text())
    assert pool["destroyed"] is True and all(vm["deleted_at"] for vm in pool["vms"])


def test_without_xdist_one_vm_is_created_on_first_use(run_sub, pytester, project):
    result = run_sub(*project, "-k", "t1 or t2")
    result.assert_outcomes(passed=2)
    assert len(all_instances()) == 1 and live_instances() == []


def _finished_run(run_sub, pytester, project, keep: int) -> Path:
    """A run of the four tasks on the pool that ends normally, then cut back to its first
    ``keep`` records (as if it had died there); returns its folder."""
    run_sub(*project, "-n", "2", "--bench-run-name", "run").assert_outcomes(passed=4)
    folder = only_run_folder(pytester.path)
    lines = (folder / "results.jsonl").read_text().splitlines()
    (folder / "results.jsonl").write_text("".join(line + "\n" for line in lines[:keep]))
    for mark in (pytester.path / "marks").glob("vm-*"):
        mark.unlink()
    return folder


@pytest.mark.parametrize(("keep", "xdist", "vms"), [(4, ("-n", "2"), 0), (4, (), 0), (3, ("-n", "2"), 1),
                                                    (2, ("-n", "2"), 2)],
                         ids=["done-xdist", "done-one-process", "one-left-xdist", "two-left-xdist"])
def test_resume_creates_vms_only_for_items_left(run_sub, pytester, project, keep, xdist, vms):
    """No VM for work already done: a resumed run creates one per worker that plays an item."""
    folder = _finished_run(run_sub, pytester, project, keep)
    before = {i["InstanceId"] for i in all_instances()}
    assert len(before) == 2 and live_instances() == []
    result = run_sub(*project, *xdist, "--bench-resume", str(folder))
    result.assert_outcomes(passed=4)  # the done ones from their records
    created = [i for i in all_instances() if i["InstanceId"] not in before]
    assert len(created) == vms and live_instances() == [] and run_groups() == []
    used = {json.loads(p.read_text())["resource_id"] for p in (pytester.path / "marks").glob("vm-*")}
    assert used == {i["InstanceId"] for i in created}  # each new VM played, on a worker of its own
    assert len(results(folder)) == 4
    if vms:
        result.stdout.fnmatch_lines([f"agentbench pool: creating {vms} VM(s), *"])
        assert summary(pytester.path)["vm_cost"]["vms"] == vms
    else:
        assert "creating" not in result.stdout.str()


def test_dry_run_of_a_resume_prices_only_the_items_left(run_sub, pytester, project):
    folder = _finished_run(run_sub, pytester, project, 3)
    result = run_sub(*project, "--pool-dry-run", "-n", "2", "--bench-resume", str(folder))
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*Pool dry run (aws, m8i.2xlarge in us-east-1, 1 VM(s)): 1 tasks",
                                 "*VM-hours:   0.30 vm-hours @ $0.4234/hr = $0.13   ($0.1270/task)"])
    both = run_sub(*project, "--bench-dry-run", "-n", "2", "--bench-resume", str(folder))
    assert both.ret == 0
    both.stdout.fnmatch_lines(["*1 tasks (agent scripted*", "*AWS VM-hours: * 0.30 vm-hours @ $0.4234/hr = $0.13"])
    assert len(all_instances()) == 2  # the first run's, none since
    assert len(results(folder)) == 3  # a dry run writes nothing


def test_collect_only_creates_nothing(run_sub, project):
    result = run_sub(*project, "--co", "-n", "2")
    assert result.ret == 0
    assert all_instances() == []


def test_stop_at_first_failure(run_sub, pytester, project):
    (pytester.path / "script.json").write_text(json.dumps({"t1": [{"type": "done"}], "*": NOTEPAD_SOLUTION}))
    result = run_sub(*project, "-x", "-n", "2")
    assert result.ret != 0
    assert len(all_instances()) == 2 and live_instances() == [] and run_groups() == []


def test_item_that_cannot_reach_its_vm_is_an_error_and_the_vm_is_deleted(run_sub, project, monkeypatch):
    monkeypatch.setenv("LIFECYCLE_UNREACHABLE", "1")
    result = run_sub(*project, "-n", "2", "--pool-ready-timeout", "0.5", "-k", "t1 or t2")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*WAA server at http://127.0.0.1:9*"])
    assert len(all_instances()) == 2 and live_instances() == []


def test_creation_failing_half_way_deletes_what_was_created(run_sub, project, monkeypatch):
    monkeypatch.setenv("LIFECYCLE_FAIL_SECOND_CREATE", "1")
    result = run_sub(*project, "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--pool aws: instance limit exceeded for m8i.2xlarge in us-east-1 (test)*"])
    assert len(all_instances()) == 1 and live_instances() == [] and run_groups() == []


def test_worker_crash_gets_a_replacement_and_nothing_survives(run_sub, pytester, project, monkeypatch):
    monkeypatch.setenv("LIFECYCLE_CRASH", "1")
    result = run_sub(*project, "-n", "2")
    assert (pytester.path / "marks" / "crashed").exists()
    result.stdout.fnmatch_lines(["*worker*crashed*"])
    assert len(all_instances()) == 2 and live_instances() == [] and run_groups() == []
    # The worker died connecting to its VM, in the item's setup before the agent played: an
    # infrastructure error in the record, and the setup error pytest reports (xdist alone says failed).
    counts = summary(pytester.path)["statuses"]
    assert counts == {"error": 1, "passed": 3} and result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.parseoutcomes() == {"errors": 1, "passed": 3}
    (dead,) = [r for r in results(only_run_folder(pytester.path)) if r["status"] == "error"]
    assert dead["error_type"] == "infrastructure" and dead["outcome"] is False
    assert "while its fixtures were set up and its environment connected" in dead["reason"]


def _interrupt(pytester, project, sig: int, *, group: bool, stage: str = "blocked") -> subprocess.CompletedProcess:
    """Start a run that blocks at ``stage`` (inside an item: "blocked"; while VMs boot: "booting"),
    wait until both workers (or both VMs) are there, then signal."""
    env = dict(os.environ, LIFECYCLE_BLOCK="1") if stage == "blocked" else dict(os.environ, LIFECYCLE_SLOW_BOOT="1")
    marks = pytester.path / "marks"
    proc = subprocess.Popen([sys.executable, "-m", "pytest", *project, "-n", "2", *QUIET], cwd=pytester.path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while len(list(marks.glob(f"{stage}-*"))) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert len(list(marks.glob(f"{stage}-*"))) == 2, f"the run never reached {stage}"
    assert len(live_instances()) == 2
    if group:
        os.killpg(proc.pid, sig)
    else:
        os.kill(proc.pid, sig)
    out, _ = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, "")


@pytest.mark.parametrize("signals", [(signal.SIGINT, signal.SIGTERM), (signal.SIGINT, signal.SIGINT, signal.SIGTERM)],
                         ids=["sigint-then-sigterm", "ctrl-c-twice-then-sigterm"])
def test_more_signals_during_deletion_do_not_stop_it(pytester, project, monkeypatch, signals):
    """CI runners send SIGINT, then SIGTERM; people press Ctrl-C twice. Signals that arrive while
    the VMs are being deleted are reported; the deletion finishes."""
    monkeypatch.setenv("LIFECYCLE_SLOW_DELETE", "1")
    marks = pytester.path / "marks"
    proc = subprocess.Popen([sys.executable, "-m", "pytest", *project, "-n", "2", *QUIET], cwd=pytester.path,
                            env=dict(os.environ, LIFECYCLE_BLOCK="1"), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while len(list(marks.glob("blocked-*"))) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert len(live_instances()) == 2
    os.killpg(proc.pid, signals[0])
    while not (marks / "deleting").exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert (marks / "deleting").exists(), "the deletion never started"
    for sig in signals[1:]:
        os.kill(proc.pid, sig)
        time.sleep(0.1)
    (marks / "signalled").write_text("x")
    out, _ = proc.communicate(timeout=90)
    assert live_instances() == [] and run_groups() == [], out
    assert "Traceback" not in out, out
    assert f"got signal {int(signals[1])} while deleting the VMs" in out
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out


@pytest.mark.parametrize("signals", [(signal.SIGINT, signal.SIGINT, signal.SIGTERM), (signal.SIGTERM, signal.SIGTERM)],
                         ids=["ctrl-c-twice-then-sigterm", "sigterm-twice"])
def test_more_signals_while_vms_are_being_created_still_delete_them(pytester, project, monkeypatch, signals):
    """The run is stopped while its creation requests are in flight, then stopped again while the
    deletion waits for them: the VMs they make are deleted all the same."""
    monkeypatch.setenv("LIFECYCLE_SLOW_CREATE", "1")
    marks = pytester.path / "marks"
    proc = subprocess.Popen([sys.executable, "-m", "pytest", *project, "-n", "2", *QUIET], cwd=pytester.path,
                            env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while len(list(marks.glob("creating-*"))) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert len(list(marks.glob("creating-*"))) == 2, "the creations never started"
    os.killpg(proc.pid, signals[0])
    time.sleep(0.5)
    for sig in signals[1:]:
        os.kill(proc.pid, sig)
        time.sleep(0.2)
    (marks / "signalled").write_text("x")
    out, _ = proc.communicate(timeout=90)
    assert live_instances() == [] and run_groups() == [] and live_volumes() == [], out
    assert "Traceback" not in out, out


def test_ctrl_c_deletes_the_pool(pytester, project):
    done = _interrupt(pytester, project, signal.SIGINT, group=True)
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout
    assert "deleting 2 VM(s)" in done.stdout
    assert live_instances() == [] and run_groups() == []


def test_sigterm_on_the_controller_deletes_the_pool(pytester, project):
    done = _interrupt(pytester, project, signal.SIGTERM, group=False)
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout
    assert live_instances() == [] and run_groups() == []


def test_sigterm_while_the_vms_boot_deletes_them_without_waiting_for_them(pytester, project):
    started = time.monotonic()
    done = _interrupt(pytester, project, signal.SIGTERM, group=False, stage="booting")
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout
    assert time.monotonic() - started < 25  # the boot waits (30 s) were not sat out
    assert len(all_instances()) == 2 and live_instances() == [] and run_groups() == []


def test_keep_pool_leaves_the_vms_and_the_reaper_deletes_them(run_sub, pytester, project):
    result = run_sub(*project, "-n", "2", "--pool-keep", "-k", "t1 or t2")
    result.assert_outcomes(passed=2)
    assert len(live_instances()) == 2
    line = next(s for s in result.stdout.lines if "--pool-keep" in s)
    run_id = line.rsplit("--agentbench-reap-run ", 1)[1].strip()
    result.stdout.fnmatch_lines(["*VM cost: 2 aws*(kept running)*"])
    other = run_sub("--agentbench-reap", "--pool", "aws", "--agentbench-reap-run", "someone-else")
    assert other.ret == 0 and len(live_instances()) == 2
    reaped = run_sub("--agentbench-reap", "--pool", "aws", "--agentbench-reap-run", run_id, "--pool-poll-interval", "0")
    assert reaped.ret == 0, reaped.stdout.str()
    reaped.stdout.fnmatch_lines(["*3 resource(s) tagged agentbench-run (run " + run_id + ")*",
                                 "*deleted 3 of 3 resource(s)*"])
    assert live_instances() == [] and run_groups() == []


def test_dry_run_prices_the_selected_tasks_and_starts_nothing(run_sub, project):
    result = run_sub(*project, "--pool-dry-run", "-n", "2", "-k", "t1 or t2 or t3")
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "*Pool dry run (aws, m8i.2xlarge in us-east-1, 2 VM(s)): 3 tasks",
        "*VM-hours:   0.70 vm-hours @ $0.4234/hr = $0.30   ($0.0988/task)",
        "*Nothing was started.",
    ])
    assert all_instances() == []


def test_missing_credentials_is_one_usage_line_and_nothing_is_created(run_sub, project, monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    result = run_sub(*project, "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR")]
    assert len(errors) == 1 and "credentials" in errors[0], result.stderr.str()


def test_unknown_size_is_a_usage_error(run_sub, project):
    result = run_sub(*project, "--pool-size", "m9z.huge")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'m9z.huge' is not offered in region 'us-east-1'*"])
    assert all_instances() == []


# -- Azure: the same run through the SDK's pipeline into the fake ARM transport -----------------------
AZURE_CONFTEST = CONFTEST + r'''

def pytest_agentbench_pool_provider_extra(kind, config):
    import fake_arm

    arm = fake_arm.REGISTRY[os.environ["LIFECYCLE_ARM"]]
    return {"subscription_id": fake_arm.SUBSCRIPTION, "credential": arm.credential(), "transport": arm.transport()}
'''


def test_azure_run_creates_a_resource_group_per_run_and_deletes_it(pytester, monkeypatch, run):
    fake_arm = pytest.importorskip("fake_arm")
    for sdk in ("azure.mgmt.compute", "azure.mgmt.network", "azure.mgmt.resource"):
        pytest.importorskip(sdk)
    arm = fake_arm.FakeARM()
    fake_arm.REGISTRY["lifecycle"] = arm
    monkeypatch.setenv("LIFECYCLE_ARM", "lifecycle")
    args = lifecycle_project(pytester, monkeypatch)
    pytester.makeconftest(AZURE_CONFTEST)
    # In process: the controller (which creates and deletes the VMs) shares the fake with this test;
    # the two xdist workers only reach their VMs through the endpoints hook.
    # No --pool-ssh-cidr: the caller's public address is asked of the echo service (here on loopback).
    monkeypatch.setenv("AGENTBENCH_ADDRESS_ECHO_URL", address_echo("1.2.3.4\n"))
    result = run(*args, "--pool", "azure", "--pool-image",
                 "Canonical:ubuntu-24_04-lts:server:latest", "--pool-poll-interval", "0", "-n", "2")
    result.assert_outcomes(passed=4)
    (nsg,) = {c.path: c for c in arm.calls("PUT", "networkSecurityGroups")}.values()
    (rule,) = nsg.body["properties"]["securityRules"]
    assert rule["properties"]["sourceAddressPrefix"] == "1.2.3.4/32"
    created = arm.calls("PUT", "virtualMachines")
    assert len({c.path for c in created}) == 2
    assert arm.calls("DELETE", "resourceGroups"), "the run's resource group was never deleted"
    assert arm.resource_groups == {} and arm.resources == {}
    result.stdout.fnmatch_lines(["*VM cost: 2 azure Standard_D8ds_v5 VM(s), * @ $0.4520/hr = $*(deleted)*"])


def test_the_vm_fixture_gives_the_processs_vm_without_xdist(run_sub, pytester, project):
    pytester.makepyfile(test_uses_vm='''
        def test_vm(vm):
            assert vm["provider"] == "aws" and vm["resource_id"].startswith("i-")
            assert vm["host_key"].startswith("ssh-ed25519 ") and vm["name"].endswith("-0")
    ''')
    result = run_sub(*project, "test_uses_vm.py", "--bench-task", "t1")
    result.assert_outcomes(passed=2)
    assert len(all_instances()) == 1 and live_instances() == []
