// The sign-in of the pages served in a cluster (kubectl gate ui --authenticate-callers): the
// token goes to the server once, which answers with who the API server says it is and a cookie.
"use strict";

document.getElementById("signin").addEventListener("submit", async (event) => {
  event.preventDefault();
  const answer = document.getElementById("answer");
  try {
    const res = await fetch("api/signin", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Sluice-Dashboard": "1" },
      body: JSON.stringify({ token: document.getElementById("token").value }),
    });
    const text = (await res.text()).trim();
    if (!res.ok) throw new Error(text);
    answer.className = "answer";
    answer.textContent = `Signed in as ${JSON.parse(text).user}.`;
    // Back to the page that sent the caller here, of this directory only.
    const back = new URLSearchParams(location.search).get("back");
    location.href = back === "index.html" ? "index.html" : "flow.html";
  } catch (e) {
    answer.className = "answer warning";
    answer.textContent = `Refused: ${e.message}`;
  }
});
