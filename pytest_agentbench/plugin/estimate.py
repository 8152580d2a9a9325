"""``--bench-dry-run``: what the selected tasks would cost, VM and model, before anything starts.

The run only collects (so ``-k``, ``-m`` and ``--bench-task`` choose the tasks; with ``--bench-resume RUN``
only the items RUN has not finished count); no worker, VM or model call is started. The block has the shape
of the reference tool's estimate::

      154 tasks (agent api-claude, claude-sonnet-4-5):
        Azure VM-hours:        8.80 vm-hours @ $0.4520/hr = $3.98
        Agent token cost:      $26.62  (paid tasks=154, 15 steps each)
        -> TOTAL:              $30.60   ($0.1987/task)

Formulas (written down in docs/user-guide.md):

* model cost per task = steps x the agent's ``StepEstimate.cost_usd``, where steps is the task's
  step limit (``--bench-max-steps`` or the task's own): an upper bound, since agents usually stop earlier;
* VM cost = the pool's estimate (``infra/prices.estimate``) when ``--pool aws|azure`` is given;
* for an agent that calls no model (``replay``, ``scripted``), the block adds the pure-agent
  baseline: the same steps, all paid, with ``api-claude`` at its default model, and the saving.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import pytest

    from pytest_agentbench.agent import StepEstimate

#: The screen a step is priced at when the benchmark does not say (WAA's is 1920x1080).
DEFAULT_SCREEN = (1920, 1080)


def step_estimate(config: pytest.Config, registry: Any, agent_name: str,
                  screen: tuple[int, int]) -> StepEstimate | None:
    """The agent's own estimate: its registered estimator (needs no key), else a built agent's."""
    estimator = registry.estimators.get(agent_name)
    if estimator is not None:
        return cast("StepEstimate | None", estimator(config, screen))
    try:
        agent = registry.create(agent_name, config)
    except Exception:  # noqa: BLE001 - an agent that cannot be built here has no estimate
        return None
    try:
        return cast("StepEstimate | None", agent.estimate_step(screen))
    finally:
        agent.close()


def lines(config: pytest.Config, state: Any, items: list[Any]) -> list[str]:
    from pytest_agentbench.episode import step_limit
    from pytest_agentbench.plugin.resume import not_done
    from pytest_agentbench.plugin.state import is_episode_item, task_from_item

    tasks = [task_from_item(i) for i in not_done(config, state, items) if is_episode_item(i)]
    n = len(tasks)
    agent = state.settings.agent
    screens = {}
    for task in tasks:
        bench = state.benchmarks.get(task.benchmark)
        screens[task.benchmark] = tuple(getattr(bench, "screen_size", None) or DEFAULT_SCREEN)
    registry = state.agent_registry
    estimates = {b: step_estimate(config, registry, agent, s) for b, s in screens.items()}
    steps = [step_limit(t, state.settings.max_steps) for t in tasks]
    paid = [(t, k) for t, k in zip(tasks, steps, strict=True) if estimates.get(t.benchmark) is not None]
    model_usd = sum(k * e.cost_usd for t, k in paid if (e := estimates.get(t.benchmark)) is not None)
    model = next((e.model for e in estimates.values() if e is not None), None)
    out = [f"  {n} tasks (agent {agent}{', ' + model if model else ''}):"]
    vm = _vm_line(config, n)
    vm_usd = vm[1] if vm else 0.0
    if vm:
        out.append(vm[0])
    else:
        out.append("    VM-hours:              none (no --pool aws|azure: the WAA server is yours)")
    each = f"{round(sum(k for _, k in paid) / len(paid))} steps each" if paid else "0 steps each"
    out.append(f"    Agent token cost:      ${model_usd:.2f}  (paid tasks={len(paid)}, {each})")
    total = None if vm_usd is None else vm_usd + model_usd
    per_task = f"   (${total / n:.4f}/task)" if total is not None and n else ""
    out.append(f"    -> TOTAL:              {_money(total)}{per_task}")
    if not paid and n:
        base = _baseline(config, screens, tasks, steps)
        if base is not None:
            cost, how = base
            out.append(f"    Pure-agent baseline:   ${cost:.2f}   ({how}, all paid)")
            if total is not None:
                out.append(f"    Savings vs baseline:   ${cost - total:.2f}")
    if paid:
        first = next(e for e in estimates.values() if e is not None)
        out.append(f"  A step: {first.how}. Steps per task are each task's step limit (an upper bound).")
    out.append("  Nothing was started and no model was called.")
    return out


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.2f}"


def _vm_line(config: pytest.Config, tasks: int) -> tuple[str, float | None] | None:
    from pytest_agentbench.plugin.pools import CLOUD_KINDS, pool_kind, vm_estimate

    kind = pool_kind(config)
    if kind not in CLOUD_KINDS:
        return None
    _, est, _ = vm_estimate(config, kind, tasks)
    label = {"aws": "AWS", "azure": "Azure"}[kind] + " VM-hours:"
    shown = "price unknown" if est.hourly_usd is None else f"${est.hourly_usd:.4f}/hr"
    return f"    {label:<22} {est.vm_hours:.2f} vm-hours @ {shown} = {_money(est.vm_usd)}", est.vm_usd


def _baseline(config: pytest.Config, screens: dict[str, tuple[int, int]], tasks: list[Any],
              steps: list[int]) -> tuple[float, str] | None:
    """The same tasks played by ``api-claude`` at its default model, every step paid."""
    try:
        from pytest_agentbench.agents.claude import estimate_for
    except ImportError:
        return None
    per = {b: estimate_for(None, s) for b, s in screens.items()}
    cost = sum(k * per[t.benchmark].cost_usd for t, k in zip(tasks, steps, strict=True) if per.get(t.benchmark))
    model = next((e.model for e in per.values() if e is not None), "claude")
    return cost, f"{round(sum(steps) / len(steps))} steps/task with api-claude {model}"
