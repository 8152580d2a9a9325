"""A minimal agent server for ``--bench-agent http``: standard library only, ready to copy.

Run it, then point pytest at it::

    python server.py --port 8765
    pytest --bench=mock --bench-limit 3 --bench-agent http --bench-agent-url http://127.0.0.1:8765

It implements the whole protocol (``GET /health``, ``POST /reset``, ``POST /act``; the bodies are
described by ``pytest_agentbench/agents/schema/http_agent.schema.json``). Its agent, ``SubmitAgent``,
finds the element named ``Submit`` in the accessibility tree, clicks it by id, then says ``done``,
which passes every task of the mock benchmark. Replace ``SubmitAgent.act`` with your model call:
the request holds the task, the observation (``screenshot_png_base64``, ``accessibility_tree``,
...) and the actions so far; return ``{"action": {...}}`` plus, when a model was called,
``"usage": {"input_tokens", "output_tokens", "cost_usd", "model"}`` so that pytest-agentbench
records the cost and can enforce ``--bench-max-cost-usd``.

The server is threaded: several pytest processes (``-n 4``) may call it at once. Each client sends
its own ``session`` id, so keep any per-episode state keyed by it (as ``SubmitAgent.reset`` does).
"""

from __future__ import annotations

import argparse
import json
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def find_element(tree: dict[str, Any] | None, name: str) -> dict[str, Any] | None:
    """Depth-first search of an accessibility tree for the first element called ``name``."""
    if not tree:
        return None
    if tree.get("name") == name:
        return tree
    for child in tree.get("children", ()):
        found = find_element(child, name)
        if found is not None:
            return found
    return None


class SubmitAgent:
    """Clicks the Submit button, then says done. The part of this file to replace."""

    name = "submit-clicker"

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tasks: dict[str, str] = {}  # session -> task id of its current episode

    def reset(self, session: str, task: dict[str, Any]) -> None:
        """A new episode starts for ``session``: forget what it did before."""
        with self.lock:
            self.tasks[session] = task["task_id"]

    def act(self, request: dict[str, Any]) -> dict[str, Any]:
        """One step: the /act request body in, the reply body out."""
        if any(action["type"] == "click" for action in request["history"]):
            return {"action": {"type": "done", "reason": "clicked Submit"}}
        element = find_element(request["observation"].get("accessibility_tree"), "Submit")
        if element is None:
            return {"action": {"type": "fail", "reason": "no Submit button on screen"}}
        return {"action": {"type": "click", "target_id": str(element["id"]), "reason": "click Submit"}}


class Handler(BaseHTTPRequestHandler):
    """Routes the three endpoints to ``self.server.agent``; errors become JSON error replies."""

    server: AgentServer
    protocol_version = "HTTP/1.1"  # keep-alive: one connection per client, not one per step
    # TCP_NODELAY on each connection. http.server writes a reply's head and body separately, and
    # with Nagle's algorithm on, the kernel holds the body until the client acknowledges the head,
    # which the client delays (40 ms on Linux) while it waits for the body: 44 ms per request.
    disable_nagle_algorithm = True

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        if self.path.rstrip("/") == "/health":
            self.send_json(200, {"status": "ok", "name": self.server.agent.name})
        else:
            self.send_json(404, {"error": f"no such endpoint: GET {self.path}"})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"null")
        except ValueError:
            self.send_json(400, {"error": "the request body is not JSON"})
            return
        try:
            self.post(self.path.rstrip("/"), body)
        except Exception as exc:  # noqa: BLE001 - tell the client, keep serving
            traceback.print_exc()
            self.send_json(500, {"error": f"{type(exc).__name__}: {exc}"})

    def post(self, path: str, body: Any) -> None:
        agent = self.server.agent
        if path == "/reset":
            agent.reset(body.get("session", ""), body["task"])
            self.send_json(200, {"status": "ok"})
        elif path == "/act":
            self.send_json(200, agent.act(body))
        else:
            self.send_json(404, {"error": f"no such endpoint: POST {path}"})

    def send_json(self, status: int, data: Any) -> None:
        payload = json.dumps(data).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        if self.server.verbose:
            super().log_message(format, *args)


class AgentServer(ThreadingHTTPServer):
    """An HTTP server around one agent object (``reset(session, task)``, ``act(request)``)."""

    daemon_threads = True

    def __init__(self, agent: Any, host: str = "127.0.0.1", port: int = 0, *,
                 handler: type[Handler] = Handler, verbose: bool = False) -> None:
        super().__init__((host, port), handler)
        self.agent = agent
        self.verbose = verbose

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> threading.Thread:
        """Serve in a background thread (for tests and notebooks); ``shutdown()`` stops it."""
        thread = threading.Thread(target=self.serve_forever, args=(0.05,), name="agent-server", daemon=True)
        thread.start()
        return thread


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A minimal pytest-agentbench agent server (clicks Submit).")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port to listen on (default: 8765)")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)
    server = AgentServer(SubmitAgent(), args.host, args.port, verbose=args.verbose)
    print(f"agent server on {server.url} (pytest ... --bench-agent http --bench-agent-url {server.url})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
