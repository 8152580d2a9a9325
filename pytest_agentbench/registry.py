"""Name -> factory registries for benchmarks and agents, filled through the plugin hooks.

A factory is called as ``factory(config)``: under pytest ``config`` is the ``pytest.Config`` (as
the hooks document), outside it None. The registries pass it on untyped; built-in factories read
it through a :class:`~pytest_agentbench.settings.Settings` reader (``plugin/bridge.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from pytest_agentbench.agent import Agent
    from pytest_agentbench.benchmark import Benchmark  # noqa: F401 - named by the string in _Registry["Benchmark"]

T = TypeVar("T")


@dataclass(frozen=True)
class Entry(Generic[T]):
    name: str
    factory: Callable[[Any], T]  # factory(config): a pytest.Config, or None outside pytest
    description: str = ""
    #: "episodes": a Benchmark whose tasks are played by agents; "suite": a provider that
    #: collects its own items (see BenchmarkRegistry.register_suite).
    kind: str = "episodes"


@dataclass
class _Registry(Generic[T]):
    kind: str
    entries: dict[str, Entry[T]] = field(default_factory=dict)

    def register(self, name: str, factory: Callable[..., T], *, description: str = "", kind: str = "episodes") -> None:
        """Add ``name``. A later registration under the same name replaces the earlier one, so a
        conftest.py can override a built-in."""
        if not name or not name.replace("-", "_").replace(".", "_").isidentifier():
            raise ValueError(f"{self.kind} name {name!r} must be a word (letters, digits, '-', '_')")
        self.entries[name] = Entry(name, factory, description, kind)

    def names(self) -> list[str]:
        return sorted(self.entries)

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def get(self, name: str) -> Entry[T]:
        try:
            return self.entries[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; available: {', '.join(self.names()) or 'none'}") from None

    #: What an object a factory returns must have (callables), by entry kind.
    contract: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def create(self, name: str, config: Any = None) -> T:
        entry = self.get(name)
        return self.checked(entry, entry.factory(config))

    def checked(self, entry: Entry[T], made: Any) -> T:
        """``made`` if it has what an entry of its kind must have, else ``ConfigError``: one line
        naming the factory, what it returned and the contract (a factory returning None, or the
        class instead of an instance, would otherwise fail far away with an AttributeError)."""
        needed = self.contract.get(entry.kind, ())
        lacking = [attr for attr in needed if not callable(getattr(made, attr, None))]
        if needed and isinstance(made, type):
            from pytest_agentbench.errors import ConfigError

            raise ConfigError(f"the factory registered for {self.kind} {entry.name!r} returned the class "
                              f"{made.__name__}, not an instance: return {made.__name__}(...)")
        if lacking:
            from pytest_agentbench.errors import ConfigError
            from pytest_agentbench.text import shorten

            shown = shorten(repr(made), 60)
            raise ConfigError(
                f"the factory registered for {self.kind} {entry.name!r} returned {type(made).__name__} {shown}, which "
                f"lacks {', '.join(a + '()' for a in lacking)}: a factory is called as factory(config) and returns the "
                f"{self.kind} object itself")
        return made  # type: ignore[no-any-return]


class BenchmarkRegistry(_Registry["Benchmark"]):
    def __init__(self) -> None:
        super().__init__("benchmark", contract={"episodes": ("list_tasks", "reset", "step", "evaluate"),
                                                "suite": ("collect",)})

    def register_suite(self, name: str, factory: Callable[..., Any], *, description: str = "") -> None:
        """Register a benchmark that is not a set of agent episodes (a reward scan, say).

        ``factory(config)`` returns a provider with ``collect(session) -> pytest.Collector`` (node id
        ``bench/<name>``); the provider is also registered as a pytest plugin, so it can implement
        hooks such as ``pytest_terminal_summary``. It is created in every process (controller and
        xdist workers) and must collect the same items in each.
        """
        self.register(name, factory, description=description, kind="suite")

    def episode_names(self, names: list[str] | tuple[str, ...]) -> list[str]:
        return [n for n in names if n in self.entries and self.entries[n].kind == "episodes"]


class AgentRegistry(_Registry["Agent"]):
    def __init__(self) -> None:
        super().__init__("agent", contract={"episodes": ("act",)})
        #: name -> ``estimate(config, screen) -> StepEstimate | None``, for ``--bench-dry-run`` without
        #: building the agent (which may need an API key the estimate does not)
        self.estimators: dict[str, Callable[..., Any]] = {}

    def register(self, name: str, factory: Callable[..., Agent], *, description: str = "", kind: str = "episodes",
                 estimate: Callable[..., Any] | None = None) -> None:
        super().register(name, factory, description=description, kind=kind)
        if estimate is not None:
            self.estimators[name] = estimate
        else:
            self.estimators.pop(name, None)


class AdapterRegistry(_Registry[Any]):
    def __init__(self) -> None:
        super().__init__("audit adapter")
