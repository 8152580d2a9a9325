"""``--bench-trials K``: every task played K times, as K independent items.

With K > 1 a task becomes a collector of K items, ``bench/<bench>::<domain>::<task_id>::trial-<n>``,
so ``-k <task_id>`` and ``--bench-task <task_id>`` select all of its trials, ``--lf`` reruns the trials
that failed, and xdist spreads trials over workers like any other items. With K = 1 (the default)
ids are unchanged. Each trial is its own item: its own episode (the benchmark resets for it), its
own record and its own trajectory file. The agent is told the trial number and a seed derived from
``--bench-trial-seed``, the benchmark, the task id and the trial, so a rerun with the same base seed
hands every trial the same seed (what makes ``--bench-resume`` and reruns comparable).

The settings of trials, ``--bench-compare`` and ``--bench-resume`` are the option table's values (checked
at configure time); here they are read once, the two run folders checked to exist, and the options
that go together checked together.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_agentbench.plugin.bridge import settings_for, usage_errors
from pytest_agentbench.settings import from_settings, option
from pytest_agentbench.untrusted import file_problem

if TYPE_CHECKING:
    from pytest_agentbench.record.runfolder import RunFolder

TRIAL_KEY = pytest.StashKey[int]()
SETTINGS_KEY = pytest.StashKey["TrialSettings"]()
DEFAULT_ALPHA = 0.05


def _run_path(text: str) -> Path:
    """``--bench-compare``: a run folder or a results.jsonl; it must exist now, not after an hour of episodes."""
    path = Path(text)
    file = path / "results.jsonl" if path.is_dir() else path
    problem = file_problem(file)
    if problem is not None:
        raise ValueError(f"--bench-compare {text}: {file} {problem}; pass a run folder or its results.jsonl")
    return path


def _run_folder(text: str) -> Path:
    """``--bench-resume``: the folder of an earlier run (it has its manifest)."""
    path = Path(text)
    if not (path / "manifest.json").is_file():
        raise ValueError(f"--bench-resume {text}: not a run folder (no manifest.json); pass the folder of the run "
                         "to continue, e.g. benchmark_results/<run>")
    return path


@dataclass(frozen=True)
class TrialSettings:
    trials: int = option("trials", 1)
    seed: int = option("trial_seed", 0)
    compare: Path | None = option("compare", None, convert=_run_path)
    fail_on_regression: bool = option("fail_on_regression", False, convert=bool)
    alpha: float = option("regression_alpha", DEFAULT_ALPHA)
    resume: Path | None = option("resume", None, convert=_run_folder)


def trial_settings(config: pytest.Config) -> TrialSettings:
    """The settings, as the option table checked them (read once per process), and the checks between
    them. Bad values are one-line usage errors."""
    cached = config.stash.get(SETTINGS_KEY, None)
    if cached is not None:
        return cached
    reader = settings_for(config)
    with usage_errors():
        settings = from_settings(TrialSettings, reader)
    if settings.fail_on_regression and settings.compare is None:
        raise pytest.UsageError("--bench-fail-on-regression needs --bench-compare RUN (the run to compare with)")
    from pytest_agentbench.plugin.repeat import refuse_repeat

    refuse_repeat(config, "benchmark items",
                  "use --bench-trials {count} (independent trials with pass@k and intervals)")
    config.stash[SETTINGS_KEY] = settings
    return settings


def trial_seed(base: int, benchmark: str, task_id: str, trial: int) -> int:
    """A 31-bit seed per trial, stable across processes and runs (no ``hash()`` randomisation)."""
    digest = hashlib.sha256(f"{base}:{benchmark}:{task_id}:{trial}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def trial_of(item: pytest.Item) -> int:
    return item.stash.get(TRIAL_KEY, 1)


def record_fields(item: pytest.Item, task: dict[str, Any]) -> dict[str, int]:
    """The ``trial`` and ``seed`` keys of the item's result record."""
    trial = trial_of(item)
    seed = trial_seed(trial_settings(item.config).seed, str(task["benchmark"]), str(task["task_id"]), trial)
    return {"trial": trial, "seed": seed}


def trial_suffix(item: pytest.Item) -> str:
    """Added to a task's file names when it has several trials, so trials never share a file."""
    return f".trial-{trial_of(item)}" if trial_settings(item.config).trials > 1 else ""


def attempt_of(item: pytest.Item) -> int:
    """Which attempt of the item this is: 1, or the count a rerun plugin keeps on the item
    (pytest-rerunfailures' ``execution_count``)."""
    count = getattr(item, "execution_count", 1)
    return count if isinstance(count, int) and count > 1 else 1


def file_suffix(item: pytest.Item) -> str:
    """The trial's suffix, and ``.attempt-<n>`` for a rerun's later attempts, so that no attempt
    overwrites another's files."""
    attempt = attempt_of(item)
    return trial_suffix(item) + (f".attempt-{attempt}" if attempt > 1 else "")


def trajectory_path(folder: RunFolder, item: pytest.Item, benchmark: str, task_id: str) -> Path:
    path = folder.trajectory_path(benchmark, task_id)
    suffix = file_suffix(item)
    return path.with_name(path.name.replace(".trajectory.json", f"{suffix}.trajectory.json")) if suffix else path


def task_dir(folder: RunFolder, item: pytest.Item, benchmark: str, task_id: str) -> Path:
    path = folder.task_dir(benchmark, task_id)
    suffix = file_suffix(item)
    return path.with_name(path.name + suffix) if suffix else path


class TrialGroup(pytest.Collector):
    """The K trials of one task."""

    def __init__(self, *args: Any, task: dict[str, Any] | None = None, trials: int = 1,
                 make: Callable[[pytest.Collector, str, dict[str, Any], int], pytest.Item] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        assert task is not None and make is not None
        self._task = task
        self._trials = trials
        self._make = make

    def collect(self) -> Iterator[pytest.Item]:
        for trial in range(1, self._trials + 1):
            yield self._make(self, f"trial-{trial}", self._task, trial)


def task_nodes(parent: pytest.Collector, task: dict[str, Any],
               make: Callable[[pytest.Collector, str, dict[str, Any], int],
                              pytest.Item]) -> pytest.Item | pytest.Collector:
    """The task's item (one trial) or its collector of trials."""
    trials = trial_settings(parent.config).trials
    if trials == 1:
        return make(parent, task["task_id"], task, 1)
    return TrialGroup.from_parent(parent, name=task["task_id"], task=task, trials=trials, make=make)


def configure_trials(config: pytest.Config, *, controller: bool) -> TrialSettings:
    """Validate the settings (usage errors now, not after the run) and register the
    ``--bench-compare`` gate on the controller."""
    settings = trial_settings(config)
    if controller and settings.compare is not None:
        from pytest_agentbench.plugin.compare_gate import CompareGate

        config.pluginmanager.register(CompareGate(config, settings.compare, alpha=settings.alpha,
                                                  fail=settings.fail_on_regression), "agentbench-compare")
    return settings
