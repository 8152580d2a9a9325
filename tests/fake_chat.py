"""A fake OpenAI-compatible chat endpoint (``POST /v1/chat/completions``) on loopback, as vLLM, SGLang,
Ollama or LM Studio serve a VLM, for the api-vlm tests. Replies are validated with the openai SDK's
own ``ChatCompletion`` model before they are sent; requests are recorded.

``play_mock(dialect)`` is a script that plays the mock benchmark's task in a dialect: it reads the
screenshot's size from the request, answers with a click on Submit in that dialect's coordinates,
then with the dialect's way of saying the task is done. Run as a script
(``python tests/fake_chat.py qwen3vl``) it serves that and prints the endpoint's URL, for trying
the agent offline."""

from __future__ import annotations

import base64
import io
import itertools
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from fake_anthropic import LoopbackAPI

_ids = itertools.count(1)

Reply = tuple[int, dict[str, str], dict[str, Any]]
Script = Callable[[dict[str, Any], dict[str, str]], Reply]


def completion(text: str, model: str = "Qwen/Qwen3-VL-8B-Instruct", prompt_tokens: int = 1200,
               completion_tokens: int = 40, cost: float | None = None) -> dict[str, Any]:
    """A chat completion body with one choice, validated with the SDK's ``ChatCompletion``; ``cost``
    is the charge some gateways (OpenRouter) add to ``usage``."""
    from openai.types.chat import ChatCompletion

    body = {"id": f"chatcmpl-{next(_ids)}", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}
    if cost is not None:
        body["usage"]["cost"] = cost
    ChatCompletion.model_validate(body)
    return body


def ok(text: str, **kwargs: Any) -> Reply:
    return 200, {}, completion(text, **kwargs)


def api_error(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    return status, headers or {}, {"error": {"message": message, "type": "server_error", "code": status}}


def images(request: dict[str, Any]) -> list[tuple[int, int]]:
    """The (width, height) of every image the request sends, in order."""
    from PIL import Image

    sizes = []
    for message in request["messages"]:
        for part in message["content"] if isinstance(message["content"], list) else []:
            if part.get("type") == "image_url":
                data = part["image_url"]["url"].split(",", 1)[1]
                with Image.open(io.BytesIO(base64.b64decode(data))) as image:
                    sizes.append(image.size)
    return sizes


def turn(request: dict[str, Any]) -> int:
    return sum(1 for m in request["messages"] if m["role"] == "assistant")


class FakeChatAPI(LoopbackAPI):
    """The endpoint; ``url`` is the base URL (``.../v1``) for ``--bench-agent-url``."""

    def __init__(self, script: Script | list[Reply]) -> None:
        if isinstance(script, list):
            replies = list(script)
            script = lambda request, headers: replies.pop(0)  # noqa: E731
        super().__init__(script, "/v1/chat/completions")


def play_mock(dialect: str) -> Script:
    """Click Submit on the mock benchmark in ``dialect``'s coordinates, then finish."""
    from pytest_agentbench.benches.mock.bench import ELEMENTS, SCREEN

    left, top, right, bottom = next(e.box for e in ELEMENTS if e.name == "Submit")
    fx, fy = (left + right) / 2 / SCREEN[0], (top + bottom) / 2 / SCREEN[1]

    def script(request: dict[str, Any], headers: dict[str, str]) -> Reply:
        width, height = images(request)[-1]
        if turn(request) == 0:
            if dialect == "qwen3vl":
                return ok('<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", '
                          f'"coordinate": [{round(fx * 1000)}, {round(fy * 1000)}]}}}}\n</tool_call>')
            if dialect == "uitars":
                return ok(f"Thought: Submit is there.\nAction: click(start_box='({round(fx * width)},"
                          f"{round(fy * height)})')")
            return ok(f'{{"type": "click", "x": {round(fx * width)}, "y": {round(fy * height)}}}')
        done = {"qwen3vl": '<tool_call>\n{"name": "computer_use", "arguments": {"action": "terminate", '
                           '"status": "success"}}\n</tool_call>',
                "uitars": "Thought: The form is sent.\nAction: finished(content='submitted')",
                "json": '{"type": "done"}'}
        return ok(done[dialect])

    return script


if __name__ == "__main__":
    with FakeChatAPI(play_mock(sys.argv[1] if len(sys.argv) > 1 else "qwen3vl")) as fake:
        print(f"--bench-agent-url {fake.url}", flush=True)
        threading.Event().wait()
