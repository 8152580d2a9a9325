"""``--bench=opencomputer`` held against OpenComputer's own code.

``AGENTBENCH_OPENCOMPUTER_UPSTREAM`` names an unmodified OpenComputer checkout (CI:
``../shared/interop/opencomputer/upstream``); beside it, ``run_reference_harness.py`` grades a task
with OpenComputer's own harness code (its upload, prepare hooks, setup scripts and ``verify_task``)
through bubblewrap. That is the oracle: for a spread of tasks and states, the per-check verdicts
and the reward of a plugin run equal the reference harness's on the same start and solved states.
Without the variable these tests skip with the reason; with ``AGENTBENCH_REQUIRE_INTEROP=1`` (CI)
they fail instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest
from interop import bench_records
from interop import unavailable as _unavailable

from pytest_agentbench.infra.sandbox import probe_bwrap

UPSTREAM_VAR = "AGENTBENCH_OPENCOMPUTER_UPSTREAM"
SOLVED_DRAWIO = Path(__file__).parent / "data" / "opencomputer" / "end_states" / "solved" / "drawio_aws_cloud_arch"


@pytest.fixture(scope="module")
def upstream() -> Path:
    value = os.environ.get(UPSTREAM_VAR)
    if not value:
        _unavailable(f"{UPSTREAM_VAR} is not set (the path of an OpenComputer checkout, with "
                     "run_reference_harness.py beside it)")
    path = Path(value)
    if not (path / "evaluation" / "runtime" / "verification.py").is_file():
        _unavailable(f"{UPSTREAM_VAR}={value} is not an OpenComputer checkout (no evaluation/runtime/verification.py)")
    if not (path.parent / "run_reference_harness.py").is_file():
        _unavailable(f"no run_reference_harness.py beside {UPSTREAM_VAR}={value}")
    if probe_bwrap()[0] is None:
        _unavailable(f"bubblewrap cannot run here: {probe_bwrap()[1]}")
    return path


def plugin_run(upstream: Path, end_states: Path, cwd: Path, task_ids: list[str], *args: str,
               ) -> dict[str, dict[str, Any]]:
    """One pytest run of the plugin over OpenComputer's checkout; the results by task id."""
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--bench=opencomputer",
            "--opencomputer-tasks", str(upstream), "--opencomputer-end-state", str(end_states),
            "--bench-results-dir", str(cwd / "results"), "--sandbox-isolation", "bwrap", *args]
    for task_id in task_ids:
        argv += ["--bench-task", task_id]
    return bench_records(argv, cwd, task_ids, 600)


#: The reference's environment: no LLM judge reachable. With the ``openai`` package installed
#: (the openai extra), OpenComputer's ``verify_task`` builds ``OpenAI()`` for an LLM-judged check
#: and crashes without a key; with a key and an endpoint that refuses, each such check fails ("LLM
#: judge error"), as it does without the package, and as the plugin scores it with no judge.
NO_JUDGE = {"OPENAI_API_KEY": "no-judge", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}


def reference_run(upstream: Path, task_id: str, out: Path, *args: str) -> dict[str, Any]:
    script = upstream.parent / "run_reference_harness.py"
    done = subprocess.run([sys.executable, str(script), str(upstream), task_id, str(out), "--no-sleep", *args],
                          capture_output=True, text=True, timeout=300, check=False, env={**os.environ, **NO_JUDGE})
    assert out.is_file(), done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(out.read_text())


# -- the states: (reference harness arguments, how the plugin's end state is made) ---------------------------
PCMANFM_REMOVED = ["Documents/project/cache.tmp", "Documents/project/old_config.bak", "Documents/project/debug.log",
                   "Documents/project/session.tmp", "Documents/project/error.log"]
THUNDERBIRD_FONT = """for p in /home/user/.thunderbird/*/prefs.js; do
  printf '%s\\n' 'user_pref("font.name.serif.x-western", "Georgia");' 'user_pref("msgcompose.font_size", "16");' >> "$p"
done
"""
GEDIT_JSON = """python3 -c "import json; p='/home/user/Documents/data.json'; d=json.load(open(p)); \
open(p, 'w').write(json.dumps(d, indent=2) + '\\n')"
"""
AUDACITY_HOOKED = "audacity_preferences_disable_warnings"  # its prepare hook writes what the checks want

#: start states: the untouched start state (an empty end-state folder)
START = ["drawio_aws_cloud_arch", "pcmanfm_cleanup_temp_files", AUDACITY_HOOKED, "thunderbird_change_compose_font",
         "thunderbird_add_contact_with_notes", "gedit_reformat_json", "galculator_hex_arithmetic",
         "eclipse_add_source_to_existing", "darktable_batch_rate_and_tag", "gimp_brightness_contrast"]
#: solved states: how each is given to the reference harness and to the plugin
SOLVED = {
    "drawio_aws_cloud_arch": "overlay",           # the recorded solved file, copied over the home
    "pcmanfm_cleanup_temp_files": "deleted",      # the reference deletes with a script; the plugin reads .deleted
    "thunderbird_change_compose_font": "tar",     # the reference's home after a script, as a tar snapshot
    "gedit_reformat_json": "snapshot",            # ... as a snapshot folder
}


@pytest.fixture(scope="module")
def graded(upstream: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict, dict]]:
    """``{"<state>:<task id>": (reference result, plugin record)}`` for every state above."""
    root = tmp_path_factory.mktemp("interop")
    pairs: dict[str, tuple[dict, dict]] = {}
    start_dir = root / "start"
    for task_id in START:
        (start_dir / task_id).mkdir(parents=True)
    ref_start = {t: reference_run(upstream, t, root / f"ref_start_{t}.json") for t in START}
    mine = plugin_run(upstream, start_dir, root, START, "--opencomputer-python", "system")
    pairs.update({f"start:{t}": (ref_start[t], mine[t]) for t in START})

    solved_dir = root / "solved"
    solved_dir.mkdir()
    ref_solved: dict[str, dict] = {}
    for task_id, kind in SOLVED.items():
        out = root / f"ref_solved_{task_id}.json"
        if kind == "overlay":
            ref_solved[task_id] = reference_run(upstream, task_id, out, "--end-state", str(SOLVED_DRAWIO))
            (solved_dir / task_id).symlink_to(SOLVED_DRAWIO)
        elif kind == "deleted":
            script = root / "rm.sh"
            script.write_text("".join(f"rm /home/user/{p}\n" for p in PCMANFM_REMOVED))
            ref_solved[task_id] = reference_run(upstream, task_id, out, "--solve", str(script))
            (solved_dir / task_id).mkdir()
            (solved_dir / task_id / ".deleted").write_text("# removed by the agent\n" + "\n".join(PCMANFM_REMOVED))
        else:
            script = root / f"{task_id}.sh"
            script.write_text(THUNDERBIRD_FONT if kind == "tar" else GEDIT_JSON)
            keep = root / f"keep_{task_id}"
            ref_solved[task_id] = reference_run(upstream, task_id, out, "--solve", str(script), "--keep", str(keep))
            if kind == "tar":
                with tarfile.open(solved_dir / f"{task_id}.tar.gz", "w:gz") as tar:
                    tar.add(keep / "home", arcname=".")
            else:
                (keep / "home").rename(solved_dir / task_id)
                (solved_dir / task_id / ".snapshot").touch()
    (root / "results").rename(root / "results_start")
    mine = plugin_run(upstream, solved_dir, root, list(SOLVED), "--opencomputer-python", "system")
    pairs.update({f"solved:{t}": (ref_solved[t], mine[t]) for t in SOLVED})
    return pairs


CASES = [f"start:{t}" for t in START] + [f"solved:{t}" for t in SOLVED]


@pytest.mark.parametrize("case", CASES)
def test_per_check_verdicts_and_reward_equal_the_reference_harness(graded: dict, case: str):
    reference, record = graded[case]
    assert reference.get("setup_error") is None and reference.get("verify_crash") is None, reference
    expected = [bool(d["passed"]) for d in reference["verification_details"]]
    assert record["error"] is None, record["error"]
    got = [bool(c["passed"]) for c in record["criteria"]]  # an unjudged LLM check (None) fails there too
    assert got == expected
    assert record["score"] == reference["reward"]
    unjudged = any(c["passed"] is None for c in record["criteria"])
    assert record["passed"] is (True if all(got) else None if unjudged and not any(
        c["passed"] is False for c in record["criteria"]) else False)


def test_the_spread_covers_full_passes_failures_and_the_hook(graded: dict):
    """The comparison above is not vacuous: states that pass, fail and depend on a hook are in it."""
    rewards = {case: graded[case][0]["reward"] for case in CASES}
    assert rewards[f"start:{AUDACITY_HOOKED}"] == 1.0  # pre-satisfied by the app's prepare hook
    assert rewards["solved:pcmanfm_cleanup_temp_files"] == 1.0 and rewards["start:pcmanfm_cleanup_temp_files"] == 0.5
    assert rewards["solved:thunderbird_change_compose_font"] == 1.0
    assert rewards["solved:drawio_aws_cloud_arch"] == 0.8571  # 12/14: the LLM-judged checks fail without a judge
    assert min(rewards.values()) == 0.0
    assert graded["solved:pcmanfm_cleanup_temp_files"][1]["passed"] is True
    assert graded["solved:drawio_aws_cloud_arch"][1]["passed"] is None  # not fully evaluated: skipped


def test_without_the_prepare_hook_the_reference_scores_the_audacity_task_lower(upstream: Path, tmp_path: Path):
    hooked = reference_run(upstream, AUDACITY_HOOKED, tmp_path / "with.json")
    bare = reference_run(upstream, AUDACITY_HOOKED, tmp_path / "without.json", "--skip-hooks")
    assert hooked["reward"] == 1.0 > bare["reward"]


def test_the_whole_checkout_collects_quickly_with_no_broken_task(upstream: Path, tmp_path: Path):
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--bench=opencomputer",
                           "--opencomputer-tasks", str(upstream), "--collect-only", "-q"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    seconds = time.perf_counter() - started
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    items = [line for line in done.stdout.splitlines() if line.startswith("bench/opencomputer::")]
    tasks = sorted(p.parent.name for p in (upstream / "task_generator" / "tasks").glob("*/task.json"))
    assert sorted(item.rsplit("::", 1)[1] for item in items) == tasks and len(tasks) == 900
    assert not [item for item in items if "::invalid_task::" in item]
    assert seconds < 20  # well under 2 s of collection on an idle machine (benchmarks/opencomputer_collect.py)


def _png(path: Path, colour: tuple[int, int, int]) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (400, 300), colour).save(path)


def test_the_image_python_answers_where_the_system_one_cannot(upstream: Path, tmp_path: Path):
    """OpenComputer's image has Pillow for its verifiers; the sandbox's python3 is that interpreter
    with --opencomputer-python current (the host's /usr/bin/python3 with system)."""
    from pytest_agentbench.benches.opencomputer.image import missing_packages

    if missing_packages():
        _unavailable("this interpreter lacks the image's packages (pip install -e '.[opencomputer]' in the checkout)")
    task = "gimp_brightness_contrast"
    _png(tmp_path / "end" / task / "Documents" / "bright_photo.png", (110, 110, 110))
    image = plugin_run(upstream, tmp_path / "end", tmp_path, [task], "--opencomputer-python", "current")[task]
    assert [c["passed"] for c in image["criteria"]] == [True, True, True] and image["passed"] is True
    (tmp_path / "results").rename(tmp_path / "results_image")
    system = plugin_run(upstream, tmp_path / "end", tmp_path, [task], "--opencomputer-python", "system")[task]
    if missing_packages("/usr/bin/python3"):
        assert system["passed"] is False
        assert "Pillow not installed" in json.dumps(system["criteria"])


RULE_JUDGE = '''
def judge(check, output):
    """Reads the draw.io verifier's reply the way the task's prompts ask; no model."""
    if check["command"].startswith("vertices"):
        fills = {v["value"]: v["style"] for v in output}
        return all("fillColor=#dae8fc" in fills.get(n, "") for n in ("Web1", "Web2")) and all(
            "fillColor=#d5e8d4" in fills.get(n, "") for n in ("App1", "App2"))
    if check["command"].startswith("connections"):
        return any(e["source"] == "6" and e["target"] == "7" for e in output), "edge 6 -> 7 found"
    return None
'''


def test_a_judge_evaluates_the_llm_checks_on_the_replies_of_opencomputers_verify_task(upstream: Path, tmp_path: Path):
    (tmp_path / "rulejudge.py").write_text(RULE_JUDGE)
    (tmp_path / "end").mkdir()
    (tmp_path / "end" / "drawio_aws_cloud_arch").symlink_to(SOLVED_DRAWIO)
    task = "drawio_aws_cloud_arch"
    record = plugin_run(upstream, tmp_path / "end", tmp_path, [task], "--opencomputer-judge", "rulejudge:judge")[task]
    assert [c["passed"] for c in record["criteria"]] == [True] * 14
    assert (record["passed"], record["score"]) == (True, 1.0)
    assert record["criteria"][13]["detail"] == "LLM-judged: edge 6 -> 7 found"


def _checkout_with(upstream: Path, root: Path, tasks: dict[str, Any]) -> Path:
    """A checkout whose harness and verifiers are OpenComputer's (linked, not copied) and whose
    tasks are the given ones (``{id: task}``; a string value is written as the file's text)."""
    checkout = root / "checkout"
    (checkout / "task_generator" / "tasks").mkdir(parents=True)
    for part in ("evaluation", "computer_env", "verifiers"):
        (checkout / part).symlink_to(upstream / part)
    for task_id, task in tasks.items():
        folder = checkout / "task_generator" / "tasks" / task_id
        (folder / "env").mkdir(parents=True)
        if isinstance(task, str):
            (folder / "task.json").write_text(task)
            continue
        for name, text in task.pop("_env", {}).items():
            (folder / "env" / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / "env" / name).write_text(text)
        (folder / "task.json").write_text(json.dumps(task))
    return checkout


NOTE = "/home/user/Documents/note.txt"
ERROR_REPLY = [
    {"command": f"check-file-exists {NOTE}", "key": "exists", "expected": True, "description": "seeded"},
    {"command": "file-content /home/user/Documents/never_written.txt", "key": "content", "expected": "x",
     "description": "a key check on an error reply"},
    {"command": "file-content /home/user/Documents/never_written.txt", "eval": "'error' in result",
     "description": "an eval on the same error reply"},
]


def test_opencomputers_verify_task_rules_on_an_error_reply_and_the_strict_mode(upstream: Path, tmp_path: Path):
    task = {"id": "gedit_error_reply", "app": "gedit", "task": "Leave the note.", "_env": {"note.txt": "hi\n"},
            "env": {"files": [{"filename": "note.txt", "sandbox_path": NOTE}]}, "verification": ERROR_REPLY}
    checkout = _checkout_with(upstream, tmp_path, {"gedit_error_reply": task})
    (tmp_path / "end" / "gedit_error_reply").mkdir(parents=True)
    record = plugin_run(checkout, tmp_path / "end", tmp_path, ["gedit_error_reply"])["gedit_error_reply"]
    assert [c["passed"] for c in record["criteria"]] == [True, False, True]  # the eval still runs, and passes
    assert (record["score"], record["passed"]) == (0.6667, False)
    assert record["criteria"][1]["detail"].startswith("verifier error: File not found")
    (tmp_path / "results").rename(tmp_path / "results_fail")
    strict = plugin_run(checkout, tmp_path / "end", tmp_path, ["gedit_error_reply"],
                        "--opencomputer-verifier-errors", "error")
    strict_record = strict["gedit_error_reply"]
    assert strict_record["error_type"] == "evaluation"
    assert "2 of 3 checks could not run: verification[1] `file-content" in strict_record["error"]


def test_in_a_checkout_a_failing_setup_step_or_a_broken_file_is_one_item_error(upstream: Path, tmp_path: Path):
    failing = {"id": "gedit_bad_setup", "app": "gedit", "task": "x", "verification": ERROR_REPLY[:1],
               "_env": {"setup_fail.sh": "echo cannot >&2; exit 3\n"},
               "env": {"files": [{"filename": "setup_fail.sh", "sandbox_path": "/home/user/setup_fail.sh"}]}}
    good = {"id": "gedit_fine", "app": "gedit", "task": "x", "_env": {"sub/dir/note.txt": "hi\n"},
            "env": {"files": [{"filename": "sub/dir/note.txt", "sandbox_path": NOTE}]}, "verification": ERROR_REPLY[:1]}
    checkout = _checkout_with(upstream, tmp_path, {"gedit_bad_setup": failing, "gedit_broken": "{not json",
                                                   "gedit_fine": good})
    for task_id in ("gedit_bad_setup", "gedit_broken", "gedit_fine"):
        (tmp_path / "end" / task_id).mkdir(parents=True)
    records = plugin_run(checkout, tmp_path / "end", tmp_path, ["gedit_bad_setup", "gedit_broken", "gedit_fine"])
    assert records["gedit_fine"]["passed"] is True  # env files in subfolders reach their sandbox paths
    assert ("OpenComputer's setup failed at run_task_setup_scripts: CommandExitException"
            in records["gedit_bad_setup"]["error"])
    assert "not valid JSON" in records["gedit_broken"]["error"]


def _run_tasks_elsewhere(upstream: Path, root: Path, *args: str) -> tuple[dict[str, Any], str]:
    """The hooked audacity task, copied to a tasks folder outside the checkout, graded on its start
    state: (its record, pytest's output)."""
    tasks = root / "tasks"
    shutil.copytree(upstream / "task_generator" / "tasks" / AUDACITY_HOOKED, tasks / AUDACITY_HOOKED)
    (root / "end" / AUDACITY_HOOKED).mkdir(parents=True)
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "--bench=opencomputer",
            f"--opencomputer-tasks={tasks}", f"--opencomputer-end-state={root / 'end'}",
            f"--opencomputer-verifiers={upstream / 'verifiers'}", f"--bench-results-dir={root / 'results'}",
            "--sandbox-isolation=bwrap", *args]
    done = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-2000:]
    [results] = list((root / "results").rglob("results.jsonl"))
    return json.loads(results.read_text().splitlines()[0]), done.stdout


def test_tasks_outside_a_checkout_are_graded_by_its_harness_when_it_is_named(upstream: Path, tmp_path: Path):
    named, _ = _run_tasks_elsewhere(upstream, tmp_path / "named", f"--opencomputer-checkout={upstream}")
    assert named["score"] == 1.0  # the app's prepare hook ran, as in OpenComputer
    bare, out = _run_tasks_elsewhere(upstream, tmp_path / "bare")
    assert bare["score"] < 1.0
    assert "is not in an OpenComputer checkout: this plugin's built-in checker sets up and grades" in out


def test_a_folder_that_is_not_a_checkout_is_refused_as_one(tmp_path: Path):
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--bench=opencomputer", "--opencomputer-tasks",
            str(tmp_path), "--opencomputer-checkout", str(tmp_path)]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 4
    assert f"ERROR: --opencomputer-checkout {tmp_path} is not an OpenComputer checkout" in done.stderr
