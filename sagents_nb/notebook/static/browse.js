// The store browser: the stored sessions and forks as a table, searched and sorted here, a
// click (or Enter) asks the kernel to open that session's view below.
// Its state: notebook/_browse.py, session_row(). A widget of its own, not a pane of view.js.

import { counted } from "./panes/words.js";

const COLUMNS = [
  ["id", "session"],
  ["agent", "agent"],
  ["started", "started"],
  ["runs", "runs"],
  ["status", "status"],
  ["tokens", "tokens"],
  ["cost", "cost"],
];

// Lower case without accents, so "cafe" finds "Café" and "ZURICH" finds "Zürich".
function folded(text) {
  return String(text).normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase();
}

function cell(tag, text, className) {
  const node = document.createElement(tag);
  node.textContent = text; // untrusted: agent names and ids stay text
  if (className) node.className = className;
  return node;
}

function render({ model, el }) {
  el.classList.add("sn-browse");
  const bar = document.createElement("div");
  bar.className = "sn-browse-bar";
  const box = document.createElement("input");
  box.type = "search";
  box.className = "sn-browse-search";
  box.placeholder = "search sessions (id, agent, status, fork)";
  box.setAttribute("aria-label", "search the stored sessions");
  const count = cell("span", "", "sn-browse-count");
  count.setAttribute("aria-live", "polite");
  const notice = cell("div", "", "sn-browse-notice");
  bar.append(box, count);
  const table = document.createElement("table");
  table.className = "sn-browse-table";
  const head = document.createElement("tr");
  const body = document.createElement("tbody");
  let sortKey = "started";
  let descending = true;
  for (const [key, label] of COLUMNS) {
    const th = cell("th", label);
    th.dataset.key = key;
    th.tabIndex = 0;
    const sortBy = () => {
      descending = sortKey === key ? !descending : key !== "id" && key !== "agent";
      sortKey = key;
      paint();
    };
    th.addEventListener("click", sortBy);
    th.addEventListener("keydown", (e) => e.key === "Enter" && sortBy());
    head.append(th);
  }
  const thead = document.createElement("thead");
  thead.append(head);
  table.append(thead, body);
  el.append(bar, table, notice);

  const open = (id) => model.send({ type: "open", id });

  function paint() {
    const rows = model.get("rows");
    const words = folded(box.value).split(/\s+/).filter(Boolean);
    const shown = rows.filter((row) => words.every((w) => row.search.includes(w)));
    const value = (row) => (sortKey === "started" ? row.created : row[sortKey]);
    shown.sort((a, b) => {
      const [x, y] = [value(a), value(b)];
      const order = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
      return descending ? -order : order;
    });
    for (const th of head.children) {
      th.setAttribute("aria-sort", th.dataset.key === sortKey ? (descending ? "descending" : "ascending") : "none");
    }
    const opened = model.get("opened");
    const lines = shown.map((row) => {
      const tr = document.createElement("tr");
      tr.className = "sn-browse-row" + (row.id === opened ? " sn-browse-opened" : "");
      tr.dataset.id = row.id;
      tr.dataset.status = row.status;
      tr.tabIndex = 0;
      const idCell = cell("td", row.id);
      if (row.fork) idCell.append(cell("div", row.fork, "sn-browse-fork"));
      tr.append(
        idCell,
        cell("td", row.agent),
        cell("td", row.started),
        cell("td", String(row.runs), "sn-browse-num"),
        cell("td", row.status, `sn-browse-status sn-browse-${row.status}`),
        cell("td", row.tokens_text, "sn-browse-num"),
        cell("td", row.cost, "sn-browse-cost"),
      );
      tr.addEventListener("click", () => open(row.id));
      tr.addEventListener("keydown", (e) => e.key === "Enter" && open(row.id));
      return tr;
    });
    body.replaceChildren(...lines);
    const total = counted(rows.length, "session");
    count.textContent = shown.length === rows.length ? total : `${shown.length} of ${total}`;
    count.dataset.shown = String(shown.length);
    notice.textContent = model.get("notice");
  }

  box.addEventListener("input", paint);
  model.on("change:rows", paint);
  model.on("change:opened", paint);
  model.on("change:notice", paint);
  paint();
}

export default { render };
