// The Timing tab: the run's waterfall, then each node's reported tokens and costs (estimated, reported).
// Its state: notebook/_timing_pane.py, timing_pane(); notebook/_waterfall.py, token_rollup().

import { html, nothing, repeat } from "../lit-html.js";
import { amount, seconds, status } from "./parts.js";
import { counted } from "./words.js";
import { waterfallChart } from "./waterfall.js";

// Timing: the run's spans on one time axis (as trace viewers draw them), then each node's
// tokens, own and with its subtree, its calls' estimated cost, and cost where a CLI reported one.
export function timing(view, state) {
  const { ui, send } = view;
  const fall = state.waterfall;
  if (!fall) return html`<div class="sn-empty">${state.empty || "no runs timed yet"}</div>`;
  const runs = state.runs || [];
  const pick = runs.length > 1
    ? html`<label class="sn-select"
        >run
        <select
          class="sn-wf-run"
          ?disabled=${!!ui.dead}
          @change=${(e) => send({ action: "focus", run: Number(e.target.value) })}
        >
          ${runs.map((n) => html`<option value=${n} .selected=${n === fall.run}>${n}</option>`)}
        </select></label
      >`
    : nothing;
  const top = (state.tokens || [])[0];
  return html`<div class="sn-timing">
    <div class="sn-wf-head">
      ${pick} <span>run ${fall.run} ${status(fall.status)} · ${seconds(fall.span / 1e6)}</span>
      ${top ? html`<span class="sn-meta">${tokenSummary(top)}</span>` : nothing}
      ${fall.folded
        ? html`<span class="sn-meta">
            · ${counted(fall.folded, "node")} folded into their parents' rows (select one to see its own)</span
          >`
        : nothing}
    </div>
    ${waterfallChart(view, fall)} ${tokenTable(view, state.tokens || [], state.tokens_more || 0)}
  </div>`;
}

function tokenSummary(row) {
  return (
    `${amount(row.subtree_prompt_tokens)} prompt + ${amount(row.subtree_completion_tokens)} ` +
    `completion tokens (reported)${row.subtree_unreported ? `, ${counted(row.subtree_unreported, "call")} unreported` : ""}` +
    (row.subtree_estimated_usd !== null ? ` · ${cost(row.subtree_estimated_usd)} (estimated)` : "") +
    (row.subtree_cost_usd !== null ? ` · ${cost(row.subtree_cost_usd)} (reported)` : "") +
    (row.unpriced.length ? ` · ${row.no_price} for ${row.unpriced.join(", ")}` : "")
  );
}

function cost(value) {
  return value < 0.01 ? `$${value.toFixed(4)}` : `$${value.toFixed(2)}`;
}

function tokenTable(view, rowsIn, more) {
  const { ui, focus } = view;
  if (!rowsIn.length) return nothing;
  const figure = (value, what) => html`<td class="sn-num" title=${`${value} ${what}`}>${amount(value)}</td>`;
  const estimate = (row) =>
    row.unreported
      ? html`<span class="sn-meta" title=${`${counted(row.unreported, "model call")} reported no usage; ${row.unreported === 1 ? "its view was" : "their views were"} estimated at ${counted(row.estimated_prompt_tokens, "token")}`}
          >+ ~${amount(row.estimated_prompt_tokens)} est.</span
        >`
      : nothing;
  // estimated: the model calls at their prices (genai-prices or prices=); reported: a CLI's own figure
  const estimateCell = (row) => {
    const unpriced = row.unpriced.length ? `; ${row.no_price} for ${row.unpriced.join(", ")}` : "";
    if (row.subtree_estimated_usd === null)
      return html`<td class="sn-meta sn-cost-estimated" title=${`no model call priced${unpriced}`}
        >${row.unpriced.length ? row.no_price : "—"}</td
      >`;
    return html`<td class="sn-num sn-cost-estimated" title=${`estimated from ${row.price_sources.join("; ")}${unpriced}`}>
      ${row.estimated_usd !== null ? cost(row.estimated_usd) : "—"} / ${cost(row.subtree_estimated_usd)}${unpriced ? " *" : ""}
    </td>`;
  };
  const costCell = (row) => {
    if (row.subtree_cost_usd === null)
      return html`<td class="sn-meta sn-cost-reported" title="no cost reported: only CLIs report one">—</td>`;
    const partial = row.priced < row.spent ? ` (${row.priced} of ${counted(row.spent, "node")} reported one)` : "";
    return html`<td class="sn-num sn-cost-reported" title=${`as the CLI reported it, at list price${partial}`}>
      ${row.cost_usd !== null ? cost(row.cost_usd) : "—"} / ${cost(row.subtree_cost_usd)}${partial ? " *" : ""}
    </td>`;
  };
  return html`<table class="sn-tokens">
    <thead>
      <tr>
        <th>node</th>
        <th title="model calls · tool calls">calls</th>
        <th title="reported by the endpoint or CLI, this node's own calls">own prompt</th>
        <th title="reported by the endpoint or CLI, this node's own calls">own completion</th>
        <th title="reported, this node and every node below it">subtree prompt</th>
        <th title="reported, this node and every node below it">subtree completion</th>
        <th title="the model calls at their prices: genai-prices or prices= (own / subtree)">estimated cost</th>
        <th title="reported by a CLI only (own / subtree)">reported cost</th>
      </tr>
    </thead>
    <tbody>
      ${repeat(
        rowsIn,
        (row) => row.path,
        (row) => html`<tr data-path=${row.path}>
          <td style=${`padding-left:${4 + Math.min(row.depth, 12) * 10}px`}>
            <button class="sn-link" ?disabled=${!!ui.dead} @click=${() => focus({ node: row.path })}>
              ${row.path.slice(row.path.lastIndexOf("/") + 1)}
            </button>
          </td>
          <td class="sn-num">${row.model_calls} · ${row.tool_calls}</td>
          <td class="sn-num" title=${`${row.prompt_tokens} prompt tokens (reported)`}>
            ${amount(row.prompt_tokens)} ${estimate(row)}
          </td>
          ${figure(row.completion_tokens, "completion tokens (reported)")}
          ${figure(row.subtree_prompt_tokens, "prompt tokens (reported), with the subtree")}
          ${figure(row.subtree_completion_tokens, "completion tokens (reported), with the subtree")}
          ${estimateCell(row)} ${costCell(row)}
        </tr>`,
      )}
    </tbody>
    ${more ? html`<caption class="sn-earlier">${counted(more, "more node")} not listed</caption>` : nothing}
  </table>`;
}
