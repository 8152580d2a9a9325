"""The settings of a live WAA run, frozen, with upstream's values as defaults.

One place for every timeout and settle time the WAA client uses, so that each has a name, an option
(``--waa-<name>``, ini ``agentbench_waa_<name>``, declared in ``options.WAA_SECONDS``) and a default
that says where it comes from. Nothing here imports pytest: :meth:`WAABenchmark.from_config` reads
the options into this object.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_SERVER = "http://localhost:5001"


@dataclass(frozen=True)
class WAASettings:
    server_url: str = DEFAULT_SERVER
    #: A user's own evaluate server (the reference tool's scoring); None scores with upstream's code.
    evaluate_url: str | None = None
    #: Chrome's DevTools endpoint; None means port 9222 on the WAA server's host, as upstream.
    cdp_url: str | None = None
    #: Seconds to wait for the server before the first task (None: probe once).
    ready_timeout: float | None = None
    #: Upstream's reset sleeps 5 s after closing every window and 5 s after the task's setup.
    settle: float = 5.0
    #: Upstream's runner sleeps ``--sleep_after_execution`` (3 s) after each action.
    step_pause: float = 3.0
    #: Upstream's SetupController sleeps 2 s after a file was opened.
    open_wait: float = 2.0
    #: The server kills a command after 120 s; setup and action commands wait that long.
    command_timeout: float = 120.0
    #: Upstream allows 300 s for the accessibility tree.
    tree_timeout: float = 300.0
    #: Upstream's scoring has no bound of its own; this bounds one evaluation.
    evaluate_timeout: float = 600.0
    #: Hosts a task's download step may fetch although they resolve to a non-public address.
    download_allow: frozenset[str] = field(default_factory=frozenset)
    download_max_mb: float = 512.0
