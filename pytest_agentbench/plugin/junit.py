"""The run's statistics as test-suite properties of pytest's JUnit XML (``--junitxml``); the
properties themselves are ``record/stats_report.junit_properties``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from _pytest.junitxml import xml_key  # the LogXML object pytest keeps on the config

from pytest_agentbench.record.stats_report import junit_properties


def add_junit_properties(config: pytest.Config, statistics: Mapping[str, Any], trials: int) -> None:
    """Add the properties to the JUnit report when ``--junitxml`` is on (it writes after us)."""
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    for name, value in junit_properties(statistics, trials):
        xml.add_global_property(name, value)
