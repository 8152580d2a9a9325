"""The MockMed drivers: the headless one (httpx + a block layout + pillow) against a real server.

The last test compares it with the Chromium driver, which skips without playwright or Chromium
(fails under CI instead, like the other browser tests).
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import browser_unavailable
from PIL import Image

from pytest_agentbench.benches.mockmed.app import CONDITIONS, MockMedServer, serve
from pytest_agentbench.benches.mockmed.driver import Driver, HeadlessDriver, center, find_nodes, iter_nodes
from pytest_agentbench.model import Action, Observation

NOTE = "Knee pain, swelling since Monday; ice and rest advised for a week."
ROLES = {"document", "heading", "text", "link", "button", "textbox", "radio", "table", "row", "cell", "status",
         "alert", "form"}


@pytest.fixture
def app(tmp_path: Path) -> Iterator[MockMedServer]:
    with serve(tmp_path / "mockmed.sqlite3") as server:
        yield server


@pytest.fixture
def driver(app: MockMedServer) -> Iterator[HeadlessDriver]:
    with HeadlessDriver(app.url) as headless:
        yield headless


def test_the_headless_driver_is_a_driver(driver: HeadlessDriver) -> None:
    # The benchmark is typed against Driver; mypy checks the signatures, this checks the members.
    assert isinstance(driver, Driver)


def click(target: str) -> Action:
    return Action(type="click", target_id=target)


def typed(text: str) -> Action:
    return Action(type="type", text=text)


def node(obs: Observation, **match: Any) -> dict[str, Any]:
    found = find_nodes(obs.accessibility_tree, **match)
    assert found, f"no node {match} in {[(n['role'], n['name']) for n, _ in iter_nodes(obs.accessibility_tree)]}"
    return found[0]


def test_full_flow_by_element_id(driver: HeadlessDriver, app: MockMedServer) -> None:
    obs = driver.observe()
    assert obs.url.endswith("/login") and obs.window_title == "Sign in · MockMed" and obs.app_name == "MockMed"
    assert obs.raw["focused"] == "username"  # the field has autofocus, as in a browser
    steps = [click("username"), typed("nurse.demo"), click("password"), typed("mockmed-demo-pass"),
             click("signin"), click("open-p1"), click("new-encounter"), click("type-triage"), click("note"),
             typed(NOTE), click("save-encounter")]
    urls = []
    for action in steps:
        obs = driver.act(action)
        urls.append(obs.url.split("/", 3)[3])
    assert urls == ["login"] * 4 + ["tasks", "patient/p1"] + ["patient/p1/encounters/new"] * 4 + ["patient/p1"]
    assert node(obs, role="status")["name"] == f"Encounter saved — {NOTE[:40]}"
    assert node(obs, role="status")["id"] == "saved-banner"
    assert node(obs, role="text", name=f"Triage — {NOTE}")
    assert [(e["patient_id"], e["type"], e["note"]) for e in app.store.encounters()] == [("p1", "Triage", NOTE)]
    assert "Encounter saved" in driver.current_html and driver.url == obs.url


def test_full_flow_by_coordinates(driver: HeadlessDriver, app: MockMedServer) -> None:
    def click_on(role: str, name: str, *, fraction: bool = False) -> Observation:
        x, y = center(node(driver.observe(), role=role, name=name))
        if fraction:
            return driver.act(Action(type="click", x=x / 1280, y=y / 800, unit="fraction"))
        return driver.act(Action(type="click", x=x, y=y))

    click_on("textbox", "Username")
    driver.act(typed("nurse.demo"))
    click_on("textbox", "Password", fraction=True)
    driver.act(typed("pw"))
    click_on("button", "Sign In")
    click_on("button", "Open")
    click_on("button", "New Encounter")
    obs = click_on("radio", "Consult")
    assert node(obs, role="radio", name="Consult")["checked"] is True
    obs = click_on("radio", "Triage")
    assert (node(obs, role="radio", name="Triage")["checked"], node(obs, role="radio", name="Consult")["checked"]) \
        == (True, False)
    click_on("text", "Note")  # clicking a field's label focuses the field
    assert driver.observe().raw["focused"] == "note"
    driver.act(typed(NOTE))
    obs = click_on("button", "Save Encounter")
    assert obs.url.endswith("/patient/p1")
    assert node(obs, role="status")["name"].startswith("Encounter saved — ")
    assert [(e["patient_id"], e["type"], e["note"]) for e in app.store.encounters()] == [("p1", "Triage", NOTE)]


def test_clicking_empty_space_blurs_and_changes_nothing(driver: HeadlessDriver) -> None:
    obs = driver.act(Action(type="click", x=40, y=400))
    assert obs.raw["focused"] is None and "nothing" in obs.raw["effect"]
    assert obs.url.endswith("/login")


def test_open_button_in_jane_samples_row(driver: HeadlessDriver, app: MockMedServer) -> None:
    driver.act(click("signin"))
    tree = driver.observe().accessibility_tree
    table = node(driver.observe(), role="table")
    assert table["name"] == "Referral tasks"
    rows = [n for n in table["children"] if n["role"] == "row"]
    assert [r["name"] for r in rows] == [
        "Patient Reason Priority Action",
        "Jane Sample Knee pain referral High Open",
        "Alex Testcase Cardiology follow-up Medium Open",
        "Sam Specimen Dermatology consult Low Open",
    ]
    jane = next(r for r in rows if "Jane Sample" in r["name"])
    buttons = find_nodes(jane, role="button", name="Open")
    assert [b["id"] for b in buttons] == ["open-p1"]
    # The button sits inside its row's box: the row is its ancestor on screen too.
    x0, y0, x1, y1 = buttons[0]["bbox"]
    assert jane["bbox"][0] <= x0 < x1 <= jane["bbox"][2] and jane["bbox"][1] <= y0 < y1 <= jane["bbox"][3]
    ancestors = next(a for n, a in iter_nodes(tree) if n["id"] == "open-p1")
    assert [a["role"] for a in ancestors] == ["document", "table", "row", "cell"]
    # "The first button named Open" is the same one here (the by-position script's choice).
    assert find_nodes(tree, role="button", name="Open")[0]["id"] == "open-p1"
    obs = driver.act(click(buttons[0]["id"]))
    assert node(obs, role="heading", name_contains="MRN P1")["name"] == "Jane Sample — MRN P1 — DOB 1984-03-12"


def test_tree_and_screenshot_shapes(driver: HeadlessDriver) -> None:
    driver.act(click("signin"))
    obs = driver.act(click("open-p3"))
    obs = driver.act(click("new-encounter"))
    tree = obs.accessibility_tree
    assert tree["role"] == "document" and tree["id"] == "document" and tree["name"] == "New Encounter · MockMed"
    ids = []
    for item, _ in iter_nodes(tree):
        assert set(item) - {"value", "checked"} == {"role", "name", "id", "bbox", "children"}
        assert item["role"] in ROLES
        assert isinstance(item["name"], str) and isinstance(item["id"], str) and item["id"]
        x0, y0, x1, y1 = item["bbox"]
        assert all(isinstance(v, int) for v in item["bbox"])
        assert 0 <= x0 <= x1 <= 1280 and 0 <= y0 <= y1, item
        assert ("value" in item) == (item["role"] == "textbox")
        assert ("checked" in item) == (item["role"] == "radio")
        ids.append(item["id"])
    assert len(ids) == len(set(ids))
    form = node(obs, role="form")
    assert form["name"] == "New encounter"
    assert [(n["role"], n["name"], n["id"]) for n in form["children"]] == [
        ("text", "Encounter Type", form["children"][0]["id"]),
        ("radio", "Triage", "type-triage"),
        ("radio", "Consult", "type-consult"),
        ("text", "Note", form["children"][3]["id"]),
        ("textbox", "Note", "note"),
        ("link", "Cancel", form["children"][5]["id"]),
        ("button", "Save Encounter", "save-encounter"),
    ]
    assert form["children"][0]["id"] == "text:" + form["id"].split(":")[1] + ".0"
    # The same page gives the same generated ids again.
    assert [n["id"] for n, _ in iter_nodes(driver.observe().accessibility_tree)] == ids
    assert obs.viewport == (1280, 800)
    assert obs.has_screenshot
    image = Image.open(io.BytesIO(obs.screenshot))
    assert image.size == (1280, 800) and image.format == "PNG"


def test_screenshot_is_lazy_and_a_snapshot(driver: HeadlessDriver, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_agentbench.benches.mockmed.driver import headless as module  # where the driver paints

    calls = []
    real = module.paint
    monkeypatch.setattr(module, "paint", lambda *a, **k: calls.append(1) or real(*a, **k))
    before = driver.act(click("username"))
    after = driver.act(typed("a long user name that shows up in the field"))
    assert calls == []
    box = node(before, role="textbox", name="Username")["bbox"]
    def crop(obs):
        return Image.open(io.BytesIO(obs.screenshot)).convert("RGB").crop((box[0] + 4, box[1] + 4,
                                                                           box[2] - 4, box[3] - 4))
    empty, filled = crop(before), crop(after)
    assert len(calls) == 2
    # The earlier observation still shows the empty field; the later one shows dark text in it.
    assert len(empty.getcolors(1 << 20)) <= 3
    assert len(filled.getcolors(1 << 20)) > 10


def test_theme_paints_another_palette(tmp_path: Path) -> None:
    colours = {}
    for condition in CONDITIONS:
        with serve(tmp_path / f"{condition}.sqlite3", condition) as server, HeadlessDriver(server.url) as headless:
            obs = headless.act(click("signin"))
            image = Image.open(io.BytesIO(obs.screenshot)).convert("RGB")
            if os.environ.get("MOCKMED_SAVE_SCREENSHOTS"):
                image.save(f"/tmp/mockmed_headless_{condition}.png")
            button = find_nodes(obs.accessibility_tree, role="button")[0]
            colours[condition] = (image.getpixel((5, 400)), image.getpixel((5, 5)),
                                  image.getpixel((button["bbox"][0] + 3, button["bbox"][1] + 3)))
            # Readable text: the header's product name is drawn in a colour other than the bar's.
            brand = node(obs, role="link", name="MockMed")["bbox"]
            assert len(image.crop((brand[0] + 36, brand[1], brand[2], brand[3])).getcolors(1 << 20)) > 5
    assert colours["clean"][0] == (0xF3, 0xF5, 0xF8) and colours["clean"][1] == (0x0F, 0x35, 0x57)
    assert colours["theme"][0] == (0x16, 0x1A, 0x22) and colours["theme"][1] == (0x0C, 0x0F, 0x14)
    assert colours["rename"] == colours["clean"]


def test_rename_changes_labels_not_ids(tmp_path: Path) -> None:
    seen = {}
    for condition in ("clean", "rename"):
        with serve(tmp_path / f"{condition}.sqlite3", condition) as server, HeadlessDriver(server.url) as headless:
            tasks = headless.act(click("signin"))
            form = headless.act(click("open-p1")) and headless.act(click("new-encounter"))
            seen[condition] = (
                [(n["role"], n["name"]) for n in find_nodes(tasks.accessibility_tree, role="button")],
                [(n["role"], n["name"]) for n in find_nodes(form.accessibility_tree, role="button")],
                [n["id"] for n, _ in iter_nodes(tasks.accessibility_tree)],
                [n["id"] for n, _ in iter_nodes(form.accessibility_tree)],
            )
    assert seen["rename"][0] == [("button", "View")] * 3
    assert seen["rename"][1] == [("button", "Submit Encounter")]
    assert seen["clean"][0] == [("button", "Open")] * 3 and seen["clean"][1] == [("button", "Save Encounter")]
    assert seen["rename"][2:] == seen["clean"][2:]


def test_unknown_target_raises_lookup_error(driver: HeadlessDriver) -> None:
    with pytest.raises(LookupError, match=r"no element with id 'open-p9' on http://127\.0\.0\.1:\d+/login"):
        driver.act(click("open-p9"))
    with pytest.raises(LookupError, match="nowhere"):
        driver.act(Action(type="type", text="x", target_id="nowhere"))


def test_keys(driver: HeadlessDriver, app: MockMedServer) -> None:
    driver.act(typed("nurse.demo"))  # autofocus: typing goes to Username
    obs = driver.act(Action(type="key", key="Tab"))
    assert obs.raw["focused"] == "password"
    driver.act(typed("secret"))
    assert node(driver.observe(), role="textbox", name="Password")["value"] == "••••••"
    driver.act(Action(type="key", key="Backspace"))
    assert node(driver.observe(), role="textbox", name="Password")["value"] == "•••••"
    obs = driver.act(Action(type="key", key="Enter"))  # Enter in a text input submits its form
    assert obs.url.endswith("/tasks") and "Signed in as nurse.demo" in driver.current_html
    driver.act(click("open-p2"))
    driver.act(click("new-encounter"))
    driver.act(click("type-consult"))
    driver.act(click("note"))
    driver.act(typed("first line"))
    obs = driver.act(Action(type="key", key="Enter"))  # Enter in a textarea is a new line
    assert obs.url.endswith("/encounters/new")
    driver.act(typed("second"))
    driver.act(Action(type="hotkey", keys=["ctrl", "a"]))
    driver.act(typed("replaced"))
    driver.act(typed(" note"))
    assert node(driver.observe(), role="textbox", name="Note")["value"] == "replaced note"
    driver.act(Action(type="key", key="Enter"))
    driver.act(typed("two"))
    for kind in (Action(type="wait", seconds=5), Action(type="scroll", scroll_direction="down"),
                 Action(type="done")):
        assert driver.act(kind).url.endswith("/encounters/new")
    obs = driver.act(click("save-encounter"))
    assert [(e["patient_id"], e["type"], e["note"]) for e in app.store.encounters()] == [
        ("p2", "Consult", "replaced note\ntwo")]
    assert node(obs, role="status")["name"] == "Encounter saved — replaced note two"


def test_typing_needs_a_focused_field(driver: HeadlessDriver) -> None:
    driver.act(Action(type="click", x=40, y=400))
    obs = driver.act(typed("lost"))
    assert "no text field focused" in obs.raw["effect"]
    assert all(n["value"] == "" for n in find_nodes(obs.accessibility_tree, role="textbox"))
    obs = driver.act(Action(type="type", text="nurse", target_id="username"))
    assert node(obs, role="textbox", name="Username")["value"] == "nurse"


def test_form_errors_show_as_an_alert(driver: HeadlessDriver, app: MockMedServer) -> None:
    for action in (click("signin"), click("open-p1"), click("new-encounter"), click("note"), typed("no type"),
                   click("save-encounter")):
        obs = driver.act(action)
    assert obs.raw["http_status"] == 422
    assert node(obs, role="alert")["name"] == "Choose an encounter type: Triage or Consult."
    assert node(obs, role="textbox", name="Note")["value"] == "no type"
    assert app.store.encounters() == []


# ----------------------------------------------------------------------------------------------------
# The Chromium driver gives the same tree.


def test_playwright_driver_matches_the_headless_tree(tmp_path: Path) -> None:
    try:
        import playwright  # noqa: F401
    except ImportError:
        browser_unavailable("the Chromium driver test needs the playwright package (pip install playwright)")
    if not Path("/usr/bin/chromium").exists():
        browser_unavailable("the Chromium driver test needs Chromium at /usr/bin/chromium (apt-get install chromium)")
    from pytest_agentbench.benches.mockmed.driver import PlaywrightDriver

    steps = [click("username"), typed("nurse.demo"), click("signin"), click("open-p1"), click("new-encounter"),
             click("type-triage"), click("note"), typed(NOTE), click("save-encounter")]
    with serve(tmp_path / "a.sqlite3", "theme") as one, serve(tmp_path / "b.sqlite3", "theme") as two, \
            HeadlessDriver(one.url) as headless, PlaywrightDriver(two.url) as chromium:
        assert isinstance(chromium, Driver)
        for action in [None, *steps]:
            mine = headless.observe() if action is None else headless.act(action)
            real = chromium.observe() if action is None else chromium.act(action)
            # Each server stamps its own save time; everything else must match.
            def flat(obs):
                return [(n["role"], re.sub(r"^Saved \S+ \S+ UTC$", "Saved <time>", n["name"]), n["id"],
                         n.get("value"), n.get("checked")) for n, _ in iter_nodes(obs.accessibility_tree)]
            assert flat(mine) == flat(real), action
            assert mine.raw["focused"] == real.raw["focused"]
            boxes = {n["id"]: n["bbox"] for n, _ in iter_nodes(real.accessibility_tree)}
            for item, _ in iter_nodes(mine.accessibility_tree):
                if item["role"] in ("button", "textbox", "radio", "link", "status", "row"):
                    assert max(abs(a - b) for a, b in zip(item["bbox"], boxes[item["id"]], strict=True)) <= 12, item
        assert Image.open(io.BytesIO(real.screenshot)).size == (1280, 800)
        assert chromium.console_errors == []
        assert [(e["patient_id"], e["type"]) for e in two.store.encounters()] == [("p1", "Triage")]


