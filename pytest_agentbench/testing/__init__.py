"""Test helpers shipped with the package, so users can try agents offline.

``FakeWAAServer`` is a WAA-compatible fake server (see ``pytest_agentbench.testing.waa_server`` for
what it simulates).
"""

from .waa_server import FakeWAAServer

__all__ = ["FakeWAAServer"]
