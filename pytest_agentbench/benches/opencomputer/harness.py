"""Driving OpenComputer's own harness code (``evaluation/runtime``, ``evaluation/apps``) from the
user's checkout, inside an item's sandbox.

Why: its prepare hooks (Thunderbird's profile extraction, Audacity's and darktable's config files,
Zotero's database migration), its setup order and its ``verify_task`` rules decide scores; running
that code itself keeps them OpenComputer's, version for version, instead of a copy here.

Each phase is one command in the sandbox: ``python3 -I harness_worker.py --checkout ... PHASE``
(the worker is beside this file; its docstring lists the phases and answers), with these
read-only binds for that command only:

========================================  ==============================================
host                                      inside
========================================  ==============================================
``harness_worker.py``                     ``/opt/agentbench/harness_worker.py``
``<checkout>/evaluation``, ``computer_env``  ``/opt/agentbench/oc/evaluation``, ``.../computer_env``
the app's verifier folder                 ``/opt/agentbench/oc/verifiers/<app>``
this task's folder only                   ``/opt/agentbench/oc/task_generator/tasks/<id>``
========================================  ==============================================

so the harness's own ``run_config`` paths resolve to the bound folders and a task's setup code
sees its own files, not the other tasks' checks. Bubblewrap is required: the harness's commands
name ``/home/user`` and ``/tmp`` literally.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentbench.text import shorten
from pytest_agentbench.untrusted import loads

if TYPE_CHECKING:
    from pytest_agentbench.infra.sandbox import Sandbox

WORKER = Path(__file__).with_name("harness_worker.py")
INSIDE = "/opt/agentbench"
CHECKOUT_INSIDE = f"{INSIDE}/oc"
WORKER_INSIDE = f"{INSIDE}/harness_worker.py"
#: Files that make a folder an OpenComputer checkout whose harness can be driven.
MARKERS = ("evaluation/runtime/verification.py", "evaluation/runtime/sandbox_session.py",
           "evaluation/apps/registry.py", "computer_env/backends/base.py")
#: The worker's answer is refused beyond this many bytes (results are cut to 64 kB each inside).
MAX_ANSWER_BYTES = 32 << 20
SETUP_TIMEOUT = 900.0
#: Per check: the harness's 30 s verifier timeout, plus start-up.
VERIFY_TIMEOUT_PER_CHECK = 35.0


class HarnessError(RuntimeError):
    """OpenComputer's harness code could not run, or raised; the message is one line."""


def is_checkout(folder: Path) -> bool:
    return all((folder / marker).is_file() for marker in MARKERS)


def find_checkout(tasks_arg: Path) -> Path | None:
    """The OpenComputer checkout ``--opencomputer-tasks`` names: the folder itself, or the checkout
    two levels up from its ``task_generator/tasks``."""
    for candidate in (tasks_arg, tasks_arg.parent.parent):
        if is_checkout(candidate):
            return candidate
    return None


@dataclass(frozen=True)
class Harness:
    """OpenComputer's harness in ``checkout``; verifiers from ``verifiers`` (its ``verifiers/``
    by default, laid out ``<app>/<app>.py``)."""

    checkout: Path
    verifiers: Path

    def binds(self, task_dir: Path, app: str) -> list[tuple[str, str]]:
        binds = [(str(WORKER), WORKER_INSIDE)]
        for part in ("evaluation", "computer_env"):
            binds.append((str(self.checkout / part), f"{CHECKOUT_INSIDE}/{part}"))
        if (self.verifiers / app).is_dir():
            binds.append((str(self.verifiers / app), f"{CHECKOUT_INSIDE}/verifiers/{app}"))
        binds.append((str(task_dir), f"{CHECKOUT_INSIDE}/task_generator/tasks/{task_dir.name}"))
        return binds

    def call(self, sandbox: Sandbox, phase: str, task_dir: Path, task: dict[str, Any], timeout: float,
             **request: Any) -> dict[str, Any]:
        """Run one worker phase; its JSON answer, or ``HarnessError``."""
        if not sandbox.isolated:
            raise HarnessError("OpenComputer's harness runs only in a bubblewrap sandbox (its commands name "
                               "/home/user and /tmp); install bubblewrap or pass --opencomputer-harness builtin")
        payload = json.dumps({"task": task, **request})
        argv = ["python3", "-I", WORKER_INSIDE, "--checkout", CHECKOUT_INSIDE, phase]
        done = sandbox.run(argv, timeout=timeout, input=payload, ro_binds=self.binds(task_dir, task["app"]))
        if done.timed_out:
            raise HarnessError(f"OpenComputer's harness ({phase}) timed out after {timeout:g} s and was killed")
        if done.output_over:
            raise HarnessError(f"OpenComputer's harness ({phase}): output over {done.output_over} MB, killed")
        if len(done.stdout) > MAX_ANSWER_BYTES:
            raise HarnessError(f"OpenComputer's harness ({phase}) answered more than {MAX_ANSWER_BYTES} bytes")
        try:
            answer = loads(done.stdout) if done.returncode == 0 else None
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            tail = [line for line in done.stderr.strip().splitlines() if line.strip()]
            why = shorten(tail[-1], 300, "") if tail else f"exit status {done.returncode}, no output"
            raise HarnessError(f"OpenComputer's harness ({phase}) failed: {why}")
        return answer

    def setup(self, sandbox: Sandbox, task_dir: Path, task: dict[str, Any], *, hooks: bool = True) -> list[str]:
        """The start state, as ``setup_sandbox_session`` lays it (verifier, env files, hooks,
        setup scripts). The steps run, one line each; ``HarnessError`` naming the failed step."""
        answer = self.call(sandbox, "setup", task_dir, task, SETUP_TIMEOUT, hooks=hooks)
        if answer.get("error"):
            raise HarnessError(f"task {task['id']}: OpenComputer's setup failed at {answer['error']}")
        return [str(step.get("step")) for step in answer.get("steps", []) if isinstance(step, dict)]

    def verify(self, sandbox: Sandbox, task_dir: Path, task: dict[str, Any], *, sleep: bool = False,
               save: bool = False) -> list[dict[str, Any]]:
        """``verify_task``'s per-check details, checked for shape; ``HarnessError`` when it raised."""
        checks = task["verification"]
        timeout = 60.0 + VERIFY_TIMEOUT_PER_CHECK * len(checks)
        answer = self.call(sandbox, "verify", task_dir, task, timeout, sleep=sleep, save=save)
        if answer.get("error"):
            raise HarnessError(f"task {task['id']}: {answer['error']}")
        details = answer.get("details")
        if not isinstance(details, list) or len(details) != len(checks) or not all(
                isinstance(d, dict) and isinstance(d.get("passed"), bool) for d in details):
            raise HarnessError(f"task {task['id']}: OpenComputer's verify_task answered a malformed result")
        return details

    def launch_command(self, sandbox: Sandbox, task_dir: Path, task: dict[str, Any]) -> str:
        answer = self.call(sandbox, "launch", task_dir, task, 60.0)
        command = answer.get("command")
        if not isinstance(command, str) or not command.strip():
            raise HarnessError(f"task {task['id']}: OpenComputer's app spec gave no launch command")
        return command
