"""The settings of a live WAA run, frozen, with upstream's values as defaults.

One place for every timeout and settle time the WAA client uses, so that each has a name, an option
(``--waa-<name>``, ini ``agentbench_waa_<name>``, declared in ``options.WAA_SECONDS``) and a default
that says where it comes from. Each field names its option (``settings.option``), and
:meth:`WAABenchmark.from_config` fills the object from the checked values (``settings.from_settings``).
Nothing here imports pytest.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_agentbench.settings import option, words

DEFAULT_SERVER = "http://localhost:5001"


def _hosts(values: list[str]) -> frozenset[str]:
    return frozenset(host.lower() for host in words(values))


@dataclass(frozen=True)
class WAASettings:
    server_url: str = option("waa_server", DEFAULT_SERVER)
    #: A user's own evaluate server (the reference tool's scoring); None scores with upstream's code.
    evaluate_url: str | None = option("waa_evaluate_url", None)
    #: Chrome's DevTools endpoint; None means port 9222 on the WAA server's host, as upstream.
    cdp_url: str | None = option("waa_cdp_url", None)
    #: Seconds to wait for the server before the first task (None: probe once).
    ready_timeout: float | None = option("waa_ready_timeout", None)
    #: Upstream's reset sleeps 5 s after closing every window and 5 s after the task's setup.
    settle: float = option("waa_settle", 5.0)
    #: Upstream's runner sleeps ``--sleep_after_execution`` (3 s) after each action.
    step_pause: float = option("waa_step_pause", 3.0)
    #: Upstream's SetupController sleeps 2 s after a file was opened.
    open_wait: float = option("waa_open_wait", 2.0)
    #: The server kills a command after 120 s; setup and action commands wait that long.
    command_timeout: float = option("waa_command_timeout", 120.0)
    #: Upstream allows 300 s for the accessibility tree.
    tree_timeout: float = option("waa_tree_timeout", 300.0)
    #: Upstream's scoring has no bound of its own; this bounds one evaluation.
    evaluate_timeout: float = option("waa_evaluate_timeout", 600.0)
    #: Hosts a task's download step may fetch although they resolve to a non-public address.
    download_allow: frozenset[str] = option("waa_download_allow", convert=_hosts, default_factory=frozenset)
    download_max_mb: float = option("waa_download_max_mb", 512.0)
