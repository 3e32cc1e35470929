// The Tool calls tab: one card per call, its arguments, result and the child it started.
// Its state: notebook/_panes.py, tools_state().

import { html, nothing, repeat } from "../lit-html.js";
import { listPager, pre, seconds, status, token } from "./parts.js";

export function tools(view, state) {
  const { ui, focus } = view;
  const cards = state.cards || [];
  if (!cards.length) return html`<div class="sn-empty">no tool calls yet</div>`;
  const card = (c) => html`<div class="sn-card sn-card-${token(c.status)}" data-call=${c.call_id}>
    <div class="sn-card-head">
      <b>${c.name}</b> ${status(c.status)}
      <span class="sn-meta"> ${seconds(c.duration)} · ${c.call_id}</span>
      ${c.child
        ? html`<button class="sn-link" ?disabled=${!!ui.dead} @click=${() => focus({ node: c.child })}>
            open ${c.child}
          </button>`
        : nothing}
    </div>
    ${c.display_text ? html`<div class="sn-display">${c.display_text}</div>` : nothing}
    <div class="sn-label">arguments</div>
    ${pre(c.arguments)}
    ${c.result !== null ? html`<div class="sn-label">result</div>${pre(c.result, "sn-result")}` : nothing}
    ${(c.notes || []).map((note) => html`<div class="sn-note">${note}</div>`)}
  </div>`;
  return html`<div class="sn-cards">
    ${listPager(view, state, "call")} ${repeat(cards, (c) => c.call_id, card)}
  </div>`;
}
