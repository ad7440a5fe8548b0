// The flow page's table: one row per object.
// Loaded before flow.js, which holds the page's state and calls these.
"use strict";

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
