"""``--bench-agent http``: an agent served elsewhere, over a small JSON-over-HTTP protocol.

The agent process can be anything (another language, a GPU box, a model behind a gateway); this
client only moves observations out and actions back. The protocol (bodies documented in
``agents/schema/http_agent.schema.json``; an example server in ``conftest_examples/http_agent``):

* ``GET {url}/health`` once when the agent is created: any 2xx means ready; a JSON body may name
  the agent (``{"status": "ok", "name": "my-model"}``), and that name goes into the records.
  Anything else is a usage error before any task starts.
* ``POST {url}/reset`` with ``{"session", "task"}`` at the start of each episode. ``Agent.reset``
  has no task argument, so the reset is sent lazily, on the first ``act`` of the episode (a
  benchmark reset that fails therefore sends no /reset). A stateless server may answer 404/405.
* ``POST {url}/act`` with ``{"session", "task", "step", "observation", "history"[, "error"]}``,
  answered by ``{"action": {...}[, "usage": {...}]}``. ``usage`` feeds ``take_usage``, so budgets
  (``--bench-max-cost-usd``) and recorded costs work for remote model agents too.

Failures: connection errors, timeouts and 429/502/503/504 are retried with jittered exponential
backoff (``retries``/``backoff_seconds``/``jitter_seconds``), waiting longer when the server's
``Retry-After`` (seconds or an HTTP-date) asks to, up to 30 s or ``--bench-agent-timeout``
(:mod:`..infra.retry`); once retries run out, or on any other non-2xx status, ``act`` raises
:class:`HttpAgentError` (the episode records an agent error). A 2xx reply the client cannot
use (not JSON, no ``action``, an invalid action or usage) follows the bad-reply rule: the first is
recorded as a ``wait 0`` step and the next /act carries ``error`` explaining why; a second in a row
ends the episode with an ``error`` action whose ``raw`` holds the reply.
"""

from __future__ import annotations

import base64
import math
import ssl
import time
import urllib.request
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx
import tenacity
from pydantic import ValidationError

from pytest_agentbench.agent import Agent, Usage
from pytest_agentbench.errors import ConfigError
from pytest_agentbench.images import png_size
from pytest_agentbench.infra.retry import call_with_retries
from pytest_agentbench.model import Action
from pytest_agentbench.settings import settings_of
from pytest_agentbench.untrusted import loads

if TYPE_CHECKING:
    from pytest_agentbench.model import Observation, Task
    from pytest_agentbench.settings import Settings

DEFAULT_TIMEOUT = 60.0
#: Statuses that mean "try again shortly" (overloaded, restarting, behind a proxy that lost it).
RETRY_STATUSES = frozenset({429, 502, 503, 504})
#: Longest Retry-After we honour; a server asking for more gets this.
MAX_RETRY_AFTER = 30.0
#: The raw reply kept in a record is cut here so that a runaway server cannot bloat the run folder.
MAX_RAW_CHARS = 20_000
PROTOCOL_VERSION = "1"
USAGE_KEYS = ("input_tokens", "output_tokens", "cost_usd", "calls", "model")


class HttpAgentError(RuntimeError):
    """The agent server failed in a way retrying did not fix; the episode records an agent error."""

    error_type = "agent"


def check_url(url: str) -> str:
    """The base URL without a trailing slash. Raises ValueError unless it is an http(s) URL with a host."""
    text = url.strip()
    try:
        parsed = httpx.URL(text)
    except (httpx.InvalidURL, TypeError):
        raise ValueError(f"{url!r} is not a URL") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"{url!r} must be an http:// or https:// URL such as http://127.0.0.1:8765")
    if parsed.query or parsed.fragment:
        raise ValueError(f"{url!r} must be a base URL without ?query or #fragment")
    return text.rstrip("/")


def tls_for(url: str) -> ssl.SSLContext | bool:
    """What the client checks TLS certificates with (httpx's ``verify``). An http:// server is
    reached in the clear and redirects are not followed, so without a proxy in the environment no
    TLS happens: no CA bundle is loaded for it (20 to 80 ms of CPU in each process, each xdist
    worker's), and the context given trusts no certificate, so TLS would fail rather than go
    unchecked. https://, or a proxy in the environment: httpx's default checking."""
    if httpx.URL(url).scheme == "https" or urllib.request.getproxies():
        return True
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # CERT_REQUIRED, hostnames checked, no CA trusted


def task_json(task: Task) -> dict[str, Any]:
    """The task fields an agent needs; the benchmark's raw config stays on this side."""
    return {
        "task_id": task.task_id,
        "instruction": task.instruction,
        "domain": task.domain,
        "benchmark": task.benchmark,
        "time_limit_steps": task.time_limit_steps,
    }


def observation_json(observation: Observation) -> dict[str, Any]:
    """The observation as JSON: screenshot as base64 PNG (left out when there is none)."""
    body: dict[str, Any] = {
        "accessibility_tree": observation.accessibility_tree,
        "window_title": observation.window_title,
        "url": observation.url,
        "app_name": observation.app_name,
        "viewport": list(observation.viewport) if observation.viewport else None,
    }
    png = observation.screenshot
    if png:
        body["screenshot_png_base64"] = base64.b64encode(png).decode("ascii")
        size = png_size(png) or observation.viewport
        if size:
            body["screenshot_size"] = [int(size[0]), int(size[1])]
    return body


def _first_line(text: str, limit: int = 200) -> str:
    return " ".join(text[:limit].split())


class BadUsage(ValueError):
    """The reply's ``usage`` object cannot be used (the message names the key and the value)."""


def parse_usage(data: Any) -> Usage:
    """The reply's ``usage`` object. Unknown keys are errors: a misspelt ``cost`` would otherwise
    silently switch budgets off."""
    if not isinstance(data, dict):
        raise BadUsage(f"usage must be a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(USAGE_KEYS))
    if unknown:
        raise BadUsage(f"usage has unknown key(s) {', '.join(map(repr, unknown))}; known: {', '.join(USAGE_KEYS)}")
    usage = Usage(calls=1)
    for key in ("input_tokens", "output_tokens", "calls"):
        value = data.get(key, getattr(usage, key))
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise BadUsage(f"usage.{key} must be a whole number >= 0, got {value!r}")
        setattr(usage, key, value)
    cost = data.get("cost_usd", 0.0)
    if isinstance(cost, bool) or not isinstance(cost, (int, float)) or not 0 <= cost < math.inf:
        raise BadUsage(f"usage.cost_usd must be a number >= 0, got {cost!r}")
    usage.cost_usd = float(cost)
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        raise BadUsage(f"usage.model must be a string, got {model!r}")
    usage.model = model
    return usage


class _BadReply(Exception):
    """A 2xx reply that cannot be used; ``raw`` is what the server sent (JSON or text)."""

    def __init__(self, why: str, raw: Any) -> None:
        super().__init__(why)
        self.raw = raw


class HttpAgent(Agent):
    """Forwards each ``act`` to an agent server (see the module docstring for the protocol)."""

    name = "http"
    #: Extra attempts after a transient failure (connection error, timeout, 429/502/503/504).
    retries = 3
    #: The first wait between attempts, doubled after each; a longer Retry-After header beats it.
    backoff_seconds = 0.5
    #: Up to this many seconds are added at random to each backoff wait, so that many clients
    #: failing together do not retry in step.
    jitter_seconds = 0.5

    def __init__(self, url: str, *, timeout: float = DEFAULT_TIMEOUT,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.url = check_url(url)
        self.timeout = timeout
        #: Sent with every request, so a server shared by several processes (xdist workers) can
        #: keep one state per client.
        self.session = uuid.uuid4().hex
        self._client = httpx.Client(
            timeout=timeout, transport=transport, follow_redirects=False, verify=tls_for(self.url),
            headers={"user-agent": "pytest-agentbench", "agentbench-protocol": PROTOCOL_VERSION},
        )
        self._needs_reset = True
        self._task_id: str | None = None
        self._bad_replies = 0
        self._error: str | None = None
        self._usage: Usage | None = None
        #: Replaceable for tests: the waits between attempts go through it.
        self.sleep: Callable[[float], None] = time.sleep

    # -- lifecycle ---------------------------------------------------------------------------------
    def check_health(self) -> dict[str, Any]:
        """``GET /health`` once; a 2xx answer means ready. Adopts the ``name`` the server reports.
        Raises HttpAgentError naming the URL and what went wrong."""
        where = f"{self.url}/health"
        try:
            response = self._client.get(where)
        except httpx.TimeoutException:
            raise HttpAgentError(f"GET {where} timed out after {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise HttpAgentError(f"GET {where} failed: {type(exc).__name__}: {_first_line(str(exc))}") from None
        if not response.is_success:
            raise HttpAgentError(f"GET {where} answered {response.status_code}")
        try:
            info = response.json()
        except ValueError:
            info = None
        info = info if isinstance(info, dict) else {}
        name = info.get("name")
        if isinstance(name, str) and name.strip():
            self.name = name.strip()[:100]
        return info

    def reset(self) -> None:
        self._needs_reset = True
        self._bad_replies = 0
        self._error = None
        self._usage = None

    def close(self) -> None:
        self._client.close()

    def take_usage(self) -> Usage | None:
        usage, self._usage = self._usage, None
        return usage

    # -- acting ------------------------------------------------------------------------------------
    def act(self, observation: Observation, task: Task,
            history: list[tuple[Observation, Action]] | None = None) -> Action:
        history = history or []
        if self._needs_reset or self._task_id != task.task_id:
            self._send_reset(task)
        body: dict[str, Any] = {
            "session": self.session,
            "task": task_json(task),
            "step": len(history),
            "observation": observation_json(observation),
            "history": [a.model_dump(mode="json", exclude_none=True) for _, a in history],
        }
        if self._error is not None:
            body["error"] = self._error
        response = self._post("/act", body)
        try:
            action = self._parse(response)
        except _BadReply as bad:
            self._bad_replies += 1
            raw = {"unparsed_reply": bad.raw}
            if self._bad_replies >= 2:
                return Action(type="error", reason=f"unparseable reply twice: {bad}", raw=raw)
            self._error = (f"your previous reply could not be used: {bad}. Reply with a JSON object "
                           '{"action": {...}} whose action is a pytest_agentbench Action.')
            return Action(type="wait", seconds=0.0, reason=f"unparseable reply: {bad}", raw=raw)
        self._bad_replies = 0
        self._error = None
        return action

    def _send_reset(self, task: Task) -> None:
        self._post("/reset", {"session": self.session, "task": task_json(task)}, optional=True)
        self._needs_reset = False
        self._task_id = task.task_id

    def _parse(self, response: httpx.Response) -> Action:
        text = response.text
        try:
            data = loads(text)
        except ValueError:
            raise _BadReply(f"the reply is not JSON: {_first_line(text, 80)!r}", text[:MAX_RAW_CHARS]) from None
        raw = data if len(text) <= MAX_RAW_CHARS else text[:MAX_RAW_CHARS]
        if not isinstance(data, dict):
            raise _BadReply(f"the reply must be a JSON object, got {type(data).__name__}", raw)
        if data.get("usage") is not None:
            try:
                usage = parse_usage(data["usage"])
            except ValueError as exc:
                raise _BadReply(str(exc), raw) from None
            self._add_usage(usage)  # spent even when the action turns out unusable
        if "action" not in data:
            raise _BadReply('the reply has no "action"', raw)
        if not isinstance(data["action"], dict):
            raise _BadReply(f'"action" must be a JSON object, got {type(data["action"]).__name__}', raw)
        try:
            return Action.model_validate(data["action"])
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in ("action", *first["loc"]))
            raise _BadReply(f"invalid action: {where}: {first['msg']}", raw) from None

    def _add_usage(self, usage: Usage) -> None:
        if self._usage is None:
            self._usage = usage
            return
        self._usage.input_tokens += usage.input_tokens
        self._usage.output_tokens += usage.output_tokens
        self._usage.cost_usd += usage.cost_usd
        self._usage.calls += usage.calls
        self._usage.model = usage.model or self._usage.model

    def _post(self, path: str, body: dict[str, Any], *, optional: bool = False) -> httpx.Response:
        """POST with retries on transient failures. ``optional``: 404/405 count as success (a
        stateless server may leave /reset out). Raises HttpAgentError once retrying is over."""
        where = f"{self.url}{path}"
        attempts = self.retries + 1
        try:
            response = call_with_retries(
                lambda: self._client.post(where, json=body), attempts=attempts, retry=_TRANSIENT,
                backoff=self.backoff_seconds, jitter=self.jitter_seconds, cap=min(MAX_RETRY_AFTER, self.timeout),
                sleep=self.sleep,
            )
        except httpx.TimeoutException:
            raise HttpAgentError(f"POST {where} timed out after {self.timeout:g} s ({attempts} attempts); "
                                 "raise --bench-agent-timeout or make the agent server answer sooner") from None
        except httpx.TransportError as exc:
            raise HttpAgentError(f"POST {where} failed ({attempts} attempts): {type(exc).__name__}: "
                                 f"{_first_line(str(exc))}") from None
        if response.is_success or (optional and response.status_code in (404, 405)):
            return response
        tries = f" after {attempts} attempts" if response.status_code in RETRY_STATUSES else ""
        raise HttpAgentError(f"POST {where} answered {response.status_code}{tries}: "
                             f"{_first_line(response.text) or '(empty body)'}")


#: Worth another try: the connection failed or timed out, or the server said "not now".
_TRANSIENT = tenacity.retry_if_exception_type(httpx.TransportError) | tenacity.retry_if_result(
    lambda response: response.status_code in RETRY_STATUSES)


def make_agent(settings: Settings | None) -> HttpAgent:
    """Build the agent from ``--bench-agent-url``/``--bench-agent-timeout`` and check the server's health, so
    a server that is not running stops the run before any task starts."""
    settings = settings_of(settings)
    url = settings.get("agent_url") if settings is not None else None
    if not url:
        raise ConfigError("--bench-agent http needs --bench-agent-url URL (or ini agentbench_agent_url), "
                                "the agent server's base URL such as http://127.0.0.1:8765")
    try:
        url = check_url(url)
    except ValueError as exc:
        raise ConfigError(f"--bench-agent-url: {exc}") from None
    timeout = settings.get("agent_timeout") if settings is not None else None  # checked by the option table
    timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
    agent = HttpAgent(url, timeout=timeout)
    try:
        agent.check_health()
    except HttpAgentError as exc:
        agent.close()
        raise ConfigError(f"--bench-agent http: {exc}; start the agent server or fix --bench-agent-url") from None
    return agent
