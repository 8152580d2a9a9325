"""The run record's four files as pydantic models: the one source of their JSON Schemas.

``results.jsonl`` lines, ``trajectory.json``, ``manifest.json`` and ``summary.json`` are described
here once; ``record/schemas.py`` generates the shipped ``record/schema/*.schema.json`` from these
models, and a test fails when the shipped files differ from what the models generate, so the
writers, the models and the published schemas cannot drift apart.

The writers never build these models: a run builds plain dicts (pydantic validation per item would
cost more than a mock episode takes to play). The tests validate real run folders against both the
models and the schemas. A field typed ``Omittable[X] = None`` is one a file may leave out but
never writes as null: the schema does not list it as required and does not allow null, and the
model takes it absent but refuses an explicit null.

The action, criterion, verdict and task objects inside the records are the data model's own
(``pytest_agentbench.model``), dumped as JSON, so their fields and descriptions live there.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, create_model
from pydantic.json_schema import SkipJsonSchema

from pytest_agentbench.model import Action, Criterion, ErrorType, Task, Verdict
from pytest_agentbench.outcomes import OutcomeKind

#: An item's final pytest outcome, as ``controller.status_of`` words it.
Status = Literal["passed", "failed", "skipped", "error", "xfailed", "xpassed"]
STATUS_TEXT = ("The item's final pytest outcome: passed, failed, skipped (not evaluated), error (infrastructure or "
               "evaluation error, or a failing fixture), xfailed / xpassed (known failure from --bench-baseline or "
               "an xfail marker). evaluate_agent_on_benchmark writes passed, failed or error.")
ERROR_TYPE_TEXT = ("Error taxonomy. agent: the agent raised, returned error or ran out of steps (a scored failure). "
                   "infrastructure: the environment or a fixture failed. evaluation: the checker crashed. The last two "
                   "are not outcomes and are left out of the success rate. Null: no error.")
OUTCOME_TEXT = "The outcome the verdict maps to (outcomes.py), before any xfail marker applies."

T = TypeVar("T")


def _not_null(value: Any) -> Any:
    if value is None:
        raise ValueError("may be left out, but not null")
    return value


#: A key a record may leave out but never writes as null (see the module docstring).
Omittable = Annotated[T | SkipJsonSchema[None], BeforeValidator(_not_null)]
Unit = Annotated[float, Field(ge=0, le=1)]
Count = Annotated[int, Field(ge=0)]
Seconds = Annotated[float, Field(ge=0)]
Rate = Annotated[float, Field(ge=0, le=1)]
KCurve = Annotated[dict[str, Unit], Field(json_schema_extra={"propertyNames": {"pattern": "^[1-9][0-9]*$"}})]


class _Record(BaseModel):
    """Strict: a key the writers do not write is an error, so a consumer can rely on the shape."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


# -- results.jsonl ---------------------------------------------------------------------------------
class AttemptSummary(_Record):
    """One attempt of an item a rerun plugin played more than once (``controller.ATTEMPT_FIELDS``)."""

    status: Status | Literal["rerun"] = Field(description="The attempt's pytest outcome; rerun for every attempt "
                                                          "but the last.")
    success: bool | None = Field(default=None, description="Whether the checker judged the attempt a success.")
    score: float | None = Field(default=None, description="The checker's score for the attempt.")
    reason: str | None = Field(default=None, description="The attempt's one-line reason.")
    error_type: str | None = Field(default=None, description="infrastructure, evaluation or agent, for an attempt that "
                                                     "errored.")
    duration: Omittable[Seconds] = Field(default=None, description="Seconds the attempt took.")
    num_steps: Omittable[Count] = Field(default=None, description="Steps the attempt played.")
    trajectory: str | None = Field(default=None, description="The attempt's own trajectory file, relative to the "
                                                            "run folder.")
    cost_usd: float | None = Field(default=None, description="Model cost of the attempt.")


class ResultRecord(_Record):
    """One line of results.jsonl."""

    model_config = ConfigDict(title="pytest-agentbench result record (one line of results.jsonl)", json_schema_extra={
        "description": "One record per benchmark item, appended by the controller from the item's report (or by "
                       "evaluate_agent_on_benchmark with results_dir). Keys are sorted; the file is JSON Lines."})

    record_schema: Literal["pytest-agentbench/result/v1"] = Field(alias="schema",
                                                                  description="Record format and version.")
    nodeid: str | None = Field(description="pytest node id, bench/<bench>::<domain>::<task_id>; null when written by "
                                           "evaluate_agent_on_benchmark.")
    benchmark: str = Field(description="Benchmark registry name.")
    domain: str = Field(description="Task domain.")
    task_id: str = Field(description="The benchmark's own task id.")
    agent: str = Field(description="Agent name.")
    success: bool = Field(description="True only when there was no error and the checker passed the task.")
    score: Unit = Field(description="The checker's score; 0 for infrastructure and evaluation errors and when there "
                                    "is no verdict.")
    passed: bool | None = Field(description="The verdict's passed flag; null when not evaluated or there is no "
                                            "verdict.")
    outcome: bool = Field(description="Whether this attempt counts in the success rate (the checker scored it, or "
                                      "the agent erred).")
    num_steps: Count = Field(description="Actions the environment executed; terminal actions are not counted.")
    step_limit: Count = Field(description="The step limit that applied (--bench-max-steps, else the task's, else 50); "
                                          "0 when the episode never started.")
    error: str | None = Field(description="One-line error message, or null.")
    error_type: ErrorType | None = Field(description=ERROR_TYPE_TEXT)
    reason: str | None = Field(description="The error message if any, else the checker's reason; null when neither "
                                           "exists.")
    criteria: list[Criterion] = Field(description="The verdict's criteria (empty without a verdict).")
    final_action: Action | None = Field(description="The terminal action the agent ended with (done, fail, answer, "
                                                    "error), or null.")
    total_time_seconds: Seconds = Field(description="Wall time of the episode.")
    cost_usd: float = Field(description="Model cost of the episode in US dollars, as the agent reported it per step.")
    trajectory: str | None = Field(description="Path of the task's trajectory.json, relative to the run folder; null "
                                               "when the episode never ran.")
    screenshots: list[str] = Field(description="Saved screenshots, paths relative to the run folder (per "
                                               "--bench-screenshots).")
    worker: str = Field(description="xdist worker id (gw0, gw1, ...) or main.")
    extra: dict[str, Any] = Field(description="Keys added by pytest_agentbench_episode_finished implementations "
                                              "(plain JSON).")
    expected_outcome: Omittable[OutcomeKind] = Field(default=None, description=OUTCOME_TEXT)
    status: Status = Field(description=STATUS_TEXT)
    duration: Seconds = Field(description="Seconds pytest spent on the item: setup (where the episode plays) plus "
                                          "call.")
    trial: Omittable[Annotated[int, Field(ge=1)]] = Field(default=None, description=(
        "Which trial of the task this record is (1..K with --bench-trials K); absent in records written before trials "
        "existed."))
    seed: Omittable[Count] = Field(default=None, description=(
        "The trial's seed, given to the agent (derived from --bench-trial-seed, benchmark, task id and trial)."))
    attempts: Omittable[Annotated[list[AttemptSummary], Field(min_length=2)]] = Field(default=None, description=(
        "Present when a rerun plugin (pytest-rerunfailures' --reruns) played the item more than once: every attempt "
        "in order, the last being this record's own. Earlier attempts' files carry an .attempt-<n> suffix, so none "
        "overwrites another's."))


#: What a reader of results.jsonl (compare, baseline, resume, the viewer) may rely on: every key
#: it finds has its ResultRecord type, strictly (no "0.5" for a number); keys may be missing or
#: null (records written by hand or by older versions leave some out), and unknown keys are kept.
#: Built once, on first use, from ResultRecord's own fields, so the two cannot drift apart.
_READ_BACK: type[BaseModel] | None = None


def record_problem(record: Any) -> str | None:
    """Why ``record`` (one parsed results.jsonl line) cannot be read back as a result record, in a
    few words naming the field (``'score': Input should be a valid number``); None when it can."""
    global _READ_BACK
    if not isinstance(record, dict):
        return f"a record is a JSON object, not {type(record).__name__}"
    if _READ_BACK is None:
        annotated: Any = Annotated  # subscripted with a tuple built here, which mypy cannot follow
        fields: dict[str, Any] = {}
        for name, info in ResultRecord.model_fields.items():
            parts: Any = (info.annotation, *info.metadata)
            typed: Any = annotated[parts] if info.metadata else info.annotation
            key = info.alias or name
            required = key == "task_id"
            fields[name] = (typed if required else typed | None, Field(... if required else None, alias=key))
        _READ_BACK = create_model("ReadBackRecord", __config__=ConfigDict(extra="allow", populate_by_name=False),
                                  **fields)
    try:
        _READ_BACK.model_validate(record, strict=True)
    except ValidationError as exc:
        error = exc.errors(include_url=False, include_input=False)[0]
        # the field's path, without the names pydantic gives the members of a union it tried
        where = ".".join(str(part) for part in error["loc"] if isinstance(part, int) or part.isidentifier())
        return f"{where!r}: {error['msg']}"
    return None


# -- trajectory.json -------------------------------------------------------------------------------
class Usage(_Record):
    """Model usage the agent reported for one step (``agent.Usage``)."""

    input_tokens: Count = Field(description="input tokens, images included")
    output_tokens: Count = Field(description="output tokens")
    cost_usd: Annotated[float, Field(ge=0)] = Field(description="what the calls cost, in US dollars")
    calls: Count = Field(description="model calls made in this step")
    model: str | None = Field(description="the model called")


class StepRecord(_Record):
    """One action the agent returned (pytest_agentbench.Step, without its observation, with a label)."""

    index: Count = Field(description="Position in the episode, from 0.")
    action: Action = Field(description="The action the agent returned.")
    reasoning: str | None = Field(description="The agent's reasoning for this step (the action's reason).")
    seconds: Seconds = Field(description="Time the agent and the environment took for this step.")
    screenshot_path: str | None = Field(description="Screenshot the agent saw before acting, relative to the run "
                                                    "folder, or null when not saved.")
    cost_usd: float = Field(description="Model cost of this step in US dollars.")
    usage: Usage | None = Field(description="Model usage the agent reported for this step (Agent.take_usage); null "
                                            "for agents without a model.")
    label: str = Field(description="Short human label of the action, e.g. click #4 or type 'milk'.")


class TrajectoryRecord(_Record):
    """tasks/<bench>/<task>.trajectory.json."""

    model_config = ConfigDict(title="pytest-agentbench trajectory (tasks/<bench>/<task>.trajectory.json)",
                              json_schema_extra={"description": "Everything one episode did: the task, each step with "
                                                                "its action, the verdict and how it ended."})

    record_schema: Literal["pytest-agentbench/trajectory/v1"] = Field(alias="schema",
                                                                      description="Record format and version.")
    nodeid: str | None = Field(description="pytest node id; null when written by evaluate_agent_on_benchmark.")
    task: Task = Field(description="The task as played.")
    agent: str = Field(description="Agent name.")
    steps: list[StepRecord] = Field(description="Every action the agent returned, in order, including the final "
                                                "terminal one.")
    final_screenshot: str | None = Field(description="Screenshot of the end state, relative to the run folder, or "
                                                     "null when not saved.")
    num_steps: Count = Field(description="Actions the environment executed (terminal actions not counted).")
    step_limit: Count = Field(description="The step limit that applied.")
    verdict: Verdict | None = Field(description="The checker's verdict; null when the checker was not reached or "
                                                "crashed.")
    error: str | None = Field(description="One-line error message, or null.")
    error_type: ErrorType | None = Field(description=ERROR_TYPE_TEXT)
    outcome: OutcomeKind = Field(description=OUTCOME_TEXT)
    message: str = Field(description="The outcome's message as pytest shows it (reason and criteria table).")
    total_time_seconds: Seconds = Field(description="Wall time of the episode.")
    cost_usd: float = Field(description="Model cost of the episode in US dollars.")


# -- manifest.json ---------------------------------------------------------------------------------
def _manifest_task_schema(schema: dict[str, Any]) -> None:
    schema["required"] = ["task_id", "benchmark", "domain"]


class ManifestTask(Task):
    """A task as the manifest stores it: fields at their default left out, benchmark and domain always."""

    model_config = ConfigDict(json_schema_extra=_manifest_task_schema)


class Suite(_Record):
    """One benchmark's tasks."""

    name: str = Field(description="Benchmark registry name (node id bench/<name>).")
    description: str = Field(description="The description it was registered with.")
    tasks: list[ManifestTask] = Field(description="Tasks sorted by (domain, task_id), cut to --bench-limit.")


class ManifestRecord(_Record):
    """manifest.json."""

    model_config = ConfigDict(title="pytest-agentbench manifest (manifest.json)", json_schema_extra={
        "description": "The frozen, sorted task list the controller resolved at session start. xdist workers build "
                       "their items from this file alone, so all workers collect the identical list."})

    record_schema: Literal["pytest-agentbench/manifest/v1"] = Field(alias="schema",
                                                                    description="Record format and version.")
    suites: list[Suite] = Field(description="One suite per benchmark, in --bench order.")


# -- summary.json ----------------------------------------------------------------------------------
class Metrics(_Record):
    """Run metrics with the reference tool's keys (``metrics.metrics``). Outcomes are scored attempts:
    everything except infrastructure and evaluation errors and unevaluated episodes."""

    num_tasks: Count = Field(description="Number of attempts (records).")
    num_attempts: Count = Field(description="Number of attempts (same as num_tasks).")
    num_outcome_tasks: Count = Field(description="Attempts the checker scored (outcomes).")
    error_count: Count = Field(description="Attempts with any error_type (agent, infrastructure or evaluation).")
    success_rate: Rate | None = Field(description="Successes over outcomes; null when there are no outcomes.")
    avg_score: Rate | None = Field(description="Mean score over outcomes; null when there are no outcomes.")
    avg_steps: Annotated[float, Field(ge=0)] = Field(description="Mean executed steps over all attempts (0 with "
                                                                 "none).")
    avg_time_seconds: Seconds = Field(description="Mean episode time over all attempts (0 with none).")
    success_count: Count = Field(description="Outcomes that passed.")
    fail_count: Count = Field(description="Outcomes that did not pass (checker failures and agent errors).")
    num_infrastructure_failures: Count = Field(description="Attempts with error_type infrastructure.")
    num_evaluation_failures: Count = Field(description="Attempts with error_type evaluation.")
    num_agent_failures: Count = Field(description="Attempts with error_type agent.")
    num_tasks_excluding_infra: Count = Field(description="Same as num_outcome_tasks (reference name).")
    success_rate_excluding_infra: Rate | None = Field(description="Same as success_rate (reference name).")
    num_not_evaluated: Count = Field(description="Attempts without error that the checker could not evaluate "
                                                 "(passed null).")
    total_cost_usd: float = Field(description="Sum of the attempts' cost in US dollars.")


class TaskRow(_Record):
    """A short copy of one result record; fields mean what they mean there."""

    nodeid: str | None = Field(description="pytest node id (null from evaluate_agent_on_benchmark).")
    benchmark: str = Field(description="Benchmark name.")
    domain: str = Field(description="Task domain.")
    task_id: str = Field(description="Task id.")
    status: Status = Field(description=STATUS_TEXT)
    success: bool = Field(description="No error and the checker passed the task.")
    score: Unit = Field(description="The checker's score.")
    num_steps: Count = Field(description="Executed steps.")
    error: str | None = Field(description="Error message or null.")
    error_type: ErrorType | None = Field(description=ERROR_TYPE_TEXT)
    reason: str | None = Field(description="Error message, else the checker's reason.")
    trajectory: str | None = Field(description="trajectory.json path relative to the run folder, or null.")
    trial: Annotated[int, Field(ge=1)] | None = Field(default=None, description="Trial number (1..K).")


class VmCost(_Record):
    """What a cloud pool's VMs cost (``CloudPool.cost``)."""

    provider: str = Field(description="aws or azure")
    size: str = Field(description="the instance type / VM size created")
    region: str = Field(description="the region")
    vms: Count = Field(description="VMs created")
    vm_hours: Annotated[float, Field(ge=0)] = Field(description="billed hours, creation to deletion (or to now while "
                                                                "any VM lives)")
    hourly_usd: float | None = Field(description="price per VM-hour of the size created (--pool-hourly-usd wins); "
                                                 "null when unknown")
    vm_usd: float | None = Field(description="vm_hours x hourly_usd; null when the price is unknown")
    final: bool = Field(description="true once every VM is deleted (the cost will not grow)")


class BudgetSummary(_Record):
    """The spending caps and what the run spent (``RunController._budget_summary``)."""

    max_cost_usd: float | None = Field(description="the run's cap in US dollars")
    max_cost_usd_per_task: float | None = Field(description="each task's cap in US dollars")
    spent_usd: Annotated[float, Field(ge=0)] = Field(description="model cost charged by every process of the run")
    exhausted: bool = Field(description="true once the run's cap was reached")
    budget_skipped: Count = Field(description="items skipped or left not evaluated because the run's budget was "
                                              "spent")


class StatGroup(_Record):
    """The statistics of one group of tasks, the run or one domain (``stats.describe``)."""

    tasks: Count = Field(description="Tasks with at least one record.")
    tasks_with_outcomes: Count = Field(description="Tasks with at least one outcome trial.")
    outcome_trials: Count = Field(description="Trials the checker scored (the denominator).")
    passes: Count = Field(description="Outcome trials that succeeded.")
    excluded_trials: Count = Field(description="Trials that were not outcomes (infrastructure or evaluation errors, "
                                               "not evaluated): counted apart, out of every denominator.")
    success_rate: Rate | None = Field(description="passes / outcome_trials; null without outcomes.")
    ci95: tuple[Unit, Unit] | None = Field(description="95% interval of the success rate; null without outcomes.")
    ci_method: Literal["wilson", "wilson-clustered"] | None = Field(description=(
        "wilson: one trial per task; wilson-clustered: several trials per task, the Wilson interval over the "
        "effective number of trials (the count over the design effect from the between-task variance, the number "
        "of tasks at 0% or 100%), with Student's t for tasks - 1 degrees of freedom."))
    max_trials: Count = Field(description="Most outcome trials of any task.")
    pass_at_k: KCurve = Field(description="Unbiased pass@k (Chen et al. 2021) averaged over tasks, for k = 1..the "
                                          "fewest outcome trials of any task.")
    pass_hat_k: KCurve = Field(description="pass^k (tau-bench: all k trials succeed) averaged over tasks, same k.")
    flip_rate: Rate | None = Field(description="Share of tasks with two or more outcome trials whose verdicts differ; "
                                               "null when no task has two.")
    flipped_tasks: Count = Field(description="Tasks whose verdicts differ across trials.")


class TaskStat(_Record):
    """One task's trials (``stats.TaskTrials.to_json``)."""

    benchmark: str = Field(description="Benchmark name.")
    domain: str = Field(description="Task domain.")
    task_id: str = Field(description="Task id.")
    trials: Count = Field(description="Outcome trials.")
    passes: Count = Field(description="Outcome trials that succeeded.")
    mean_score: float | None = Field(description="Mean checker score over outcome trials.")
    excluded_trials: Count = Field(description="Trials that were not outcomes.")
    flipped: bool = Field(description="True when the task both passed and failed across its outcome trials.")


class Statistics(StatGroup):
    """How sure the numbers are: the run's statistics, the same per domain, and per task."""

    by_domain: dict[str, StatGroup] = Field(description="The same statistics per domain.")
    per_task: list[TaskStat] = Field(description="Per task: outcome trials, passes, mean score, excluded trials and "
                                                 "whether its verdict flipped.")


class SummaryRecord(Metrics):
    """summary.json."""

    model_config = ConfigDict(title="pytest-agentbench run summary (summary.json)", json_schema_extra={
        "description": "Metrics of the whole run, per domain, and one row per record; written once at the end of the "
                       "run."})

    record_schema: Literal["pytest-agentbench/summary/v1"] = Field(alias="schema",
                                                                   description="Record format and version.")
    run_name: str = Field(description="Name of the run folder.")
    benchmark_name: str = Field(description="The benchmark names joined with '+' (reference name).")
    benchmarks: list[str] = Field(description="The benchmarks of the run, in --bench order.")
    agent: str = Field(description="Agent name.")
    player: Omittable[str] = Field(default=None, description=(
        "What played the tasks, as in the run folder's default name: the agent, or the benchmarks' own players "
        "(arms, end-state) when the agent played nothing; absent in summaries written before it existed."))
    model_id: str = Field(description="Same as agent (reference name).")
    created_at: AwareDatetime = Field(description="When the run started, ISO 8601 UTC.")
    finished_at: AwareDatetime = Field(description="When the run finished, ISO 8601 UTC.")
    max_steps: Annotated[int, Field(ge=1)] | None = Field(description="--bench-max-steps if given, else null (each "
                                                                      "task's own limit applied).")
    by_domain: dict[str, Metrics] = Field(description="The same metrics per domain, keyed by domain name.")
    statuses: dict[Status, Annotated[int, Field(ge=1)]] = Field(description=(
        "How many records ended in each pytest status (see the result schema's status)."))
    tasks: list[TaskRow] = Field(description="One row per results.jsonl record, in the same order.")
    vm_cost: VmCost | None = Field(default=None, description=(
        "cloud pools only: VM hours (creation to deletion) times the hourly price of the size created; null without "
        "a cloud pool"))
    budget: BudgetSummary | None = Field(default=None, description=(
        "--bench-max-cost-usd / --bench-max-cost-usd-per-task: the caps, what the run spent (all workers) and "
        "whether the run's cap was reached; null without caps"))
    trials: Omittable[Annotated[int, Field(ge=1)]] = Field(default=None, description=(
        "--bench-trials: how many times each task was played."))
    statistics: Omittable[Statistics] = Field(default=None, description=(
        "How sure the numbers are: the success rate's 95% interval, pass@k, pass^k and the flip rate, for the run, "
        "per domain and per task (see the user guide's Statistics section)."))


#: The record kinds, by the name of their schema file (``<kind>.schema.json``).
RECORD_MODELS: dict[str, type[BaseModel]] = {
    "result": ResultRecord,
    "trajectory": TrajectoryRecord,
    "manifest": ManifestRecord,
    "summary": SummaryRecord,
}
