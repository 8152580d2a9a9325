"""The offline mock benchmark: a synthetic window with buttons and a text field."""

from pytest_agentbench.benches.mock.bench import MOCK_DOMAINS, MockBenchmark

__all__ = ["MOCK_DOMAINS", "MockBenchmark"]
