"""The built-in checker: OpenComputer's ``verify_task`` rules, for task folders that come without
OpenComputer's harness code (with a checkout, ``harness.py`` runs the real ``verify_task``).

Each check of a task's ``verification`` list runs its ``command`` as
``python3 /home/user/verifiers/<app>.py <subcommand> <args>`` inside the item's sandbox (split with
``shlex``, as the harness does) and reads the JSON it prints. As in ``verify_task``:

* the reply is stdout parsed as JSON, also after a non-zero exit; when there is none the reply is
  ``{"error": <stderr, 300 characters>}`` (or the reason: a timeout, output that is not JSON);
* ``{command, key, expected}``: passed iff ``reply.get(key) == expected`` (Python ``==``, so ``1``
  equals ``true``); an error reply therefore fails the check;
* ``{command, eval}``: passed iff the expression is truthy with ``result`` bound to the reply,
  **also when the reply is an error** (``"error" in result`` passes there); an exception fails;
  ``eval`` wins over an ``expected`` next to it;
* ``{judge: "llm", prompt, command?}``: the reply of its command, if any, is kept for the judge
  (``grading.py`` decides).

The answer is one entry per check shaped as ``verify_task``'s ``details``, plus the checks whose
verifier could not answer (for the strict ``--opencomputer-verifier-errors error``).

Differences from the reference, on purpose: ``eval`` runs inside the sandbox in its own
``python3`` (never in the pytest process; ``result``, ``data`` and ``json`` are its globals), and a
``key`` check over a list reply fails that check where ``verify_task`` raises for the whole task.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentbench.benches.opencomputer.tasks import check_kind
from pytest_agentbench.text import shorten
from pytest_agentbench.untrusted import loads

if TYPE_CHECKING:
    from pytest_agentbench.infra.sandbox import Sandbox

#: Where the app's verifier is placed inside the sandbox (OpenComputer's path).
VERIFIER_DIR = "/home/user/verifiers"
#: The reference harness's timeout per verifier command.
DEFAULT_TIMEOUT = 30.0
#: ``fail``: a verifier error fails its check (OpenComputer's rule); ``error``: the item errors.
ON_ERROR = ("fail", "error")
#: Verifier output beyond this is cut before it is parsed (the check then reads an error reply).
MAX_OUTPUT_CHARS = 16 << 20

#: ``judge(check, output)``: the task's check (``prompt``, ``description``, ``command``) and the
#: verifier's parsed output for its command (None without one). Returns True, False, None (cannot
#: tell), or ``(passed, reason)``.
Judge = Callable[[dict[str, Any], Any], Any]

_EVAL_PROGRAM = r"""
import json, sys
out = []
for item in json.load(sys.stdin):
    scope = {"json": json, "result": item["result"], "data": item["result"]}
    try:
        value = eval(item["expr"], scope)
    except Exception as exc:
        out.append({"passed": False, "error": f"{type(exc).__name__}: {exc}"})
    else:
        out.append({"passed": bool(value), "value": repr(value)[:200]})
json.dump(out, sys.stdout)
"""


def verifier_script(verifiers_dir: Path, app: str) -> Path | None:
    """The app's verifier: OpenComputer's ``<dir>/<app>/<app>.py``, or a flat ``<dir>/<app>.py``."""
    for candidate in (verifiers_dir / app / f"{app}.py", verifiers_dir / f"{app}.py"):
        if candidate.is_file():
            return candidate
    return None


def install_verifier(sandbox: Sandbox, script: Path, app: str) -> str:
    """Copy the verifier to ``/home/user/verifiers/<app>.py`` (again before every grading, so an end
    state cannot bring its own); return that sandbox path."""
    target = f"{VERIFIER_DIR}/{app}.py"
    # replaces a planted symlink or folder on the way, never follows one; the script itself is read
    # without following a link inside its app folder (a link there must not bring a host file in)
    sandbox.place(script, target, within=script.parent)
    sandbox.localize(target)
    return target


@dataclass(frozen=True)
class VerifierReply:
    """One verifier call: what ``verify_task`` would hold as ``data``, and why it is an error reply
    (None when the verifier answered)."""

    command: str
    data: Any
    error: str | None = None


def run_verifier(sandbox: Sandbox, verifier: str, command: str, timeout: float) -> VerifierReply:
    """Run one check command in the sandbox, as ``verification.run_verifier`` does."""
    argv = ["python3", verifier, *shlex.split(command)]
    try:
        done = sandbox.run(argv, timeout=timeout)
    except OSError as exc:
        return VerifierReply(command, {"error": f"cannot start python3: {exc}"}, f"cannot start python3: {exc}")
    if done.timed_out:
        why = f"Command timed out after {timeout:g}s"
        return VerifierReply(command, {"error": why}, f"timed out after {timeout:g} s (killed)")
    if done.output_over:
        why = f"output over {done.output_over} MB"
        return VerifierReply(command, {"error": why}, f"{why} (killed)")
    try:
        if len(done.stdout) > MAX_OUTPUT_CHARS:
            raise ValueError(f"more than {MAX_OUTPUT_CHARS} characters of output")
        data = loads(done.stdout)
    except ValueError as exc:
        if done.returncode == 0:
            return VerifierReply(command, {"error": str(exc)[:300]},
                                 f"verifier printed {shorten(done.stdout, 80, '') or 'nothing'!r}, not JSON")
        tail = done.stderr.strip().splitlines()
        why = shorten(tail[-1], 200, "") if tail else "no output on stderr"
        return VerifierReply(command, {"error": done.stderr[:300]}, f"verifier exited {done.returncode}: {why}")
    if isinstance(data, dict) and "error" in data:
        return VerifierReply(command, data, f"verifier error: {shorten(data['error'], 200, '')}")
    if done.returncode != 0:
        return VerifierReply(command, data, f"verifier exited {done.returncode}")
    return VerifierReply(command, data)


def run_evals(sandbox: Sandbox, items: list[tuple[str, Any]], timeout: float) -> list[dict[str, Any]]:
    """Evaluate ``(expression, result)`` pairs in one ``python3`` process inside the sandbox.
    Each answer is ``{"passed": bool, "value": repr}`` or ``{"passed": False, "error": ...}``.
    ``RuntimeError`` when the process itself fails (an expression that never ends, say)."""
    if not items:
        return []
    payload = json.dumps([{"expr": expr, "result": result} for expr, result in items])
    done = sandbox.run(["python3", "-I", "-c", _EVAL_PROGRAM], timeout=timeout, input=payload)
    if not done.ok:
        raise RuntimeError(f"the eval expressions did not finish: {done.summary()}")
    answers = loads(done.stdout)
    if not isinstance(answers, list) or len(answers) != len(items):
        raise RuntimeError("the eval expressions gave a malformed answer")
    return answers


@dataclass
class CheckRun:
    """``verify_task``-shaped details, one per check, and the checks whose verifier could not answer."""

    details: list[dict[str, Any]] = field(default_factory=list)
    #: one line per check whose verifier could not answer (empty when all answered)
    errors: list[str] = field(default_factory=list)


def run_checks(sandbox: Sandbox, verifier: str, checks: list[dict[str, Any]], *,
               timeout: float = DEFAULT_TIMEOUT) -> CheckRun:
    """Run every check of a task against the sandbox's current state."""
    run = CheckRun()
    slots: list[dict[str, Any] | None] = [None] * len(checks)
    evals: list[tuple[int, str, Any]] = []
    for index, check in enumerate(checks):
        kind = check_kind(check)
        if kind == "llm":
            judged: str | None = check.get("command")  # optional for a judged check
            reply = run_verifier(sandbox, verifier, judged, timeout) if judged else None
            if reply is not None and reply.error is not None:
                run.errors.append(f"verification[{index}] `{judged}`: {reply.error}")
            slots[index] = {"command": judged or "(screenshots)", "description": check.get("description",
                            check.get("prompt")), "judge": "llm", "passed": False, "reason": "",
                            "result": reply.data if reply is not None else {}}
            continue
        command: str = check["command"]  # every other kind has one (tasks.py checks it)
        reply = run_verifier(sandbox, verifier, command, timeout)
        if reply.error is not None:
            run.errors.append(f"verification[{index}] `{command}`: {reply.error}")
        if kind == "eval":
            evals.append((index, check["eval"], reply.data))
            continue
        key, expected = check["key"], check["expected"]
        if isinstance(reply.data, dict):
            actual = reply.data.get(key)
            passed = actual == expected
        else:
            actual, passed = None, False
            run.errors.append(f"verification[{index}] `{command}`: the verifier returned a "
                              f"{type(reply.data).__name__}, not an object with {key!r}")
        slots[index] = {"command": command, "key": key, "expected": expected, "actual": actual,
                        "passed": passed, "result": reply.data}
    try:
        answers = run_evals(sandbox, [(expr, data) for _, expr, data in evals], timeout)
    except (RuntimeError, ValueError, OSError) as exc:
        answers = [{"passed": False, "error": str(exc)} for _ in evals]
        for index, _, _ in evals:
            run.errors.append(f"verification[{index}] `{checks[index]['command']}`: {exc}")
    for (index, _expr, data), answer in zip(evals, answers, strict=True):
        entry: dict[str, Any] = {"command": checks[index]["command"],
                                 "description": checks[index].get("description", checks[index]["command"]),
                                 "passed": bool(answer.get("passed")), "result": data}
        if "error" in answer:
            entry["eval_error"] = answer["error"]
        else:
            entry["eval_value"] = answer.get("value")
        slots[index] = entry
    run.details = [d for d in slots if d is not None]
    return run


def load_judge(spec: str, rootdir: str | None = None) -> Judge:
    """``module:callable`` importable from installed packages, the rootdir or the current folder.
    ``ValueError`` naming the spec when it cannot be loaded or is not callable."""
    from pytest_agentbench.loading import LoadError, import_callable

    module_name, colon, attr = spec.strip().partition(":")
    if not colon or not module_name or not attr:
        raise ValueError(f"--opencomputer-judge {spec!r}: use module:callable, a judge(check, output) -> bool | None")
    try:
        target = import_callable(module_name, attr, rootdir)
    except LoadError as exc:
        raise ValueError(f"cannot load --opencomputer-judge {spec!r}: {exc}") from None
    if not callable(target):
        raise LoadError(f"--opencomputer-judge {spec!r} is not callable (a {type(target).__name__})")
    judge: Judge = target  # import_callable returns Any; callable was just checked
    return judge
