// The Context tab: one turn's view and storage side by side, the turn picker, the reply.
// Its state: notebook/_context_pane.py, context_pane(), turn_detail().

import { html, nothing } from "../lit-html.js";
import { chart } from "./chart.js";
import { contextChanges } from "./context_diff.js";
import { amount, listPager, message, rows, seconds } from "./parts.js";
import { counted } from "./words.js";

export function context(view, state) {
  const { send } = view;
  const chartRows = state.chart || [];
  const next = state.about_to_send ? aboutToSend(state.about_to_send) : nothing;
  if (!chartRows.length)
    return state.about_to_send ? next : html`<div class="sn-empty">${state.note || "no model turns yet"}</div>`;
  const detail = state.detail;
  const go = (turn) => send({ action: "focus", turn });
  // each column a page of its own (view_start / storage_start), kept from turn to turn
  const column = (title, name) => {
    const skipped = detail[`${name}_earlier`] || 0;
    const pager = { page: detail[`${name}_page`], earlier: skipped };
    return html`<div class="sn-column" data-column=${name}>
      <div class="sn-column-title">${title}</div>
      ${listPager(view, pager, "item", `${name}_start`)} ${rows(detail[name], skipped, message)}
    </div>`;
  };
  const sent = detail.view_items ?? detail.view.length + detail.view_earlier;
  const turns = state.range ? state.range.turns : chartRows.length;
  return html`${next}<div class="sn-context">
    ${chart(view, chartRows, state.markers || [], state.legend || [], state.index, go, state.range)}
    <div class="sn-turn-nav">
      <button
        class="sn-button"
        aria-label="previous turn"
        title="previous turn"
        ?disabled=${state.index <= 0}
        @click=${() => go(state.index - 1)}
      >
        ◀
      </button>
      <span> turn ${detail.turn} (${state.index + 1} of ${turns}) </span>
      <button
        class="sn-button"
        aria-label="next turn"
        title="next turn"
        ?disabled=${state.index >= turns - 1}
        @click=${() => go(state.index + 1)}
      >
        ▶
      </button>
      <button class="sn-button" ?disabled=${state.following} @click=${() => go(-1)}>latest</button>
      <span class="sn-meta">
        kind ${detail.kind} · model ${detail.model}${detail.tool_choice ? ` · tool_choice ${detail.tool_choice}` : ""}
      </span>
    </div>
    ${contextChanges(state.changes, state.forgotten)}
    <div class="sn-columns">
      ${column(viewTitle(detail, sent), "view")} ${column(storageTitle(detail), "storage")}
    </div>
    ${detail.reply
      ? html`<div class="sn-reply">
          <div class="sn-column-title">
            Reply · ${seconds(detail.duration)}${detail.completion_tokens !== null
              ? ` · ${counted(amount(detail.completion_tokens), "completion token")} (reported)`
              : ""}
          </div>
          ${message(detail.reply)}
        </div>`
      : nothing}
  </div>`;
}

// The request a model pause stands before: what Approve sends.
function aboutToSend(request) {
  const tools = request.tools.length ? request.tools.join(", ") : "none";
  return html`<div class="sn-about-to-send" role="region" aria-label="request about to be sent">
    <div class="sn-column-title">
      Request about to be sent (paused) · ${counted(request.count, "message")} · ~${counted(amount(request.tokens), "token")}
      (estimated)
    </div>
    <div class="sn-meta">
      model ${request.model} · endpoint ${request.endpoint} · tools ${tools}${request.tool_choice
        ? ` · tool_choice ${request.tool_choice}`
        : ""}
    </div>
    ${request.earlier ? html`<div class="sn-meta">${request.earlier} earlier messages not shown</div>` : nothing}
    ${rows(request.messages, request.earlier, message)}
  </div>`;
}

// One counting rule per figure, each labelled with where it comes from.
function viewTitle(detail, sent) {
  const reported =
    detail.prompt_tokens !== null && detail.prompt_tokens !== undefined
      ? ` · ${counted(amount(detail.prompt_tokens), "prompt token")} (measured by the endpoint)`
      : "";
  return `View sent · ${counted(sent, "message")} · ~${counted(amount(detail.view_tokens), "token")} (estimated)${reported}`;
}

function storageTitle(detail) {
  const out = Object.entries(detail.left_out || {});
  const total = out.reduce((sum, [, count]) => sum + count, 0);
  const how = out.map(([mark, count]) => `${count} ${mark}`).join(", ");
  return (
    `Storage · ${counted(detail.storage_items ?? detail.storage.length, "item")} · ` +
    `~${counted(amount(detail.storage_tokens), "token")} (estimated, as the view) · ` +
    (total ? `${total} not in view (${how})` : "all in view")
  );
}
