"""MockMed, the web app: a real server on loopback and a real SQLite file per test.

One test drives the app in headless Chromium like a person (Debian's ``/usr/bin/chromium`` through
playwright, never a downloaded browser). Without either it skips, except under CI (``CI`` set), where
it fails: CI installs both.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest

from pytest_agentbench.benches.mockmed.app import CONDITIONS, MockMedServer, serve

NOTE = "Knee pain, swelling since Monday; ice and rest advised for a week."


@pytest.fixture
def app(tmp_path: Path) -> Iterator[MockMedServer]:
    with serve(tmp_path / "mockmed.sqlite3") as server:
        yield server


def _client(server: MockMedServer) -> httpx.Client:
    return httpx.Client(base_url=server.url, follow_redirects=True, timeout=10)


def _sign_in(client: httpx.Client) -> httpx.Response:
    return client.post("/login", data={"username": "nurse.demo", "password": "mockmed-demo-pass"})


def _ids(markup: str) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', markup))


def _rows(db: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(db) as connection:
        connection.row_factory = sqlite3.Row
        return [dict(r) for r in connection.execute("SELECT * FROM encounters ORDER BY id")]


def test_sign_in_open_save_writes_exactly_one_encounter(app: MockMedServer) -> None:
    with _client(app) as client:
        login = client.get("/")
        assert login.url.path == "/login"
        assert "<h1>Sign in to MockMed</h1>" in login.text
        assert 'id="signin"' in login.text and ">Sign In</button>" in login.text
        assert '<label for="username">Username</label>' in login.text
        assert '<label for="password">Password</label>' in login.text

        tasks = _sign_in(client)
        assert tasks.url.path == "/tasks"
        assert "<h1>Referral Tasks</h1>" in tasks.text
        assert "Signed in as nurse.demo" in tasks.text
        assert re.findall(r"<th>(\w+)</th>", tasks.text) == ["Patient", "Reason", "Priority", "Action"]
        body = tasks.text.split("<tbody>")[1]
        assert body.count("<tr>") == 3
        for pid, name in (("p1", "Jane Sample"), ("p2", "Alex Testcase"), ("p3", "Sam Specimen")):
            assert re.search(rf'{name}.*?id="open-{pid}" role="button"[^>]*>Open</a>', body)

        patient = client.get("/patient/p1")
        assert "Jane Sample — MRN P1 — DOB 1984-03-12" in patient.text
        assert 'role="status"' not in patient.text
        assert 'id="new-encounter"' in patient.text and "No encounters yet." in patient.text

        form = client.get("/patient/p1/encounters/new")
        assert "<h1>New Encounter</h1>" in form.text and "Encounter Type" in form.text
        assert {"type-triage", "type-consult", "note", "save-encounter"} <= _ids(form.text)
        assert ">Save Encounter</button>" in form.text

        saved = client.post("/patient/p1/encounters", data={"type": "Triage", "note": NOTE})
        assert saved.url.path == "/patient/p1"
        banner = re.search(r'<div role="status"[^>]*>([^<]*)</div>', saved.text)
        assert banner and banner.group(1) == f"Encounter saved — {NOTE[:40]}"
        assert f"Triage — {NOTE}" in saved.text
        # The banner is shown once, like a real flash message.
        assert 'role="status"' not in client.get("/patient/p1").text

    rows = _rows(app.db_path)
    assert len(rows) == 1
    row = rows[0]
    assert (row["patient_id"], row["type"], row["note"], row["extra"]) == ("p1", "Triage", NOTE, None)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", row["created_at"])
    assert app.store.encounters() == [{k: row[k] for k in ("id", "patient_id", "type", "note", "created_at")}]


def test_pages_need_a_session(app: MockMedServer) -> None:
    with _client(app) as client:
        for path in ("/tasks", "/patient/p1", "/patient/p1/encounters/new"):
            assert client.get(path).url.path == "/login", path
        response = client.post("/patient/p1/encounters", data={"type": "Triage", "note": "x"})
        assert response.url.path == "/login"
        _sign_in(client)
        assert client.get("/tasks").url.path == "/tasks"
        assert client.get("/logout").url.path == "/login"
        assert client.get("/tasks").url.path == "/login"
    assert _rows(app.db_path) == []


def test_an_incomplete_form_is_refused_and_writes_nothing(app: MockMedServer) -> None:
    with _client(app) as client:
        _sign_in(client)
        no_type = client.post("/patient/p2/encounters", data={"note": "kept"})
        assert no_type.status_code == 422
        assert 'role="alert"' in no_type.text and "Choose an encounter type" in no_type.text
        assert ">kept</textarea>" in no_type.text
        no_note = client.post("/patient/p2/encounters", data={"type": "Consult", "note": "   "})
        assert no_note.status_code == 422 and "Write a note" in no_note.text
        assert 'id="type-consult" name="type" value="Consult" checked' in no_note.text
        bad_type = client.post("/patient/p2/encounters", data={"type": "Surgery", "note": "x"})
        assert bad_type.status_code == 422
        assert client.get("/patient/p9").status_code == 404
        assert client.post("/patient/p9/encounters", data={"type": "Triage", "note": "x"}).status_code == 404
    assert _rows(app.db_path) == []


def test_user_text_is_escaped(app: MockMedServer) -> None:
    evil = "<script>alert(1)</script>"
    with _client(app) as client:
        client.post("/login", data={"username": evil, "password": ""})
        page = client.post("/patient/p1/encounters", data={"type": "Consult", "note": evil}).text
    assert "<script>" not in page
    assert "Consult — &lt;script&gt;alert(1)&lt;/script&gt;" in page


@pytest.mark.parametrize("condition", CONDITIONS)
def test_conditions_change_words_and_palette_not_ids(tmp_path: Path, condition: str) -> None:
    with serve(tmp_path / "db.sqlite3") as clean, serve(tmp_path / f"{condition}.sqlite3", condition) as other:
        pages = {}
        for server in (clean, other):
            with _client(server) as client:
                _sign_in(client)
                pages[server] = [client.get(p).text for p in ("/tasks", "/patient/p1", "/patient/p1/encounters/new")]
    assert other.condition == condition
    for before, after in zip(pages[clean], pages[other], strict=True):
        assert _ids(before) == _ids(after)
    tasks, _, form = pages[other]
    if condition == "rename":
        assert re.findall(r'id="open-p\d" role="button"[^>]*>(\w+)<', tasks) == ["View"] * 3
        assert ">Submit Encounter</button>" in form and "Save Encounter" not in form
        assert ">Open<" not in tasks
    else:
        assert re.findall(r'id="open-p\d" role="button"[^>]*>(\w+)<', tasks) == ["Open"] * 3
        assert ">Save Encounter</button>" in form
    themed = '<body class="drift-theme">' in tasks
    assert themed == (condition == "theme")
    # Same markup apart from the words and the body class: the layout does not move.
    def strip(html: str) -> str:
        return re.sub(r">(View|Open|Submit Encounter|Save Encounter)<", "><", html).replace(' class="drift-theme"', "")
    assert [strip(p) for p in pages[clean]] == [strip(p) for p in pages[other]]


def test_unknown_condition_names_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"unknown MockMed condition 'dark'; valid conditions: clean, theme, rename"):
        serve(tmp_path / "db.sqlite3", condition="dark")
    assert not (tmp_path / "db.sqlite3").exists()


def test_stop_is_idempotent(tmp_path: Path) -> None:
    server = serve(tmp_path / "db.sqlite3")
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", server.url)
    server.stop()
    server.stop()
    with pytest.raises(httpx.TransportError):
        httpx.get(server.url, timeout=2)


def test_serve_command_starts_and_stops(tmp_path: Path) -> None:
    db = tmp_path / "records.sqlite3"
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest_agentbench.benches.mockmed", "serve", "--port", "0", "--condition", "rename",
         "--db", str(db)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
        assert match, f"no URL in {line!r}"
        assert "rename" in line
        with httpx.Client(base_url=match.group(1), follow_redirects=True, timeout=10) as client:
            assert "Sign in to MockMed" in client.get("/").text
            assert ">View</a>" in _sign_in(client).text
        assert db.exists()
    finally:
        process.terminate()
        out, err = process.communicate(timeout=10)
    assert process.returncode == 0, err
    assert "MockMed stopped." in out


def test_serve_command_deletes_the_temporary_records_it_made() -> None:
    process = subprocess.Popen([sys.executable, "-m", "pytest_agentbench.benches.mockmed", "serve", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        process.stdout.readline()
        records = Path(process.stdout.readline().split("records: ", 1)[1].strip())
        assert records.parent.is_dir()
    finally:
        process.terminate()
        out, err = process.communicate(timeout=10)
    assert process.returncode == 0, err
    assert not records.parent.exists() and "temporary records were deleted" in out


def test_serve_command_rejects_an_unknown_condition() -> None:
    result = subprocess.run([sys.executable, "-m", "pytest_agentbench.benches.mockmed", "serve", "--condition", "x"],
                            capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 2
    assert "invalid choice: 'x'" in result.stderr and "'clean', 'theme', 'rename'" in result.stderr


# ----------------------------------------------------------------------------------------------------
# Headless Chromium.




def _open_page(browser: Any) -> tuple[Any, list[str]]:
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.set_default_timeout(10_000)
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("requestfailed", lambda request: errors.append(f"request failed: {request.url}"))
    return page, errors


def test_a_person_completes_the_flow_in_chromium(browser: Any, app: MockMedServer, tmp_path: Path) -> None:
    page, errors = _open_page(browser)
    try:
        page.goto(app.url)
        assert page.get_by_role("heading", name="Sign in to MockMed").is_visible()
        page.get_by_label("Username").click()
        page.keyboard.type("nurse.demo")
        page.get_by_label("Password").click()
        page.keyboard.type("mockmed-demo-pass")
        page.get_by_role("button", name="Sign In").click()
        page.wait_for_url("**/tasks")
        assert page.get_by_role("heading", name="Referral Tasks").is_visible()
        assert page.get_by_role("row").count() == 4
        row = page.get_by_role("row").filter(has_text="Jane Sample")
        open_button = row.get_by_role("button", name="Open")
        assert open_button.get_attribute("id") == "open-p1"
        open_button.click()
        page.wait_for_url("**/patient/p1")
        assert page.get_by_role("heading", name=re.compile("Jane Sample — MRN P1 — DOB")).is_visible()
        page.get_by_role("button", name="New Encounter").click()
        page.wait_for_url("**/encounters/new")
        triage = page.get_by_role("radio", name="Triage")
        triage.click()
        assert triage.is_checked()
        # The segment shows its state: the checked one takes the primary colour.
        segment = page.locator("label.seg").first
        assert segment.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(31, 99, 214)"
        page.get_by_label("Note").click()
        page.keyboard.type(NOTE)
        page.get_by_role("button", name="Save Encounter").click()
        page.wait_for_url("**/patient/p1")
        status = page.get_by_role("status")
        assert status.inner_text() == f"Encounter saved — {NOTE[:40]}"
        assert page.get_by_text(f"Triage — {NOTE}").is_visible()
        page.screenshot(path=str(tmp_path / "saved.png"))
    finally:
        page.close()
    assert errors == []
    rows = _rows(app.db_path)
    assert [(r["patient_id"], r["type"], r["note"]) for r in rows] == [("p1", "Triage", NOTE)]


@pytest.mark.parametrize("condition", ["theme", "rename"])
def test_conditions_in_chromium(browser: Any, tmp_path: Path, condition: str) -> None:
    with serve(tmp_path / "db.sqlite3", condition) as server:
        page, errors = _open_page(browser)
        try:
            page.goto(server.url)
            background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
            font = page.evaluate("() => getComputedStyle(document.body).fontFamily")
            page.get_by_label("Username").fill("nurse.demo")
            page.get_by_role("button", name="Sign In").click()
            page.wait_for_url("**/tasks")
            names = page.locator("[id^=open-]").all_inner_texts()
            boxes = [page.locator(f"#open-p{i}").bounding_box() for i in (1, 2, 3)]
        finally:
            page.close()
    assert errors == []
    if condition == "theme":
        assert background == "rgb(22, 26, 34)" and "serif" in font and "sans-serif" not in font
        assert names == ["Open"] * 3
    else:
        assert background == "rgb(243, 245, 248)" and "sans-serif" in font
        assert names == ["View"] * 3
    assert all(box is not None and box["height"] > 30 for box in boxes)


def _watch_connections(monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[sqlite3.Connection]]:
    """Every SQL statement the store's connections run, in order (sqlite3's trace callback), and
    the connections themselves."""
    from pytest_agentbench.benches.mockmed import store

    statements: list[str] = []
    opened: list[sqlite3.Connection] = []
    connect = sqlite3.connect

    def watched(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        db = connect(*args, **kwargs)
        db.set_trace_callback(statements.append)
        opened.append(db)
        return db

    monkeypatch.setattr(store.sqlite3, "connect", watched)
    return statements, opened


def test_a_fresh_store_is_seeded_in_one_transaction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_agentbench.benches.mockmed.store import PATIENTS, Store

    statements, _ = _watch_connections(monkeypatch)
    Store(tmp_path / "mockmed.sqlite3").close()
    boundaries = [s for s in statements if s.split()[0].upper() in ("BEGIN", "COMMIT", "ROLLBACK")]
    assert boundaries == ["BEGIN", "COMMIT"], statements
    assert statements[0] == "BEGIN" and statements[-1] == "COMMIT"
    assert sum(s.startswith("INSERT INTO patients") for s in statements) == len(PATIENTS)
    with closing(sqlite3.connect(tmp_path / "mockmed.sqlite3")) as db:  # committed: another connection sees it
        assert [r[0] for r in db.execute("SELECT id FROM patients ORDER BY id")] == [p["id"] for p in PATIENTS]


def test_each_encounter_is_its_own_commit_and_reopening_keeps_the_store(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_agentbench.benches.mockmed.store import PATIENTS, Store

    store = Store(tmp_path / "mockmed.sqlite3")
    try:
        saved = store.add_encounter("p1", "Triage", NOTE)
        # Saved means committed: a second connection sees the record while the first is still open.
        with closing(sqlite3.connect(tmp_path / "mockmed.sqlite3")) as db:
            assert [tuple(r) for r in db.execute("SELECT id, note FROM encounters")] == [(saved["id"], NOTE)]
    finally:
        store.close()
    statements, _ = _watch_connections(monkeypatch)
    again = Store(tmp_path / "mockmed.sqlite3")
    try:
        assert not any(s.startswith("INSERT") for s in statements)
        assert [p["id"] for p in again.patients()] == [p["id"] for p in PATIENTS]
        assert again.encounters() == [saved]
    finally:
        again.close()


def test_an_unreadable_store_raises_and_closes_its_connection(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_agentbench.benches.mockmed.store import Store

    path = tmp_path / "mockmed.sqlite3"
    path.write_bytes(b"not a MockMed database\0" * 100)
    _, opened = _watch_connections(monkeypatch)
    with pytest.raises(sqlite3.DatabaseError, match="not a database"):
        Store(path)
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        opened[0].execute("SELECT 1")


def test_the_app_store_syncs_and_a_scratch_store_lives_in_memory_until_saved(tmp_path):
    """The app's store syncs each commit (it says "saved" only once the record is on disk);
    ExtraDup's scratch stores are written in memory and saved as one file, which the app's store
    reads like any other; reading a store back read-only creates nothing."""
    from pytest_agentbench.benches.extradup.cells import apply_cell
    from pytest_agentbench.benches.mockmed.store import Store

    app_store = Store(tmp_path / "app.sqlite3")
    scratch = Store.in_memory()
    try:
        assert app_store._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL, sqlite's default
        scratch.add_encounter("p1", "Triage", "seen")
        scratch.add_encounter("p2", "Consult", None, extra={"priority": "stat"})
        assert [p.name for p in tmp_path.iterdir()] == ["app.sqlite3"]  # nothing on disk until saved
        scratch.save(tmp_path / "scratch.sqlite3")
        other = Store(tmp_path / "scratch.sqlite3")
        assert other.encounters() == scratch.encounters()
        assert [p["id"] for p in other.patients()] == ["p1", "p2", "p3"]
        other.close()
    finally:
        app_store.close()
        scratch.close()
    with pytest.raises(sqlite3.OperationalError, match="unable to open"):
        Store(tmp_path / "missing.sqlite3", read_only=True)
    assert not (tmp_path / "missing.sqlite3").exists()
    evidence = apply_cell("control", 0, tmp_path / "cell")
    assert len(evidence.new) == 1
