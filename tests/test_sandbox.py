"""The sandbox (``infra/sandbox.py``) and the ``sandbox`` fixture: the isolation is real.

With bubblewrap a command cannot write outside the sandbox, cannot see the host's other folders,
cannot reach a loopback server the test started, and is killed (its whole process tree) at its
timeout. Without it, the fallback is a plain folder with a warning given once per session. The
bubblewrap tests skip where bwrap is unusable, except under CI, which installs it (and where they
fail instead).
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
from pathlib import Path

import pytest
from conftest import browser_unavailable

from pytest_agentbench.infra.sandbox import (
    HOME,
    Isolation,
    RunResult,
    Sandbox,
    SandboxError,
    choose_isolation,
    probe_bwrap,
)

NONE = Isolation("none")


@pytest.fixture(scope="module")
def bwrap() -> Isolation:
    path, reason = probe_bwrap()
    if path is None:
        browser_unavailable(f"isolation tests need a working bubblewrap: {reason}")
    return Isolation("bwrap", path)


@pytest.fixture
def isolated(bwrap: Isolation, tmp_path: Path):
    with Sandbox(tmp_path / "box", bwrap) as box:
        yield box


@pytest.fixture
def plain(tmp_path: Path):
    with Sandbox(tmp_path / "plain", NONE) as box:  # a folder of its own: an isolated box's is a mount
        yield box


@pytest.fixture
def loopback_server():
    """A TCP server listening on a free loopback port; yields (socket, port). Nothing accepts: a
    connection that reaches it waits in the backlog, where the test can see it."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    try:
        yield server, server.getsockname()[1]
    finally:
        server.close()


CONNECT = ("import socket, sys\n"
           "try:\n"
           "    socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=3).close()\n"
           "    print('connected')\n"
           "except OSError as exc:\n"
           "    print('refused:', exc)\n")


def _reached(server: socket.socket) -> bool:
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


# -- isolation with bubblewrap ------------------------------------------------------------------------
def test_only_the_sandbox_is_writable(isolated: Sandbox, tmp_path: Path):
    outside = tmp_path / "outside.txt"  # a real, writable host folder: the sandbox must not reach it
    script = (f"echo in > {HOME}/inside.txt; echo tmp > /tmp/t.txt; "
              f"echo out > {outside} 2>/dev/null && echo WROTE-OUTSIDE; "
              "echo x > /usr/x 2>/dev/null && echo WROTE-USR; echo x > /etc/x 2>/dev/null && echo WROTE-ETC; "
              f"ls {tmp_path} >/dev/null 2>&1 && echo SEES-HOST-TMP; ls /root >/dev/null 2>&1 && echo SEES-ROOT; "
              "cat inside.txt")
    done = isolated.run(["sh", "-c", script], timeout=30)
    assert done.ok, done
    assert done.stdout.split() == ["in"]  # none of the WROTE-/SEES- lines; the working folder is home
    assert not outside.exists()
    assert (isolated.home / "inside.txt").read_text() == "in\n"
    assert (isolated.tmp / "t.txt").read_text() == "tmp\n"  # the sandbox's own /tmp, kept between commands
    assert isolated.run(["cat", "/tmp/t.txt"], timeout=30).stdout == "tmp\n"


def test_no_network_not_even_loopback(isolated: Sandbox, plain: Sandbox, loopback_server):
    server, port = loopback_server
    done = isolated.run(["python3", "-c", CONNECT, str(port)], timeout=30)
    assert done.ok, done
    assert done.stdout.startswith("refused:"), done.stdout
    assert not _reached(server)
    # the control: the same command without isolation reaches the server, so the test can see a leak
    leaked = plain.run(["python3", "-c", CONNECT, str(port)], timeout=30)  # a bare name: never rewritten
    assert leaked.stdout.strip() == "connected"
    assert _reached(server)


def _alive(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("mode", ["bwrap", "none"])
def test_timeout_kills_the_whole_process_tree(mode: str, request: pytest.FixtureRequest, tmp_path: Path):
    isolation = request.getfixturevalue("bwrap") if mode == "bwrap" else NONE
    marker = f"31.{os.getpid()}{len(mode)}"  # a sleep nobody else runs, to find it in /proc
    with Sandbox(tmp_path / "box", isolation) as box:
        # a shell that starts a child, which starts a grandchild: all must die at the timeout
        done = box.run(["sh", "-c", f"sh -c 'sleep {marker}' & sleep {marker}; echo late"], timeout=0.5)
    assert done.timed_out and done.returncode is None and not done.ok
    assert "late" not in done.stdout
    assert "timed out" in done.summary()
    assert _alive(f"sleep\x00{marker}") == []


def test_bwrap_mode_is_chosen_when_it_works(bwrap: Isolation):
    assert choose_isolation("auto") == bwrap
    assert choose_isolation("bwrap") == bwrap
    assert choose_isolation("none") == NONE


# -- the plain-folder fallback ------------------------------------------------------------------------
def test_fallback_maps_sandbox_paths_in_arguments_and_back(plain: Sandbox):
    plain.write(f"{HOME}/notes/a.txt", "hello\n")
    code = "import os, sys; print(open(sys.argv[1]).read().strip(), sys.argv[1], os.getcwd())"
    done = plain.run(["python3", "-c", code, f"{HOME}/notes/a.txt"], timeout=30)
    assert done.ok, done
    assert done.stdout.split() == ["hello", f"{HOME}/notes/a.txt", HOME]  # host paths mapped back


def test_fallback_localizes_scripts_that_name_the_sandbox_home(plain: Sandbox):
    """Without bwrap, a setup script's literal /home/user must land in the sandbox, not the host."""
    plain.write(f"{HOME}/setup.sh", f"mkdir -p {HOME}/made && echo ok > '{HOME}/made/it'\necho /home/username\n")
    plain.localize(f"{HOME}/setup.sh")
    done = plain.run(["sh", f"{HOME}/setup.sh"], timeout=30)
    assert done.ok, done
    assert (plain.home / "made" / "it").read_text() == "ok\n"
    assert done.stdout == "/home/username\n"  # only the path itself is rewritten


def test_bwrap_leaves_scripts_alone(isolated: Sandbox):
    isolated.write(f"{HOME}/setup.sh", f"echo ok > {HOME}/it\n")
    isolated.localize(f"{HOME}/setup.sh")
    assert (isolated.home / "setup.sh").read_text() == f"echo ok > {HOME}/it\n"
    assert isolated.run(["sh", f"{HOME}/setup.sh"], timeout=30).ok
    assert (isolated.home / "it").read_text() == "ok\n"


def test_paths_outside_the_sandbox_are_refused(plain: Sandbox):
    assert plain.path("/home/user/Documents/x.drawio") == plain.home / "Documents" / "x.drawio"
    assert plain.path("/tmp/create_env.py") == plain.tmp / "create_env.py"
    for bad in ("/etc/passwd", "relative.txt", "/home/user/../../etc/passwd", "/home/username/x"):
        with pytest.raises(ValueError, match="sandbox path"):
            plain.path(bad)


def test_closed_sandbox_is_deleted_and_refuses_commands(tmp_path: Path):
    box = Sandbox(tmp_path / "box", NONE)
    box.write(f"{HOME}/a", "x")
    box.close()
    box.close()  # twice is fine
    assert not (tmp_path / "box").exists()
    with pytest.raises(SandboxError, match="closed"):
        box.run(["true"], timeout=5)


def test_unknown_isolation_mode():
    with pytest.raises(SandboxError, match="auto, bwrap, none"):
        choose_isolation("docker")


def test_run_result_summary():
    assert RunResult(("x",), 2, "", "a\nboom\n").summary() == "exited 2: boom"
    assert RunResult(("x",), 0, "ok", "").ok


# -- the fixture --------------------------------------------------------------------------------------
FIXTURE_TESTS = '''
def test_first(agentbench_sandbox):
    agentbench_sandbox.write("/home/user/mine.txt", "first")
    done = agentbench_sandbox.run(["cat", "/home/user/mine.txt"], timeout=30)
    assert done.stdout == "first", done

def test_second_gets_a_fresh_folder(agentbench_sandbox):
    done = agentbench_sandbox.run(["ls", "-A", "/home/user"], timeout=30)
    assert done.ok and done.stdout == "", done

def test_third(agentbench_sandbox):
    assert agentbench_sandbox.run(["true"], timeout=30).ok
'''


def test_fixture_gives_each_test_a_fresh_isolated_folder(run, pytester: pytest.Pytester, bwrap: Isolation):
    pytester.makepyfile(test_box=FIXTURE_TESTS + '''
def test_is_isolated(agentbench_sandbox):
    assert agentbench_sandbox.isolated
''')
    result = run("-W", "error::pytest.PytestWarning")
    result.assert_outcomes(passed=4)


def test_fixture_falls_back_with_one_warning(run_sub, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    """No bwrap on PATH: three tests use the fixture, the run warns once and still passes."""
    bin_dir = pytester.path / "bin"
    bin_dir.mkdir()
    for name in ("sh", "cat", "ls", "true"):
        os.symlink(shutil.which(name), bin_dir / name)
    os.symlink(Path(sys.executable).resolve(), bin_dir / "python3")
    monkeypatch.setenv("PATH", str(bin_dir))
    pytester.makepyfile(test_box=FIXTURE_TESTS)
    result = run_sub("-rw")
    result.assert_outcomes(passed=3, warnings=1)
    warning = [line for line in result.outlines if "not isolated" in line]
    assert len(warning) == 1, result.outlines
    assert "bubblewrap (bwrap) is not installed" in warning[0]

    quiet = run_sub("--sandbox-isolation", "none")
    quiet.assert_outcomes(passed=3)
    required = run_sub("--sandbox-isolation", "bwrap")
    required.assert_outcomes(errors=3)
    assert "--sandbox-isolation bwrap: bubblewrap (bwrap) is not installed" in required.stdout.str()

    # a benchmark that needs sandboxes stops at the start instead (exit 4)
    data = Path(__file__).parent / "data" / "opencomputer"
    bench = run_sub("--bench=opencomputer", "--opencomputer-tasks", str(data / "tasks"), "--sandbox-isolation", "bwrap")
    assert bench.ret == pytest.ExitCode.USAGE_ERROR
    assert "--sandbox-isolation bwrap: bubblewrap (bwrap) is not installed" in bench.stderr.str()
    # listing the items runs nothing, so it tries no sandbox
    listed = run_sub("--bench=opencomputer", "--opencomputer-tasks", str(data / "tasks"),
                     "--sandbox-isolation", "bwrap", "--collect-only", "-q")
    assert listed.ret == pytest.ExitCode.OK, listed.outlines
    assert "3 tests collected" in listed.stdout.str()
