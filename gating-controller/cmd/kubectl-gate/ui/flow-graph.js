// The flow page's graph: columns of objects, edges with their gates drawn on them.
// Loaded before flow.js, which holds the page's state and calls these.
"use strict";

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
