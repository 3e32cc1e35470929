// The Context tab's chart: context size per turn, with markers, zoomed by dragging or buttons.
// Its state: notebook/_context_pane.py, context_pane(), chart_point().

import { html, nothing, svg } from "../lit-html.js";
import { amount, token } from "./parts.js";
import { counted } from "./words.js";

// The kernel sends at most a few hundred points (each the largest turn of its bucket) and one
// marker per type and bucket, over the range of turns zoomed into: drag across the chart to
// zoom, or use the buttons.
export function chart(view, chartRows, markers, keys, index, go, range) {
  const { ui, send, schedule } = view;
  const width = 640;
  const height = 150;
  const pad = 34;
  const span = range || { first: 0, last: chartRows.length - 1, turns: chartRows.length, zoomed: false };
  const top = chartRows.reduce((m, r) => Math.max(m, r.view_tokens, r.storage_tokens), 1);
  const first = span.first;
  const wide = Math.max(1, span.last - span.first);
  const n = chartRows.length;
  const x = (i) => (span.last === span.first ? width / 2 : pad + ((i - first) * (width - 2 * pad)) / wide);
  const y = (v) => height - pad + 10 - (v * (height - pad - 10)) / top;
  const at = (r) => r.index ?? chartRows.indexOf(r);
  const line = (key, cls) =>
    svg`<polyline class=${cls} points=${chartRows.map((r) => `${x(at(r))},${y(r[key])}`).join(" ")}></polyline>`;
  const marks = markers.map((mark) => {
    const position = x(Math.min(span.last, Math.max(first, mark.at - 0.5)));
    const count = mark.count || 1;
    const title = count > 1 ? `${mark.title} and ${count - 1} more (events ${mark.seq}–${mark.last_seq})` : `${mark.title} (event ${mark.seq})`;
    return svg`<line class="sn-marker sn-marker-${token(mark.type)}" x1=${position} y1="8" x2=${position} y2=${y(0)}
      stroke-width=${count > 1 ? 3 : 2}><title>${title}</title></line>`;
  });
  const dots = chartRows.map((r) => {
    const i = at(r);
    const chosen = i <= index && index < i + (r.span || 1);
    const turnsText = (r.span || 1) > 1 ? `turns ${r.turn}–${r.last_turn} (largest)` : `turn ${r.turn}`;
    return svg`<circle class=${chosen ? "sn-dot sn-dot-selected" : "sn-dot"} cx=${x(i)} cy=${y(r.view_tokens)}
        r=${chosen ? 4 : n > 120 ? 1.5 : 2.5} @click=${() => go(i)}
        ><title>${`${turnsText}: view ~${counted(r.view_tokens, "token")} (${counted(r.view_messages, "message")}), ` +
        `storage ~${counted(r.storage_tokens, "token")} (${counted(r.storage_messages, "message")}), both estimated` +
        (r.prompt_tokens != null ? `; the endpoint measured ${counted(r.prompt_tokens, "prompt token")}` : "")}</title></circle>`;
  });
  const zoom = (from, to) => send({ action: "focus", zoom: from === null ? null : [from, to] });
  const toIndex = (event) => {
    const box = event.currentTarget.getBoundingClientRect();
    const vx = ((event.clientX - box.left) * width) / Math.max(1, box.width);
    return Math.round(first + ((vx - pad) * wide) / (width - 2 * pad));
  };
  const brushing = ui.brush;
  const down = (event) => {
    if (event.button !== 0 || ui.dead) return;
    ui.brush = { from: toIndex(event), to: toIndex(event) };
  };
  const move = (event) => {
    if (!ui.brush) return;
    ui.brush = { ...ui.brush, to: toIndex(event) };
    schedule();
  };
  const up = () => {
    const brush = ui.brush;
    ui.brush = null;
    if (brush && Math.abs(brush.to - brush.from) >= 2) zoom(Math.min(brush.from, brush.to), Math.max(brush.from, brush.to));
    schedule();
  };
  const around = (half) => {
    const middle = Math.min(span.turns - 1, Math.max(0, index));
    zoom(Math.max(0, middle - half), Math.min(span.turns - 1, middle + half));
  };
  const shownTurns = span.last - span.first + 1;
  return html`<div class="sn-chart-box">
    <svg class="sn-chart" viewBox=${`0 0 ${width} ${height}`} role="img"
      @pointerdown=${down} @pointermove=${move} @pointerup=${up} @pointerleave=${up}>
      <title>context size per turn: view sent (solid) and storage (dashed), in tokens estimated by one counter</title>
      <line class="sn-axis" x1=${pad} y1=${y(0)} x2=${width - pad} y2=${y(0)}></line>
      <text class="sn-axis-label" x="2" y=${y(top) + 4}>${amount(top)}</text>
      <text class="sn-axis-label" x="2" y=${y(0)}>0</text>
      <text class="sn-axis-label" x=${pad} y=${height - 4}>turn ${chartRows[0].turn}</text>
      <text class="sn-axis-label" x=${width - pad - 40} y=${height - 4}>turn ${chartRows[n - 1].last_turn ?? chartRows[n - 1].turn}</text>
      ${line("storage_tokens", "sn-line-storage")} ${line("view_tokens", "sn-line-view")} ${marks} ${dots}
      ${brushing
        ? svg`<rect class="sn-brush" x=${Math.min(x(brushing.from), x(brushing.to))} y="8"
            width=${Math.abs(x(brushing.to) - x(brushing.from))} height=${y(0) - 8}></rect>`
        : nothing}
    </svg>
    <div class="sn-chart-zoom">
      <span class="sn-meta sn-chart-range">turns ${first + 1}–${span.last + 1} of ${span.turns}${n < shownTurns ? ` · ${counted(n, "point")}` : ""}</span>
      <button class="sn-button sn-zoom-in" ?disabled=${!!ui.dead || shownTurns <= 8}
        @click=${() => around(Math.max(2, Math.floor(shownTurns / 4)))}>zoom in</button>
      <button class="sn-button sn-zoom-out" ?disabled=${!!ui.dead || !span.zoomed}
        @click=${() => (shownTurns * 2 >= span.turns ? zoom(null) : around(shownTurns))}>zoom out</button>
      <button class="sn-button sn-zoom-all" ?disabled=${!!ui.dead || !span.zoomed} @click=${() => zoom(null)}>whole run</button>
    </div>
    <div class="sn-legend">
      <span class="sn-key sn-key-view">view (estimated)</span>
      <span class="sn-key sn-key-storage">storage (estimated)</span>
      ${keys.map(([type, label]) => html`<span class="sn-key sn-key-${token(type)}">${label}</span>`)}
    </div>
  </div>`;
}
