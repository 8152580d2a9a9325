"""The sandboxes of one pytest session: their isolation decided once (and its warning given once),
their limits read from the ``--sandbox-*`` options. The sandboxes themselves are ``infra/sandbox.py``."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import pytest

from pytest_agentbench.infra.sandbox import (
    Isolation,
    Limits,
    SandboxError,
    SandboxWarning,
    choose_isolation,
)
from pytest_agentbench.plugin.options import setting


@dataclass
class _SessionIsolation:
    isolation: Isolation
    warned: bool = False


_STATE_KEY = pytest.StashKey[_SessionIsolation]()


def isolation_mode(config: pytest.Config) -> str:
    """``--sandbox-isolation``, else the ini key ``agentbench_sandbox_isolation``, else ``auto``."""
    return setting(config, "sandbox_isolation") or "auto"


def session_limits(config: pytest.Config) -> Limits:
    """:class:`Limits` from ``--sandbox-memory-mb``, ``--sandbox-max-procs``, ``--sandbox-output-mb``
    and ``--sandbox-disk-mb`` (else their ini keys ``agentbench_sandbox_*``, else the defaults).
    A bad ini value is a usage error naming the key."""
    values = {name: setting(config, f"sandbox_{name}") for name in ("memory_mb", "max_procs", "output_mb", "disk_mb")}
    return Limits(**{name: int(value) for name, value in values.items() if value is not None})


def session_isolation(config: pytest.Config) -> Isolation:
    """The isolation of this pytest session's sandboxes, decided once (a trial run of bwrap).

    The first call that falls back to a plain folder warns (a :class:`SandboxWarning`, shown in
    pytest's warnings summary); later calls do not. ``--sandbox-isolation bwrap`` with an
    unusable bwrap is a usage error."""
    state = config.stash.get(_STATE_KEY, None)
    if state is None:
        try:
            state = _SessionIsolation(choose_isolation(isolation_mode(config)))
        except SandboxError as exc:
            raise pytest.UsageError(str(exc)) from None
        config.stash[_STATE_KEY] = state
    if not state.isolation.isolated and state.isolation.reason and not state.warned:
        state.warned = True
        warnings.warn(SandboxWarning(
            f"sandboxes are plain temporary folders, not isolated: {state.isolation.reason}; commands "
            "can write outside them and use the network (install bubblewrap, or pass "
            "--sandbox-isolation none to accept this without a warning)"), stacklevel=2)
    return state.isolation
