"""xdist wiring, registered only when pytest-xdist is present, on the controller.

The controller has already resolved the manifest and created the run folder at session start
(before DSession starts any worker); each worker gets their paths through ``workerinput`` and
builds its items from the frozen manifest, so all workers collect the identical list.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_agentbench.plugin.session import AgentbenchPlugin


class XdistController:
    def __init__(self, state: AgentbenchPlugin) -> None:
        self.state = state
        #: A private folder where each worker notes the phase of its item (``phases.py``).
        self.phase_dir: Path | None = None

    def pytest_xdist_setupnodes(self, config: Any, specs: list[Any]) -> None:
        """A cloud pool creates one VM per worker now, before any worker starts (so they boot
        together, and a refusal is a usage error), but none for work already done: never more
        than the items left to play (``--bench-resume``: those without a final record)."""
        pools = self.state.pools
        if pools is not None and pools.cloud is not None:
            from pytest_agentbench.plugin.pools import requested_workers
            from pytest_agentbench.plugin.resume import items_left

            wanted = max(len(specs), requested_workers(config))
            left = items_left(config, self.state.manifest)
            pools.provision(wanted if left is None else min(wanted, left))

    def pytest_configure_node(self, node: Any) -> None:
        from pytest_agentbench.plugin.session import LEASE_INPUT, MANIFEST_INPUT, PHASES_INPUT, RUNFOLDER_INPUT

        if self.state.pools is not None:
            # A static pool's host per worker from the free list (a replacement worker gets the
            # next free one); a cloud pool's ticket, traded for a VM on the worker's first item.
            node.workerinput[LEASE_INPUT] = self.state.pools.lease_for(node.gateway.id)
        folder = self.state.run_folder
        if folder is None:
            return
        node.workerinput[MANIFEST_INPUT] = str(folder.manifest_path.absolute())
        node.workerinput[RUNFOLDER_INPUT] = str(folder.path.absolute())
        if self.phase_dir is None:
            import tempfile

            # In the run folder, not /tmp: a controller killed before its unconfigure leaves it
            # with the run's other files, not in the machine's temporary folder.
            self.phase_dir = Path(tempfile.mkdtemp(prefix=".phases-", dir=folder.path))  # mode 0700
        node.workerinput[PHASES_INPUT] = str(self.phase_dir)
        node.workerinput["agentbench_known"] = dict(self.state.known_failures)
        from pytest_agentbench.plugin.resume import worker_input

        node.workerinput.update(worker_input(self.state.config))  # --bench-resume: the items already done

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        if self.state.pools is not None:
            self.state.pools.release(node.gateway.id)
        errors = getattr(node, "workeroutput", {}).get("agentbench_write_errors", [])
        controller = node.config.pluginmanager.get_plugin("agentbench-controller")
        if errors and controller is not None:
            controller.file_errors.extend(errors)

    @pytest.hookimpl(trylast=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        """A worker died under a benchmark item. xdist reports it failed; the worker's phase note
        says whose fault it was: while the agent acted (or where the plugin cannot tell) it is the
        agent's failure, counted in the success rate as pytest counts it; in the item's setup, the
        environment or the checker it is an infrastructure or evaluation error, and the report
        becomes the setup error pytest then shows, so pytest's counts and the record's agree."""
        controller = self.state.config.pluginmanager.get_plugin("agentbench-controller")
        if report.outcome != "failed" or controller is None:
            return  # another plugin plays it again (a rerun)
        from pytest_agentbench.phases import read_note

        worker = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", None)
        note = read_note(self.phase_dir / worker, crashitem) if self.phase_dir is not None and worker else None
        controller.record_crash(report, *(note or (None, None)))

    def pytest_unconfigure(self) -> None:
        if self.phase_dir is not None:
            import shutil

            shutil.rmtree(self.phase_dir, ignore_errors=True)
            self.phase_dir = None
