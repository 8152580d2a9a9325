"""MockMed, the web app: a small synthetic medical-records product that really runs.

Why one module of over 500 lines: the pages, routes and form handling of one small app read best
side by side; the store and the driver are already modules of their own.

A stdlib threading HTTP server (:class:`~pytest_agentbench.sockets.HTTPServer`) on 127.0.0.1 serves
server-rendered HTML pages with plain forms (no JavaScript anywhere) and stores encounters in a SQLite
file through :class:`~.store.Store`:

* ``/login``: "Sign in to MockMed" (Username, Password, "Sign In" ``#signin``); any credentials work;
* ``/tasks``: "Referral Tasks", a table Patient / Reason / Priority / Action with one "Open" button
  (``#open-<pid>``) per patient row;
* ``/patient/<pid>``: "Jane Sample — MRN P1 — DOB 1984-03-12", the saved banner after a save
  ("Encounter saved — <first 40 characters of the note>", role ``status``), "New Encounter"
  (``#new-encounter``) and the encounters, one "Triage — <note>" line each;
* ``/patient/<pid>/encounters/new``: "New Encounter", Encounter Type (radios ``#type-triage`` and
  ``#type-consult`` drawn as a segmented control), Note (``#note``), "Save Encounter"
  (``#save-encounter``); the POST writes exactly one encounter and redirects to the patient page.

Conditions (fixed per server): ``clean``; ``theme`` (another palette and fonts, same layout, labels and
ids); ``rename`` ("Open" reads "View" and "Save Encounter" reads "Submit Encounter", ids unchanged).
"""

from __future__ import annotations

import html
import re
import secrets
import threading
import urllib.parse
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentbench.benches.mockmed.store import ENCOUNTER_TYPES, Store
from pytest_agentbench.sockets import HTTPServer
from pytest_agentbench.text import one_line

if TYPE_CHECKING:
    from typing_extensions import Self

CONDITIONS: tuple[str, ...] = ("clean", "theme", "rename")
COOKIE = "mockmed_session"
BANNER_PREFIX = "Encounter saved — "


@dataclass(frozen=True)
class Labels:
    """The words a condition shows. Element ids never change with the condition."""

    open: str = "Open"
    save: str = "Save Encounter"


LABELS: dict[str, Labels] = {
    "clean": Labels(),
    "theme": Labels(),
    "rename": Labels(open="View", save="Submit Encounter"),
}


def check_condition(condition: str) -> str:
    if condition not in CONDITIONS:
        raise ValueError(f"unknown MockMed condition {condition!r}; valid conditions: {', '.join(CONDITIONS)}")
    return condition


def banner_text(note: str | None) -> str:
    """The saved banner's words for an encounter whose note is ``note``."""
    return BANNER_PREFIX + one_line(note or "")[:40]


def encounter_line(record: dict[str, Any]) -> str:
    """How the patient page lists an encounter: ``"Triage — <note>"``."""
    return f"{record.get('type') or '(no type)'} — {one_line(record.get('note') or '')}"


# ----------------------------------------------------------------------------------------------------
# Styles. The palette and fonts are CSS custom properties; the theme condition only swaps them.
# The headless driver reads the same custom properties to paint its screenshots.

CSS = """
:root {
  --bg: #f3f5f8; --surface: #ffffff; --text: #1c2733; --muted: #5f6b7a; --border: #d8dee6;
  --primary: #1f63d6; --primary-hover: #184fae; --primary-text: #ffffff; --accent: #e8f0fd;
  --header-bg: #0f3557; --header-text: #ffffff; --header-muted: #b7c7d9;
  --success-bg: #e5f6ea; --success-text: #17633a; --success-border: #9fd6b2;
  --danger-bg: #fdecec; --danger-text: #a12323; --danger-border: #f0b4b4;
  --high: #b42318; --high-bg: #fde8e7; --medium: #9a5b00; --medium-bg: #fff3dc;
  --low: #2b6b3f; --low-bg: #e6f4ea; --thead-bg: #f7f9fb;
  --font: "Inter", "Segoe UI", "Helvetica Neue", Arial, "DejaVu Sans", sans-serif;
}
body.drift-theme {
  --bg: #161a22; --surface: #1f2530; --text: #e7eaf0; --muted: #9ba6b5; --border: #343c4b;
  --primary: #e0912f; --primary-hover: #f0a448; --primary-text: #161a22; --accent: #2d2619;
  --header-bg: #0c0f14; --header-text: #f3c77d; --header-muted: #a69b86;
  --success-bg: #173325; --success-text: #9be3b6; --success-border: #2f6b48;
  --danger-bg: #3a1c1c; --danger-text: #f4aaaa; --danger-border: #6e2f2f;
  --high: #ff9b8f; --high-bg: #3d1f1d; --medium: #f5c76b; --medium-bg: #3a2f17;
  --low: #93d9a8; --low-bg: #193224; --thead-bg: #252c38;
  --font: Georgia, "DejaVu Serif", "Times New Roman", serif;
}
* { box-sizing: border-box; }
html, body { margin: 0; padding: 0; }
body { background: var(--bg); color: var(--text); font: 15px/1.45 var(--font); min-height: 100vh;
  display: flex; flex-direction: column; }
a { color: var(--primary); text-decoration: none; }
a:hover { text-decoration: underline; }
.topbar { display: flex; align-items: center; justify-content: space-between; height: 56px;
  padding: 0 32px; background: var(--header-bg); color: var(--header-text); }
.brand { display: flex; align-items: center; gap: 10px; color: var(--header-text); font-size: 20px;
  font-weight: 700; letter-spacing: 0.2px; }
.brand:hover { text-decoration: none; }
.logo { display: inline-flex; align-items: center; justify-content: center; width: 28px; height: 28px;
  border-radius: 7px; background: var(--primary); color: var(--primary-text); font-size: 20px;
  font-weight: 700; line-height: 1; }
.usernav { display: flex; align-items: center; gap: 18px; font-size: 14px; color: var(--header-muted); }
.usernav .user { color: var(--header-muted); }
.usernav a { color: var(--header-text); }
.page { width: 100%; max-width: 960px; margin: 0 auto; padding: 32px 32px 16px; flex: 1; }
.page-narrow { max-width: 440px; padding-top: 64px; }
.page-head { display: flex; align-items: center; justify-content: space-between; margin-bottom: 16px; }
h1 { font-size: 24px; line-height: 1.3; margin: 0 0 8px; font-weight: 700; }
h2 { font-size: 18px; line-height: 1.3; margin: 0; font-weight: 700; }
p { margin: 0 0 12px; }
.muted { color: var(--muted); }
.count { color: var(--muted); font-size: 14px; }
.card { background: var(--surface); border: 1px solid var(--border); border-radius: 10px; padding: 24px;
  margin-bottom: 20px; box-shadow: 0 1px 2px rgba(16, 24, 40, 0.06); }
.card > :last-child { margin-bottom: 0; }
.card-flush { padding: 0; overflow: hidden; }
.card-head { display: flex; align-items: center; justify-content: space-between; margin-bottom: 12px; }
.back { display: inline-block; margin-bottom: 16px; font-size: 14px; }
.field { margin: 0 0 18px; padding: 0; border: 0; min-width: 0; }
label, legend { display: block; font-size: 14px; font-weight: 600; margin-bottom: 6px; padding: 0; }
input[type=text], input[type=password], textarea {
  display: block; width: 100%; height: 40px; padding: 8px 12px; border: 1px solid var(--border);
  border-radius: 6px; background: var(--surface); color: var(--text); font: inherit; }
textarea { height: 120px; resize: vertical; }
input:focus, textarea:focus { outline: 2px solid var(--primary); outline-offset: 0; border-color: var(--primary); }
.btn { display: inline-block; padding: 9px 16px; border: 1px solid transparent; border-radius: 6px;
  font: inherit; font-size: 14px; font-weight: 600; line-height: 20px; cursor: pointer; text-align: center; }
.btn:hover { text-decoration: none; }
.btn-primary { background: var(--primary); color: var(--primary-text); }
.btn-primary:hover { background: var(--primary-hover); }
.btn-secondary { background: var(--surface); color: var(--primary); border-color: var(--primary); }
.btn-secondary:hover { background: var(--accent); }
.btn-ghost { background: transparent; color: var(--muted); }
.btn-block { display: block; width: 100%; }
.form-actions { display: flex; justify-content: flex-end; gap: 12px; margin-top: 8px; }
.segmented { display: flex; gap: 0; }
.seg { position: relative; display: block; margin: 0; padding: 8px 22px; border: 1px solid var(--border);
  background: var(--surface); color: var(--text); font-weight: 600; cursor: pointer; }
.seg + .seg { border-left: 0; }
.seg:first-child { border-radius: 6px 0 0 6px; }
.seg:last-child { border-radius: 0 6px 6px 0; }
.seg input { position: absolute; inset: 0; width: 100%; height: 100%; margin: 0; opacity: 0; cursor: pointer; }
.seg:has(input:checked) { background: var(--primary); border-color: var(--primary); color: var(--primary-text); }
.seg:has(input:focus-visible) { outline: 2px solid var(--primary); outline-offset: 2px; }
table { width: 100%; border-collapse: collapse; }
th { text-align: left; font-size: 13px; font-weight: 600; color: var(--muted); background: var(--thead-bg);
  padding: 12px 20px; border-bottom: 1px solid var(--border); }
td { padding: 14px 20px; border-bottom: 1px solid var(--border); vertical-align: middle; }
tbody tr:last-child td { border-bottom: 0; }
.pname { font-weight: 600; }
.badge { display: inline-block; padding: 2px 10px; border-radius: 999px; font-size: 12px; font-weight: 700; }
.badge-high { color: var(--high); background: var(--high-bg); }
.badge-medium { color: var(--medium); background: var(--medium-bg); }
.badge-low { color: var(--low); background: var(--low-bg); }
.banner { padding: 12px 16px; border-radius: 8px; margin-bottom: 20px; font-weight: 600; border: 1px solid; }
.banner-success { background: var(--success-bg); color: var(--success-text); border-color: var(--success-border); }
.banner-error { background: var(--danger-bg); color: var(--danger-text); border-color: var(--danger-border); }
.encounters { list-style: none; margin: 0; padding: 0; }
.encounter { padding: 12px 0; border-top: 1px solid var(--border); }
.enc-meta { font-size: 13px; color: var(--muted); margin-top: 2px; }
.empty { color: var(--muted); padding: 12px 0; border-top: 1px solid var(--border); margin: 0; }
.foot { text-align: center; font-size: 12px; color: var(--muted); padding: 20px 32px 28px; }
"""

_ICON = ("data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Crect width='16'"
         " height='16' rx='3' fill='%231f63d6'/%3E%3Cpath d='M7 3h2v4h4v2H9v4H7V9H3V7h4z' fill='white'/%3E%3C/svg%3E")


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def page(title: str, body: str, *, condition: str, user: str | None, narrow: bool = False) -> str:
    """The whole HTML document around a page's ``body``."""
    theme = ' class="drift-theme"' if condition == "theme" else ""
    if user is not None:
        nav = (f'<nav class="usernav" aria-label="Account"><span class="user">Signed in as {_e(user)}</span>'
               '<a href="/logout">Sign out</a></nav>')
    else:
        nav = ""
    main_class = "page page-narrow" if narrow else "page"
    return (
        "<!doctype html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)} · MockMed</title>\n"
        f'<link rel="icon" href="{_ICON}">\n'
        f"<style>{CSS}</style>\n</head>\n"
        f"<body{theme}>\n"
        '<header class="topbar">'
        '<a class="brand" href="/tasks"><span class="logo" aria-hidden="true">+</span>MockMed</a>'
        f"{nav}</header>\n"
        f'<main class="{main_class}">\n{body}\n</main>\n'
        '<footer class="foot">MockMed demo · synthetic records for testing, no real patients</footer>\n'
        "</body>\n</html>\n"
    )


def render_login(*, condition: str) -> str:
    body = (
        '<section class="card">\n'
        "<h1>Sign in to MockMed</h1>\n"
        '<p class="muted">Demo environment: any username and password work.</p>\n'
        '<form method="post" action="/login" aria-label="Sign in">\n'
        '<div class="field"><label for="username">Username</label>'
        '<input type="text" id="username" name="username" autocomplete="username" autofocus></div>\n'
        '<div class="field"><label for="password">Password</label>'
        '<input type="password" id="password" name="password" autocomplete="current-password"></div>\n'
        '<button type="submit" id="signin" class="btn btn-primary btn-block">Sign In</button>\n'
        "</form>\n</section>"
    )
    return page("Sign in", body, condition=condition, user=None, narrow=True)


def render_tasks(store: Store, *, condition: str, user: str) -> str:
    labels = LABELS[condition]
    rows = []
    for p in store.patients():
        pid = _e(p["id"])
        rows.append(
            "<tr>"
            f'<td><span class="pname">{_e(p["name"])}</span></td>'
            f'<td>{_e(p["reason"])}</td>'
            f'<td><span class="badge badge-{_e(p["priority"].lower())}">{_e(p["priority"])}</span></td>'
            f'<td><a href="/patient/{pid}" id="open-{pid}" role="button" class="btn btn-secondary">'
            f"{_e(labels.open)}</a></td>"
            "</tr>"
        )
    body = (
        f'<div class="page-head"><h1>Referral Tasks</h1><span class="count">{len(rows)} open</span></div>\n'
        '<section class="card card-flush">\n'
        '<table aria-label="Referral tasks">\n'
        "<thead><tr><th>Patient</th><th>Reason</th><th>Priority</th><th>Action</th></tr></thead>\n"
        "<tbody>\n" + "\n".join(rows) + "\n</tbody>\n</table>\n</section>"
    )
    return page("Referral Tasks", body, condition=condition, user=user)


def patient_header(patient: dict[str, Any]) -> str:
    return f"{patient['name']} — MRN {patient['mrn']} — DOB {patient['dob']}"


def render_patient(store: Store, patient: dict[str, Any], *, condition: str, user: str,
                   banner: str | None = None) -> str:
    """The patient page; ``banner`` is the saved banner's text, shown when given."""
    pid = _e(patient["id"])
    items = []
    for record in reversed(store.encounters(patient["id"])):
        when = str(record.get("created_at") or "").replace("T", " ").replace("+00:00", " UTC")
        items.append(f'<li class="encounter"><div class="enc-main">{_e(encounter_line(record))}</div>'
                     f'<div class="enc-meta">Saved {_e(when)}</div></li>')
    listing = ('<ul class="encounters">' + "".join(items) + "</ul>") if items else \
        '<p class="empty">No encounters yet.</p>'
    saved = f'<div role="status" id="saved-banner" class="banner banner-success">{_e(banner)}</div>\n' \
        if banner else ""
    body = (
        '<a class="back" href="/tasks">← Referral Tasks</a>\n'
        f"{saved}"
        '<section class="card">\n'
        f"<h1>{_e(patient_header(patient))}</h1>\n"
        f'<p class="muted">{_e(patient["reason"])} · Priority {_e(patient["priority"])}</p>\n'
        "</section>\n"
        '<section class="card">\n'
        '<div class="card-head"><h2>Encounters</h2>'
        f'<a href="/patient/{pid}/encounters/new" id="new-encounter" role="button" class="btn btn-primary">'
        "New Encounter</a></div>\n"
        f"{listing}\n</section>"
    )
    return page(patient["name"], body, condition=condition, user=user)


def render_encounter_form(patient: dict[str, Any], *, condition: str, user: str, type_: str | None = None,
                          note: str = "", error: str | None = None) -> str:
    labels = LABELS[condition]
    pid = _e(patient["id"])
    segments = []
    for kind in ENCOUNTER_TYPES:
        checked = " checked" if kind == type_ else ""
        segments.append(f'<label class="seg"><input type="radio" id="type-{kind.lower()}" name="type" '
                        f'value="{_e(kind)}"{checked}><span>{_e(kind)}</span></label>')
    alert = f'<div role="alert" class="banner banner-error">{_e(error)}</div>\n' if error else ""
    body = (
        f'<a class="back" href="/patient/{pid}">← {_e(patient["name"])}</a>\n'
        f"{alert}"
        '<section class="card">\n'
        "<h1>New Encounter</h1>\n"
        f'<p class="muted">{_e(patient["name"])} — MRN {_e(patient["mrn"])}</p>\n'
        f'<form method="post" action="/patient/{pid}/encounters" aria-label="New encounter">\n'
        '<fieldset class="field"><legend>Encounter Type</legend>'
        f'<div class="segmented">{"".join(segments)}</div></fieldset>\n'
        '<div class="field"><label for="note">Note</label>'
        f'<textarea id="note" name="note" rows="5">{_e(note)}</textarea></div>\n'
        '<div class="form-actions">'
        f'<a href="/patient/{pid}" class="btn btn-ghost">Cancel</a>'
        f'<button type="submit" id="save-encounter" class="btn btn-primary">{_e(labels.save)}</button>'
        "</div>\n</form>\n</section>"
    )
    return page("New Encounter", body, condition=condition, user=user)


def render_not_found(*, condition: str, user: str | None) -> str:
    body = ('<section class="card"><h1>Page not found</h1>'
            '<p class="muted">There is nothing at this address.</p>'
            '<a href="/tasks">Back to Referral Tasks</a></section>')
    return page("Not found", body, condition=condition, user=user)


# ----------------------------------------------------------------------------------------------------
# The server.


class _Server(HTTPServer):
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], store: Store, condition: str) -> None:
        super().__init__(address, _Handler)
        self.store = store
        self.condition = condition
        self.sessions: dict[str, dict[str, Any]] = {}
        self.sessions_lock = threading.Lock()


_PATIENT = re.compile(r"^/patient/([A-Za-z0-9_-]+)$")
_NEW = re.compile(r"^/patient/([A-Za-z0-9_-]+)/encounters/new$")
_CREATE = re.compile(r"^/patient/([A-Za-z0-9_-]+)/encounters$")


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "MockMed/1.0"
    protocol_version = "HTTP/1.1"  # keep-alive: every reply says its Content-Length (a 204 has none)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # -- helpers --------------------------------------------------------------------------------
    def _session(self) -> tuple[str | None, dict[str, Any] | None]:
        raw = self.headers.get("Cookie") or ""
        for part in raw.split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE:
                with self.server.sessions_lock:
                    session = self.server.sessions.get(value)
                if session is not None:
                    return value, session
        return None, None

    def _send(self, status: int, body: str, headers: dict[str, str] | None = None) -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _redirect(self, location: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(HTTPStatus.SEE_OTHER)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.send_header("Cache-Control", "no-store")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()

    def _form(self) -> dict[str, str]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        return dict(urllib.parse.parse_qsl(raw, keep_blank_values=True))

    def _not_found(self, user: str | None) -> None:
        self._send(HTTPStatus.NOT_FOUND, render_not_found(condition=self.server.condition, user=user))

    # -- routes ---------------------------------------------------------------------------------
    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        path = urllib.parse.urlsplit(self.path).path
        condition = self.server.condition
        store = self.server.store
        _, session = self._session()
        if path == "/favicon.ico":
            self.send_response(HTTPStatus.NO_CONTENT)
            self.end_headers()
            return
        if path == "/login":
            self._send(HTTPStatus.OK, render_login(condition=condition))
            return
        if path == "/logout":
            sid, _ = self._session()
            if sid:
                with self.server.sessions_lock:
                    self.server.sessions.pop(sid, None)
            self._redirect("/login", {"Set-Cookie": f"{COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax"})
            return
        if session is None:
            self._redirect("/login")
            return
        user = session["user"]
        if path in ("/", "/tasks"):
            if path == "/":
                self._redirect("/tasks")
                return
            self._send(HTTPStatus.OK, render_tasks(store, condition=condition, user=user))
            return
        match = _PATIENT.match(path)
        if match:
            patient = store.patient(match.group(1))
            if patient is None:
                self._not_found(user)
                return
            flash = session.pop("flash", None)
            banner = flash[1] if flash and flash[0] == patient["id"] else None
            self._send(HTTPStatus.OK, render_patient(store, patient, condition=condition, user=user, banner=banner))
            return
        match = _NEW.match(path)
        if match:
            patient = store.patient(match.group(1))
            if patient is None:
                self._not_found(user)
                return
            self._send(HTTPStatus.OK, render_encounter_form(patient, condition=condition, user=user))
            return
        self._not_found(user)

    def do_POST(self) -> None:
        path = urllib.parse.urlsplit(self.path).path
        condition = self.server.condition
        store = self.server.store
        form = self._form()
        if path == "/login":
            user = form.get("username", "").strip() or "guest"
            sid = secrets.token_urlsafe(18)
            with self.server.sessions_lock:
                self.server.sessions[sid] = {"user": user}
            self._redirect("/tasks", {"Set-Cookie": f"{COOKIE}={sid}; Path=/; HttpOnly; SameSite=Lax"})
            return
        _, session = self._session()
        if session is None:
            self._redirect("/login")
            return
        user = session["user"]
        match = _CREATE.match(path)
        if not match:
            self._not_found(user)
            return
        patient = store.patient(match.group(1))
        if patient is None:
            self._not_found(user)
            return
        kind = form.get("type")
        note = form.get("note", "").replace("\r\n", "\n")
        error = None
        if kind not in ENCOUNTER_TYPES:
            error = "Choose an encounter type: Triage or Consult."
        elif not note.strip():
            error = "Write a note before saving the encounter."
        if error:
            self._send(HTTPStatus.UNPROCESSABLE_ENTITY,
                       render_encounter_form(patient, condition=condition, user=user, type_=kind, note=note,
                                             error=error))
            return
        store.add_encounter(patient["id"], kind, note)
        session["flash"] = (patient["id"], banner_text(note))
        self._redirect(f"/patient/{patient['id']}")


class MockMedServer:
    """A running MockMed. ``url`` ends with ``/``; ``stop()`` (or leaving the ``with``) shuts it down."""

    def __init__(self, db_path: str | Path, condition: str = "clean", port: int = 0,
                 host: str = "127.0.0.1") -> None:
        self.condition = check_condition(condition)
        self.db_path = Path(db_path)
        self.store = Store(self.db_path)
        try:
            self._server = _Server((host, port), self.store, self.condition)
        except BaseException:
            self.store.close()
            raise
        # The bound address (the port the OS picked for port 0); an AF_INET socket names it (host, port).
        address: tuple[str, int] = self._server.socket.getsockname()[:2]
        self.host, self.port = address
        self.url = f"http://{self.host}:{self.port}/"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.005},
                                        name=f"mockmed-{self.port}", daemon=True)
        self._thread.start()
        self._stopped = False

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"MockMedServer(url={self.url!r}, condition={self.condition!r}, db_path={str(self.db_path)!r})"


def serve(db_path: str | Path, condition: str = "clean", port: int = 0, host: str = "127.0.0.1") -> MockMedServer:
    """Start MockMed on ``host:port`` (0: an ephemeral port) in a background thread."""
    return MockMedServer(db_path, condition=condition, port=port, host=host)
