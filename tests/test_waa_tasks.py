"""WAA task loading: ``examples/<domain>/<stem>.json`` from an index, the stem is the id, and every
bad input is one line naming the file. Runs on the 154 upstream task files in ``tests/data/waa``."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from pytest_agentbench.benches.waa.bench import WAABenchmark
from pytest_agentbench.benches.waa.tasks import TaskSet, TaskTree, WAATaskError, check_task_json

DATA = Path(__file__).parent / "data" / "waa"
EXAMPLES = DATA / "examples"
NOTEPAD = "366de66e-cbae-4d72-b042-26390db2b145-WOS"
UPSTREAM_COUNTS = {"chrome": 17, "clock": 4, "file_explorer": 19, "libreoffice_calc": 24, "libreoffice_writer": 19,
                   "microsoft_paint": 3, "msedge": 13, "notepad": 2, "settings": 5, "vlc": 21, "vs_code": 24,
                   "windows_calc": 3}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A writable copy of the task tree (index files plus examples/)."""
    root = tmp_path / "evaluation_examples_windows"
    shutil.copytree(DATA, root)
    return root


def one_line_error(taskset: TaskSet, *needles: str) -> str:
    with pytest.raises(WAATaskError) as info:
        taskset.tasks()
    text = str(info.value)
    assert "\n" not in text, text
    for needle in needles:
        assert needle in text, text
    return text


def test_all_154_upstream_tasks_load_keyed_by_stem():
    tasks = TaskSet(EXAMPLES).tasks()
    assert len(tasks) == 154
    assert Counter(t.domain for t in tasks) == UPSTREAM_COUNTS
    ids = [t.task_id for t in tasks]
    assert len(set(ids)) == 154
    assert ids == sorted(ids, key=lambda i: (next(t.domain for t in tasks if t.task_id == i), i))
    for task in tasks:
        assert (EXAMPLES / task.domain / f"{task.task_id}.json").is_file()
        assert task.benchmark == "waa"


def test_task_data_is_the_manifest_form_of_each_task():
    """``task_data`` (what collection uses, with no model built) is exactly each Task's manifest
    form, for every upstream task, infeasible ones (tags) and snapshots included."""
    data = TaskSet(EXAMPLES).task_data()
    tasks = TaskSet(EXAMPLES).tasks()
    assert data == [t.model_dump(mode="json", exclude_defaults=True) for t in tasks]
    assert any("tags" in d for d in data) and any("tags" not in d for d in data)
    assert TaskSet(EXAMPLES).task_data(3) == data[:3]


def test_a_waa_collection_loads_no_models(pytester):
    """Listing WAA tasks builds no ``Task``: the models (pydantic) stay unloaded in --collect-only."""
    pytester.makeconftest("""
import sys

def pytest_collection_finish(session):
    print("models loaded:", [m for m in ("pytest_agentbench.model", "pydantic") if m in sys.modules])
""")
    result = pytester.runpytest_subprocess("--bench=waa", f"--waa-examples={EXAMPLES}", "--collect-only", "-q",
                                           "-s", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["models loaded: ?]", "*154 tests collected*"])


def test_the_stem_wins_over_the_internal_id():
    tasks = {t.task_id: t for t in TaskSet(EXAMPLES).tasks()}
    differing = {stem: t.raw_config["id"] for stem, t in tasks.items() if t.raw_config["id"] != stem}
    assert len(differing) == 6
    inf = tasks["INF-0d95d28a-9587-433b-a805-1fbe5467d598-WOS"]
    assert inf.raw_config["id"].startswith("INF-5ac2891a")
    # Two internal ids repeat; the stems are still unique.
    internal = Counter(t.raw_config["id"] for t in tasks.values())
    assert sorted(i for i, n in internal.items() if n > 1) == [
        "982d12a5-beab-424f-8d38-d2a48429e511-WOS", "INF-5ac2891a-eacd-4954-b339-98abba077adb-WOS"]


def test_task_fields_come_from_the_json():
    task = TaskSet(EXAMPLES).find(NOTEPAD)
    raw = json.loads((EXAMPLES / "notepad" / f"{NOTEPAD}.json").read_text())
    assert task.domain == "notepad"
    assert task.instruction.startswith('Please open Notepad, create a new file named "draft.txt"')
    assert task.raw_config == raw
    assert task.evaluation_spec == raw["evaluator"]
    assert task.initial_state_ref == "notepad"
    assert task.tags == []


def test_infeasible_tasks_are_flagged():
    tasks = TaskSet(EXAMPLES).tasks()
    flagged = sorted(t.task_id for t in tasks if "infeasible" in t.tags)
    assert len(flagged) == 13
    assert all(i.startswith("INF-") for i in flagged)
    assert "INF-971cbb5b-3cbf-4ff7-9e24-b5c84fcebfa6-WOS" in flagged


def test_small_index_and_custom_index(tmp_path: Path):
    small = TaskSet(EXAMPLES, "small").tasks()
    assert [(t.domain, t.task_id[:8]) for t in small] == [
        ("chrome", "06fe7178"), ("chrome", "2ae9ba84"), ("chrome", "7a5a7856"),
        ("libreoffice_calc", "0a2e43bf"), ("libreoffice_calc", "0acbd372"), ("libreoffice_calc", "0bf05a7d")]
    custom = tmp_path / "mine.json"
    custom.write_text(json.dumps({"notepad": [NOTEPAD], "vs_code": ["INF-971cbb5b-3cbf-4ff7-9e24-b5c84fcebfa6-WOS"]}))
    assert [t.task_id for t in TaskSet(EXAMPLES, str(custom)).tasks()] == [
        NOTEPAD, "INF-971cbb5b-3cbf-4ff7-9e24-b5c84fcebfa6-WOS"]
    # A relative index path is taken from the base folder (the invocation folder).
    assert len(TaskSet(EXAMPLES, "mine.json", base=tmp_path).tasks()) == 2


def test_either_the_root_or_the_examples_folder_may_be_given():
    assert TaskTree.locate(DATA) == TaskTree.locate(EXAMPLES) == TaskTree(examples=EXAMPLES, root=DATA)


def test_limit_takes_the_first_tasks_in_the_core_order():
    every = TaskSet(EXAMPLES).tasks()
    taskset = TaskSet(EXAMPLES)
    assert [t.task_id for t in taskset.tasks(5)] == [t.task_id for t in every[:5]]
    assert len(taskset._tasks) == 5  # only the five files were read


def test_load_task_knows_stems_only():
    bench = WAABenchmark(EXAMPLES, "small")
    # A stem outside the chosen index but present as a file is found (named explicitly by the user).
    assert bench.load_task(NOTEPAD).domain == "notepad"
    for synthetic in ("notepad_1", "foo", "chrome", "", "../test_all", "366de66e", NOTEPAD.lower() + "x"):
        with pytest.raises(KeyError):
            bench.load_task(synthetic)


# -- bad input: one line each, naming the file ------------------------------------------------------
def test_missing_examples_folder(tmp_path: Path):
    one_line_error(TaskSet(tmp_path / "nowhere"), str(tmp_path / "nowhere"), "does not exist")
    one_line_error(TaskSet(None), "--waa-examples")


def test_missing_index(tree: Path):
    (tree / "test_small.json").unlink()
    one_line_error(TaskSet(tree, "small"), "test_small.json", "not found")
    one_line_error(TaskSet(tree, "nope.json"), "nope.json", "does not exist")


def test_index_lists_a_task_without_a_file(tree: Path):
    (tree / "examples" / "notepad" / f"{NOTEPAD}.json").unlink()
    one_line_error(TaskSet(tree), f"notepad/{NOTEPAD}", f"{NOTEPAD}.json does not exist")


@pytest.mark.parametrize(
    ("index", "needle"),
    [
        ("[1, 2]", "must be a JSON object"),
        ('{"notepad": "366de66e"}', "must map to a list"),
        ('{"notepad": [7]}', "non-empty strings"),
        ('{"note pad": []}', "cannot be a pytest marker"),
        ('{"notepad": ["a b"]}', "cannot be a pytest node id"),
        ('{"notepad": ["x[1]"]}', "cannot be a pytest node id"),
        ('{"notepad": ["a::b"]}', "cannot be a pytest node id"),
        ('{"notepad": ["../../etc/passwd"]}', "cannot be a pytest node id"),
        ('{"notepad": ["x"], "vs_code": ["x"]}', "lists task 'x' twice"),
        ('{"notepad": [', "is not valid JSON"),
    ],
)
def test_bad_index(tmp_path: Path, index: str, needle: str):
    path = tmp_path / "index.json"
    path.write_text(index)
    one_line_error(TaskSet(EXAMPLES, str(path)), str(path), needle)


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda d: "{not json", "is not valid WAA JSON: Expecting property name"),
        (lambda d: json.dumps([d]), "the top level must be an object, got list"),
        (lambda d: json.dumps({**d, "instruction": ""}), "'instruction' must be a non-empty string"),
        (lambda d: json.dumps({k: v for k, v in d.items() if k != "config"}), "no 'config'"),
        (lambda d: json.dumps({**d, "config": {"type": "open"}}), "'config' must be a list of steps, got dict"),
        (lambda d: json.dumps({**d, "config": [{"parameters": {}}]}), "'config'[0] must be an object with a 'type'"),
        (lambda d: json.dumps({**d, "config": [{"type": "open", "parameters": []}]}), "'parameters' must be an object"),
        (lambda d: json.dumps({k: v for k, v in d.items() if k != "evaluator"}), "'evaluator' must be an object"),
        (lambda d: json.dumps({**d, "evaluator": {**d["evaluator"], "func": None}}), "'evaluator.func' must be"),
        (lambda d: json.dumps({**d, "evaluator": {**d["evaluator"], "expected": d["evaluator"]["expected"][:1]}}),
         "'evaluator.expected' has 1 entries but 'func' has 2"),
        (lambda d: json.dumps({**d, "evaluator": {**d["evaluator"], "conj": "xor"}}), "'evaluator.conj'"),
        (lambda d: json.dumps({**d, "evaluator": {**d["evaluator"], "postconfig": "open"}}), "'evaluator.postconfig'"),
    ],
)
def test_invalid_task_file(tree: Path, mutate, needle: str):
    path = tree / "examples" / "notepad" / f"{NOTEPAD}.json"
    path.write_text(mutate(json.loads(path.read_text())))
    text = one_line_error(TaskSet(tree), str(path), needle)
    if "Expecting" not in needle:
        assert "is not valid WAA JSON" in text


def test_a_file_that_is_not_utf8(tree: Path):
    path = tree / "examples" / "notepad" / f"{NOTEPAD}.json"
    path.write_bytes(b'{"instruction": "\xff"}')
    one_line_error(TaskSet(tree), str(path), "not UTF-8")


def test_every_upstream_file_is_valid_waa_json():
    for path in sorted(EXAMPLES.glob("*/*.json")):
        check_task_json(json.loads(path.read_text(encoding="utf-8")), path)
