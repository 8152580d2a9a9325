"""Grade tasks' start states the way OpenComputer's own task runner does, with nothing of
pytest-agentbench: ``setup_sandbox_session`` with its Docker backend, the app's ``auto_save_app``
(when it has a save shortcut), then ``verify_task``; the container is killed after each task.

    python docker_reference.py CHECKOUT IMAGE OUT.json [--solve SOLVE.json] [--homes DIR] TASK_ID...

``--solve`` names a JSON file mapping task ids to a bash script: run in the container after setup
(``sandbox.commands.run``), as the agent's work; such a task is graded without the auto-save (its
files are already written, as an end state's are). ``--homes DIR``: each solved task's whole
``/home/user`` right after its script, as ``DIR/<task id>.tar`` (a whole-home snapshot).

OUT.json maps each task id to ``{"passed", "total", "checks": [bool...], "setup_seconds"}`` or
``{"error": "..."}``. LLM-judged checks are answered "failed" (no judge configured), as the plugin
answers them without ``--opencomputer-judge``.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    checkout, image, out = sys.argv[1:4]
    tasks = sys.argv[4:]
    solve: dict[str, str] = {}
    homes = None
    while tasks[:1] in (["--solve"], ["--homes"]):
        if tasks[0] == "--solve":
            with open(tasks[1]) as handle:
                solve = json.load(handle)
        else:
            homes = tasks[1]
        tasks = tasks[2:]
    sys.path.insert(0, checkout)
    from evaluation.apps.registry import get_app_spec
    from evaluation.apps.save import auto_save_app
    from evaluation.runtime import verification
    from evaluation.runtime.sandbox_session import setup_sandbox_session

    verification._llm_judge_criteria = lambda criteria, shots, outputs: [
        {"passed": False, "reason": "no judge"} for _ in criteria]
    results = {}
    for task_id in tasks:
        with open(f"{checkout}/task_generator/tasks/{task_id}/task.json") as handle:
            task = json.load(handle)
        started = time.monotonic()
        try:
            session = setup_sandbox_session(task["app"], task=task, env_backend="docker", docker_image=image)
        except Exception as exc:  # noqa: BLE001 - recorded for the comparison
            results[task_id] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
            continue
        setup_seconds = time.monotonic() - started
        try:
            spec = get_app_spec(task["app"])
            if task_id in solve:
                session.sandbox.commands.run(solve[task_id], timeout=60)
                if homes is not None:
                    session.sandbox.commands.run("tar -C /home/user -cf /tmp/home.tar .", timeout=120)
                    with open(f"{homes}/{task_id}.tar", "wb") as handle:
                        handle.write(session.sandbox.files.read("/tmp/home.tar", format="bytes"))
            elif spec.save_shortcut:
                auto_save_app(session.sandbox, task["app"], spec.save_shortcut, save_window_name=spec.save_window_name)
            passed, total, details = verification.verify_task(session.sandbox, task["app"], task["verification"])
            results[task_id] = {"passed": passed, "total": total, "checks": [bool(d["passed"]) for d in details],
                                "setup_seconds": round(setup_seconds, 2)}
        finally:
            session.sandbox.kill()
    with open(out, "w") as handle:
        json.dump(results, handle, indent=1)


if __name__ == "__main__":
    main()
