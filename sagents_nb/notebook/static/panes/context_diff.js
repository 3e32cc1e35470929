// The Context tab's turn diff: what entered and left the view since the previous turn, and what
// the node forgot.
// Its state: notebook/_context_diff.py, diff_state(), forgotten_state().

import { html, nothing } from "../lit-html.js";
import { earlier, pill, token } from "./parts.js";
import { counted } from "./words.js";

// What entered and left the view since the previous turn, and what the node has forgotten:
// each change is labelled and signed (not told by colour alone).
const CHANGE_SIGN = {
  added: "+",
  recalled: "↺",
  sunk: "↓",
  trimmed: "✂",
  "left out": "−",
  summarised: "⊟",
  truncated: "✂",
  hidden: "−",
};

function changeText(row) {
  return row.text || (row.calls ? `calls ${row.calls.join(", ")}` : "");
}

function changeRow(row) {
  return html`<li class="sn-change sn-change-${token(row.change)}">
    <span class="sn-change-sign" aria-hidden="true">${CHANGE_SIGN[row.change] || "−"}</span>
    ${pill(row.change, `mark-${row.change}`)} ${pill(row.role, `role-${row.role}`)}
    <span class="sn-change-text">${changeText(row)}</span>
    <span class="sn-meta">${row.why || ""}${row.seq !== null && row.seq !== undefined ? ` · event ${row.seq}` : ""}</span>
  </li>`;
}

function compactionGroup(group) {
  const how = group.summary_text ? "summarised" : "truncated";
  return html`<div class="sn-change-group">
    <div>
      <span class="sn-change-sign" aria-hidden="true">${CHANGE_SIGN[how]}</span> ${pill(how, `mark-${how}`)}
      compaction by ${group.strategy} (${group.reason}) · event ${group.seq} ·
      ${counted(group.replaced.length + group.replaced_more, "message")} that were in view
      ${group.already_out ? ` · ${group.already_out} more already out of view` : ""}
    </div>
    ${group.summary_text
      ? html`<div class="sn-change-summary">${pill("summary", "mark-summary")} ${group.summary_text}</div>`
      : nothing}
    <ul class="sn-change-list">${group.replaced.map(changeRow)}</ul>
    ${earlier(group.replaced_more, "replaced message")}
  </div>`;
}

export function contextChanges(changes, forgotten) {
  if (!changes) return nothing;
  const title =
    changes.previous === null || changes.previous === undefined
      ? `Turn ${changes.turn}: the first view`
      : `Changes since turn ${changes.previous}`;
  if (!changes.known) {
    return html`<section class="sn-changes" aria-label="what changed since the previous turn">
      <div class="sn-column-title">${title}</div>
      <div class="sn-empty">${changes.note}</div>
    </section>`;
  }
  const counts = Object.entries(changes.counts || {})
    .map(([change, count]) => `${count} ${change}`)
    .join(" · ");
  return html`<section class="sn-changes" aria-label="what changed since the previous turn">
      <div class="sn-column-title">${title} · ${counts || "nothing changed"} · ${changes.kept} kept</div>
      ${changes.note ? html`<div class="sn-note">${changes.note}</div>` : nothing}
      <ul class="sn-change-list">
        ${changes.added.map(changeRow)} ${changes.removed.map(changeRow)}
      </ul>
      ${earlier(changes.added_more + changes.removed_more, "change")}
      ${changes.compactions.map(compactionGroup)}
      ${changes.unnamed
        ? html`<div class="sn-meta">
            ${counted(changes.unnamed, "message")} stored since the previous turn ${changes.unnamed === 1 ? "was" : "were"} hidden before a view showed ${changes.unnamed === 1 ? "it" : "them"}
          </div>`
        : nothing}
    </section>
    ${forgottenList(forgotten)}`;
}

function forgottenList(forgotten) {
  if (!forgotten) return nothing;
  const row = (r) => html`<li class="sn-change sn-change-${token(r.change)}">
    <span class="sn-change-sign" aria-hidden="true">${CHANGE_SIGN[r.change] || "−"}</span>
    <b class="sn-forgot-when">left at turn ${r.left}</b> ${pill(r.change, `mark-${r.change}`)}
    ${pill(r.role, `role-${r.role}`)} <span class="sn-change-text">${changeText(r)}</span>
    <span class="sn-meta"
      >${r.never_shown ? "" : `in view from turn ${r.entered} · `}${r.why}${r.seq !== null && r.seq !== undefined
        ? ` · event ${r.seq}`
        : ""}${r.then ? ` · ${r.then} (event ${r.then_seq})` : ""}</span
    >
  </li>`;
  return html`<details class="sn-forgotten" open>
    <summary>Forgotten by turn ${forgotten.turn}: ${counted(forgotten.total, "message")} no longer in view</summary>
    ${forgotten.rows.length
      ? html`<ol class="sn-change-list">${forgotten.rows.map(row)}</ol>`
      : html`<div class="sn-empty">nothing forgotten: the view holds every message it has shown</div>`}
    ${forgotten.more ? html`<div class="sn-earlier">${forgotten.more} forgotten earlier not shown</div>` : nothing}
  </details>`;
}
