"""The views of the run record: terminal block, JUnit XML, pytest-html, screenshots, run folders,
and xdist (records written once, by the controller)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import only_run_folder, results, run_folders

QUICK_START_BLOCK = """\
==================================================
Evaluation Results
==================================================
Attempts:     5
Outcomes:     5
Errors:       0
Success rate: 100.0% (outcomes only)
Avg score:    1.000 (outcomes only)
Avg steps:    1.0 (all attempts)"""


def test_terminal_block_matches_the_quick_start(run):
    result = run("--bench=mock", "--bench-limit", "5")
    assert result.ret == 0
    assert QUICK_START_BLOCK in result.stdout.str()
    result.stdout.fnmatch_lines([
        "domain         attempts  outcomes  passed  success  avg score  errors",
        "chrome                2         2       2   100.0%      1.000       0",
        "clock                 2         2       2   100.0%      1.000       0",
        "file_explorer         1         1       1   100.0%      1.000       0",
        "Results saved to: benchmark_results/mock_mock_*",
    ])


def test_noop_agent_fails_every_task(run):
    result = run("--bench=mock", "--bench-limit", "5", "--bench-agent", "noop")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=5)
    result.stdout.fnmatch_lines(["Success rate: 0.0% (outcomes only)", "Avg score:    0.000 (outcomes only)"])


def test_run_folder_contents(run, pytester):
    run("--bench=mock", "--bench-limit", "3", "--bench-agent", "noop")
    folder = only_run_folder(pytester.path)
    rows = results(folder)
    assert [r["task_id"] for r in rows] == ["mock_chrome_001", "mock_clock_001", "mock_file_explorer_001"]
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["num_attempts"] == 3 and summary["success_rate"] == 0.0
    assert summary["statuses"] == {"failed": 3}
    trajectory = json.loads((folder / rows[0]["trajectory"]).read_text())
    assert trajectory["steps"][0]["action"] == {"type": "done"}
    assert trajectory["verdict"]["reason"] == "clicked=[], typed='', final=done"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert [t["task_id"] for t in manifest["suites"][0]["tasks"]] == [r["task_id"] for r in rows]


def test_run_names_never_collide(run, pytester):
    run("--bench=mock", "--bench-limit", "1", "--bench-run-name", "nightly")
    run("--bench=mock", "--bench-limit", "1", "--bench-run-name", "nightly")
    assert [p.name for p in run_folders(pytester.path)] == ["nightly", "nightly-2"]
    run("--bench=mock", "--bench-limit", "1", "--bench-results-dir", "elsewhere")
    assert len(list((pytester.path / "elsewhere").iterdir())) == 1


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("off", set()), ("only-on-failure", {"mock_clock_001"}), ("on", {"mock_chrome_001", "mock_clock_001"})],
)
def test_screenshot_modes(run, pytester, mode, expected):
    script = pytester.path / "s.json"
    script.write_text(json.dumps({"mock_clock_001": [{"type": "done"}], "*": [{"type": "click", "target_id": "4"}]}))
    run("--bench=mock", "--bench-limit", "2", "--bench-agent", "scripted", "--bench-agent-script", str(script),
        f"--bench-screenshots={mode}")
    folder = only_run_folder(pytester.path)
    with_shots = {r["task_id"] for r in results(folder) if r["screenshots"]}
    assert with_shots == expected
    for row in results(folder):
        for shot in row["screenshots"]:
            assert (folder / shot).read_bytes()[:4] == b"\x89PNG"
    if mode == "on":
        row = next(r for r in results(folder) if r["task_id"] == "mock_chrome_001")
        # One before each step plus the final state after the last action.
        assert [Path(s).name for s in row["screenshots"]] == ["step_000.png", "step_001.png", "final.png"]


def test_junit_xml_has_per_item_properties(run, pytester):
    run("--bench=mock", "--bench-limit", "3", "--bench-agent", "noop", "--junitxml=out.xml")
    tree = ET.parse(pytester.path / "out.xml")
    cases = tree.getroot().findall(".//testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        ("bench.mock.chrome", "mock_chrome_001"), ("bench.mock.clock", "mock_clock_001"),
        ("bench.mock.file_explorer", "mock_file_explorer_001"),
    ]
    props = {p.get("name"): p.get("value") for p in cases[0].findall("properties/property")}
    assert props["task_id"] == "mock_chrome_001" and props["domain"] == "chrome" and props["agent"] == "noop"
    assert props["score"] == "0.000" and props["steps"] == "0"
    assert props["verdict"] == "clicked=[], typed='', final=done"
    assert float(props["duration"]) >= 0
    assert cases[0].find("failure").get("message").startswith(
        "Failed: checker failed: form submitted: neither Submit clicked nor text typed and OK clicked\n"
        "score 0.000 after 0 steps")


class _Table(HTMLParser):
    """Reads pytest-html 4's embedded JSON blob (the report renders its table from it)."""

    def __init__(self) -> None:
        super().__init__()
        self.blob = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "div" and attrs.get("id") == "data-container":
            self.blob = json.loads(attrs["data-jsonblob"])


def test_pytest_html_gets_columns_and_relative_links(run, pytester):
    run("--bench=mock", "--bench-limit", "2", "--bench-agent", "noop", "--html=report/report.html")
    page = (pytester.path / "report" / "report.html").read_text()
    assert "<th" in page and "Score</th>" in page and "Steps</th>" in page and "Verdict</th>" in page
    parser = _Table()
    parser.feed(page)
    tests = parser.blob["tests"]
    rows = [row for test in tests.values() for row in test]
    assert len(rows) == 2
    html_row = rows[0]["resultsTableRow"]
    assert any('class="col-score">0.000<' in cell for cell in html_row)
    assert any("clicked=[], typed=&#x27;&#x27;, final=done" in cell or "clicked=[]" in cell for cell in html_row)
    links = [extra for row in rows for extra in row["extras"]]
    names = {extra["name"] for extra in links}
    assert any(name.endswith(".trajectory.json") for name in names) and "final.png" in names
    for extra in links:
        target = extra["content"]
        assert not target.startswith(("data:", "/")), "links must be relative, never embedded"
        assert (pytester.path / "report" / target).resolve().exists(), target
    assert len(page) < 200_000


def test_xdist_writes_each_record_once_and_matches_in_process(run_sub, pytester):
    script = pytester.path / "s.json"
    script.write_text(json.dumps({"mock_clock_002": [{"type": "done"}], "*": [{"type": "click", "target_id": "4"}]}))
    args = ("--bench=mock", "--bench-limit", "6", "--bench-agent", "scripted", "--bench-agent-script", str(script))
    xdist = run_sub(*args, "-n", "2", "--bench-run-name", "x", "--junitxml=x.xml")
    xdist.assert_outcomes(passed=5, failed=1)
    assert "Different tests were collected" not in xdist.stdout.str() + xdist.stderr.str()
    run_sub(*args, "--bench-run-name", "single")
    base = pytester.path / "benchmark_results"

    def table(name):
        return sorted((r["nodeid"], r["status"], r["score"], r["num_steps"]) for r in results(base / name))

    assert table("x") == table("single")
    assert len(table("x")) == 6
    workers = {r["worker"] for r in results(base / "x")}
    assert workers <= {"gw0", "gw1"} and workers
    props = [p.get("value") for p in ET.parse(pytester.path / "x.xml").getroot().iter("property")
             if p.get("name") == "task_id"]
    assert sorted(props) == sorted(r[0].rsplit("::", 1)[1] for r in table("x"))
    assert "Success rate: 83.3% (outcomes only)" in xdist.stdout.str()


def test_xdist_collect_only_and_lf(run_sub, pytester):
    result = run_sub("--bench=mock", "--bench-limit", "4", "-n", "2", "--bench-agent", "noop", "-k", "chrome")
    result.assert_outcomes(failed=2)
    again = run_sub("--bench=mock", "--bench-limit", "4", "-n", "2", "--lf")
    again.assert_outcomes(passed=2)
    assert re.search(r"2 passed", again.stdout.str())


BROKEN_RENDERER = """
from pytest_agentbench import Benchmark, Task, Observation, Verdict

def broken():
    raise OSError("display server gone")

class Broken(Benchmark):
    name = "broken"
    def list_tasks(self, limit=None):
        return [Task(task_id=f"t{i}", domain="d") for i in range(3)]
    def reset(self, task): return Observation(renderer=broken)
    def step(self, action): return Observation(renderer=broken)
    def evaluate(self, task, final_action): return Verdict(score=1.0, passed=True)

def pytest_agentbench_register_benchmarks(registry):
    registry.register("broken", lambda config: Broken())
"""


@pytest.mark.parametrize("xdist", [False, True])
def test_a_task_file_that_cannot_be_written_fails_the_run_loudly(run_sub, pytester, xdist):
    pytester.makeconftest(BROKEN_RENDERER)
    result = run_sub("--bench=broken", "--bench-screenshots=on", *(["-n", "2"] if xdist else []))
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "ERROR: 3 task file(s) could not be written in *; first: OSError: display server gone"])
    # The records and the other files are still there.
    folder = only_run_folder(pytester.path)
    assert len(results(folder)) == 3 and (folder / "summary.json").exists()
    assert len(list(folder.glob("tasks/broken/*.trajectory.json"))) == 3
