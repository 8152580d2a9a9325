"""Built-in agents. Each registers through the same hook a user's agent would."""

from pytest_agentbench.agents.builtin import MockAgent, NoopAgent, ScriptedAgent, load_script

__all__ = ["MockAgent", "NoopAgent", "ScriptedAgent", "load_script"]
