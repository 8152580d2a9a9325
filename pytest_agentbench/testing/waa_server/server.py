"""``FakeWAAServer``: a simulated desktop served over loopback HTTP (stdlib ``http.server`` in a thread)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from pytest_agentbench.sockets import HTTPServer
from pytest_agentbench.testing.waa_server.desktop import SimulatedDesktop
from pytest_agentbench.testing.waa_server.evaluate import ReferenceEvaluator
from pytest_agentbench.testing.waa_server.handler import Handler

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is 3.11+; typing_extensions comes with pydantic


class FakeWAAServer(SimulatedDesktop):
    """The WAA server's endpoints over a :class:`SimulatedDesktop`, on 127.0.0.1 and an ephemeral port.

    ``evaluate=True`` adds the reference tool's ``POST /evaluate`` on the same port (the real WAA
    server has none: without the flag it is an unknown route like any other). ``latency`` seconds
    are added to every request; ``requests`` records each one.
    """

    def __init__(self, latency: float = 0.0, *, screen: tuple[int, int] = (1280, 720), evaluate: bool = False) -> None:
        super().__init__(screen)
        self.latency = latency
        self.requests: list[dict[str, Any]] = []
        #: Gold files by URL for the evaluate endpoint's ``cloud_file`` getter (url -> bytes).
        self.cloud_files: dict[str, bytes] = {}
        self.evaluator: ReferenceEvaluator | None = ReferenceEvaluator(self, self.cloud_files) if evaluate else None
        self.lock = threading.RLock()
        self._httpd: HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("FakeWAAServer is not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def evaluate_url(self) -> str:
        """Where ``POST /evaluate`` is served: this server, when made with ``evaluate=True``."""
        if self.evaluator is None:
            raise RuntimeError("this FakeWAAServer has no evaluate endpoint (the real WAA server has none); "
                               "make it with FakeWAAServer(evaluate=True)")
        return self.url

    def evaluate(self, task: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Score ``task`` (with ``agent_last_action``) as ``POST /evaluate`` would."""
        if self.evaluator is None:
            raise RuntimeError("this FakeWAAServer has no evaluate endpoint; make it with FakeWAAServer(evaluate=True)")
        return self.evaluator.evaluate(task)

    def start(self) -> FakeWAAServer:
        if self._httpd is not None:
            return self
        server = self

        class BoundHandler(Handler):
            fake = server

        self._httpd = HTTPServer(("127.0.0.1", 0), BoundHandler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="fake-waa", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self.evaluator is not None:
            self.evaluator.close()  # its file cache; made again if the server is started again

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
