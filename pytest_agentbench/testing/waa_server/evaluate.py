"""The reference tool's evaluate server, as ``FakeWAAServer(evaluate=True)`` serves it: ``POST /evaluate``.

The real WAA server has no ``/evaluate``: upstream scores on the harness side, with getters that
read the VM through ``/file``, ``/list_directory`` and friends. The reference tool deploys a separate
evaluate server that takes the task JSON plus ``agent_last_action`` and replies with a score; this
module stands for that server, reading the simulated desktop directly. Metrics: ``exact_match``,
``compare_text_file`` (options ``ignore_blanks``, ``ignore_case``), ``infeasible`` (by the upstream
rule, :mod:`pytest_agentbench.benches.waa.scoring`). Getters: ``rule``, ``vm_file``,
``vm_file_exists_in_vm_folder``, ``cloud_file`` (from ``cloud_files``, url -> bytes, else fetched).
Anything else is a "cannot score" reply: HTTP 422 ``{"success": false, "score": null, "scored":
false, "error_type": "evaluation", ...}``. ``evaluator.postconfig`` runs first; its failures are
collected, not fatal, as upstream logs them and goes on.
"""

from __future__ import annotations

import ntpath
import re
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from pytest_agentbench.benches.waa import scoring
from pytest_agentbench.testing.waa_server.desktop import SimulatedDesktop

SUPPORTED_METRICS = ("exact_match", "compare_text_file", "infeasible")
SUPPORTED_GETTERS = ("rule", "vm_file", "vm_file_exists_in_vm_folder", "cloud_file")


class ReferenceEvaluator:
    """Scores a task against a :class:`SimulatedDesktop` as the reference evaluate server would."""

    def __init__(self, desktop: SimulatedDesktop, cloud_files: dict[str, bytes]) -> None:
        self.desktop = desktop
        #: Gold files by URL, served offline (``cloud_file`` getters look here first).
        self.cloud_files = cloud_files
        #: where fetched files are put for the metrics: made on first use, removed by :meth:`close`
        self._cache: tempfile.TemporaryDirectory[str] | None = None

    def close(self) -> None:
        if self._cache is not None:
            self._cache.cleanup()
            self._cache = None

    def _cached(self, dest: str, data: bytes) -> str:
        if self._cache is None:
            self._cache = tempfile.TemporaryDirectory(prefix="fake-waa-cache-")
        path = Path(self._cache.name) / Path(dest).name
        path.write_bytes(data)
        return str(path)

    def _get(self, cfg: dict[str, Any] | None) -> Any:
        if cfg is None:
            return None
        kind = cfg.get("type")
        if kind == "rule":
            return cfg["rules"]
        if kind == "vm_file":
            if cfg.get("multi"):
                raise scoring.CannotScore("vm_file with multi is not simulated")
            data = self.desktop.read_file(cfg["path"])
            return None if data is None else self._cached(cfg.get("dest") or ntpath.basename(cfg["path"]), data)
        if kind == "vm_file_exists_in_vm_folder":
            return 1.0 if self.desktop.read_file(ntpath.join(cfg["folder_name"], cfg["file_name"])) is not None else 0.0
        if kind == "cloud_file":
            url = cfg["path"]
            data = self.cloud_files.get(url)
            if data is None:
                try:
                    with urllib.request.urlopen(url, timeout=30) as reply:
                        data = reply.read()
                except OSError as exc:
                    raise scoring.CannotScore(f"cloud_file {url} could not be fetched: {exc}") from exc
            return self._cached(cfg.get("dest") or "cloud_file", data)
        raise scoring.CannotScore(f"getter {kind!r} is not simulated (supported: {', '.join(SUPPORTED_GETTERS)})")

    def _metric(self, spec: scoring.MetricSpec) -> float:
        if spec.func not in SUPPORTED_METRICS or spec.func == "infeasible":
            raise scoring.CannotScore(f"metric {spec.func!r} is not simulated "
                                      f"(supported: {', '.join(SUPPORTED_METRICS)})")
        result = self._get(spec.result)
        expected = self._get(spec.expected)
        if spec.func == "exact_match":
            return 1.0 if result == expected["expected"] else 0.0
        # compare_text_file(actual_path, expected_path, ignore_blanks=False, ignore_case=False)
        if not result:
            return 0.0
        actual_text = Path(result).read_text(encoding="utf-8", errors="replace")
        expected_text = Path(expected).read_text(encoding="utf-8", errors="replace")
        if spec.options.get("ignore_blanks"):
            actual_text = re.sub(r"\s+", " ", re.sub(r"[\t\n]", " ", actual_text).strip())
            expected_text = re.sub(r"\s+", " ", re.sub(r"[\t\n]", " ", expected_text).strip())
        if spec.options.get("ignore_case"):
            actual_text, expected_text = actual_text.lower(), expected_text.lower()
        return 1.0 if actual_text == expected_text else 0.0

    def postconfig(self, steps: list[dict[str, Any]]) -> list[str]:
        """Run postconfig steps in-process; return the error messages (failures are not fatal)."""
        errors: list[str] = []
        for step in steps or []:
            kind, params = step.get("type"), step.get("parameters") or {}
            try:
                if kind == "open":
                    self.desktop.open_path(params["path"])
                elif kind == "activate_window":
                    window = self.desktop._match_window(params["window_name"], bool(params.get("strict")))
                    if window is None:
                        raise LookupError(f"window {params['window_name']!r} not found")
                    self.desktop.windows.remove(window)
                    self.desktop.windows.append(window)
                elif kind == "sleep":
                    pass
                elif kind in ("execute", "command"):
                    self.desktop.run_command(params["command"], params.get("shell", False))
                elif kind == "launch":
                    self.desktop._launch(params["command"])
                else:
                    raise scoring.CannotScore(f"postconfig step {kind!r} is not simulated")
            except scoring.CannotScore:
                raise
            except Exception as exc:  # noqa: BLE001 - upstream logs failed postconfig steps and goes on
                errors.append(f"{kind}: {exc}")
        return errors

    def evaluate(self, task: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        evaluator = task.get("evaluator")
        if not isinstance(evaluator, dict) or "func" not in evaluator:
            return 422, {"success": False, "score": None, "scored": False, "error_type": "evaluation",
                         "reason": "No evaluator config"}
        try:
            notes = self.postconfig(evaluator.get("postconfig") or [])
            result = scoring.score_task(evaluator, task.get("agent_last_action"), self._metric)
        except (scoring.CannotScore, KeyError, TypeError) as exc:
            return 422, {"success": False, "score": None, "scored": False, "error_type": "evaluation",
                         "reason": f"cannot score: {exc}"}
        return 200, {
            "success": result.success, "score": result.score, "reason": result.reason, "scored": True,
            "metrics": [{"metric": m.func, "score": m.score, "success": m.score >= 1.0} for m in result.metrics],
            "postconfig_errors": notes,
        }
