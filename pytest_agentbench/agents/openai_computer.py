"""``--bench-agent api-openai``: an OpenAI model driving the screen through the Responses API's computer tool.

The wire shapes are the ``openai`` SDK's own types (``openai.types.responses``): the tool is
``{"type": "computer"}`` (``ComputerToolParam``; no display size: coordinates are in the pixels of
the screenshots sent), or for the ``computer-use-preview`` models ``{"type": "computer_use_preview",
"display_width", "display_height", "environment"}`` (``ComputerUsePreviewToolParam``). A reply's
``output`` holds ``computer_call`` items (``ResponseComputerToolCall``) with a batch of ``actions``
(or one ``action`` from the preview model), ``message`` items with ``output_text`` or ``refusal``
parts, and reasoning items. The conversation is kept by the API (``previous_response_id``) with
``truncation="auto"``, so each request sends only the answer to the last reply: a
``computer_call_output`` per call (``ComputerCallOutput``) whose ``output`` is a
``computer_screenshot`` with the new screenshot as a ``data:`` URL.

Each ``act`` plays one action; the rest of a batch is played by the next ``act`` calls before the
model is asked again, and that request carries the screenshot taken after the whole batch.
A reply with no ``computer_call`` ends the episode: ``done``, or ``fail`` when its last line says
FAIL (or it calls the task infeasible / impossible), or ``fail`` with the text of a refusal.

Actions (``ComputerAction``) -> core actions: ``click`` with ``button`` left / right -> click /
right_click (``wheel``, ``back``, ``forward`` are not supported here); ``double_click`` ->
double_click; ``drag`` -> drag from the path's first to its last point; ``keypress`` -> key for one
key, hotkey for several (``CTRL``, ``ENTER``, ``ARROWLEFT`` ... mapped to the core's names);
``type`` -> type; ``scroll`` -> scroll by ``scroll_y`` (or ``scroll_x``) pixels, about 100 a wheel
notch; ``move``, ``screenshot`` -> wait 0 s (the next request carries a fresh screenshot);
``wait`` -> wait 2 s. Held ``keys`` are ignored and noted.

Safety checks: a ``computer_call`` with ``pending_safety_checks`` is played only when
``--bench-agent-acknowledge-safety-checks`` is given, and then the checks are sent back as
``acknowledged_safety_checks`` with the call's output. Without it the episode ends as an agent
error naming the checks: nobody watches a benchmark run to confirm them.

An unusable reply (an unknown action, a point outside the screenshot, an incomplete reply with no
call) is recorded as ``wait`` 0 s and the model is told in the next request; a second one in a row
ends the episode as an agent error. Rate limits (429), 408/409 and 5xx or connection errors are
retried through the project's retry policy (:mod:`..infra.retry`: exponential backoff with jitter,
``Retry-After`` / ``retry-after-ms`` honoured up to the timeout); the SDK's own retries are off so
there is one policy. The API key never appears in anything this module returns or raises.

Cost: each call's ``usage`` (``input_tokens`` include ``input_tokens_details.cached_tokens``) at
the list prices in :data:`PRICES`; a model without a price records its tokens at cost 0 with one
warning. The budget is checked before every call, as for ``api-claude``.
"""

from __future__ import annotations

import base64
import math
import os
import re
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

import tenacity

from pytest_agentbench import redact
from pytest_agentbench.agent import Usage
from pytest_agentbench.agents import replies
from pytest_agentbench.agents.claude import declared_size, key_name, resize_png
from pytest_agentbench.agents.sdk import SDKAgent, require_sdk
from pytest_agentbench.errors import ConfigError
from pytest_agentbench.images import png_size
from pytest_agentbench.infra.retry import call_with_retries
from pytest_agentbench.model import Action, Observation, Task
from pytest_agentbench.settings import settings_of
from pytest_agentbench.text import shorten

if TYPE_CHECKING:
    from pytest_agentbench.model import ActionType
    from pytest_agentbench.settings import Settings

DEFAULT_MODEL = "gpt-5.4"
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_OUTPUT_TOKENS = 4096
#: Pixels of one scroll-wheel notch: the core scrolls in notches, the computer tool in pixels.
SCROLL_PIXELS_PER_NOTCH = 100
#: What the ``wait`` action waits (the tool's action has no duration; OpenAI's guide waits about 2 s).
WAIT_SECONDS = 2.0
PRICES_SOURCE = "OpenAI list prices (developers.openai.com/api/docs/pricing), read 2026-12-04"


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input: float
    cached_input: float
    output: float


#: Model family (the id without a date suffix) -> list price.
PRICES: dict[str, Price] = {
    "gpt-5.4": Price(2.50, 0.25, 15.00),
    "gpt-5.4-mini": Price(0.75, 0.075, 4.50),
    "computer-use-preview": Price(3.00, 3.00, 12.00),
}

SYSTEM_PROMPT = """\
You are operating a computer to complete a task. You see the screen in screenshots and act with \
the computer tool; after your actions you get a new screenshot. Nobody will answer questions or \
confirm anything: work on your own.
When the task is complete, stop calling the tool and reply with a last line that is exactly DONE. \
If the task cannot be done in this environment (it is infeasible or impossible), stop calling the \
tool and reply with a last line that is exactly FAIL."""

#: The computer tool's key names (upper case, browser-style) that differ from the core's names.
_KEYS = {"arrowleft": "left", "arrowright": "right", "arrowup": "up", "arrowdown": "down", "cmd": "win",
         "meta": "win", "super": "win", "option": "alt", "return": "enter", "escape": "esc", "del": "delete"}
_RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
_DATED = re.compile(r"-(\d{4}-\d{2}-\d{2}|latest)$")

_warned: set[str] = set()


class OpenAIAPIError(Exception):
    """The Responses API failed after the retries; the message is one line, key-free."""

    error_type = "agent"


class _Unparseable(Exception):
    """An action the mapping cannot turn into a core action."""


def model_family(model: str) -> str:
    """``gpt-5.4-2026-03-05`` -> ``gpt-5.4``."""
    return _DATED.sub("", model.strip().lower())


def cost_usd(model: str, input_tokens: int, cached_tokens: int, output_tokens: int) -> float | None:
    """One call's cost; ``input_tokens`` include the ``cached_tokens``. None when there is no price."""
    price = PRICES.get(model_family(model))
    if price is None:
        return None
    uncached = max(0, input_tokens - cached_tokens)
    return (uncached * price.input + cached_tokens * price.cached_input + output_tokens * price.output) / 1_000_000


def is_preview(model: str) -> bool:
    """The ``computer-use-preview`` models take the preview tool; every other model the GA one."""
    return model_family(model).startswith("computer-use-preview")


def key_action(keys: Any) -> Action:
    """A ``key``/``hotkey`` action for a ``keypress``'s ``keys`` list."""
    if not isinstance(keys, list) or not keys or not all(isinstance(k, str) and k.strip() for k in keys):
        raise _Unparseable(f"keypress needs keys, a list of key names, got {keys!r}")
    # The tool names keys in upper case (``CTRL``, ``S``, ``ARROWLEFT``): letters are the plain keys.
    names = [_KEYS.get(k.strip().lower(), key_name(k.strip().lower())) for k in keys]
    return Action(type="key", key=names[0]) if len(names) == 1 else Action(type="hotkey", keys=names)


class OpenAIComputerAgent(SDKAgent):
    """An OpenAI model with the Responses API's computer tool. See the module docstring."""

    name = "api-openai"
    #: Extra attempts after a transient failure; the first wait doubles after each.
    retries = 4
    backoff_seconds = 0.5
    jitter_seconds = 0.5

    def __init__(self, *, api_key: str, model: str = DEFAULT_MODEL, timeout: float = DEFAULT_TIMEOUT,
                 base_url: str | None = None, acknowledge_safety_checks: bool = False,
                 environment: str = "linux", max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
                 http_client: Any = None) -> None:
        import openai

        self.model = model
        self.timeout = timeout
        self.acknowledge_safety_checks = acknowledge_safety_checks
        self.environment = environment
        self.max_output_tokens = max_output_tokens
        self.sleep = time.sleep
        self._api_key = api_key
        redact.register(api_key)  # kept out of every file the run writes, in pieces and encoded too
        self._client = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0,
                                     http_client=http_client)
        self._usage = Usage(model=model)
        self.reset()

    def __repr__(self) -> str:
        return f"OpenAIComputerAgent(model={self.model!r})"

    # -------------------------------------------------------------- lifecycle
    def reset(self) -> None:
        self._previous: str | None = None  # the last response's id: the API keeps the conversation
        self._calls: list[dict[str, Any]] = []  # computer_calls of the last reply, answered next time
        self._followup: str | None = None
        self._queue: list[Action] = []
        self._strikes = 0
        self._screen: tuple[int, int] = (1280, 800)
        self._display: tuple[int, int] = (1280, 800)

    # -------------------------------------------------------------- acting
    def act(self, observation: Observation, task: Task,
            history: list[tuple[Observation, Action]] | None = None) -> Action:
        if history is not None and not history and self._previous is not None:
            self.reset()
        if self._queue:
            return self._queue.pop(0)
        response = self._call(self._input(observation, task))
        self._previous = response.get("id")
        return self._scrubbed(self._interpret(response))

    def _input(self, observation: Observation, task: Task) -> list[dict[str, Any]]:
        image = self._image_url(observation)
        items: list[dict[str, Any]] = []
        if self._previous is None:
            task_text = f"Task: {task.instruction or task.task_id}"
            content: list[dict[str, Any]] = [{"type": "input_text", "text": task_text}]
            if image:
                content.append({"type": "input_image", "image_url": image, "detail": "high"})
            return [{"role": "user", "content": content}]
        for call in self._calls:
            item: dict[str, Any] = {"type": "computer_call_output", "call_id": call["call_id"],
                                    "output": {"type": "computer_screenshot", "image_url": image or ""}}
            if call.get("pending_safety_checks"):
                item["acknowledged_safety_checks"] = call["pending_safety_checks"]
            items.append(item)
        if self._followup is not None or not items:
            text = self._followup or "Here is the current screen."
            content = [{"type": "input_text", "text": text}]
            if image:
                content.append({"type": "input_image", "image_url": image, "detail": "high"})
            items.append({"role": "user", "content": content})
        self._calls, self._followup = [], None
        return items

    def _image_url(self, observation: Observation) -> str | None:
        data = observation.screenshot
        size = png_size(data) if data else None
        if data is None or size is None:
            return None
        self._screen = size
        self._display = declared_size(*size)
        png = resize_png(data, self._display)
        return "data:image/png;base64," + base64.b64encode(png).decode("ascii")

    def _tool(self) -> dict[str, Any]:
        if is_preview(self.model):
            width, height = self._display
            return {"type": "computer_use_preview", "display_width": width, "display_height": height,
                    "environment": self.environment}
        return {"type": "computer"}

    def _call(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        """One Responses API call through :func:`request_json`; the reply's JSON as sent."""
        if self.budget is not None:
            self.budget.check(pending=self._usage.cost_usd)
        extra: dict[str, Any] = {"previous_response_id": self._previous} if self._previous else {}

        def send() -> Any:
            return self._client.responses.with_raw_response.create(
                model=self.model, instructions=SYSTEM_PROMPT, input=cast("Any", items),
                tools=cast("Any", [self._tool()]), truncation="auto", max_output_tokens=self.max_output_tokens,
                **extra)

        response = request_json(self, send, api="OpenAI API", error=OpenAIAPIError)
        if not isinstance(response, dict) or not isinstance(response.get("output"), list):
            raise OpenAIAPIError("OpenAI API answered with no output list: not a Responses API reply")
        self._count(response)
        return response

    def _count(self, response: dict[str, Any]) -> None:
        usage = response.get("usage")
        if not isinstance(usage, dict):
            return
        tokens_in, tokens_out = _count_of(usage.get("input_tokens")), _count_of(usage.get("output_tokens"))
        details = usage.get("input_tokens_details")
        cached = _count_of(details.get("cached_tokens")) if isinstance(details, dict) else 0
        cost = cost_usd(self.model, tokens_in, cached, tokens_out)
        if cost is None:
            if f"price:{self.model}" not in _warned:
                _warned.add(f"price:{self.model}")
                warnings.warn(f"api-openai: no list price for model {self.model!r}; its steps record tokens with "
                              "cost 0", UserWarning, stacklevel=4)
            cost = 0.0
        self._usage.input_tokens += tokens_in
        self._usage.output_tokens += tokens_out
        self._usage.cost_usd += cost
        self._usage.calls += 1

    # -------------------------------------------------------------- reading the reply
    def _interpret(self, response: dict[str, Any]) -> Action:
        output = [item for item in response["output"] if isinstance(item, dict)]
        texts, refusals = [], []
        for item in output:
            if item.get("type") == "message":
                for part in item.get("content") or []:
                    if not isinstance(part, dict):
                        continue
                    if part.get("type") == "output_text":
                        texts.append(part.get("text") or "")
                    elif part.get("type") == "refusal":
                        refusals.append(part.get("refusal") or "")
        text = "\n".join(texts).strip()
        calls = [item for item in output if item.get("type") == "computer_call"]
        raw_reply = {"response_id": response.get("id"), "status": response.get("status")}
        if refusals:
            return Action(type="fail", reason="\n".join(refusals).strip() or "the model refused", raw=raw_reply)
        if not calls:
            if response.get("status") == "incomplete":
                details = response.get("incomplete_details")
                reason = details.get("reason") if isinstance(details, dict) else None
                why = f"the reply is incomplete ({reason or 'no reason given'}) with no action"
                self._followup = (f"Your last reply could not be used: {why}. Act with the computer tool, or reply "
                                  "DONE or FAIL.")
                return self._strike(why, output)
            self._strikes = 0
            return Action(type=replies.final_word(text), reason=text or None, raw=raw_reply)
        pending = [check for call in calls for check in call.get("pending_safety_checks") or []
                   if isinstance(check, dict)]
        if pending and not self.acknowledge_safety_checks:
            named = "; ".join(f"{c.get('code') or c.get('id')}: {c.get('message') or ''}".strip() for c in pending)
            return Action(type="error", reason=f"the model asked to confirm safety checks ({named}); pass "
                                               "--bench-agent-acknowledge-safety-checks to acknowledge them",
                          raw={"pending_safety_checks": pending})
        self._calls = calls
        actions: list[Action] = []
        try:
            for call in calls:
                batch = call.get("actions") or ([call["action"]] if call.get("action") else [])
                if not batch:
                    raise _Unparseable(f"computer_call {call.get('call_id')} has no action")
                actions.extend(self._map(action, call) for action in batch)
        except _Unparseable as exc:
            self._followup = f"Your last actions could not be used: {exc}. None of them ran."
            return self._strike(str(exc), output)
        self._strikes = 0
        first, *rest = actions
        first = replies.with_text(first, text)
        if pending:
            first = first.model_copy(update={"reason": f"{first.reason or ''}\nacknowledged safety checks: "
                                                       f"{[c.get('code') for c in pending]}".strip()})
        self._queue = rest
        return first

    def _strike(self, why: str, output: list[dict[str, Any]]) -> Action:
        self._strikes += 1
        return replies.unusable(self._strikes, why, output)

    def _point(self, x: Any, y: Any, what: str) -> tuple[int, int]:
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in (x, y)):
            raise _Unparseable(f"{what} needs numbers x and y, got {x!r}, {y!r}")
        width, height = self._display
        if not (0 <= x <= width and 0 <= y <= height):
            raise _Unparseable(f"{what} at ({x}, {y}) is outside the {width}x{height} screenshot")
        real_w, real_h = self._screen
        return min(round(x * real_w / width), real_w - 1), min(round(y * real_h / height), real_h - 1)

    def _map(self, action: Any, call: dict[str, Any]) -> Action:
        if not isinstance(action, dict) or not isinstance(action.get("type"), str):
            raise _Unparseable(f"an action must be an object with a type, got {action!r}")
        kind = action["type"]
        raw = {"computer_call": call.get("call_id"), "action": action, "display": list(self._display),
               "screen": list(self._screen)}
        note = f"held keys {action['keys']!r} ignored" if action.get("keys") and kind != "keypress" else None
        if kind in ("click", "double_click"):
            x, y = self._point(action.get("x"), action.get("y"), kind)
            button = action.get("button", "left")
            core: ActionType
            if kind == "double_click":
                core = "double_click"
            elif button in ("left", "right"):
                core = "click" if button == "left" else "right_click"
            else:
                raise _Unparseable(f"click with button {button!r} is not supported here (left or right)")
            return Action(type=core, x=x, y=y, unit="px", reason=note, raw=raw)
        if kind == "drag":
            path = action.get("path")
            if not isinstance(path, list) or len(path) < 2 or not all(isinstance(p, dict) for p in path):
                raise _Unparseable(f"drag needs a path of at least two points, got {path!r}")
            x, y = self._point(path[0].get("x"), path[0].get("y"), "drag start")
            ex, ey = self._point(path[-1].get("x"), path[-1].get("y"), "drag end")
            return Action(type="drag", x=x, y=y, end_x=ex, end_y=ey, unit="px", reason=note, raw=raw)
        if kind == "keypress":
            return key_action(action.get("keys")).model_copy(update={"raw": raw})
        if kind == "type":
            if not isinstance(action.get("text"), str):
                raise _Unparseable("type needs text")
            return Action(type="type", text=action["text"], raw=raw)
        if kind == "scroll":
            x, y = self._point(action.get("x"), action.get("y"), "scroll")
            dx, dy = action.get("scroll_x", 0), action.get("scroll_y", 0)
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in (dx, dy)):
                raise _Unparseable(f"scroll needs numbers scroll_x and scroll_y, got {dx!r}, {dy!r}")
            direction: Literal["up", "down", "left", "right"]
            if abs(dy) >= abs(dx):
                direction, pixels = ("down" if dy > 0 else "up"), abs(dy)
            else:
                direction, pixels = ("right" if dx > 0 else "left"), abs(dx)
            notches = max(1, round(pixels / SCROLL_PIXELS_PER_NOTCH)) if pixels else 0
            return Action(type="scroll", x=x, y=y, unit="px", scroll_direction=direction, scroll_amount=notches,
                          reason=note, raw=raw)
        if kind == "move":
            x, y = self._point(action.get("x"), action.get("y"), "move")
            return Action(type="wait", seconds=0.0, reason=f"move to ({x}, {y}): no pointer-only action here",
                          raw=raw)
        if kind == "screenshot":
            return Action(type="wait", seconds=0.0, reason="screenshot: the next request carries it", raw=raw)
        if kind == "wait":
            return Action(type="wait", seconds=WAIT_SECONDS, raw=raw)
        raise _Unparseable(f"unknown computer action {kind!r}")

    # -------------------------------------------------------------- secrets
    def _scrub(self, text: str) -> str:
        """``text`` without the key: whole, in pieces, reversed or base64-encoded (``redact``),
        nor anything shaped like an OpenAI key."""
        return re.sub(r"sk-[A-Za-z0-9_\-]{8,}", redact.MARK, redact.redact(text))

    def _scrubbed(self, action: Action) -> Action:
        dumped = action.model_dump_json()
        clean = self._scrub(dumped)
        return action if clean == dumped else Action.model_validate_json(clean)


def _count_of(value: Any) -> int:
    """A token count from the reply: a whole number >= 0, anything else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def request_json(agent: Any, send: Callable[[], Any], *, api: str, error: type[Exception]) -> Any:
    """``send()`` (an SDK ``with_raw_response`` call) through the retry policy with ``agent``'s
    ``retries``, ``backoff_seconds``, ``jitter_seconds``, ``timeout`` (the Retry-After cap) and
    ``sleep``; the reply's JSON as sent. Every failure raises ``error`` with one key-free line
    (``agent._scrub``) naming ``api``; the wire JSON is read rather than the SDK's models, so an item
    newer than the installed SDK reaches the caller's checks instead of a serializer warning."""
    import openai

    attempts = agent.retries + 1
    try:
        raw = call_with_retries(send, attempts=attempts, retry=_TRANSIENT, backoff=agent.backoff_seconds,
                                jitter=agent.jitter_seconds, cap=agent.timeout, sleep=agent.sleep)
    except openai.APIStatusError as exc:
        raise error(agent._scrub(status_line(exc, attempts, api))) from None
    except openai.APITimeoutError:
        raise error(f"{api} request timed out after {agent.timeout:g}s ({attempts} attempts)") from None
    except openai.APIConnectionError as exc:
        raise error(agent._scrub(f"{api} unreachable ({attempts} attempts): {shorten(exc, 300, within=False)}")) \
            from None
    try:
        return raw.http_response.json()
    except ValueError:
        raise error(f"{api} answered HTTP {raw.http_response.status_code} with a body that is not JSON") from None


def retryable(exc: BaseException) -> bool:
    """Whether an openai SDK error is worth another try (also for ``api-vlm``)."""
    import openai

    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in _RETRY_STATUSES
    return isinstance(exc, openai.APIConnectionError)  # timeouts are connection errors in the SDK


_TRANSIENT = tenacity.retry_if_exception(retryable)


def status_line(exc: Any, attempts: int, api: str = "OpenAI API") -> str:
    """One line for an openai SDK status error: the status, the attempts when it was retried, the
    error's type and message."""
    body = getattr(exc, "body", None)
    detail = ""
    if isinstance(body, dict):
        inner = body.get("error")
        error = inner if isinstance(inner, dict) else body
        detail = ": ".join(str(p) for p in (error.get("type") or error.get("code"), error.get("message")) if p)
    status = getattr(exc, "status_code", "?")
    tries = f" (after {attempts} attempts)" if status in _RETRY_STATUSES else ""
    return shorten(f"{api} HTTP {status}{tries}: {detail or type(exc).__name__}", 300, within=False)


def make_agent(settings: Settings | None) -> OpenAIComputerAgent:
    """``--bench-agent api-openai``: needs the ``openai`` extra and ``OPENAI_API_KEY``; the SDK reads
    ``OPENAI_BASE_URL`` for another endpoint."""
    settings = settings_of(settings)
    require_sdk("openai", "api-openai", "openai")
    model = (settings.get("agent_model") if settings is not None else None) or DEFAULT_MODEL
    if any(c.isspace() for c in model) or model.startswith("claude"):
        raise ConfigError(f"--bench-agent-model must be an OpenAI model id such as {DEFAULT_MODEL} for "
                          f"--bench-agent api-openai, got {model!r}")
    timeout = settings.get("agent_timeout") if settings is not None else None
    timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
    acknowledge = bool(settings.get("agent_acknowledge_safety_checks")) if settings is not None else False
    key = os.environ.get("OPENAI_API_KEY", "").strip()
    if not key:
        raise ConfigError("--bench-agent api-openai needs OPENAI_API_KEY: set it to an OpenAI API key "
                          "(the SDK also reads OPENAI_BASE_URL for another endpoint)")
    return OpenAIComputerAgent(api_key=key, model=model, timeout=timeout, acknowledge_safety_checks=acknowledge)
