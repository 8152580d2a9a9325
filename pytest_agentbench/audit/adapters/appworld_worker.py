"""The AppWorld side of the verifier audit. It runs INSIDE AppWorld's own interpreter.

AppWorld pins pydantic 1, so it cannot share a process with this package. The adapter
(``appworld.py`` beside this file) starts this script once per step::

    <appworld python> -P appworld_worker.py CMD --root ROOT --out OUT [--split S] [--task-id T] [--runs FILE]

and reads the JSON it writes to OUT. The script uses the standard library and ``appworld`` only
(plus ``munch``, which AppWorld installs and its solutions take), runs on Python 3.9+, and never
imports ``pytest_agentbench``. It writes OUT only when the command finished; a failure leaves a
traceback on stderr and exit status 1. It never writes to stdout (AppWorld itself prints there).
The commands and their OUT documents are listed in ``appworld.py``.

Per world: a fresh ``AppWorld`` under an experiment name of its own (``agentbench_ref_<task>_<pid>``
for the reference, ``agentbench_run_<task>_<pid>_<i>`` per delivered run), and that experiment's
output folder is deleted when the world closes. The end state is read back before the checker runs:
only tables whose write counter (``world.models.model_hashes()``) is non-zero are read, in full, at
the end and at the start (``world.task.model_collection``), values stringified, records matched by id.
"""

from __future__ import annotations  # the annotations below are for mypy; Python 3.9 never evaluates them

import argparse
import copy
import importlib.util
import json
import os
import platform
import re
import shutil
import sys
import traceback
import types
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only mypy reads the annotations (``from __future__``), so 3.10 syntax is safe here
    #: One table record as read back: column name -> value as a string (None stays None).
    Row = dict[str, str | None]

#: The options AppWorld's own solution checks use; every world of the audit is made with them.
WORLD_OPTIONS = {
    "raise_on_failure": False,
    "ground_truth_mode": "full",
    "add_login_shortcut": True,
    "munchify_response": True,
    "parse_datetimes": True,
    "allow_datetime_change": True,
}
METHODS = ("get", "post", "put", "patch", "delete")


def _appworld(root: str) -> types.ModuleType:
    os.environ["APPWORLD_ROOT"] = root
    import appworld

    update_root = getattr(appworld, "update_root", None)
    if update_root is not None:
        update_root(root)
    module: types.ModuleType = appworld  # untyped upstream (Any to mypy); it is the package's module
    return module


def _plain(value: object) -> Any:
    """A JSON-safe copy (datetimes and other objects become strings)."""
    return json.loads(json.dumps(value, default=str))


def _describe(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return "%s: %s" % (type(exc).__name__, lines[0]) if lines else type(exc).__name__


def _close(world: Any, experiment: str, root: str) -> None:
    if world is not None:
        try:
            world.close()
        except Exception:  # noqa: BLE001 - closing must not hide the run's result
            traceback.print_exc(file=sys.stderr)
    shutil.rmtree(os.path.join(root, "experiments", "outputs", experiment), ignore_errors=True)


# -- readback ---------------------------------------------------------------------------------

def _write_counters(world: Any) -> dict[str, int]:
    return {name: value for name, value in sorted(world.models.model_hashes().items()) if value}


def _read(collection: Any, names: list[str]) -> dict[str, list[Row]]:
    """Every record of the named tables (``app.Model``), values stringified."""
    collection.reset_db_home_path()  # the model classes are shared: point them at this collection
    tables: dict[str, list[Row]] = {}
    for name in names:
        app, model = name.split(".", 1)
        rows: list[Row] = []
        for record in collection[app][model].all():
            rows.append({str(k): (None if v is None else str(v)) for k, v in record.to_dict().items()})
        tables[name] = rows
    return tables


def _diff(before_rows: list[Row], after_rows: list[Row]) -> tuple[list[Row], list[Row], list[dict[str, Row]]]:
    if all("id" in r for r in before_rows + after_rows):
        before = {r["id"]: r for r in before_rows}
        after = {r["id"]: r for r in after_rows}
        added = [after[k] for k in after if k not in before]
        removed = [before[k] for k in before if k not in after]
        updated = [{"before": before[k], "after": after[k]} for k in after if k in before and before[k] != after[k]]
        return added, removed, updated
    # No ids: compare as multisets of records.
    remaining = [json.dumps(r, sort_keys=True) for r in before_rows]
    added = []
    for row in after_rows:
        key = json.dumps(row, sort_keys=True)
        if key in remaining:
            remaining.remove(key)
        else:
            added.append(row)
    return added, [json.loads(k) for k in remaining], []


def _readback(world: Any, names: Iterable[str]) -> dict[str, dict[str, list[Any]]]:
    """The effect of the run on the named tables: records added, removed and updated."""
    names = sorted(names)
    end = _read(world.models, names)
    start = _read(world.task.model_collection, names)
    world.models.reset_db_home_path()  # back to the world's own state
    effect: dict[str, dict[str, list[Any]]] = {}
    for name in names:
        added, removed, updated = _diff(start[name], end[name])
        if added or removed or updated:
            effect[name] = {"added": added, "removed": removed, "updated": updated}
    return effect


# -- commands ---------------------------------------------------------------------------------

def probe(args: argparse.Namespace, root: str) -> dict[str, Any]:
    appworld = _appworld(root)
    from appworld import AppWorld, load_task_ids  # noqa: F401 - fail here, not in the first task

    try:
        from appworld.common.constants import DB_VERSION
    except Exception:  # noqa: BLE001 - the data version is informative only
        DB_VERSION = None
    return {"appworld": getattr(appworld, "__version__", None), "data": DB_VERSION,
            "python": platform.python_version()}


def list_tasks(args: argparse.Namespace, root: str) -> list[str]:
    _appworld(root)
    from appworld import load_task_ids

    return [str(task_id) for task_id in load_task_ids(args.split)]


def _main_user(world: Any) -> Any:
    from appworld.apps.admin.models import MainUserMunch

    email = dict(world.task.supervisor)["email"]
    record = world.models["admin"]["MainUser"].find_one(email=email)
    if record is None:
        raise LookupError("the task's supervisor %s is not in admin.MainUser" % email)
    return MainUserMunch.from_main_user(record)


def _solution(folder: str, task_id: str) -> tuple[Callable[..., object], Any]:
    spec = importlib.util.spec_from_file_location("agentbench_solution_%s" % task_id.replace("-", "_"),
                                                  os.path.join(folder, "solution.py"))
    if spec is None or spec.loader is None:
        raise ImportError("cannot load %s" % os.path.join(folder, "solution.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with open(os.path.join(folder, "public_data.json"), encoding="utf-8") as f:
        public_data = json.load(f)
    return module.solution, public_data


def reference(args: argparse.Namespace, root: str) -> dict[str, Any]:
    _appworld(root)
    from appworld import AppWorld
    from munch import munchify

    task_id = args.task_id
    truth = os.path.join(root, "data", "tasks", task_id, "ground_truth")
    if os.path.isdir(truth) and not os.path.isfile(os.path.join(truth, "solution.py")):
        return {"task_id": task_id, "calls": [], "effect": {}, "detail": {},
                "error": "the task ships no solution (ground_truth/solution.py); only train and dev tasks have one"}
    experiment = "agentbench_ref_%s_%d" % (task_id, os.getpid())
    world = None
    try:
        world = AppWorld(task_id=task_id, experiment_name=experiment, **WORLD_OPTIONS)
        error = None
        try:
            solution, public_data = _solution(truth, task_id)
            solution(_main_user(world), world.apis, world.requester, munchify(public_data))
        except Exception as exc:  # noqa: BLE001 - reported as the reference's error
            traceback.print_exc(file=sys.stderr)
            error = "the shipped solution raised %s" % _describe(exc)
        calls = [{"method": str(c["method"]).lower(), "url": c["url"], "data": _plain(c.get("data") or {})}
                 for c in world.requester.requests]
        claimed = any(str(r.to_dict().get("status")) == "success"
                      for r in world.models["supervisor"]["Task"].all())
        if error is None and not claimed:
            error = "the shipped solution did not report success"
        counters = _write_counters(world)
        effect = _readback(world, counters)
        return {"task_id": task_id, "calls": calls, "effect": effect, "error": error,
                "detail": {"claimed_success": claimed, "write_counters": _plain(counters)}}
    finally:
        _close(world, experiment, root)


def _replay(requester: Any, call: dict[str, Any]) -> int:
    """Send one call; its status code, or -1 when it raised."""
    method = str(call.get("method", "")).lower()
    if method not in METHODS:
        return -1
    try:
        send = getattr(requester, "_" + method)
        # The data is copied: the requester pops access_token out of the dict it is given.
        response = send(call.get("url", ""), copy.deepcopy(call.get("data") or {}),
                        getattr(requester, "client", None), raise_on_failure=False)
        return int(response.status_code)
    except Exception:  # noqa: BLE001 - a crashed call is part of the run's result
        traceback.print_exc(file=sys.stderr)
        return -1


def _deliver_one(root: str, task_id: str, index: int, run: dict[str, Any]) -> dict[str, Any]:
    from appworld import AppWorld

    result: dict[str, Any] = {"run_id": run.get("run_id"), "effect": {}, "verdict": None, "statuses": [], "error": None,
              "detail": {}}
    experiment = "agentbench_run_%s_%d_%d" % (task_id, os.getpid(), index)
    world = None
    try:
        world = AppWorld(task_id=task_id, experiment_name=experiment, **WORLD_OPTIONS)
        for call in run.get("calls") or []:
            result["statuses"].append(_replay(world.requester, call))
        counters = _write_counters(world)
        result["detail"]["write_counters"] = _plain(counters)
        result["effect"] = _readback(world, counters)  # read back BEFORE the checker runs
        if run.get("grade", True):
            world._save_state(world.output_db_home_path_on_disk)  # the checker reads the end state from disk
            report = world.evaluate(suppress_errors=True).to_dict()
            result["verdict"] = "PASS" if report.get("success") else "FAIL"
            result["detail"]["num_tests"] = report.get("num_tests")
            result["detail"]["num_failed"] = len(report.get("failures") or [])
    except Exception as exc:  # noqa: BLE001 - one failed run must not lose the batch
        traceback.print_exc(file=sys.stderr)
        result["error"] = _describe(exc)
    finally:
        _close(world, experiment, root)
    return result


def deliver(args: argparse.Namespace, root: str) -> list[dict[str, Any]]:
    _appworld(root)
    with open(args.runs, encoding="utf-8") as f:
        runs = json.load(f)
    return [_deliver_one(root, args.task_id, index, run) for index, run in enumerate(runs)]


COMMANDS: dict[str, Callable[[argparse.Namespace, str], object]] = {
    "probe": probe, "list": list_tasks, "reference": reference, "deliver": deliver}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="appworld_worker", description="AppWorld side of the verifier audit")
    parser.add_argument("command", choices=sorted(COMMANDS))
    parser.add_argument("--root", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--split", default="train")
    parser.add_argument("--task-id")
    parser.add_argument("--runs")
    args = parser.parse_args(argv)
    if args.command in ("reference", "deliver") and not args.task_id:
        parser.error("%s needs --task-id" % args.command)
    if args.task_id is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", args.task_id):
        parser.error("not a task id: %r" % args.task_id)  # it becomes part of folder names
    if args.command == "deliver" and not args.runs:
        parser.error("deliver needs --runs")
    root = os.path.abspath(args.root)
    result = COMMANDS[args.command](args, root)
    partial = args.out + ".partial"
    with open(partial, "w", encoding="utf-8") as f:
        json.dump(result, f, default=str)
    os.replace(partial, args.out)  # the adapter never sees a half-written result
    return 0


if __name__ == "__main__":
    sys.exit(main())
