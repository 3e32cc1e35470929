// Pieces more than one pane draws: pills, statuses, figures, the pager of long lists, a message.
// Its state: notebook/_render.py, message_state(); notebook/_paging.py, page_of().

import { html, nothing, repeat } from "../lit-html.js";
import { counted } from "./words.js";

const SHOWN = { spawned: "queued" };

export function token(value) {
  return String(value ?? "").replace(/[^a-zA-Z0-9_-]/g, "");
}

export function shown(value) {
  return SHOWN[value] || value;
}

export function pill(text, kind) {
  return html`<span class="sn-pill sn-${token(kind)}">${text}</span>`;
}

export function status(value) {
  const label = shown(value);
  return html`<span class="sn-status sn-st-${token(label)}">${label}</span>`;
}

export function pre(text, cls) {
  return html`<pre class=${cls ? `sn-pre ${cls}` : "sn-pre"}>${text ?? ""}</pre>`;
}

export function seconds(value) {
  if (value === null || value === undefined) return "";
  return value < 1 ? `${Math.round(value * 1000)} ms` : `${value.toFixed(2)} s`;
}

// 4166244 -> "4.2 M": figures people compare at a glance (the exact value is in the title)
export function amount(value) {
  const n = Number(value) || 0;
  const units = [
    [1e9, "G"],
    [1e6, "M"],
    [1e3, "k"],
  ];
  for (const [size, unit] of units) {
    if (Math.abs(n) >= size * 10 || (Math.abs(n) >= size && unit !== "k")) {
      const scaled = n / size;
      return `${scaled >= 100 ? Math.round(scaled) : scaled.toFixed(1).replace(/\.0$/, "")} ${unit}`;
    }
  }
  return String(n);
}

export function earlier(count, one, many = `${one}s`) {
  return count
    ? html`<div class="sn-earlier">${counted(count, `earlier ${one}`, `earlier ${many}`)} not shown</div>`
    : nothing;
}

export function walk(node, visit) {
  visit(node);
  for (const child of node.children || []) walk(child, visit);
}

// Long lists come a page at a time (the kernel sends only the page shown): older and newer
// pages, and back to the newest rows, which then follow the run. `one` names a row.
export function listPager(view, state, one, key = "start", many = `${one}s`) {
  const { ui, send } = view;
  const page = state.page;
  if (!page) return earlier(state.earlier, one, many);
  if (page.total <= page.size) return nothing;
  const go = (start) => send({ action: "focus", [key]: start });
  const first = page.start;
  const last = Math.min(page.total, first + page.size);
  const off = !!ui.dead;
  return html`<div
    class="sn-pager"
    data-start=${first}
    data-total=${page.total}
    data-following=${page.following ? "true" : "false"}
  >
    <button class="sn-button sn-oldest" ?disabled=${off || first <= 0} @click=${() => go(0)}>« oldest</button>
    <button
      class="sn-button sn-older"
      ?disabled=${off || first <= 0}
      @click=${() => go(Math.max(0, first - page.size))}
    >
      ◀ older
    </button>
    <span class="sn-meta sn-page-at">${many} ${first + 1}–${last} of ${page.total}</span>
    <button
      class="sn-button sn-newer"
      ?disabled=${off || last >= page.total}
      @click=${() => go(last + page.size >= page.total ? null : last)}
    >
      newer ▶
    </button>
    <button class="sn-button sn-newest" ?disabled=${off || page.following} @click=${() => go(null)}>
      newest »
    </button>
  </div>`;
}

// Rows of an append-only list, keyed by their position in the whole list.
export function rows(items, skipped, draw) {
  return repeat(
    items.map((item, i) => [skipped + i, item]),
    ([at]) => at,
    ([, item]) => draw(item),
  );
}

export function message(row) {
  return html`<div class="sn-msg sn-role-${token(row.role)}">
    <div class="sn-msg-head">
      ${pill(row.role, `role-${row.role}`)}
      ${row.name ? html`<span class="sn-name">${row.name}</span>` : nothing}
      ${row.status && row.status !== "ok" ? status(row.status) : nothing}
      ${row.mark ? pill(row.mark, `mark-${row.mark}`) : nothing}
    </div>
    ${row.text ? html`<div class="sn-text">${row.text}</div>` : nothing}
    ${row.facts ? html`<div class="sn-facts">${row.facts}</div>` : nothing}
    ${(row.calls || []).map(
      (call) => html`<div class="sn-call">→ <b>${call.name}</b> <code>${call.arguments}</code></div>`,
    )}
    ${row.sent_as
      ? html`<details class="sn-sent-as"><summary>sent to the model as</summary>${pre(row.sent_as)}</details>`
      : nothing}
    ${row.decided ? decided(row.decided) : nothing}
  </div>`;
}

// What was decided at the pause before a tool call; an edit shows the model's arguments
// against those the call ran with.
export function decided(state) {
  return html`<div class="sn-decided sn-decided-${token(state.decision)}">
    ${pill(`${state.decision} at a pause`, `verdict-${state.decision}`)}
    ${state.reason ? html`<span class="sn-reason-text">${state.reason}</span>` : nothing}
    ${state.edited !== null && state.edited !== undefined ? argumentsDiff(state) : nothing}
  </div>`;
}

export function argumentsDiff(state) {
  return html`<table class="sn-diff">
      <tr><th>argument</th><th>the model's</th><th>edited to</th></tr>
      ${(state.diff || []).map(
        ([key, change, before, after]) => html`<tr class="sn-diff-${token(change)}">
          <th>${key} <span class="sn-meta">${change}</span></th>
          <td class="sn-diff-before">${before}</td>
          <td class="sn-diff-after">${after}</td>
        </tr>`,
      )}
    </table>
    <details class="sn-diff-whole">
      <summary>whole arguments: original and edited</summary>
      <div class="sn-columns">
        <div class="sn-column"><div class="sn-column-title">original</div>${pre(state.arguments)}</div>
        <div class="sn-column"><div class="sn-column-title">edited</div>${pre(state.edited)}</div>
      </div>
    </details>`;
}
