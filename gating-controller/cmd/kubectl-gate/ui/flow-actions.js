// The flow page's buttons: what they post, and the answers kept across redraws.
// Loaded before flow.js, which holds the page's state and calls these.
"use strict";

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
