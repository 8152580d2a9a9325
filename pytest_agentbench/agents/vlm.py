"""``--bench-agent api-vlm``: an open vision-language model behind any OpenAI-compatible chat endpoint.

vLLM, SGLang, Ollama, LM Studio and hosted providers serve Qwen3-VL, UI-TARS, GUI-OWL and others
through ``POST /v1/chat/completions``; this agent talks to them with the ``openai`` SDK
(``chat.completions``) at ``--bench-agent-url`` with ``--bench-agent-model``. What the model is
told and how its reply is read is the *dialect* (``--bench-agent-dialect``; by default guessed
from the model's name): each model family was trained on its own action grammar and coordinate
convention, and a reply in another one is not understood.

``qwen3vl``: Qwen3-VL's ``computer_use`` function, declared in the system prompt; the model answers
with one or more ``<tool_call>{"name": "computer_use", "arguments": {...}}</tool_call>`` blocks.
Coordinates are in [0, 1000] on both axes whatever the screen ("The screen's resolution is
1000x1000"): ``[500, 500]`` is the centre, ``[1000, 1000]`` the bottom-right pixel. Example::

    I will submit the form.
    <tool_call>
    {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [208, 150]}}
    </tool_call>

  on a 1920x1200 screen is a click at (399, 180).

``uitars``: UI-TARS(-1.5)'s ``Thought: ... Action: ...`` grammar. The screenshot is sent at its
``smart_resize`` size (each side a multiple of 28, the pixel count within Qwen2.5-VL's bounds,
which the model's processor would otherwise apply itself) and the model's coordinates are pixels of
that image, written ``(x,y)``, ``<|box_start|>(x,y)<|box_end|>``, ``<point>x y</point>`` or a box
``[x1,y1,x2,y2]`` (its centre). Several actions are separated by a blank line. Example::

    Thought: The Submit button is at the top left; I click it.
    Action: click(start_box='(269,151)')

  on a 1920x1200 screen (sent as 1932x1204) is a click at (267, 150).

``json``: the plain JSON action dialect for any instruction-following VLM: one JSON object (or a
list of them, or inside a ```json fence) with this project's action fields (``type`` click,
double_click, right_click, drag, type, key, hotkey, scroll, wait, done, fail; ``x``/``y``/
``end_x``/``end_y`` in pixels of the screenshot as sent, which is at most 1280x800). Example::

    {"type": "click", "x": 267, "y": 100, "reason": "the Submit button"}

  on a 1920x1200 screen (sent as 1280x800) is a click at (400, 150).

A reply in no shape the dialect reads (or an action it does not know, or a point outside the
screen) ends the episode as an agent error whose reason names the dialect, what was wrong and the
reply's first line; the agent never raises for a model's words. A reply with several actions is
played one action per step before the model is asked again.

The conversation: the system prompt, the task with the first screenshot, then the model's replies
each followed by the next screenshot; only the newest ``keep_images`` screenshots are sent as
images (older ones become a short text), and at most ``max_turns`` earlier turns are kept.
Retries go through the project's retry policy (as ``api-openai``). Tokens come from the reply's
``usage``; a self-hosted model has no list price, so the cost is 0 unless the endpoint reports one.
The API key, if the endpoint needs one, is read from ``AGENTBENCH_VLM_API_KEY`` (never from
``OPENAI_API_KEY``, which must not be sent to an arbitrary server).
"""

from __future__ import annotations

import ast
import base64
import json
import math
import os
import re
import time
from typing import TYPE_CHECKING, Any, cast

from pydantic import ValidationError

from pytest_agentbench import redact
from pytest_agentbench.agent import Usage
from pytest_agentbench.agents.claude import declared_size, key_name, resize_png
from pytest_agentbench.agents.openai_computer import request_json
from pytest_agentbench.agents.sdk import SDKAgent, require_sdk
from pytest_agentbench.errors import ConfigError
from pytest_agentbench.images import png_size
from pytest_agentbench.model import Action, Observation, Task
from pytest_agentbench.settings import settings_of
from pytest_agentbench.text import shorten

if TYPE_CHECKING:
    from pytest_agentbench.settings import Settings

DEFAULT_TIMEOUT = 120.0
DEFAULT_KEEP_IMAGES = 3
DEFAULT_MAX_TURNS = 20
DEFAULT_MAX_TOKENS = 1024
#: Longest reply read; a model that rambles past it is cut (the grammar sits at the start or end).
MAX_REPLY_CHARS = 20_000
#: At most this many actions are taken from one reply.
MAX_ACTIONS_PER_REPLY = 10
IMAGE_PLACEHOLDER = "[an earlier screenshot, omitted]"
API_KEY_ENV = "AGENTBENCH_VLM_API_KEY"


class VLMAPIError(Exception):
    """The endpoint failed after the retries; the message is one line, key-free."""

    error_type = "agent"


class Unparseable(ValueError):
    """A reply the dialect cannot read; the message says what was wrong."""


# ---------------------------------------------------------------------------------- dialects
class Dialect:
    """How one model family is prompted and how its replies become core actions."""

    name = ""

    def system_prompt(self) -> str:
        raise NotImplementedError

    def image_size(self, screen: tuple[int, int]) -> tuple[int, int]:
        """The size the screenshot of a ``screen``-sized display is sent at."""
        return declared_size(*screen)

    def parse(self, reply: str, sent: tuple[int, int], screen: tuple[int, int]) -> list[Action]:
        """The actions of ``reply``, coordinates in screen pixels. Raises :class:`Unparseable`."""
        raise NotImplementedError


def _scaled(x: Any, y: Any, space: tuple[float, float], screen: tuple[int, int], what: str) -> tuple[int, int]:
    """(x, y) given in a ``space``-sized coordinate system, as screen pixels; the space's far edge is
    the screen's last pixel."""
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in (x, y)):
        raise Unparseable(f"{what} needs two numbers, got {x!r}, {y!r}")
    if not (0 <= x <= space[0] and 0 <= y <= space[1]):
        raise Unparseable(f"{what} ({x:g}, {y:g}) is outside the {space[0]:g}x{space[1]:g} coordinate space")
    width, height = screen
    return min(round(x * width / space[0]), width - 1), min(round(y * height / space[1]), height - 1)


def _keys(names: list[str]) -> Action:
    keys = [key_name(k.strip().lower()) for k in names if k.strip()]
    if not keys:
        raise Unparseable("a key action names no key")
    return Action(type="key", key=keys[0]) if len(keys) == 1 else Action(type="hotkey", keys=keys)


QWEN_TOOL = {
    "type": "function",
    "function": {
        "name": "computer_use",
        "description": (
            "Use a mouse and keyboard to interact with a computer, and take screenshots.\n"
            "* This is an interface to a desktop GUI. You do not have access to a terminal or applications menu. "
            "You must click on desktop icons to start applications.\n"
            "* Some applications may take time to start or process actions, so you may need to wait and take "
            "successive screenshots to see the results of your actions.\n"
            "* The screen's resolution is 1000x1000.\n"
            "* Make sure to click any buttons, links, icons, etc with the cursor tip in the center of the element."),
        "parameters": {
            "properties": {
                "action": {"description": "The action to perform.", "type": "string", "enum": [
                    "key", "type", "mouse_move", "left_click", "left_click_drag", "right_click", "middle_click",
                    "double_click", "triple_click", "scroll", "hscroll", "wait", "terminate", "answer"]},
                "keys": {"description": "Required only by `action=key`.", "type": "array"},
                "text": {"description": "Required only by `action=type` and `action=answer`.", "type": "string"},
                "coordinate": {"description": "(x, y): the point on the 1000x1000 screen.", "type": "array"},
                "pixels": {"description": "The amount of scrolling to perform. Positive values scroll up, negative "
                                          "values scroll down. Required only by `action=scroll` and "
                                          "`action=hscroll`.", "type": "number"},
                "time": {"description": "The seconds to wait. Required only by `action=wait`.", "type": "number"},
                "status": {"description": "The status of the task. Required only by `action=terminate`.",
                           "type": "string", "enum": ["success", "failure"]},
            },
            "required": ["action"], "type": "object",
        },
    },
}


class Qwen3VL(Dialect):
    """Qwen3-VL's ``computer_use`` function calls, coordinates in [0, 1000]."""

    name = "qwen3vl"
    SPACE = (1000.0, 1000.0)
    _CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)

    def __init__(self) -> None:
        self._cursor: tuple[int, int] | None = None

    def system_prompt(self) -> str:
        return ("You are a helpful assistant.\n\n# Tools\n\nYou may call one or more functions to assist with the "
                "user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
                f"{json.dumps(QWEN_TOOL)}\n</tools>\n\nFor each function call, return a json object with function name "
                "and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
                "\"arguments\": <args-json-object>}\n</tool_call>\n\nWhen the task is done, call terminate with status "
                "success; when it cannot be done here, terminate with status failure.")

    def parse(self, reply: str, sent: tuple[int, int], screen: tuple[int, int]) -> list[Action]:
        bodies = self._CALL.findall(reply)
        if not bodies:
            raise Unparseable("no <tool_call> block")
        actions = []
        for body in bodies[:MAX_ACTIONS_PER_REPLY]:
            try:
                call = json.loads(body)
            except json.JSONDecodeError as exc:
                raise Unparseable(f"a <tool_call> holds no JSON object ({exc.msg})") from None
            if not isinstance(call, dict) or call.get("name") != "computer_use":
                raise Unparseable(f"unknown function {call.get('name') if isinstance(call, dict) else call!r}")
            arguments = call.get("arguments")
            if not isinstance(arguments, dict):
                raise Unparseable("computer_use needs an arguments object")
            actions.append(self._action(arguments, screen))
        return actions

    def _point(self, args: dict[str, Any], screen: tuple[int, int], what: str) -> tuple[int, int]:
        value = args.get("coordinate")
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise Unparseable(f"{what} needs coordinate [x, y] in [0, 1000], got {value!r}")
        self._cursor = _scaled(value[0], value[1], self.SPACE, screen, what)
        return self._cursor

    def _action(self, args: dict[str, Any], screen: tuple[int, int]) -> Action:
        kind = args.get("action")
        raw = {"arguments": args}
        if kind in ("left_click", "right_click", "double_click", "triple_click"):
            x, y = self._point(args, screen, kind)
            core = {"left_click": "click", "right_click": "right_click"}.get(kind, "double_click")
            return Action.model_validate({"type": core, "x": x, "y": y, "unit": "px", "raw": raw})
        if kind == "left_click_drag":
            start = self._cursor
            x, y = self._point(args, screen, kind)
            if start is None:
                raise Unparseable("left_click_drag starts where the pointer is, which is not known yet")
            return Action(type="drag", x=start[0], y=start[1], end_x=x, end_y=y, unit="px", raw=raw)
        if kind == "mouse_move":
            x, y = self._point(args, screen, kind)
            return Action(type="wait", seconds=0.0, reason=f"mouse_move to ({x}, {y}): kept for a drag", raw=raw)
        if kind == "type":
            if not isinstance(args.get("text"), str):
                raise Unparseable("type needs text")
            return Action(type="type", text=args["text"], raw=raw)
        if kind == "key":
            keys = args.get("keys")
            if isinstance(keys, str):
                keys = [keys]
            if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
                raise Unparseable(f"key needs keys, a list of key names, got {keys!r}")
            return _keys(keys).model_copy(update={"raw": raw})
        if kind in ("scroll", "hscroll"):
            amount = args.get("pixels")
            if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not math.isfinite(amount):
                raise Unparseable(f"{kind} needs pixels, a number, got {amount!r}")
            direction = ("up" if amount > 0 else "down") if kind == "scroll" else ("right" if amount > 0 else "left")
            at = self._point(args, screen, kind) if args.get("coordinate") is not None else None
            return Action.model_validate({"type": "scroll", "scroll_direction": direction,
                                          "scroll_amount": min(abs(round(amount)), 50), "raw": raw,
                                          **({"x": at[0], "y": at[1], "unit": "px"} if at else {})})
        if kind == "wait":
            seconds = args.get("time", 1)
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds < math.inf:
                raise Unparseable(f"wait needs time in seconds, got {seconds!r}")
            return Action(type="wait", seconds=min(float(seconds), 60.0), raw=raw)
        if kind == "terminate":
            status = args.get("status")
            if status not in ("success", "failure"):
                raise Unparseable(f"terminate needs status success or failure, got {status!r}")
            return Action(type="done" if status == "success" else "fail", raw=raw)
        if kind == "answer":
            return Action(type="done", reason=f"answer: {args.get('text')}", raw=raw)
        raise Unparseable(f"unknown action {kind!r}")


# UI-TARS's image bounds (its action_parser.py: IMAGE_FACTOR, MIN_PIXELS, MAX_PIXELS).
_FACTOR, _MIN_PIXELS, _MAX_PIXELS = 28, 100 * 28 * 28, 16384 * 28 * 28


def smart_resize(width: int, height: int) -> tuple[int, int]:
    """Qwen2.5-VL's ``smart_resize`` (which UI-TARS-1.5 uses): sides multiples of 28, the pixel count
    within [100, 16384] x 28 x 28, the aspect ratio kept as closely as that allows."""
    w_bar, h_bar = max(_FACTOR, round(width / _FACTOR) * _FACTOR), max(_FACTOR, round(height / _FACTOR) * _FACTOR)
    if w_bar * h_bar > _MAX_PIXELS:
        beta = math.sqrt(width * height / _MAX_PIXELS)
        w_bar, h_bar = math.floor(width / beta / _FACTOR) * _FACTOR, math.floor(height / beta / _FACTOR) * _FACTOR
    elif w_bar * h_bar < _MIN_PIXELS:
        beta = math.sqrt(_MIN_PIXELS / (width * height))
        w_bar, h_bar = math.ceil(width * beta / _FACTOR) * _FACTOR, math.ceil(height * beta / _FACTOR) * _FACTOR
    return w_bar, h_bar


UITARS_PROMPT = """\
You are a GUI agent. You are given a task and your action history, with screenshots. You need to \
perform the next action to complete the task.

## Output Format
```
Thought: ...
Action: ...
```

## Action Space

click(start_box='<|box_start|>(x1,y1)<|box_end|>')
left_double(start_box='<|box_start|>(x1,y1)<|box_end|>')
right_single(start_box='<|box_start|>(x1,y1)<|box_end|>')
drag(start_box='<|box_start|>(x1,y1)<|box_end|>', end_box='<|box_start|>(x3,y3)<|box_end|>')
hotkey(key='ctrl c') # Split keys with a space and use lowercase. Do not use more than 3 keys in one hotkey action.
type(content='xxx') # Use escape characters \\', \\", and \\n in content part. \
If you want to submit your input, use \\n at the end of content.
scroll(start_box='<|box_start|>(x1,y1)<|box_end|>', direction='down or up or right or left')
wait() #Sleep for 5s and take a screenshot to check for any changes.
finished(content='xxx') # Submit the task when it is done.
call_user() # Submit the task and call the user when the task is unsolvable, or when you need the user's help.

## Note
- Use English in `Thought` part.
- Write a small plan and finally summarize your next action (with its target element) in one sentence in `Thought` part.

## User Instruction
"""


class UITars(Dialect):
    """UI-TARS's Thought/Action grammar, coordinates in pixels of the smart-resized screenshot."""

    name = "uitars"
    _NUMBERS = re.compile(r"-?\d+(?:\.\d+)?")

    def system_prompt(self) -> str:
        return UITARS_PROMPT.split("\n## User Instruction")[0].strip()

    def task_text(self, instruction: str) -> str:
        return f"{UITARS_PROMPT}{instruction}"

    def image_size(self, screen: tuple[int, int]) -> tuple[int, int]:
        return smart_resize(*screen)

    def parse(self, reply: str, sent: tuple[int, int], screen: tuple[int, int]) -> list[Action]:
        if "Action:" not in reply:
            raise Unparseable("no 'Action:' line")
        thought_match = re.search(r"(?:Thought|Action_Summary):\s*(.+?)(?=\s*Action:|$)", reply, re.DOTALL)
        thought = thought_match.group(1).strip() if thought_match else None
        text = reply.split("Action:")[-1].strip().replace("<|box_start|>", "").replace("<|box_end|>", "")
        text = re.sub(r"<point>\s*(-?[\d.]+)\s+(-?[\d.]+)\s*</point>", r"(\1,\2)", text)
        text = text.replace("start_point=", "start_box=").replace("end_point=", "end_box=").replace(
            "point=", "start_box=")
        calls = [c.strip() for c in re.split(r"\)\s*\n\s*\n", text) if c.strip()]
        actions = []
        for raw_call in calls[:MAX_ACTIONS_PER_REPLY]:
            call = raw_call if raw_call.endswith(")") else raw_call + ")"
            name, args = self._call(call)
            action = self._action(name, args, sent, screen)
            actions.append(action.model_copy(update={"raw": {"action": call}}))
        if thought and actions:
            actions[0] = actions[0].model_copy(update={"reason": thought})
        return actions

    @staticmethod
    def _call(text: str) -> tuple[str, dict[str, str]]:
        """``name(key='value', ...)`` read with :mod:`ast` (literals only, nothing evaluated)."""
        try:
            node = ast.parse(text.replace("\n", "\\n"), mode="eval").body
        except SyntaxError:
            typed = re.fullmatch(r"type\(content='(.*)'\)", text, re.DOTALL)  # unescaped quotes in the text
            if typed:
                return "type", {"content": typed.group(1)}
            raise Unparseable(f"{shorten(text, 80)!r} is not a call such as click(start_box='(x,y)')") from None
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.args:
            raise Unparseable(f"{shorten(text, 80)!r} is not a call with keyword arguments")
        args = {}
        for keyword in node.keywords:
            if keyword.arg is None or not isinstance(keyword.value, ast.Constant):
                raise Unparseable(f"{node.func.id}: arguments must be plain strings")
            args[keyword.arg] = str(keyword.value.value)
        return node.func.id, args

    def _point(self, args: dict[str, str], key: str, sent: tuple[int, int], screen: tuple[int, int],
               what: str) -> tuple[int, int]:
        numbers = [float(n) for n in self._NUMBERS.findall(args.get(key, ""))]
        if len(numbers) == 4:  # a box: its centre
            numbers = [(numbers[0] + numbers[2]) / 2, (numbers[1] + numbers[3]) / 2]
        if len(numbers) != 2:
            raise Unparseable(f"{what} needs {key}='(x,y)', got {args.get(key)!r}")
        return _scaled(numbers[0], numbers[1], (float(sent[0]), float(sent[1])), screen, what)

    def _action(self, name: str, args: dict[str, str], sent: tuple[int, int], screen: tuple[int, int]) -> Action:
        clicks = {"click": "click", "left_single": "click", "left_double": "double_click",
                  "right_single": "right_click"}
        if name in clicks:
            x, y = self._point(args, "start_box", sent, screen, name)
            return Action.model_validate({"type": clicks[name], "x": x, "y": y, "unit": "px"})
        if name in ("drag", "select"):
            x, y = self._point(args, "start_box", sent, screen, name)
            ex, ey = self._point(args, "end_box", sent, screen, name)
            return Action(type="drag", x=x, y=y, end_x=ex, end_y=ey, unit="px")
        if name in ("hotkey", "press"):
            return _keys(args.get("key", args.get("hotkey", "")).split())
        if name == "type":
            content = args.get("content", "").replace("\\n", "\n")
            if content.endswith("\n") and content.strip("\n"):
                return Action(type="type", text=content.rstrip("\n") + "\n")
            return Action(type="type", text=content)
        if name == "scroll":
            direction = args.get("direction", "").strip().lower()
            if direction not in ("up", "down", "left", "right"):
                raise Unparseable(f"scroll needs direction up, down, left or right, got {direction!r}")
            scroll: dict[str, Any] = {"type": "scroll", "scroll_direction": direction, "scroll_amount": 5}
            if args.get("start_box"):
                x, y = self._point(args, "start_box", sent, screen, name)
                scroll.update(x=x, y=y, unit="px")
            return Action.model_validate(scroll)
        if name == "wait":
            return Action(type="wait", seconds=5.0)
        if name == "finished":
            return Action(type="done", reason=args.get("content") or None)
        if name == "call_user":
            return Action(type="fail", reason="the model called for the user (call_user): it cannot go on alone")
        raise Unparseable(f"unknown action {name!r}")


JSON_PROMPT = """\
You are operating a computer to complete a task. You see the screen in screenshots; after each of \
your actions you get a new screenshot. Reply with exactly one JSON object, the next action, and \
nothing else. Coordinates are pixels of the screenshot you see ({width}x{height}), from its top-left corner.

Actions:
{{"type": "click", "x": X, "y": Y}}   also "double_click", "right_click"
{{"type": "drag", "x": X, "y": Y, "end_x": X2, "end_y": Y2}}
{{"type": "type", "text": "..."}}
{{"type": "key", "key": "enter"}}   {{"type": "hotkey", "keys": ["ctrl", "s"]}}
{{"type": "scroll", "x": X, "y": Y, "scroll_direction": "down", "scroll_amount": 3}}
{{"type": "wait", "seconds": 1}}
{{"type": "done"}} when the task is complete, {{"type": "fail"}} when it cannot be done here.
Add "reason": "..." to say why."""


class PlainJSON(Dialect):
    """One JSON action object (or a list) with this project's action fields, pixels of the sent screenshot."""

    name = "json"
    _FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
    ALLOWED = frozenset({"click", "double_click", "right_click", "drag", "type", "key", "hotkey", "scroll", "wait",
                         "done", "fail"})

    def __init__(self) -> None:
        self._size = (1280, 800)

    def system_prompt(self) -> str:
        return JSON_PROMPT.format(width=self._size[0], height=self._size[1])

    def image_size(self, screen: tuple[int, int]) -> tuple[int, int]:
        self._size = declared_size(*screen)
        return self._size

    def parse(self, reply: str, sent: tuple[int, int], screen: tuple[int, int]) -> list[Action]:
        fenced = self._FENCE.search(reply)
        text = fenced.group(1) if fenced else reply
        start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
        if start < 0:
            raise Unparseable("no JSON object")
        try:
            value, _ = json.JSONDecoder().raw_decode(text[start:])
        except json.JSONDecodeError as exc:
            raise Unparseable(f"the JSON does not parse ({exc.msg})") from None
        items = value if isinstance(value, list) else [value]
        actions = []
        for item in items[:MAX_ACTIONS_PER_REPLY]:
            if not isinstance(item, dict) or item.get("type") not in self.ALLOWED:
                kind = item.get("type") if isinstance(item, dict) else item
                raise Unparseable(f"unknown action {kind!r}; one of {', '.join(sorted(self.ALLOWED))}")
            fields = {k: v for k, v in item.items() if k not in ("unit", "raw")}
            for xk, yk in (("x", "y"), ("end_x", "end_y")):
                if fields.get(xk) is not None or fields.get(yk) is not None:
                    fields[xk], fields[yk] = _scaled(fields.get(xk), fields.get(yk), (float(sent[0]), float(sent[1])),
                                                     screen, f"{item['type']} {xk}/{yk}")
                    fields["unit"] = "px"
            try:
                actions.append(Action.model_validate({**fields, "raw": {"action": item}}))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first.get("loc", ()))
                raise Unparseable(f"{item['type']}: {where} {first.get('msg')}") from None
        return actions


DIALECTS: dict[str, type[Dialect]] = {"qwen3vl": Qwen3VL, "uitars": UITars, "json": PlainJSON}


def guess_dialect(model: str) -> str | None:
    """The dialect a model's name suggests, or None."""
    lower = model.lower()
    if "ui-tars" in lower or "uitars" in lower:
        return "uitars"
    if "qwen" in lower and "vl" in lower:
        return "qwen3vl"
    return None


# ---------------------------------------------------------------------------------- the agent
class VLMAgent(SDKAgent):
    """A VLM behind an OpenAI-compatible chat endpoint, in one dialect. See the module docstring."""

    name = "api-vlm"
    retries = 4
    backoff_seconds = 0.5
    jitter_seconds = 0.5

    def __init__(self, *, base_url: str, model: str, dialect: str, api_key: str = "EMPTY",
                 timeout: float = DEFAULT_TIMEOUT, keep_images: int = DEFAULT_KEEP_IMAGES,
                 max_turns: int = DEFAULT_MAX_TURNS, max_tokens: int = DEFAULT_MAX_TOKENS) -> None:
        import openai

        if dialect not in DIALECTS:
            raise ValueError(f"unknown dialect {dialect!r}; one of {', '.join(DIALECTS)}")
        self.model, self.dialect_name, self.timeout = model, dialect, timeout
        self.keep_images, self.max_turns, self.max_tokens = keep_images, max_turns, max_tokens
        self.sleep = time.sleep
        self._api_key = api_key
        if api_key != "EMPTY":
            redact.register(api_key)  # kept out of every file the run writes, in pieces and encoded too
        self._client = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)
        self._usage = Usage(model=model)
        self.reset()

    def __repr__(self) -> str:
        return f"VLMAgent(model={self.model!r}, dialect={self.dialect_name!r})"

    def reset(self) -> None:
        self.dialect = DIALECTS[self.dialect_name]()
        self._turns: list[dict[str, Any]] = []  # user/assistant messages after the system prompt
        self._queue: list[Action] = []

    def act(self, observation: Observation, task: Task,
            history: list[tuple[Observation, Action]] | None = None) -> Action:
        if history is not None and not history and self._turns:
            self.reset()
        if self._queue:
            return self._queue.pop(0)
        screen, sent, image = self._image(observation)
        content: list[dict[str, Any]] = []
        if not self._turns:
            instruction = task.instruction or task.task_id
            text = self.dialect.task_text(instruction) if isinstance(self.dialect, UITars) else f"Task: {instruction}"
            content.append({"type": "text", "text": text})
        content.append({"type": "image_url", "image_url": {"url": image}} if image else
                       {"type": "text", "text": "(no screenshot available)"})
        self._turns.append({"role": "user", "content": content})
        reply = self._call()
        self._turns.append({"role": "assistant", "content": reply})
        try:
            if screen is None or sent is None:
                raise Unparseable("there is no screenshot to place coordinates on")
            actions = self.dialect.parse(reply, sent, screen)
        except Unparseable as exc:
            line = next((text.strip() for text in reply.splitlines() if text.strip()), "")
            return Action(type="error", reason=self._scrub(
                f"unparseable {self.dialect_name} reply: {exc}; its first line: {shorten(line, 160)!r}"),
                raw={"reply": self._scrub(reply)})
        if not actions:
            return Action(type="error", reason=f"the {self.dialect_name} reply holds no action",
                          raw={"reply": self._scrub(reply)})
        first, *rest = actions
        self._queue = rest
        return first

    def _image(self, observation: Observation) -> tuple[tuple[int, int] | None, tuple[int, int] | None, str | None]:
        data = observation.screenshot
        size = png_size(data) if data else None
        if data is None or size is None:
            return observation.viewport, None, None
        sent = self.dialect.image_size(size)
        png = resize_png(data, sent)
        return size, sent, "data:image/png;base64," + base64.b64encode(png).decode("ascii")

    def _messages(self) -> list[dict[str, Any]]:
        """System prompt, the first user turn (the task), the newest turns; old images as text."""
        turns = self._turns
        if len(turns) > 2 * self.max_turns + 1:
            turns = [turns[0], {"role": "assistant", "content": "[earlier turns omitted]"},
                     *turns[-(2 * self.max_turns - 1):]]
        messages: list[dict[str, Any]] = [{"role": "system", "content": self.dialect.system_prompt()}]
        seen = sum(1 for t in turns if t["role"] == "user" and any(
            p.get("type") == "image_url" for p in t["content"]))
        for turn in turns:
            if turn["role"] == "user":
                parts = []
                for part in turn["content"]:
                    if part.get("type") == "image_url":
                        seen -= 1
                        if seen >= self.keep_images:
                            part = {"type": "text", "text": IMAGE_PLACEHOLDER}
                    parts.append(part)
                messages.append({"role": "user", "content": parts})
            else:
                messages.append(turn)
        return messages

    def _call(self) -> str:
        if self.budget is not None:
            self.budget.check(pending=self._usage.cost_usd)
        messages = self._messages()

        def send() -> Any:
            return self._client.chat.completions.with_raw_response.create(
                model=self.model, messages=cast("Any", messages), max_tokens=self.max_tokens, temperature=0.0)

        body = request_json(self, send, api="VLM endpoint", error=VLMAPIError)
        choices = body.get("choices") if isinstance(body, dict) else None
        message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(
            choices[0], dict) else None
        if not isinstance(message, dict):
            raise VLMAPIError("the VLM endpoint answered with no choices[0].message: not a chat completion")
        self._count(body.get("usage"))
        content = message.get("content")
        if isinstance(content, list):  # some servers answer with content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        return (content if isinstance(content, str) else "")[:MAX_REPLY_CHARS]

    def _count(self, usage: Any) -> None:
        self._usage.calls += 1
        if not isinstance(usage, dict):
            return
        for field, attribute in (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens")):
            value = usage.get(field)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                setattr(self._usage, attribute, getattr(self._usage, attribute) + value)
        cost = usage.get("cost")  # OpenRouter and some gateways report the charge
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and 0 <= cost < math.inf:
            self._usage.cost_usd += float(cost)

    def _scrub(self, text: str) -> str:
        """``text`` without the endpoint's key: whole, in pieces, reversed or base64 (``redact``)."""
        return redact.redact(text)


def make_agent(settings: Settings | None) -> VLMAgent:
    """``--bench-agent api-vlm``: needs the ``openai`` extra, ``--bench-agent-url`` and
    ``--bench-agent-model``; the dialect from ``--bench-agent-dialect`` or the model's name."""
    settings = settings_of(settings)
    require_sdk("openai", "api-vlm", "openai")
    url = settings.get("agent_url") if settings is not None else None
    if not url:
        raise ConfigError("--bench-agent api-vlm needs --bench-agent-url URL, the OpenAI-compatible endpoint's "
                          "base URL such as http://127.0.0.1:8000/v1")
    model = settings.get("agent_model") if settings is not None else None
    if not model:
        raise ConfigError("--bench-agent api-vlm needs --bench-agent-model MODEL, the model name the endpoint "
                          "serves (e.g. Qwen/Qwen3-VL-8B-Instruct)")
    dialect = (settings.get("agent_dialect") if settings is not None else None) or guess_dialect(model)
    if dialect is None:
        raise ConfigError(f"--bench-agent api-vlm cannot tell the dialect of model {model!r}: give "
                          f"--bench-agent-dialect {'|'.join(DIALECTS)}")
    timeout = settings.get("agent_timeout") if settings is not None else None
    timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
    key = os.environ.get(API_KEY_ENV, "").strip() or "EMPTY"
    return VLMAgent(base_url=url, model=model, dialect=dialect, api_key=key, timeout=timeout)
