"""Library code reads options through a Settings reader and raises ConfigError; the plugin reads
them from the pytest.Config and turns ConfigError into one usage-error line (plugin/bridge.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.errors import AgentbenchError, ConfigError
from pytest_agentbench.plugin.bridge import ConfigSettings, usage_errors
from pytest_agentbench.settings import Settings, settings_of


class Given:
    """A reader over a dict, as a program using the library without pytest may write one."""

    def __init__(self, **values: Any) -> None:
        self.values = values
        self.invocation_dir = self.rootdir = Path.cwd()

    def get(self, dest: str) -> Any:
        return self.values.get(dest)


def test_config_error_is_a_value_error_of_the_package():
    assert issubclass(ConfigError, ValueError) and issubclass(ConfigError, AgentbenchError)


def test_settings_of_takes_a_reader_or_none_and_names_anything_else():
    reader = Given(agent_model="claude-x")
    assert settings_of(reader) is reader and isinstance(reader, Settings)
    assert settings_of(None) is None
    with pytest.raises(TypeError, match=r"expected pytest_agentbench Settings or a configured pytest\.Config, "
                                        r"got dict"):
        settings_of({"agent_model": "claude-x"})


def test_a_parsed_config_needs_the_plugin_reader(pytester: pytest.Pytester):
    config = pytester.parseconfig("--bench-agent-model", "claude-haiku-4-5")
    with pytest.raises(TypeError, match="not configured yet"):
        settings_of(config)
    reader = ConfigSettings(config)
    assert reader.get("agent_model") == "claude-haiku-4-5"
    assert reader.get("collectonly") is False  # pytest's own options too
    assert reader.invocation_dir == Path(config.invocation_params.dir)


def test_library_code_reads_a_reader_without_pytest():
    from pytest_agentbench.agents.claude import estimate_for
    from pytest_agentbench.agents.replay import make_agent

    assert estimate_for(Given(agent_model="claude-opus-4-1"), (1280, 720)).model == "claude-opus-4-1"
    with pytest.raises(ConfigError, match="--bench-replay-bundles missing is not a folder"):
        make_agent(Given(replay_bundles="missing"))


def test_usage_errors_turns_only_config_errors_into_usage_errors():
    with pytest.raises(pytest.UsageError, match=r"^--bench-x is bad$"), usage_errors():
        raise ConfigError("--bench-x is bad")
    with pytest.raises(KeyError), usage_errors():
        raise KeyError("other")


def test_a_conftest_factory_passing_its_config_on_gets_one_usage_line(run, pytester: pytest.Pytester):
    """A user's factory handed the pytest.Config passes it to a built-in's library factory: the
    config carries the plugin's reader, and the ConfigError is the usual one ERROR line, exit 4."""
    pytester.makeconftest('''
import pytest
from pytest_agentbench.agents.http import make_agent

@pytest.hookimpl
def pytest_agentbench_register_agents(registry):
    registry.register("mine", lambda config: make_agent(config))
''')
    result = run("--bench=mock", "--bench-limit", "1", "--bench-agent", "mine")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR")]
    expected = ("ERROR: --bench-agent http needs --bench-agent-url URL (or ini agentbench_agent_url), the agent "
                "server's base URL such as http://127.0.0.1:8765")
    assert errors == [expected], result.stderr.lines
