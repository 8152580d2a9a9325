"""Hostile sandboxes: what code inside a sandbox plants, and what an end state holds, cannot make
the pytest process write outside the sandbox's folder; the sandbox exposes only what checkers need
and bounds what a command may use.

Every escape probe works the same way: a host folder ``outside/`` with a canary file sits next to
the sandbox; code in the sandbox plants symlinks (pointing at the canary or at ``outside/``)
where the host will write next, statically or racing from a background process; after the host's
write the canary's content and mtime and ``outside/``'s listing must be unchanged. Needs a working
bubblewrap (skipped without it, failing under CI).
"""

from __future__ import annotations

import ast
import io
import json
import os
import subprocess
import sys
import tarfile
import textwrap
import time
from pathlib import Path

import pytest
from conftest import browser_unavailable

from pytest_agentbench.infra.sandbox import Isolation, Sandbox, probe_bwrap

VERIFIERS = Path(__file__).parent / "data" / "opencomputer" / "verifiers"
NOTES_VERIFIER = VERIFIERS / "notes" / "notes.py"
CANARY_TEXT = "canary: the host's own content\n"


@pytest.fixture(scope="module")
def bwrap() -> Isolation:
    path, reason = probe_bwrap()
    if path is None:
        browser_unavailable(f"escape tests need a working bubblewrap: {reason}")
    return Isolation("bwrap", path)


class Outside:
    """A host folder beside the sandbox, with a canary whose content and mtime must not change."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir()
        self.canary = folder / "canary.txt"
        self.canary.write_text(CANARY_TEXT)
        past = time.time() - 3600
        os.utime(self.canary, (past, past))
        self.stamp = self.canary.stat().st_mtime_ns
        os.chmod(folder, 0o777)  # so the sandbox's uid could write there if it ever saw it
        os.chmod(self.canary, 0o666)

    def assert_untouched(self) -> None:
        assert sorted(p.name for p in self.folder.iterdir()) == ["canary.txt"], "a file appeared outside"
        assert not self.canary.is_symlink()
        assert self.canary.read_text() == CANARY_TEXT, "the canary was overwritten"
        assert self.canary.stat().st_mtime_ns == self.stamp, "the canary was written"


@pytest.fixture
def outside(tmp_path: Path) -> Outside:
    return Outside(tmp_path / "outside")


@pytest.fixture
def box(bwrap: Isolation, tmp_path: Path):
    with Sandbox(tmp_path / "box", bwrap) as sandbox:
        yield sandbox


def plant(box: Sandbox, script: str) -> None:
    done = box.run(["sh", "-c", script], timeout=30)
    assert done.ok, done.stderr


def racer(box: Sandbox, script: str) -> None:
    """A background process in the sandbox that keeps re-planting (as a desktop app started with
    ``bash -l`` could, from a ~/.profile a setup script wrote)."""
    box.spawn(["sh", "-c", f"while :; do {script}; done"])
    time.sleep(0.3)


# -- writes through links planted by a command ----------------------------------------------------------
def test_placing_a_file_where_a_command_planted_a_symlink_replaces_the_link(box: Sandbox, outside: Outside,
                                                                          tmp_path: Path):
    source = tmp_path / "create_env.py"
    source.write_text("print('made')\n")
    plant(box, f"ln -s {outside.canary} /tmp/create_env.py")
    box.place(source, "/tmp/create_env.py")
    outside.assert_untouched()
    assert box.run(["cat", "/tmp/create_env.py"], timeout=30).stdout == "print('made')\n"


def test_placing_under_a_folder_a_command_made_a_symlink_writes_in_the_sandbox(box: Sandbox, outside: Outside,
                                                                             tmp_path: Path):
    source = tmp_path / "report.txt"
    source.write_text("chosen content\n")
    plant(box, f"ln -s {outside.folder} /home/user/Documents")
    box.place(source, "/home/user/Documents/report.txt")
    outside.assert_untouched()
    assert box.run(["cat", "/home/user/Documents/report.txt"], timeout=30).stdout == "chosen content\n"


def test_writing_through_a_planted_symlink_replaces_the_link(box: Sandbox, outside: Outside):
    plant(box, f"mkdir -p /home/user/a && ln -s {outside.canary} /home/user/a/b.txt")
    box.write("/home/user/a/b.txt", "mine\n")
    outside.assert_untouched()


# -- the verifier's copy ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("planted", ["ln -s {folder} /home/user/verifiers",
                                     "mkdir -p /home/user/verifiers && ln -s {canary} /home/user/verifiers/notes.py"])
def test_installing_the_verifier_never_follows_a_planted_link(box: Sandbox, outside: Outside, planted: str):
    from pytest_agentbench.benches.opencomputer.checks import install_verifier

    plant(box, planted.format(folder=outside.folder, canary=outside.canary))
    target = install_verifier(box, NOTES_VERIFIER, "notes")
    outside.assert_untouched()
    assert box.run(["cat", target], timeout=30).stdout == NOTES_VERIFIER.read_text()


def test_installing_the_verifier_while_a_sandboxed_process_keeps_swapping_in_links(box: Sandbox, outside: Outside):
    from pytest_agentbench.benches.opencomputer.checks import install_verifier

    racer(box, f"mkdir -p /home/user/verifiers 2>/dev/null; ln -sfn {outside.canary} /home/user/verifiers/notes.py "
               f"2>/dev/null; rm -rf /home/user/verifiers 2>/dev/null; ln -sfn {outside.folder} /home/user/verifiers "
               "2>/dev/null; rm -f /home/user/verifiers 2>/dev/null")
    for _ in range(300):
        try:
            install_verifier(box, NOTES_VERIFIER, "notes")
        except OSError:
            pass  # the race may make one copy fail; what matters is where it wrote
    outside.assert_untouched()


# -- end states ------------------------------------------------------------------------------------------------
def _overlay(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "end"
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    folder.mkdir(exist_ok=True)
    return folder


@pytest.mark.parametrize("planted", ["mkdir -p /home/user/notes && ln -s {canary} /home/user/notes/todo.txt",
                                     "ln -s {folder} /home/user/notes"])
def test_an_overlay_over_planted_links_writes_in_the_sandbox(box: Sandbox, outside: Outside, tmp_path: Path,
                                                             planted: str):
    from pytest_agentbench.benches.opencomputer.environment import lay_end_state

    plant(box, planted.format(folder=outside.folder, canary=outside.canary))
    lay_end_state(box, _overlay(tmp_path, {"notes/todo.txt": "agent's text\n", "notes/canary.txt": "x\n"}))
    outside.assert_untouched()
    assert box.run(["cat", "/home/user/notes/todo.txt"], timeout=30).stdout == "agent's text\n"


def test_an_overlay_while_a_sandboxed_process_keeps_swapping_folders_for_links(box: Sandbox, outside: Outside,
                                                                             tmp_path: Path):
    from pytest_agentbench.benches.opencomputer.environment import (
        EndStateError,
        lay_end_state,
    )

    files = {f"d{i}/canary.txt": "chosen\n" for i in range(20)}
    files.update({f"d{i}/sub/new{i}.txt": "chosen\n" for i in range(20)})
    end = _overlay(tmp_path, files)
    swap = "; ".join(f"rm -rf /home/user/d{i} 2>/dev/null; ln -sfn {outside.folder} /home/user/d{i} 2>/dev/null"
                     for i in range(20))
    racer(box, swap)
    for _ in range(30):
        try:
            lay_end_state(box, end)
        except (OSError, EndStateError):
            pass
    outside.assert_untouched()


def test_an_end_state_with_links_to_host_paths_copies_them_as_links_and_deletes_nothing_through_them(
        box: Sandbox, outside: Outside, tmp_path: Path):
    from pytest_agentbench.benches.opencomputer.environment import lay_end_state

    end = _overlay(tmp_path, {".deleted": "escape/canary.txt\nfile-link\n"})
    (end / "escape").symlink_to(outside.folder)
    (end / "file-link").symlink_to(outside.canary)
    (end / "read-link").symlink_to(outside.canary)
    removed = lay_end_state(box, end)
    outside.assert_untouched()
    assert removed == ["file-link"]  # the link itself, inside the sandbox
    assert os.readlink(box.home / "read-link") == str(outside.canary)  # a link, not the host file's bytes


def test_an_end_state_given_as_a_symlink_is_read_from_its_target(box: Sandbox, outside: Outside, tmp_path: Path):
    from pytest_agentbench.benches.opencomputer.environment import lay_end_state

    real = _overlay(tmp_path, {"notes/todo.txt": "done\n"})
    link = tmp_path / "end-link"
    link.symlink_to(real)
    lay_end_state(box, link)
    outside.assert_untouched()
    assert (box.home / "notes" / "todo.txt").read_text() == "done\n"


def test_a_tar_snapshot_cannot_extract_through_a_link_it_or_the_sandbox_holds(box: Sandbox, outside: Outside,
                                                                            tmp_path: Path):
    from pytest_agentbench.benches.opencomputer.environment import (
        EndStateError,
        lay_end_state,
    )

    tar_path = tmp_path / "snap.tar"
    with tarfile.open(tar_path, "w") as tar:
        link = tarfile.TarInfo("escape")
        link.type, link.linkname = tarfile.SYMTYPE, str(outside.folder)
        tar.addfile(link)
        data = b"chosen\n"
        member = tarfile.TarInfo("escape/new.txt")
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
    with pytest.raises(EndStateError):
        lay_end_state(box, tar_path)
    outside.assert_untouched()


def test_the_screenshot_path_is_removed_and_read_without_following_a_planted_link(box: Sandbox, outside: Outside):
    from pytest_agentbench.benches.opencomputer.desktop import SCREENSHOT

    plant(box, f"ln -s {outside.canary} {SCREENSHOT}")
    assert box.remove(SCREENSHOT)
    plant(box, f"ln -s {outside.canary} {SCREENSHOT}")
    with pytest.raises(OSError):
        box.read(SCREENSHOT, 1 << 20)  # a symlink: refused, not the canary's bytes
    outside.assert_untouched()


def test_a_setup_script_planting_links_everywhere_the_harness_writes_next(run, pytester: pytest.Pytester):
    """End to end, the built-in checker: setup plants links at the verifier folder and at the
    file the end state overlays; the item grades in the sandbox and nothing outside changes."""
    canary = Outside(pytester.path / "outside")
    folder = pytester.path / "tasks" / "notes_hostile"
    (folder / "env").mkdir(parents=True)
    (folder / "env" / "todo.txt").write_text("buy milk\n")
    (folder / "env" / "setup_plant.sh").write_text(textwrap.dedent(f"""\
        rm -rf /home/user/verifiers; ln -s {canary.folder} /home/user/verifiers
        rm -f /home/user/notes/todo.txt; ln -s {canary.canary} /home/user/notes/todo.txt
        ln -s {canary.canary} /tmp/agentbench-screen.png
        """))
    checks = [{"command": "check-line /home/user/notes/todo.txt 1 'buy oat milk'", "key": "match", "expected": True}]
    task = {"id": "notes_hostile", "app": "notes", "task": "Edit.", "verification": checks,
            "env": {"files": [{"filename": "todo.txt", "sandbox_path": "/home/user/notes/todo.txt"},
                              {"filename": "setup_plant.sh", "sandbox_path": "/home/user/setup_plant.sh"}]}}
    (folder / "task.json").write_text(json.dumps(task))
    (pytester.path / "end" / "notes_hostile" / "notes").mkdir(parents=True)
    (pytester.path / "end" / "notes_hostile" / "notes" / "todo.txt").write_text("buy oat milk\n")
    result = run("--bench=opencomputer", "--opencomputer-tasks", str(pytester.path / "tasks"),
                 "--opencomputer-verifiers", str(VERIFIERS), "--opencomputer-end-state", str(pytester.path / "end"),
                 "--sandbox-isolation", "bwrap")
    result.assert_outcomes(passed=1)
    canary.assert_untouched()


# -- what the sandbox exposes --------------------------------------------------------------------------------
def test_commands_run_as_uid_1000_with_no_root_secrets_in_sight(box: Sandbox):
    script = ("id -u; id -g; cat /etc/shadow; cat /etc/gshadow; cat /etc/ssh/ssh_host_*_key; "
              "ls /etc/ssh; grep -c . /etc/passwd; getent passwd user")
    done = box.run(["sh", "-c", script], timeout=30)
    lines = done.stdout.splitlines()
    assert lines[:2] == ["1000", "1000"]
    assert "PRIVATE KEY" not in done.stdout and "root:" not in done.stdout.split("\n", 2)[2].split("user:x")[0]
    assert "No such file or directory" in done.stderr  # /etc/shadow and /etc/ssh are not there at all
    assert lines[-2:] == ["3", "user:x:1000:1000:user:/home/user:/bin/bash"]


def test_a_root_owned_file_bound_in_stays_unreadable(bwrap: Isolation, tmp_path: Path):
    """Even a secret bound in by mistake: the uid is dropped on the host too, not only renamed."""
    secret = tmp_path / "secret"
    secret.write_text("s3cret")
    os.chmod(secret, 0o600)
    with Sandbox(tmp_path / "box", bwrap, ro_binds=[(str(secret), "/opt/secret")]) as box:
        done = box.run(["sh", "-c", "cat /opt/secret; echo status=$?"], timeout=30)
    assert "s3cret" not in done.stdout
    if os.geteuid() == 0:
        assert "Permission denied" in done.stderr


def test_the_systems_libraries_certificates_and_python_still_work(box: Sandbox):
    code = ("import ssl, json, sqlite3, locale, time; ssl.create_default_context(); "
            "print(time.tzname[0] != '', bool(ssl.get_default_verify_paths().cafile "
            "or ssl.get_default_verify_paths().capath))")
    done = box.run(["python3", "-c", code], timeout=60)
    assert done.ok, done.stderr
    login = box.run(["bash", "-lc", "echo $HOME $(whoami)"], timeout=30)
    assert login.stdout.strip() == "/home/user user", login.stderr


# -- limits ------------------------------------------------------------------------------------------------------
#: The uid the fork bombs see. When pytest is root every sandbox runs as a host uid of its own (so
#: its process limit is its own); when it is not, all sandboxes share pytest's uid.
BOMB_UID = 1999


@pytest.fixture
def bomb_box(bwrap: Isolation, tmp_path: Path):
    with Sandbox(tmp_path / "box", bwrap, uid=BOMB_UID) as sandbox:
        yield sandbox


def test_a_3_gb_allocation_fails(box: Sandbox):
    done = box.run(["python3", "-c", "a = bytearray(3 << 30); print('allocated')"], timeout=60)
    assert "allocated" not in done.stdout
    assert "MemoryError" in done.stderr


def test_a_fork_bomb_hits_the_process_limit(bomb_box: Sandbox):
    box = bomb_box
    done = box.run(["bash", "-c", "for i in $(seq 1000); do sleep 5 & done; echo all-started"], timeout=60)
    assert "all-started" not in done.stdout
    assert "fork: retry: Resource temporarily unavailable" in done.stderr
    assert "the sandbox's process limit, 256 processes and threads, was reached" in done.summary()
    counted = box.run(["python3", "-c", FORKS], timeout=60)
    assert counted.ok, counted.stderr
    forked = int(counted.stdout.split()[1])
    # At most the limit: the kernel counts the uid's processes at fork time, so whether the forking
    # process itself and its dying predecessors still count makes the exact figure vary by one.
    assert 100 < forked <= 256, counted.stdout


FORKS = """
import os, time
n = 0
try:
    while n < 1000:
        if os.fork() == 0:
            time.sleep(3)
            os._exit(0)
        n += 1
except OSError as exc:
    print("forked", n, exc.errno)
else:
    print("forked", n)
"""


def test_a_command_printing_300_mb_is_killed_and_pytest_stays_small(bwrap: Isolation, tmp_path: Path):
    code = textwrap.dedent(f"""\
        import json
        from pytest_agentbench.infra.sandbox import Isolation, Sandbox

        def hwm():
            for line in open("/proc/self/status"):
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])

        before = hwm()
        with Sandbox({str(tmp_path / "box")!r}, Isolation("bwrap", {bwrap.bwrap!r})) as box:
            done = box.run(["sh", "-c", "head -c 300000000 /dev/zero | tr '\\\\0' x"], timeout=120)
        print(json.dumps({{"before": before, "after": hwm(), "out": len(done.stdout), "over": done.output_over,
                          "summary": done.summary(), "ok": done.ok}}))
        """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # this run's package
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, env=env,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    facts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert facts["over"] == 16 and not facts["ok"] and facts["out"] <= 16 << 20
    assert facts["summary"] == "printed output over 16 MB and was killed"
    assert facts["after"] - facts["before"] < 120 * 1024, facts  # KiB: well under the 300 MB printed


def test_a_verifier_printing_without_end_gets_a_clear_error_reply(box: Sandbox):
    from pytest_agentbench.benches.opencomputer.checks import run_verifier

    box.write("/home/user/verifiers/loud.py", "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n")
    reply = run_verifier(box, "/home/user/verifiers/loud.py", "check", timeout=60)
    assert reply.data == {"error": "output over 16 MB"}
    assert reply.error == "output over 16 MB (killed)"


def test_limits_are_options_with_ini_keys_and_bad_values_are_usage_errors(run, pytester: pytest.Pytester):
    pytester.makepyfile(test_limits="""
        def test_limits(agentbench_sandbox):
            done = agentbench_sandbox.run(["bash", "-c", "ulimit -v; ulimit -u"], timeout=30)
            print("LIMITS", done.stdout.split())
    """)
    pytester.makeini("[pytest]\nagentbench_sandbox_max_procs = 300\n")
    result = run("-s", "--sandbox-isolation", "bwrap", "--sandbox-memory-mb", "1024")
    result.assert_outcomes(passed=1)
    line = next(text for text in result.outlines if "LIMITS" in text)
    memory, procs = ast.literal_eval(line.split("LIMITS", 1)[1].strip())
    assert int(memory) == 1024 * 1024  # KiB
    assert int(procs) >= 300
    for args, message in ((("--sandbox-memory-mb", "lots"), "--sandbox-memory-mb must be a whole number of MB"),
                          (("--sandbox-output-mb", "-3"), "--sandbox-output-mb must be 0 (no limit) or 1 to"),
                          (("--sandbox-max-procs", "2"), "--sandbox-max-procs must be 0 (no limit) or 8 to"),
                          (("--sandbox-disk-mb", "8"), "--sandbox-disk-mb must be 0 (no limit) or 16 to")):
        bad = run(*args)
        assert bad.ret == pytest.ExitCode.USAGE_ERROR
        assert message in bad.stderr.str()
    pytester.makeini("[pytest]\nagentbench_sandbox_output_mb = big\n")
    bad = run()
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "--sandbox-output-mb must be a whole number of MB" in bad.stderr.str()


def test_the_sandbox_fixture_runs_as_uid_1000(run, pytester: pytest.Pytester):
    pytester.makepyfile(test_uid="""
        def test_uid(agentbench_sandbox):
            assert agentbench_sandbox.run(["id", "-u"], timeout=30).stdout.strip() == "1000"
    """)
    run("--sandbox-isolation", "bwrap").assert_outcomes(passed=1)


def test_checks_reading_host_secrets_put_none_of_them_in_results_jsonl(run, pytester: pytest.Pytester):
    """A check's reply (``result``, ``actual``) is recorded; one that reads ``/etc/shadow`` or an
    SSH host key must find nothing to record."""
    secrets = [Path("/etc/shadow"), *sorted(Path("/etc/ssh").glob("ssh_host_*_key"))]
    firsts = []
    for path in secrets:
        try:
            firsts.append(path.read_text().splitlines()[0])
        except (OSError, IndexError):
            continue
    if not firsts:
        pytest.skip("this host has no readable /etc/shadow or SSH host key to compare against")
    checks = [{"command": f"check-line {path} 1 x", "key": "match", "expected": True} for path in secrets]
    checks.append({"command": "check-line /etc/shadow 1 x", "eval": "'root:' in str(result.get('actual'))"})
    folder = pytester.path / "tasks" / "notes_secrets"
    folder.mkdir(parents=True)
    (folder / "task.json").write_text(json.dumps({"id": "notes_secrets", "app": "notes", "task": "Read.",
                                                   "env": {"files": []}, "verification": checks}))
    (pytester.path / "end" / "notes_secrets").mkdir(parents=True)
    run("--bench=opencomputer", "--opencomputer-tasks", str(pytester.path / "tasks"),
        "--opencomputer-verifiers", str(VERIFIERS), "--opencomputer-end-state", str(pytester.path / "end"),
        "--sandbox-isolation", "bwrap").assert_outcomes(failed=1)
    [results_file] = (pytester.path / "benchmark_results").glob("*/results.jsonl")
    text = results_file.read_text()
    assert "notes_secrets" in text
    for first in firsts:
        assert first not in text and json.dumps(first)[1:-1] not in text
    assert "PRIVATE KEY" not in text


# -- tar snapshots extracted member by member -------------------------------------------------------------
def _path_max_chain_tar(tar_path: Path, outside: Outside, victim: Path) -> None:
    """A tar built like CPython's regression tests for CVE-2025-4517/-4330: a chain of symlinks
    through names long enough that resolving it passes PATH_MAX (where ``os.path.realpath``, and
    with it ``tarfile``'s ``data`` filter before 3.11.13/3.12.11/3.13.4, stops checking), a link
    out of the chain to the host folder, a file written through it, a hard link to a host file that
    is then written (overwriting the host file) and a mode change through it."""
    long_dir = "d" * 247
    steps = "abcdefghijklmnop"
    with tarfile.open(tar_path, "w") as tar:
        def add(name: str, kind: bytes, linkname: str = "", data: bytes | None = None, mode: int = 0o644) -> None:
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mode = kind, linkname, mode
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)

        path = ""
        for step in steps:
            add(os.path.join(path, long_dir), tarfile.DIRTYPE, mode=0o755)
            add(os.path.join(path, step), tarfile.SYMTYPE, long_dir)
            path = os.path.join(path, long_dir)
        chain = os.path.join(*steps, "l" * 254)
        add(chain, tarfile.SYMTYPE, "../" * len(steps))
        up = "../" * (len(outside.folder.parts) + 2)
        add("escape", tarfile.SYMTYPE, os.path.join(chain, up.rstrip("/") + str(outside.folder)))
        add("escape/created.txt", tarfile.REGTYPE, data=b"written through the chain\n")
        add("victim_link", tarfile.LNKTYPE, os.path.join("escape", "..", up.rstrip("/") + str(victim)))
        add("victim_link", tarfile.REGTYPE, data=b"overwritten through a hard link\n", mode=0o644)


def test_a_tar_built_like_the_path_max_cve_writes_nothing_outside(box: Sandbox, outside: Outside, tmp_path: Path):
    from pytest_agentbench.benches.opencomputer.environment import EndStateError, lay_end_state

    victim = tmp_path / "root-only.txt"
    victim.write_text("root only\n")
    os.chmod(victim, 0o600)
    before = victim.stat()
    tar_path = tmp_path / "cve.tar"
    _path_max_chain_tar(tar_path, outside, victim)
    with pytest.raises(EndStateError) as excinfo:
        lay_end_state(box, tar_path)
    assert "escape" in str(excinfo.value) or "victim_link" in str(excinfo.value)
    outside.assert_untouched()
    after = victim.stat()
    assert victim.read_text() == "root only\n"
    assert (after.st_mode, after.st_uid, after.st_gid, after.st_nlink) == (
        before.st_mode, before.st_uid, before.st_gid, before.st_nlink)


def _tar(tar_path: Path, members: list[tuple[str, bytes, str, bytes | None, int]]) -> Path:
    with tarfile.open(tar_path, "w") as tar:
        for name, kind, linkname, data, mode in members:
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mode = kind, linkname, mode
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return tar_path


@pytest.mark.parametrize(("members", "says"), [
    ([("h", tarfile.LNKTYPE, "/etc/passwd", None, 0o644)], "a hard link to '/etc/passwd'"),
    ([("up", tarfile.SYMTYPE, "../../etc", None, 0o777)], "a symlink to '../../etc', which leaves /home/user"),
    ([("abs", tarfile.SYMTYPE, "/etc/shadow", None, 0o777)], "which leaves /home/user"),
    ([("../evil", tarfile.REGTYPE, "", b"x", 0o644)], "is not a path inside /home/user"),
    ([("dev", tarfile.CHRTYPE, "", None, 0o666)], "a device node"),
])
def test_a_tar_member_that_would_reach_the_host_is_refused_by_name(box: Sandbox, tmp_path: Path, members, says):
    from pytest_agentbench.benches.opencomputer.environment import EndStateError, lay_end_state

    with pytest.raises(EndStateError) as excinfo:
        lay_end_state(box, _tar(tmp_path / "bad.tar", members))
    assert says in str(excinfo.value)


def test_a_tar_keeps_modes_links_inside_the_home_hard_links_as_copies_and_fifos(box: Sandbox, tmp_path: Path):
    from pytest_agentbench.benches.opencomputer.environment import lay_end_state

    tar_path = _tar(tmp_path / "snap.tar", [
        ("home/user/Documents", tarfile.DIRTYPE, "", None, 0o600),
        ("home/user/Documents/secret.txt", tarfile.REGTYPE, "", b"s\n", 0o400),
        ("home/user/locked.txt", tarfile.REGTYPE, "", b"l\n", 0o000),
        ("home/user/wo.txt", tarfile.REGTYPE, "", b"w\n", 0o200),
        ("home/user/copy.txt", tarfile.LNKTYPE, "home/user/wo.txt", None, 0o200),
        ("home/user/docs", tarfile.SYMTYPE, "Documents", None, 0o777),
        ("home/user/abs", tarfile.SYMTYPE, "/home/user/Documents", None, 0o777),
        ("home/user/pipe", tarfile.FIFOTYPE, "", None, 0o640),
    ])
    lay_end_state(box, tar_path)
    done = box.run(["sh", "-c", ("stat -c '%a %F %u %n' Documents locked.txt wo.txt copy.txt pipe; readlink docs abs; "
                    "cat Documents/secret.txt")], timeout=30)
    assert done.stdout.splitlines()[:7] == [
        "600 directory 1000 Documents", "0 regular file 1000 locked.txt", "200 regular file 1000 wo.txt",
        "200 regular file 1000 copy.txt", "640 fifo 1000 pipe", "Documents", "/home/user/Documents"]
    assert "Permission denied" in done.stderr  # Documents is 600: not searchable, as in OpenComputer's image
    assert os.stat(box.home / "copy.txt").st_nlink == 1


# -- binds a running sandboxed process races ----------------------------------------------------------------
def test_a_bind_target_swapped_for_a_link_by_a_running_process_creates_nothing_outside(box: Sandbox,
                                                                                      outside: Outside,
                                                                                      tmp_path: Path):
    """A process still running in the sandbox keeps turning the X socket's folder (and a bind
    target's folder under the home) into links out of the sandbox while commands with those binds
    start: bubblewrap, which makes missing bind targets itself, creates nothing through them."""
    socket_like = tmp_path / "X0"
    socket_like.write_text("")
    data = tmp_path / "data"
    data.mkdir()
    (data / "f.txt").write_text("bound\n")
    folder = outside.folder
    racer(box, f"rm -rf /tmp/.X11-unix /home/user/cfg; ln -sfn {folder} /tmp/.X11-unix; "
               f"ln -sfn {folder} /home/user/cfg; ln -sfn ../../..{folder} /tmp/rel 2>/dev/null")
    binds = [(str(socket_like), "/tmp/.X11-unix/X0"), (str(data), "/home/user/cfg/data")]
    probe = ["sh", "-c", "cat /home/user/cfg/data/f.txt; test -e /tmp/.X11-unix/X0 && echo socket"]
    for _ in range(30):  # a command may fail while the racer holds a link there; none may write outside
        box.run(probe, timeout=30, ro_binds=binds)
    outside.assert_untouched()
    with Sandbox(tmp_path / "calm", box.isolation) as calm:  # the binds themselves work
        assert calm.run(probe, timeout=30, ro_binds=binds).stdout == "bound\nsocket\n"


def test_a_file_bound_directly_into_the_home_is_refused(box: Sandbox, tmp_path: Path):
    from pytest_agentbench.infra.sandbox import SandboxError

    source = tmp_path / "f"
    source.write_text("x")
    with pytest.raises(SandboxError, match="must lie in a folder of its own"):
        box.run(["true"], timeout=30, ro_binds=[(str(source), "/home/user/f")])


# -- the sandbox's user is nobody's account -----------------------------------------------------------------
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="sandboxes run as a host uid of their own only under root")


@needs_root
def test_each_sandbox_runs_as_a_host_uid_of_its_own_that_no_account_holds(bwrap: Isolation, tmp_path: Path):
    import pwd

    with Sandbox(tmp_path / "a", bwrap) as a, Sandbox(tmp_path / "b", bwrap) as b:
        assert a.host_uid != b.host_uid and min(a.host_uid, b.host_uid) >= 1 << 30
        for box in (a, b):
            with pytest.raises(KeyError):
                pwd.getpwuid(box.host_uid)
            assert os.stat(box.home).st_uid == box.host_uid
            assert box.run(["id", "-u"], timeout=30).stdout.strip() == "1000"  # the image's user, inside


@needs_root
def test_a_host_account_with_the_sandboxs_inside_uid_cannot_reach_into_a_running_sandbox(box: Sandbox):
    box.write("/home/user/notes.txt", "the agent's work\n")
    box.spawn(["sleep", "60"])
    time.sleep(0.5)
    pids = [p for p in os.listdir("/proc") if p.isdigit() and _uid_of(p) == box.host_uid]
    assert pids, "the sandboxed process runs as the sandbox's host uid"
    attack = f"echo rewritten > /proc/{pids[0]}/root/home/user/notes.txt; cat /proc/{pids[0]}/root/home/user/notes.txt"
    done = subprocess.run(["setpriv", "--reuid", "1000", "--regid", "1000", "--clear-groups", "sh", "-c", attack],
                          capture_output=True, text=True, timeout=30, check=False)
    assert "Permission denied" in done.stderr
    assert box.read("/home/user/notes.txt", 100) == b"the agent's work\n"


def _uid_of(pid: str) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


@needs_root
def test_one_sandboxs_processes_do_not_count_against_anothers_limit(bwrap: Isolation, tmp_path: Path):
    from pytest_agentbench.infra.sandbox import Limits

    limits = Limits(max_procs=64)
    with Sandbox(tmp_path / "a", bwrap, limits=limits) as a, Sandbox(tmp_path / "b", bwrap, limits=limits) as b:
        a.spawn(["sh", "-c", "for i in $(seq 50); do sleep 30 & done; wait"])
        time.sleep(1.0)
        done = b.run(["sh", "-c", "for i in $(seq 40); do sleep 1 & done; wait; echo all-forked"], timeout=60)
        assert "all-forked" in done.stdout, done.stderr


CAP_REACHED = ("the sandbox's disk cap, 16 MB for /home/user and /tmp together, was reached; raise it with "
               "--sandbox-disk-mb")
FILL = """
import sys
total = 0
try:
    with open(sys.argv[1], "wb") as handle:
        while total < (64 << 20):
            total += handle.write(bytes(1 << 20))
            handle.flush()
except OSError as exc:
    print("stopped", total >> 20, exc.errno)
else:
    print("wrote", total >> 20)
"""


@needs_root
def test_writing_past_the_disk_cap_fails_with_enospc_inside_and_never_reaches_the_host_disk(bwrap: Isolation,
                                                                                          tmp_path: Path):
    from pytest_agentbench.infra.sandbox import Limits

    box = Sandbox(tmp_path / "box", bwrap, limits=Limits(disk_mb=16))
    try:
        home = box.run(["python3", "-c", FILL, "/home/user/big"], timeout=60)
        assert home.stdout.split()[0] == "stopped" and home.stdout.split()[2] == "28", home.stdout + home.stderr
        assert int(home.stdout.split()[1]) <= 16
        assert os.stat(box.home / "big").st_dev != os.stat(tmp_path).st_dev, "the file lies on the host's disk"
        tmp = box.run(["sh", "-c", "head -c 1048576 /dev/zero > /tmp/more"], timeout=30)  # the cap is shared
        assert "No space left on device" in tmp.stderr
        assert CAP_REACHED in tmp.summary()
        assert box.disk_note() is not None
        box.remove("/home/user/big")
        assert box.run(["sh", "-c", "head -c 1048576 /dev/zero > /tmp/more"], timeout=30).ok  # room again
    finally:
        box.close()
    assert not (tmp_path / "box").exists()
    assert str(tmp_path) not in Path("/proc/self/mountinfo").read_text(), "the sandbox's tmpfs is still mounted"


@needs_root
def test_an_item_whose_verifier_or_end_state_fills_the_disk_names_the_cap(run, pytester: pytest.Pytester):
    verifiers = pytester.path / "verifiers" / "filler"
    verifiers.mkdir(parents=True)
    (verifiers / "filler.py").write_text(
        "import json, sys\n"
        "with open('/home/user/junk', 'wb') as out:\n"
        "    for _ in range(64): out.write(bytes(1 << 20))\n"
        "print(json.dumps({'ok': True}))\n")
    checks = [{"command": "fill", "key": "ok", "expected": True}]
    for task_id in ("filler_verifier", "filler_end_state"):
        folder = pytester.path / "tasks" / task_id
        folder.mkdir(parents=True)
        (folder / "task.json").write_text(json.dumps({"id": task_id, "app": "filler", "task": "Fill.",
                                                      "env": {"files": []}, "verification": checks}))
    (pytester.path / "end" / "filler_verifier").mkdir(parents=True)
    (pytester.path / "end" / "filler_end_state").mkdir(parents=True)
    (pytester.path / "end" / "filler_end_state" / "huge.bin").write_bytes(bytes(20 << 20))
    result = run("--bench=opencomputer", "--opencomputer-tasks", str(pytester.path / "tasks"),
                 "--opencomputer-verifiers", str(pytester.path / "verifiers"), "--opencomputer-end-state",
                 str(pytester.path / "end"), "--opencomputer-harness", "builtin", "--sandbox-isolation", "bwrap",
                 "--sandbox-disk-mb", "16")
    result.assert_outcomes(failed=1, errors=1)
    [results_file] = (pytester.path / "benchmark_results").glob("*/results.jsonl")
    records = {r["task_id"]: r for r in map(json.loads, results_file.read_text().splitlines())}
    assert records["filler_verifier"]["reason"].endswith(f"failed: fill ({CAP_REACHED})")
    assert "No space left on device" in records["filler_end_state"]["error"]
    assert records["filler_end_state"]["error"].endswith(f"({CAP_REACHED})")


@needs_root
def test_without_root_only_the_home_and_tmp_are_writable(bwrap: Isolation, monkeypatch: pytest.MonkeyPatch):
    """As another user bubblewrap's own tmpfs folders (its root, ``/home``, ``/dev``, ``/dev/shm``,
    a bind's ``/tmp/.X11-unix``) belong to the command's user and are sized to half the RAM: they
    are remounted read-only, so the capped ``/home/user`` and ``/tmp`` stay the only writable places."""
    import tempfile

    from pytest_agentbench.infra import sandbox as sandbox_module

    monkeypatch.setattr(sandbox_module, "_privileged", lambda: False)
    nobody = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]
    with tempfile.TemporaryDirectory(prefix="agentbench-unprivileged-") as folder:  # not under root's 0700 folders
        os.chmod(folder, 0o755)
        home, tmp = Path(folder, "home"), Path(folder, "tmp")
        for part in (home, tmp):
            part.mkdir()
            os.chown(part, 65534, 65534)
        argv = sandbox_module.bwrap_argv(bwrap.bwrap or "bwrap", home, tmp, env={"PATH": sandbox_module.SANDBOX_PATH},
                                         ro_binds=[("/usr/share", "/tmp/.X11-unix/share")])
        script = ("echo started; for d in / /home /dev /dev/shm /etc /tmp/.X11-unix /tmp /home/user; do "
                  "touch $d/written 2>/dev/null && echo $d; done")
        done = subprocess.run([*nobody, *argv, "sh", "-c", script], capture_output=True, text=True, timeout=60,
                              check=False)
    if "started" not in done.stdout:
        pytest.skip(f"bubblewrap cannot run unprivileged here: {done.stderr.strip()[-200:]}")
    assert done.stdout.split() == ["started", "/tmp", "/home/user"], done.stdout


def test_a_tree_thousands_of_folders_deep_is_removed_with_its_sandbox(bwrap: Isolation, tmp_path: Path):
    box = Sandbox(tmp_path / "deep", bwrap)
    made = box.run(["python3", "-c", ("import os\nfor _ in range(1500): os.mkdir('d'); os.chdir('d')\n"
                    "open('f', 'w').write('x')\nos.chmod('.', 0)")], timeout=60)
    assert made.ok, made.stderr
    box.close()
    assert not (tmp_path / "deep").exists()


@pytest.mark.parametrize("form", ["overlay", "snapshot", "tar"])
def test_every_end_state_form_keeps_modes_and_lays_fifos_and_sockets(box: Sandbox, tmp_path: Path, form: str):
    """One rule for folders and tars: folder and file modes as the end state has them (a 600
    ``Documents`` is not searchable, as in OpenComputer's image), FIFOs and sockets made again."""
    import socket as socketlib

    from pytest_agentbench.benches.opencomputer.environment import lay_end_state

    state = tmp_path / "state"
    (state / "Documents").mkdir(parents=True)
    (state / "Documents" / "a.txt").write_text("a\n")
    (state / "ro.txt").write_text("r\n")
    os.chmod(state / "ro.txt", 0o400)
    os.mkfifo(state / "pipe", 0o640)
    with socketlib.socket(socketlib.AF_UNIX) as sock:
        sock.bind(str(state / "sock"))
    os.chmod(state / "Documents", 0o600)
    if form == "snapshot":
        (state / ".snapshot").write_text("")
    end_state: Path = state
    if form == "tar":
        end_state = tmp_path / "state.tar"
        with tarfile.open(end_state, "w") as tar:
            for child in sorted(state.iterdir()):
                if not child.name.startswith(".") and child.name != "sock":  # tar holds no sockets
                    tar.add(child, arcname=child.name)
    lay_end_state(box, end_state)
    done = box.run(["sh", "-c", "stat -c '%a %F %n' Documents ro.txt pipe sock 2>&1; cat Documents/a.txt"], timeout=30)
    lines = done.stdout.splitlines()
    assert lines[:3] == ["600 directory Documents", "400 regular file ro.txt", "640 fifo pipe"], done.stdout
    if form != "tar":
        assert lines[3].endswith("socket sock")
    assert "Permission denied" in done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
@pytest.mark.parametrize("form", ["overlay", "tar"])
def test_a_device_node_in_an_end_state_is_refused_in_every_form(box: Sandbox, tmp_path: Path, form: str):
    from pytest_agentbench.benches.opencomputer.environment import EndStateError, lay_end_state

    state = tmp_path / "state"
    state.mkdir()
    os.mknod(state / "mem", 0o666 | 0o020000, os.makedev(1, 1))
    end_state: Path = state
    if form == "tar":
        end_state = tmp_path / "state.tar"
        with tarfile.open(end_state, "w") as tar:
            tar.add(state / "mem", arcname="mem")
    with pytest.raises(EndStateError, match="a device node"):
        lay_end_state(box, end_state)
    assert not os.path.lexists(box.home / "mem")
