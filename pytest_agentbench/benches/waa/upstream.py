"""Scoring WAA tasks with upstream's own evaluator code, from the user's WAA checkout.

Upstream scores on the client side: ``DesktopEnv.evaluate`` runs the task's postconfig steps, reads
the VM through the WAA server's endpoints with its getters, and calls its metric functions with
their ``options``. A user who runs WAA tasks already has the checkout that holds both the task
files and ``client/desktop_env/evaluators``, so this module takes the code from there instead of
re-implementing ~10,000 lines of metrics (or trusting a separate evaluate server).

* :func:`locate_client` finds upstream's client folder (the one holding ``desktop_env/``) from
  ``--waa-upstream`` (a WAA checkout, its ``src/win-arena-container/client`` folder, or any folder
  with ``client/desktop_env``), and :func:`infer_client` from ``--waa-examples`` when the examples
  lie inside a checkout.
* :class:`UpstreamEvaluator` runs ``upstream_worker.py`` (beside this file) once per evaluation in
  the interpreter that has upstream's dependencies (``--waa-python``, default: this one). Upstream's
  code stays out of the pytest process: its imports reach for ~40 packages and set up logging and
  ``sys.path`` globally. The two sides exchange JSON files in a fresh temporary folder.

Outcomes: the worker's score is upstream's number. Everything that is not a judgement of the VM
state is an error, never a 0: the worker not starting or timing out, the server unreachable or
answering 5xx while the getters read it (:class:`InfrastructureError`); a metric or getter upstream
does not have, a package a metric needs that is missing, upstream raising
(:class:`EvaluationError`).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentbench.benchmark import EvaluationError, InfrastructureError
from pytest_agentbench.untrusted import load_file

if TYPE_CHECKING:
    from pytest_agentbench.model import Criterion, Verdict

WORKER = Path(__file__).with_name("upstream_worker.py")
#: Runs the worker by path, so its folder (this package's modules) never lands on ``sys.path``
#: ahead of upstream's; ``-P`` would do the same but needs Python 3.11, and upstream's own
#: requirements pin packages for older Pythons.
_LAUNCH = "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
#: Where the client folder sits in a WindowsAgentArena checkout.
CHECKOUT_CLIENT = Path("src") / "win-arena-container" / "client"
#: Upstream has no overall bound on scoring; its slowest calls allow 300 s (the accessibility tree).
DEFAULT_EVALUATE_TIMEOUT = 600.0
STDERR_TAIL = 8

HOW_TO_POINT = ("pass --waa-upstream DIR (a WindowsAgentArena checkout, or its src/win-arena-container/client "
                "folder; ini agentbench_waa_upstream), or score with your own evaluate server through "
                "--waa-evaluate-url URL")


class WAAUpstreamError(ValueError):
    """The upstream checkout or interpreter cannot be used. The message is one line."""


def _has_client(folder: Path) -> bool:
    return (folder / "desktop_env" / "envs" / "desktop_env.py").is_file() and (
        folder / "desktop_env" / "evaluators").is_dir()


def _candidates(path: Path) -> list[Path]:
    return [path, path / CHECKOUT_CLIENT, path / "client"]


def locate_client(path: str | Path) -> Path:
    """The upstream client folder for ``--waa-upstream PATH``; a one-line error when there is none."""
    path = Path(path).expanduser()
    if not path.is_dir():
        what = "is not a folder" if path.exists() else "does not exist"
        raise WAAUpstreamError(f"--waa-upstream {path} {what}; {HOW_TO_POINT}")
    for candidate in _candidates(path):
        if _has_client(candidate):
            return candidate.resolve()
    raise WAAUpstreamError(
        f"--waa-upstream {path} holds no upstream evaluator code (looked for desktop_env/envs/desktop_env.py in "
        f"{', '.join(str(c) for c in _candidates(path))}); {HOW_TO_POINT}")


def infer_client(examples: str | Path | None) -> Path | None:
    """Upstream's client folder when the WAA examples lie inside a checkout, else None.

    The examples folder is ``client/evaluation_examples_windows`` (or its ``examples/``), so the
    client is one of its first few ancestors, or sits below one of them."""
    if examples is None:
        return None
    folder = Path(examples).expanduser().resolve()
    for ancestor in [folder, *list(folder.parents)[:5]]:
        for candidate in _candidates(ancestor):
            if _has_client(candidate):
                return candidate
    return None


def resolve_python(python: str | None) -> str:
    """``--waa-python``: an executable file, or a name on PATH; default: this interpreter."""
    if not python:
        return sys.executable
    found = shutil.which(python) if os.sep not in python else (python if os.access(python, os.X_OK) else None)
    if not found or not Path(found).is_file():
        raise WAAUpstreamError(f"--waa-python {python} is not an executable Python; pass the interpreter that has "
                               "upstream's client requirements (e.g. a venv's bin/python)")
    return found


@dataclass(frozen=True)
class UpstreamResult:
    """The worker's reply, as read back (see ``upstream_worker.py``)."""

    raw: dict[str, Any]

    @property
    def calls(self) -> list[dict[str, Any]]:
        calls = self.raw.get("calls")
        return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _tail(text: str, n: int = STDERR_TAIL) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-n:])[-1500:]


class UpstreamEvaluator:
    """Scores one task at a time with upstream's ``DesktopEnv.evaluate`` in its own interpreter."""

    def __init__(self, client_dir: str | Path, python: str | None = None, *,
                 timeout: float = DEFAULT_EVALUATE_TIMEOUT) -> None:
        self.client_dir = Path(client_dir)
        self.python = resolve_python(python)
        self.timeout = timeout

    def describe(self) -> dict[str, Any]:
        return {"scorer": "upstream", "upstream_client": str(self.client_dir), "python": self.python}

    # ------------------------------------------------------------------ running the worker
    def run(self, task: dict[str, Any], last_action: str | None, server_url: str,
            cdp_url: str | None = None) -> UpstreamResult:
        """Score once; raise InfrastructureError when the worker gave no reply."""
        return self._job({"task": task, "last_action": last_action, "server_url": server_url, "cdp_url": cdp_url})

    def setup(self, steps: list[dict[str, Any]], server_url: str, cdp_url: str | None = None) -> list[str]:
        """Run setup steps with upstream's ``SetupController``; return what upstream logged as
        warnings or errors (it goes on from those), raise InfrastructureError for what it raised."""
        raw = self._job({"setup": steps, "server_url": server_url, "cdp_url": cdp_url}).raw
        if raw.get("problem"):
            raise InfrastructureError(f"upstream setup: {raw['problem']}")
        if raw.get("raised"):
            raise InfrastructureError(f"upstream setup of {[s.get('type') for s in steps]} raised {raw['raised']}")
        return [f"upstream setup: {line}" for line in raw.get("log") or []]

    def _job(self, job: dict[str, Any]) -> UpstreamResult:
        with tempfile.TemporaryDirectory(prefix="agentbench-waa-eval-") as tmp:
            job_file = Path(tmp) / "job.json"
            out = Path(tmp) / "out.json"
            job_file.write_text(json.dumps({**job, "cache_dir": str(Path(tmp) / "cache")}), encoding="utf-8")
            argv = [self.python, "-c", _LAUNCH, str(WORKER), "--client", str(self.client_dir), "--job",
                    str(job_file), "--out", str(out)]
            stderr = self._spawn(argv, cwd=tmp)
            if not out.is_file():
                raise InfrastructureError(f"upstream's evaluator ({self.python}) gave no result"
                                          + (f": {_tail(stderr)}" if stderr.strip() else ""))
            try:
                raw = load_file(out)
            except (OSError, ValueError) as exc:
                raise InfrastructureError(f"upstream's evaluator wrote an unreadable result: {exc}") from exc
        if not isinstance(raw, dict):
            raise InfrastructureError(f"upstream's evaluator wrote {type(raw).__name__}, expected an object")
        return UpstreamResult(raw)

    def _spawn(self, argv: Sequence[str], cwd: str) -> str:
        from pytest_agentbench.workers import WorkerTimeout, run_worker

        env = dict(os.environ)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPATH", None)  # upstream's folder goes first on sys.path, nothing of ours
        try:
            _, stderr = run_worker(argv, cwd=cwd, env=env, timeout=self.timeout)
        except OSError as exc:
            raise InfrastructureError(f"cannot start upstream's evaluator with {argv[0]}: {exc}") from exc
        except WorkerTimeout:
            raise InfrastructureError(
                f"upstream's evaluator did not finish within {self.timeout:g}s (--waa-evaluate-timeout)") from None
        return stderr[-20000:]

    # ------------------------------------------------------------------ the verdict
    def evaluate(self, task: dict[str, Any], last_action: str | None, server_url: str,
                 cdp_url: str | None = None) -> Verdict:
        return verdict_from(self.run(task, last_action, server_url, cdp_url), task)


def verdict_from(result: UpstreamResult, task: dict[str, Any]) -> Verdict:
    """Turn the worker's reply into a Verdict, or raise when it is not a judgement of the VM."""
    from pytest_agentbench.model import Verdict  # here: collecting WAA tasks never loads the models

    raw = result.raw
    task_id = task.get("id", "?")
    if raw.get("problem"):
        raise EvaluationError(f"task {task_id}: {raw['problem']}")
    infrastructure = raw.get("infrastructure") or []
    if infrastructure:
        more = f" (+{len(infrastructure) - 1} more)" if len(infrastructure) > 1 else ""
        raise InfrastructureError(f"scoring could not read the VM: {infrastructure[0]}{more}")
    missing = [c for c in result.calls if c.get("missing")]
    if missing:
        raise EvaluationError(f"task {task_id}: {missing[0].get('error')}")
    if raw.get("raised"):
        raise EvaluationError(f"task {task_id}: upstream's evaluate raised {raw['raised']}")
    score = raw.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise EvaluationError(f"task {task_id}: upstream's evaluate returned {raw.get('score_repr')!r}, not a number")
    value = min(1.0, max(0.0, float(score)))
    criteria = _criteria(result, task)
    reason = _reason(result, task, value)
    return Verdict(score=value, passed=value >= 1.0, criteria=criteria, reason=reason)


def _criteria(result: UpstreamResult, task: dict[str, Any]) -> list[Criterion]:
    from pytest_agentbench.model import Criterion

    criteria: list[Criterion] = []
    getter_errors: list[str] = []
    for call in result.calls:
        if call.get("kind") != "metric":
            if call.get("error"):
                getter_errors.append(f"{call.get('kind')} getter {call.get('name')}: {call['error']}")
            continue
        value = call.get("value")
        numeric = float(value) if isinstance(value, (int, float)) else None
        detail = "; ".join(getter_errors)
        getter_errors = []
        if call.get("error"):
            detail = (detail + "; " if detail else "") + str(call["error"])
        criteria.append(Criterion(name=str(call.get("name")), passed=None if numeric is None else numeric >= 1.0,
                                  actual=numeric if numeric is not None else value, expected=1.0, detail=detail))
    evaluator = task.get("evaluator") or {}
    if not criteria:
        func = evaluator.get("func") if isinstance(evaluator, dict) else None
        name = func if isinstance(func, str) else "waa_evaluator"
        score = result.raw.get("score")
        criteria.append(Criterion(name=name, passed=isinstance(score, (int, float)) and float(score) >= 1.0,
                                  actual=score, expected=1.0, detail="; ".join(getter_errors)))
    return criteria


def _reason(result: UpstreamResult, task: dict[str, Any], value: float) -> str:
    evaluator = task.get("evaluator") or {}
    metrics = [c for c in result.calls if c.get("kind") == "metric"]
    if isinstance(evaluator, dict) and evaluator.get("func") == "infeasible":
        return f"infeasible task: score {value:g} (1 only when the agent's last action is FAIL)"
    if not metrics:
        getter_errors = [c for c in result.calls if c.get("error")]
        if getter_errors:
            first = getter_errors[0]
            return f"score {value:g}: {first.get('kind')} getter {first.get('name')} raised {first.get('error')}"
        return f"score {value:g}" + (" (the agent gave up: FAIL)" if value == 0 else "")
    parts = ", ".join(f"{c.get('name')}={c.get('value')}" for c in metrics)
    conj = evaluator.get("conj", "and") if isinstance(evaluator, dict) else "and"
    return (f"{conj}({parts}) -> {value:g}" if len(metrics) > 1 or isinstance(evaluator.get("func"), list)
            else f"{parts} -> {value:g}")
