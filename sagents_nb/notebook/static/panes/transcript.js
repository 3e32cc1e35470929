// The Transcript tab: the node's messages, a page at a time, and the text streaming in.
// Its state: notebook/_panes.py, transcript_pane().

import { html, nothing } from "../lit-html.js";
import { listPager, message, pill, rows } from "./parts.js";

export function transcript(view, state) {
  const entries = state.entries || [];
  return html`<div class="sn-transcript">
    ${listPager(view, state, "message")} ${rows(entries, state.earlier || 0, message)}
    ${state.streaming
      ? html`<div class="sn-msg sn-streaming">${pill("streaming", "running")}${state.streaming}</div>`
      : nothing}
    ${entries.length || state.streaming ? nothing : html`<div class="sn-empty">no messages yet</div>`}
  </div>`;
}
