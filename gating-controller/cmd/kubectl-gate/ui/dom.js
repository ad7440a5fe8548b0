// The two pages' way of making elements: every value from the cluster goes in as text
// (textContent), never as HTML.
"use strict";

// el makes an element with a class and text, and appends the children given (null ones are skipped).
function el(tag, className, text, ...children) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined && text !== null) e.textContent = text;
  for (const c of children) if (c) e.appendChild(c);
  return e;
}

// table makes a table of rows; cellClass may give a cell a class from its column and value.
function table(headers, rows, cellClass) {
  const head = el("tr", "");
  for (const h of headers) head.appendChild(el("th", "", h));
  const body = el("tbody", "");
  for (const row of rows) {
    const tr = el("tr", "");
    row.forEach((v, i) => tr.appendChild(el("td", cellClass ? cellClass(i, v, row) : "", v)));
    body.appendChild(tr);
  }
  return el("table", "", null, el("thead", "", null, head), body);
}
