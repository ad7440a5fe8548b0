// The flow page, "where is my commit": the sources with their artifacts, what reads each, the
// gates on the edges, what each consumer applied and what waits and why. It fetches api/flow on
// every change the server announces on api/flow/events, and redraws. Every value from the
// cluster goes into the page as text (textContent, SVG text, setAttribute of data-*, title and
// aria-label), never as HTML. This file holds the page's state, filters, selection, redraw and
// wiring; flow-graph.js, flow-table.js, flow-actions.js and flow-details.js draw its parts.
"use strict";

const svgNS = "http://www.w3.org/2000/svg";

// The graph's geometry, in pixels. Text is cut by character count to fit, never measured: a
// layout read per node would make thousands of nodes slow.
const geo = { bandRows: 25, nodeW: 240, nodeH: 72, colGap: 150, rowGap: 16, pad: 16, pillH: 18, leafW: 230, leafH: 20 };

const states = ["ready", "waiting", "failing", "suspended", "progressing", "unknown"];
const gateStates = ["opened", "closed", "unknown"];

// ---- Helpers -------------------------------------------------------------------------------

// svg makes an SVG element with attributes and text.
function svg(tag, attrs, text) {
  const e = document.createElementNS(svgNS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

// cut shortens s to n characters with an ellipsis.
function cut(s, n) {
  s = String(s || "");
  return s.length > n ? s.slice(0, n - 1) + "…" : s;
}

// cutLeft keeps the end of s, where a URL says which repository it is.
function cutLeft(s, n) {
  s = String(s || "");
  return s.length > n ? "…" + s.slice(s.length - n + 1) : s;
}

// shortRev shortens the hashes in a revision: "main@sha1:<40 hex>" reads "main@sha1:4f2c1ab".
function shortRev(rev) {
  return String(rev || "").replace(/(sha1|sha256|sha512|blake3):([0-9a-f]{7})[0-9a-f]{8,}/g, "$1:$2");
}

function humanSize(bytes) {
  if (!bytes) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = bytes, u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return `${u === 0 ? v : v.toFixed(1)} ${units[u]} (${bytes} bytes)`;
}

// ago says how long before the server's now a time was, to read beside the RFC 3339 time.
function ago(time) {
  const t = Date.parse(time), now = Date.parse(flow && flow.now);
  if (isNaN(t) || isNaN(now)) return time || "";
  const s = Math.round((now - t) / 1000);
  if (s < 0) return time;
  const span = s < 90 ? `${s}s` : s < 5400 ? `${Math.round(s / 60)}m` : s < 129600 ? `${Math.round(s / 3600)}h` : `${Math.round(s / 86400)}d`;
  return `${time} (${span} ago)`;
}

// known keeps a server word that becomes a class to the words the CSS knows.
function known(word, words) {
  return words.includes(word) ? word : "unknown";
}

// ---- What the page remembers across redraws -------------------------------------------------

let flow = null;  // the last good answer of api/flow
let index = null; // lookups built from it (buildIndex)

// ui is the view, the filters and the selection: the URL's hash says the same, so that a link
// reproduces the view. A gate is selected with the consumer whose edge it was clicked on (via),
// whose waiting revision an approval names.
const ui = { view: "graph", ns: "", kind: "", state: "", q: "", node: "", gate: "", via: "" };
const hashKeys = Object.keys(ui);

// What the viewer typed and the answers to their actions, by gate or object: the page is redrawn
// on every change and must not lose either.
const reasons = {};
const durations = {};
const answers = {};
const histories = {};          // history query → {data} or {error}
const historyLoading = new Set();

function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  for (const k of hashKeys) ui[k] = p.get(k) || "";
  if (ui.view !== "table") ui.view = "graph";
  if (!states.includes(ui.state)) ui.state = "";
}

function writeHash() {
  const p = new URLSearchParams();
  for (const k of hashKeys) {
    if (ui[k] && !(k === "view" && ui[k] === "graph")) p.set(k, ui[k]);
  }
  const h = p.toString();
  window.history.replaceState(null, "", h ? `#${h}` : location.pathname + location.search);
}

// ---- The data's lookups ---------------------------------------------------------------------

// placeholder stands for an edge's end that is not among the nodes: an input that is missing, or
// that the viewer cannot read. It is drawn, so that the consumer shows what it waits for.
function placeholder(id) {
  const parts = id.split("/");
  const upstream = parts[0] === "Upstream";
  return {
    id, kind: parts[0], namespace: upstream ? "" : parts[1] || "", name: parts.slice(upstream ? 1 : 2).join("/"),
    upstream, missing: true, status: "unknown",
    message: "Not in the flow: missing, or not readable with your credentials.",
  };
}

function buildIndex(state) {
  const nodes = new Map();
  for (const n of state.nodes || []) nodes.set(n.id, n);
  const edges = (state.edges || []).filter((e) => e && e.from && e.to);
  for (const e of edges) {
    for (const id of [e.from, e.to]) if (!nodes.has(id)) nodes.set(id, placeholder(id));
  }
  const ins = new Map(), outs = new Map();
  const push = (m, k, v) => { if (!m.has(k)) m.set(k, []); m.get(k).push(v); };
  for (const e of edges) {
    push(ins, e.to, e);
    push(outs, e.from, e);
  }
  const gates = new Map();
  for (const g of state.gates || []) gates.set(g.id || `${g.namespace}/${g.name}`, g);
  // Gates named on edges but not listed (not readable) still get a details panel.
  for (const e of edges) {
    for (const g of e.gates || []) {
      const id = `${g.namespace}/${g.name}`;
      if (!gates.has(id)) gates.set(id, { id, namespace: g.namespace, name: g.name, state: g.state });
    }
  }
  const idx = { nodes, edges, ins, outs, gates, text: new Map() };
  for (const n of nodes.values()) idx.text.set(n.id, searchText(n, idx));
  return idx;
}

// gatesOf are the gates an object waits on: its own list when the server gives one, else those
// of its incoming edges, each once.
function gatesOf(n, idx) {
  const seen = new Map();
  const lists = n.gates ? [n.gates] : (idx.ins.get(n.id) || []).map((e) => e.gates || []);
  for (const list of lists) for (const g of list) seen.set(`${g.namespace}/${g.name}`, g);
  return [...seen.values()];
}

// searchText is what the free-text filter looks in, lower-cased once per redraw.
function searchText(n, idx) {
  const gates = gatesOf(n, idx).map((g) => `${g.namespace}/${g.name}`);
  return [n.id, n.revision, n.waitingRevision, n.message, n.why, n.url, ...gates].join("\n").toLowerCase();
}

// ---- Filters ----------------------------------------------------------------------------------

function filtering() {
  return Boolean(ui.ns || ui.kind || ui.state || ui.q);
}

// matches says whether an object passes the filters. Upstream URLs have no namespace, kind or
// state: they match only the text, and are drawn besides when they feed an object shown.
function matches(n) {
  if (n.upstream && (ui.ns || ui.kind || ui.state)) return false;
  if (ui.ns && n.namespace !== ui.ns) return false;
  if (ui.kind && n.kind !== ui.kind) return false;
  if (ui.state && n.status !== ui.state) return false;
  return !ui.q || index.text.get(n.id).includes(ui.q.toLowerCase());
}

// shownNodes are the graph's objects: those that match, and the upstream URLs they read.
function shownNodes() {
  const shown = new Set();
  for (const n of index.nodes.values()) if (matches(n)) shown.add(n.id);
  if (filtering()) {
    for (const id of [...shown]) {
      for (const e of index.ins.get(id) || []) {
        if (index.nodes.get(e.from).upstream) shown.add(e.from);
      }
    }
  }
  return shown;
}

// fillSelect gives a filter its options, keeping the one chosen even when no object has it now.
// It leaves the element alone when the options are the same, not to close it under the pointer.
function fillSelect(select, values, chosen, allLabel) {
  if (chosen && !values.includes(chosen)) values = [...values, chosen].sort();
  const key = values.join("\n");
  if (select.dataset.options !== key) {
    select.replaceChildren(el("option", "", allLabel), ...values.map((v) => el("option", "", v)));
    select.options[0].value = "";
    select.dataset.options = key;
  }
  select.value = chosen;
}

function syncToolbar() {
  const ns = new Set(), kinds = new Set();
  if (index) {
    for (const n of index.nodes.values()) {
      if (n.upstream) continue;
      if (n.namespace) ns.add(n.namespace);
      kinds.add(n.kind);
    }
  }
  fillSelect(document.getElementById("filter-ns"), [...ns].sort(), ui.ns, "All namespaces");
  fillSelect(document.getElementById("filter-kind"), [...kinds].sort(), ui.kind, "All kinds");
  document.getElementById("filter-state").value = ui.state;
  // Not the text being typed: it reaches ui.q when typing pauses.
  const q = document.getElementById("filter-q");
  if (q.value !== ui.q && document.activeElement !== q) q.value = ui.q;
  for (const b of document.querySelectorAll("[data-view]")) {
    b.setAttribute("aria-pressed", String(b.dataset.view === ui.view));
  }
  document.getElementById("graph-view").hidden = ui.view !== "graph";
  document.getElementById("table-view").hidden = ui.view !== "table";
}

// ---- Selection ------------------------------------------------------------------------------

// markSelection highlights the selected object or gate, and the edges of the selected object.
function markSelection() {
  for (const e of document.querySelectorAll("#graph .selected, #table .selected")) e.classList.remove("selected");
  for (const e of document.querySelectorAll("#graph .lit")) e.classList.remove("lit");
  const sel = ui.node ? document.querySelectorAll(`#graph [data-id="${CSS.escape(ui.node)}"], #table [data-id="${CSS.escape(ui.node)}"]`) :
    ui.gate ? document.querySelectorAll(`[data-gate="${CSS.escape(ui.gate)}"]`) : [];
  for (const e of sel) e.classList.add("selected");
  if (ui.node) {
    for (const { e, path } of drawn.edges) if (e.from === ui.node || e.to === ui.node) path.classList.add("lit");
  }
  drawLeaves();
}

function select(sel) {
  ui.node = sel.node || "";
  ui.gate = sel.gate || "";
  ui.via = sel.via || "";
  writeHash();
  markSelection();
  const details = document.getElementById("details");
  details.scrollTop = 0;
  renderDetails();
  loadHistory();
}

// ---- Redraw, keeping what the viewer is doing -----------------------------------------------

// keep notes the focus, the text selection in a box and the scroll positions, which a redraw
// would lose, and gives a function that restores them.
function keep() {
  const a = document.activeElement;
  const wrap = document.getElementById("graph-view"), rows = document.getElementById("table-view");
  const details = document.getElementById("details");
  const scroll = [wrap.scrollLeft, wrap.scrollTop, rows.scrollLeft, rows.scrollTop, details.scrollTop, window.scrollX, window.scrollY];
  let find = null, range = null;
  if (a && a !== document.body && (a.closest("#details") || a.closest("main"))) {
    const d = a.dataset || {};
    const same = (sel, test) => () => [...document.querySelectorAll(sel)].find(test);
    if (d.field) {
      find = same("#details input[data-field]", (e) => e.dataset.field === d.field && e.dataset.key === d.key);
      range = [a.selectionStart, a.selectionEnd];
    } else if (d.gate) {
      find = same("main [data-gate]", (e) => e.dataset.gate === d.gate && e.dataset.via === d.via);
    } else if (d.id) {
      find = same("main [data-id]", (e) => e.dataset.id === d.id);
    } else if (d.action) {
      // The same button of the same object or gate, in the same part of the page.
      const where = a.closest("#details") ? "#details" : "main";
      const key = a.closest("[data-key]").dataset.key;
      find = same(`${where} [data-action]`, (e) => e.dataset.action === d.action && e.closest("[data-key]").dataset.key === key);
    } else if (d.goto) {
      find = same("#details [data-goto]", (e) => e.dataset.goto === d.goto);
    }
  }
  return () => {
    const e = find && find();
    if (e) {
      e.focus({ preventScroll: true });
      if (range && e.setSelectionRange) e.setSelectionRange(range[0], range[1]);
    }
    [wrap.scrollLeft, wrap.scrollTop, rows.scrollLeft, rows.scrollTop, details.scrollTop] = scroll;
    window.scrollTo(scroll[5], scroll[6]);
  };
}

function render(state) {
  const restore = keep();
  flow = state;
  index = buildIndex(state);
  document.getElementById("scope").textContent = state.namespace ? `in ${state.namespace}` : "in all namespaces";
  document.getElementById("updated").textContent = `Updated ${state.now}.`;
  const skipped = document.getElementById("skipped");
  const list = state.skipped || [];
  skipped.replaceChildren();
  skipped.hidden = list.length === 0;
  if (!skipped.hidden) {
    const ul = el("ul", "");
    for (const s of list) ul.appendChild(el("li", "", `${s.kind}: ${s.reason}`));
    skipped.append(el("strong", "", "Not shown:"), ul);
  }
  drawView();
  renderDetails();
  restore();
}

function showError(text) {
  const error = document.getElementById("error");
  error.textContent = `Cannot refresh: ${text}`;
  error.hidden = false;
}

// refresh fetches the flow and redraws. Never more than one fetch runs: a change announced
// during one makes one more after it.
let fetching = false, again = false;
let streamError = ""; // what breaks the event stream, "" while it is up
async function refresh() {
  if (fetching) { again = true; return; }
  fetching = true;
  try {
    const res = await fetch("api/flow", { cache: "no-store" });
    // Served in a cluster, the page needs the caller's token first (as app.js).
    if (res.status === 401) {
      location.href = "signin.html?back=flow.html";
      return;
    }
    if (!res.ok) throw new Error(`${res.status} ${(await res.text()).trim()}`);
    const state = await res.json();
    // User Timing, so that a test can read how long the last redraw took.
    performance.clearMarks("flow-fetched");
    performance.clearMeasures("flow-render");
    performance.mark("flow-fetched");
    render(state);
    performance.measure("flow-render", "flow-fetched");
    // The data is fresh, but not live while the event stream is broken.
    if (streamError) showError(streamError);
    else document.getElementById("error").hidden = true;
    loadHistory();
  } catch (e) {
    // Keep the last good drawing, and say that it is stale.
    showError(e.message);
  } finally {
    fetching = false;
  }
  if (again) {
    again = false;
    refresh();
  }
}

// connect listens to the server's changes. EventSource reconnects by itself after a break; the
// server announces a change on each connection, which refetches. A stream the browser gave up on
// (an error status) the page opens again, after a pause that doubles each time, and fetches the
// flow meanwhile, whose error says why.
let retry = 5;
function connect() {
  const events = new EventSource("api/flow/events");
  events.addEventListener("open", () => { retry = 5; streamError = ""; });
  events.addEventListener("change", refresh);
  events.addEventListener("error", () => {
    if (events.readyState === EventSource.CLOSED) {
      streamError = `the server refused the page's event stream; trying again in ${retry} seconds.`;
      setTimeout(connect, retry * 1000);
      retry = Math.min(retry * 2, 60);
      refresh();
    } else {
      streamError = "lost the connection to the server; reconnecting…";
    }
    showError(streamError);
  });
}

// ---- Wiring ---------------------------------------------------------------------------------

// selectFrom selects the object or gate an event's target is part of; controls keep their own.
function selectFrom(target) {
  if (target.closest("button, input, select, a, #details")) return false;
  const gate = target.closest("[data-gate]");
  if (gate) { select({ gate: gate.dataset.gate, via: gate.dataset.via }); return true; }
  const node = target.closest("[data-id]");
  if (node) { select({ node: node.dataset.id }); return true; }
  return false;
}

function wire() {
  const main = document.querySelector("main");
  main.addEventListener("click", (ev) => selectFrom(ev.target));
  main.addEventListener("keydown", (ev) => {
    if ((ev.key === "Enter" || ev.key === " ") && ev.target.matches("[data-id], [data-gate]") && selectFrom(ev.target)) {
      ev.preventDefault();
    }
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && !ev.target.matches("input, select") && (ui.node || ui.gate)) select({});
  });
  for (const b of document.querySelectorAll("[data-view]")) {
    b.addEventListener("click", () => { ui.view = b.dataset.view; writeHash(); drawView(); });
  }
  const filter = (id, key) => {
    document.getElementById(id).addEventListener("change", (ev) => { ui[key] = ev.target.value; writeHash(); drawView(); });
  };
  filter("filter-ns", "ns");
  filter("filter-kind", "kind");
  filter("filter-state", "state");
  // The text filter redraws once typing pauses: a redraw of thousands of objects per key is slow.
  let typing = null;
  document.getElementById("filter-q").addEventListener("input", (ev) => {
    clearTimeout(typing);
    typing = setTimeout(() => { ui.q = ev.target.value; writeHash(); drawView(); }, 200);
  });
  // A link edited or followed by hand.
  window.addEventListener("hashchange", () => {
    readHash();
    drawView();
    renderDetails();
    loadHistory();
  });
}

readHash();
syncToolbar();
wire();
connect();
