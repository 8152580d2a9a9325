"""How to install an extra (``aws``, ``claude``, ``opencomputer``...): the one place every install
hint comes from.

Why one place: the package is installed from its checkout (``pip install -e ".[dev]"``), not from
a package index, so ``pip install 'pytest-agentbench[aws]'`` fails for everyone who copies it.
When this package runs from a checkout (a ``pyproject.toml`` naming it sits above it) the hint
names that checkout's folder, which installs the extra wherever the command is typed; otherwise
(an installed wheel) it names the distribution with the extra.
"""

from __future__ import annotations

import functools
from pathlib import Path

DISTRIBUTION = "pytest-agentbench"


@functools.cache
def checkout() -> Path | None:
    """The checkout this package runs from, or None when it was installed from a wheel."""
    root = Path(__file__).resolve().parent.parent
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return root if f'name = "{DISTRIBUTION}"' in text else None


def requirement(extra: str) -> str:
    """What ``pip install`` takes for ``extra``: ``-e '<checkout>[extra]'``, or
    ``'pytest-agentbench[extra]'`` outside a checkout (quoted for a POSIX shell)."""
    root = checkout()
    if root is not None:
        return f"-e '{root}[{extra}]'"
    return f"'{DISTRIBUTION}[{extra}]'"


def install_hint(extra: str, pip: str = "pip") -> str:
    """The command that installs ``extra``, e.g. ``pip install -e '/src/pytest-agentbench[aws]'``;
    ``pip`` may name another interpreter's pip (``/venv/bin/python -m pip``)."""
    return f"{pip} install {requirement(extra)}"
