"""``--opencomputer-backend docker``: items in containers made by OpenComputer's own Docker backend.

The container tier needs ``AGENTBENCH_OPENCOMPUTER_UPSTREAM`` (an unmodified OpenComputer
checkout), a Docker daemon (``DOCKER_HOST``) and ``AGENTBENCH_OPENCOMPUTER_IMAGE``, a desktop image
built by ``python -m pytest_agentbench.benches.opencomputer.desktop_image CHECKOUT`` (``.ci/run``
builds it and sets all three). Without them these tests skip with the reason; under
``AGENTBENCH_REQUIRE_INTEROP=1`` they fail instead.

The oracle (``data/opencomputer/docker_reference.py``) is OpenComputer's own task-runner sequence
with no code of this project: ``setup_sandbox_session`` through its Docker backend, ``auto_save_app``,
``verify_task``. The plugin's run of the same tasks in the same image, with an agent that does
nothing, must give the same per-check verdicts and the same reward.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from interop import bench_records, unavailable

REFERENCE = Path(__file__).parent / "data" / "opencomputer" / "docker_reference.py"
IMAGE_VAR = "AGENTBENCH_OPENCOMPUTER_IMAGE"
RUN_LABEL = "gui-synth-env.meta.run_id"
#: Tasks of the test image's apps whose start states give mixed verdicts (and two Calc tasks; the
#: Inkscape ones pass their file-exists check and fail the edits).
TASKS = ["gedit_delete_comment_lines", "gedit_reformat_json", "gedit_disable_autosave_font_change",
         "gedit_sort_lines_manually", "gedit_log_filter_errors", "pcmanfm_cleanup_temp_files",
         "pcmanfm_permission_lockdown", "pcmanfm_dedupe_and_consolidate", "calc_inventory_sort_filter",
         "calc_pref_default_sheets_and_save_format", "inkscape_edit_svg_styles", "inkscape_page_resize_to_a4_portrait"]


def _docker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=60, check=False)


def _ours(run: str) -> list[str]:
    """The containers of the plugin's run ``run`` (OpenComputer's run-id label): "name label" lines.
    Each test names its own runs: the tests of this file may run at once on xdist workers."""
    done = _docker("ps", "-a", "--filter", f"label={RUN_LABEL}=agentbench-{run}", "--format",
                   "{{.Names}} {{.Label \"" + RUN_LABEL + "\"}}")
    return done.stdout.splitlines()


def _run_id(tmp_path: Path) -> str:
    return f"test-{os.getpid()}-{tmp_path.name}"[:60]


@pytest.fixture(scope="module")
def setup() -> tuple[Path, str]:
    """(the checkout, the image); skip (fail under CI) when the container tier cannot run here."""
    checkout = os.environ.get("AGENTBENCH_OPENCOMPUTER_UPSTREAM", "")
    if not checkout or not (Path(checkout) / "computer_env" / "backends" / "docker" / "runtime.py").is_file():
        unavailable("container tier: AGENTBENCH_OPENCOMPUTER_UPSTREAM does not name an OpenComputer checkout")
    image = os.environ.get(IMAGE_VAR, "")
    if not image:
        unavailable(f"container tier: set {IMAGE_VAR} to a desktop image (python -m "
                    "pytest_agentbench.benches.opencomputer.desktop_image CHECKOUT builds one)")
    try:
        version = _docker("version", "--format", "{{.Server.Version}}")
    except FileNotFoundError:
        unavailable("container tier: the docker command is not installed")
    if version.returncode != 0:
        unavailable(f"container tier: no Docker daemon answers ({version.stderr.strip()[-200:]})")
    if _docker("image", "inspect", image).returncode != 0:
        unavailable(f"container tier: {IMAGE_VAR}={image} is not an image on this daemon")
    return Path(checkout), image


def plugin_run(checkout: Path, image: str, cwd: Path, task_ids: list[str], *args: str,
               agent: str = "noop", run: str | None = None) -> dict[str, dict[str, Any]]:
    """The plugin's run (its containers labelled with ``run``: AGENTBENCH_RUN_ID, or xdist's
    --testrunuid in ``args`` when None)."""
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--bench=opencomputer",
            f"--opencomputer-tasks={checkout}", "--opencomputer-backend=docker", f"--opencomputer-image={image}",
            f"--bench-agent={agent}", f"--bench-results-dir={cwd / 'results'}", *args]
    for task_id in task_ids:
        argv.append(f"--bench-task={task_id}")
    env = {key: value for key, value in os.environ.items()
           if key not in ("AGENTBENCH_RUN_ID", "PYTEST_XDIST_TESTRUNUID")}
    if run is not None:
        env["AGENTBENCH_RUN_ID"] = run
    (cwd / "tmp").mkdir(exist_ok=True)
    env["TMPDIR"] = str(cwd / "tmp")  # the run's own temporary folder: what it leaves there is seen
    return bench_records(argv, cwd, task_ids, 1500, env=env)


def same_verdicts(tasks: list[str], expected: dict[str, Any], ours: dict[str, dict[str, Any]]) -> None:
    """Each task graded without error on both sides, check for check, with the same reward."""
    for task_id in tasks:
        ref, record = expected[task_id], ours[task_id]
        assert "error" not in ref and record["error"] is None, (task_id, ref, record["error"])
        assert [bool(c["passed"]) for c in record["criteria"]] == ref["checks"], (task_id, record["reason"])
        assert record["score"] == round(ref["passed"] / ref["total"], 4), task_id


def test_start_states_graded_in_containers_match_opencomputers_own_runs(setup: tuple[Path, str],
                                                                       tmp_path: Path) -> None:
    checkout, image = setup
    out = tmp_path / "reference.json"
    reference = subprocess.Popen([sys.executable, "-I", str(REFERENCE), str(checkout), image, str(out), *TASKS],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    run = _run_id(tmp_path)
    ours = plugin_run(checkout, image, tmp_path, TASKS, run=run)
    _, err = reference.communicate(timeout=1500)
    assert reference.returncode == 0, err[-3000:]
    expected = json.loads(out.read_text())
    table = []
    for task_id in TASKS:
        ref = expected[task_id]
        assert "error" not in ref, (task_id, ref)
        record = ours[task_id]
        assert record["error"] is None, (task_id, record["error"], record.get("reason"))
        verdicts = [bool(c["passed"]) for c in record["criteria"]]
        table.append((task_id, ref["checks"], verdicts, ref["passed"] / ref["total"], record["score"]))
    # the record keeps the reward to 4 decimals
    mismatched = [row for row in table if row[1] != row[2] or abs(round(row[3], 4) - row[4]) > 1e-9]
    assert not mismatched, mismatched
    for task_id, _, verdicts, _, _ in table:  # the figures, with -s
        print(f"{task_id}: {sum(verdicts)}/{len(verdicts)} passed on both sides; reference setup "
              f"{expected[task_id]['setup_seconds']} s")
    assert any(0 < row[3] < 1 for row in table)  # start states that pass some checks and fail others
    assert not _ours(run), _ours(run)


def test_containers_are_removed_and_the_reaper_removes_what_a_killed_run_left(setup: tuple[Path, str],
                                                                             tmp_path: Path) -> None:
    checkout, image = setup
    # a container a killed run left: made by OpenComputer's backend with this plugin's label, kept
    # (its worker is SIGKILLed, so neither the close nor OpenComputer's atexit runs)
    run = _run_id(tmp_path)
    run_id = f"agentbench-{run}"
    code = (f"import sys; sys.path.insert(0, {str(checkout)!r}); from computer_env import create_env; "
            f"e = create_env(backend='docker', docker_image={image!r}, docker_metadata={{'run_id': {run_id!r}}}); "
            "print(e.container_id, flush=True); import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    made = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=300,
                          check=False)
    assert made.stdout.strip(), made.stderr[-2000:]
    assert len(_ours(run)) == 1, _ours(run)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--agentbench-reap",
                           "--opencomputer-backend=docker", f"--agentbench-reap-run={run}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "removed 1 container(s)" in done.stdout, done.stdout
    assert not _ours(run)


def test_no_image_is_a_usage_error(setup: tuple[Path, str], tmp_path: Path) -> None:
    checkout, _ = setup
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--bench=opencomputer",
                           f"--opencomputer-tasks={checkout}", "--opencomputer-backend=docker",
                           "--opencomputer-image=agentbench-no-such-image:none", "--bench-agent=noop"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "Docker image 'agentbench-no-such-image:none' is not there" in done.stderr, done.stderr


def test_no_docker_daemon_is_a_usage_error(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    """Anywhere (no daemon needed): a DOCKER_HOST nobody answers at stops the run at configure time."""
    tasks = Path(__file__).parent / "data" / "opencomputer" / "tasks"
    checkout = tmp_path / "oc"
    for marker in ("evaluation/runtime/verification.py", "evaluation/runtime/sandbox_session.py",
                   "evaluation/apps/registry.py", "computer_env/backends/base.py"):
        (checkout / marker).parent.mkdir(parents=True, exist_ok=True)
        (checkout / marker).write_text("")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/nobody.sock")
    result = pytester.runpytest_subprocess("--bench=opencomputer", f"--opencomputer-tasks={tasks}",
                                           f"--opencomputer-checkout={checkout}", "--opencomputer-backend=docker",
                                           "--bench-agent=noop")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1, result.errlines
    assert "--opencomputer-backend docker:" in errors[0]
    assert ("no Docker daemon answers" in errors[0] or "docker command is not installed" in errors[0]), errors


def test_bad_backend_is_a_usage_error(pytester: pytest.Pytester) -> None:
    tasks = Path(__file__).parent / "data" / "opencomputer" / "tasks"
    result = pytester.runpytest_subprocess("--bench=opencomputer", f"--opencomputer-tasks={tasks}",
                                           "--opencomputer-backend=podman", "--bench-agent=noop")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert any("--opencomputer-backend" in line and "podman" in line for line in result.errlines), result.errlines


def test_the_scripted_agent_plays_a_task_in_the_container(setup: tuple[Path, str], tmp_path: Path) -> None:
    """Screenshots are the container's (scrot through OpenComputer's backend), actions are pyautogui
    code run in the container: the scripted agent solves the gedit task, as on the host desktop."""
    from test_opencomputer_desktop import SCRIPT, TASK

    checkout, image = setup
    # XFCE opens gedit unmaximized at the top left: the editor's text area is around (400, 400)
    script_steps = [dict(step, x=400, y=400) if step["type"] == "click" else step for step in SCRIPT]
    (tmp_path / "script.json").write_text(json.dumps({TASK: script_steps}))
    script = f"--bench-agent-script={tmp_path / 'script.json'}"
    run = _run_id(tmp_path)
    records = plugin_run(checkout, image, tmp_path, [TASK], script, "--bench-screenshots=on", agent="scripted", run=run)
    record = records[TASK]
    assert record["error"] is None, record
    assert record["score"] == 1.0 and record["passed"] is True, record["reason"]
    shots = sorted(tmp_path.rglob(f"tasks/opencomputer/{TASK}/*.png"))
    assert len(shots) >= len(script_steps), shots
    from PIL import Image, ImageChops

    folder = shots[0].parent
    with Image.open(folder / "step_000.png") as first, Image.open(folder / "final.png") as final:
        assert first.size == final.size == (1920, 1080)  # OpenComputer's display, from the container
        assert ImageChops.difference(first.convert("RGB"), final.convert("RGB")).getbbox() is not None
    assert not _ours(run), _ours(run)
    assert list((tmp_path / "tmp").iterdir()) == []  # the item's worker removed its folder


def test_n_workers_run_containers_at_once_under_one_run_id(setup: tuple[Path, str], tmp_path: Path) -> None:
    import threading
    import time

    checkout, image = setup
    tasks = ["gedit_reformat_json", "gedit_log_filter_errors", "pcmanfm_permission_lockdown",
             "pcmanfm_cleanup_temp_files"]
    uid = f"n2{os.getpid()}{tmp_path.name}".replace("_", "")[:16]  # xdist's --testrunuid: the workers' run id
    seen: list[list[str]] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            seen.append(_ours(uid[:16]))
            time.sleep(0.5)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        records = plugin_run(checkout, image, tmp_path, tasks, "-n", "2", f"--testrunuid={uid}")
    finally:
        stop.set()
        watcher.join()
    assert all(record["error"] is None for record in records.values()), records
    assert {record["worker"] for record in records.values()} == {"gw0", "gw1"}
    assert max(len(names) for names in seen) == 2, seen  # two containers at once, never more
    assert not _ours(uid[:16]), _ours(uid[:16])


def test_a_killed_pytest_leaves_no_container(setup: tuple[Path, str], tmp_path: Path) -> None:
    """SIGKILL of pytest mid-item: the item's worker sees its pipe close and removes the container."""
    import signal
    import time

    checkout, image = setup
    run = _run_id(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--bench=opencomputer",
                             f"--opencomputer-tasks={checkout}", "--opencomputer-backend=docker",
                             f"--opencomputer-image={image}", "--bench-agent=noop",
                             "--bench-task=calc_inventory_sort_filter"],
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "AGENTBENCH_RUN_ID": run})
    try:
        deadline = time.monotonic() + 240
        while not _ours(run) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
        assert _ours(run), "no container appeared"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 90
        while _ours(run) and time.monotonic() < deadline:
            time.sleep(1)
        assert not _ours(run), _ours(run)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_container_that_dies_mid_item_is_that_items_infrastructure_error(setup: tuple[Path, str],
                                                                          tmp_path: Path) -> None:
    import threading
    import time

    checkout, image = setup
    task = "gedit_reformat_json"
    run = _run_id(tmp_path)
    (tmp_path / "script.json").write_text(json.dumps({task: [{"type": "wait", "seconds": 20},
                                                             {"type": "key", "key": "a"}]}))

    def kill_it() -> None:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            names = _ours(run)
            if names:
                time.sleep(8)  # the app is up and the agent waits: the container goes away
                _docker("rm", "-f", names[0].split()[0])
                return
            time.sleep(0.5)

    killer = threading.Thread(target=kill_it, daemon=True)
    killer.start()
    records = plugin_run(checkout, image, tmp_path, [task], f"--bench-agent-script={tmp_path / 'script.json'}",
                         agent="scripted", run=run)
    killer.join()
    record = records[task]
    assert record["error_type"] == "infrastructure", record
    # OpenComputer's backend failing (setup, screenshot) or the action's command in the container
    assert "OpenComputer's Docker backend" in record["error"] or "container" in record["error"], record["error"]
    assert "\n" not in record["error"]
    assert not _ours(run), _ours(run)


def _fake_checkout(root: Path) -> Path:
    from pytest_agentbench.benches.opencomputer.desktop_image import CHECKOUT_FILES

    for rel in CHECKOUT_FILES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# {rel}\n")
    return root


def test_the_test_image_is_keyed_by_the_content_of_its_inputs(tmp_path: Path) -> None:
    """The image is rebuilt only when an input changes: the checkout's entrypoint, the app list."""
    from pytest_agentbench.benches.opencomputer.desktop_image import HASH_LABEL, plan

    checkout = _fake_checkout(tmp_path / "oc")
    first = plan(checkout)
    assert plan(checkout).digest == first.digest
    assert f'{HASH_LABEL}="{first.digest}"' in first.dockerfile
    assert "COPY oc/computer_env/provision/docker/entrypoint.sh /usr/local/bin/gui-synth-entrypoint.sh" in \
        first.dockerfile
    assert plan(checkout, apps=("gedit",)).digest != first.digest
    (checkout / "computer_env/provision/docker/entrypoint.sh").write_text("#!/bin/bash\n# changed\n")
    assert plan(checkout).digest != first.digest


def test_the_test_image_needs_an_opencomputer_checkout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_agentbench.benches.opencomputer.desktop_image import main

    checkout = _fake_checkout(tmp_path / "oc")
    (checkout / "computer_env/provision/docker/healthcheck.sh").unlink()
    assert main([str(checkout), "--tag", "agentbench-never-built:none"]) == 1
    assert capsys.readouterr().err == (f"error: {checkout}/computer_env/provision/docker/healthcheck.sh does not "
                                       "exist: CHECKOUT must be an OpenComputer checkout\n")
    assert main([str(_fake_checkout(tmp_path / "oc2")), "--apps", "gimp"]) == 1
    assert "unknown app 'gimp'" in capsys.readouterr().err


#: solved states in three apps: the reference runs the script in the container after setup; the
#: plugin lays the same result as an overlay folder (``.deleted`` for removals)
PCMANFM_REMOVED = ["Documents/project/cache.tmp", "Documents/project/old_config.bak", "Documents/project/debug.log",
                   "Documents/project/session.tmp", "Documents/project/error.log"]
SORTED_FRUITS = "Apple\nBanana\nCherry\nDate\nElderberry\nFig\nGrape\nMango\n"


def test_solved_states_graded_in_containers_match_opencomputers_own_runs(setup: tuple[Path, str],
                                                                         tmp_path: Path) -> None:
    checkout, image = setup
    ends = tmp_path / "ends"
    data = json.loads((checkout / "task_generator/tasks/gedit_reformat_json/env/data.json").read_text())
    reformatted = json.dumps(data, indent=2) + "\n"
    drawing = (checkout / "task_generator/tasks/inkscape_edit_svg_styles/env/drawing.svg").read_text()
    restyled = drawing.replace('id="rect1" x="100" y="100" width="200" height="150" style="fill:#000000',
                               'id="rect1" x="100" y="100" width="200" height="150" style="fill:#ff0000')
    restyled = restyled.replace('id="circle1" cx="500" cy="300" r="80" style="fill:#000000',
                                'id="circle1" cx="500" cy="300" r="80" style="fill:#0000ff')
    restyled = restyled.replace("</svg>", '  <text id="text1" x="100" y="500">Styled Shapes</text>\n</svg>')
    assert restyled.count("#ff0000") == restyled.count("#0000ff") == 1, restyled  # the env file is OpenComputer's
    overlays = {"gedit_reformat_json": {"Documents/data.json": reformatted},
                "gedit_sort_lines_manually": {"Documents/fruits.txt": SORTED_FRUITS},
                "inkscape_edit_svg_styles": {"Documents/drawing.svg": restyled}}
    solve = {"pcmanfm_cleanup_temp_files": "cd /home/user && rm -f " + " ".join(PCMANFM_REMOVED)}
    (ends / "pcmanfm_cleanup_temp_files").mkdir(parents=True)
    (ends / "pcmanfm_cleanup_temp_files" / ".deleted").write_text("\n".join(PCMANFM_REMOVED) + "\n")
    for task_id, files in overlays.items():
        script = []
        for rel, text in files.items():
            (ends / task_id / rel).parent.mkdir(parents=True, exist_ok=True)
            (ends / task_id / rel).write_text(text)
            encoded = base64.b64encode(text.encode()).decode()
            script.append(f"echo {encoded} | base64 -d > /home/user/{rel}")
        solve[task_id] = "\n".join(script)
    (tmp_path / "solve.json").write_text(json.dumps(solve))
    tasks = sorted(solve)
    out = tmp_path / "reference.json"
    reference = subprocess.Popen([sys.executable, "-I", str(REFERENCE), str(checkout), image, str(out), "--solve",
                                  str(tmp_path / "solve.json"), *tasks],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    run = _run_id(tmp_path)
    ours = plugin_run(checkout, image, tmp_path, tasks, f"--opencomputer-end-state={ends}", run=run)
    _, err = reference.communicate(timeout=1500)
    assert reference.returncode == 0, err[-3000:]
    expected = json.loads(out.read_text())
    same_verdicts(tasks, expected, ours)
    assert expected["pcmanfm_cleanup_temp_files"]["passed"] > 5  # the start state passes 5 of 10
    assert ours["gedit_sort_lines_manually"]["score"] == 1.0  # the start state passes 4 of 10
    assert ours["inkscape_edit_svg_styles"]["score"] == 1.0  # the start state passes 1 of 4
    assert not _ours(run), _ours(run)


def test_a_replay_bundle_plays_a_task_in_the_container(setup: tuple[Path, str], tmp_path: Path) -> None:
    """A container's screen has no accessibility tree, so the bundle clicks the editor by a point
    (``at``) before its keys, as a person would: keys sent without it went nowhere when the window
    did not have the focus yet (seen under load before bundles could click)."""
    from test_opencomputer_desktop import TASK, WORKFLOW

    checkout, image = setup
    (tmp_path / "bundles" / TASK).mkdir(parents=True)
    # the scripted agent's (400, 400) on the 1920x1080 screen: inside gedit's text, which is not maximised
    click = {"action": "click", "at": [round(400 / 1920, 4), round(400 / 1080, 4)]}
    workflow = {"steps": [click if step["action"] == "click" else step for step in WORKFLOW["steps"]]}
    (tmp_path / "bundles" / TASK / "workflow.json").write_text(json.dumps(workflow, indent=1))
    run = _run_id(tmp_path)
    records = plugin_run(checkout, image, tmp_path, [TASK], f"--bench-replay-bundles={tmp_path / 'bundles'}",
                         agent="replay", run=run)
    assert (records[TASK]["passed"], records[TASK]["score"]) == (True, 1.0), records[TASK]["reason"]
    assert not _ours(run), _ours(run)


def test_whole_home_snapshots_graded_in_containers_match_opencomputers_own_runs(setup: tuple[Path, str],
                                                                                tmp_path: Path) -> None:
    """The reference solves two tasks in its container and hands over each whole home as a tar;
    laid as end states (one as the tar, one as a folder holding .snapshot), they grade the same. The
    pcmanfm task is solved by deleting files: a snapshot lacks them, so the home must be emptied
    before it is laid, or the start state's files would stay and fail the checks."""
    import tarfile

    checkout, image = setup
    solve = {"pcmanfm_cleanup_temp_files": "cd /home/user && rm -f " + " ".join(PCMANFM_REMOVED),
             "gedit_sort_lines_manually": "echo " + base64.b64encode(SORTED_FRUITS.encode()).decode()
             + " | base64 -d > /home/user/Documents/fruits.txt"}
    (tmp_path / "solve.json").write_text(json.dumps(solve))
    homes, ends = tmp_path / "homes", tmp_path / "ends"
    homes.mkdir()
    ends.mkdir()
    tasks = sorted(solve)
    out = tmp_path / "reference.json"
    reference = subprocess.run([sys.executable, "-I", str(REFERENCE), str(checkout), image, str(out), "--solve",
                                str(tmp_path / "solve.json"), "--homes", str(homes), *tasks],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=1500, check=False)
    assert reference.returncode == 0, reference.stderr[-3000:]
    (homes / "gedit_sort_lines_manually.tar").rename(ends / "gedit_sort_lines_manually.tar")
    folder = ends / "pcmanfm_cleanup_temp_files"
    with tarfile.open(homes / "pcmanfm_cleanup_temp_files.tar") as tar:
        tar.extractall(folder, filter="tar")
    (folder / ".snapshot").write_text("")
    assert not any((folder / rel).exists() for rel in PCMANFM_REMOVED)
    run = _run_id(tmp_path)
    ours = plugin_run(checkout, image, tmp_path, tasks, f"--opencomputer-end-state={ends}", run=run)
    expected = json.loads(out.read_text())
    same_verdicts(tasks, expected, ours)
    assert ours["gedit_sort_lines_manually"]["score"] == 1.0
    assert expected["pcmanfm_cleanup_temp_files"]["passed"] > 5  # the start state passes 5 of 10
    assert not _ours(run), _ours(run)


class _Lifetimes:
    """The run's containers' start and stop times as the daemon announces them, watched live
    (``docker events`` keeps only its last 256 events, fewer than one item's exec calls make)."""

    def __init__(self, run: str) -> None:
        self._proc = subprocess.Popen(
            ["docker", "events", "--filter", "type=container", "--filter", "event=start", "--filter", "event=die",
             "--filter", f"label={RUN_LABEL}=agentbench-{run}", "--format", "{{json .}}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def stop(self) -> dict[str, tuple[float, float | None]]:
        """The containers by id: (start, die) in seconds; die is None for one that never stopped."""
        import time

        time.sleep(1)  # the last die event reaches the stream
        self._proc.terminate()
        out, err = self._proc.communicate(timeout=30)
        starts: dict[str, float] = {}
        dies: dict[str, float] = {}
        for line in out.splitlines():
            event = json.loads(line)
            (starts if event["Action"] == "start" else dies).setdefault(event["id"], int(event["timeNano"]) / 1e9)
        assert starts or not err, err
        return {cid: (start, dies.get(cid)) for cid, start in starts.items()}


def _most_at_once(lifetimes: dict[str, tuple[float, float | None]]) -> int:
    edges = sorted([(start, 1) for start, _ in lifetimes.values()] +
                   [(die, -1) for _, die in lifetimes.values() if die is not None])
    most = running = 0
    for _, step in edges:  # a stop before a start at the same instant (-1 sorts first)
        running += step
        most = max(most, running)
    return most


#: cheap tasks (gedit and pcmanfm start in seconds; noop agent, start states)
CHEAP = ["gedit_reformat_json", "gedit_log_filter_errors", "gedit_sort_lines_manually", "gedit_delete_comment_lines",
         "pcmanfm_permission_lockdown", "pcmanfm_cleanup_temp_files", "pcmanfm_dedupe_and_consolidate",
         "gedit_disable_autosave_font_change"]


def test_four_workers_keep_four_containers_up_and_leave_none(setup: tuple[Path, str], tmp_path: Path) -> None:
    """``-n 4`` over 8 items: the daemon's own start and stop times of the run's containers show 4
    up at once, never more, one container per item, every one stopped and none left."""
    checkout, image = setup
    run = _run_id(tmp_path)
    watch = _Lifetimes(run)
    try:
        # four desktops starting at once on a small shared machine: more time to become ready
        records = plugin_run(checkout, image, tmp_path, CHEAP, "-n", "4", "--opencomputer-docker-ready-timeout=300",
                             run=run)
    finally:
        lifetimes = watch.stop()
    errors = {task: record["error"] for task, record in records.items() if record["error"] is not None}
    assert not errors, errors
    assert {record["worker"] for record in records.values()} == {"gw0", "gw1", "gw2", "gw3"}
    assert len(lifetimes) == len(CHEAP), lifetimes
    assert all(die is not None for _, die in lifetimes.values()), lifetimes
    assert _most_at_once(lifetimes) == 4, lifetimes
    assert not _ours(run), _ours(run)
    assert list((tmp_path / "tmp").glob("agentbench-oc-tasks-*")) == []  # every item's worker removed its folder


def test_most_at_once_counts_overlapping_lifetimes() -> None:
    """Anywhere: the overlap count the scale test relies on."""
    assert _most_at_once({"a": (0, 10), "b": (1, 2), "c": (2, 5), "d": (3, None)}) == 3
    assert _most_at_once({"a": (0, 1), "b": (1, 2)}) == 1
    assert _most_at_once({}) == 0


def _in_session(sid: int) -> list[str]:
    """The processes of session ``sid`` still alive (Linux /proc): "pid command" lines."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) ": state ppid pgrp session
        if int(fields[3]) == sid and fields[0] != "Z":
            alive.append(f"{stat.parent.name} {text[text.index('(') + 1:text.rindex(')')]}")
    return alive


@pytest.mark.parametrize("to", ["controller", "group"])
def test_a_run_interrupted_twice_leaves_no_container(setup: tuple[Path, str], tmp_path: Path, to: str) -> None:
    """Two SIGINTs to a ``-n 2`` run while both workers' containers are up (an impatient Ctrl-C,
    Ctrl-C), sent to the pytest controller alone or, as a terminal does, to its whole process group
    (the xdist workers too): the containers go without the reaper, and the reaper then finds none
    of the run's."""
    import signal
    import time

    checkout, image = setup
    run = _run_id(tmp_path)
    (tmp_path / "tmp").mkdir()
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--bench=opencomputer",
            f"--opencomputer-tasks={checkout}", "--opencomputer-backend=docker", f"--opencomputer-image={image}",
            "--bench-agent=noop", "-n", "2", *(f"--bench-task={task}" for task in CHEAP[:4])]
    env = {key: value for key, value in os.environ.items() if key != "PYTEST_XDIST_TESTRUNUID"}
    proc = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**env, "AGENTBENCH_RUN_ID": run, "TMPDIR": str(tmp_path / "tmp")},
                            start_new_session=True)  # its own process group, as a terminal's job
    interrupt = proc.send_signal if to == "controller" else lambda sig: os.killpg(proc.pid, sig)
    try:
        deadline = time.monotonic() + 240
        while len(_ours(run)) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.3)
        assert len(_ours(run)) == 2, ("two containers never were up at once", _ours(run))
        interrupt(signal.SIGINT)
        time.sleep(0.5)
        interrupt(signal.SIGINT)
        out, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    # interrupted; or killed by the second SIGINT when it lands in xdist's teardown
    assert proc.returncode in (pytest.ExitCode.INTERRUPTED, -signal.SIGINT), out[-3000:]
    at_exit, exited = _ours(run), time.monotonic()
    deadline = exited + 90  # the items' workers remove their containers as they exit
    while (_ours(run) or _in_session(proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = _ours(run)
    print(f"exit {proc.returncode}; the run's containers at its exit: {len(at_exit)}, "
          f"{time.monotonic() - exited:.1f} s later: {left}")
    assert _in_session(proc.pid) == [], _in_session(proc.pid)  # no xdist worker outlives the run
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--agentbench-reap",
                           "--opencomputer-backend=docker", f"--agentbench-reap-run={run}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not _ours(run), _ours(run)
    assert left == [], left  # nothing was left for the reaper
    assert "removed 0 container(s)" in done.stdout, done.stdout
    assert list((tmp_path / "tmp").glob("agentbench-oc-tasks-*")) == []  # the items' workers exited


#: gedit_delete_comment_lines' settings without its five comment lines, in order
SETTINGS = ("max_connections=100\ntimeout=30\ndb_host=localhost\ndb_port=5432\ndb_name=production\nlog_level=info\n"
            "log_file=/var/log/app.log\ncache_enabled=true\ncache_ttl=3600\nssl_enabled=true")


def test_the_scripted_agent_solves_three_tasks_of_two_apps_and_the_noop_agent_none(setup: tuple[Path, str],
                                                                                  tmp_path: Path) -> None:
    """Through the container's screenshots and X input only: two gedit tasks (select all, type the
    answer, save) and a pcmanfm task (F4 opens a terminal in the shown folder, whose shell deletes
    the files). The noop agent leaves all three unsolved."""
    from test_opencomputer_desktop import SCRIPT, TASK

    checkout, image = setup
    editor = [dict(step, x=400, y=400) if step["type"] == "click" else step for step in SCRIPT]
    scripts = {
        TASK: editor,
        "gedit_delete_comment_lines": [dict(step, text=SETTINGS) if step["type"] == "type" else step
                                       for step in editor],
        "pcmanfm_cleanup_temp_files": [{"type": "wait", "seconds": 3}, {"type": "key", "key": "f4"},
                                       {"type": "wait", "seconds": 5},
                                       {"type": "type", "text": "cd /home/user/Documents/project && "
                                                                "rm -f -- *.tmp *.bak *.log; exit\n"},
                                       {"type": "wait", "seconds": 2}],
    }
    (tmp_path / "script.json").write_text(json.dumps(scripts))
    tasks = sorted(scripts)
    run = _run_id(tmp_path)
    for side in ("scripted", "noop"):
        (tmp_path / side).mkdir()
    script = f"--bench-agent-script={tmp_path / 'script.json'}"
    solved = plugin_run(checkout, image, tmp_path / "scripted", tasks, script, "-n", "2", agent="scripted", run=run)
    left = plugin_run(checkout, image, tmp_path / "noop", tasks, "-n", "2", run=run)
    for task_id in tasks:
        assert solved[task_id]["error"] is None and left[task_id]["error"] is None, (solved[task_id], left[task_id])
        assert (solved[task_id]["passed"], solved[task_id]["score"]) == (True, 1.0), solved[task_id]["reason"]
        assert solved[task_id]["num_steps"] == len(scripts[task_id])  # the agent's own actions did it
        assert left[task_id]["score"] < 1.0 and left[task_id]["passed"] is False, left[task_id]
    assert len({solved[task]["domain"] for task in tasks}) == 2
    assert not _ours(run), _ours(run)
