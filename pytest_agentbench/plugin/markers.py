"""Benchmark and domain names as pytest markers, without ever setting another plugin's marker.

Every item carries its benchmark's and its domain's name as markers, so ``-m notepad`` and
``-m "waa and clock"`` select tasks. But a name comes from a task file or a registration, and
marker names mean things to pytest and its plugins: a domain named ``skip`` would skip its tasks,
``flaky`` would make pytest-rerunfailures rerun them, ``timeout`` or ``order`` would be read by
pytest-timeout or pytest-order. A name that pytest or another plugin claims is therefore given
as ``agentbench_<name>`` instead (``-m agentbench_flaky``); ``-k <name>`` still matches it, as the
name is also a keyword of the item.
"""

from __future__ import annotations

import pytest

PREFIX = "agentbench_"
#: What the project's own marker lines end with, in ``config.getini("markers")``.
OWN = "(pytest-agentbench)"
#: pytest's own markers, and those of widely used plugins, claimed even where the plugin is not
#: installed here (a run elsewhere may have it).
KNOWN = frozenset({
    "skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings", "tryfirst", "trylast",
    "flaky", "timeout", "order", "run", "dependency", "repeat", "xdist_group", "forked", "asyncio", "anyio",
    "trio", "django_db", "benchmark", "no_cover", "randomly_seed", "hypothesis", "allure_label", "only_rerun",
})


_CLAIMED = pytest.StashKey[frozenset[str]]()


def claimed(config: pytest.Config) -> frozenset[str]:
    """Marker names pytest or another plugin defines (registered lines, plus :data:`KNOWN`),
    worked out once per run: plugins register their markers when pytest configures."""
    cached = config.stash.get(_CLAIMED, None)
    if cached is None:
        cached = config.stash[_CLAIMED] = _claimed(config)
    return cached


def _claimed(config: pytest.Config) -> frozenset[str]:
    names = set(KNOWN)
    for line in config.getini("markers"):
        if line.rstrip().endswith(OWN):
            continue
        names.add(line.split(":", 1)[0].split("(", 1)[0].strip())
    return frozenset(names)


def marker_name(name: str, taken: frozenset[str]) -> str:
    """The marker a benchmark or domain ``name`` is given: itself, or ``agentbench_<name>``."""
    return PREFIX + name if name in taken else name


_DECORATORS = pytest.StashKey[dict[str, pytest.MarkDecorator]]()


def mark(item: pytest.Item, name: str, taken: frozenset[str]) -> None:
    # One MarkDecorator per marker name and run, not one per item: making it (pytest.mark.<name>,
    # with its check against the registered markers) cost more than adding it.
    decorators = item.config.stash.setdefault(_DECORATORS, {})
    decorator = decorators.get(name)
    if decorator is None:
        decorator = decorators[name] = getattr(pytest.mark, marker_name(name, taken))
    item.add_marker(decorator)
    item.extra_keyword_matches.add(name)
