"""Shared helpers for the plugin's own tests. Every plugin-facing test runs real pytest sessions
through ``pytester``; nothing here fakes pytest."""

from __future__ import annotations

import contextlib
import importlib
import json
import pkgutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import pytest_agentbench

# pytester's in-process runs drop the modules a run imported when it ends; a class imported by an
# inner conftest would then differ from the one the plugin checks against in the next run. Importing
# the whole package here keeps one copy of every module for the whole test session.
# The same for httpx: its transport maps httpcore's exceptions through classes it loads on first
# use, so one refused loopback request here loads them before any inner run can drop them.
try:
    httpx.get("http://127.0.0.1:9/", timeout=0.5)
except httpx.HTTPError:
    pass
for _module in pkgutil.walk_packages(pytest_agentbench.__path__, "pytest_agentbench."):
    try:
        importlib.import_module(_module.name)
    except ImportError:  # optional extras (cloud SDKs) that are not installed
        pass

# The real WAA server tier's fixtures (real_waa_server, waa_desktop) and its marker.
pytest_plugins = ["waa_real"]

# tests/data holds inputs that tests copy into pytester folders (trajectory case files among
# them, several failing by design): data, never tests of this suite.
collect_ignore = ["data"]

# Plugins that may be installed on a developer machine and would only add noise to inner runs.
QUIET = ("-p", "no:benchmark", "-p", "no:randomly", "-p", "no:hypothesispytest")
#: Inner runs play WAA tasks against stubs and loopback servers, with no VM to settle: upstream's
#: settle times (5 s after reset and setup, 3 s per step, 2 s per opened file) are zeroed there.
NO_WAA_SETTLE = ("-o", "agentbench_waa_settle=0", "-o", "agentbench_waa_step_pause=0",
                 "-o", "agentbench_waa_open_wait=0")


#: The suite's own warning filters: every warning is an error, so a deprecation in a new pytest (or
#: any dependency) fails CI the day it ships, as it fails a user's run under ``-W error``. Set here,
#: not as ``filterwarnings`` in pyproject.toml, because inner pytester runs whose rootdir resolves
#: to this checkout read its ini, and they must see warnings as a user's run does. Each ignore
#: names a third-party warning that is not ours.
WARNING_FILTERS = (
    "error",
    # pytest-benchmark, when installed (not a dependency), says at configure time that xdist disables it
    "ignore:Benchmarks are automatically disabled because xdist plugin is active",
)


def pytest_configure(config: pytest.Config) -> None:
    for line in WARNING_FILTERS:
        config.addinivalue_line("filterwarnings", line)


#: The warning filters of a fresh Python process (taken at import, before any test's own).
PROCESS_FILTERS = list(warnings.filters)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester whose in-process runs start from a fresh process's warning filters, as a user's
    run does: the suite's own ``error`` filter would otherwise reach into them (they run inside
    the outer test's ``catch_warnings``) and make, say, an unknown marker in an inner run an
    error that a real run only warns about."""
    inline_run = pytester.inline_run

    def isolated(*args: Any, **kwargs: Any) -> Any:
        with warnings.catch_warnings():
            warnings.filters[:] = PROCESS_FILTERS
            return inline_run(*args, **kwargs)

    monkeypatch.setattr(pytester, "inline_run", isolated)
    return pytester


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Run this suite on every core unless told otherwise: it waits on subprocesses, servers and
    desktops about as long as it computes, so two workers on a 2-core CI machine about halve it.
    ``-n 0`` (or ``-p no:xdist``, or ``--pdb``, which xdist turns into ``-n 0``) keeps one process;
    an explicit ``-n``/``--dist`` wins. This is a conftest hook, not ``addopts`` in pyproject.toml,
    because inner runs whose rootdir resolves to this checkout read its addopts, and they must not
    start workers; only the outer session loads this conftest. Runs before xdist's own hook
    (``tryfirst``, registered later), which turns ``auto`` into a count.

    A benchmark or audit run started in the checkout (the README's main job, ``pytest --bench=mock``)
    loads this conftest too, through ``testpaths``; it stays as a user's run is, in one process."""
    if not config.pluginmanager.has_plugin("xdist") or hasattr(config, "workerinput"):
        return
    from pytest_agentbench.plugin import options

    if options.benchmarks_requested(config) or options.audit_requested(config):
        return
    if config.option.numprocesses is None:
        config.option.numprocesses = "auto"
        if config.option.dist == "no":
            # Work stealing rebalances the few long interop tests that would otherwise end the run alone.
            config.option.dist = "worksteal"


#: What xdist puts in a worker's environment. The suite runs under xdist by default (the hook
#: above), and every inner run (in-process or a subprocess) would inherit them and look like a
#: worker to code that reads them (the fault-injecting conftests of test_pool_lifecycle and
#: test_record_faults do); without them an inner run sees what it sees in a one-process session.
XDIST_WORKER_ENV = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


@pytest.fixture(autouse=True)
def _outer_xdist_worker_env_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in XDIST_WORKER_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def run(pytester: pytest.Pytester):
    """Run pytest in-process in the pytester folder with the noise plugins off."""

    def _run(*args: str) -> pytest.RunResult:
        return pytester.runpytest(*args, *QUIET, *NO_WAA_SETTLE, *in_process_only(args))

    return _run


def in_process_only(args: tuple[str, ...]) -> tuple[str, ...]:
    """pytest-rerunfailures opens a loopback socket in every run that has xdist installed and
    never closes it (its ServerStatusDB); over the suite's ~2,000 in-process runs those sockets
    pass the 1,024 descriptors ``select()`` takes, and paramiko's and the WAA server's waits fail.
    In-process runs leave it out unless they rerun."""
    if any(a.startswith(("--reruns", "--only-rerun", "--rerun-except")) for a in args):
        return ()
    return ("-p", "no:rerunfailures")


@pytest.fixture
def run_sub(pytester: pytest.Pytester):
    """Run pytest in a subprocess (for xdist and for anything that must not share the process)."""

    def _run(*args: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess(*args, *QUIET, *NO_WAA_SETTLE)

    return _run


def run_folders(root: Path) -> list[Path]:
    base = root / "benchmark_results"
    return sorted(p for p in base.iterdir() if p.is_dir()) if base.exists() else []


def only_run_folder(root: Path) -> Path:
    folders = run_folders(root)
    assert len(folders) == 1, folders
    return folders[0]


def results(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines() if line.strip()]


# A conftest that registers a benchmark whose tasks end in every way an episode can end.
OUTCOME_BENCH = '''
import pytest
from pytest_agentbench import Benchmark, Task, Observation, Verdict, Criterion, Action, Agent

KINDS = ["pass", "fail", "partial", "unevaluated", "infra", "checker_crash", "agent_crash", "agent_error"]

class OutcomeBench(Benchmark):
    name = "outcomes"
    def list_tasks(self, limit=None):
        return [Task(task_id=k, domain="d", instruction=k) for k in KINDS]
    def reset(self, task):
        if task.task_id == "infra":
            raise ConnectionError("VM unreachable")
        self.task = task
        self.final = None
        return Observation(window_title=task.task_id)
    def step(self, action):
        return Observation(window_title="stepped")
    def evaluate(self, task, final_action):
        k = task.task_id
        if k == "checker_crash":
            raise RuntimeError("checker exploded")
        if k == "pass":
            return Verdict(score=1.0, passed=True, reason="ok")
        if k == "fail":
            return Verdict(score=0.0, passed=False, reason="wrong file content")
        if k == "partial":
            return Verdict.from_criteria([Criterion(name="a", passed=True), Criterion(name="b", passed=False)])
        return Verdict(score=0.0, passed=None, reason="needs an LLM judge")

class OutcomeAgent(Agent):
    name = "outcome-agent"
    def act(self, observation, task, history=None):
        if task.task_id == "agent_crash":
            raise ValueError("model returned garbage")
        if task.task_id == "agent_error":
            return Action(type="error", reason="gave up")
        if history:
            return Action(type="done")
        return Action(type="click", x=10, y=10)

def pytest_agentbench_register_benchmarks(registry):
    registry.register("outcomes", lambda config: OutcomeBench())

def pytest_agentbench_register_agents(registry):
    registry.register("outcome-agent", lambda config: OutcomeAgent())
'''


CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--no-first-run"]


def browser_unavailable(reason: str) -> None:
    """Skip a browser test here, but fail it in CI, which must install Debian's chromium."""
    import os

    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI is set, and CI must install it, so this fails instead of skipping")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (Debian's, never a downloaded one) through Playwright, one per module."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        browser_unavailable("browser tests need the playwright package (pip install playwright)")
    if not CHROMIUM.exists():
        browser_unavailable(f"browser tests need Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def moto_server():
    """A moto server (all AWS APIs, in memory) on a free loopback port for the whole session;
    yields its URL. boto3 reaches it over real HTTP through ``AWS_ENDPOINT_URL`` (see ``aws_env``).
    Without moto it skips, except under CI (the dev extra installs it), where it fails."""
    try:
        from moto.server import ThreadedMotoServer
    except ImportError:
        browser_unavailable("AWS provider tests need moto's server mode (pip install 'moto[server]')")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def aws_env(moto_server: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """Point boto3 at the moto server with fake credentials, from a fresh moto state; returns its URL.
    Nothing of the machine's AWS setup (profiles, ~/.aws, instance metadata) is read."""
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
                 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                 "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name in ("AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"):
        empty = tmp_path / f"empty-{name.lower()}"
        empty.write_text("")
        monkeypatch.setenv(name, str(empty))
    httpx.post(f"{moto_server}/moto-api/reset", timeout=10).raise_for_status()
    return moto_server


@pytest.fixture(scope="session")
def moto_ami(moto_server: str) -> str:
    """An Ubuntu AMI id from moto's catalogue, looked up once: the catalogue survives resets and
    listing it takes about a second."""
    import boto3

    ec2 = boto3.client("ec2", region_name="us-east-1", endpoint_url=moto_server,
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    images = ec2.describe_images(Owners=["amazon"], Filters=[{"Name": "name", "Values": ["*ubuntu*"]}])["Images"]
    return min(i["ImageId"] for i in images)


def notepad_project(root: Path, count: int) -> list[str]:
    """``count`` copies of WAA's notepad task (ids t1..tN) under ``root/examples``, an index naming
    them, and a scripted agent that solves each; returns the pytest arguments for that run."""
    import shutil

    from pytest_agentbench.testing import NOTEPAD_SOLUTION, NOTEPAD_TASK

    source = Path(__file__).parent / "data" / "waa" / "examples" / "notepad" / f"{NOTEPAD_TASK}.json"
    examples = root / "examples" / "notepad"
    examples.mkdir(parents=True)
    ids = [f"t{n}" for n in range(1, count + 1)]
    for task_id in ids:
        shutil.copy(source, examples / f"{task_id}.json")
    (root / "index.json").write_text(json.dumps({"notepad": ids}))
    (root / "script.json").write_text(json.dumps({"*": NOTEPAD_SOLUTION}))
    return ["--bench=waa", "--waa-examples", str(root / "examples"), "--waa-index", str(root / "index.json"),
            "--bench-agent", "scripted", "--bench-agent-script", str(root / "script.json")]


@contextlib.contextmanager
def serve_folder(folder: Path, *, keep_alive: bool = False) -> Iterator[str]:
    """A real HTTP server on loopback serving ``folder`` (gold files, downloads); yields its URL.
    ``keep_alive``: HTTP/1.1, one connection for many requests (the stdlib's default is HTTP/1.0)."""
    import http.server
    import threading

    from pytest_agentbench.sockets import HTTPServer

    class Quiet(http.server.SimpleHTTPRequestHandler):
        protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, directory=str(folder), **kw)

        def log_message(self, *a: Any) -> None:
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


_PNGS: dict[tuple[int, int], bytes] = {}


def solid_png(width: int, height: int) -> bytes:
    """A one-colour PNG screenshot of ``width`` x ``height`` (kept: the model-agent tests send many)."""
    if (width, height) not in _PNGS:
        import io

        from PIL import Image

        out = io.BytesIO()
        Image.new("RGB", (width, height), "#336699").save(out, format="PNG")
        _PNGS[(width, height)] = out.getvalue()
    return _PNGS[(width, height)]
