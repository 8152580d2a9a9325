"""ExtraDup as pytest items: ``bench/extradup::<reward>::<condition>::trial<k>``.

Each item applies its cell to a fresh MockMed store during setup (a SQLite file of its own in the
process's one scratch folder, deleted at teardown), calls the reward on the evidence, and turns the
reward's answer into the item's outcome:

| reward's answer on             | pytest outcome | status word   |
|--------------------------------|----------------|---------------|
| the correct write: paid        | passed         | PAID          |
| the correct write: refused     | failed         | OVER-REFUSAL  |
| a wrong write: refused         | passed         | REFUSED       |
| a wrong write: paid            | failed         | PAID-WRONG    |
| None (not evaluated)           | skipped        | NOT-EVALUATED |
| raised, or not bool/number/None| error (setup)  | ERROR         |

The oracle-outage cell holds the correct write behind an unreadable store, so a reward that answers
anyway is judged against the correct write. The known-bad reference reward's wrong-write items are
strict xfail (raises=PaidWrong): the default run passes while the summary shows what it paid.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.benches.extradup.cells import CONDITIONS, SEEDS, WRONG_WRITES, StoreUnavailable, apply_cell
from pytest_agentbench.benches.extradup.rewards import Reward, builtin_rewards, call_reward, user_rewards
from pytest_agentbench.plugin import reporting
from pytest_agentbench.text import render_table

NAME = "extradup"
PAYLOAD_ATTR = "agentbench_extradup"


class PaidWrong(pytest.fail.Exception):  # type: ignore[name-defined, misc]  # pytest types it as an attribute (Any)
    """The reward paid a wrong write. Reads as pytest's ``Failed`` in reports."""

    __module__ = "builtins"


class OverRefusal(pytest.fail.Exception):  # type: ignore[name-defined, misc]  # pytest types it as an attribute (Any)
    """The reward refused the correct write. Reads as pytest's ``Failed`` in reports."""

    __module__ = "builtins"


class RewardError(pytest.fail.Exception):  # type: ignore[name-defined, misc]  # pytest types it as an attribute (Any)
    """The reward raised, or returned something other than a bool, a number or None."""

    __module__ = "builtins"


for _cls in (PaidWrong, OverRefusal, RewardError):
    _cls.__name__ = _cls.__qualname__ = "Failed"

WORDS: dict[str, Any] = {
    "paid-correct": ("passed", ".", "PAID"),
    "refused-wrong": ("passed", ".", "REFUSED"),
    "paid-wrong": ("failed", "P", ("PAID-WRONG", {"red": True, "bold": True})),
    "over-refusal": ("failed", "R", ("OVER-REFUSAL", {"red": True, "bold": True})),
    "not-evaluated": ("skipped", "s", "NOT-EVALUATED"),
}


def report_view(config: pytest.Config, payload: dict[str, Any]) -> reporting.View:
    """What report plugins show of an ExtraDup item: its status word and message."""
    word = WORDS.get(payload["verdict"], (None, None, "ERROR"))[2]
    return reporting.View(verdict=reporting.status_line(word[0] if isinstance(word, tuple) else word,
                                                        str(payload.get("message") or "")))


def classify(gold: str, paid: bool | None, error: str | None) -> str:
    if error is not None:
        return "error"
    if paid is None:
        return "not-evaluated"
    if gold == "fail":
        return "paid-wrong" if paid else "refused-wrong"
    # "pass", and "outage" (the correct write behind an unreadable store)
    return "paid-correct" if paid else "over-refusal"


class Scratch:
    """The process's scratch folder for the cells' stores, made on first use and removed at the end
    of the session: one folder per run rather than one created and removed per item."""

    def __init__(self) -> None:
        self._folder: str | None = None
        self._taken = 0

    def file_name(self) -> str:
        """A store file name not given out before in this process (a rerun's attempt gets a new one)."""
        self._taken += 1
        return f"cell{self._taken}.sqlite3"

    def folder(self) -> str:
        if self._folder is None:
            self._folder = tempfile.mkdtemp(prefix="extradup-")
        return self._folder

    def remove(self) -> None:
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


class CellItem(pytest.Item):
    def __init__(self, *args: Any, reward: Reward, condition: str, trial: int, scratch: Scratch,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reward = reward
        self.condition = condition
        self.trial = trial
        self.seed = SEEDS[trial - 1]
        self.payload: dict[str, Any] | None = None
        self.scratch = scratch
        self._store_file: Path | None = None

    def reportinfo(self) -> tuple[Any, int | None, str]:
        # Located at the reward under test, else (a built-in reward) at the item's node
        # (pytest-sugar and CI annotations show this).
        from pytest_agentbench.plugin.integrations import located, source_of

        return located(self, source_of(self.reward.function))

    def setup(self) -> None:
        spec = CONDITIONS[self.condition]
        evidence = apply_cell(self.condition, self.seed, self.scratch.folder(), file_name=self.scratch.file_name())
        self._store_file = evidence.store_path
        result = call_reward(self.reward, evidence)
        try:
            new_records: int | None = len(evidence.new)
        except StoreUnavailable:
            new_records = None
        verdict = classify(spec.gold, result.paid, result.error)
        self.payload = {
            "nodeid": self.nodeid, "reward": self.reward.name, "builtin": self.reward.builtin,
            "known_bad": self.reward.known_bad, "condition": self.condition, "gold": spec.gold,
            "trial": self.trial, "seed": self.seed, "banner": evidence.screen.banner,
            "new_records": new_records, "result": result.shown, "paid": result.paid, "verdict": verdict,
            "message": result.error or self._message(verdict, result.shown, new_records),
        }
        if result.error is not None:
            raise RewardError(result.error, pytrace=False)

    def _message(self, verdict: str, shown: str, new_records: int | None) -> str:
        spec = CONDITIONS[self.condition]
        stored = "store unreadable" if new_records is None else f"{new_records} new record(s)"
        what = f"{self.condition} ({spec.text}; {stored})"
        if verdict == "paid-wrong":
            return f"reward {self.reward.name!r} paid a wrong write: returned {shown} for {what}"
        if verdict == "over-refusal":
            return f"reward {self.reward.name!r} refused the correct write: returned {shown} for {what}"
        if verdict == "not-evaluated":
            return f"not evaluated: reward {self.reward.name!r} returned None for {what}"
        return f"reward {self.reward.name!r} returned {shown} for {what}"

    def runtest(self) -> None:
        assert self.payload is not None
        verdict, message = self.payload["verdict"], self.payload["message"]
        if verdict == "paid-wrong":
            raise PaidWrong(message, pytrace=False)
        if verdict == "over-refusal":
            raise OverRefusal(message, pytrace=False)
        if verdict == "not-evaluated":
            pytest.skip(message)

    def teardown(self) -> None:
        if self._store_file is not None:
            self._store_file.unlink(missing_ok=True)
            self._store_file = None


class ConditionGroup(pytest.Collector):
    def __init__(self, *args: Any, reward: Reward, scratch: Scratch, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reward = reward
        self.scratch = scratch

    def collect(self) -> Iterator[pytest.Item]:
        wrong = CONDITIONS[self.name].gold == "fail"
        for trial in range(1, len(SEEDS) + 1):
            item = CellItem.from_parent(self, name=f"trial{trial}", reward=self.reward, condition=self.name,
                                        trial=trial, scratch=self.scratch)
            item.add_marker(NAME)
            if wrong and self.reward.known_bad:
                item.add_marker(pytest.mark.xfail(
                    reason=f"{self.reward.name} is a known-bad reference reward: it pays wrong writes",
                    strict=True, raises=PaidWrong))
            yield item


class RewardGroup(pytest.Collector):
    def __init__(self, *args: Any, reward: Reward, scratch: Scratch, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reward = reward
        self.scratch = scratch

    def collect(self) -> Iterator[pytest.Collector]:
        for condition in CONDITIONS:
            yield ConditionGroup.from_parent(self, name=condition, reward=self.reward, scratch=self.scratch)


class ExtraDupSuite(pytest.Collector):
    agentbench_suite = True

    def __init__(self, *args: Any, rewards: tuple[Reward, ...] = (), scratch: Scratch, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rewards = rewards
        self.scratch = scratch

    def collect(self) -> Iterator[pytest.Collector]:
        for reward in self.rewards:
            yield RewardGroup.from_parent(self, name=reward.name, reward=reward, scratch=self.scratch)


def reward_specs(config: pytest.Config) -> list[str]:
    specs = config.getoption("agentbench_reward", default=None)
    if not specs:
        try:
            specs = config.getini("agentbench_reward")
        except ValueError:  # the option's ini key is not registered
            specs = []
    return [part.strip() for text in specs or () for part in str(text).split(",") if part.strip()]


class ExtraDup:
    """The suite provider: created in every process, registered as a pytest plugin."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.rewards: tuple[Reward, ...] = (*builtin_rewards(),
                                            *user_rewards(reward_specs(config), str(config.rootpath)))
        # One entry per item: a trial reported twice (--dist each, reruns) counts once.
        self.payloads = reporting.Payloads(PAYLOAD_ATTR)
        self.scratch = Scratch()

    def collect(self, session: pytest.Session) -> pytest.Collector:
        return ExtraDupSuite.from_parent(session, name=NAME, nodeid=f"bench/{NAME}", rewards=self.rewards,
                                         scratch=self.scratch)

    def pytest_sessionfinish(self) -> None:
        self.scratch.remove()  # the items' files are gone already, unless a teardown never ran

    # -- reports -------------------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if isinstance(item, CellItem) and item.payload is not None and reporting.carries_payload(report):
            reporting.attach(report, PAYLOAD_ATTR, dict(item.payload), item.nodeid)
        return report

    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config) -> Any:
        payload = getattr(report, PAYLOAD_ATTR, None)
        if payload is None or not reporting.own_status(report):
            return None  # an xfail, or a rerun plugin's attempt: its own status word
        return WORDS.get(payload["verdict"])

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if reporting.is_controller(self.config):
            self.payloads.add(report)

    # -- controller: the summary ---------------------------------------------------------------
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not reporting.is_controller(self.config) or not self.payloads:
            return
        reporting.write_block(terminalreporter, "extradup: does a reward pay for wrong writes?",
                              render(self.rewards, self.payloads.values()))


# -- rendering --------------------------------------------------------------------------------------
def tally(payloads: list[dict[str, Any]], reward: str, conditions: tuple[str, ...]) -> dict[str, int]:
    rows = [p for p in payloads if p["reward"] == reward and p["condition"] in conditions]
    return {
        "trials": len(rows),
        "paid": sum(1 for p in rows if p["paid"] is True),
        "unscored": sum(1 for p in rows if p["verdict"] == "not-evaluated"),
        "errors": sum(1 for p in rows if p["verdict"] == "error"),
    }


def _fraction(t: dict[str, int]) -> str:
    text = f"{t['paid']}/{t['trials']}"
    extras = [f"{t['unscored']} unscored"] * bool(t["unscored"]) + [f"{t['errors']} error(s)"] * bool(t["errors"])
    return f"{text} ({', '.join(extras)})" if extras else text


GOLD_WORDS = {"pass": "PASS", "fail": "FAIL", "outage": "PASS, store unreadable"}


def render(rewards: tuple[Reward, ...], payloads: list[dict[str, Any]]) -> list[str]:
    ran = [r for r in rewards if any(p["reward"] == r.name for p in payloads)]
    lines: list[str] = []
    for reward in ran:
        lines.append(f"{reward.name} ({reward.description})")
        lines.append(f"  gold-FAIL silent-incorrect-success: {_fraction(tally(payloads, reward.name, WRONG_WRITES))}")
        lines.append(f"  control honest-write: {_fraction(tally(payloads, reward.name, ('control',)))}")
    lines.append("")
    lines.append("paid/trials per condition (unscored: the reward returned None; "
                 "error: it raised or returned a bad value)")
    header = ["condition", "gold", *(r.name for r in ran)]
    table: list[list[str]] = []
    for condition, spec in CONDITIONS.items():
        if not any(p["condition"] == condition for p in payloads):
            continue
        cells = []
        for reward in ran:
            t = tally(payloads, reward.name, (condition,))
            cells.append(_fraction(t) if t["trials"] else "-")
        table.append([condition, GOLD_WORDS[spec.gold], *cells])
    return [*lines, *render_table(header, table)]
