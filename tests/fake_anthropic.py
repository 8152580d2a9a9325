"""A fake Anthropic Messages API for the api-claude tests: replies of the real shape (id, type
"message", role, model, content with text and tool_use blocks, stop_reason, usage), either through
an in-process mock transport of the SDK's own HTTP library or a real loopback HTTP server (for
end-to-end runs through ``ANTHROPIC_BASE_URL``). Both record every request."""

from __future__ import annotations

import base64
import io
import itertools
import json
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from pytest_agentbench.sockets import HTTPServer

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is 3.11+; typing_extensions comes with pydantic


_ids = itertools.count(1)

Reply = tuple[int, dict[str, str], dict[str, Any]]
Script = Callable[[dict[str, Any], dict[str, str]], Reply]


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(action: str, **params: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{next(_ids):04d}", "name": "computer",
            "input": {"action": action, **params}}


def member(name: str, **params: Any) -> dict[str, Any]:
    """A ``computer_toolset_20260801`` member call (the SDK's ``BetaComputerToolUseBlock``): the
    member is the ``name``, the family is ``toolset_name``, and ``input`` holds only its parameters."""
    return {"type": "tool_use", "id": f"toolu_{next(_ids):04d}", "name": name, "toolset_name": "computer",
            "input": params}


def message(*content: dict[str, Any], stop_reason: str | None = None, model: str = "claude-sonnet-4-6",
            input_tokens: int = 2000, output_tokens: int = 60, **usage: int) -> dict[str, Any]:
    """A Messages API response body; stop_reason defaults to tool_use when a tool is called."""
    if stop_reason is None:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    return {"id": f"msg_{next(_ids):04d}", "type": "message", "role": "assistant", "model": model,
            "content": list(content), "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens, **usage}}


def ok(body: dict[str, Any]) -> Reply:
    return 200, {}, body


def api_error(status: int, kind: str, text: str, retry_after_ms: str | None = "1") -> Reply:
    headers = {"retry-after-ms": retry_after_ms} if retry_after_ms is not None else {}
    return status, headers, {"type": "error", "error": {"type": kind, "message": text}}


def sent_key(headers: dict[str, str]) -> str | None:
    """The API key a request carried (``x-api-key``, or a bearer token in newer SDKs)."""
    if headers.get("x-api-key"):
        return headers["x-api-key"]
    auth = headers.get("authorization", "")
    return auth[len("Bearer "):] if auth.startswith("Bearer ") else None


def turns(request: dict[str, Any]) -> int:
    """How many assistant turns the request's conversation already has (a stateless script's index)."""
    return sum(1 for m in request["messages"] if m["role"] == "assistant")


def images(request: dict[str, Any]) -> list[tuple[int, int]]:
    """The (width, height) of every image in the request, decoded from its base64 PNG."""
    from PIL import Image

    sizes = []
    for block in _walk(request["messages"]):
        if block.get("type") == "image":
            with Image.open(io.BytesIO(base64.b64decode(block["source"]["data"]))) as image:
                sizes.append(image.size)
    return sizes


def _walk(messages: list[dict[str, Any]]):
    for m in messages:
        for block in m["content"] if isinstance(m["content"], list) else []:
            yield block
            if block.get("type") == "tool_result":
                yield from (b for b in block.get("content") or [] if isinstance(b, dict))


def pairing_problems(request: dict[str, Any]) -> list[str]:
    """Every tool_use must be answered by a tool_result in the next (user) message, and every
    tool_result must answer a tool_use of the message before; roles must alternate from user."""
    problems = []
    messages = request["messages"]
    for index, m in enumerate(messages):
        if m["role"] != ("user" if index % 2 == 0 else "assistant"):
            problems.append(f"message {index} has role {m['role']}")
        if m["role"] == "assistant":
            uses = [b["id"] for b in m["content"] if b["type"] == "tool_use"]
            nxt = messages[index + 1]["content"] if index + 1 < len(messages) else []
            answered = [b["tool_use_id"] for b in nxt if b.get("type") == "tool_result"]
            if index + 1 < len(messages) and uses != answered:
                problems.append(f"message {index} tool_use {uses} answered by {answered}")
        elif index:
            asked = [b["id"] for b in messages[index - 1]["content"] if b["type"] == "tool_use"]
            answers = [b["tool_use_id"] for b in m["content"] if b.get("type") == "tool_result"]
            if answers != asked:
                problems.append(f"message {index} answers {answers}, asked {asked}")
        elif any(b.get("type") == "tool_result" for b in m["content"]):
            problems.append("the first message holds a tool_result")
    return problems


def http_module():  # type: ignore[no-untyped-def]
    """The HTTP library this anthropic SDK is built on (httpx, or httpx2 in newer SDKs)."""
    import anthropic

    base = next(c for c in anthropic.DefaultHttpxClient.__mro__[1:] if c.__name__ == "Client")
    return sys.modules[base.__module__.split(".")[0]]


class Recorder:
    """Replies from ``script`` through the SDK's mock transport; ``requests`` holds (json, headers)."""

    def __init__(self, script: Script | list[Reply]) -> None:
        if isinstance(script, list):
            replies = list(script)
            script = lambda request, headers: replies.pop(0)  # noqa: E731
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []

    def handle(self, request: Any) -> Any:
        body = json.loads(request.content)
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.requests.append(body)
        self.headers.append(headers)
        status, extra, reply = self.script(body, headers)
        http = http_module()
        return http.Response(status, headers={"content-type": "application/json", **extra}, json=reply)

    def client(self):  # type: ignore[no-untyped-def]
        http = http_module()
        return http.Client(transport=http.MockTransport(self.handle), base_url="https://api.example.test")



class FakeMessagesServer:
    """A real loopback HTTP server answering ``POST <path>`` (``/v1/messages`` by default) with
    ``script(request, headers)``; other paths get a 404."""

    def __init__(self, script: Script, path: str = "/v1/messages") -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                if self.path.split("?")[0] != path:
                    status, extra, reply = api_error(404, "not_found_error", f"no route {self.path}", None)
                else:
                    body = json.loads(raw)
                    with fake.lock:
                        fake.requests.append(body)
                        fake.headers.append(headers)
                    status, extra, reply = fake.script(body, headers)
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in extra.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        self._httpd = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class LoopbackAPI:
    """A :class:`FakeMessagesServer` at ``path`` answering ``handle``, with ``url`` the base URL an
    OpenAI-style SDK takes (ending in ``/v1``); the requests it received are ``requests``."""

    def __init__(self, handle: Script, path: str) -> None:
        self.server = FakeMessagesServer(handle, path=path)
        self.requests, self.headers = self.server.requests, self.server.headers
        self.url = f"{self.server.url}/v1"

    def __enter__(self) -> Self:
        self.server.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.__exit__(*exc)
