"""xdist wiring, registered only when pytest-xdist is present, on the controller.

The controller has already resolved the manifest and created the run folder at session start
(before DSession starts any worker); each worker gets their paths through ``workerinput`` and
builds its items from the frozen manifest, so all workers collect the identical list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_agentbench.plugin.session import AgentbenchPlugin


class XdistController:
    def __init__(self, state: AgentbenchPlugin) -> None:
        self.state = state

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
        from pytest_agentbench.plugin.session import LEASE_INPUT, MANIFEST_INPUT, RUNFOLDER_INPUT

        if self.state.pools is not None:
            # A static pool's host per worker from the free list (a replacement worker gets the
            # next free one); a cloud pool's ticket, traded for a VM on the worker's first item.
            node.workerinput[LEASE_INPUT] = self.state.pools.lease_for(node.gateway.id)
        folder = self.state.run_folder
        if folder is None:
            return
        node.workerinput[MANIFEST_INPUT] = str(folder.manifest_path.absolute())
        node.workerinput[RUNFOLDER_INPUT] = str(folder.path.absolute())
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
