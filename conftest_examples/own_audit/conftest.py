"""Register the counter audit adapter by name: ``pytest --audit-verifier=counter``.

Copy this file next to ``counter_audit.py``. A registered name is shorter than ``module:Attr``, is
listed in the "unknown audit adapter" message, and its factory receives the ``pytest.Config``, so
it can read your own options or environment (and raise ``pytest.UsageError`` when they are wrong).
"""

from counter_audit import CounterAdapter


def pytest_agentbench_register_audit_adapters(registry):
    registry.register("counter", lambda config: CounterAdapter(),
                      description="a shop counter's cart API; one checker does not count the lines")
