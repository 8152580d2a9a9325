#!/usr/bin/env python
"""How fast the seven trajectory metrics score traces in process.

Scores 1,000 synthetic 10-step traces with all seven metrics (``score_all``), median of
``--repeat`` timed runs after one warm-up, and prints traces per second, the time per trace and per
metric, and the ratio to the reference tool's 70k-95k traces per second. That reference figure is
**from the research notes** (openeval-core 0.2.1 on a 2-core box, same workload), not measured
here. Asserts nothing.

The workload is the reference benchmark's: each trace rotates thought, tool_call and tool_result
steps and ends in an output step; about 10% of calls are denied and about 2% of steps divergent;
metadata is a random mix of nothing, a fingerprint, and verdicts. Each test case expects 3 calls
with 2 arguments each and a 2-key end state.

``synthetic_case(i)`` and ``measure(traces, repeat)`` are importable (``sys.path`` at this folder,
``from trajectory_metrics import synthetic_case``) for a script that writes the same 1,000 cases
as a folder.

    python benchmarks/trajectory_metrics.py [--traces 1000] [--repeat 5] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path

from pytest_agentbench.trajectory.metrics import METRICS, score_all
from pytest_agentbench.trajectory.model import TestCase, Trace, TraceStep

REFERENCE = (70_000, 95_000)  # traces/s, openeval-core 0.2.1, from the research notes (not measured here)
TOOLS = ("search", "read_file", "write_file", "http_get", "sql_query")
STEPS = 10
ROTATION = ("thought", "tool_call", "tool_result")
METADATA = (
    {},
    {"fingerprint": {"tools": {"search": "sha256:0"}}},
    {"fingerprint": {"tools": {"search": "sha256:0"}}, "verdict": "PASS"},
    {"verdict": "DRIFTED"},
    {"fingerprint_verdict": "UNVERIFIED"},
)


def synthetic_case(i: int) -> tuple[Trace, TestCase]:
    """The i-th synthetic trace and its test case; the same i always gives the same pair."""
    rng = random.Random(i)
    expected = [{"tool": tool, "args": {"q": f"{tool}-{i}", "n": rng.randrange(3)}}
                for tool in rng.sample(TOOLS, 3)]
    steps = []
    for n in range(STEPS - 1):
        kind = ROTATION[n % 3]
        divergent = rng.random() < 0.02
        if kind == "tool_call":
            call = expected[rng.randrange(3)] if rng.random() < 0.8 else {"tool": rng.choice(TOOLS), "args": {}}
            args = dict(call["args"])
            if args and rng.random() < 0.3:
                args["n"] = args["n"] + 1
            steps.append(TraceStep(step_id=n + 1, type=kind, content="", tool_name=call["tool"], tool_args=args,
                                   timestamp=float(n), denied=rng.random() < 0.1, divergent=divergent,
                                   latency_ms=rng.uniform(5, 50)))
        elif kind == "tool_result":
            steps.append(TraceStep(step_id=n + 1, type=kind, content="ok", tool_name=steps[-1].tool_name,
                                   tool_result="ok", timestamp=float(n), divergent=divergent))
        else:
            steps.append(TraceStep(step_id=n + 1, type=kind, content=f"thinking {n}", timestamp=float(n),
                                   divergent=divergent))
    steps.append(TraceStep(step_id=STEPS, type="output", content="done", timestamp=float(STEPS)))
    state = {"done": rng.random() < 0.7, "count": rng.randrange(3)}
    trace = Trace(task_id=f"synthetic-{i:04d}", input=f"task {i}", steps=steps, final_output="done",
                  actual_state=state, metadata=dict(rng.choice(METADATA)))
    case = TestCase(task_id=trace.task_id, input=trace.input, expected_tool_calls=expected,
                    expected_final_state={"done": True, "count": 1})
    return trace, case


def _time(fn, repeat: int) -> list[float]:
    fn()  # warm-up
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return runs


def measure(traces: int = 1000, repeat: int = 5) -> float:
    """Traces per second of ``score_all`` over ``traces`` synthetic cases, median of ``repeat``
    timed runs after a warm-up; prints nothing (for other scripts)."""
    pairs = [synthetic_case(i) for i in range(traces)]

    def all_metrics() -> None:
        for trace, case in pairs:
            score_all(trace, case)

    return traces / statistics.median(_time(all_metrics, repeat))


def reference_runs(pairs: list[tuple[Trace, TestCase]], repeat: int) -> list[float] | None:
    """The reference tool's seven metrics on the same traces, timed the same way, when
    openeval-core is importable here (it is not a dependency: e.g. a scratch venv with
    ``pip install openeval-core==0.2.1`` running this script with ``PYTHONPATH=<repo>``)."""
    try:
        from openeval import metrics as ref
        from openeval.models import AgentTrace, EvalTestCase
        from openeval.models import TraceStep as RefStep
    except ImportError:
        return None
    chosen = [ref.ToolSelectionAccuracy(), ref.ArgumentCorrectness(), ref.StepEfficiency(), ref.GoalCompletionRate(),
              ref.DenialRecoveryRate(), ref.DivergenceScore(), ref.FixtureFreshness()]
    converted = []
    for trace, case in pairs:
        steps = [RefStep(s.step_id, s.type, s.content, s.tool_name, s.tool_args, s.tool_result, s.timestamp, s.error,
                         s.denied, divergent=s.divergent, latency_ms=s.latency_ms) for s in trace.steps]
        converted.append((AgentTrace(trace.task_id, trace.input, steps, trace.final_output, trace.actual_state,
                                     trace.metadata),
                          EvalTestCase(case.task_id, case.input, case.expected_tool_calls, case.expected_final_state,
                                       case.expected_output_contains, 10, 10.0)))

    def all_metrics() -> None:
        for trace, case in converted:
            for metric in chosen:
                metric.score(trace, case)

    return _time(all_metrics, repeat)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)

    pairs = [synthetic_case(i) for i in range(args.traces)]

    def all_metrics() -> None:
        for trace, case in pairs:
            score_all(trace, case)

    runs = _time(all_metrics, args.repeat)
    median = statistics.median(runs)
    per_second = args.traces / median
    print(f"python {platform.python_version()} on {platform.machine()}, {platform.system()}")
    print(f"score_all (7 metrics) over {args.traces} synthetic {STEPS}-step traces, "
          f"median of {args.repeat} runs after a warm-up")
    print(f"  runs (s): {', '.join(f'{r:.4f}' for r in runs)}")
    print(f"  median {median * 1000:.2f} ms -> {per_second:,.0f} traces/s, "
          f"{per_second * len(METRICS):,.0f} metric evaluations/s")
    print(f"  per trace {median / args.traces * 1e6:.2f} us, "
          f"per metric {median / args.traces / len(METRICS) * 1e6:.2f} us")
    per_metric = {}
    for name, fn in METRICS.items():
        def one(fn=fn) -> None:
            for trace, case in pairs:
                fn(trace, case)
        per_metric[name] = statistics.median(_time(one, args.repeat)) / args.traces * 1e6
    print("  per metric, median us per trace:")
    for name, us in per_metric.items():
        print(f"    {name:<22} {us:6.2f}")
    low, high = REFERENCE
    print(f"reference, for context: openeval-core 0.2.1 scored {low:,}-{high:,} traces/s with all 7 metrics "
          f"(from the research notes, measured on another machine, not here)")
    print(f"ratio to the reference: {per_second / high:.2f}x its best ({high:,}/s) "
          f"to {per_second / low:.2f}x its worst ({low:,}/s)")
    measured = reference_runs(pairs, args.repeat)
    reference_here = None
    if measured is None:
        print("openeval-core is not importable here, so the reference was not run on this machine")
    else:
        reference_here = args.traces / statistics.median(measured)
        print(f"reference measured here (openeval-core importable): same traces, same timing: "
              f"{reference_here:,.0f} traces/s; ours / reference = {per_second / reference_here:.2f}x")
    outcomes = {"passed": 0, "failed": 0, "not evaluated": 0}
    for trace, case in pairs:
        for result in score_all(trace, case):
            outcomes["not evaluated" if result.passed is None else "passed" if result.passed else "failed"] += 1
    print(f"results over all traces and metrics: {outcomes}")
    if args.json:
        args.json.write_text(json.dumps({
            "traces": args.traces, "repeat": args.repeat, "runs_s": runs, "traces_per_s": per_second,
            "per_metric_us": per_metric, "reference_traces_per_s": list(REFERENCE),
            "reference_measured_here_traces_per_s": reference_here, "outcomes": outcomes,
            "python": platform.python_version(),
        }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
