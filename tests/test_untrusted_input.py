"""Input someone else wrote: JSON nested thousands of levels deep, a FIFO or a device named as a
file, a full disk at session start, and results.jsonl fields of the wrong type. Each reader gives
its own one-line error naming the file, never RecursionError, a hang or an INTERNALERROR."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import only_run_folder

from pytest_agentbench import untrusted
from pytest_agentbench.agents.builtin import ScriptError, load_script
from pytest_agentbench.agents.replay import WorkflowError, load_workflow
from pytest_agentbench.benches.opencomputer.tasks import OpenComputerTaskError
from pytest_agentbench.benches.opencomputer.tasks import read_task as read_oc_task
from pytest_agentbench.benches.waa.tasks import WAATaskError, read_index
from pytest_agentbench.benches.waa.tasks import read_task_data as read_waa_task
from pytest_agentbench.manifest import Manifest
from pytest_agentbench.record.runfolder import read_results
from pytest_agentbench.trajectory.adapters import from_fixtura_trace, from_run_record
from pytest_agentbench.trajectory.cases import CaseSyntaxError, read_case_file
from pytest_agentbench.trajectory.model import TraceFormatError

DEEP = "[" * 100_000 + "]" * 100_000  # past the interpreter's recursion limit
MIDDLE = '{"a":' * 400 + "1" + "}" * 400  # parses, but too deep to walk safely afterwards

#: (name, file name, reader, the error it raises). Every reader of a file someone else wrote.
READERS: list[tuple[str, str, Callable[[Path], Any], type[Exception]]] = [
    ("results.jsonl", "results.jsonl", read_results, ValueError),
    ("manifest", "manifest.json", Manifest.read, ValueError),
    ("opencomputer task", "task.json", read_oc_task, OpenComputerTaskError),
    ("waa task", "task.json", lambda p: read_waa_task(p, "chrome", "t1"), WAATaskError),
    ("waa index", "test_all.json", read_index, WAATaskError),
    ("agent script", "script.json", load_script, ScriptError),
    ("replay workflow", "workflow.json", load_workflow, WorkflowError),
    ("case file", "x.case.json", read_case_file, CaseSyntaxError),
    ("fixtura trace", "x.trace", from_fixtura_trace, TraceFormatError),
    ("run record", "x.trajectory.json", from_run_record, TraceFormatError),
]
IDS = [r[0] for r in READERS]


def _finishes(call: Callable[[], Any], seconds: float = 20.0) -> Any:
    """``call()``'s exception (or value), failing the test when it does not return in time (a read
    of a FIFO that blocks forever)."""
    out: list[Any] = []

    def target() -> None:
        try:
            out.append(call())
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert out, f"still reading after {seconds} s"
    return out[0]


def test_loads_refuses_deep_json_as_bad_json_and_reads_the_rest():
    for text, column in ((DEEP, 201), (MIDDLE, 1001), (DEEP.encode(), 201)):
        with pytest.raises(json.JSONDecodeError, match=rf"nested more than 200 levels deep: line 1 column {column} "):
            untrusted.loads(text)
    assert untrusted.loads('["[[[[", {"a": [1]}]') == ["[[[[", {"a": [1]}]
    assert untrusted.depth('["]]]]", [[1]], "\\"[[["]') == 3
    ok = "[" * 200 + "]" * 200
    assert untrusted.loads(ok) is not None and untrusted.loads(ok.encode()) is not None


@pytest.mark.parametrize(("name", "filename", "reader", "error"), READERS, ids=IDS)
@pytest.mark.parametrize("text", [DEEP, MIDDLE], ids=["deep", "middle"])
def test_deep_json_is_each_readers_own_error(tmp_path: Path, name: str, filename: str,
                                             reader: Callable[[Path], Any], error: type[Exception], text: str):
    path = tmp_path / filename
    path.write_text(text + "\n")
    raised = _finishes(lambda: reader(path))
    assert isinstance(raised, error), raised
    assert "nested more than 200 levels deep" in str(raised) and str(path.name) in str(raised)
    assert "\n" not in str(raised)


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    yield path


def _device(path: Path) -> Path:
    """A character device node like /dev/zero at ``path`` (endless zeros)."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o644, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("making a device node needs root")
    return path


@pytest.mark.parametrize(("name", "filename", "reader", "error"), READERS, ids=IDS)
@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_fifo_or_dev_zero_as_an_input_is_refused_at_once(tmp_path: Path, name: str, filename: str,
                                                           reader: Callable[[Path], Any], error: type[Exception],
                                                           kind: str):
    path = tmp_path / filename
    if kind == "fifo":
        os.mkfifo(path)
    else:
        _device(path)
    raised = _finishes(lambda: reader(path))
    assert isinstance(raised, error), raised
    assert "not a regular file" in str(raised) and path.name in str(raised), raised


def test_read_bytes_bounds_a_file_and_names_what_it_is(tmp_path: Path, fifo: Path):
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    with pytest.raises(untrusted.InputTooBig, match="101 bytes, more than the 100 allowed"):
        untrusted.read_bytes(big, 100)
    assert untrusted.read_bytes(big, 101) == b"x" * 101
    with pytest.raises(untrusted.NotRegularFile, match="it is a FIFO, not a regular file"):
        untrusted.read_bytes(fifo)
    with pytest.raises(untrusted.NotRegularFile, match="it is a folder, not a regular file"):
        untrusted.read_bytes(tmp_path)
    assert untrusted.file_problem(fifo) == "is a FIFO, not a regular file"
    assert untrusted.file_problem(tmp_path / "none") == "does not exist"


def test_a_verifier_reply_nested_too_deep_fails_its_check_like_any_unreadable_reply(tmp_path: Path):
    from pytest_agentbench.benches.opencomputer.checks import run_checks
    from pytest_agentbench.benches.opencomputer.grading import verdict
    from pytest_agentbench.infra.sandbox import Isolation, Sandbox

    checks = [{"command": "deep", "key": "ok", "expected": True},
              {"command": "middle", "key": "ok", "expected": True},
              {"command": "flat", "key": "ok", "expected": True}]
    with Sandbox(tmp_path / "box", Isolation("none")) as box:
        box.write("/home/user/verifiers/v.py", "import sys\n"
                  f"print({{'deep': {DEEP!r}, 'middle': {MIDDLE!r}}}.get(sys.argv[1], '{{\"ok\": true}}'))\n")
        run = run_checks(box, "/home/user/verifiers/v.py", checks)
    assert [d["passed"] for d in run.details] == [False, False, True]
    assert len(run.errors) == 2 and all("not JSON" in e for e in run.errors)
    graded = verdict(checks, run.details, errors=run.errors)  # the default: an error reply fails its check
    assert graded.passed is False and graded.score == pytest.approx(1 / 3, abs=1e-4)
    assert "nested more than 200 levels deep" in (graded.criteria[0].detail or "")


def test_the_harness_worker_never_answers_deeper_than_the_host_reads():
    from pytest_agentbench.benches.opencomputer import harness_worker

    deep: Any = 1
    for _ in range(500):
        deep = {"a": deep}
    answer = {"details": [{"result": harness_worker._cut(deep)}, {"result": harness_worker._cut({"ok": [1]})}]}
    assert untrusted.loads(json.dumps(answer))["details"] == [
        {"result": {"agentbench_truncated": "nested more than 100 levels deep"}}, {"result": {"ok": [1]}}]


# -- run folders read back: compare, baseline, resume, the viewer --------------------------------


@pytest.fixture
def mock_run(pytester: pytest.Pytester, run) -> Path:
    result = run("--bench=mock", "--bench-limit", "3", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    return only_run_folder(pytester.path)


def _spoil(folder: Path, line: int, **fields: Any) -> None:
    path = folder / "results.jsonl"
    records = [json.loads(text) for text in path.read_text().splitlines()]
    records[line].update(fields)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.mark.parametrize("fields", [{"score": "x"}, {"num_steps": {}}, {"task_id": 5}, {"success": "yes"},
                                    {"criteria": "none"}, {"trial": "2"}], ids=lambda f: next(iter(f)))
def test_wrong_type_fields_are_one_line_naming_file_and_line(pytester: pytest.Pytester, run, mock_run: Path,
                                                             fields: dict[str, Any]):
    _spoil(mock_run, 1, **fields)
    key = next(iter(fields))
    shutil.copytree(mock_run, pytester.path / "again")
    for args in (("--bench-compare", str(mock_run)), ("--bench-baseline", str(mock_run)),
                 ("--bench-resume", str(pytester.path / "again"))):
        result = run("--bench=mock", "--bench-limit", "3", "-p", "no:cacheprovider", *args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, (args, result.stdout.str(), result.stderr.str())
        text = result.stderr.str()
        assert "INTERNALERROR" not in text and "Traceback" not in text, text
        assert f"results.jsonl line 2 is not a valid result record: '{key}'" in text, text
    viewer = subprocess.run(["python", "-m", "pytest_agentbench.record.viewer", str(mock_run)], capture_output=True,
                            text=True, timeout=120, check=False)
    assert viewer.returncode == 0, viewer.stderr
    page = (mock_run / "viewer.html").read_text()
    assert "skipped 1 malformed record(s) (record 2); record 2: " in page and repr(key) in page


def test_compare_and_resume_refuse_deep_or_unreadable_run_files_in_one_line(pytester: pytest.Pytester, run,
                                                                             mock_run: Path):
    again = pytester.path / "again"
    shutil.copytree(mock_run, again)
    (again / "run.json").write_text(DEEP)
    result = run("--bench=mock", "--bench-limit", "3", "--bench-resume", str(again))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "run.json: nested more than 200 levels deep" in result.stderr.str()
    (mock_run / "results.jsonl").write_text(json.dumps(json.loads(MIDDLE)) + "\n")
    result = run("--bench=mock", "--bench-limit", "3", "--bench-compare", str(mock_run))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "results.jsonl line 1 is not JSON: nested more than 200 levels deep" in result.stderr.str()
    (mock_run / "results.jsonl").unlink()
    os.mkfifo(mock_run / "results.jsonl")
    result = _finishes(lambda: run("--bench=mock", "--bench-limit", "3", "--bench-compare", str(mock_run)))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "results.jsonl is a FIFO, not a regular file; pass a run folder" in result.stderr.str()


# -- a full disk at session start ----------------------------------------------------------------


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Mount a tmpfs with the given options (needs root; skipped without)."""
    mounted: list[Path] = []

    def mount(options: str) -> Path:
        where = tmp_path / f"disk{len(mounted)}"
        where.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True,
                              text=True, check=False)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(where)
        return where

    yield mount
    for where in mounted:
        subprocess.run(["umount", str(where)], check=False)


def test_a_full_disk_at_session_start_is_one_usage_line(run, tiny_disk: Callable[[str], Path]):
    # no inode left: the run folder itself cannot be made
    inodes = tiny_disk("size=64k,nr_inodes=2")
    (inodes / "results").mkdir()
    result = run("--bench=mock", "--bench-limit", "2", "--bench-results-dir", str(inodes / "results"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stderr.str()
    assert "INTERNALERROR" not in text and "cannot create the run folder: [Errno 28] No space left on device" in text
    assert str(inodes / "results") in text
    # one page left: the manifest fits, run.json does not
    pages = tiny_disk("size=8k")
    (pages / "fill").write_bytes(b"\0" * 4096)
    result = run("--bench=mock", "--bench-limit", "2", "--bench-results-dir", str(pages / "results"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stderr.str()
    assert "INTERNALERROR" not in text, text
    assert "run.json: [Errno 28] No space left on device" in text and str(pages / "results") in text
