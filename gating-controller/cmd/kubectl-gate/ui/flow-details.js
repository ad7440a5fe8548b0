// The flow page's details of the selected object or gate, with its history.
// Loaded before flow.js, which holds the page's state and calls these.
"use strict";

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
