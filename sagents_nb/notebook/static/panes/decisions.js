// The Decisions tab: every pause of the session and how it ended, kept after the run.
// Its state: notebook/_decision_pane.py, decisions_pane().

import { html, nothing, repeat } from "../lit-html.js";
import { argumentsDiff, earlier, pill, pre, token } from "./parts.js";

// Every pause of the session and how it ended, kept after the run (e.g. under Run All).
export function decisions(view, state) {
  const { ui, focus } = view;
  const entries = state.decisions || [];
  if (!entries.length) return html`<div class="sn-empty">no pauses yet: send with pause_on=... to step</div>`;
  const entry = (e) => html`<li class="sn-decision-entry sn-decided-${token(e.decision)}" data-pause=${e.seq}>
    <div>
      ${pill(e.decision, `verdict-${e.decision}`)} <b>${e.what}</b>
      <span class="sn-meta"> run ${e.run} · event ${e.seq}</span>
      <button class="sn-link" ?disabled=${!!ui.dead} @click=${() => focus({ node: e.path, tab: "transcript" })}>
        open ${e.path}
      </button>
    </div>
    ${e.reason ? html`<div class="sn-reason-text">reason: ${e.reason}</div>` : nothing}
    ${e.edited !== null && e.edited !== undefined
      ? argumentsDiff(e)
      : e.arguments !== null && e.arguments !== undefined
        ? html`<details><summary>arguments</summary>${pre(e.arguments)}</details>`
        : nothing}
    ${e.messages_diff ? messagesDiff(e.messages_diff) : nothing}
    ${e.reply !== null && e.reply !== undefined
      ? html`<div class="sn-label">reply used instead of calling the model</div>${pre(e.reply)}`
      : nothing}
  </li>`;
  return html`<ol class="sn-timeline sn-decisions">
    ${earlier(state.earlier, "pause")} ${repeat(entries, (e) => `${e.run}.${e.seq}`, entry)}
  </ol>`;
}

// An edit of a model request's messages: which messages changed, by position.
function messagesDiff(rows) {
  if (!rows.length) return html`<div class="sn-meta">messages edited: sent as they were</div>`;
  return html`<table class="sn-diff sn-messages-diff">
    <tr><th>message</th><th>about to be sent</th><th>sent instead</th></tr>
    ${rows.map(
      ([key, change, before, after]) => html`<tr class="sn-diff-${token(change)}">
        <th>${key} <span class="sn-meta">${change}</span></th>
        <td class="sn-diff-before">${before}</td>
        <td class="sn-diff-after">${after}</td>
      </tr>`,
    )}
  </table>`;
}
