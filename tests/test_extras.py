"""Install hints name what installs: the checkout this package runs from, not an index entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentbench import extras

CHECKOUT = Path(__file__).resolve().parent.parent


def test_a_checkout_install_names_the_checkout():
    assert extras.checkout() == CHECKOUT
    assert extras.install_hint("aws") == f"pip install -e '{CHECKOUT}[aws]'"
    assert extras.install_hint("opencomputer", pip="/v/bin/python -m pip") == (
        f"/v/bin/python -m pip install -e '{CHECKOUT}[opencomputer]'")


def test_every_extra_a_hint_names_is_one_the_checkout_defines():
    """A hint's extra exists (pip ignores an unknown extra with a warning and installs nothing)."""
    import re

    named = set()
    for path in (CHECKOUT / "pytest_agentbench").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        named.update(re.findall(r"""install_hint\(["'](\w+)["']""", text))
        named.update(re.findall(r"""require_sdk\([^)]*["'](\w+)["']\)""", text))  # (module, agent, extra)
    pyproject = (CHECKOUT / "pyproject.toml").read_text(encoding="utf-8")
    section = pyproject.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    defined = set(re.findall(r"^(\w+) = \[", section, re.MULTILINE))
    assert named >= {"aws", "azure", "ssh", "claude", "openai", "browser", "opencomputer"}
    assert named <= defined


def test_outside_a_checkout_the_hint_names_the_distribution(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(extras, "checkout", lambda: None)
    assert extras.install_hint("claude") == "pip install 'pytest-agentbench[claude]'"


def test_no_hint_in_the_package_names_the_index_entry():
    """Every hint comes from ``extras``: none of the package's messages spells the index entry."""
    offenders = [str(p.relative_to(CHECKOUT)) for p in (CHECKOUT / "pytest_agentbench").rglob("*.py")
                 if p.name != "extras.py" and "'pytest-agentbench[" in p.read_text(encoding="utf-8")]
    assert offenders == []
