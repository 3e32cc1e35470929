// The Wire tab: the HTTP exchanges with the endpoint, headers redacted.
// Its state: notebook/_log_panes.py, wire_pane().

import { html, nothing, repeat } from "../lit-html.js";
import { listPager, pre, seconds, status } from "./parts.js";

export function wire(view, state) {
  const exchanges = state.exchanges || [];
  if (!exchanges.length) return html`<div class="sn-empty">${state.note || "no exchanges yet"}</div>`;
  const exchange = (row) => html`<details class="sn-exchange">
    <summary>
      #${row.index} <b>${row.model || ""}</b> ${status(row.error ? "error" : String(row.status ?? "…"))}
      <span class="sn-meta"> ${seconds(row.duration)} · ${row.url}</span>
      ${row.error ? html`<span class="sn-note"> ${row.error}</span>` : nothing}
    </summary>
    <div class="sn-label">request</div>
    ${pre(row.request)}
    <div class="sn-label">response</div>
    ${pre(row.response)}
    <div class="sn-label">headers (redacted)</div>
    ${pre(row.headers)}
  </details>`;
  return html`<div class="sn-wire">
    ${state.note ? html`<div class="sn-earlier">${state.note}</div>` : nothing}
    ${listPager(view, state, "exchange")} ${repeat(exchanges, (row) => row.index, exchange)}
  </div>`;
}
