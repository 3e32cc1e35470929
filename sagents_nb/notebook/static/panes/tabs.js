// The tabs of the selected node (the WAI-ARIA tabs pattern) and the pane of the chosen one.
// Its state: notebook/_panes.py, pane_state().

import { html, nothing } from "../lit-html.js";
import { compaction } from "./compaction.js";
import { context } from "./context.js";
import { decisions } from "./decisions.js";
import { events } from "./events.js";
import { timing } from "./timing.js";
import { tools } from "./tools.js";
import { transcript } from "./transcript.js";
import { wire } from "./wire.js";

const TABS = [
  ["transcript", "Transcript"],
  ["context", "Context"],
  ["tools", "Tool calls"],
  ["compaction", "Compaction"],
  ["wire", "Wire"],
  ["events", "Events"],
  ["timing", "Timing"],
  ["decisions", "Decisions"],
];

// The WAI-ARIA tabs pattern: one tab stop; arrows (wrapping), Home and End switch tabs.
function tabKeys(view, event) {
  const { ui, focus } = view;
  const names = TABS.map(([name]) => name);
  const at = names.indexOf(event.target.dataset.tab);
  if (at < 0 || ui.dead) return;
  const next = {
    ArrowRight: (at + 1) % names.length,
    ArrowLeft: (at - 1 + names.length) % names.length,
    Home: 0,
    End: names.length - 1,
  }[event.key];
  if (next === undefined) return;
  event.preventDefault();
  focus({ tab: names[next] });
  const target = event.currentTarget.querySelector(`[data-tab="${names[next]}"]`);
  if (target) {
    for (const tab of event.currentTarget.querySelectorAll('[role="tab"]')) tab.tabIndex = tab === target ? 0 : -1;
    target.focus();
  }
}

export function tabs(view) {
  const { ui, uid, focus } = view;
  return html`<div class="sn-tabs" role="tablist" aria-label="panes of the selected node" @keydown=${(event) => tabKeys(view, event)}>
    ${TABS.map(
      ([name, label]) =>
        html`<button
          class=${name === ui.tab ? "sn-tab sn-active" : "sn-tab"}
          role="tab"
          id=${`${uid}-tab-${name}`}
          aria-controls=${`${uid}-panel`}
          aria-selected=${name === ui.tab ? "true" : "false"}
          tabindex=${name === ui.tab ? "0" : "-1"}
          data-tab=${name}
          ?disabled=${!!ui.dead && name !== ui.tab}
          @click=${() => focus({ tab: name })}
        >
          ${label}
        </button>`,
    )}
  </div>`;
}

export function paneView(view, head, state) {
  const { uid } = view;
  const draw = { transcript, context, tools, compaction, wire, events, timing, decisions }[state.tab] || transcript;
  const title = state.node
    ? html`<div class="sn-pane-title">
        ${state.node}${state.chosen ? "" : html` <span class="sn-meta">(following the run)</span>`}
      </div>`
    : nothing;
  return html`<div
    class="sn-pane"
    role="tabpanel"
    id=${`${uid}-panel`}
    aria-labelledby=${`${uid}-tab-${state.tab || "transcript"}`}
    data-tab=${state.tab || ""}
    data-node=${state.node || ""}
  >
    ${title} ${state.empty ? html`<div class="sn-empty">${state.empty}</div>` : draw(view, state, head)}
  </div>`;
}
