"""``--bench-redact-region`` / ``--bench-redact-text``: what the agent sees is blanked, what it did records it."""

from __future__ import annotations

import base64
import io
import json

import pytest
from conftest import only_run_folder, results
from fake_chat import FakeChatAPI, ok

from pytest_agentbench.agents.redact import REPLACEMENT, Redactor, parse_pattern, parse_region
from pytest_agentbench.benches.mock.bench import ELEMENTS, SCREEN, MockBenchmark


def _pixel(png: bytes, x: int, y: int) -> tuple[int, ...]:
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        return image.convert("RGB").getpixel((x, y))


def _mock_observation():
    bench = MockBenchmark()
    (task,) = bench.list_tasks(limit=1)
    return bench.reset(task)


SUBMIT = next(e for e in ELEMENTS if e.name == "Submit")


def test_a_region_is_filled_black_and_the_rest_is_untouched():
    observation = _mock_observation()
    left, top, right, bottom = SUBMIT.box
    redacted, report = Redactor([parse_region(f"{left},{top},{right - left},{bottom - top}")], []).apply(observation)
    centre = ((left + right) // 2, (top + bottom) // 2)
    assert _pixel(observation.screenshot, *centre) != (0, 0, 0)
    assert _pixel(redacted.screenshot, *centre) == (0, 0, 0)
    assert _pixel(redacted.screenshot, right + 5, bottom + 5) == _pixel(observation.screenshot, right + 5, bottom + 5)
    assert report == {"regions": [[left, top, right, bottom]], "matched_boxes": [], "text_replacements": 0}
    assert redacted.accessibility_tree == observation.accessibility_tree


def test_a_text_match_is_replaced_in_the_tree_and_its_box_blanked():
    observation = _mock_observation()
    redacted, report = Redactor([], [parse_pattern("subm[a-z]+")]).apply(observation)
    names = [c["name"] for c in redacted.accessibility_tree["children"]]
    assert REPLACEMENT in names and "Submit" not in names
    assert "Submit" in [c["name"] for c in observation.accessibility_tree["children"]]  # the original is kept
    assert report["matched_boxes"] == [list(SUBMIT.box)] and report["text_replacements"] == 1
    left, top, right, bottom = SUBMIT.box
    assert _pixel(redacted.screenshot, (left + right) // 2, (top + bottom) // 2) == (0, 0, 0)


@pytest.mark.parametrize(("parse", "text", "match"), [
    (parse_region, "0,0,10", "X,Y,W,H in screen pixels"),
    (parse_region, "0,0,0,5", "has no area"),
    (parse_region, "-1,0,5,5", "X,Y,W,H in screen pixels"),
    (parse_pattern, "(", "is not a regular expression"),
    (parse_pattern, " ", "non-empty regular expression"),
])
def test_bad_rules_name_the_fix(parse, text, match):
    with pytest.raises(ValueError, match=match):
        parse(text)


def test_bad_rules_are_usage_errors_at_configure_time(run):
    result = run("--bench=mock", "--bench-agent", "mock", "--bench-redact-region", "0,0,10")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--bench-redact-region must be X,Y,W,H" in result.stderr.str()


def test_the_agent_sees_the_redacted_tree_and_the_record_says_so(run, pytester):
    """The mock agent looks for "Submit" in the tree: blanked, it cannot find it, so the item fails,
    and the step's action records what was blanked."""
    result = run("--bench=mock", "--bench-limit", "1", "--bench-agent", "mock", "--bench-redact-text", "submit")
    result.assert_outcomes(failed=1)
    folder = only_run_folder(pytester.path)
    trajectory = json.loads(next((folder / "tasks" / "mock").glob("*.trajectory.json")).read_text())
    (step,) = trajectory["steps"]
    assert step["action"]["type"] == "fail" and step["action"]["reason"] == "no Submit button on screen"
    assert step["action"]["raw"]["redaction"]["text_replacements"] == 1


def test_a_model_agent_gets_the_blanked_screenshot(run, pytester):
    """api-vlm against the fake endpoint: the Submit region arrives black; the record keeps the original."""
    left, top, right, bottom = SUBMIT.box
    seen: list[tuple[int, ...]] = []

    def script(request, headers):
        from PIL import Image

        if any(m["role"] == "assistant" for m in request["messages"]):
            return ok('{"type": "done"}')
        url = request["messages"][-1]["content"][-1]["image_url"]["url"]
        with Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as image:
            width, height = image.size
            x, y = (left + right) / 2 * width / SCREEN[0], (top + bottom) / 2 * height / SCREEN[1]
            seen.append(image.convert("RGB").getpixel((round(x), round(y))))
        return ok(f'{{"type": "click", "x": {round(x)}, "y": {round(y)}}}')

    with FakeChatAPI(script) as fake:
        result = run("--bench=mock", "--bench-limit", "1", "--bench-agent", "api-vlm", "--bench-agent-url", fake.url,
                     "--bench-agent-model", "m", "--bench-agent-dialect", "json", "--bench-redact-region",
                     f"{left},{top},{right - left},{bottom - top}", "--bench-screenshots", "on")
    result.assert_outcomes(passed=1)  # the click still lands: coordinates are the screen's
    assert seen == [(0, 0, 0)]
    folder = only_run_folder(pytester.path)
    assert results(folder)[0]["success"]
    trajectory = json.loads(next((folder / "tasks" / "mock").glob("*.trajectory.json")).read_text())
    assert trajectory["steps"][0]["action"]["raw"]["redaction"]["regions"] == [[left, top, right, bottom]]
