// The flow page, "where is my commit": the sources with their artifacts, what reads each, the
// gates on the edges, what each consumer applied and what waits and why. It fetches api/flow on
// every change the server announces on api/flow/events, and redraws. Every value from the
// cluster goes into the page as text (textContent, SVG text, setAttribute of data-*, title and
// aria-label), never as HTML.
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

// ---- The graph ------------------------------------------------------------------------------

// columns places upstream URLs in column 0 and every other object one column right of its
// rightmost input (column 1 without one). A cycle's closing edge is not followed.
function columns(shown) {
  const col = new Map(), visiting = new Set();
  const colOf = (id) => {
    if (col.has(id)) return col.get(id);
    if (index.nodes.get(id).upstream) { col.set(id, 0); return 0; }
    visiting.add(id);
    let c = 1;
    for (const e of index.ins.get(id) || []) {
      if (shown.has(e.from) && !visiting.has(e.from)) c = Math.max(c, colOf(e.from) + 1);
    }
    visiting.delete(id);
    col.set(id, c);
    return c;
  };
  for (const id of shown) colOf(id);
  return col;
}

// layout gives each shown object its place. Rows keep edges short: a column is sorted by the
// mean row of each object's inputs, and an object goes at that row when it is free.
function layout(shown) {
  const col = columns(shown);
  const sparse = [];
  for (const [id, c] of col) (sparse[c] = sparse[c] || []).push(id);
  // Columns left empty by the filters close up.
  const byCol = sparse.filter(Boolean);
  byCol.forEach((ids, c) => { for (const id of ids) col.set(id, c); });
  const row = new Map();
  let rows = 0;
  for (const ids of byCol) {
    const want = new Map();
    for (const id of ids) {
      let sum = 0, count = 0;
      for (const e of index.ins.get(id) || []) {
        if (row.has(e.from)) { sum += row.get(e.from); count++; }
      }
      want.set(id, count ? sum / count : Infinity);
    }
    ids.sort((a, b) => want.get(a) - want.get(b) || (a < b ? -1 : a > b ? 1 : 0));
    let next = 0;
    for (const id of ids) {
      const w = want.get(id);
      const r = isFinite(w) ? Math.max(next, Math.round(w)) : next;
      row.set(id, r);
      next = r + 1;
    }
    rows = Math.max(rows, next);
  }
  const pos = new Map();
  for (const [id, c] of col) {
    pos.set(id, { x: geo.pad + c * (geo.nodeW + geo.colGap), y: geo.pad + row.get(id) * (geo.nodeH + geo.rowGap) });
  }
  return {
    pos,
    width: geo.pad * 2 + Math.max(0, byCol.length * (geo.nodeW + geo.colGap) - geo.colGap),
    height: geo.pad * 2 + Math.max(0, rows * (geo.nodeH + geo.rowGap) - geo.rowGap),
  };
}

// nodeLabel is what an object is called in one line: its namespace and name, or its URL.
function nodeLabel(n) {
  return n.upstream ? n.name : `${n.namespace}/${n.name}`;
}

// whyLine is the node's short second line: the revision that waits, or what fails.
function whyLine(n) {
  if (n.missing) return { cls: "failing", text: "not found" };
  if (n.status === "waiting") {
    return { cls: "waiting", text: n.waitingRevision ? cut(`waiting: ${shortRev(n.waitingRevision)}`, 36) : cut(n.why || "waiting", 36) };
  }
  if (n.status === "failing") return { cls: "failing", text: cut(n.why || n.message, 36) };
  if (n.status === "suspended") return { cls: "", text: "suspended" };
  return null;
}

// nodeTitle is an object's tooltip: what its drawing says, whole.
function nodeTitle(n) {
  const lines = [`${n.kind} ${nodeLabel(n)}`];
  if (!n.upstream) lines.push(`State: ${n.status}`);
  if (n.revision) lines.push(`Revision: ${n.revision}`);
  if (n.waitingRevision) lines.push(`Waiting: ${n.waitingRevision}`);
  if (n.inventoryCount > 0) lines.push(`Inventory: ${n.inventoryCount} objects`);
  if (n.why) lines.push(n.why);
  else if (n.message) lines.push(n.message);
  return lines.join("\n");
}

// nodeParts are an object's drawing and its lines of text, without words: nodeShape clones them,
// far faster than making each element and attribute anew for thousands of objects.
let nodeParts = null;
function nodePartsOf() {
  const w = geo.nodeW;
  const g = svg("g", { tabindex: "0", role: "button" });
  g.append(svg("rect", { class: "box", width: w, height: geo.nodeH, rx: 6 }),
    svg("rect", { class: "stripe", width: 5, height: geo.nodeH, rx: 2 }));
  return {
    g,
    title: svg("title", {}),
    kind: svg("text", { class: "kind", x: 12, y: 15 }),
    word: svg("text", { class: "word", x: w - 8, y: 15, "text-anchor": "end" }),
    name: svg("text", { class: "name", x: 12, y: 33 }),
    rev: svg("text", { class: "rev", x: 12, y: 50 }),
    inv: svg("text", { class: "inv", x: w - 8, y: 50, "text-anchor": "end" }),
    why: svg("text", { class: "why", x: 12, y: 66 }),
  };
}

// nodeShape draws an object: kind and state word, name, revision and inventory count, and why it
// waits or fails, cut to fit; its tooltip (a <title>) has them whole, and so its textContent too.
function nodeShape(n, p) {
  nodeParts = nodeParts || nodePartsOf();
  const g = nodeParts.g.cloneNode(true);
  const line = (part, text) => {
    const t = nodeParts[part].cloneNode(false);
    t.textContent = text;
    g.appendChild(t);
    return t;
  };
  const status = n.upstream ? "upstream" : known(n.status, states);
  g.setAttribute("class", `node ${status}${n.missing ? " missing" : ""}`);
  g.setAttribute("transform", `translate(${p.x},${p.y})`);
  g.setAttribute("data-id", n.id);
  g.setAttribute("aria-label", `${n.kind} ${nodeLabel(n)}${n.upstream ? "" : ", " + n.status}`);
  line("title", nodeTitle(n));
  line("kind", n.kind);
  if (!n.upstream) line("word", n.status);
  line("name", n.upstream ? cutLeft(String(n.name || "").replace(/^[a-z0-9+.-]+:\/\//i, ""), 28) : cut(nodeLabel(n), 28));
  const objects = n.inventoryCount > 0 ? `▸ ${n.inventoryCount} object${n.inventoryCount === 1 ? "" : "s"}` : "";
  if (n.revision) line("rev", cut(shortRev(n.revision), objects ? 19 : 30));
  if (objects) line("inv", objects);
  const why = whyLine(n);
  if (why) line("why", why.text).setAttribute("class", `why ${why.cls}`);
  return g;
}

// edgePath is a cubic curve from the right side of from to the left side of to; its middle,
// where the gates go, is the midpoint of the two ends.
function edgePath(a, b) {
  const x1 = a.x + geo.nodeW, y1 = a.y + geo.nodeH / 2, x2 = b.x, y2 = b.y + geo.nodeH / 2;
  const dx = Math.max(40, (x2 - x1) / 2);
  return { d: `M${x1} ${y1}C${x1 + dx} ${y1} ${x2 - dx} ${y2} ${x2} ${y2}`, mx: (x1 + x2) / 2, my: (y1 + y2) / 2 };
}

// gatePills draws an edge's gates on its middle, stacked.
function gatePills(layer, e, mx, my) {
  const gates = e.gates || [];
  gates.forEach((gate, i) => {
    const id = `${gate.namespace}/${gate.name}`;
    const state = known(gate.state, gateStates);
    const label = cut(gate.name, 19);
    const w = Math.round(label.length * 6.6 + 16);
    const y = my + (i - (gates.length - 1) / 2) * (geo.pillH + 3);
    const p = svg("g", {
      class: `pill ${state}`, transform: `translate(${mx},${y})`, tabindex: "0", role: "button",
      "data-gate": id, "data-via": e.to, "aria-label": `Gate ${id}: ${gate.state}`,
    });
    p.append(
      svg("title", {}, `Gate ${id}: ${gate.state}`),
      svg("rect", { x: -w / 2, y: -geo.pillH / 2, width: w, height: geo.pillH, rx: geo.pillH / 2 }),
      svg("text", { x: 0, y: 4, "text-anchor": "middle" }, label),
    );
    layer.appendChild(p);
  });
}

// nodeBands draws the objects in bands of rows, each an SVG in an HTML box of its own with
// content-visibility: auto, so that the browser lays out and paints only the bands in view: the
// text of thousands of objects is what takes time. Every object is in the page all the same
// (its textContent, its focus), and the edges and gates, cheap, are drawn whole around them.
function nodeBands(shown, pos, width, height) {
  const rowH = geo.nodeH + geo.rowGap, bandH = geo.bandRows * rowH;
  const bands = [];
  for (const id of shown) {
    const p = pos.get(id);
    const top = p.y - geo.pad, i = Math.floor(top / bandH);
    if (!bands[i]) bands[i] = svg("svg", { width, height: bandH, class: "band" });
    bands[i].appendChild(nodeShape(index.nodes.get(id), { x: p.x, y: top - i * bandH }));
  }
  const box = document.createElement("div");
  box.className = "bands";
  for (let i = 0; i < bands.length; i++) {
    const div = document.createElement("div");
    div.className = "band-box";
    // CSSOM writes, which the page's Content-Security-Policy allows (a style attribute it would not).
    div.style.height = `${bandH}px`;
    if (bands[i]) div.appendChild(bands[i]);
    box.appendChild(div);
  }
  box.style.paddingTop = `${geo.pad}px`;
  const fo = svg("foreignObject", { x: 0, y: 0, width, height, class: "nodes" });
  fo.appendChild(box);
  return fo;
}

// The graph's last drawing, for the selection's highlights and the inventory leaves.
let drawn = { pos: new Map(), width: 0, height: 0, edges: [] };

function drawGraph() {
  const graph = document.getElementById("graph");
  const shown = shownNodes();
  const laid = layout(shown), pos = laid.pos;
  const width = Math.max(laid.width, 400), height = Math.max(laid.height, 60);
  const edgesLayer = svg("g", { class: "edges" });
  const gatesLayer = svg("g", { class: "gates" });
  const edges = [];
  for (const e of index.edges) {
    const a = pos.get(e.from), b = pos.get(e.to);
    if (!a || !b) continue;
    const { d, mx, my } = edgePath(a, b);
    const held = (e.gates || []).some((g) => g.state === "closed");
    const path = svg("path", { class: held ? "edge held" : "edge", d });
    edgesLayer.appendChild(path);
    edges.push({ e, path });
    gatePills(gatesLayer, e, mx, my);
  }
  const frag = document.createDocumentFragment();
  frag.append(edgesLayer, nodeBands(shown, pos, width, height), gatesLayer, svg("g", { class: "leaves" }));
  if (shown.size === 0) {
    frag.appendChild(svg("text", { class: "empty", x: geo.pad, y: 30 },
      index.nodes.size === 0 ? "No sources or consumers found." : "No object matches the filters."));
  }
  graph.replaceChildren(frag);
  drawn = { pos, width, height, edges };
  graph.setAttribute("aria-label", `Flow graph: ${shown.size} objects, ${edges.length} edges. Tab to an object or a gate, Enter to see its details.`);
  sizeGraph(drawn.width, drawn.height);
}

function sizeGraph(w, h) {
  const graph = document.getElementById("graph");
  graph.setAttribute("width", w);
  graph.setAttribute("height", h);
  graph.setAttribute("viewBox", `0 0 ${w} ${h}`);
}

// drawLeaves draws the selected object's inventory as a column right of the graph.
function drawLeaves() {
  const layer = document.querySelector("#graph .leaves");
  if (!layer) return;
  const n = ui.node && index && index.nodes.get(ui.node);
  const p = n && drawn.pos.get(n.id);
  const items = (n && n.inventory) || [];
  if (!p || items.length === 0) {
    layer.replaceChildren();
    sizeGraph(drawn.width, drawn.height);
    return;
  }
  const frag = document.createDocumentFragment();
  const x = drawn.width + geo.colGap / 2, x1 = p.x + geo.nodeW, y1 = p.y + geo.nodeH / 2;
  const more = (n.inventoryCount || 0) - items.length;
  const labels = more > 0 ? [...items, `and ${more} more`] : items;
  labels.forEach((label, i) => {
    const y = p.y + i * (geo.leafH + 4);
    const y2 = y + geo.leafH / 2, dx = (x - x1) / 2;
    frag.appendChild(svg("path", { class: "edge leaf-edge", d: `M${x1} ${y1}C${x1 + dx} ${y1} ${x - dx} ${y2} ${x} ${y2}` }));
    const leaf = svg("g", { class: more > 0 && i === items.length ? "leaf more" : "leaf", transform: `translate(${x},${y})` });
    leaf.append(svg("title", {}, label), svg("rect", { width: geo.leafW, height: geo.leafH, rx: 4 }),
      svg("text", { x: 8, y: 14 }, cut(label, 36)));
    frag.appendChild(leaf);
  });
  layer.replaceChildren(frag);
  sizeGraph(x + geo.leafW + geo.pad, Math.max(drawn.height, p.y + labels.length * (geo.leafH + 4) + geo.pad));
}

// ---- The table ------------------------------------------------------------------------------

// gatePill is a gate in the table, named without its namespace when it is the object's.
function gatePill(g, n) {
  const id = `${g.namespace}/${g.name}`;
  const pill = el("span", `pill ${known(g.state, gateStates)}`, `${g.namespace === n.namespace ? g.name : id}: ${g.state}`);
  const via = n.id;
  pill.dataset.gate = id;
  if (via) pill.dataset.via = via;
  pill.tabIndex = 0;
  pill.setAttribute("role", "button");
  pill.title = `Gate ${id}: ${g.state}`;
  return pill;
}

function whyOf(n) {
  return n.why || (n.status === "failing" ? n.message || "" : "");
}

// tableRow is an object's row; it makes few elements, for tables of thousands of rows.
function tableRow(n) {
  const tr = el("tr", ui.node === n.id ? "selected" : "");
  tr.setAttribute("role", "row");
  tr.dataset.id = n.id;
  tr.tabIndex = 0;
  const why = whyOf(n);
  const gates = el("td", "");
  for (const g of gatesOf(n, index)) gates.appendChild(gatePill(g, n));
  tr.append(
    el("td", "kind", n.kind),
    el("td", "object", nodeLabel(n)),
    el("td", `status ${known(n.status, states)}`, n.status),
    el("td", "rev", n.revision || ""),
    el("td", "rev", n.waitingRevision || ""),
    el("td", n.status === "failing" ? "why-cell why-text failing" : n.status === "waiting" ? "why-cell why-text" : "why-cell", why),
    gates,
    el("td", "", null, nodeActions(n)),
  );
  for (const td of tr.children) td.setAttribute("role", "cell");
  return tr;
}

function drawTable() {
  const t = document.getElementById("table");
  const head = el("tr", "");
  for (const h of ["Kind", "Object", "State", "Revision applied / artifact", "Waiting revision", "Why", "Gates", "Actions"]) {
    head.appendChild(el("th", "", h)).setAttribute("role", "columnheader");
  }
  head.setAttribute("role", "row");
  // Rows go in bodies of geo.bandRows, which flow.css gives content-visibility: auto (and rows
  // fixed columns), so that only the bodies in view are laid out, as nodeBands does.
  const frag = document.createDocumentFragment();
  let body = null, rows = 0;
  for (const n of index.nodes.values()) {
    if (n.upstream || n.missing || !matches(n)) continue;
    if (rows++ % geo.bandRows === 0) {
      body = frag.appendChild(el("tbody", ""));
      body.setAttribute("role", "rowgroup");
    }
    body.appendChild(tableRow(n));
  }
  if (rows === 0) {
    const td = el("td", "empty", index.nodes.size === 0 ? "No sources or consumers found." : "No object matches the filters.");
    td.colSpan = 8;
    frag.appendChild(el("tbody", "", null, el("tr", "", null, td)));
  }
  t.replaceChildren(el("thead", "", null, head), frag);
}

function drawCount() {
  let all = 0, shown = 0;
  for (const n of index.nodes.values()) {
    if (n.upstream || n.missing) continue;
    all++;
    if (matches(n)) shown++;
  }
  document.getElementById("count").textContent = filtering() ? `${shown} of ${all} objects` : `${all} objects`;
}

// drawView draws the view chosen and empties the other, so that the data-id and data-gate
// elements in the page are those the viewer sees.
function drawView() {
  if (!index) return;
  syncToolbar();
  if (ui.view === "graph") {
    document.getElementById("table").replaceChildren();
    drawGraph();
  } else {
    document.getElementById("graph").replaceChildren();
    drawn = { pos: new Map(), width: 0, height: 0, edges: [] };
    drawTable();
  }
  drawCount();
  markSelection();
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

// ---- Actions --------------------------------------------------------------------------------

// answerLine is the answer to the last action on an object or gate, if there was one.
function answerLine(key) {
  const a = answers[key];
  return a ? el("p", a.error ? "answer warning" : "answer", a.text) : null;
}

// showAnswer puts the answer under every set of buttons of its object or gate in the page.
function showAnswer(key) {
  for (const box of document.querySelectorAll(".node-actions, .gate-actions")) {
    if (box.dataset.key !== key) continue;
    const old = box.querySelector(".answer");
    const p = answerLine(key);
    if (old) old.replaceWith(p);
    else box.appendChild(p);
  }
}

// post sends an action to the page's own server, as the user running it, and keeps the answer.
async function post(url, body, key, okText) {
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Sluice-Dashboard": "1" },
      body: JSON.stringify(body),
    });
    const text = (await res.text()).trim();
    if (!res.ok) {
      answers[key] = { error: true, text: `Refused: ${text || res.status + " " + res.statusText}` };
      return false;
    }
    let json = {};
    try { json = JSON.parse(text); } catch (e) { json = { message: text }; }
    answers[key] = { error: false, text: okText(json) };
    return true;
  } catch (e) {
    answers[key] = { error: true, text: `Refused: ${e.message}` };
    return false;
  } finally {
    showAnswer(key);
  }
}

function actionButton(label, action, onClick) {
  const b = el("button", "", label);
  b.type = "button";
  b.dataset.action = action;
  b.addEventListener("click", onClick);
  return b;
}

const urlPath = (...parts) => parts.map(encodeURIComponent).join("/");

// nodeActions are the buttons the viewer's RBAC allows on an object, with their answer.
function nodeActions(n) {
  const a = n.actions || {};
  const key = `node:${n.id}`;
  const act = (action) => () => post(`api/objects/${urlPath(n.kind, n.namespace, n.name, action)}`, {}, key,
    (j) => j.message || `${action} requested.`);
  const box = el("div", "node-actions");
  if (a.reconcile) box.appendChild(actionButton("Reconcile", "reconcile", act("reconcile")));
  if (a.suspend) {
    box.appendChild(n.suspended ? actionButton("Resume", "resume", act("resume")) : actionButton("Suspend", "suspend", act("suspend")));
  }
  if (!box.firstChild) return null;
  box.dataset.key = key;
  const answer = answerLine(key);
  if (answer) box.appendChild(answer);
  return box;
}

// gateInput is a text box whose value outlives redraws, found again by data-field and data-key.
function gateInput(className, store, id, placeholder) {
  const input = el("input", className);
  input.type = "text";
  input.placeholder = placeholder;
  input.setAttribute("aria-label", placeholder);
  input.value = store[id] || "";
  input.dataset.field = className;
  input.dataset.key = id;
  input.addEventListener("input", () => { store[id] = input.value; });
  return input;
}

// gateActions are a gate's buttons: Open and Close with a reason and a duration, and Approve and
// Reject while it waits for approvals. A response is for the revision of the pending request the
// page shows, so that a request replaced since is not approved unseen.
function gateActions(g) {
  const revision = g.approvalRevision || "";
  const id = g.id || `${g.namespace}/${g.name}`;
  const a = g.actions || {};
  const pending = String(g.approval || "").startsWith("Pending") && a.respond;
  if (!a.open && !a.close && !pending) return null;
  const key = `gate:${id}`;
  const done = () => {
    reasons[id] = "";
    durations[id] = "";
    for (const i of document.querySelectorAll("#details input[data-key]")) if (i.dataset.key === id) i.value = "";
  };
  const request = (action) => async () => {
    const ok = await post(`api/gates/${urlPath(g.namespace, g.name, action)}`,
      { reason: reasons[id] || "", duration: durations[id] || "" }, key, (j) => j.message || `${action} requested.`);
    if (ok) done();
  };
  const respond = (decision) => async () => {
    const ok = await post(`api/gates/${urlPath(g.namespace, g.name, decision)}`,
      { reason: reasons[id] || "", revision: revision || "" }, key,
      (j) => j.message || `${decision === "approve" ? "Approved" : "Rejected"} as ${j.user} (GateApproval ${j.name}).`);
    if (ok) done();
  };
  const inputs = el("div", "inputs", null, gateInput("reason", reasons, id, "Reason"));
  if (a.open || a.close) inputs.appendChild(gateInput("duration", durations, id, "Duration (e.g. 2h), optional"));
  const buttons = el("div", "buttons");
  if (a.open) buttons.appendChild(actionButton("Open", "open", request("open")));
  if (a.close) buttons.appendChild(actionButton("Close", "close", request("close")));
  if (pending) {
    buttons.appendChild(actionButton("Approve", "approve", respond("approve")));
    buttons.appendChild(actionButton("Reject", "reject", respond("reject")));
  }
  const box = el("div", "gate-actions", null, inputs, buttons);
  box.dataset.key = key;
  if (pending) box.appendChild(el("p", "note", revision ? `Approve or reject revision ${revision}.` : "Approve or reject the gate's pending request."));
  const answer = answerLine(key);
  if (answer) box.appendChild(answer);
  return box;
}

// ---- Details --------------------------------------------------------------------------------

function definitions(pairs) {
  const dl = el("dl", "");
  for (const [label, value, className] of pairs) {
    if (value === undefined || value === null || value === "") continue;
    dl.append(el("dt", "", label), el("dd", className || "", String(value)));
  }
  return dl;
}

// goto is a link-like button to another object or gate of the flow.
function goto(label, sel) {
  const b = el("button", "link", label);
  b.type = "button";
  b.dataset.goto = sel.node || `Gate/${sel.gate}`;
  // The link is redrawn away: the focus stays in the panel, for the keyboard.
  b.addEventListener("click", () => { select(sel); document.getElementById("details").focus({ preventScroll: true }); });
  return b;
}

function heading(text, badge, badgeClass) {
  const close = el("button", "close-details", "×");
  close.type = "button";
  close.setAttribute("aria-label", "Close the details");
  close.addEventListener("click", () => select({}));
  return el("h2", "", null, el("span", "name", text), badge ? el("span", `badge ${badgeClass}`, badge) : null, close);
}

function nodeDetails(n) {
  const parts = [heading(`${n.kind} ${nodeLabel(n)}`, n.upstream ? "upstream" : n.status, n.upstream ? "upstream" : known(n.status, states))];
  parts.push(nodeActions(n));
  const ready = n.ready ? `${n.ready}${n.reason ? " (" + n.reason + ")" : ""}` : n.reason;
  parts.push(definitions([
    ["Kind", n.kind], ["Namespace", n.namespace], [n.upstream ? "URL" : "Name", n.name],
    ["State", n.upstream ? "" : n.status],
    ["Why", n.why, n.status === "failing" ? "warning" : n.status === "waiting" ? "why-text" : ""],
    ["Ready", ready], ["Message", n.message],
    ["Revision", n.revision], ["Author", n.author], ["Digest", n.digest], ["Size", humanSize(n.size)],
    ["Updated at", n.updatedAt && ago(n.updatedAt)], ["URL", n.upstream ? "" : n.url],
    ["Gate state", n.gateState], ["Waiting revision", n.waitingRevision, "why-text"],
    ["Held since", n.heldSince && ago(n.heldSince)], ["Suspended", n.suspended ? "yes" : ""],
  ]));
  parts.push(neighbours("Reads from", index.ins.get(n.id), (e) => e.from));
  parts.push(neighbours("Read by", index.outs.get(n.id), (e) => e.to));
  const gates = gatesOf(n, index);
  if (gates.length > 0) {
    const ul = el("ul", "gates-list");
    for (const g of gates) {
      const id = `${g.namespace}/${g.name}`;
      const full = index.gates.get(id) || { id, namespace: g.namespace, name: g.name, state: g.state };
      ul.appendChild(el("li", "", null, goto(id, { gate: id, via: n.id }), document.createTextNode(" "),
        el("span", `badge ${known(g.state, gateStates)}`, g.state), full.cause ? el("div", "note", full.cause) : null,
        full.approval ? el("div", "note", `Approval: ${full.approval}`) : null, gateActions(full)));
    }
    parts.push(el("h3", "", "Gates"), ul);
  }
  parts.push(inventory(n));
  return parts;
}

function neighbours(title, edges, end) {
  if (!edges || edges.length === 0) return null;
  const ul = el("ul", "");
  for (const e of edges) {
    const other = index.nodes.get(end(e));
    ul.appendChild(el("li", "", null, goto(`${other.kind} ${nodeLabel(other)}`, { node: other.id })));
  }
  return el("section", "", null, el("h3", "", title), ul);
}

function inventory(n) {
  const items = n.inventory || [];
  if (!n.inventoryCount && items.length === 0) return null;
  const count = n.inventoryCount || items.length;
  const ul = el("ul", "inventory");
  for (const o of items) ul.appendChild(el("li", "", o));
  if (count > items.length) ul.appendChild(el("li", "note", `and ${count - items.length} more`));
  return el("section", "", null, el("h3", "", `Inventory (${count} object${count === 1 ? "" : "s"})`), ul);
}

function gateDetails(g) {
  const id = g.id || `${g.namespace}/${g.name}`;
  const parts = [heading(`Gate ${id}`, g.state, known(g.state, gateStates))];
  parts.push(definitions([["State", g.state], ["Cause", g.cause], ["Approval", g.approval]]));
  parts.push(gateActions(g));
  const ul = el("ul", "");
  for (const e of index.edges) {
    if (!(e.gates || []).some((x) => `${x.namespace}/${x.name}` === id)) continue;
    const from = index.nodes.get(e.from), to = index.nodes.get(e.to);
    ul.appendChild(el("li", "", null, goto(`${from.kind} ${nodeLabel(from)}`, { node: from.id }),
      document.createTextNode(" → "), goto(`${to.kind} ${nodeLabel(to)}`, { node: to.id })));
  }
  if (ul.firstChild) parts.push(el("h3", "", "On the edges"), ul);
  return parts;
}

function renderDetails() {
  const details = document.getElementById("details");
  let parts = null;
  if (ui.node) {
    const n = index && index.nodes.get(ui.node);
    parts = n ? nodeDetails(n) : [heading(ui.node), el("p", "empty", "Not in the flow any more.")];
  } else if (ui.gate) {
    const g = index && index.gates.get(ui.gate);
    parts = g ? gateDetails(g) : [heading(`Gate ${ui.gate}`), el("p", "empty", "Not in the flow any more.")];
  }
  if (!parts) {
    details.hidden = true;
    details.replaceChildren();
    delete details.dataset.selected;
    return;
  }
  const q = historyQuery();
  if (q) parts.push(historySection(q));
  details.replaceChildren(...parts.filter(Boolean));
  details.dataset.selected = ui.node || `Gate/${ui.gate}`;
  details.hidden = false;
}

// ---- History --------------------------------------------------------------------------------

// historyQuery is the query of the selection's history, "" for what has none (an upstream URL).
function historyQuery() {
  let kind, namespace, name;
  if (ui.node) {
    const n = index && index.nodes.get(ui.node);
    if (!n || n.upstream || n.missing) return "";
    ({ kind, namespace, name } = n);
  } else if (ui.gate) {
    const slash = ui.gate.indexOf("/");
    kind = "Gate";
    namespace = ui.gate.slice(0, slash);
    name = ui.gate.slice(slash + 1);
  } else {
    return "";
  }
  return new URLSearchParams({ kind, namespace, name }).toString();
}

function historySection(q) {
  const part = el("section", "history", null, el("h3", "", "History"));
  part.dataset.query = q;
  const h = histories[q];
  if (!h) {
    part.appendChild(el("p", "empty", "Loading the history…"));
    return part;
  }
  if (h.error) part.appendChild(el("p", "warning", `Cannot load the history: ${h.error}`));
  if (!h.data) return part;
  const d = h.data;
  const section = (title, rows, headers, cellClass, none) => {
    part.appendChild(el("h4", "", title));
    part.appendChild(rows.length ? table(headers, rows, cellClass) : el("p", "empty", none));
  };
  // Revisions and messages may break anywhere: a hash is one long word.
  section("Revisions", (d.revisions || []).map((r) => [r.time, r.revision, r.note]),
    ["When", "Revision", "Note"], (i) => (i === 1 ? "wrap" : ""), "No revision recorded.");
  if (q.startsWith("kind=Gate&")) {
    section("Periods", (d.periods || []).map((p) => [p.state, p.from, p.to || "now", p.cause]),
      ["State", "From", "To", "Cause"], (i, v) => (i === 0 && gateStates.includes(v) ? v : i === 3 ? "wrap" : ""), "No period recorded.");
  }
  section("Events", (d.events || []).map((e) => [e.time, e.type, e.reason, e.message]),
    ["When", "Type", "Reason", "Message"], (i, v, row) => `${row[1] === "Warning" && i > 0 ? "warning" : ""}${i === 3 ? " wrap" : ""}`.trim(), "No event.");
  // Why events are missing (the viewer may not list them): not in CONTRACT.md, sent by the server.
  if (d.eventsNote) part.appendChild(el("p", "note", d.eventsNote));
  return part;
}

// loadHistory fetches the selection's history, one fetch per query at a time; the section shows
// the last answer meanwhile.
async function loadHistory() {
  const q = historyQuery();
  if (!q || historyLoading.has(q)) return;
  historyLoading.add(q);
  try {
    const res = await fetch(`api/flow/history?${q}`, { cache: "no-store" });
    if (!res.ok) throw new Error(`${res.status} ${(await res.text()).trim()}`);
    histories[q] = { data: await res.json() };
  } catch (e) {
    histories[q] = { data: histories[q] && histories[q].data, error: e.message };
  } finally {
    historyLoading.delete(q);
  }
  const part = document.querySelector("#details .history");
  if (part && part.dataset.query === q) part.replaceWith(historySection(q));
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
