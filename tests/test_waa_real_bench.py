"""``pytest --bench=waa`` against upstream's real WAA server, scored by upstream's own evaluator code.

The desktop is ``tests/waa_real.py``'s (upstream's unmodified server on Xvfb, with a GTK stand-in for
Notepad); the scoring is upstream's ``DesktopEnv.evaluate`` from the same snapshot. The tasks:

* a Linux-path copy of WAA's notepad task (its own evaluator, postconfig and getters, with Linux
  paths and the gold file served on loopback), solved by the scripted agent and by a replay bundle;
* WAA's real notepad task, unchanged (Windows paths): it fails with 0, it does not error;
* WAA's real infeasible VS Code task: its setup (launch ``code``, activate its window) fails on this
  desktop, which upstream tolerates, and FAIL passes it;
* a differential check: the score the run recorded equals what upstream's ``DesktopEnv.evaluate``
  returns when called directly on the same desktop state (with metric options, and postconfig).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import QUIET, results, serve_folder

from pytest_agentbench.testing import NOTEPAD_TASK

pytestmark = pytest.mark.waa_real

DATA = Path(__file__).parent / "data" / "waa"
INFEASIBLE = "INF-971cbb5b-3cbf-4ff7-9e24-b5c84fcebfa6-WOS"
LINUX_TASK = "linux-notepad"
#: Short settle times: a GTK window on a local Xvfb needs far less than a Windows VM.
SETTLE = ("-o", "agentbench_waa_settle=1", "-o", "agentbench_waa_step_pause=0.5", "-o", "agentbench_waa_open_wait=0.5")
SOLUTION = [{"type": "type", "text": "This is a draft."}, {"type": "hotkey", "keys": ["ctrl", "s"]},
            {"type": "wait", "seconds": 1}, {"type": "done"}]


@pytest.fixture(scope="module")
def gold_url(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gold")
    (folder / "draft.txt").write_text("This is a draft.")
    with serve_folder(folder) as url:
        yield f"{url}/draft.txt"


def linux_notepad(desktop, gold: str, options: dict | None = None) -> dict:
    """WAA's notepad task with Linux paths: setup opens the GTK Notepad, scoring is unchanged but for
    the paths and the gold file's address."""
    task = json.loads((DATA / "examples" / "notepad" / f"{NOTEPAD_TASK}.json").read_text())
    documents = desktop.home / "Documents"
    draft = str(documents / "draft.txt")
    task["id"] = LINUX_TASK
    # A string under a shell: upstream's /setup/launch forces shell=True, and on Linux a list command
    # then loses its arguments (on Windows the list is joined into one command line).
    gtkpad = f"{desktop.python} {desktop.upstream.parent / 'gtkpad.py'} {draft}"
    task["config"] = [
        {"type": "launch", "parameters": {"command": gtkpad, "shell": True}},
        {"type": "sleep", "parameters": {"seconds": 2}},
        {"type": "activate_window", "parameters": {"window_name": "Untitled - Notepad"}},
    ]
    evaluator = task["evaluator"]
    for step in evaluator["postconfig"]:
        if step["type"] == "open":
            step["parameters"]["path"] = draft
    evaluator["result"][0].update(folder_name=str(documents), file_name="draft.txt")
    evaluator["result"][1].update(path=draft)
    evaluator["expected"][1]["path"] = gold
    if options is not None:
        evaluator["options"] = [{}, options]
    return task


def tree(root: Path, tasks: dict[str, dict[str, dict]]) -> Path:
    """``examples/<domain>/<id>.json`` for ``{domain: {id: task}}``, beside WAA's real task files."""
    examples = root / "evaluation_examples_windows"
    shutil.copytree(DATA, examples)
    index = {}
    for domain, by_id in tasks.items():
        for task_id, task in by_id.items():
            (examples / "examples" / domain / f"{task_id}.json").write_text(json.dumps(task))
        index[domain] = list(by_id)
    (root / "index.json").write_text(json.dumps(index))
    return examples


def play(pytester, desktop, examples: Path, task_id: str, *agent: str) -> pytest.RunResult:
    return pytester.runpytest(
        "--bench=waa", "--waa-examples", str(examples), "--waa-index", str(pytester.path / "index.json"),
        "--waa-upstream", str(desktop.upstream), "--waa-server", desktop.url, "--bench-task", task_id,
        *agent, *SETTLE, *QUIET)


def recorded(pytester) -> list[dict]:
    base = pytester.path / "benchmark_results"
    return [row for folder in sorted(base.iterdir()) for row in results(folder)]


UPSTREAM_EVALUATE = r'''
"""Upstream's DesktopEnv.evaluate, called directly (no pytest-agentbench code): argv = client dir,
task file, server URL, last action, cache dir, then the packages upstream's metric modules import
at the top that are not installed here: those become empty modules."""
import importlib.abc, importlib.machinery, importlib.util, json, sys, types

MISSING = set(sys.argv[6:])

class Empty(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] not in MISSING:
            return None
        return importlib.machinery.ModuleSpec(name, self, is_package=True)
    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = lambda attr: type(attr, (), {})  # a name to import; using it fails
        return module
    def exec_module(self, module):
        pass

client, task_file, url, last, cache = sys.argv[1:6]
sys.path.insert(0, client)
sys.meta_path.append(Empty())
from desktop_env.envs.desktop_env import DesktopEnv
from desktop_env.controllers.python import PythonController
from desktop_env.controllers.setup import SetupController
env = DesktopEnv.__new__(DesktopEnv)
env.vm_ip, env.cache_dir_base, env.action_history = "127.0.0.1", cache, [last]
env.controller = PythonController(vm_ip="127.0.0.1")
env.setup_controller = SetupController(vm_ip="127.0.0.1", cache_dir=cache)
env.controller.http_server = env.setup_controller.http_server = url
env._set_task_info(json.load(open(task_file)))
env.setup_controller.reset_cache_dir(env.cache_dir)
print("SCORE", json.dumps(env.evaluate()))
'''


#: What upstream's metric and getter modules import at the top and only some metrics use.
HEAVY = ("easyocr", "librosa", "fastdtw", "acoustid", "cv2", "imagehash", "skimage", "borb", "fitz", "formulas",
         "pdfplumber", "py7zr", "LnkParse3", "mutagen", "pydrive", "PyPDF2", "playwright")


def upstream_score(desktop, task: dict, folder: Path) -> float:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "task.json").write_text(json.dumps(task))
    (folder / "evaluate.py").write_text(UPSTREAM_EVALUATE)
    done = subprocess.run([sys.executable, str(folder / "evaluate.py"), str(desktop.client_dir),
                           str(folder / "task.json"), desktop.url, "DONE", str(folder / "cache"),
                           *(name for name in HEAVY if importlib.util.find_spec(name) is None)],
                          capture_output=True, text=True, timeout=300, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("SCORE ")]
    assert lines, done.stdout[-2000:] + done.stderr[-2000:]
    return float(json.loads(lines[-1][6:]))


def test_the_linux_notepad_task_is_solved_and_scored_as_upstream_scores_it(pytester, waa_desktop, gold_url):
    task = linux_notepad(waa_desktop, gold_url)
    examples = tree(pytester.path, {"notepad": {LINUX_TASK: task}})
    (pytester.path / "script.json").write_text(json.dumps({LINUX_TASK: SOLUTION}))

    result = play(pytester, waa_desktop, examples, LINUX_TASK, "--bench-agent", "noop")
    result.assert_outcomes(failed=1)
    result = play(pytester, waa_desktop, examples, LINUX_TASK, "--bench-agent", "scripted", "--bench-agent-script",
                  str(pytester.path / "script.json"))
    result.assert_outcomes(passed=1)
    assert (waa_desktop.home / "Documents" / "draft.txt").read_text() == "This is a draft."
    by_agent = {r["agent"]: r for r in recorded(pytester)}
    noop, scripted = by_agent["noop"], by_agent["scripted"]
    assert (noop["score"], noop.get("error_type")) == (0.0, None)
    assert scripted["score"] == 1.0 and scripted["success"] is True
    # The same desktop state, scored by upstream's DesktopEnv.evaluate called directly (its postconfig
    # re-opens the file and re-activates the window first, as in the run).
    assert upstream_score(waa_desktop, task, pytester.path / "direct") == scripted["score"]


def test_metric_options_score_as_upstream_scores_them(pytester, waa_desktop, gold_url):
    """A draft typed in lower case, for a task whose compare_text_file has ignore_case: it passes,
    as upstream's own evaluate scores the same state; without the option upstream scores it 0."""
    ignoring = linux_notepad(waa_desktop, gold_url, {"ignore_case": True})
    examples = tree(pytester.path, {"notepad": {LINUX_TASK: ignoring}})
    lower = [dict(s, text=s["text"].lower()) if s.get("text") else s for s in SOLUTION]
    (pytester.path / "script.json").write_text(json.dumps({LINUX_TASK: lower}))
    play(pytester, waa_desktop, examples, LINUX_TASK, "--bench-agent", "scripted", "--bench-agent-script",
         str(pytester.path / "script.json")).assert_outcomes(passed=1)
    assert (waa_desktop.home / "Documents" / "draft.txt").read_text() == "this is a draft."
    (row,) = recorded(pytester)
    assert row["score"] == upstream_score(waa_desktop, ignoring, pytester.path / "ignore") == 1.0
    assert upstream_score(waa_desktop, linux_notepad(waa_desktop, gold_url), pytester.path / "plain") == 0.0


def test_the_replay_bundle_reads_the_real_window_titles(pytester, waa_desktop, gold_url):
    """The replay agent checks window titles before acting: on the real (AT-SPI) tree the foreground
    window is the frame marked st:active."""
    examples = tree(pytester.path, {"notepad": {LINUX_TASK: linux_notepad(waa_desktop, gold_url)}})
    bundle = pytester.path / "bundles" / LINUX_TASK
    bundle.mkdir(parents=True)
    (bundle / "workflow.json").write_text(json.dumps({
        "schema": "pytest-agentbench/workflow/v1",
        "steps": [{"action": "type", "text": "This is a draft.", "expect": {"window_title": "Untitled - Notepad"}},
                  {"action": "hotkey", "keys": ["ctrl", "s"]}, {"action": "wait", "seconds": 1}],
        "finish": {"window_title_contains": "draft.txt - Notepad"}}))
    result = play(pytester, waa_desktop, examples, LINUX_TASK, "--bench-agent", "replay", "--bench-replay-bundles",
                  str(pytester.path / "bundles"))
    result.assert_outcomes(passed=1)
    (row,) = recorded(pytester)
    assert row["final_action"]["type"] == "done"


def test_the_real_windows_notepad_task_fails_with_zero(pytester, waa_desktop):
    examples = tree(pytester.path, {"notepad": {NOTEPAD_TASK: json.loads(
        (DATA / "examples" / "notepad" / f"{NOTEPAD_TASK}.json").read_text())}})
    play(pytester, waa_desktop, examples, NOTEPAD_TASK, "--bench-agent", "noop").assert_outcomes(failed=1)
    (row,) = recorded(pytester)
    assert row["score"] == 0.0 and row.get("error_type") is None


def test_an_infeasible_task_answered_with_fail_passes_despite_setup_upstream_tolerates(pytester, waa_desktop):
    task = json.loads((DATA / "examples" / "vs_code" / f"{INFEASIBLE}.json").read_text())
    examples = tree(pytester.path, {"vs_code": {INFEASIBLE: task}})
    (pytester.path / "script.json").write_text(json.dumps({INFEASIBLE: [{"type": "fail", "reason": "no"}]}))
    result = play(pytester, waa_desktop, examples, INFEASIBLE, "--bench-agent", "scripted", "--bench-agent-script",
                  str(pytester.path / "script.json"))
    result.assert_outcomes(passed=1)  # `code` does not exist here and its window is never found
    play(pytester, waa_desktop, examples, INFEASIBLE, "--bench-agent", "noop").assert_outcomes(failed=1)
    assert {r["agent"]: (r["score"], r.get("error_type")) for r in recorded(pytester)} == {
        "scripted": (1.0, None), "noop": (0.0, None)}
