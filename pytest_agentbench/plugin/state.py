"""The plugin's per-process keys and the two look-ups every pytest-side module needs: the run's
state object from a config, and an item's task. A leaf module (it imports no other module of the
plugin), so items, pools, reports and the state object can all reach these without importing each
other."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_agentbench.model import EpisodeRecord, Task  # noqa: F401 - EpisodeRecord names RECORD_KEY's type
    from pytest_agentbench.outcomes import Outcome  # noqa: F401 - named in OUTCOME_KEY's StashKey["Outcome"]
    from pytest_agentbench.plugin.session import AgentbenchPlugin

STATE_KEY = pytest.StashKey["AgentbenchPlugin"]()
OUTCOME_KEY = pytest.StashKey["Outcome"]()
PAYLOAD_KEY = pytest.StashKey[dict[str, Any]]()
#: The episode record of an item being run: set when the episode has played (in setup), removed at teardown.
RECORD_KEY = pytest.StashKey["EpisodeRecord"]()
#: The exception behind an item's agent, environment or checker error, until its outcome is raised
CAUSE_KEY = pytest.StashKey[BaseException]()
PAYLOAD_ATTR = "agentbench"  # the report attribute holding the item's record (plain JSON)
#: An episode item's task (a plain dict from the manifest); only episode items carry it.
TASK_KEY = pytest.StashKey[dict[str, Any]]()


def is_episode_item(item: pytest.Item) -> bool:
    """Whether ``item`` plays a benchmark task (a ``BenchItem``), without importing the items."""
    return TASK_KEY in item.stash


def config_state(config: pytest.Config) -> AgentbenchPlugin:
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        raise pytest.UsageError("the agentbench fixtures need a benchmark run (--bench NAME)")
    return state


def task_from_item(item: pytest.Item) -> Task:
    """The item's task, built without validation: the manifest's tasks were validated when it was
    resolved (``manifest.resolve``), and validating again per item costs more than the record."""
    data = item.stash[TASK_KEY]
    fields = {**_TASK_DEFAULTS, **data}
    # Fresh containers, as validation would make them: a benchmark that edits its task must not
    # edit the manifest's copy (the next trial's).
    fields["tags"] = list(fields["tags"])
    fields["raw_config"] = dict(fields["raw_config"])
    if fields["evaluation_spec"] is not None:
        fields["evaluation_spec"] = dict(fields["evaluation_spec"])
    return _task_class().model_construct(_fields_set=set(data), **fields)


@functools.cache
def _task_class() -> type[Task]:
    """``model.Task``, imported on first use (this module loads in runs that never build a model)
    and looked up once, not per item."""
    from pytest_agentbench.model import Task

    return Task


#: Every Task field's default, so model_construct never calls a default factory (slow in pydantic).
_TASK_DEFAULTS: dict[str, Any] = {"instruction": "", "domain": "default", "benchmark": "", "time_limit_steps": None,
                                  "tags": (), "initial_state_ref": None, "raw_config": {}, "evaluation_spec": None}
