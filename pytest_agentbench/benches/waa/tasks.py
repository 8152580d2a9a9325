"""Windows Agent Arena tasks: ``examples/<domain>/<stem>.json`` listed by an index file.

WAA keeps its tasks in ``evaluation_examples_windows/``: one JSON file per task under
``examples/<domain>/``, and index files (``test_all.json``, ``test_small.json``, ...) that map each
domain to a list of file stems. **The stem is the task id.** The ``"id"`` inside the file is not used:
in 6 of the 154 upstream files it differs from the stem (case, the place of a ``-2`` suffix, or a
different UUID), and two internal ids occur twice, so only the stem identifies a task.

Every error here is one line that names the file and says what is wrong (``WAATaskError``, a
``ValueError``, which the core turns into a usage error).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentbench.text import one_line
from pytest_agentbench.untrusted import load_file, loads, read_text

if TYPE_CHECKING:
    from pytest_agentbench.model import Task

BENCHMARK = "waa"
#: ``--waa-index`` names and the index files they stand for.
INDEXES = {"all": "test_all.json", "small": "test_small.json"}
DEFAULT_INDEX = "all"
#: Domains become pytest markers (``-m notepad``) and node-id parts.
_DOMAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: Characters a task id (node-id part and file stem) may not hold.
_BAD_STEM = re.compile(r"[\[\]/\\\s]|::")


class WAATaskError(ValueError):
    """A WAA task tree, index or task file that cannot be used. The message is one line."""


#: The step limit the upstream WAA runner gives every task.
UPSTREAM_MAX_STEPS = 15
#: A task or index file larger than this is refused unread (upstream's largest index is about 60 kB).
MAX_TASK_BYTES = 16 << 20

@dataclass(frozen=True)
class TaskTree:
    """Where the task files and the index files are."""

    examples: Path  # the folder holding <domain>/<stem>.json
    root: Path  # the folder holding test_all.json and friends

    @classmethod
    def locate(cls, path: str | Path) -> TaskTree:
        """``path`` is the ``evaluation_examples_windows`` folder or its ``examples`` folder."""
        path = Path(path)
        if not path.is_dir():
            what = "is not a folder" if path.exists() else "does not exist"
            raise WAATaskError(f"WAA examples folder {path} {what} (--waa-examples wants the "
                               "evaluation_examples_windows folder or its examples/ folder)")
        if (path / "examples").is_dir():
            return cls(examples=path / "examples", root=path)
        return cls(examples=path, root=path.parent)

    def index_path(self, index: str | Path, base: Path | None = None) -> Path:
        """The index file for ``all``, ``small`` or a path (relative to ``base``, else the tree)."""
        name = str(index).strip() or DEFAULT_INDEX
        if name in INDEXES:
            for folder in (self.root, self.examples):
                candidate = folder / INDEXES[name]
                if candidate.is_file():
                    return candidate
            raise WAATaskError(f"WAA index {INDEXES[name]} (--waa-index {name}) not found in {self.root}")
        candidate = Path(name)
        if not candidate.is_absolute():
            options = [(base or Path.cwd()) / candidate, self.root / candidate]
            candidate = next((c for c in options if c.is_file()), options[0])
        if not candidate.is_file():
            raise WAATaskError(f"WAA index {candidate} does not exist (--waa-index takes all, small or a JSON file)")
        return candidate

    def task_file(self, domain: str, stem: str) -> Path:
        return self.examples / domain / f"{stem}.json"


def check_stem(stem: object, where: str) -> str:
    if not isinstance(stem, str) or not stem:
        raise WAATaskError(f"{where}: task ids must be non-empty strings (file stems), got {stem!r}")
    if _BAD_STEM.search(stem) or stem in (".", ".."):
        raise WAATaskError(f"{where}: task id {stem!r} cannot be a pytest node id "
                           "(no brackets, '::', slashes or whitespace); rename the file")
    return stem


def check_domain(domain: object, where: str) -> str:
    if not isinstance(domain, str) or not _DOMAIN.match(domain):
        raise WAATaskError(f"{where}: domain {domain!r} cannot be a pytest marker "
                           "(letters, digits and '_', not starting with a digit)")
    return domain


def read_index(path: Path) -> dict[str, list[str]]:
    """``{domain: [stem, ...]}`` from an index file, checked. Duplicate stems are errors."""
    try:
        data = load_file(path, MAX_TASK_BYTES)
    except json.JSONDecodeError as exc:
        raise WAATaskError(f"WAA index {path} is not valid JSON: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise WAATaskError(f"WAA index {path} cannot be read: {one_line(exc)}") from None
    if not isinstance(data, dict):
        raise WAATaskError(f"WAA index {path} must be a JSON object mapping each domain to a list of "
                           f"task ids, got {type(data).__name__}")
    index: dict[str, list[str]] = {}
    seen: dict[str, str] = {}
    for domain, stems in data.items():
        check_domain(domain, f"WAA index {path}")
        if not isinstance(stems, list):
            raise WAATaskError(f"WAA index {path}: domain {domain!r} must map to a list of task ids, "
                               f"got {type(stems).__name__}")
        for stem in stems:
            check_stem(stem, f"WAA index {path}, domain {domain!r}")
            if stem in seen:
                raise WAATaskError(f"WAA index {path} lists task {stem!r} twice "
                                   f"(in {seen[stem]!r} and {domain!r}); task ids must be unique")
            seen[stem] = domain
        index[domain] = list(stems)
    return index


def _steps(value: Any, where: str) -> None:
    if not isinstance(value, list):
        raise WAATaskError(f"{where} must be a list of steps, got {type(value).__name__}")
    for i, step in enumerate(value):
        if not isinstance(step, dict) or not isinstance(step.get("type"), str) or not step["type"]:
            raise WAATaskError(f"{where}[{i}] must be an object with a 'type' string, got {one_line(step)[:80]}")
        if not isinstance(step.get("parameters", {}), dict):
            raise WAATaskError(f"{where}[{i}] ({step['type']}): 'parameters' must be an object, "
                               f"got {type(step['parameters']).__name__}")


def check_task_json(data: Any, path: Path) -> dict[str, Any]:
    """Raise ``WAATaskError`` unless ``data`` has the fields a WAA task needs, in the right shapes."""
    bad = f"WAA task file {path} is not valid WAA JSON"
    if not isinstance(data, dict):
        raise WAATaskError(f"{bad}: the top level must be an object, got {type(data).__name__}")
    if "id" in data and not isinstance(data["id"], str):
        raise WAATaskError(f"{bad}: 'id' must be a string, got {type(data['id']).__name__}")
    instruction = data.get("instruction")
    if not isinstance(instruction, str) or not instruction.strip():
        raise WAATaskError(f"{bad}: 'instruction' must be a non-empty string, got {instruction!r}"[:300])
    if "config" not in data:
        raise WAATaskError(f"{bad}: no 'config' (the list of setup steps; [] for none)")
    _steps(data["config"], f"{bad}: 'config'")
    evaluator = data.get("evaluator")
    if not isinstance(evaluator, dict):
        raise WAATaskError(f"{bad}: 'evaluator' must be an object, got {type(evaluator).__name__}")
    if "postconfig" in evaluator:
        _steps(evaluator["postconfig"], f"{bad}: 'evaluator.postconfig'")
    func = evaluator.get("func")
    if isinstance(func, list):
        if not func or not all(isinstance(f, str) and f for f in func):
            raise WAATaskError(f"{bad}: 'evaluator.func' must be a metric name or a non-empty list of names, "
                               f"got {func!r}")
        for key in ("result", "expected", "options"):
            value = evaluator.get(key)
            if key in evaluator and key != "options" and not isinstance(value, list):
                raise WAATaskError(f"{bad}: 'evaluator.{key}' must be a list when 'func' is a list, "
                                   f"got {type(value).__name__}")
            if isinstance(value, list) and len(value) != len(func):
                raise WAATaskError(f"{bad}: 'evaluator.{key}' has {len(value)} entries but 'func' has {len(func)}")
    elif not isinstance(func, str) or not func:
        raise WAATaskError(f"{bad}: 'evaluator.func' must be a metric name or a list of names, got {func!r}")
    if "conj" in evaluator and evaluator["conj"] not in ("and", "or"):
        raise WAATaskError(f"{bad}: 'evaluator.conj' must be 'and' or 'or', got {evaluator['conj']!r}")
    return data


def is_infeasible(data: dict[str, Any]) -> bool:
    """WAA's infeasible tasks: the checker is ``infeasible`` (they pass only when the agent says FAIL)."""
    func = data.get("evaluator", {}).get("func")
    return func == "infeasible" or (isinstance(func, list) and "infeasible" in func)


def read_task_data(path: Path, domain: str, stem: str) -> dict[str, Any]:
    """One task file as the manifest holds a task (a ``Task``'s ``model_dump(mode="json",
    exclude_defaults=True)``): the stem as id and the whole JSON as ``raw_config``. Collection
    needs no more, so it never builds a model (importing the models is a third of a WAA
    ``--collect-only``)."""
    try:
        text = read_text(path, MAX_TASK_BYTES)
    except FileNotFoundError:
        raise WAATaskError(f"WAA task {stem!r} (domain {domain!r}) has no file: {path} does not exist") from None
    except UnicodeDecodeError as exc:
        raise WAATaskError(f"WAA task file {path} is not valid WAA JSON: not UTF-8 ({exc.reason})") from None
    except OSError as exc:
        raise WAATaskError(f"WAA task file {path} cannot be read: {one_line(exc)}") from None
    try:
        data = loads(text)
    except json.JSONDecodeError as exc:
        raise WAATaskError(f"WAA task file {path} is not valid WAA JSON: {exc}") from None
    check_task_json(data, path)
    task: dict[str, Any] = {"task_id": stem, "instruction": data["instruction"].strip(), "domain": domain,
                            "benchmark": BENCHMARK}
    if is_infeasible(data):
        task["tags"] = ["infeasible"]
    # Upstream WAA runs each task with max_steps=15; an explicit --bench-max-steps still wins.
    task["time_limit_steps"] = UPSTREAM_MAX_STEPS
    if isinstance(data.get("snapshot"), str):
        task["initial_state_ref"] = data["snapshot"]
    if data:
        task["raw_config"] = data
    task["evaluation_spec"] = data["evaluator"]
    if not task["instruction"]:
        del task["instruction"]
    return task


class TaskSet:
    """The tasks of one index over one task tree, read on first use and kept."""

    def __init__(self, examples: str | Path | None, index: str | Path = DEFAULT_INDEX, *,
                 base: Path | None = None) -> None:
        self.examples_arg = examples
        self.index_arg = str(index or DEFAULT_INDEX)
        self.base = base
        self._tree: TaskTree | None = None
        self._index: dict[str, list[str]] | None = None
        self._index_path: Path | None = None
        self._tasks: dict[str, Task] = {}
        self._data: dict[str, dict[str, Any]] = {}

    @property
    def tree(self) -> TaskTree:
        if self._tree is None:
            if not self.examples_arg:
                raise WAATaskError("--bench=waa needs --waa-examples PATH (the evaluation_examples_windows "
                                   "folder of a WindowsAgentArena checkout) or the ini key agentbench_waa_examples")
            self._tree = TaskTree.locate(self.examples_arg)
        return self._tree

    @property
    def index_path(self) -> Path:
        if self._index_path is None:
            self._index_path = self.tree.index_path(self.index_arg, self.base)
        return self._index_path

    @property
    def index(self) -> dict[str, list[str]]:
        if self._index is None:
            index = read_index(self.index_path)
            # Every listed task must have its file (checked for all, read only when needed).
            for domain, stems in index.items():
                for stem in stems:
                    path = self.tree.task_file(domain, stem)
                    if not path.is_file():
                        raise WAATaskError(f"WAA index {self.index_path} lists {domain}/{stem} "
                                           f"but {path} does not exist")
            self._index = index
        return self._index

    def entries(self) -> list[tuple[str, str]]:
        """``(domain, stem)`` in the core's order (domain, then id)."""
        return sorted((domain, stem) for domain, stems in self.index.items() for stem in stems)

    def _read(self, domain: str, stem: str) -> Task:
        task = self._tasks.get(stem)
        if task is None:
            from pytest_agentbench.model import Task

            task = Task(**self._read_data(domain, stem))
            self._tasks[stem] = task
        return task

    def _read_data(self, domain: str, stem: str) -> dict[str, Any]:
        data = self._data.get(stem)
        if data is None:
            data = read_task_data(self.tree.task_file(domain, stem), domain, stem)
            self._data[stem] = data
        return data

    def _entries(self, limit: int | None) -> list[tuple[str, str]]:
        entries = self.entries()
        return entries if limit is None else entries[:limit]

    def tasks(self, limit: int | None = None) -> list[Task]:
        return [self._read(domain, stem) for domain, stem in self._entries(limit)]

    def task_data(self, limit: int | None = None) -> list[dict[str, Any]]:
        """``tasks`` as the manifest holds them, without building a model (``read_task_data``)."""
        return [self._read_data(domain, stem) for domain, stem in self._entries(limit)]

    def find(self, stem: str) -> Task:
        """The task with this stem: from the index, else a task file of that stem in any domain
        folder (so ``--bench-task`` can name a task the chosen index leaves out). ``KeyError``
        for anything else: ids are file stems, never synthetic names such as ``notepad_1``."""
        for domain, stems in self.index.items():
            if stem in stems:
                return self._read(domain, stem)
        try:
            check_stem(stem, "task id")
        except WAATaskError:
            raise KeyError(stem) from None
        found = [p for p in _domain_dirs(self.tree.examples) if (p / f"{stem}.json").is_file()]
        if len(found) != 1 or not _DOMAIN.match(found[0].name):
            raise KeyError(stem)
        return self._read(found[0].name, stem)

    def count(self) -> int:
        return sum(len(stems) for stems in self.index.values())


def _domain_dirs(examples: Path) -> Iterable[Path]:
    try:
        return sorted(p for p in examples.iterdir() if p.is_dir())
    except OSError:
        return []
