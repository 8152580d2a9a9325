"""The model validates input and names the bad field and value."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pytest_agentbench import Action, Observation, Task, Verdict


def test_unknown_action_type_names_field_and_value():
    with pytest.raises(ValidationError) as info:
        Action(type="clik", x=1, y=2)
    text = str(info.value)
    assert "type" in text and "'clik'" in text


def test_click_needs_a_target():
    with pytest.raises(ValidationError, match="a click action needs x and y or target_id, got x=None y=None"):
        Action(type="click")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"type": "type"}, "a type action needs text"), ({"type": "key"}, "a key action needs key"),
     ({"type": "hotkey"}, "a hotkey action needs keys"), ({"type": "drag", "x": 1, "y": 1}, "a drag action needs")],
)
def test_required_fields_per_action_type(kwargs, message):
    with pytest.raises(ValidationError, match=message):
        Action(**kwargs)


def test_negative_or_nan_coordinates_are_rejected_with_the_value():
    with pytest.raises(ValidationError, match=r"coordinate -5\.0 must be a finite number"):
        Action(type="click", x=-5, y=1)
    with pytest.raises(ValidationError, match="coordinate nan"):
        Action(type="click", x=float("nan"), y=1)


def test_score_out_of_range_names_the_value():
    with pytest.raises(ValidationError) as info:
        Verdict(score=1.5, passed=True)
    assert "score" in str(info.value) and "1.5" in str(info.value)


def test_task_id_rejects_brackets_and_separators():
    for bad in ("a[b]", "a::b", "a b", ""):
        with pytest.raises(ValidationError):
            Task(task_id=bad)


def test_unknown_fields_are_rejected():
    with pytest.raises(ValidationError, match="instrution"):
        Task(task_id="x", instrution="typo")


def test_coordinates_in_pixels_or_fractions():
    assert Action(type="click", x=0.5, y=0.25).to_pixels(1920, 1200) == (960, 300)
    assert Action(type="click", x=1, y=1).to_pixels(1920, 1200) == (1, 1)  # integers are pixels
    assert Action(type="click", x=1, y=1, unit="fraction").to_pixels(1920, 1200) == (1920, 1200)
    assert Action(type="click", x=0.5, y=0.5, unit="px").to_pixels(1920, 1200) == (0, 0)
    assert Action(type="click", x=640, y=400).to_pixels(1920, 1200) == (640, 400)
    assert Action(type="click", target_id="4").to_pixels(10, 10) is None


def test_reference_field_name_target_node_id_is_accepted():
    assert Action(type="click", target_node_id="4").target_id == "4"


def test_all_action_types_exist():
    for kind in ("double_click", "right_click"):
        Action(type=kind, x=1, y=1)
    Action(type="scroll", scroll_direction="down", scroll_amount=3)
    Action(type="wait", seconds=1)
    for kind in ("done", "fail", "answer"):
        assert Action(type=kind).is_terminal
    assert Action(type="hotkey", keys=["ctrl", "s"]).describe() == "hotkey 'ctrl+s'"


def test_observation_takes_png_bytes_or_a_lazy_renderer():
    calls = []

    def render() -> bytes:
        calls.append(1)
        return b"png"

    lazy = Observation(renderer=render, window_title="w")
    assert calls == []
    assert lazy.screenshot == b"png" and lazy.screenshot == b"png" and calls == [1]
    assert Observation(screenshot=b"x").screenshot == b"x"
    with pytest.raises(TypeError, match="screenshot must be PNG bytes, got str"):
        Observation(screenshot="not bytes")
    assert "screenshot" not in Observation(screenshot=b"x").model_dump()
