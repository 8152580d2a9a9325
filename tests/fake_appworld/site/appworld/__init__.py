"""FAKE AppWorld, for pytest-agentbench's tests only. This is NOT AppWorld.

It implements just the API surface that ``pytest_agentbench/audit/adapters/appworld_worker.py``
uses, under the same names and call shapes as appworld 0.1.3.post1, so that the real worker runs
against it end to end:

* ``AppWorld(task_id, experiment_name=..., **options)`` with ``.task`` (``.supervisor``,
  ``.model_collection``), ``.apis``, ``.requester``, ``.models``, ``._save_state(dir)``,
  ``.output_db_home_path_on_disk``, ``.evaluate(suppress_errors=...)`` and ``.close()``;
* ``Requester.requests`` and ``Requester._get/_post/_put/_patch/_delete(url, data, client,
  raise_on_failure=...)`` returning responses with ``status_code``;
* ``ModelCollection[app][Model].all()/.find_one(**filters)``, ``record.to_dict()``,
  ``.model_hashes()`` (write counters) and ``.reset_db_home_path()``;
* ``load_task_ids(split)``, ``update_root(path)`` and ``__version__``.

The apps (a Venmo-like and a Spotify-like one, plus the supervisor) are a few lines each. Tasks
are read from ``<root>/data/tasks/<id>/``: ``specs.json``, ``dbs/<app>.json`` (the start state),
and ``ground_truth/`` with ``solution.py`` (the shipped solution, real signature),
``public_data.json``, ``private_data.json`` and ``evaluation.py`` (the checker).

Quirks of the real AppWorld that the fake keeps, because the worker must cope with them:

* the model classes are shared, so reading a collection needs its ``reset_db_home_path()`` first;
* the requester pops ``access_token`` out of the data dict it is given;
* ``_put`` and ``_patch`` do not default ``client`` to the requester's own;
* ``evaluate()`` reads the end state from disk (what ``_save_state`` wrote), and prints a report;
* creating a world wipes ``experiments/outputs/<experiment>/tasks/<task_id>``.

Test hooks (environment variables): ``FAKE_APPWORLD_SLEEP=<seconds>`` sleeps in ``AppWorld()``;
``FAKE_APPWORLD_CRASH=1`` makes ``AppWorld()`` print a few lines to stderr and exit hard.
"""

import copy
import importlib.util
import json
import os
import re
import shutil
import sys
import time

from munch import munchify

__version__ = "0.1.3.post1+fake"

_ROOT = None
_OPTIONS = frozenset({
    "raise_on_failure", "ground_truth_mode", "load_ground_truth", "add_login_shortcut", "munchify_response",
    "parse_datetimes", "allow_datetime_change", "random_seed", "timeout_seconds", "max_interactions",
})


def update_root(path):
    global _ROOT
    _ROOT = os.path.abspath(path)


def _root():
    return _ROOT or os.environ.get("APPWORLD_ROOT") or os.getcwd()


def load_task_ids(dataset_name):
    path = os.path.join(_root(), "data", "datasets", dataset_name + ".txt")
    if not os.path.isfile(path):
        raise Exception("Dataset %r not found at %s." % (dataset_name, path))
    with open(path, encoding="utf-8") as f:
        return [line.strip().split(":")[0] for line in f if line.strip()]


def _read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _load_tables(folder):
    return {name[:-5]: _read_json(os.path.join(folder, name)) for name in sorted(os.listdir(folder))
            if name.endswith(".json")}


# -- models -----------------------------------------------------------------------------------

#: app -> tables the shared model classes read from (real AppWorld: the global db home path).
_CURRENT = {}


class _Namespace(dict):
    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class Record(_Namespace):
    def to_dict(self):
        return copy.deepcopy(dict(self))


class Model:
    def __init__(self, app, name):
        self.app, self.name = app, name

    def all(self):
        return [Record(copy.deepcopy(row)) for row in _CURRENT[self.app][self.name]]

    def find_all(self, **filters):
        return [r for r in self.all() if all(r.get(k) == v for k, v in filters.items())]

    def find_one(self, **filters):
        found = self.find_all(**filters)
        return found[0] if found else None

    def count(self, **filters):
        return len(self.find_all(**filters))


class ModelCollection(_Namespace):
    def __init__(self, tables, counters=None):
        super().__init__({app: _Namespace({m: Model(app, m) for m in models}) for app, models in tables.items()})
        self._tables = tables
        self._counters = {} if counters is None else counters

    def reset_db_home_path(self):
        for app, tables in self._tables.items():
            _CURRENT[app] = tables

    def model_hashes(self):
        return {"%s.%s" % (app, m): self._counters.get((app, m)) for app, models in self._tables.items()
                for m in models}


class Task:
    def __init__(self, task_id):
        self.folder = os.path.join(_root(), "data", "tasks", task_id)
        if not os.path.isdir(self.folder):
            raise Exception("The task %s does not exist in %s." % (task_id, os.path.dirname(self.folder)))
        specs = _read_json(os.path.join(self.folder, "specs.json"))
        self.task_id = task_id
        self.instruction = specs["instruction"]
        self.supervisor = munchify(specs["supervisor"])
        self.datetime = specs["datetime"]
        self.allowed_apps = specs["allowed_apps"]
        self.start_tables = _load_tables(os.path.join(self.folder, "dbs"))
        self.model_collection = ModelCollection(copy.deepcopy(self.start_tables))


# -- requests ---------------------------------------------------------------------------------

class Response:
    def __init__(self, status_code, body):
        self.status_code, self._body = status_code, body
        self.text = json.dumps(body)

    def json(self):
        return copy.deepcopy(self._body)


class _Client:
    """Stands in for the FastAPI TestClient the real requester sends through."""


class Requester:
    def __init__(self, world, raise_on_failure):
        self._world = world
        self.client = _Client()
        self.raise_on_failure = raise_on_failure
        self.requests = []

    def _send(self, method, url, data, client, raise_on_failure):
        self.requests.append({"method": method, "url": url, "data": copy.deepcopy(data or {})})
        if client is None:
            raise ValueError("remote_apis_url must be set for remote requests.")
        if data is None:
            data = {}
        token = data.pop("access_token", None)  # as the real requester: it changes the dict it is given
        response = self._world._handle(method, url, data, token)
        if (self.raise_on_failure if raise_on_failure is None else raise_on_failure) and response.status_code != 200:
            raise Exception("Response status code is %d:\n%s" % (response.status_code, response.text))
        return response

    def _get(self, url, data=None, client=None, raise_on_failure=None):
        return self._send("get", url, data, client or self.client, raise_on_failure)

    def _post(self, url, data=None, client=None, raise_on_failure=None):
        return self._send("post", url, data, client or self.client, raise_on_failure)

    def _delete(self, url, data=None, client=None, raise_on_failure=None):
        return self._send("delete", url, data, client or self.client, raise_on_failure)

    def _put(self, url, data=None, client=None, raise_on_failure=None):
        return self._send("put", url, data, client, raise_on_failure)  # no default client, as in AppWorld

    def _patch(self, url, data=None, client=None, raise_on_failure=None):
        return self._send("patch", url, data, client, raise_on_failure)


_APIS = {
    "venmo": {"show_friends": ("get", "/venmo/friends"),
              "create_payment_request": ("post", "/venmo/payment_requests")},
    "spotify": {"show_album": ("get", "/spotify/albums/{album_id}"),
                "add_song_to_queue": ("post", "/spotify/queue"),
                "show_song_queue": ("get", "/spotify/queue")},
    "supervisor": {"complete_task": ("post", "/supervisor/complete_task")},
}


class _AppApis:
    def __init__(self, app, requester, login_shortcut, munchify_response):
        self._app, self._requester = app, requester
        self._login_shortcut, self._munchify = login_shortcut, munchify_response

    def _call(self, method, url, data):
        response = getattr(self._requester, "_" + method)(url, data, self._requester.client)
        body = response.json()
        return munchify(body) if self._munchify else body

    def access_token_from(self, main_user):
        if not self._login_shortcut:
            raise AttributeError("access_token_from needs add_login_shortcut=True")
        body = self._call("post", "/%s/auth/token" % self._app,
                          {"username": main_user.email, "password": main_user.passwords[self._app]})
        return body["access_token"]

    def __getattr__(self, api):
        try:
            method, template = _APIS[self._app][api]
        except KeyError:
            raise AttributeError("No API named %r found in the %s app." % (api, self._app)) from None

        def call(**kwargs):
            params = re.findall(r"{(\w+)}", template)
            url = template.format(**{p: kwargs.pop(p) for p in params})
            return self._call(method, url, kwargs)

        return call


# -- the apps ---------------------------------------------------------------------------------

NOT_FOUND = "API not found or some of the passed parameters are invalid."


def _login(world, app, data):
    user = next((u for u in world._tables[app]["User"] if u["email"] == data.get("username")), None)
    if user is None or user["password"] != data.get("password"):
        return 401, {"message": "Invalid credentials."}
    return 200, {"access_token": "%s-token-%d" % (app, user["id"]), "token_type": "Bearer"}


def _user(world, app, token):
    return next((u for u in world._tables[app]["User"] if token == "%s-token-%d" % (app, u["id"])), None)


def _venmo_friends(world, data, token):
    me = _user(world, "venmo", token)
    if me is None:
        return 401, {"message": "You are not authorized."}
    return 200, [{"first_name": u["first_name"], "last_name": u["last_name"], "email": u["email"]}
                 for u in world._tables["venmo"]["User"] if u["id"] != me["id"]]


def _venmo_request(world, data, token):
    me = _user(world, "venmo", token)
    if me is None:
        return 401, {"message": "You are not authorized."}
    receiver = next((u for u in world._tables["venmo"]["User"] if u["email"] == data.get("user_email")), None)
    if receiver is None or receiver["id"] == me["id"]:
        return 422, {"message": "No other Venmo user has this email."}
    amount = data.get("amount")
    if isinstance(amount, bool) or not isinstance(amount, (int, float)) or amount <= 0:
        return 422, {"message": "The amount must be a positive number."}
    request = world._insert("venmo", "PaymentRequest", sender_id=me["id"], receiver_id=receiver["id"],
                            amount=amount, description=data.get("description", ""), status="pending",
                            created_at=world.task.datetime, updated_at=world.task.datetime)
    world._insert("venmo", "Notification", user_id=receiver["id"], type="payment_request",
                  object_id=request["id"], created_at=world.task.datetime)
    return 200, {"message": "Sent the payment request.", "payment_request_id": request["id"]}


def _spotify_album(world, data, token, album_id):
    if _user(world, "spotify", token) is None:
        return 401, {"message": "You are not authorized."}
    album = next((a for a in world._tables["spotify"]["Album"] if a["id"] == int(album_id)), None)
    if album is None:
        return 404, {"message": "No album found."}
    songs = [{"song_id": s["id"], "title": s["title"], "play_count": s["play_count"]}
             for s in world._tables["spotify"]["Song"] if s["album_id"] == album["id"]]
    return 200, {"album_id": album["id"], "title": album["title"], "songs": songs}


def _spotify_player(world, token):
    me = _user(world, "spotify", token)
    if me is None:
        return None
    return next(p for p in world._tables["spotify"]["MusicPlayer"] if p["user_id"] == me["id"])


def _spotify_queue_add(world, data, token):
    player = _spotify_player(world, token)
    if player is None:
        return 401, {"message": "You are not authorized."}
    song_id = data.get("song_id")
    if not any(s["id"] == song_id for s in world._tables["spotify"]["Song"]):
        return 404, {"message": "No song found."}
    player["queue_song_ids"] = player["queue_song_ids"] + [song_id]
    player["updated_at"] = world.task.datetime
    world._bump("spotify", "MusicPlayer")
    return 200, {"message": "Added the song to the queue."}


def _spotify_queue(world, data, token):
    player = _spotify_player(world, token)
    if player is None:
        return 401, {"message": "You are not authorized."}
    return 200, [{"song_id": i} for i in player["queue_song_ids"]]


def _complete_task(world, data, token):
    status = data.get("status", "success")
    if status not in ("success", "fail"):
        return 422, {"message": "The status must be success or fail."}
    task = world._tables["supervisor"]["Task"][0]
    task["status"], task["answer"] = status, data.get("answer")
    world._bump("supervisor", "Task")
    return 200, {"message": "Marked the active task complete."}


_ROUTES = [
    ("post", r"/venmo/auth/token", lambda w, d, t: _login(w, "venmo", d)),
    ("get", r"/venmo/friends", _venmo_friends),
    ("post", r"/venmo/payment_requests", _venmo_request),
    ("post", r"/spotify/auth/token", lambda w, d, t: _login(w, "spotify", d)),
    ("get", r"/spotify/albums/(\d+)", _spotify_album),
    ("post", r"/spotify/queue", _spotify_queue_add),
    ("get", r"/spotify/queue", _spotify_queue),
    ("post", r"/supervisor/complete_task", _complete_task),
]


# -- the world --------------------------------------------------------------------------------

class TestTracker:
    def __init__(self, results):
        """``results``: ``[(requirement, passed, label)]`` from the task's ``evaluation.py``."""
        self.passes = [{"requirement": r, "label": label} for r, ok, label in results if ok]
        self.failures = [{"requirement": r, "trace": "AssertionError", "label": label}
                         for r, ok, label in results if not ok]
        self.num_tests = len(results)
        self.success = not self.failures

    def to_dict(self):
        return {"success": self.success, "difficulty": 1, "num_tests": self.num_tests,
                "passes": copy.deepcopy(self.passes), "failures": copy.deepcopy(self.failures)}


def _test_hooks():
    if os.environ.get("FAKE_APPWORLD_SLEEP"):
        time.sleep(float(os.environ["FAKE_APPWORLD_SLEEP"]))
    if os.environ.get("FAKE_APPWORLD_CRASH"):
        for n in range(1, 9):
            sys.stderr.write("fake appworld crash line %d\n" % n)
        sys.stderr.flush()
        os._exit(70)


def _load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class AppWorld:
    def __init__(self, task_id, experiment_name="default", **options):
        unknown = sorted(set(options) - _OPTIONS)
        if unknown:
            raise TypeError("AppWorld() got unexpected keyword arguments: %s" % ", ".join(unknown))
        _test_hooks()
        if "pytest_agentbench" in sys.modules:
            raise RuntimeError("pytest_agentbench was imported into AppWorld's interpreter")
        self.task_id, self.experiment_name = task_id, experiment_name
        self.task = Task(task_id)
        self.output_directory = os.path.join(_root(), "experiments", "outputs", experiment_name, "tasks", task_id)
        shutil.rmtree(self.output_directory, ignore_errors=True)
        self.output_db_home_path_on_disk = os.path.join(self.output_directory, "dbs")
        os.makedirs(os.path.join(self.output_directory, "logs"), exist_ok=True)
        self._tables = copy.deepcopy(self.task.start_tables)
        self._counters = {}
        self.models = ModelCollection(self._tables, self._counters)
        self.models.reset_db_home_path()
        self.requester = Requester(self, options.get("raise_on_failure", True))
        self.apis = _Namespace({app: _AppApis(app, self.requester, options.get("add_login_shortcut", False),
                                              options.get("munchify_response", False)) for app in _APIS})
        self._closed = False
        self._save_state(self.output_db_home_path_on_disk)

    def _insert(self, app, model, **values):
        rows = self._tables[app][model]
        row = dict(id=max([r["id"] for r in rows], default=0) + 1, **values)
        rows.append(row)
        self._bump(app, model)
        return row

    def _bump(self, app, model):
        self._counters[(app, model)] = self._counters.get((app, model), 0) + 1

    def _handle(self, method, url, data, token):
        if self._closed:
            raise Exception("Looks like you are operating on a closed task world object.")
        for route_method, pattern, handler in _ROUTES:
            match = re.fullmatch(pattern, url)
            if match and method == route_method:
                status, body = handler(self, data, token, *match.groups())
                return Response(status, body)
        return Response(404, {"message": NOT_FOUND})

    def _save_state(self, directory):
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
        for app, tables in self._tables.items():
            with open(os.path.join(directory, app + ".json"), "w", encoding="utf-8") as f:
                json.dump(tables, f)

    def evaluate(self, suppress_errors=True):
        if self._closed:
            raise Exception("Looks like you are operating on a closed task world object.")
        truth = os.path.join(self.task.folder, "ground_truth")
        checker = _load_module(os.path.join(truth, "evaluation.py"), "fake_evaluation_%s" % self.task_id)
        end = _load_tables(self.output_db_home_path_on_disk)  # from disk, as the real evaluate does
        results = checker.evaluate(copy.deepcopy(self.task.start_tables), end,
                                   _read_json(os.path.join(truth, "public_data.json")),
                                   _read_json(os.path.join(truth, "private_data.json")))
        tracker = TestTracker(results)
        print("Evaluation report for %s: %d of %d tests passed" % (
            self.task_id, len(tracker.passes), tracker.num_tests))  # the real evaluate prints too
        return tracker

    def close(self):
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
