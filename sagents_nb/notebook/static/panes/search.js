// Find anything: the search box over the session, its results a page at a time, and going to
// the event a result (or `#N`) names.
// Its state: notebook/_search.py, search_state(); its messages notebook/_controls.py, handle_message().

import { html, nothing, repeat } from "../lit-html.js";

const SEQ = /^\s*(?:#|seq\s*)(\d+)\s*$/i;

export function search(view) {
  const { model, ui, send } = view;
  const found = model.get("found") || {};
  const asked = ui.query.trim() !== "";
  const rows = asked ? found.rows || [] : [];
  const page = asked ? found.page : null;
  const ask = (query) => {
    ui.query = query;
    clearTimeout(ui.searchTimer);
    ui.searchTimer = setTimeout(() => send({ action: "search", query }), 150);
    view.schedule();
  };
  const keys = (event) => {
    if (event.key !== "Enter") return;
    event.preventDefault();
    const number = SEQ.exec(ui.query);
    if (number) goTo(view, { seq: Number(number[1]) });
    else if (rows.length) goTo(view, rows[0]);
  };
  const turn = (start) => send({ action: "search", start });
  const first = page ? page.start : 0;
  const last = page ? Math.min(page.total, first + page.size) : 0;
  return html`<div class="sn-search" role="search">
    <input
      class="sn-search-box"
      type="search"
      placeholder="find anything: text, tool, node, status · #123 goes to event 123"
      aria-label="search the session"
      .value=${ui.query}
      ?disabled=${!!ui.dead}
      @input=${(e) => ask(e.target.value)}
      @keydown=${keys}
    />
    ${asked && found.note ? html`<span class="sn-meta sn-search-note">${found.note}</span>` : nothing}
    ${page && page.total
      ? html`<span class="sn-meta sn-search-count" data-total=${page.total}
            >results ${first + 1}–${last} of ${page.total}</span
          >
          <button class="sn-button sn-older" ?disabled=${first <= 0} @click=${() => turn(Math.max(0, first - page.size))}>
            ◀ earlier
          </button>
          <button class="sn-button sn-newer" ?disabled=${last >= page.total} @click=${() => turn(last)}>later ▶</button>`
      : nothing}
    ${rows.length
      ? html`<ol class="sn-found">
          ${repeat(
            rows,
            (row) => row.seq,
            (row) => html`<li>
              <button class="sn-link sn-found-row" data-seq=${row.seq} @click=${() => goTo(view, row)}>
                <span class="sn-seq">#${row.seq}</span>
                <span class="sn-path">${row.node}</span>
                <span class="sn-type">${row.type}</span>
                <span class="sn-snippet">${row.before}<mark>${row.match}</mark>${row.after}</span>
              </button>
            </li>`,
          )}
        </ol>`
      : nothing}
  </div>`;
}

// The Events tab at that event, opened, its node chosen (the kernel finds its node and page).
function goTo(view, row) {
  const { ui } = view;
  ui.opened.add(row.seq);
  ui.reveal = row.seq;
  view.focus({ tab: "events", ...(row.node ? { node: row.node } : {}), seq: row.seq });
}

// After a draw: scroll the event gone to into sight, once it is on the page.
export function reveal(view, el) {
  const { ui } = view;
  if (ui.reveal === null || ui.reveal === undefined) return;
  const row = el.querySelector(`.sn-event.sn-at[data-seq="${Number(ui.reveal)}"]`);
  if (!row) return;
  row.scrollIntoView({ block: "nearest" });
  ui.reveal = null;
}
