"""The two reference rewards, and how any reward's return value is read.

A reward is a plain callable ``reward(evidence) -> bool | float | None``:

* ``True`` or a number > 0: paid;
* ``False`` or a number <= 0: refused;
* ``None``: not evaluated (for example because the store cannot be read);
* anything else, or raising: an error of that trial, reported with the message.
"""

from __future__ import annotations

import math
import numbers
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.benches.extradup.cells import Evidence, StoreUnavailable
from pytest_agentbench.errors import ConfigError

_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def screen_only(evidence: Evidence) -> bool:
    """Known-bad reference: pays when the screen looks finished (a banner saying "saved", a
    complete-looking form, or the agent's own claim of success). It never reads the store."""
    screen = evidence.screen
    banner = screen.banner or ""
    return "saved" in banner.lower() or bool(screen.form_looks_complete) or bool(screen.claimed_success)


def record(evidence: Evidence) -> bool | None:
    """Reads the stored records back: pays exactly one new encounter for the task's patient, of the
    task's type, with the task's note and no field outside the allowed ones. None (not evaluated)
    when the store cannot be read."""
    try:
        new = evidence.new
    except StoreUnavailable:
        return None
    task = evidence.task
    if len(new) != task.expected_new:
        return False
    return all(
        r.get("patient_id") == task.patient_id and r.get("type") == task.type and r.get("note") == task.note
        and set(r) <= task.allowed_fields
        for r in new
    )


BUILTINS: dict[str, Callable[[Evidence], Any]] = {"screen_only": screen_only, "record": record}
#: Built-in rewards known to pay wrong writes: their wrong-write items are strict xfail.
KNOWN_BAD: frozenset[str] = frozenset({"screen_only"})
DESCRIPTIONS: dict[str, str] = {
    "screen_only": "built-in reference, known-bad: pays when the screen looks finished",
    "record": "built-in reference: reads the stored record",
}


@dataclass(frozen=True)
class Reward:
    name: str
    function: Callable[[Evidence], Any]
    description: str
    builtin: bool
    known_bad: bool = False


def builtin_rewards() -> list[Reward]:
    return [Reward(name, fn, DESCRIPTIONS[name], True, name in KNOWN_BAD) for name, fn in BUILTINS.items()]


def _usage(message: str) -> Exception:
    return ConfigError(message)


def load_reward(spec: str, rootdir: str | None = None) -> Reward | None:
    """Resolve a ``--bench-reward`` value: a built-in name (None: it is scored anyway) or ``module:callable``,
    importable from installed packages, the rootdir or the current folder."""
    spec = spec.strip()
    if spec in BUILTINS:
        return None
    known = ", ".join(BUILTINS)
    module_name, colon, attr = spec.partition(":")
    if not colon:
        raise _usage(f"unknown reward {spec!r} in --bench-reward; built-in rewards: {known}; or give module:callable")
    if not module_name or not attr:
        raise _usage(f"--bench-reward {spec!r}: use module:callable (built-in rewards: {known})")
    from pytest_agentbench.loading import LoadError, import_callable

    try:
        target = import_callable(module_name, attr, rootdir)
    except LoadError as exc:
        raise _usage(f"cannot load reward {spec!r} in --bench-reward: {exc} (built-in rewards: {known})") from None
    if not callable(target):
        raise _usage(f"reward {spec!r} in --bench-reward is not callable (a {type(target).__name__}); "
                     "a reward is reward(evidence) -> bool | float | None")
    doc = (getattr(target, "__doc__", None) or "").strip().splitlines()
    return Reward(attr, target, f"{spec}" + (f": {doc[0]}" if doc else ""), False)


def user_rewards(specs: list[str], rootdir: str | None) -> list[Reward]:
    out: list[Reward] = []
    taken = set(BUILTINS)
    for spec in specs:
        reward = load_reward(spec, rootdir)
        if reward is None:
            continue
        name = reward.name
        if name in taken:
            name = spec.strip().replace(":", ".")
        if name in taken:
            continue  # the same reference twice
        taken.add(name)
        out.append(Reward(name, reward.function, reward.description, False))
    return out


# -- reading a result ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Result:
    #: True: paid; False: refused; None: not evaluated (or an error, see ``error``).
    paid: bool | None
    shown: str
    error: str | None = None


def call_reward(reward: Reward, evidence: Evidence) -> Result:
    """Call the reward and read its result; never raises for what the reward does."""
    try:
        value = reward.function(evidence)
    except Exception as exc:  # noqa: BLE001 - a reward's bug is that trial's error, the rest run
        where = ""
        # Point at the reward's own code, not at this package's evidence accessors.
        frames = traceback.extract_tb(exc.__traceback__)[1:]
        own = [f for f in frames if not f.filename.startswith(_HERE)] or frames
        if own:
            last = own[-1]
            where = f" (at {last.filename}:{last.lineno} in {last.name})"
        message = f"reward {reward.name!r} raised {type(exc).__name__}: {exc}{where}"
        if isinstance(exc, StoreUnavailable):
            message += "; a reward returns None (not evaluated) when the store cannot be read"
        return Result(None, f"raised {type(exc).__name__}", message)
    return read_result(reward.name, value)


def read_result(name: str, value: Any) -> Result:
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    if value is None:
        return Result(None, shown)
    if isinstance(value, bool) or type(value).__name__ == "bool_":  # numpy's bool too
        return Result(bool(value), shown)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        number = float(value)
        if math.isnan(number):
            return Result(None, shown, f"reward {name!r} returned NaN; return True/False, a number or None")
        return Result(number > 0, shown)
    return Result(None, shown, f"reward {name!r} returned {shown} ({type(value).__name__}); "
                               "a reward returns True/False, a number (> 0 pays) or None (not evaluated)")
