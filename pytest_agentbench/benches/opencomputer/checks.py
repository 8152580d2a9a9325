"""OpenComputer's checks, run the way its harness runs them, turned into criteria.

Each check of a task's ``verification`` list runs its ``command`` as
``python3 /home/user/verifiers/<app>.py <subcommand> <args>`` inside the item's sandbox (the
command split with ``shlex``, as the harness does), reads JSON from stdout and decides:

* ``{command, key, expected}``: passed iff ``result[key] == expected`` (Python ``==``, so ``1``
  equals ``true`` as in the reference);
* ``{command, eval}``: passed iff the expression is truthy with ``result`` bound to the output (a
  dict or a list); ``eval`` wins over an ``expected`` next to it; an exception in the expression
  fails the check, as in the reference;
* ``{judge: "llm", prompt, command?}``: judged by the configured judge, else **not evaluated**
  (``passed=None``). The reference harness counts it as failed when no judge answers.

Differences from the reference, each on purpose:

* **A verifier that cannot answer is an evaluation error, not a failed check** (``on_error="error"``,
  the default): an ``{"error": ...}`` reply, a non-zero exit, output that is not JSON, a timeout,
  or a ``key`` check over a list. The item is then an error (the checker broke) rather than a
  failure of the agent. ``on_error="fail"`` gives the reference's rule: the check fails.
* **``eval`` expressions run inside the sandbox**, in a separate ``python3`` process, never in the
  pytest process: they are code from a task file. ``result`` (also ``data``) and ``json`` are
  globals, so a comprehension can use ``result``; in the reference they are locals of the
  harness's function, where ``all(x in result for x in ...)`` raises NameError and fails.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...model import Criterion
from .tasks import check_kind

if TYPE_CHECKING:
    from ...infra.sandbox import Sandbox

#: Where the app's verifier is placed inside the sandbox (OpenComputer's path).
VERIFIER_DIR = "/home/user/verifiers"
#: The reference harness's timeout per verifier command.
DEFAULT_TIMEOUT = 30.0
ON_ERROR = ("error", "fail")

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
    sandbox.place(script, target)
    sandbox.localize(target)
    return target


@dataclass(frozen=True)
class VerifierOutput:
    """One verifier call: the parsed result, or why there is none."""

    command: str
    result: Any = None
    error: str | None = None


def _one_line(text: str, limit: int = 200) -> str:
    return " ".join(text.split())[:limit]


def run_verifier(sandbox: Sandbox, verifier: str, command: str, timeout: float) -> VerifierOutput:
    """Run one check command in the sandbox and read its JSON (see the module docstring for what
    counts as an error)."""
    argv = ["python3", verifier, *shlex.split(command)]
    try:
        done = sandbox.run(argv, timeout=timeout)
    except OSError as exc:
        return VerifierOutput(command, error=f"cannot start python3: {exc}")
    if done.timed_out:
        return VerifierOutput(command, error=f"timed out after {timeout:g} s (killed)")
    try:
        result = json.loads(done.stdout)
    except ValueError:
        result = None
        parsed = False
    else:
        parsed = True
    if isinstance(result, dict) and "error" in result and (done.returncode != 0 or len(result) == 1):
        return VerifierOutput(command, error=f"verifier error: {_one_line(str(result['error']))}")
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()
        why = _one_line(tail[-1]) if tail else "no output on stderr"
        return VerifierOutput(command, error=f"verifier exited {done.returncode}: {why}")
    if not parsed:
        shown = _one_line(done.stdout, 80) or "nothing"
        return VerifierOutput(command, error=f"verifier printed {shown!r}, not JSON")
    return VerifierOutput(command, result=result)


def run_evals(sandbox: Sandbox, items: list[tuple[str, Any]], timeout: float) -> list[dict[str, Any]]:
    """Evaluate ``(expression, result)`` pairs in one ``python3`` process inside the sandbox.
    Each answer is ``{"passed": bool, "value": repr}`` or ``{"passed": False, "error": ...}``.
    ``RuntimeError`` when the process itself fails (an expression that never ends, say)."""
    if not items:
        return []
    payload = json.dumps([{"expr": expr, "result": result} for expr, result in items])
    done = sandbox.run(["python3", "-c", _EVAL_PROGRAM], timeout=timeout, input=payload)
    if not done.ok:
        raise RuntimeError(f"the eval expressions did not finish: {done.summary()}")
    answers = json.loads(done.stdout)
    if not isinstance(answers, list) or len(answers) != len(items):
        raise RuntimeError("the eval expressions gave a malformed answer")
    return answers


@dataclass
class Grading:
    """The criteria of one task, in check order, and the checks that could not run."""

    criteria: list[Criterion] = field(default_factory=list)
    #: one line per check whose verifier could not answer (empty when all answered)
    errors: list[str] = field(default_factory=list)


def _name(check: dict[str, Any]) -> str:
    return str(check.get("description") or check.get("command") or check.get("prompt") or "check")


def _judged(judge: Judge, check: dict[str, Any], output: Any) -> tuple[bool | None, str]:
    answer = judge(check, output)
    reason = ""
    if isinstance(answer, tuple):
        answer, reason = answer[0], str(answer[1]) if len(answer) > 1 else ""
    if answer is not None and not isinstance(answer, bool):
        raise TypeError(f"the judge returned {answer!r}; it must return True, False, None or (passed, reason)")
    return answer, reason


def grade(sandbox: Sandbox, verifier: str, checks: list[dict[str, Any]], *, timeout: float = DEFAULT_TIMEOUT,
          judge: Judge | None = None, on_error: str = "error") -> Grading:
    """Run every check of a task against the sandbox's current state."""
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {', '.join(ON_ERROR)}, got {on_error!r}")
    grading = Grading()
    slots: list[Criterion | None] = [None] * len(checks)
    evals: list[tuple[int, str, Any]] = []

    def failed_to_run(index: int, check: dict[str, Any], error: str, expected: Any = None) -> None:
        command = check.get("command") or "(no command)"
        grading.errors.append(f"verification[{index}] `{command}`: {error}")
        slots[index] = Criterion(name=_name(check), passed=False if on_error == "fail" else None,
                                 detail=f"could not check: {error}", expected=expected)

    for index, check in enumerate(checks):
        kind = check_kind(check)
        command = check.get("command")
        if kind == "llm":
            if judge is None:
                slots[index] = Criterion(
                    name=_name(check), passed=None, expected=check.get("prompt"),
                    detail="LLM-judged: not evaluated (no judge configured; --opencomputer-judge)")
                continue
            output = None
            if command:
                ran = run_verifier(sandbox, verifier, command, timeout)
                if ran.error is not None:
                    failed_to_run(index, check, ran.error, check.get("prompt"))
                    continue
                output = ran.result
            try:
                passed, reason = _judged(judge, check, output)
            except Exception as exc:  # noqa: BLE001 - a broken judge is a checker fault
                failed_to_run(index, check, f"the judge failed: {type(exc).__name__}: {_one_line(str(exc))}",
                              check.get("prompt"))
                continue
            said = "passed" if passed else "not evaluated" if passed is None else "failed"
            detail = "LLM-judged: " + (reason or said)
            slots[index] = Criterion(name=_name(check), passed=passed, detail=detail,
                                     expected=check.get("prompt"), actual=output)
            continue
        ran = run_verifier(sandbox, verifier, command, timeout)
        if ran.error is not None:
            failed_to_run(index, check, ran.error, check.get("eval") if kind == "eval" else check.get("expected"))
            continue
        if kind == "eval":
            evals.append((index, check["eval"], ran.result))
            continue
        key, expected = check["key"], check["expected"]
        if not isinstance(ran.result, dict):
            failed_to_run(index, check, f"the verifier returned a {type(ran.result).__name__}, not an object "
                                        f"with {key!r}", expected)
            continue
        actual = ran.result.get(key)
        passed = actual == expected
        shown = f"{key}={json.dumps(actual)}" + ("" if passed else f", expected {json.dumps(expected)}")
        slots[index] = Criterion(name=_name(check), passed=passed, expected=expected, actual=actual,
                                 detail=f"{shown} ({command})")
    try:
        answers = run_evals(sandbox, [(expr, result) for _, expr, result in evals], timeout)
    except (RuntimeError, ValueError, OSError) as exc:
        for index, expr, _ in evals:
            failed_to_run(index, checks[index], str(exc), expr)
    else:
        for (index, expr, result), answer in zip(evals, answers, strict=True):
            if "error" in answer:
                detail = f"eval raised {answer['error']}: {expr}"
            else:
                detail = f"eval -> {answer.get('value')}: {expr}"
            slots[index] = Criterion(name=_name(checks[index]), passed=bool(answer.get("passed")),
                                     detail=detail, expected=expr, actual=result)
    grading.criteria = [c for c in slots if c is not None]
    return grading


def load_judge(spec: str, rootdir: str | None = None) -> Judge:
    """``module:callable`` importable from installed packages, the rootdir or the current folder.
    ``ValueError`` naming the spec when it cannot be loaded or is not callable."""
    from ...loading import LoadError, import_callable

    module_name, colon, attr = spec.strip().partition(":")
    if not colon or not module_name or not attr:
        raise ValueError(f"--opencomputer-judge {spec!r}: use module:callable, a judge(check, output) -> bool | None")
    try:
        target = import_callable(module_name, attr, rootdir)
    except LoadError as exc:
        raise ValueError(f"cannot load --opencomputer-judge {spec!r}: {exc}") from None
    if not callable(target):
        raise ValueError(f"--opencomputer-judge {spec!r} is not callable (a {type(target).__name__})")
    return target
