"""The interface every MockMed driver offers, and the screen they share.

:class:`Driver` is what the benchmark and the arms are typed against, so the headless driver and
the browser driver stay interchangeable: ``--mockmed-driver`` picks one and nothing else changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from typing_extensions import Self

    from pytest_agentbench.model import Action, Observation

VIEWPORT = (1280, 800)
APP_NAME = "MockMed"


@runtime_checkable
class Driver(Protocol):
    """Shows MockMed to an agent and carries out its actions.

    ``observe()`` loads ``base_url`` the first time; ``act`` carries out one core action and
    observes the result (an unknown ``target_id`` raises :class:`LookupError`); ``close()`` (or
    leaving the ``with``) releases the client or the browser.
    """

    base_url: str
    viewport: tuple[int, int]

    @property
    def url(self) -> str:
        """The current page's URL (``base_url`` before the first load)."""
        ...

    @property
    def current_html(self) -> str:
        """The current page's markup."""
        ...

    def goto(self, url: str) -> Observation:
        """Load ``url`` (absolute, or relative to the current page) and observe it."""
        ...

    def observe(self) -> Observation:
        ...

    def act(self, action: Action) -> Observation:
        ...

    def accessibility_tree(self) -> dict[str, Any]:
        ...

    def close(self) -> None:
        ...

    def __enter__(self) -> Self:
        ...

    def __exit__(self, *exc: object) -> None:
        ...
