// The Compaction tab: each compaction, sink, trim and swap, with its details.
// Its state: notebook/_panes.py, mark_state().

import { html, nothing, repeat } from "../lit-html.js";
import { listPager, pre, token } from "./parts.js";

export function compaction(view, state) {
  const entries = state.entries || [];
  if (!entries.length) return html`<div class="sn-empty">no compaction, sinking, trimming or swaps yet</div>`;
  const entry = (e) => html`<li class="sn-mark sn-mark-${token(e.type)}">
    <div><b>${e.title}</b><span class="sn-meta"> after turn ${e.at} · event ${e.seq}</span></div>
    <table class="sn-details">
      ${e.details.map(([k, v]) => html`<tr><th>${k}</th><td>${v}</td></tr>`)}
    </table>
    ${e.text ? html`<div class="sn-label">summary</div>${pre(e.text)}` : nothing}
    ${e.previews.length
      ? html`<ul class="sn-previews">${e.previews.map((p) => html`<li>${p}</li>`)}</ul>`
      : nothing}
  </li>`;
  return html`<ol class="sn-timeline">
    ${listPager(view, state, "entry", "start", "entries")} ${repeat(entries, (e) => e.seq, entry)}
  </ol>`;
}
