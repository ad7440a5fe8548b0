// The gate dashboard: polls /api/state and draws it. Every value from the cluster goes into the
// page as text (textContent), never as HTML.
"use strict";

const pollInterval = 2000;

function stateClass(column) {
  return (i, v) => (i === column && (v === "opened" || v === "closed") ? v : "");
}

function details(gate) {
  const dl = el("dl", "");
  const add = (label, value, className) => {
    dl.appendChild(el("dt", "", label));
    dl.appendChild(el("dd", className || "", value));
  };
  add("Cause", gate.cause);
  if (gate.warning) add("Warning", gate.warning, "warning");
  add("Default", gate.default);
  add("Request", gate.request);
  add("Request ends", gate.requestEnd);
  add("Next transition", gate.nextTransitionAt);
  for (const p of gate.pending) add("Pending", p, "pending");
  return dl;
}

function timeline(gate, days) {
  const part = el("section", "timeline", null, el("h3", "", `Next ${days} days`));
  if (gate.keepers.length === 0) {
    part.appendChild(el("p", "note", "No GateKeeper: the gate changes only on request."));
  } else {
    const ul = el("ul", "keepers");
    for (const k of gate.keepers) {
      ul.appendChild(el("li", k.error ? "warning" : "",
        `GateKeeper ${k.name} (${k.timeZone})` + (k.error ? `: ${k.error}` : "")));
    }
    part.appendChild(ul);
  }
  if (gate.timelineNote) part.appendChild(el("p", "note", gate.timelineNote));
  if (gate.timeline.length === 0) {
    part.appendChild(el("p", "empty", `No opening or closing in the next ${days} days.`));
  } else {
    part.appendChild(table(["When (schedule's zone)", "Zone", "UTC", "Becomes", "Cause"],
      gate.timeline.map((t) => [t.local, t.zone, t.at, t.state, t.label ? t.cause + " (" + t.label + ")" : t.cause]), stateClass(3)));
  }
  return part;
}

function waiting(gate) {
  const part = el("section", "waiting", null, el("h3", "", "Waiting behind the gate"));
  if (gate.waiting.length === 0) {
    part.appendChild(el("p", "empty", "No object names this gate in spec.gates."));
    return part;
  }
  part.appendChild(table(["Kind", "Object", "Gates", "Waiting revision", "Held since"],
    gate.waiting.map((w) => [w.kind, `${w.namespace}/${w.name}`, w.state, w.waitingRevision, w.heldSince])));
  return part;
}

function history(gate) {
  const part = el("section", "history", null, el("h3", "", "History"));
  if (gate.history.length === 0) {
    part.appendChild(el("p", "empty", "No change of state yet."));
    return part;
  }
  part.appendChild(table(["When", "State", "Cause", "Requested by", "Reason"],
    gate.history.map((h) => [h.time, h.state, h.cause, h.requestedBy, h.reason]), stateClass(1)));
  return part;
}

// What the viewer typed and the answer to their last response, by gate: the page is redrawn on
// every poll, and must not lose either.
const reasons = {};
const answers = {};

// respond creates a GateApproval as the user running the page (POST to the page's own server).
async function respond(id, decision, revision) {
  try {
    const res = await fetch(`api/gates/${id}/${decision}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Sluice-Dashboard": "1" },
      body: JSON.stringify({ reason: reasons[id] || "", revision: revision || "" }),
    });
    const text = (await res.text()).trim();
    if (!res.ok) {
      answers[id] = { error: true, text: `Refused: ${text}` };
    } else {
      const ga = JSON.parse(text);
      answers[id] = { error: false, text: `${decision === "approve" ? "Approved" : "Rejected"} as ${ga.user} (GateApproval ${ga.name}).` };
      reasons[id] = "";
    }
  } catch (e) {
    answers[id] = { error: true, text: `Refused: ${e.message}` };
  }
  const p = document.querySelector(`article[data-gate="${CSS.escape(id)}"] .answer`);
  if (p) {
    p.textContent = answers[id].text;
    p.className = answers[id].error ? "answer warning" : "answer";
  }
}

function approval(gate, id) {
  const a = gate.approval;
  const part = el("section", "approval", null, el("h3", "", "Approval"));
  const dl = el("dl", "");
  const add = (label, value) => {
    dl.appendChild(el("dt", "", label));
    dl.appendChild(el("dd", "", value));
  };
  add("State", a.state);
  add("Request", a.request);
  if (a.revision) add("Revision", a.revision);
  if (a.authors) add("Authors of the revision", a.authors);
  add("Progress", a.message);
  add("Required", `${a.required} in all`);
  part.appendChild(dl);
  if (a.rules.length > 0) {
    part.appendChild(table(["Rule", "Approvers", "Approvals", "Approved by"],
      a.rules.map((r) => [r.name, r.approvers, r.progress, r.approvedBy])));
  }
  if (a.responses.length > 0) {
    part.appendChild(el("h4", "", "Responses"));
    part.appendChild(table(["When", "User", "Decision", "Counted", "Reason"], a.responses));
  }
  if (!a.canRespond) {
    part.appendChild(el("p", "note readonly", a.readOnly));
  } else if (a.state === "Pending") {
    const input = el("input", "reason");
    input.type = "text";
    input.placeholder = "Reason";
    input.value = reasons[id] || "";
    input.addEventListener("input", () => { reasons[id] = input.value; });
    const approve = el("button", "approve", "Approve");
    approve.addEventListener("click", () => respond(id, "approve", a.revision));
    const reject = el("button", "reject", "Reject");
    reject.addEventListener("click", () => respond(id, "reject", a.revision));
    part.appendChild(el("div", "respond", null, input, approve, reject));
  }
  const answer = el("p", answers[id] && answers[id].error ? "answer warning" : "answer", answers[id] ? answers[id].text : "");
  part.appendChild(answer);
  return part;
}

// promotion draws the gate's chain: what it is opened for, what was promoted, what soaks and
// until when, what the promotion waits for, and the checks.
function promotion(gate) {
  const p = gate.promotion;
  const part = el("section", "promotion", null, el("h3", "", p.promotion ? "Promotion" : "Checks"));
  const dl = el("dl", "");
  const add = (label, value, className) => {
    dl.appendChild(el("dt", "", label));
    dl.appendChild(el("dd", className || "", value));
  };
  if (p.openedForRevision) add("Opened for revision", p.openedForRevision);
  if (p.promotion) {
    add("From", p.from.join(", "));
    add("Promoted", p.promoted ? `${p.promoted} at ${p.promotedAt}` : "-");
    add("Candidate", p.candidate ? p.candidate + (p.soakingSince ? `, soaking since ${p.soakingSince}, promoted at ${p.opensAt}` : "") : "-");
    add("Waits for", p.message || "-", "pending");
  }
  if (p.checks) add("Checks", p.checks, p.checksFail ? "warning" : "");
  part.appendChild(dl);
  return part;
}

// deletions draws the deletion sets that wait on the gate's approvers, with the buttons of the
// gate's pending request when it is the set's.
function deletions(gate, id) {
  const part = el("section", "deletions", null, el("h3", "", "Deletions awaiting approval"));
  for (const d of gate.deletions) {
    const dl = el("dl", "");
    const add = (label, value, className) => {
      dl.appendChild(el("dt", "", label));
      dl.appendChild(el("dd", className || "", value));
    };
    add("Object", `${d.kind} ${d.namespace}/${d.name}`);
    add("State", d.state, d.state === "Rejected" ? "warning" : "pending");
    add("Deletes", `${d.count} object${d.count === 1 ? "" : "s"}`);
    add("Digest", d.digest);
    add("Message", d.message);
    part.appendChild(dl);
    const ul = el("ul", "objects");
    for (const o of d.objects) ul.appendChild(el("li", "", o));
    if (d.count > d.objects.length) ul.appendChild(el("li", "", `and ${d.count - d.objects.length} more`));
    part.appendChild(ul);
    const a = gate.approval;
    if (a && a.state === "Pending" && a.revision === d.digest && a.canRespond) {
      const approve = el("button", "approve", "Approve deletion");
      approve.addEventListener("click", () => respond(id, "approve", d.digest));
      const reject = el("button", "reject", "Reject deletion");
      reject.addEventListener("click", () => respond(id, "reject", d.digest));
      part.appendChild(el("div", "respond", null, approve, reject));
    }
  }
  return part;
}

function gateCard(gate, days) {
  const id = `${gate.namespace}/${gate.name}`;
  const parts = [details(gate)];
  if (gate.promotion) parts.push(promotion(gate));
  if (gate.deletions && gate.deletions.length > 0) parts.push(deletions(gate, id));
  if (gate.approval) parts.push(approval(gate, id));
  parts.push(timeline(gate, days), waiting(gate), history(gate));
  const card = el("article", "gate", null,
    el("h2", "", null, el("span", "name", id), el("span", `badge ${gate.state}`, gate.state)), ...parts);
  card.dataset.gate = id;
  return card;
}

function render(state) {
  document.getElementById("scope").textContent =
    state.namespace ? `in ${state.namespace}` : "in all namespaces";
  document.getElementById("updated").textContent = `Updated ${state.now}.`;

  const skipped = document.getElementById("skipped");
  skipped.replaceChildren();
  skipped.hidden = state.skipped.length === 0;
  if (!skipped.hidden) {
    const ul = el("ul", "");
    for (const s of state.skipped) ul.appendChild(el("li", "", `${s.kind}: ${s.reason}`));
    skipped.append(el("strong", "", "Not shown:"), ul);
  }

  const gates = document.getElementById("gates");
  if (state.gates.length === 0) {
    gates.replaceChildren(el("p", "empty", "No gates found."));
    return;
  }
  // Keep the focus in a reason being typed across the redraw.
  const focused = document.activeElement && document.activeElement.classList.contains("reason") ?
    document.activeElement.closest("article").dataset.gate : null;
  gates.replaceChildren(...state.gates.map((g) => gateCard(g, state.timelineDays)));
  if (focused) {
    const input = document.querySelector(`article[data-gate="${CSS.escape(focused)}"] input.reason`);
    if (input) input.focus();
  }
}

async function poll() {
  const error = document.getElementById("error");
  try {
    const res = await fetch("api/state", { cache: "no-store" });
    // Served in a cluster, the page needs the caller's token first.
    if (res.status === 401) {
      location.href = "signin.html?back=index.html";
      return;
    }
    if (!res.ok) throw new Error(`${res.status} ${(await res.text()).trim()}`);
    render(await res.json());
    error.hidden = true;
  } catch (e) {
    // Keep the last good page, and say that it is stale.
    error.textContent = `Cannot refresh: ${e.message}`;
    error.hidden = false;
  }
  setTimeout(poll, pollInterval);
}

poll();
