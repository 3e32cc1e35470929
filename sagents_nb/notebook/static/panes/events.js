// The Events tab: the session's events filtered by type, each opened to its JSON, Fork here.
// Its state: notebook/_log_panes.py, events_pane().

import { html, nothing, repeat } from "../lit-html.js";
import { listPager, pre } from "./parts.js";

export function events(view, state, head) {
  const { ui, send } = view;
  const chosen = new Set(state.selected || []);
  const toggle = (type, on) => {
    const next = new Set(chosen);
    if (on) next.add(type);
    else next.delete(type);
    send({ action: "focus", types: [...next] });
  };
  const fork = (seq) => (event) => {
    event.preventDefault();
    event.stopPropagation();
    send({ action: "fork", seq });
  };
  const current = state.rows || [];
  // An opened event's JSON comes from the kernel (only opened ones carry it), and the event
  // stays open, and on screen, when newer events push it out of the window.
  const kept = state.kept || [];
  const remember = (row) => (event) => {
    const open = event.target.open;
    if (open === ui.opened.has(row.seq)) return;
    if (open) ui.opened.add(row.seq);
    else ui.opened.delete(row.seq);
    send({ action: "focus", opened: [...ui.opened] });
  };
  const eventRow = (row) => html`<details
    class=${row.seq === state.at ? "sn-event sn-at" : "sn-event"}
    data-seq=${row.seq}
    ?open=${ui.opened.has(row.seq)}
    @toggle=${remember(row)}
  >
    <summary>
      <span class="sn-seq">${row.seq}</span>
      <span class="sn-type">${row.type}</span>
      <span class="sn-path">${row.path}</span>
      <span class="sn-headline">${row.headline}</span>
      ${head.fork && !ui.dead
        ? html`<button class="sn-link sn-fork" title="branch a new session at this event" @click=${fork(row.seq)}>
            Fork here
          </button>`
        : nothing}
    </summary>
    ${row.json === undefined ? html`<div class="sn-earlier">loading…</div>` : pre(row.json)}
  </details>`;
  return html`<div class="sn-events">
    <div class="sn-filter">
      <span class="sn-label">types </span>
      ${repeat(
        Object.entries(state.types || {}),
        ([type]) => type,
        ([type, count]) =>
          html`<label class="sn-check"
            ><input
              type="checkbox"
              .checked=${chosen.has(type)}
              ?disabled=${!!ui.dead}
              data-type=${type}
              @change=${(e) => toggle(type, e.target.checked)}
            />${type} (${count})</label
          >`,
      )}
      <label class="sn-check"
        ><input
          type="checkbox"
          .checked=${Boolean(state.node_only)}
          ?disabled=${!!ui.dead}
          @change=${(e) => send({ action: "focus", node_only: e.target.checked })}
        />this node only</label
      >
      <span class="sn-meta sn-events-count"> ${state.showing}</span>
    </div>
    ${listPager(view, state, "event")}
    ${head.live && !head.fork
      ? html`<div class="sn-earlier">Fork here needs a durable session: sn.Session(agent, store=...)</div>`
      : nothing}
    ${kept.length ? html`<div class="sn-label">kept open</div>` : nothing}
    ${repeat([...kept, ...current], (row) => row.seq, eventRow)}
  </div>`;
}
