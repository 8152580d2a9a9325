"""A fake OpenAI Responses API for the api-openai tests, on a real loopback HTTP server the openai
SDK talks to through ``OPENAI_BASE_URL``. Run as a script (``python tests/fake_openai.py``) it
serves :func:`mock_benchmark` and prints the base URL, for trying the agent offline.

Every reply is checked against the SDK's own ``openai.types.responses.Response`` model before it
is sent, so a helper here cannot drift from the real shape. Like the real API the fake keeps the
conversation by ``previous_response_id`` and refuses (HTTP 400, the API's error shape) a request
that does not answer every ``computer_call`` of the previous response with a
``computer_call_output`` carrying a screenshot, or that does not acknowledge its pending safety
checks exactly, or that names a response it never gave."""

from __future__ import annotations

import base64
import io
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from fake_anthropic import LoopbackAPI

_ids = itertools.count(1)

Reply = tuple[int, dict[str, str], dict[str, Any]]
#: script(request, turn) -> reply; ``turn`` counts the requests of this conversation from 0.
Script = Callable[[dict[str, Any], int], Reply]


def call(*actions: dict[str, Any], safety: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A ``computer_call`` output item with a batch of actions (``ResponseComputerToolCall``)."""
    n = next(_ids)
    return {"type": "computer_call", "id": f"cu_{n:04d}", "call_id": f"call_{n:04d}", "status": "completed",
            "actions": list(actions), "pending_safety_checks": safety or []}


def preview_call(action: dict[str, Any]) -> dict[str, Any]:
    """A ``computer_call`` of the ``computer-use-preview`` model: one ``action``."""
    n = next(_ids)
    return {"type": "computer_call", "id": f"cu_{n:04d}", "call_id": f"call_{n:04d}", "status": "completed",
            "action": action, "pending_safety_checks": []}


def say(text: str) -> dict[str, Any]:
    return {"type": "message", "id": f"msg_{next(_ids):04d}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def refuse(text: str) -> dict[str, Any]:
    return {"type": "message", "id": f"msg_{next(_ids):04d}", "role": "assistant", "status": "completed",
            "content": [{"type": "refusal", "refusal": text}]}


def reasoning() -> dict[str, Any]:
    return {"type": "reasoning", "id": f"rs_{next(_ids):04d}", "summary": []}


def response(*output: dict[str, Any], model: str = "gpt-5.4", input_tokens: int = 1500, cached_tokens: int = 0,
             output_tokens: int = 50, status: str = "completed", incomplete: str | None = None,
             validate: bool = True) -> dict[str, Any]:
    """A Responses API ``Response`` body, validated with the SDK's own model (``validate=False`` only
    for a reply from an API newer than the SDK, e.g. an action type it does not know yet)."""
    from openai.types.responses import Response

    body = {
        "id": f"resp_{next(_ids):04d}", "object": "response", "created_at": time.time(), "model": model,
        "status": status, "output": list(output), "parallel_tool_calls": True, "tool_choice": "auto",
        "tools": [{"type": "computer"}], "error": None,
        "incomplete_details": {"reason": incomplete} if incomplete else None, "truncation": "auto",
        "usage": {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": cached_tokens,
                                                                          "cache_write_tokens": 0},
                  "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": input_tokens + output_tokens},
    }
    if validate:
        Response.model_validate(body)  # the SDK's type is the contract; a wrong helper fails here, not in the agent
    return body


def ok(body: dict[str, Any]) -> Reply:
    return 200, {}, body


def api_error(status: int, message: str, kind: str = "invalid_request_error", headers: dict[str, str] | None = None,
              code: str | None = None) -> Reply:
    return status, headers or {}, {"error": {"message": message, "type": kind, "param": None, "code": code}}


def screenshot_size(url: str) -> tuple[int, int]:
    """The (width, height) of a ``data:image/png;base64,`` URL."""
    from PIL import Image

    prefix = "data:image/png;base64,"
    assert url.startswith(prefix), url[:40]
    with Image.open(io.BytesIO(base64.b64decode(url[len(prefix):]))) as image:
        return image.size


class FakeResponsesAPI(LoopbackAPI):
    """``POST /v1/responses`` on loopback, checking each request as the real API does before ``script``
    answers it. ``url`` is the base URL for ``OPENAI_BASE_URL`` (ending in ``/v1``)."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.given: dict[str, dict[str, Any]] = {}  # response id -> body, for previous_response_id
        self.turns: dict[str, int] = {}
        self.lock = threading.Lock()
        super().__init__(self._handle, "/v1/responses")

    def problems(self, request: dict[str, Any]) -> list[str]:
        """What the real API would refuse in ``request``."""
        problems = []
        if request.get("truncation") != "auto":
            problems.append(f"truncation is {request.get('truncation')!r}, expected 'auto'")
        previous = request.get("previous_response_id")
        items = request["input"] if isinstance(request.get("input"), list) else []
        outputs = {i["call_id"]: i for i in items if i.get("type") == "computer_call_output"}
        if previous is None:
            if outputs:
                problems.append("computer_call_output without previous_response_id")
            return problems
        with self.lock:
            earlier = self.given.get(previous)
        if earlier is None:
            return [f"Previous response with id '{previous}' not found."]
        for item in earlier["output"]:
            if item["type"] != "computer_call":
                continue
            answer = outputs.pop(item["call_id"], None)
            if answer is None:
                problems.append(f"No tool output found for computer call {item['call_id']}.")
                continue
            shot = answer.get("output") or {}
            image = str(shot.get("image_url", ""))
            if shot.get("type") != "computer_screenshot" or not image.startswith("data:image/"):
                problems.append(f"computer_call_output {item['call_id']} has no screenshot")
            acknowledged = [c["id"] for c in answer.get("acknowledged_safety_checks") or []]
            pending = [c["id"] for c in item["pending_safety_checks"]]
            if acknowledged != pending:
                problems.append(f"computer call {item['call_id']} has pending safety checks {pending}, "
                                f"acknowledged {acknowledged}")
        problems.extend(f"unknown call_id {call_id}" for call_id in outputs)
        return problems

    def _handle(self, request: dict[str, Any], headers: dict[str, str]) -> Reply:
        if not headers.get("authorization", "").startswith("Bearer "):
            return api_error(401, "You didn't provide an API key.", code="invalid_api_key")
        problems = self.problems(request)
        if problems:
            return api_error(400, "; ".join(problems))
        previous = request.get("previous_response_id")
        with self.lock:
            turn = self.turns.get(previous, -1) + 1 if previous else 0
        status, extra, body = self.script(request, turn)
        if status == 200:
            with self.lock:
                self.given[body["id"]] = body
                self.turns[body["id"]] = turn
        return status, extra, body


def mock_benchmark(request: dict[str, Any], turn: int) -> Reply:
    """Plays the mock benchmark's task: click Submit's centre in the screenshot's pixels, then DONE."""
    from pytest_agentbench.benches.mock.bench import ELEMENTS, SCREEN

    if turn == 0:
        width, height = screenshot_size(request["input"][0]["content"][1]["image_url"])
        left, top, right, bottom = next(e.box for e in ELEMENTS if e.name == "Submit")
        x, y = (left + right) / 2 * width / SCREEN[0], (top + bottom) / 2 * height / SCREEN[1]
        return ok(response(reasoning(), call({"type": "click", "button": "left", "x": round(x), "y": round(y)})))
    return ok(response(say("The form is submitted.\nDONE"), input_tokens=3000, output_tokens=20))


if __name__ == "__main__":
    with FakeResponsesAPI(mock_benchmark) as fake:
        print(f"OPENAI_BASE_URL={fake.url}", flush=True)
        threading.Event().wait()
