"""``--bench-agent api-claude``: Claude driving the screen through Anthropic's computer-use tool.

Why one module of over 500 lines: the tool-version table, request building, action mapping, retries
and budget are parts of one conversation's state.

Each ``act`` sends the newest screenshot to the Messages API (beta, with the computer-use tool) and
turns Claude's ``tool_use`` into one core :class:`~pytest_agentbench.model.Action`. The answer to
that tool call (a ``tool_result`` carrying the next screenshot) goes out with the next ``act``.
When Claude ends its turn without a tool call, the episode ends: ``done``, or ``fail`` when its
last words say FAIL / infeasible / impossible.

Tool version by model family (Anthropic's computer-use tool page, read 2026-11-30). Newer tool
versions are not promised to work with older models, so the version follows the model:

=======================================================  =========================  =======================
model family (``--bench-agent-model``, date suffix ignored)     tool type                  beta flag
=======================================================  =========================  =======================
claude-sonnet-5-5, claude-opus-5-5                        computer_toolset_20260801  none (not a beta)
claude-opus-4-7, claude-opus-4-6, claude-sonnet-4-6,      computer_20251124          computer-use-2025-11-24
claude-opus-4-5
claude-sonnet-4-5, claude-haiku-4-5, claude-opus-4-1,     computer_20250124          computer-use-2025-01-24
claude-opus-4(-0), claude-sonnet-4(-0), claude-3-7-sonnet
anything else                                             computer_20251124          computer-use-2025-11-24
                                                          (the newest single tool; a warning says so)
=======================================================  =========================  =======================

The toolset (``computer_toolset_20260801``, the anthropic SDK's ``BetaComputerToolset20260801Param``
and ``BetaComputerToolUseBlock`` types) is one ``tools[]`` entry without a name or display size:
every action is a member tool of its own, so a ``tool_use`` carries the member as its ``name``
(``left_click``), ``toolset_name: "computer"`` and the member's parameters as ``input`` (no
``action`` field); its ``tool_result`` echoes ``toolset_name``. Coordinates are in the pixels of
the screenshots sent, which are scaled as below. The members this environment cannot perform
(``middle_click``, ``hold_key``, ``zoom``) are withheld from the model through the entry's
``configs`` (``{"enabled": false}``); ``key`` takes a ``repeat`` count (each press is one action).
Otherwise the members map exactly as the single tool's actions below.

The screen: the tool declares a display no larger than 1280 x 800 (long x short edge, Anthropic's
recommendation; the aspect ratio is kept), the screenshot is resized with pillow to exactly that,
and Claude's coordinates are scaled back to the real screen (``unit="px"``).

Computer-use actions -> core actions:

* ``left_click`` -> click; ``double_click`` -> double_click; ``right_click`` -> right_click;
  ``triple_click`` -> double_click (the core has no triple click; a double click selects the word
  rather than the line). A click without ``coordinate`` clicks where the last ``mouse_move`` went.
  Held modifier keys (the ``text`` of a click or scroll) are ignored and noted in the reason.
* ``left_click_drag`` (``start_coordinate`` -> ``coordinate``) -> drag; ``left_mouse_down`` then
  ``left_mouse_up`` -> drag (or click when the pointer did not move).
* ``type`` -> type; ``key`` -> key for one key, hotkey for a ``+`` combination, with xdotool names
  mapped to the pyautogui names the core uses (``Return`` -> enter, ``super`` -> win, ...).
* ``scroll`` -> scroll; ``wait`` -> wait (at most 60 s).
* ``mouse_move``, ``screenshot``, ``cursor_position``: no core action moves the pointer without a
  click or only looks, so they are recorded as ``wait`` 0 s with the reason; the pointer position
  is remembered, and the next ``tool_result`` carries a fresh screenshot (every one does).
* ``middle_click``, ``hold_key``, ``zoom``: not supported: ``wait`` 0 s and an error
  ``tool_result`` telling Claude so (not counted as an unparseable reply).
* An unknown action, a missing or bad parameter, another tool name, or a reply cut off without a
  tool call is unparseable: the first one is recorded as ``wait`` 0 s and Claude gets the message
  in an ``is_error`` tool_result; a second one in a row ends the episode as an agent error.

The conversation is kept per episode: all text, but only the newest ``keep_images`` screenshots
(older ones become a short text placeholder); and when the estimated history (image tokens
``w*h/750``, text about chars/4, see :mod:`.prices`) exceeds ``history_tokens``, the oldest
assistant/user turn pairs after the task message are dropped, so every ``tool_use`` keeps its
``tool_result``.

Rate limits (429), overload (529) and other 5xx / connection errors are retried by the SDK
(``max_retries``, honouring ``retry-after``/``retry-after-ms``); after that the act raises
:class:`ClaudeAPIError` with a one-line reason. The API key never appears in anything this module
returns or raises.
"""

from __future__ import annotations

import base64
import io
import json
import math
import os
import re
import warnings
from typing import TYPE_CHECKING, Any, cast

from pytest_agentbench import redact
from pytest_agentbench.agent import StepEstimate, Usage
from pytest_agentbench.agents import prices, replies
from pytest_agentbench.agents.sdk import SDKAgent, require_sdk
from pytest_agentbench.errors import ConfigError
from pytest_agentbench.images import png_size
from pytest_agentbench.model import Action, Observation, Task
from pytest_agentbench.settings import settings_of
from pytest_agentbench.text import shorten

if TYPE_CHECKING:
    from anthropic.types.beta import BetaMessageParam, BetaToolUnionParam

    from pytest_agentbench.model import ActionType
    from pytest_agentbench.settings import Settings

DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_RETRIES = 4
DEFAULT_KEEP_IMAGES = 3
DEFAULT_HISTORY_TOKENS = 100_000
DEFAULT_MAX_TOKENS = 4096
#: Anthropic's recommended ceiling for computer-use screenshots (WXGA): long edge x short edge.
MAX_LONG_EDGE, MAX_SHORT_EDGE = 1280, 800
#: ``--bench-dry-run``'s per-step assumption besides the screenshot (the reference tool's numbers).
ESTIMATE_TEXT_TOKENS_IN, ESTIMATE_TOKENS_OUT = 500, 300

TOOL_NEW = ("computer_20251124", "computer-use-2025-11-24")
TOOL_2025_01 = ("computer_20250124", "computer-use-2025-01-24")
#: Model family -> (tool type, beta flag); see the table in the module docstring.
TOOL_VERSIONS: dict[str, tuple[str, str]] = {
    **dict.fromkeys(("claude-opus-4-7", "claude-opus-4-6", "claude-sonnet-4-6", "claude-opus-4-5"), TOOL_NEW),
    **dict.fromkeys((
        "claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1", "claude-opus-4", "claude-opus-4-0",
        "claude-sonnet-4", "claude-sonnet-4-0", "claude-3-7-sonnet"), TOOL_2025_01),
}
#: Families whose API accepts only the ``computer_toolset_20260801`` toolset (a different protocol).
TOOLSET_ONLY = frozenset({"claude-sonnet-5-5", "claude-opus-5-5"})
TOOLSET = "computer_toolset_20260801"
#: The toolset's family name: what its members' ``tool_use`` and ``tool_result`` blocks carry as ``toolset_name``.
TOOLSET_FAMILY = "computer"
#: Members withheld from the model: valid actions this environment has no equivalent for.
TOOLSET_DISABLED = ("middle_click", "hold_key", "zoom")
#: The most presses one ``key`` call with ``repeat`` becomes.
MAX_KEY_REPEAT = 50

SYSTEM_PROMPT = """\
You are operating a computer to complete a task. You see the screen in screenshots and act with \
the computer tool(s), one action per call; after each action you get a new screenshot. Give \
coordinates in the pixels of the screenshots you receive. Keys use xdotool names, e.g. Return, \
Escape, ctrl+s, super+r. Nobody will answer questions: work on your own.
When the task is complete, stop calling tools and end your reply with a last line that is exactly \
DONE. If the task cannot be done in this environment (it is infeasible or impossible), stop calling \
tools and end your reply with a last line that is exactly FAIL."""

IMAGE_PLACEHOLDER = "[an earlier screenshot, omitted to save tokens]"
_ERROR_HINT = ("Use the computer tool with one of its documented actions, or stop calling tools and end your "
               "reply with DONE or FAIL.")

_warned: set[str] = set()


class ClaudeAPIError(Exception):
    """The Messages API failed after the SDK's retries; the message is one line, key-free."""

    error_type = "agent"


class _Unparseable(Exception):
    """A tool call (or reply) the mapping cannot turn into an action."""


class _Unsupported(Exception):
    """A valid computer-use action with no equivalent here."""


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, UserWarning, stacklevel=3)


def tool_version(model: str) -> tuple[str, str | None, str | None]:
    """(tool type, beta flag or None, note) for ``model``; the note says why when it fell back."""
    family = prices.model_family(model)
    if family in TOOLSET_ONLY:
        return TOOLSET, None, None
    if family in TOOL_VERSIONS:
        return (*TOOL_VERSIONS[family], None)
    return (*TOOL_NEW, (f"api-claude: model {model!r} is not in the computer-use tool table; "
                        f"using the newest tool {TOOL_NEW[0]} with beta {TOOL_NEW[1]}"))


def declared_size(width: int, height: int) -> tuple[int, int]:
    """The display size to declare for a ``width`` x ``height`` screen: scaled down, aspect ratio
    kept, so the long edge is at most 1280 and the short edge at most 800."""
    if width <= 0 or height <= 0:
        raise ValueError(f"screen size must be positive, got {width}x{height}")
    limit_w, limit_h = (MAX_LONG_EDGE, MAX_SHORT_EDGE) if width >= height else (MAX_SHORT_EDGE, MAX_LONG_EDGE)
    factor = min(1.0, limit_w / width, limit_h / height)
    return max(1, math.floor(width * factor + 1e-9)), max(1, math.floor(height * factor + 1e-9))


_last_resize: tuple[bytes, tuple[int, int], bytes] | None = None


def resize_png(data: bytes, size: tuple[int, int]) -> bytes:
    """``data`` re-encoded at exactly ``size`` (unchanged when it already is that size). The last
    result is kept: a screen that did not change (after a wait or a screenshot action) is not
    resized again."""
    global _last_resize
    if png_size(data) == size:
        return data
    last = _last_resize
    if last is not None and last[1] == size and last[0] == data:
        return last[2]
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        resized = image.convert("RGB").resize(size, Image.Resampling.LANCZOS)
    out = io.BytesIO()
    resized.save(out, format="PNG", compress_level=6)
    _last_resize = (data, size, out.getvalue())
    return _last_resize[2]


def step_estimate(model: str, screen: tuple[int, int]) -> StepEstimate:
    """One step's expected cost for ``--bench-dry-run``: the screenshot at its declared size
    (``w*h/750`` tokens) plus 500 text tokens in and 300 out (the reference tool's assumption),
    at the model's list price (0 when it has none)."""
    width, height = declared_size(*screen)
    tokens_in = prices.image_tokens(width, height) + ESTIMATE_TEXT_TOKENS_IN
    cost = prices.cost_usd(model, tokens_in, ESTIMATE_TOKENS_OUT)
    how = (f"screenshot sent at {width}x{height} = {prices.image_tokens(width, height)} tokens (w*h/750) "
           f"+ {ESTIMATE_TEXT_TOKENS_IN} text tokens in, {ESTIMATE_TOKENS_OUT} out")
    how += f"; {prices.PRICES_SOURCE}" if cost is not None else f"; no list price for {model}: cost 0"
    return StepEstimate(cost_usd=cost or 0.0, input_tokens=tokens_in, output_tokens=ESTIMATE_TOKENS_OUT,
                        model=model, how=how)


def estimate_for(settings: Settings | None, screen: tuple[int, int]) -> StepEstimate:
    """``--bench-dry-run``'s estimator for api-claude: the ``--bench-agent-model`` (or default) model, with no
    API key and no SDK needed."""
    settings = settings_of(settings)
    model = (settings.get("agent_model") if settings is not None else None) or DEFAULT_MODEL
    return step_estimate(model, screen)


# ---------------------------------------------------------------------------------- keys
_KEY_NAMES = {
    "return": "enter", "enter": "enter", "kp_enter": "enter", "escape": "esc", "esc": "esc",
    "backspace": "backspace", "tab": "tab", "iso_left_tab": "tab", "space": "space", "delete": "delete",
    "kp_delete": "delete", "insert": "insert", "home": "home", "end": "end", "page_up": "pageup",
    "prior": "pageup", "pageup": "pageup", "page_down": "pagedown", "next": "pagedown", "pagedown": "pagedown",
    "up": "up", "down": "down", "left": "left", "right": "right",
    "ctrl": "ctrl", "control": "ctrl", "control_l": "ctrl", "control_r": "ctrl",
    "alt": "alt", "alt_l": "alt", "alt_r": "alt", "shift": "shift", "shift_l": "shift", "shift_r": "shift",
    "super": "win", "super_l": "win", "super_r": "win", "meta": "win", "meta_l": "win", "meta_r": "win",
    "win": "win", "windows": "win", "cmd": "win", "command": "win",
    "caps_lock": "capslock", "num_lock": "numlock", "scroll_lock": "scrolllock", "print": "printscreen",
    "menu": "apps", "pause": "pause",
    "minus": "-", "plus": "+", "equal": "=", "comma": ",", "period": ".", "slash": "/", "backslash": "\\",
    "semicolon": ";", "apostrophe": "'", "quotedbl": '"', "grave": "`", "bracketleft": "[",
    "bracketright": "]", "asterisk": "*", "underscore": "_", "colon": ":", "question": "?",
}


def key_name(name: str) -> str:
    """The pyautogui-style name for an xdotool key name (``Return`` -> ``enter``, ``super`` -> ``win``)."""
    if len(name) == 1:
        return name
    lower = name.lower()
    if lower in _KEY_NAMES:
        return _KEY_NAMES[lower]
    if re.fullmatch(r"f\d{1,2}", lower):
        return lower
    match = re.fullmatch(r"kp_(\d)", lower)
    if match:
        return f"num{match.group(1)}"
    return lower


def key_action(text: Any) -> Action:
    """A ``key``/``hotkey`` action for xdotool key syntax: one key or a ``+`` combination."""
    if not isinstance(text, str) or not text.strip():
        raise _Unparseable("key needs text naming a key or combination, e.g. 'Return' or 'ctrl+s'")
    text = text.strip()
    if text == "+":
        return Action(type="key", key="+")
    if any(c.isspace() for c in text):
        raise _Unparseable(f"key {text!r}: send one key or one combination per call (no space-separated sequences)")
    parts = text.split("+")
    if any(not p for p in parts):
        raise _Unparseable(f"key {text!r} is not a key combination such as ctrl+s")
    names = [key_name(p) for p in parts]
    if len(names) == 1:
        return Action(type="key", key=names[0])
    return Action(type="hotkey", keys=names)


# ---------------------------------------------------------------------------------- the agent
class ClaudeAgent(SDKAgent):
    """Claude with the computer-use tool. See the module docstring for the mapping and rules."""

    name = "api-claude"

    def __init__(
        self,
        *,
        api_key: str,
        model: str = DEFAULT_MODEL,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        keep_images: int = DEFAULT_KEEP_IMAGES,
        history_tokens: int = DEFAULT_HISTORY_TOKENS,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        base_url: str | None = None,
        http_client: Any = None,
    ) -> None:
        import anthropic

        if keep_images < 1:
            raise ValueError(f"keep_images must be >= 1, got {keep_images}")
        self.model = model
        self.tool_type, self.beta, note = tool_version(model)
        self.toolset = self.tool_type == TOOLSET
        if note:
            _warn_once(f"tool:{model}", note)
        self.timeout = timeout
        self.keep_images = keep_images
        self.history_tokens = history_tokens
        self.max_tokens = max_tokens
        self._api_key = api_key
        redact.register(api_key)  # kept out of every file the run writes, in pieces and encoded too
        self._client = anthropic.Anthropic(api_key=api_key, base_url=base_url, timeout=timeout,
                                           max_retries=max_retries, http_client=http_client)
        self._usage = Usage(model=model)
        self.reset()

    def __repr__(self) -> str:
        return f"ClaudeAgent(model={self.model!r}, tool={self.tool_type!r})"

    # -------------------------------------------------------------- lifecycle
    def reset(self) -> None:
        self._messages: list[dict[str, Any]] = []
        self._results: list[dict[str, Any]] = []  # answers to the last reply's tool calls
        self._followup: str | None = None  # text for the next user message (reply without a tool call)
        self._queue: list[Action] = []  # further actions of a reply with several tool calls
        self._strikes = 0
        self._dropped_turns = 0
        self._cursor: tuple[float, float] | None = None  # in declared-display pixels
        self._mouse_down: tuple[float, float] | None = None
        self._screen: tuple[int, int] = (MAX_LONG_EDGE, MAX_SHORT_EDGE)
        self._display: tuple[int, int] = (MAX_LONG_EDGE, MAX_SHORT_EDGE)

    def estimate_step(self, screen: tuple[int, int]) -> StepEstimate:
        return step_estimate(self.model, screen)

    # -------------------------------------------------------------- acting
    def act(self, observation: Observation, task: Task,
            history: list[tuple[Observation, Action]] | None = None) -> Action:
        if history is not None and not history and self._messages:
            self.reset()  # a new episode that nobody reset() for
        if self._queue:
            return self._queue.pop(0)
        self._messages.append({"role": "user", "content": self._user_content(observation, task)})
        self._results, self._followup = [], None
        self._trim_history()
        response = self._call()
        content = self._assistant_content(response)
        self._messages.append({"role": "assistant", "content": content})
        return self._redacted(self._interpret(response, content))

    def _user_content(self, observation: Observation, task: Task) -> list[dict[str, Any]]:
        image = self._image_block(observation)
        if not self._messages:
            first: list[dict[str, Any]] = [{"type": "text", "text": f"Task: {task.instruction or task.task_id}"}]
            return first + ([image] if image else [{"type": "text", "text": "(no screenshot available)"}])
        blocks: list[dict[str, Any]] = []
        last_ok = max((i for i, r in enumerate(self._results) if not r.get("is_error")), default=None)
        for index, result in enumerate(self._results):
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": result["id"]}
            if result.get("toolset"):
                block["toolset_name"] = result["toolset"]
            if result.get("is_error"):
                block["is_error"] = True
                block["content"] = [{"type": "text", "text": result["text"]}]
            else:
                inner: list[dict[str, Any]] = [{"type": "text", "text": result["text"]}] if result.get("text") else []
                if index == last_ok and image:
                    inner.append(image)
                block["content"] = inner or [{"type": "text", "text": "done"}]
            blocks.append(block)
        if self._followup is not None or not blocks:
            blocks.append({"type": "text", "text": self._followup or "Here is the current screen."})
            if image:
                blocks.append(image)
        return blocks

    def _image_block(self, observation: Observation) -> dict[str, Any] | None:
        data = observation.screenshot
        size = png_size(data) if data else None
        if data is None or size is None:
            if observation.viewport:
                self._screen = observation.viewport
                self._display = declared_size(*self._screen)
            return None
        self._screen = size
        self._display = declared_size(*size)
        png = resize_png(data, self._display)
        return {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                            "data": base64.b64encode(png).decode("ascii")}}

    def _call(self) -> Any:
        import anthropic

        if self.budget is not None:
            self.budget.check(pending=self._usage.cost_usd)
        messages = self._messages
        if self._dropped_turns:
            first = dict(messages[0])
            first["content"] = [*messages[0]["content"], {"type": "text", "text": (
                f"[{self._dropped_turns} earlier turn(s) were dropped to keep the conversation short]")}]
            messages = [first, *messages[1:]]
        extra: dict[str, Any] = {"betas": [self.beta]} if self.beta else {}
        try:
            response = self._client.beta.messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                system=SYSTEM_PROMPT,
                # The version of the computer tool (self.tool_type) is chosen per model at run time,
                # and the history is kept as the wire format's plain JSON: both are the SDK's shapes.
                tools=cast("list[BetaToolUnionParam]", [self._tool_entry()]),
                tool_choice={"type": "auto", "disable_parallel_tool_use": True},
                messages=cast("list[BetaMessageParam]", messages),
                **extra,
            )
        except anthropic.APIStatusError as exc:
            raise ClaudeAPIError(self._scrub(_status_message(exc))) from None
        except anthropic.APITimeoutError:
            raise ClaudeAPIError(f"Claude API request timed out after {self.timeout:g}s "
                                 "(and the SDK's retries)") from None
        except anthropic.APIConnectionError as exc:
            reason = shorten(exc, 300, within=False)
            raise ClaudeAPIError(self._scrub(f"Claude API unreachable after the SDK's retries: {reason}")) from None
        self._count(response)
        return response

    def _tool_entry(self) -> dict[str, Any]:
        """The ``tools[]`` entry: the toolset with the members this environment lacks withheld, or
        the single tool with the display size its coordinates refer to."""
        if self.toolset:
            return {"type": TOOLSET, "configs": {member: {"enabled": False} for member in TOOLSET_DISABLED}}
        width, height = self._display
        return {"type": self.tool_type, "name": "computer", "display_width_px": width, "display_height_px": height}

    def _count(self, response: Any) -> None:
        usage = getattr(response, "usage", None)
        if usage is None:
            return
        uncached = int(usage.input_tokens or 0)
        written = int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
        read = int(getattr(usage, "cache_read_input_tokens", 0) or 0)
        out = int(usage.output_tokens or 0)
        cost = prices.cost_usd(self.model, uncached, out, written, read)
        if cost is None:
            _warn_once(f"price:{self.model}", f"api-claude: no list price for model {self.model!r}; "
                                              "its steps record tokens with cost 0")
            cost = 0.0
        self._usage.input_tokens += uncached + written + read
        self._usage.output_tokens += out
        self._usage.cost_usd += cost
        self._usage.calls += 1

    @staticmethod
    def _assistant_content(response: Any) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = []
        for block in response.content or []:
            kind = getattr(block, "type", None)
            if kind == "text":
                content.append({"type": "text", "text": block.text})
            elif kind == "tool_use":
                use = {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
                if getattr(block, "toolset_name", None):
                    use["toolset_name"] = block.toolset_name
                content.append(use)
            else:  # thinking and the like go back unchanged
                content.append(block.to_dict() if hasattr(block, "to_dict") else block.model_dump(exclude_none=True))
        return content

    # -------------------------------------------------------------- reading the reply
    def _interpret(self, response: Any, content: list[dict[str, Any]]) -> Action:
        text = "\n".join(b["text"] for b in content if b["type"] == "text").strip()
        calls = [b for b in content if b["type"] == "tool_use"]
        if not calls:
            stop = getattr(response, "stop_reason", None)
            if stop in ("end_turn", "stop_sequence"):
                self._strikes = 0
                kind = replies.final_word(text)
                return Action(type=kind, reason=text or None, raw={"stop_reason": stop})
            if stop == "refusal":
                return Action(type="fail", reason=text or "Claude declined the task (stop_reason refusal)",
                              raw={"stop_reason": stop})
            why = f"the reply has no tool call (stop_reason {stop!r})"
            self._followup = f"Your last reply could not be used: {why}. {_ERROR_HINT}"
            return self._strike(why, content)
        actions: list[Action] = []
        problem: str | None = None
        for call in calls:
            answer = {"id": call["id"], **({"toolset": call["toolset_name"]} if call.get("toolset_name") else {})}
            if problem is not None:
                self._results.append({**answer, "is_error": True,
                                      "text": "Not run: another call in the same reply was invalid."})
                continue
            try:
                action, note = self._map(call)
                presses = self._repeat(call, action)
            except _Unsupported as exc:
                self._results.append({**answer, "is_error": True, "text": f"{exc} {_ERROR_HINT}"})
                actions.append(Action(type="wait", seconds=0.0, reason=f"unsupported: {exc}",
                                      raw={"tool_use": call}))
                continue
            except _Unparseable as exc:
                problem = str(exc)
                self._results.append({**answer, "is_error": True,
                                      "text": f"Your call could not be used: {problem}. {_ERROR_HINT}"})
                continue
            self._results.append({**answer, "text": note})
            actions.extend([action] * presses)
        if problem is not None:
            for result in self._results:  # nothing of this reply runs: say so for every call
                if not result.get("is_error"):
                    result.update(is_error=True, text="Not run: another call in the same reply was invalid.")
            return self._strike(problem, content)
        self._strikes = 0
        first, *rest = actions
        self._queue = [self._redacted(a) for a in rest]
        return replies.with_text(first, text)

    def _strike(self, why: str, content: list[dict[str, Any]]) -> Action:
        self._strikes += 1
        return replies.unusable(self._strikes, why, content)

    def _point(self, value: Any, what: str = "coordinate") -> tuple[float, float]:
        if (not isinstance(value, (list, tuple)) or len(value) != 2
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)):
            raise _Unparseable(f"{what} must be [x, y] in pixels, got {value!r}")
        x, y = float(value[0]), float(value[1])
        width, height = self._display
        if not (0 <= x <= width and 0 <= y <= height):
            raise _Unparseable(f"{what} {value!r} is outside the {width}x{height} screen")
        return x, y

    def _to_screen(self, point: tuple[float, float]) -> tuple[int, int]:
        (width, height), (real_w, real_h) = self._display, self._screen
        return (min(round(point[0] * real_w / width), real_w - 1), min(round(point[1] * real_h / height), real_h - 1))

    def _target(self, params: dict[str, Any], action: str) -> tuple[float, float]:
        if params.get("coordinate") is not None:
            point = self._point(params["coordinate"])
            self._cursor = point
            return point
        if self._cursor is None:
            raise _Unparseable(f"{action} needs coordinate [x, y] (the pointer position is not known yet)")
        return self._cursor

    def _params(self, call: dict[str, Any]) -> dict[str, Any]:
        """The call's parameters with its action under ``action``: the single tool's input as it
        is, a toolset member's input with the member's name added."""
        params = call.get("input")
        if self.toolset:
            if call.get("toolset_name") != TOOLSET_FAMILY:
                raise _Unparseable(f"unknown tool {call.get('name')!r}; the only tools are the computer toolset's "
                                   "members")
            if not isinstance(params, dict):
                raise _Unparseable(f"{call.get('name')} needs an input object, got {params!r}")
            return {**params, "action": call.get("name")}
        if call.get("name") != "computer":
            raise _Unparseable(f"unknown tool {call.get('name')!r}; the only tool is 'computer'")
        if not isinstance(params, dict) or not isinstance(params.get("action"), str):
            raise _Unparseable(f"the computer tool needs an 'action', got input {params!r}")
        return params

    def _repeat(self, call: dict[str, Any], action: Action) -> int:
        """How many times ``action`` runs: a toolset ``key`` call's ``repeat`` (default 1)."""
        params = call.get("input")
        repeat = params.get("repeat") if self.toolset and isinstance(params, dict) else None
        if repeat is None or action.type not in ("key", "hotkey"):
            return 1
        if isinstance(repeat, bool) or not isinstance(repeat, int) or not 1 <= repeat <= MAX_KEY_REPEAT:
            raise _Unparseable(f"key repeat must be a whole number from 1 to {MAX_KEY_REPEAT}, got {repeat!r}")
        return repeat

    def _map(self, call: dict[str, Any]) -> tuple[Action, str | None]:
        """One tool call -> (action, text for its tool_result)."""
        params = self._params(call)
        kind = params["action"]
        if not isinstance(kind, str):
            raise _Unparseable(f"the computer tool needs an 'action', got input {params!r}")
        raw = {"tool_use": call, "display": list(self._display), "screen": list(self._screen)}
        notes: list[str] = []
        if kind in ("left_click", "double_click", "right_click", "triple_click"):
            x, y = self._to_screen(self._target(params, kind))
            clicks: dict[str, ActionType] = {"left_click": "click", "double_click": "double_click",
                                             "right_click": "right_click", "triple_click": "double_click"}
            core = clicks[kind]
            if kind == "triple_click":
                notes.append("triple_click approximated by double_click")
            if params.get("text"):
                notes.append(f"held keys {params['text']!r} ignored")
            return Action(type=core, x=x, y=y, unit="px", reason="; ".join(notes) or None, raw=raw), None
        if kind == "left_click_drag":
            start = self._point(params.get("start_coordinate"), "start_coordinate") \
                if params.get("start_coordinate") is not None else self._target({}, kind)
            end = self._point(params.get("coordinate"), "coordinate")
            self._cursor = end
            (x, y), (ex, ey) = self._to_screen(start), self._to_screen(end)
            return Action(type="drag", x=x, y=y, end_x=ex, end_y=ey, unit="px", raw=raw), None
        if kind == "left_mouse_down":
            self._mouse_down = self._target(params, kind)
            return Action(type="wait", seconds=0.0, reason="left_mouse_down: held until left_mouse_up", raw=raw), None
        if kind == "left_mouse_up":
            end = self._target(params, kind)
            held, self._mouse_down = self._mouse_down, None
            ex, ey = self._to_screen(end)
            if held is None or self._to_screen(held) == (ex, ey):
                return Action(type="click", x=ex, y=ey, unit="px", reason="left_mouse_up without a move: click",
                              raw=raw), None
            x, y = self._to_screen(held)
            return Action(type="drag", x=x, y=y, end_x=ex, end_y=ey, unit="px", raw=raw), None
        if kind == "mouse_move":
            self._cursor = self._point(params.get("coordinate"))
            x, y = self._to_screen(self._cursor)
            return Action(type="wait", seconds=0.0, reason=f"mouse_move to ({x}, {y}): no pointer-only action "
                                                           "here; the position is kept for the next click",
                          raw=raw), None
        if kind == "type":
            if not isinstance(params.get("text"), str):
                raise _Unparseable("type needs text")
            return Action(type="type", text=params["text"], raw=raw), None
        if kind == "key":
            return key_action(params.get("text")).model_copy(update={"raw": raw}), None
        if kind == "scroll":
            direction = params.get("scroll_direction")
            if direction not in ("up", "down", "left", "right"):
                raise _Unparseable(f"scroll needs scroll_direction up, down, left or right, got {direction!r}")
            amount = params.get("scroll_amount", 3)
            if isinstance(amount, bool) or not isinstance(amount, (int, float)) or amount < 0:
                raise _Unparseable(f"scroll_amount must be a whole number >= 0, got {amount!r}")
            at: tuple[int, int] | None = None
            if params.get("coordinate") is not None:
                at = self._to_screen(self._target(params, kind))
            if params.get("text"):
                notes.append(f"held keys {params['text']!r} ignored")
            return Action(type="scroll", x=at[0] if at else None, y=at[1] if at else None,
                          unit="px" if at else None, scroll_direction=direction,
                          scroll_amount=int(amount), reason="; ".join(notes) or None, raw=raw), None
        if kind == "wait":
            duration = params.get("duration", 1.0)
            if isinstance(duration, bool) or not isinstance(duration, (int, float)) or not 0 <= duration < math.inf:
                raise _Unparseable(f"wait duration must be seconds >= 0, got {duration!r}")
            return Action(type="wait", seconds=min(float(duration), 60.0), raw=raw), None
        if kind == "screenshot":
            return Action(type="wait", seconds=0.0, reason="screenshot: the next tool_result carries it", raw=raw), None
        if kind == "cursor_position":
            if self._cursor is None:
                text = "The pointer position is not known: move or click first."
            else:
                text = f"X={round(self._cursor[0])},Y={round(self._cursor[1])}"
            return Action(type="wait", seconds=0.0, reason=f"cursor_position: {text}", raw=raw), text
        if kind in ("middle_click", "hold_key", "zoom"):
            raise _Unsupported(f"{kind} is not supported in this environment.")
        raise _Unparseable(f"unknown computer action {kind!r}")

    # -------------------------------------------------------------- history
    def _trim_history(self) -> None:
        """Keep the newest ``keep_images`` screenshots; then drop the oldest turn pairs (after the
        task message) while the estimate exceeds ``history_tokens``."""
        seen = 0
        for message in reversed(self._messages):
            if message["role"] != "user":
                continue
            for block in reversed(message["content"]):
                if block.get("type") == "image":
                    images = [block]
                elif block.get("type") == "tool_result":
                    images = [b for b in reversed(block.get("content") or []) if b.get("type") == "image"]
                else:
                    images = []
                for image in images:
                    seen += 1
                    if seen > self.keep_images:
                        image.clear()
                        image.update({"type": "text", "text": IMAGE_PLACEHOLDER})
        while len(self._messages) > 3 and sum(map(_message_tokens, self._messages)) > self.history_tokens:
            del self._messages[1:3]  # an assistant turn and the user turn answering it
            self._dropped_turns += 1

    # -------------------------------------------------------------- secrets
    def _scrub(self, text: str) -> str:
        """``text`` without the key: whole, in pieces, reversed or base64-encoded (``redact``)."""
        return redact.redact(text)

    def _redacted(self, action: Action) -> Action:
        """The action with the API key scrubbed from its reason and raw (it is never sent to Claude,
        so this only matters if a reply quotes it back)."""
        update: dict[str, Any] = {}
        if action.reason and self._scrub(action.reason) != action.reason:
            update["reason"] = self._scrub(action.reason)
        if action.raw is not None:
            dumped = json.dumps(action.raw)
            if self._scrub(dumped) != dumped:
                update["raw"] = json.loads(self._scrub(dumped))
        if action.text and self._scrub(action.text) != action.text:
            update["text"] = self._scrub(action.text)
        return action.model_copy(update=update) if update else action


def _status_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    detail = ""
    if isinstance(body, dict):
        inner = body.get("error")
        error = inner if isinstance(inner, dict) else body
        detail = ": ".join(str(p) for p in (error.get("type"), error.get("message")) if p)
    status = getattr(exc, "status_code", "?")
    retried = (" (after the SDK's retries)" if status in (408, 409, 429) or (isinstance(status, int) and status >= 500)
               else "")
    return shorten(f"Claude API HTTP {status}{retried}: {detail or type(exc).__name__}", 300, within=False)


def _block_tokens(block: dict[str, Any]) -> int:
    kind = block.get("type")
    if kind == "text":
        return prices.text_tokens(block.get("text", ""))
    if kind == "image":
        size = png_size(base64.b64decode(block["source"]["data"][:48])) or (MAX_LONG_EDGE, MAX_SHORT_EDGE)
        return prices.image_tokens(*size)
    if kind == "tool_result":
        return 5 + sum(_block_tokens(b) for b in block.get("content") or [] if isinstance(b, dict))
    if kind == "tool_use":
        return 10 + prices.text_tokens(json.dumps(block.get("input")))
    return prices.text_tokens(json.dumps(block, default=str))


def _message_tokens(message: dict[str, Any]) -> int:
    return sum(_block_tokens(b) for b in message["content"])


def make_agent(settings: Settings | None) -> ClaudeAgent:
    """``--bench-agent api-claude``: needs the ``claude`` extra and ``ANTHROPIC_API_KEY``. Model from
    ``--bench-agent-model`` / ``agentbench_agent_model``, timeout from ``--bench-agent-timeout``; the SDK reads
    ``ANTHROPIC_BASE_URL`` for another endpoint."""
    settings = settings_of(settings)
    require_sdk("anthropic", "api-claude", "claude")
    model = (settings.get("agent_model") if settings is not None else None) or DEFAULT_MODEL
    if any(c.isspace() for c in model):
        raise ConfigError(f"--bench-agent-model must be a Claude model id such as {DEFAULT_MODEL}, got {model!r}")
    timeout = settings.get("agent_timeout") if settings is not None else None  # checked by the option table
    timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
    key = os.environ.get("ANTHROPIC_API_KEY", "").strip()
    if not key:
        raise ConfigError("--bench-agent api-claude needs ANTHROPIC_API_KEY: set it to an Anthropic API key "
                                "(the SDK also reads ANTHROPIC_BASE_URL for another endpoint)")
    return ClaudeAgent(api_key=key, model=model, timeout=timeout)
