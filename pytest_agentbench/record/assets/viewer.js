(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("run-data").textContent);
  var RANK = { error: 0, failed: 1, xpassed: 2, skipped: 3, xfailed: 4, passed: 5 };
  var NOT_SCORED = { infrastructure: true, evaluation: true };
  var state = { q: "", status: "", benchmark: "", domain: "", sort: null, dir: 1, open: {} };
  var gallery = { shots: [], index: 0 };

  /* ---- small helpers ---------------------------------------------------------------------- */
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined || child === false) continue;
      parent.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return parent;
  }
  function $(id) { return document.getElementById(id); }
  function str(v) { return v === null || v === undefined ? "" : typeof v === "string" ? v : String(v); }
  function num(v) { return typeof v === "number" && isFinite(v) ? v : null; }
  function obj(v) { return v !== null && typeof v === "object" && !Array.isArray(v) ? v : {}; }
  function list(v) { return Array.isArray(v) ? v : []; }
  /* A path inside the run folder, or null: no scheme (javascript:, http:), no /abs, no "..". */
  function safeRel(p) {
    if (typeof p !== "string" || !p || p.length > 1000 || p.charAt(0) === "/" || /[:\\]/.test(p)) return null;
    return p.split("/").every(function (part) { return part && part !== "." && part !== ".."; }) ? p : null;
  }
  function fileUrl(path) { return path.split("/").map(encodeURIComponent).join("/"); }
  function secs(s) {
    if (s === null) return "";
    return s < 1 ? Math.round(s * 1000) + " ms" : s < 60 ? s.toFixed(1) + " s" : Math.floor(s / 60) + "m " + Math.round(s % 60) + "s";
  }
  function valueText(v) {
    if (v === null || v === undefined) return "";
    var text;
    try { text = JSON.stringify(v); } catch (e) { text = String(v); }
    text = text === undefined ? String(v) : text;
    return text.length > 300 ? text.slice(0, 300) + "\u2026" : text;
  }
  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

  /* ---- rows: what the table needs of each results.jsonl record, normalised once ------------ */
  function isOutcome(r) {
    if (r.hasOwnProperty("outcome")) return !!r.outcome;
    if (NOT_SCORED[r.error_type]) return false;
    return r.status !== "skipped";
  }
  function statusOf(r) {
    if (typeof r.status === "string" && r.status) return r.status;
    if (NOT_SCORED[r.error_type]) return "error";
    if (r.success === true) return "passed";
    return isOutcome(r) ? "failed" : "skipped";
  }
  /* A row of the table (from the rows block), or a task's whole record when it opens; ``where``
     is the record's trajectory as its packed detail says: its piece, or null and why, and its path. */
  function normalize(r, key, where) {
    var shots = list(r.screenshots).map(safeRel).filter(Boolean);
    where = list(where);
    return {
      key: key, base: str(r.task_id), task_id: str(r.task_id) + (MULTI_TRIAL && num(r.trial) ? "::trial-" + num(r.trial) : ""), benchmark: str(r.benchmark), domain: str(r.domain) || "default",
      nodeid: str(r.nodeid), status: statusOf(r), outcome: isOutcome(r), score: num(r.score),
      num_steps: num(r.num_steps) || 0, step_limit: num(r.step_limit) || 0, reason: str(r.reason),
      error: str(r.error), error_type: str(r.error_type), seconds: num(r.total_time_seconds), cost: num(r.cost_usd),
      criteria: Array.isArray(r.criteria) ? r.criteria : null, screenshots: shots,
      traj: Array.isArray(where[0]) ? where[0] : null, trajProblem: str(where[1]), trajectory: safeRel(where[2])
    };
  }
  /* What the Reason column says: the error, else the first criterion the checker failed (its name
     and what it found), else the checker's own reason. The full checker text stays in the title. */
  function failingText(criteria) {
    var failed = list(criteria).filter(function (c) { return c && typeof c === "object" && c.passed === false; });
    if (!failed.length) return "";
    var c = failed[0], name = str(c.name) || "(unnamed)", found = str(c.detail);
    var expected = valueText(c.expected), actual = valueText(c.actual);
    if (!found) found = [expected && "expected " + expected, actual && "got " + actual].filter(Boolean).join(", ");
    return name + (found ? ": " + found : " failed") + (failed.length > 1 ? " (+" + (failed.length - 1) + " more failed)" : "");
  }
  function reasonOf(t) {
    var won = t.status === "passed" || t.status === "xpassed";  /* a pass may miss a criterion or two */
    return t.error || (won ? "" : failingText(t.criteria)) || t.reason;
  }
  function reasonTitle(t) {
    var shown = reasonOf(t), full = t.error || t.reason;
    return full && full !== shown ? shown + "\n\nchecker: " + full : shown;
  }
  var MULTI_TRIAL = !!(DATA.statistics && DATA.statistics.trials !== "1" && DATA.statistics.trials !== "0");
  /* The rows block (packed, unpacked at load) holds a column per field, null where a record lacks
     it (a column of nulls only is one null), and where each task's packed detail is: three
     numbers a task. */
  var TASKS = [];
  function tasksOf(rows) {
    rows = obj(rows);
    var fields = list(rows.fields), columns = list(rows.columns).map(function (c) { return Array.isArray(c) ? c : []; });
    var at = list(rows.at), out = [], count = num(rows.count) || 0;
    for (var i = 0; i < count; i++) {
      var r = {};
      for (var f = 0; f < fields.length; f++) {
        var v = f < columns.length ? columns[f][i] : null;
        if (v !== null && v !== undefined) r[fields[f]] = v;
      }
      var t = normalize(r, i, []);
      t.at = at.slice(3 * i, 3 * i + 3);
      t.why = reasonOf(t);
      out.push(t);
    }
    return out;
  }
  function scoreText(t) { return t.outcome && t.score !== null ? t.score.toFixed(3) : "n/a"; }
  function badge(status) { return el("span", "badge s-" + (RANK.hasOwnProperty(status) ? status : "skipped"), status); }
  function anchor(t) { return t.benchmark + "/" + t.task_id; }

  /* ---- detail: each task's record and trajectory, packed, unpacked on first open ------------ */
  /* The blocks are base64 of raw deflate; a piece is [block, start, end] in a block's bytes. Data
     is only ever parsed as JSON and shown as text. The last few unpacked blocks are kept. */
  var blocks = {}, recent = [], utf8 = new TextDecoder();
  function unpack(id) {
    return Promise.resolve().then(function () {
      var node = $(id);
      if (!node) throw new Error("its block is not in the page");
      if (typeof DecompressionStream !== "function") throw new Error("this browser cannot unpack it: it needs DecompressionStream");
      var text = atob(node.textContent), bytes = new Uint8Array(text.length);
      for (var i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
      var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
      return new Response(stream).arrayBuffer();
    }).then(function (buffer) { return new Uint8Array(buffer); });
  }
  function piece(where) {
    var n = where[0];
    if (!blocks.hasOwnProperty(n)) {
      blocks[n] = unpack("z-" + n);
      recent.push(n);
      if (recent.length > 8) delete blocks[recent.shift()];
    }
    return blocks[n].then(function (bytes) {
      if (!(where[1] >= 0 && where[2] >= where[1] && where[2] <= bytes.length)) throw new Error("its piece is not in its block");
      return utf8.decode(bytes.subarray(where[1], where[2]));
    });
  }
  var parsed = {};
  function trajectoryOf(t) {
    if (t.traj === null) return Promise.resolve({ data: null, problem: t.trajProblem === "too big" ? "too big to embed; open trajectory.json" : "trajectory.json not found" });
    var key = t.traj.join(",");
    if (!parsed.hasOwnProperty(key)) {
      parsed[key] = piece(t.traj).then(function (text) {
        try { return { data: obj(JSON.parse(text)), problem: "" }; }
        catch (e) { return { data: null, problem: "trajectory.json is not valid JSON" }; }
      });
    }
    return parsed[key];
  }
  /* A task's detail: its whole record (normalised as its row is) and its trajectory. Once read, it
     is kept (in ``ready``), and drawn again without waiting. */
  var loading = {}, ready = {};
  function detailOf(t) {
    if (!loading.hasOwnProperty(t.key)) {
      loading[t.key] = piece(list(t.at)).then(function (text) {
        var parts = list(JSON.parse(text));
        var full = normalize(obj(parts[0]), t.key, parts[1]);
        return trajectoryOf(full).then(function (traj) { return { t: full, traj: traj }; });
      }).catch(function (e) {
        return { t: t, traj: { data: null, problem: "this task's detail could not be read (" + (e && e.message || e) + ")" } };
      }).then(function (detail) { ready[t.key] = detail; return detail; });
    }
    return loading[t.key];
  }
  function stepsOf(traj) {
    return list(traj.steps).filter(function (s) { return s && typeof s === "object"; }).map(function (s, i) {
      var action = obj(s.action);
      return { index: num(s.index) === null ? i : s.index, label: str(s.label || action.type || "(no action)"),
               reasoning: str(s.reasoning), shot: safeRel(s.screenshot_path), seconds: num(s.seconds) };
    });
  }

  /* ---- header, metrics, notes ------------------------------------------------------------ */
  function renderHeader() {
    var run = DATA.run;
    $("run-name").textContent = run.name;
    /* The player the run recorded (a benchmark's own arms or end states) stands for the --agent agent,
       which played nothing then. */
    var items = [run.player ? ["player", run.player] : ["agent", run.agent], ["model", run.model], ["benchmarks", run.benchmarks.join(", ")],
                 ["started", run.created_at], ["took", run.elapsed], ["max steps", run.max_steps]];
    if (!run.finished) items.push(["state", "no summary.json (interrupted or still running)"]);
    items.forEach(function (item) {
      if (item[1] === null || item[1] === undefined || item[1] === "") return;
      add($("run-meta"), add(el("span", "meta-item"), el("span", "meta-key", item[0]), el("span", "meta-val", item[1])));
    });
  }
  function card(label, value, sub, cls, meter) {
    var box = add(el("div", "card" + (cls ? " " + cls : "")), el("div", "card-label", label), el("div", "card-value", value), el("div", "card-sub", sub));
    if (meter !== null && meter !== undefined) {
      var bar = el("span", "fill");
      bar.style.width = Math.round(meter * 100) + "%";
      add(box, add(el("div", "meter"), bar));
    }
    return box;
  }
  function renderMetrics() {
    /* Failed and Errors count what pytest's terminal line counts: an agent error is a failure. */
    var m = DATA.metrics, errs = [], fails = [];
    if (m.infrastructure) errs.push(m.infrastructure + " infra");
    if (m.evaluation) errs.push(m.evaluation + " eval");
    if (m.other_errors) errs.push(m.other_errors + " other");
    if (m.agent_failed) fails.push(plural(m.agent_failed, "agent error"));
    if (m.failed - m.agent_failed) fails.push((m.failed - m.agent_failed) + " by the checker");
    var box = $("metrics");
    add(box,
      card("Success rate", m.success_rate, m.success_count + " of " + m.outcomes + " passed \u00b7 outcomes only", "hero", m.rate),
      card("Avg score", m.avg_score, "outcomes only"),
      card("Attempts", m.attempts, "avg " + m.avg_time + " each"),
      card("Outcomes", m.outcomes, m.not_evaluated ? m.not_evaluated + " not evaluated" : "scored by the checker"),
      card("Failed", m.failed, fails.length ? fails.join(" \u00b7 ") : "none", "c-failed"),
      card("Errors", m.errors, errs.length ? errs.join(" \u00b7 ") : "none", "c-errors"),
      card("Avg steps", m.avg_steps, "all attempts"));
    if (m.cost) add(box, card("Cost", m.cost, "total"));
    var st = DATA.statistics;
    if (st) {
      add(box, card("95% interval", st.ci95, "success rate \u00b7 " + st.method));
      if (st.k && st.k !== "1") add(box, card("pass^" + st.k, st.pass_hat, "pass@" + st.k + " " + st.pass_at + " \u00b7 all " + st.k + " trials pass"));
      if (st.flip_rate) add(box, card("Flip rate", st.flip_rate, st.flipped + " task(s) with both verdicts"));
    }
  }
  function renderChips() {
    var counts = {};
    TASKS.forEach(function (t) { counts[t.status] = (counts[t.status] || 0) + 1; });
    Object.keys(counts).sort(function (a, b) { return (RANK.hasOwnProperty(a) ? RANK[a] : 9) - (RANK.hasOwnProperty(b) ? RANK[b] : 9); }).forEach(function (status) {
      var chip = add(el("button", "chip"), el("span", "dot s-" + status), status, " ", el("b", null, counts[status]));
      chip.type = "button";
      chip.dataset.status = status;
      chip.title = "Show only " + status + " tasks";
      chip.addEventListener("click", function () {
        state.status = state.status === status ? "" : status;
        $("f-status").value = state.status;
        update();
      });
      add($("chips"), chip);
    });
  }
  function renderNotes() {
    if (!DATA.notes.length) return;
    DATA.notes.forEach(function (note) { add($("notes"), el("p", null, note)); });
    $("notes").hidden = false;
  }
  /* --bench-compare's comparison.json: its lines, the comparison page, and the tasks that changed. */
  function renderComparison() {
    var c = DATA.comparison;
    if (!c) return;
    var box = $("comparison"), verdict = str(c.verdict);
    add(box, add(el("p", "comparison-title"), "Compared with ", el("b", null, str(c.before_run)), ": ",
                 el("span", "v-" + verdict.replace(/ /g, "-"), verdict)));
    list(c.lines).forEach(function (line) { add(box, el("p", null, str(line))); });
    var changed = list(c.changed);
    if (changed.length) {
      var p = add(el("p"), "Changed: ");
      changed.forEach(function (t, i) {
        var a = el("a", "c-" + str(t.status), str(t.task_id));
        a.href = "#" + encodeURIComponent(str(t.anchor));
        a.title = str(t.status);
        add(p, i ? ", " : null, a);
      });
      if (c.more) add(p, " (+" + c.more + " more)");
      add(box, p);
    }
    var page = safeRel(c.page);
    if (page) {
      var open = el("a", null, "Open the comparison page");
      open.href = fileUrl(page);
      open.id = "comparison-page";
      add(box, add(el("p"), open, ": every task, with its scores and reasons in both runs and links to both viewers"));
    }
    box.hidden = false;
  }
  function renderDomains() {
    var rows = DATA.by_domain;
    if (rows.length < 2) return;
    var table = el("table"), head = el("tr"), body = el("tbody");
    ["Domain", "Attempts", "Outcomes", "Passed", "Success", "Avg score", "Failed", "Errors"].forEach(function (h, i) {
      add(head, el("th", i ? "num" : null, h));
    });
    rows.forEach(function (r) {
      add(body, add(el("tr"), el("td", null, r.domain), el("td", "num", r.attempts), el("td", "num", r.outcomes),
        el("td", "num", r.success_count), el("td", "num", r.success_rate), el("td", "num", r.avg_score), el("td", "num", r.failed),
        el("td", "num", r.errors)));
    });
    add(table, add(el("thead"), head), body);
    add($("domains"), table);
    $("domains").querySelector("summary").textContent = "By domain (" + rows.length + ")";
    $("domains").hidden = false;
  }

  /* ---- filters and sorting ---------------------------------------------------------------- */
  function fillSelect(id, key, label) {
    var select = $(id), seen = {};
    TASKS.forEach(function (t) { seen[t[key]] = (seen[t[key]] || 0) + 1; });
    var values = Object.keys(seen).sort();
    var all = el("option", null, "All " + label);
    all.value = "";
    add(select, all);
    values.forEach(function (v) { var o = el("option", null, v + " (" + seen[v] + ")"); o.value = v; add(select, o); });
    if (values.length < 2 && key !== "status") select.hidden = true;
    select.addEventListener("change", function () { state[key] = select.value; update(); });
  }
  function matches(t) {
    if (state.status && t.status !== state.status) return false;
    if (state.benchmark && t.benchmark !== state.benchmark) return false;
    if (state.domain && t.domain !== state.domain) return false;
    if (!state.q) return true;
    if (!t.hay) t.hay = [t.task_id, t.benchmark, t.domain, t.status, t.why, t.reason, t.error, t.nodeid].join("\n").toLowerCase();
    return t.hay.indexOf(state.q) !== -1;
  }
  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });
  var KEYS = {
    status: function (t) { return RANK.hasOwnProperty(t.status) ? RANK[t.status] : 9; },
    benchmark: function (t) { return t.benchmark; },
    domain: function (t) { return t.domain; },
    task_id: function (t) { return t.task_id; },
    score: function (t) { return t.outcome ? t.score : null; },
    num_steps: function (t) { return t.num_steps; },
    reason: function (t) { return t.why; }
  };
  /* The rows in the chosen order. Each row's sort key is read once, not once per comparison:
     20,000 rows take some 300,000 comparisons. Without a sort the rows keep the run's order. */
  function ordered(rows) {
    if (!state.sort) return rows;
    var f = KEYS[state.sort];
    var keyed = rows.map(function (t) { return { t: t, k: f(t) }; });
    keyed.sort(function (a, b) {
      var x = a.k, y = b.k;
      if (x === null && y === null) return a.t.key - b.t.key;
      if (x === null) return 1;  /* unscored rows last, whichever way */
      if (y === null) return -1;
      var c = typeof x === "number" ? x - y : collator.compare(x, y);
      return c ? c * state.dir : a.t.key - b.t.key;
    });
    return keyed.map(function (e) { return e.t; });
  }
  function bindSorting() {
    Array.prototype.forEach.call(document.querySelectorAll("#tasks thead th[data-key]"), function (th) {
      var button = el("button", null, th.textContent);
      button.type = "button";
      button.title = "Sort by " + th.textContent.toLowerCase();
      th.textContent = "";
      add(th, button);
      button.addEventListener("click", function () {
        var key = th.dataset.key;
        if (state.sort === key) state.dir = -state.dir;
        else { state.sort = key; state.dir = (key === "score" || key === "num_steps") ? -1 : 1; }
        Array.prototype.forEach.call(document.querySelectorAll("#tasks thead th"), function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
        update();
      });
    });
  }

  /* ---- the task table --------------------------------------------------------------------- */
  function row(t) {
    var tr = el("tr", "row" + (state.open[t.key] ? " open" : ""));
    tr.dataset.key = t.key;
    var toggle = el("button", "toggle", t.task_id);
    toggle.type = "button";
    toggle.setAttribute("aria-expanded", state.open[t.key] ? "true" : "false");
    var score = el("td", "num score", scoreText(t));
    if (!t.outcome) { score.classList.add("muted"); score.title = "not scored: left out of the success rate"; }
    else if (t.score !== null) {
      var fill = el("span", "fill");
      fill.style.width = Math.round(Math.max(0, Math.min(1, t.score)) * 100) + "%";
      score.insertBefore(add(el("span", "scorebar"), fill), score.firstChild);
    }
    var steps = el("td", "num steps", t.num_steps);
    if (t.step_limit) add(steps, el("span", "muted", " / " + t.step_limit));
    var reason = el("td", "reason", t.why);
    reason.title = reasonTitle(t);
    add(tr, add(el("td", "status"), badge(t.status)), el("td", "bench", t.benchmark), el("td", "domain", t.domain),
        add(el("td", "task"), toggle), score, steps, reason);
    tr.addEventListener("click", function () {
      if (String(window.getSelection()).length) return;  /* selecting text is not a click */
      toggleTask(t);
    });
    return tr;
  }
  /* Only one page of rows is drawn: a 20,000-task run drew (and redrew on every click) 20,000 rows.
     Filters and sorting work on TASKS, the drawn rows follow; opening a task adds its detail row in
     place, and nothing else is redrawn. */
  var PAGE = 100;
  var view = { shown: [], page: 0 };
  function pages() { return Math.max(1, Math.ceil(view.shown.length / PAGE)); }
  function update() {
    view.shown = ordered(TASKS.filter(matches));
    view.page = 0;
    var total = plural(TASKS.length, "task");
    $("count").textContent = view.shown.length === TASKS.length ? total : view.shown.length + " of " + total;
    Array.prototype.forEach.call(document.querySelectorAll(".chip"), function (chip) {
      chip.classList.toggle("on", chip.dataset.status === state.status);
    });
    draw();
  }
  function draw() {
    var body = $("task-rows"), first = view.page * PAGE, rows = view.shown.slice(first, first + PAGE);
    var fragment = document.createDocumentFragment();
    rows.forEach(function (t) {
      add(fragment, row(t));
      if (state.open[t.key]) add(fragment, detailRow(t));
    });
    if (!rows.length) {
      var td = el("td", "empty", TASKS.length ? "No tasks match these filters." : "No results in this run yet.");
      td.colSpan = 7;
      add(fragment, add(el("tr"), td));
    }
    body.textContent = "";
    body.appendChild(fragment);
    var pager = $("pager"), many = view.shown.length > PAGE;
    pager.hidden = !many;
    if (many) {
      $("pg-pos").textContent = "rows " + (first + 1) + "\u2013" + (first + rows.length) + " of " + view.shown.length +
        " \u00b7 page " + (view.page + 1) + " of " + pages();
      $("pg-prev").disabled = $("pg-first").disabled = view.page === 0;
      $("pg-next").disabled = $("pg-last").disabled = view.page >= pages() - 1;
    }
  }
  function turn(page) {
    view.page = Math.max(0, Math.min(pages() - 1, page));
    draw();
    $("tasks").scrollIntoView({ block: "start" });
  }
  function bindPager() {
    $("pg-first").addEventListener("click", function () { turn(0); });
    $("pg-prev").addEventListener("click", function () { turn(view.page - 1); });
    $("pg-next").addEventListener("click", function () { turn(view.page + 1); });
    $("pg-last").addEventListener("click", function () { turn(pages() - 1); });
  }
  /* The row of a task drawn on this page, or null. */
  function drawnRow(t) { return document.querySelector('tr.row[data-key="' + t.key + '"]'); }
  /* Open or close one task's row where it is: its detail row is added or removed, nothing redrawn. */
  function setOpen(t, open) {
    state.open[t.key] = open;
    var tr = drawnRow(t);
    if (!tr) return;
    tr.classList.toggle("open", open);
    tr.querySelector(".toggle").setAttribute("aria-expanded", open ? "true" : "false");
    var next = tr.nextElementSibling, has = !!next && next.classList.contains("detail");
    if (open && !has) tr.parentNode.insertBefore(detailRow(t), next);
    else if (!open && has) next.parentNode.removeChild(next);
  }
  function toggleTask(t, fromHash) {
    setOpen(t, !state.open[t.key]);
    if (fromHash) return;
    try {
      history.replaceState(null, "", state.open[t.key] ? "#" + encodeURIComponent(anchor(t)) : location.pathname + location.search);
    } catch (e) { /* some browsers refuse history changes on file:// pages */ }
  }

  /* ---- one task's detail ------------------------------------------------------------------ */
  function section(title) { return add(el("div", "section"), el("div", "section-title", title)); }
  function image(path, caption, shots) {
    var position = shots.length;
    shots.push({ path: path, caption: caption });
    var img = el("img");
    img.loading = "lazy";
    img.alt = caption;
    img.src = fileUrl(path);
    img.addEventListener("error", function () {
      if (img.parentNode) img.parentNode.replaceChild(el("div", "gone", "screenshot not found: " + path), img);
    });
    var button = add(el("button", "shot"), img);
    button.type = "button";
    button.title = "Enlarge " + caption;
    button.addEventListener("click", function (event) { event.stopPropagation(); openLightbox(shots, position); });
    return button;
  }
  function link(path, text) {
    var a = el("a", null, text);
    a.href = fileUrl(path);
    a.target = "_blank";
    a.rel = "noopener";
    return a;
  }
  function facts(t, traj) {
    var box = el("div", "facts");
    if (t.nodeid) add(box, add(el("span"), "node ", el("code", null, t.nodeid)));
    if (t.seconds !== null) add(box, el("span", null, "time " + secs(t.seconds)));
    if (t.cost) add(box, el("span", null, "cost $" + t.cost.toFixed(4)));
    var message = str(traj.data && traj.data.message);
    if (message && !t.reason && !t.error) add(box, el("span", null, message.split("\n")[0]));
    if (t.trajectory && t.trajProblem !== "missing") add(box, link(t.trajectory, "trajectory.json"));
    if (traj.problem) add(box, el("span", "warn", traj.problem));
    return box;
  }
  function criteriaTable(items) {
    var rows = items.filter(function (c) { return c && typeof c === "object"; }).map(function (c) {
      return { name: str(c.name) || "(unnamed)", passed: typeof c.passed === "boolean" ? c.passed : null,
               detail: str(c.detail), expected: valueText(c.expected), actual: valueText(c.actual) };
    });
    var cols = [["detail", "Detail", null], ["expected", "Expected", "val"], ["actual", "Actual", "val"]].filter(function (col) {
      return rows.some(function (c) { return c[col[0]] !== ""; });  /* drop all-empty columns */
    });
    var table = el("table", "criteria"), head = add(el("tr"), el("th"), el("th", null, "Criterion")), body = el("tbody");
    cols.forEach(function (col) { add(head, el("th", null, col[1])); });
    rows.forEach(function (c) {
      var mark = c.passed === true ? ["\u2713", "mark-pass", "passed"] : c.passed === false ? ["\u2717", "mark-fail", "failed"] : ["\u2013", "mark-na", "not evaluated"];
      var cell = el("td", mark[1], mark[0]);
      cell.title = mark[2];
      var tr = add(el("tr"), cell, el("td", null, c.name));
      cols.forEach(function (col) { add(tr, el("td", col[2], c[col[0]])); });
      add(body, tr);
    });
    return add(table, add(el("thead"), head), body);
  }
  function stepItem(s, shots) {
    var li = el("li", "step" + (s.shot ? "" : " noshot"));
    if (s.shot) add(li, image(s.shot, "step " + s.index + ": " + s.label, shots));
    var head = add(el("div", "step-head"), el("span", "step-no", "STEP " + s.index), el("span", "action", s.label),
      s.seconds !== null ? el("span", "step-time", secs(s.seconds)) : null);
    return add(li, add(el("div"), head,
      s.reasoning ? el("p", "reasoning", s.reasoning) : el("p", "reasoning none", "no reasoning recorded")));
  }
  function renderDetail(t, traj) {
    var data = traj.data || {}, shots = [];
    var steps = stepsOf(data), task = obj(data.task), verdict = obj(data.verdict);
    var final = safeRel(data.final_screenshot) || t.screenshots.filter(function (p) { return /(^|\/)final\.png$/.test(p); })[0] || null;
    var claimed = {};
    steps.forEach(function (s) { if (s.shot) claimed[s.shot] = true; });
    if (final) claimed[final] = true;
    var loose = t.screenshots.filter(function (p) { return !claimed[p]; });
    var criteria = t.criteria || list(verdict.criteria);
    var body = el("div", "detail-body");
    add(body, facts(t, traj));
    if (str(task.instruction)) add(body, add(section("Instruction"), el("div", "box", str(task.instruction))));
    if (t.error) add(body, add(section("Error" + (t.error_type ? " (" + t.error_type + ")" : "")), el("pre", "box error pre", t.error)));
    if (t.reason && t.reason !== t.error) add(body, add(section("Verdict"), el("div", "box", t.reason)));
    if (criteria.length) add(body, add(section("Criteria"), criteriaTable(criteria)));
    if (traj.data) {
      var trail = section("Trajectory \u00b7 " + plural(steps.length, "action"));
      if (steps.length) {
        var ol = el("ol", "steps");
        steps.forEach(function (s) { add(ol, stepItem(s, shots)); });
        add(trail, ol);
      } else add(trail, el("div", "muted", "The agent took no actions."));
      add(body, trail);
    }
    if (loose.length) {
      var grid = el("ol", "steps");
      loose.forEach(function (p) { add(grid, add(el("li", "step"), image(p, p.split("/").pop(), shots))); });
      add(body, add(section("Screenshots"), grid));
    }
    if (final) add(body, add(section("Final screen"), add(el("div", "final"), image(final, "final screen", shots))));
    return body;
  }
  /* The detail row goes in at once; its content when the task's detail is unpacked (at once when
     it was before). */
  function detailRow(t) {
    var td = el("td");
    td.colSpan = 7;
    var tr = add(el("tr", "detail"), td);
    tr.dataset.key = t.key;
    function fill(detail) { td.textContent = ""; add(td, renderDetail(detail.t, detail.traj)); }
    if (ready.hasOwnProperty(t.key)) fill(ready[t.key]);
    else {
      add(td, el("div", "loading muted", "Reading the task…"));
      detailOf(t).then(fill);
    }
    return tr;
  }

  /* ---- screenshot lightbox ---------------------------------------------------------------- */
  function openLightbox(shots, index) {
    gallery.shots = shots;
    showShot(index);
    $("lightbox").hidden = false;
    $("lb-close").focus();
  }
  function showShot(index) {
    var n = gallery.shots.length;
    gallery.index = (index + n) % n;
    var shot = gallery.shots[gallery.index];
    $("lb-img").src = fileUrl(shot.path);
    $("lb-img").alt = shot.caption;
    $("lb-caption").textContent = shot.caption;
    $("lb-pos").textContent = (gallery.index + 1) + " / " + n;
  }
  function closeLightbox() { $("lightbox").hidden = true; $("lb-img").removeAttribute("src"); }
  function bindLightbox() {
    $("lb-close").addEventListener("click", closeLightbox);
    $("lb-prev").addEventListener("click", function () { showShot(gallery.index - 1); });
    $("lb-next").addEventListener("click", function () { showShot(gallery.index + 1); });
    $("lightbox").addEventListener("click", function (e) { if (e.target === $("lightbox")) closeLightbox(); });
    document.addEventListener("keydown", function (e) {
      if ($("lightbox").hidden) return;
      if (e.key === "Escape") closeLightbox();
      else if (e.key === "ArrowLeft") showShot(gallery.index - 1);
      else if (e.key === "ArrowRight") showShot(gallery.index + 1);
    });
  }

  /* ---- start ------------------------------------------------------------------------------ */
  /* A link to a task opens its row: "#bench/task" (with trials, "#bench/task::trial-N" one trial, and
     "#bench/task" every trial of it, as the comparison page links it). */
  function openFromHash() {
    var wanted;
    try { wanted = decodeURIComponent(location.hash.slice(1)); } catch (e) { return; }
    if (!wanted) return;
    var hits = TASKS.filter(function (t) { return anchor(t) === wanted; });
    if (!hits.length) hits = TASKS.filter(function (t) { return t.benchmark + "/" + t.base === wanted; });
    if (!hits.length) return;
    /* The linked task is shown even where the filters hid it, on its own page. */
    if (view.shown.indexOf(hits[0]) === -1) {
      state.q = state.status = state.benchmark = state.domain = "";
      ["f-search", "f-status", "f-benchmark", "f-domain"].forEach(function (id) { $(id).value = ""; });
      update();
    }
    var page = Math.floor(view.shown.indexOf(hits[0]) / PAGE);
    hits.forEach(function (t) { state.open[t.key] = true; });
    if (page !== view.page) { view.page = page; draw(); }
    else hits.forEach(function (t) { setOpen(t, true); });
    var tr = drawnRow(hits[0]);
    if (tr) tr.scrollIntoView({ block: "start" });
  }
  function start(rows) {
    TASKS = tasksOf(rows);
    renderChips();
    fillSelect("f-status", "status", "statuses");
    fillSelect("f-benchmark", "benchmark", "benchmarks");
    fillSelect("f-domain", "domain", "domains");
    $("f-search").addEventListener("input", function (e) { state.q = e.target.value.trim().toLowerCase(); update(); });
    bindSorting();
    bindPager();
    update();
    openFromHash();
    window.addEventListener("hashchange", openFromHash);
  }
  renderHeader();
  renderMetrics();
  renderNotes();
  renderComparison();
  renderDomains();
  bindLightbox();
  /* The table's rows are packed too: the run's facts above are drawn while they unpack. */
  unpack("run-rows").then(function (bytes) { return JSON.parse(utf8.decode(bytes)); }).then(start, function (e) {
    add($("notes"), el("p", "warn", "The task table could not be read: " + (e && e.message || e)));
    $("notes").hidden = false;
    start({});
  });
})();
