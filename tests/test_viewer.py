"""The static viewer (viewer.html): real runs made in pytester, opened in headless Chromium.

The page is checked as a person would use it: every task is listed with its status and score,
opening a task shows its steps and its screenshots actually load from the run folder, filters and
sorting work, nothing logs a console error, and nothing a benchmark or agent writes (task ids,
reasons, reasoning) can run as script. One browser serves the whole module.

Chromium comes from the system (``/usr/bin/chromium``), never a download. Without it, or without
the ``playwright`` package, the browser tests skip, except under CI (``CI`` set), where they fail:
CI installs both, so a missing one there is a broken setup, not a reason to skip.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import OUTCOME_BENCH, only_run_folder, results

from pytest_agentbench.record import viewer_data
from pytest_agentbench.record.runfolder import RunFolder
from pytest_agentbench.record.viewer import main, write_viewer

XSS = "</script><script>alert(1)</script>"
MOCK = ("--bench=mock", "--bench-limit", "3", "--bench-screenshots=on")

# A benchmark whose reason, criteria and instruction are all markup. (Task ids and domains with
# markup are refused at collection, see test_markup.py; hand-written run folders below hold them.)
EVIL_BENCH = '''
from pytest_agentbench import Benchmark, Criterion, Observation, Task, Verdict

XSS = "</script><script>alert(1)</script>"

class EvilBench(Benchmark):
    name = "evil"
    def list_tasks(self, limit=None):
        return [Task(task_id="evil_bold%amp;", domain="dom%i",
                     instruction=XSS + "<img src=x onerror=alert(2)>")]
    def reset(self, task):
        return Observation()
    def step(self, action):
        return Observation()
    def evaluate(self, task, final_action):
        return Verdict(score=0.0, passed=False, reason=XSS,
                       criteria=[Criterion(name="<img src=x onerror=alert(3)>", passed=False, actual=XSS)])

def pytest_agentbench_register_benchmarks(registry):
    registry.register("evil", lambda config: EvilBench())
'''




@dataclass
class Viewer:
    """An open viewer.html and everything the page did that a test may want to forbid."""

    page: Any
    run_dir: Path
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def row(self, task_id: str) -> Any:
        return self.page.locator("tr.row").filter(has=self.page.get_by_role("button", name=task_id, exact=True))

    def expand(self, task_id: str) -> Any:
        """Open a task and return its detail row, once its detail is drawn (unpacked from the page)."""
        self.row(task_id).click()
        self.page.locator("tr.detail .detail-body").wait_for()
        return self.page.locator("tr.detail")

    def assert_clean(self) -> None:
        """No console error, no dialog, and no request outside the run folder."""
        assert self.errors == []
        assert self.dialogs == []
        base = self.run_dir.resolve().as_uri() + "/"
        assert [url for url in self.requests if not url.startswith(base)] == []


def wait_until(page: Any, expression: str, timeout: float = 30.0) -> None:
    """Wait until the JavaScript ``expression`` is true in ``page``. Not ``page.wait_for_function``:
    it evaluates a string predicate with ``eval`` inside the page whenever it has to poll, which the
    viewer's Content Security Policy (no 'unsafe-eval') refuses; ``page.evaluate`` is not subject to it."""
    deadline = time.monotonic() + timeout
    probe = f"(() => {{ try {{ return !!({expression}); }} catch (e) {{ return false; }} }})()"
    while not page.evaluate(probe):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for: {expression}")
        page.wait_for_timeout(20)


@pytest.fixture
def open_viewer(browser: Any) -> Iterator[Callable[..., Viewer]]:
    pages = []

    def _open(run_dir: Path, fragment: str = "", before: str | None = None) -> Viewer:
        """``before``: a script run in the page before its own (to take something from the browser)."""
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        pages.append(page)
        if before is not None:
            page.add_init_script(before)
        viewer = Viewer(page, run_dir)
        page.on("console", lambda message: viewer.errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda exc: viewer.errors.append(str(exc)))
        page.on("dialog", lambda dialog: (viewer.dialogs.append(dialog.message), dialog.dismiss()))
        page.on("request", lambda request: viewer.requests.append(request.url))
        page.goto((run_dir / "viewer.html").resolve().as_uri() + fragment)
        # The table is drawn once its rows are unpacked, and a linked task's detail once its own are.
        wait_until(page, "document.getElementById('count').textContent !== ''"
                         " && !document.querySelector('tr.detail .loading')")
        return viewer

    yield _open
    for page in pages:
        page.close()


def embedded_blocks(html: str) -> list[str]:
    """The text of every data block of the page: its JSON blocks and its packed ones."""
    return re.findall(r'<script type="application/(?:json|octet-stream)"[^>]*>(.*?)</script>', html, flags=re.DOTALL)


def packed_blocks(html: str) -> dict[str, bytes]:
    """The page's packed blocks, by id, unpacked as the page unpacks them (every one base64 of raw deflate)."""
    from pytest_agentbench.record.packed import unpack

    found = re.findall(r'<script type="application/octet-stream" id="([^"]+)">(.*?)</script>', html, flags=re.DOTALL)
    assert [name for name, _ in found] == [f"z-{n}" for n in range(len(found) - 1)] + ["run-rows"]
    return {name: unpack(text) for name, text in found}


@dataclass
class Detail:
    """One task as the page reads it when the task opens: its row, its whole record, and its trajectory."""

    row: dict[str, Any]
    record: dict[str, Any]
    why: str | None
    path: str
    trajectory: bytes | None


def page_tasks(html: str) -> list[Detail]:
    """Every task of a written page, read from its blocks as its script reads them."""
    blocks = packed_blocks(html)
    rows = json.loads(blocks["run-rows"])
    at, out = rows["at"], []

    def piece(where: list[int]) -> bytes:
        return blocks[f"z-{where[0]}"][where[1]:where[2]]

    for index in range(rows["count"]):
        row = {name: column[index] for name, column in zip(rows["fields"], rows["columns"], strict=True)
               if column is not None and column[index] is not None}  # a column of nulls only is one null
        record, (where, why, path) = json.loads(piece(at[3 * index:3 * index + 3]))
        out.append(Detail(row, record, why, path, piece(where) if where is not None else None))
    return out


def page_holds(html: str) -> str:
    """All the page holds: its text and its packed blocks' (for what must or must not be in it)."""
    return html + "".join(data.decode("utf-8", "replace") for data in packed_blocks(html).values())


def mock_run(run: Callable[..., Any], pytester: pytest.Pytester, *args: str) -> Path:
    run(*MOCK, *args)
    return only_run_folder(pytester.path)


# -- real runs ----------------------------------------------------------------------------------


def test_mock_run_lists_every_task_with_status_and_score(run, pytester, open_viewer):
    folder = mock_run(run, pytester)
    rows = results(folder)
    viewer = open_viewer(folder)
    page = viewer.page
    assert page.locator("h1").inner_text() == folder.name
    metrics = page.locator("#metrics").inner_text()
    for text in ("Success rate", "100.0%", "Avg score", "1.000", "Attempts", "Outcomes", "Errors", "Avg steps", "1.0"):
        assert text in metrics
    assert "mock" in page.locator("#run-meta").inner_text()
    assert len(rows) == 3
    for record in rows:
        row = viewer.row(record["task_id"])
        assert row.is_visible()
        assert row.locator(".status").inner_text() == "passed"
        assert row.locator(".score").inner_text() == "1.000"
        assert row.locator(".domain").inner_text() == record["domain"]
    assert page.locator("#count").inner_text() == "3 tasks"
    viewer.assert_clean()
    # Screenshots are linked, never inlined: three tasks' PNGs (about 40 KB each) are not in it,
    # neither as data URLs nor as PNG bytes in its packed blocks.
    html = (folder / "viewer.html").read_text(encoding="utf-8")
    assert "data:image" not in html and "iVBORw0KGgo" not in html
    assert not any(b"\x89PNG" in data for data in packed_blocks(html).values())
    assert "http://" not in html and "https://" not in html
    assert len(html) < 100_000


def test_opening_a_task_shows_its_steps_and_screenshots(run, pytester, open_viewer):
    folder = mock_run(run, pytester)
    viewer = open_viewer(folder)
    detail = viewer.expand("mock_chrome_001")
    assert detail.locator(".action").all_inner_texts() == ["click #4", "done"]
    assert "click the Submit button" in detail.inner_text()
    assert "form submitted" in detail.locator("table.criteria").inner_text()
    images = detail.locator("img")
    assert [images.nth(i).get_attribute("src") for i in range(images.count())] == [
        "tasks/mock/mock_chrome_001/step_000.png",
        "tasks/mock/mock_chrome_001/step_001.png",
        "tasks/mock/mock_chrome_001/final.png",
    ]
    assert all(images.nth(i).get_attribute("loading") == "lazy" for i in range(images.count()))
    wait_until(viewer.page,
               "Array.from(document.querySelectorAll('tr.detail img')).every(i => i.complete && i.naturalWidth > 0)")
    assert viewer.page.evaluate("document.querySelector('tr.detail img').naturalWidth") == 1920
    # A screenshot opens large, and Escape closes it.
    images.first.click()
    assert viewer.page.locator("#lightbox").is_visible()
    assert viewer.page.locator("#lb-pos").inner_text() == "1 / 3"
    viewer.page.keyboard.press("ArrowRight")
    assert viewer.page.locator("#lb-caption").inner_text() == "step 1: done"
    viewer.page.keyboard.press("Escape")
    assert viewer.page.locator("#lightbox").is_hidden()
    # Clicking the row again closes it.
    viewer.row("mock_chrome_001").click()
    assert viewer.page.locator("tr.detail").count() == 0
    viewer.assert_clean()
    # A link to a task (the address bar after opening one) opens it.
    linked = open_viewer(folder, "#mock/mock_clock_001")
    assert linked.page.locator("tr.detail").count() == 1
    assert linked.row("mock_clock_001").get_attribute("class") == "row open"
    linked.assert_clean()


def test_noop_run_shows_failures_and_failed_criteria(run, pytester, open_viewer):
    folder = mock_run(run, pytester, "--bench-agent", "noop")
    viewer = open_viewer(folder)
    metrics = viewer.page.locator("#metrics").inner_text()
    assert "0.0%" in metrics and "0 of 3 passed" in metrics
    for record in results(folder):
        row = viewer.row(record["task_id"])
        assert row.locator(".status").inner_text() == "failed"
        assert row.locator(".score").inner_text() == "0.000"
        # The Reason column names the failing criterion; the checker's own text is in its title.
        reason = row.locator(".reason")
        assert reason.inner_text() == "form submitted: neither Submit clicked nor text typed and OK clicked"
        assert record["reason"] == "clicked=[], typed='', final=done"
        assert "checker: clicked=[], typed='', final=done" in reason.get_attribute("title")
    detail = viewer.expand("mock_clock_001")
    criteria = detail.locator("table.criteria tbody tr")
    assert criteria.count() == 1  # "form submitted": Submit, or text and OK
    assert criteria.first.locator("td").first.get_attribute("title") == "failed"
    assert detail.locator(".action").all_inner_texts() == ["done"]
    viewer.assert_clean()


def test_every_ending_gets_its_status_and_filters_and_sorting_work(run, pytester, open_viewer):
    pytester.makeconftest(OUTCOME_BENCH)
    run("--bench=outcomes", "--bench-agent", "outcome-agent")
    folder = only_run_folder(pytester.path)
    rows = results(folder)
    viewer = open_viewer(folder)
    page = viewer.page
    for record in rows:
        assert viewer.row(record["task_id"]).locator(".status").inner_text() == record["status"]
        if not record["outcome"]:
            assert viewer.row(record["task_id"]).locator(".score").inner_text() == "n/a"
    statuses = {r["status"] for r in rows}
    assert {"passed", "failed", "error", "skipped"} <= statuses
    # A status chip filters, and clicking it again clears the filter.
    failed = sorted(r["task_id"] for r in rows if r["status"] == "failed")
    page.locator(".chip[data-status='failed']").click()
    assert sorted(page.locator("tr.row .toggle").all_inner_texts()) == failed
    assert page.locator("#count").inner_text() == f"{len(failed)} of {len(rows)} tasks"
    page.locator(".chip[data-status='failed']").click()
    assert page.locator("tr.row").count() == len(rows)
    # Search matches ids and reasons.
    page.locator("#f-search").fill("wrong file content")
    assert page.locator("tr.row .toggle").all_inner_texts() == ["fail"]
    page.locator("#f-search").fill("")
    # Sorting by score puts the best first and the unscored last.
    page.locator("th[data-key='score'] button").click()
    scores = page.locator("tr.row .score").all_inner_texts()
    numbers = [float(s) for s in scores if s != "n/a"]
    assert numbers == sorted(numbers, reverse=True)
    assert scores[len(numbers):] == ["n/a"] * (len(scores) - len(numbers))
    assert page.locator("th[data-key='score']").get_attribute("aria-sort") == "descending"
    # A verdict from criteria names the one that failed; errors show their message.
    assert viewer.row("partial").locator(".reason").inner_text() == "b failed"
    assert viewer.row("agent_error").locator(".reason").inner_text() == "agent reported an error: gave up"
    assert viewer.row("pass").locator(".reason").inner_text() == "ok"
    # Failed and Errors count what pytest counted (agent errors are failures).
    assert card(page, "failed") == str(sum(r["status"] == "failed" for r in rows)) == "4"
    assert card(page, "errors") == str(sum(r["status"] == "error" for r in rows)) == "2"
    assert "2 agent errors" in page.locator(".c-failed .card-sub").inner_text()
    # An infrastructure error shows its message.
    infra = next(r for r in rows if r["error_type"] == "infrastructure")
    assert "VM unreachable" in viewer.expand(infra["task_id"]).inner_text()
    viewer.assert_clean()


def card(page: Any, name: str) -> str:
    """The value on a metrics card (``failed``, ``errors``)."""
    return page.locator(f".card.c-{name} .card-value").inner_text()


def test_an_agent_error_is_a_failure_not_an_error(run, pytester, open_viewer):
    """pytest reports an agent error as a failure; the page's counts say what pytest said."""
    pytester.makeconftest(OUTCOME_BENCH)
    result = run("--bench=outcomes", "--bench-agent", "outcome-agent", "-k", "agent_error")
    result.assert_outcomes(failed=1)
    assert re.search(r"\b1 failed\b", result.stdout.lines[-1]) and "error" not in result.stdout.lines[-1]
    folder = only_run_folder(pytester.path)
    [row] = results(folder)
    assert (row["status"], row["error_type"]) == ("failed", "agent")
    viewer = open_viewer(folder)
    assert card(viewer.page, "failed") == "1"
    assert card(viewer.page, "errors") == "0"
    assert viewer.page.locator(".c-errors .card-sub").inner_text() == "none"
    viewer.assert_clean()


SLEEPING_AGENT = """
import time
import pytest
from pytest_agentbench.agents.builtin import MockAgent

class Sleeper(MockAgent):
    name = "sleeper"
    def act(self, observation, task, history=None):
        if history:  # clicked Submit; then it hangs until the task timeout stops it
            time.sleep(60)
        return super().act(observation, task, history)

@pytest.fixture(scope="session")
def agent():
    return Sleeper()
"""


def test_a_timed_out_task_keeps_the_screen_the_agent_was_looking_at(run, pytester, open_viewer):
    """A task whose agent ran out of time shows its end state, as any task: the last observation's
    screenshot is saved as its final screen and opens in the viewer."""
    pytester.makeconftest(SLEEPING_AGENT)
    result = run("--bench=mock", "--bench-limit", "1", "--bench-task-timeout", "1")
    result.assert_outcomes(failed=1)
    folder = only_run_folder(pytester.path)
    [row] = results(folder)
    assert row["error"] == "task timeout: 1 s (--bench-task-timeout) ran out while the agent was acting"
    shots = ["tasks/mock/mock_chrome_001/step_000.png", "tasks/mock/mock_chrome_001/final.png"]
    assert row["screenshots"] == shots and all((folder / shot).is_file() for shot in shots)
    viewer = open_viewer(folder)
    detail = viewer.expand("mock_chrome_001")
    final = detail.locator(".final img")
    assert final.get_attribute("src") == "tasks/mock/mock_chrome_001/final.png"
    wait_until(viewer.page, "document.querySelector('tr.detail .final img').naturalWidth > 0")
    viewer.assert_clean()


def test_the_header_names_the_player_the_run_recorded(run, pytester, open_viewer):
    """MockMed's arms play its tasks, not the --bench-agent agent: the header says so, as the folder name does."""
    run("--bench=mockmed", "--bench-limit", "2")
    folder = only_run_folder(pytester.path)
    assert folder.name.startswith("mockmed_arms_")
    assert json.loads((folder / "summary.json").read_text())["player"] == "arms"
    viewer = open_viewer(folder)
    meta = header(viewer.page)
    assert meta["player"] == "arms" and "agent" not in meta
    viewer.assert_clean()
    # Where the --bench-agent agent plays, the header names it.
    other = write_run_folder(pytester.path / "hand", "mine", [record("a")], summary={"agent": "noop", "player": "noop"})
    meta = header(open_viewer(other).page)
    assert meta["agent"] == "noop" and "player" not in meta


def header(page: Any) -> dict[str, str]:
    """The run facts under the page's title, by name."""
    return dict(zip(page.locator("#run-meta .meta-key").all_inner_texts(),
                    page.locator("#run-meta .meta-val").all_inner_texts(), strict=True))


def test_markup_from_a_benchmark_is_shown_as_text(run, pytester, open_viewer):
    pytester.makeconftest(EVIL_BENCH)
    run("--bench=evil", "--bench-agent", "noop")
    folder = only_run_folder(pytester.path)
    html = (folder / "viewer.html").read_text(encoding="utf-8")
    assert "<script>alert" not in html
    assert all("<" not in block and ">" not in block for block in embedded_blocks(html))
    viewer = open_viewer(folder)
    task_id = "evil_bold%amp;"
    row = viewer.row(task_id)
    assert row.locator(".reason").inner_text() == "<img src=x onerror=alert(3)>: got " + json.dumps(XSS)
    assert row.locator(".reason").get_attribute("title").endswith("checker: " + XSS)
    assert row.locator(".domain").inner_text() == "dom%i"
    detail = viewer.expand(task_id)
    assert XSS + "<img src=x onerror=alert(2)>" in detail.inner_text()
    assert "<img src=x onerror=alert(3)>" in detail.locator("table.criteria").inner_text()
    assert viewer.page.locator("#task-rows b, #task-rows i, #task-rows img").count() == 0
    assert viewer.page.evaluate("document.querySelectorAll('script:not([type])').length") == 1
    viewer.page.wait_for_timeout(200)  # a handler that fired late would still be caught
    viewer.assert_clean()


# -- hand-written run folders -------------------------------------------------------------------


def write_run_folder(root: Path, name: str, records: list[dict[str, Any]],
                     trajectories: dict[str, Any] | None = None, summary: dict[str, Any] | None = None) -> Path:
    """A run folder as the plugin lays it out, with whatever content a test needs."""
    folder = RunFolder.create(root, name)
    for record in records:
        folder.append_result(record)
    for rel, content in (trajectories or {}).items():
        path = folder.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    if summary is not None:
        folder.write_json(folder.summary_path, summary)
    write_viewer(folder.path)
    return folder.path


def record(task_id: str, **fields: Any) -> dict[str, Any]:
    base = {"task_id": task_id, "benchmark": "hand", "domain": "d", "status": "failed", "score": 0.0,
            "success": False, "outcome": True, "num_steps": 1, "reason": "r", "error": None, "error_type": None,
            "trajectory": f"tasks/hand/{task_id}/trajectory.json"}
    return {**base, **fields}


def many_tasks(root: Path, count: int) -> Path:
    """A hand-made run of ``count`` tasks, every fifth passed, two of them with a trajectory."""
    steps = {"steps": [{"index": 0, "label": "click #1", "action": {"type": "click"}}]}
    records = [record(f"t-{n:03d}", domain=f"d{n % 3}", **({"status": "passed", "success": True, "score": 1.0}
                                                          if n % 5 == 0 else {})) for n in range(count)]
    return write_run_folder(root, "many", records, {f"tasks/hand/t-{n:03d}/trajectory.json": steps for n in (0, 250)})


def shown_ids(page: Any) -> list[str]:
    return page.locator("tr.row .toggle").all_inner_texts()


def test_a_big_run_shows_its_rows_a_page_at_a_time(tmp_path, open_viewer):
    viewer = open_viewer(many_tasks(tmp_path, 350))
    page = viewer.page
    assert page.locator("#count").inner_text() == "350 tasks"
    assert shown_ids(page) == [f"t-{n:03d}" for n in range(100)]
    assert page.locator("#pg-pos").inner_text() == "rows 1\u2013100 of 350 \u00b7 page 1 of 4"
    assert page.locator("#pg-prev").is_disabled()
    page.locator("#pg-next").click()
    assert shown_ids(page) == [f"t-{n:03d}" for n in range(100, 200)]
    page.locator("#pg-last").click()
    assert shown_ids(page) == [f"t-{n:03d}" for n in range(300, 350)]
    assert page.locator("#pg-next").is_disabled()
    page.locator("#pg-first").click()
    assert shown_ids(page)[0] == "t-000"
    # Filters and sorting work on every task, not on the page drawn: 70 passed, on one page.
    page.locator("#f-status").select_option("passed")
    assert page.locator("#count").inner_text() == "70 of 350 tasks"
    assert shown_ids(page) == [f"t-{n:03d}" for n in range(0, 350, 5)]
    assert page.locator("#pager").is_hidden()
    page.locator("#f-status").select_option("")
    page.locator("#f-search").fill("t-34")
    assert shown_ids(page) == [f"t-{n}" for n in range(340, 350)]
    page.locator("#f-search").fill("")
    page.locator("th[data-key='task_id'] button").click()
    page.locator("th[data-key='task_id'] button").click()
    assert shown_ids(page)[:2] == ["t-349", "t-348"]
    assert page.locator("#pg-pos").inner_text().endswith("page 1 of 4")
    viewer.assert_clean()


def test_opening_a_task_adds_its_detail_in_place(tmp_path, open_viewer):
    viewer = open_viewer(many_tasks(tmp_path, 350))
    page = viewer.page
    # A mark on another row's element: it survives only if that row is not drawn again.
    page.evaluate("() => { document.querySelector('tr.row[data-key=\"7\"]').marked = true; }")
    detail = viewer.expand("t-000")
    assert detail.locator(".action").all_inner_texts() == ["click #1"]
    assert page.evaluate("() => document.querySelector('tr.row').nextElementSibling.className") == "detail"
    assert viewer.row("t-000").locator(".toggle").get_attribute("aria-expanded") == "true"
    viewer.row("t-000").click()
    assert page.locator("tr.detail").count() == 0
    assert viewer.row("t-000").locator(".toggle").get_attribute("aria-expanded") == "false"
    assert page.evaluate("() => document.querySelector('tr.row[data-key=\"7\"]').marked") is True
    viewer.assert_clean()


def test_a_link_to_a_task_on_a_later_page_or_filtered_out_opens_it(tmp_path, open_viewer):
    folder = many_tasks(tmp_path, 350)
    viewer = open_viewer(folder, "#hand%2Ft-250")
    page = viewer.page
    assert page.locator("tr.row.open .task").all_inner_texts() == ["t-250"]
    assert page.locator("tr.detail .action").all_inner_texts() == ["click #1"]
    assert page.locator("#pg-pos").inner_text().endswith("page 3 of 4")
    # A link to a task the filters hide clears them and turns to its page.
    page.locator("#f-status").select_option("passed")
    page.evaluate("() => { location.hash = '#hand%2Ft-123'; }")
    page.locator("tr.row.open .task", has_text="t-123").wait_for()
    assert page.locator("#count").inner_text() == "350 tasks"
    assert page.locator("#f-status").input_value() == ""
    assert page.locator("#pg-pos").inner_text().endswith("page 2 of 4")
    viewer.assert_clean()


def test_the_page_packs_each_tasks_detail_and_shows_all_of_it_on_open(tmp_path, open_viewer):
    """The page carries up front only what its table reads of each task; the whole record and the
    trajectory are packed, and a task's detail shows what only they hold."""
    steps = {"steps": [{"index": i, "label": f"click #{i}", "reasoning": f"step {i} because " + "the form " * 40}
                       for i in range(20)], "task": {"instruction": "fill the form"}}
    records = [record(f"t-{n:03d}", total_time_seconds=1.5, cost_usd=0.1234, extra={"log": "x" * 2000},
                      screenshots=[f"tasks/hand/t-{n:03d}/final.png"]) for n in range(300)]
    records[1] = {k: v for k, v in records[1].items() if k != "outcome"}  # scored: the record says nothing else
    records[2]["outcome"] = None  # a null outcome is no outcome, as a false one
    folder = write_run_folder(tmp_path, "packed", records,
                              {f"tasks/hand/t-{n:03d}/trajectory.json": steps for n in range(300)})
    html = (folder / "viewer.html").read_text(encoding="utf-8")
    carried = (folder / "results.jsonl").stat().st_size + 300 * len(json.dumps(steps))
    assert len(html) < carried / 10
    tasks = page_tasks(html)
    assert [task.record for task in tasks] == results(folder)
    assert all(task.trajectory is not None and json.loads(task.trajectory) == steps for task in tasks)
    assert {name for task in tasks for name in task.row} <= set(viewer_data.ROW_FIELDS)
    assert "extra" not in tasks[0].row and "total_time_seconds" not in tasks[0].row
    viewer = open_viewer(folder)
    assert viewer.row("t-001").locator(".score").inner_text() == "0.000"
    assert viewer.row("t-002").locator(".score").inner_text() == "n/a"
    detail = viewer.expand("t-099")
    facts = detail.locator(".facts").inner_text()
    assert "time 1.5 s" in facts and "cost $0.1234" in facts
    assert "fill the form" in detail.inner_text() and detail.locator(".action").count() == 20
    assert detail.locator(".final img").get_attribute("src") == "tasks/hand/t-099/final.png"
    viewer.errors = [e for e in viewer.errors if "ERR_FILE_NOT_FOUND" not in e]
    viewer.assert_clean()


def test_a_browser_that_cannot_unpack_the_page_says_so(tmp_path, open_viewer):
    viewer = open_viewer(many_tasks(tmp_path, 3), before="delete window.DecompressionStream;")
    assert viewer.page.locator("#count").inner_text() == "0 tasks"
    assert "needs DecompressionStream" in viewer.page.locator("#notes").inner_text()
    assert viewer.page.locator("#run-name").inner_text() == "many"  # what is not packed is shown
    viewer.assert_clean()


def test_packed_pieces_come_back_whole_from_their_blocks():
    from pytest_agentbench.record.packed import Packer, unpack

    packer = Packer(chunk=1000)
    pieces = [bytes([n % 251]) * (n * 37 % 900 + 1) for n in range(60)] + [b"<big>" * 2000, b"</script>"]
    blocks, where = [], []
    for piece in pieces:
        where.append(packer.add(piece))
        if packer.full:
            blocks.append(packer.seal())
    if not packer.empty:
        blocks.append(packer.seal())
    assert len(blocks) > 10 and packer.blocks == len(blocks)
    unpacked = [unpack(block) for block in blocks]
    assert [unpacked[n][start:end] for n, start, end in where] == pieces
    assert where[-2][2] - where[-2][1] == 10_000  # the big piece, whole in one block, bigger than a block
    assert all(re.fullmatch(r"[A-Za-z0-9+/=]*", block) for block in blocks)  # nothing that could end a script


def test_markup_everywhere_in_a_run_folder_stays_text(tmp_path, open_viewer):
    evil_step = {"index": 0, "label": "<svg onload=alert(4)>", "reasoning": XSS,
                 "screenshot_path": "javascript:alert(5)", "action": {"type": "click"}}
    folder = write_run_folder(
        tmp_path, "run<img src=x onerror=alert(6)>",
        [record("ok", error=XSS, error_type="agent", reason=XSS, criteria=[{"name": XSS, "passed": None}],
                screenshots=["javascript:alert(7)", "/etc/passwd", "../../x.png"]),
         record("broken")],
        {"tasks/hand/ok/trajectory.json": {"steps": [evil_step], "final_screenshot": "https://example.com/x.png",
                                           "task": {"instruction": XSS}},
         "tasks/hand/broken/trajectory.json": "</script><script>alert(8)</script>"},
        summary={"run_name": "run<img src=x onerror=alert(6)>", "agent": "<b>agent</b>"},
    )
    html = (folder / "viewer.html").read_text(encoding="utf-8")
    assert "<title>run&lt;img src=x onerror=alert(6)&gt; · agentbench</title>" in html
    assert all("<" not in block for block in embedded_blocks(html))
    viewer = open_viewer(folder)
    page = viewer.page
    assert page.locator("h1").inner_text() == "run<img src=x onerror=alert(6)>"
    assert "<b>agent</b>" in page.locator("#run-meta").inner_text()
    detail = viewer.expand("ok")
    text = detail.inner_text()
    assert "<svg onload=alert(4)>" in text and text.count(XSS) >= 3
    assert detail.locator("img, svg").count() == 0  # unsafe screenshot paths are dropped, not linked
    viewer.row("ok").click()
    assert "not valid JSON" in viewer.expand("broken").inner_text()
    page.wait_for_timeout(200)
    viewer.assert_clean()


def test_a_run_with_no_results_still_gets_a_viewer(tmp_path, open_viewer):
    folder = tmp_path / "empty-run"
    folder.mkdir()
    path = write_viewer(folder)
    assert path == folder / "viewer.html"
    viewer = open_viewer(folder)
    assert "No results in this run yet." in viewer.page.locator("#task-rows").inner_text()
    assert "n/a" in viewer.page.locator("#metrics").inner_text()
    assert "interrupted" in viewer.page.locator("#run-meta").inner_text()
    viewer.assert_clean()
    (folder / "results.jsonl").write_text("", encoding="utf-8")
    write_viewer(folder)
    viewer.page.reload()
    wait_until(viewer.page, "document.getElementById('count').textContent !== ''")
    assert viewer.page.locator("#count").inner_text() == "0 tasks"
    viewer.assert_clean()


def test_missing_trajectories_and_bad_lines_are_reported_not_fatal(tmp_path, open_viewer):
    folder = tmp_path / "partial"
    folder.mkdir()
    good = record("lost", status="passed", success=True, score=1.0, screenshots=["tasks/hand/lost/final.png"])
    two_in_one = json.dumps(record("x")) + "," + json.dumps(record("y"))
    lines = [json.dumps(good), "{not json", json.dumps({"no": "task id"}), two_in_one,
             json.dumps(record("nan", cost_usd=float("nan")))]
    (folder / "results.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_viewer(folder)
    viewer = open_viewer(folder)
    notes = viewer.page.locator("#notes").inner_text()
    assert "skipped 3 malformed record(s) (record 2, 3, 4)" in notes
    assert "2 trajectory file(s) not found" in notes
    # Metrics come from the records when summary.json is missing.
    assert "50.0%" in viewer.page.locator("#metrics").inner_text()
    detail = viewer.expand("lost")
    assert "trajectory.json not found" in detail.inner_text()
    # The final screenshot is known from the record; the file is gone, and the page says so.
    detail.locator(".gone").wait_for()
    viewer.errors = [e for e in viewer.errors if "ERR_FILE_NOT_FOUND" not in e]
    viewer.assert_clean()


def test_run_folder_from_evaluate_agent_on_benchmark(tmp_path, open_viewer):
    from pytest_agentbench import MockAgent, MockBenchmark, evaluate_agent_on_benchmark

    evaluate_agent_on_benchmark(MockAgent(), MockBenchmark(3), task_ids=["mock_chrome_001", "mock_nope_1"],
                                results_dir=tmp_path, run_name="api")
    viewer = open_viewer(tmp_path / "api")
    assert viewer.row("mock_chrome_001").locator(".status").inner_text() == "passed"
    assert viewer.row("mock_nope_1").locator(".status").inner_text() == "error"
    assert viewer.row("mock_nope_1").locator(".score").inner_text() == "n/a"
    assert viewer.expand("mock_chrome_001").locator(".action").all_inner_texts() == ["click #4", "done"]
    viewer.assert_clean()


# -- cost and the command line ------------------------------------------------------------------


def test_write_viewer_never_opens_a_png(tmp_path, monkeypatch):
    trajectory = json.loads(json.dumps({
        "steps": [{"index": i, "label": f"click ({i}, 1)", "reasoning": "because " * 20,
                   "screenshot_path": f"step_{i:03d}.png"} for i in range(3)],
        "task": {"instruction": "do it"}, "final_screenshot": "final.png",
    }))
    records, trajectories = [], {}
    for n in range(500):
        task_id = f"t{n:03d}"
        records.append(record(task_id, screenshots=[f"tasks/hand/{task_id}/step_000.png"]))
        trajectories[f"tasks/hand/{task_id}/trajectory.json"] = trajectory
    folder = write_run_folder(tmp_path, "big", records, trajectories)
    opened: list[str] = []
    real_open, real_io_open = os.open, open

    def spy_open(path: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    def spy_io_open(path: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(path))
        return real_io_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy_open)
    monkeypatch.setattr("io.open", spy_io_open)
    write_viewer(folder)
    monkeypatch.undo()
    assert not [p for p in opened if p.endswith(".png")]
    assert page_tasks((folder / "viewer.html").read_text())[-1].row["task_id"] == "t499"


def test_main_rejects_a_bad_folder(tmp_path, capsys):
    missing = tmp_path / "no-such-run"
    assert main([str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(missing) in err
    (tmp_path / "file").write_text("x")
    assert main([str(tmp_path / "file")]) == 2
    assert "is not a directory" in capsys.readouterr().err
    (tmp_path / "plain").mkdir()
    assert main([str(tmp_path / "plain")]) == 2
    assert "is not a run folder" in capsys.readouterr().err
    assert not (tmp_path / "plain" / "viewer.html").exists()


def test_main_writes_the_viewer_and_prints_its_path(tmp_path, capsys):
    folder = write_run_folder(tmp_path, "cli", [record("a")])
    (folder / "viewer.html").unlink()
    assert main([str(folder)]) == 0
    assert capsys.readouterr().out.strip() == str(folder / "viewer.html")
    assert (folder / "viewer.html").exists()


def test_the_page_assets_ship_as_package_data_and_are_inlined(tmp_path):
    """The page's template, style and script are files under record/assets, listed as package data
    (so a wheel holds them), and the written page inlines every one: it needs no file beside it."""
    import fnmatch
    from importlib import resources

    tomllib = pytest.importorskip("tomllib")
    root = Path(__file__).resolve().parent.parent
    globs = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assets = resources.files("pytest_agentbench.record") / "assets"
    names = sorted(entry.name for entry in assets.iterdir() if entry.is_file())
    assert {"viewer.css", "viewer.html", "viewer.js", "compare.css"} <= set(names)
    for name in names:
        assert any(fnmatch.fnmatch(f"record/assets/{name}", g) for g in globs["pytest_agentbench"]), name
    page = (write_run_folder(tmp_path, "inline", [record("a")]) / "viewer.html").read_text(encoding="utf-8")
    css, js = (assets / "viewer.css").read_text(encoding="utf-8"), (assets / "viewer.js").read_text(encoding="utf-8")
    assert f"<style>{css}</style>" in page and f"<script>{js}</script>" in page
    assert not re.search(r"<(link|script)[^>]+(href|src)=", page)
    assert not re.search(r"__[A-Z]+__", page.replace(js, "").replace(css, ""))  # every placeholder filled


def test_module_entry_point(tmp_path):
    missing = tmp_path / "nope"
    proc = subprocess.run([sys.executable, "-m", "pytest_agentbench.record.viewer", str(missing)],
                          check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"agentbench-view: {missing} does not exist"]


def test_symbolic_links_in_a_run_folder_are_never_followed(tmp_path, capsys):
    """A run folder from someone else: its files may be links to this machine's secrets."""
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "id_ed25519").write_text('{"steps": [], "key": "PRIVATE-KEY-MATERIAL"}')
    (secret / "summary.json").write_text('{"run_name": "SUMMARY-SECRET", "tasks": []}')
    (secret / "results.jsonl").write_text('{"task_id": "RESULTS-SECRET", "benchmark": "b"}\n')
    (secret / "bashrc").write_text("original")
    folder = tmp_path / "runs" / "hostile"
    (folder / "tasks" / "hand" / "a").mkdir(parents=True)
    (folder / "manifest.json").write_text("{}")
    (folder / "tasks" / "hand" / "a" / "trajectory.json").symlink_to(secret / "id_ed25519")  # the file a link
    (folder / "tasks" / "hand" / "b").symlink_to(secret, target_is_directory=True)          # a folder a link
    (secret / "trajectory.json").write_text('{"steps": [], "key": "DIR-LINK-SECRET"}')
    (folder / "results.jsonl").write_text(json.dumps(record("a")) + "\n" + json.dumps(record("b")) + "\n")
    (folder / ".viewer.html.tmp").symlink_to(secret / "bashrc")                                 # a write through a link
    assert main([str(folder)]) == 0
    page = page_holds((folder / "viewer.html").read_text())
    assert "PRIVATE-KEY-MATERIAL" not in page and "DIR-LINK-SECRET" not in page
    assert "symbolic links" in page
    assert (secret / "bashrc").read_text() == "original"
    # summary.json and results.jsonl as links: not read either
    other = tmp_path / "runs" / "linked"
    other.mkdir()
    (other / "summary.json").symlink_to(secret / "summary.json")
    (other / "results.jsonl").symlink_to(secret / "results.jsonl")
    assert main([str(other)]) == 0
    page = page_holds((other / "viewer.html").read_text())
    assert "SUMMARY-SECRET" not in page and "RESULTS-SECRET" not in page


def test_trials_show_the_interval_pass_hat_k_and_one_row_per_trial(run, pytester, open_viewer):
    folder = mock_run(run, pytester, "--bench-trials", "2")
    summary = json.loads((folder / "summary.json").read_text())
    low, high = summary["statistics"]["ci95"]
    viewer = open_viewer(folder)
    metrics = viewer.page.locator("#metrics").inner_text()
    assert "95% interval" in metrics and f"[{low * 100:.1f}%, {high * 100:.1f}%]" in metrics
    assert "Wilson over tasks' effective trials" in metrics and "pass^2" in metrics
    for record in results(folder):
        assert viewer.row(f"{record['task_id']}::trial-{record['trial']}").is_visible()
    assert viewer.page.locator("#count").inner_text() == "6 tasks"
    viewer.assert_clean()
    # A link to the task (the comparison page's) opens every trial of it; a trial's link, that one.
    every = open_viewer(folder, "#mock%2Fmock_clock_001")
    assert every.page.locator("tr.row.open .task").all_inner_texts() == [
        "mock_clock_001::trial-1", "mock_clock_001::trial-2"]
    one = open_viewer(folder, "#mock%2Fmock_clock_001%3A%3Atrial-2")
    assert one.page.locator("tr.row.open .task").all_inner_texts() == ["mock_clock_001::trial-2"]


def test_one_trial_shows_the_wilson_interval(run, pytester, open_viewer):
    folder = mock_run(run, pytester)
    viewer = open_viewer(folder)
    metrics = viewer.page.locator("#metrics").inner_text()
    assert "Wilson" in metrics and "pass^" not in metrics
    assert viewer.row(results(folder)[0]["task_id"]).is_visible()
    viewer.assert_clean()


# -- the page written at the end of a run --------------------------------------------------------


def test_the_run_end_page_equals_the_page_read_back_from_the_folder(run, pytester):
    """The controller hands the viewer its summary and records instead of the files: the page is
    the one ``agentbench-view`` writes from the folder, byte for byte."""
    folder = mock_run(run, pytester, "--bench-limit", "4")
    written = (folder / "viewer.html").read_bytes()
    assert sum(task.trajectory is not None for task in page_tasks(written.decode())) == 4
    write_viewer(folder)
    assert (folder / "viewer.html").read_bytes() == written


def test_the_run_end_page_embeds_the_lines_the_run_wrote(run, pytester, monkeypatch):
    """At the end of a run no record is encoded a second time for the page: its results.jsonl
    line is embedded as written."""

    real, encoded = viewer_data.embed_json, []

    def counting(value: Any, **kwargs: Any) -> str:
        if isinstance(value, dict) and "task_id" in value:
            encoded.append(value["task_id"])
        return real(value, **kwargs)

    monkeypatch.setattr(viewer_data, "embed_json", counting)
    folder = mock_run(run, pytester, "--bench-limit", "4")
    tasks = page_tasks((folder / "viewer.html").read_text())
    assert len(results(folder)) == 4 and [task.record for task in tasks] == results(folder)
    assert all(task.trajectory is not None for task in tasks)
    assert encoded == []
    write_viewer(folder)  # read back from the folder: the file's lines, not encoded either
    assert encoded == []


def test_records_lines_are_embedded_as_written_and_the_rest_encoded(tmp_path, monkeypatch):
    """``record_texts`` (the results.jsonl lines the controller wrote) give the text the records
    would be encoded to; a record without its line, or whose line holds NaN or Infinity (a bare
    token ``JSON.parse`` rejects) or the word in a string, is encoded, as without texts."""
    from pytest_agentbench.record.packed import unpack

    folder = RunFolder.create(tmp_path, "r")
    records = [record("a"), record("b", reason="score NaN"), record("c", score=float("nan")), record("d"),
               record("e", reason="<b>&</b>")]
    texts = [folder.append_result(r) for r in records]
    texts[3] = None  # a kept record of a resumed run: no line written here

    def joined(**kwargs: Any) -> str:
        """The records' texts as packed in the page's blocks."""
        view = viewer_data.collect(folder.path, summary={}, records=records, lazy=True, **kwargs)
        blocks = [unpack(block) for block in view.blocks]
        at = view.rows["at"]
        return "\n".join(blocks[at[n]][at[n + 1]:at[n + 2]].decode() for n in range(0, len(at), 3))

    expected = joined()
    assert "NaN" not in expected.replace("score NaN", "")  # c's NaN was written as null
    assert [json.loads(line)[0]["task_id"] for line in expected.splitlines()] == ["a", "b", "c", "d", "e"]
    real, encoded = viewer_data.embed_json, []

    def counting(value: Any, **kwargs: Any) -> str:
        encoded.append(value["task_id"])
        return real(value, **kwargs)

    monkeypatch.setattr(viewer_data, "embed_json", counting)
    assert joined(record_texts=texts) == expected
    assert encoded == ["b", "c", "d"]  # a and e were embedded from their lines, e escaped
    assert r"\u003cb\u003e\u0026\u003c/b\u003e" in expected
    encoded.clear()
    assert joined(record_texts=texts[:2]) == expected  # not the records' lines: all encoded
    assert encoded == ["a", "b", "c", "d", "e"]


def test_a_page_that_fails_midway_leaves_the_old_page_and_no_temporary_file(tmp_path):
    from pytest_agentbench.record.streamed import write_text_pieces

    target = tmp_path / "viewer.html"
    target.write_text("old page")

    def pieces() -> Iterator[str]:
        yield "<html>"
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        write_text_pieces(target, pieces(), tmp=tmp_path / ".viewer.html.tmp")
    assert target.read_text() == "old page"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["viewer.html"]


def test_streamed_json_is_the_indented_json_of_the_value():
    from pytest_agentbench.record.streamed import json_pieces

    value = {"tasks": [{"id": f"t{i}", "score": i / 7, "tags": ["a", "<b>"], "none": None} for i in range(3000)],
             "é": "ünïcode"}
    pieces = list(json_pieces(value))
    assert len(pieces) > 1  # written in parts, not one string
    assert "".join(pieces) == json.dumps(value, indent=2, sort_keys=True)


@pytest.mark.parametrize("rows", [[], [{}], [{"id": "t0", "n": [1, {"deep": "x\ny"}]}, {"é": "<ünï>"}, [1, 2]]])
def test_rows_streamed_one_at_a_time_give_the_json_of_the_whole_value(rows):
    from pytest_agentbench.record.streamed import json_pieces_with_rows

    data = {"a": 1, "z": {"nested": [1, {"b": None}], "empty": {}}, "statistics": {"per_task": [{"k": 0.5}]},
            "b": [], "s": "line\nbreak"}
    taken = []

    def one_by_one():
        for row in rows:
            taken.append(row)
            yield row

    text = "".join(json_pieces_with_rows(data, "tasks", one_by_one()))
    assert json.loads(text) == {**data, "tasks": rows}
    # compact (C-encoded), each row whole on a line of its own
    assert text.splitlines()[1:-1] == [json.dumps(r, separators=(",", ":"), sort_keys=True) + "," for r in rows][:-1] \
        + [json.dumps(r, separators=(",", ":"), sort_keys=True) for r in rows][-1:]
    assert "  " not in text
    assert taken == rows
    with pytest.raises(ValueError, match="'a' is in the data already"):
        list(json_pieces_with_rows(data, "a", iter(rows)))
