// The Timing tab's waterfall: model calls, tool calls, pauses and children on one time axis.
// Its state: notebook/_waterfall.py, waterfall().

import { html, nothing, repeat, svg } from "../lit-html.js";
import { seconds, token } from "./parts.js";

// An axis step of 1, 2 or 5 times a power of ten, for about six ticks.
function tickStep(span) {
  const rough = span / 6;
  const power = 10 ** Math.floor(Math.log10(rough));
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= rough) || rough;
}

export function waterfallChart(view, fall) {
  const { focus } = view;
  const rowsIn = fall.rows || [];
  const width = 760;
  const labels = 230;
  const right = 12;
  const rowHeight = 18;
  const axis = 20;
  // times arrive in whole microseconds since the run's start
  const span = Math.max((fall.span || 0) / 1e6, 0.001);
  const at = (us) => (us === null || us === undefined ? null : us / 1e6);
  const x = (t) => labels + ((t ?? span) / span) * (width - labels - right);
  const height = axis + rowsIn.length * rowHeight + 4;
  const step = tickStep(span);
  const ticks = [];
  for (let t = 0; t <= span + step / 1000 && ticks.length < 30; t += step) ticks.push(t);
  const bar = (start, end, cls, hover) => {
    const left = x(start);
    return svg`<rect class=${end === null ? `${cls} sn-wf-open` : cls} x=${left} width=${Math.max(1.5, x(end) - left)}
      height=${rowHeight - 6}><title>${hover}</title></rect>`;
  };
  const during = (start, end) =>
    `${seconds(start)} → ${end === null ? "now" : seconds(end)} (${seconds((end ?? span) - start)}` +
    `${end === null ? " so far" : ""})`;
  const row = (item, i) => {
    const y = axis + i * rowHeight;
    const indent = 4 + Math.min(item.depth, 12) * 10;
    const room = Math.max(4, Math.floor((labels - indent - 4) / 6.5));
    const label = item.label.length > room ? `${item.label.slice(0, room - 1)}…` : item.label;
    const kind = token(item.kind);
    const bars =
      item.kind === "node"
        ? (item.segments || []).map(([startUs, beganUs, endUs, state, what]) => {
            const [start, began, end] = [at(startUs), at(beganUs), at(endUs)];
            const hover = `${item.path}: ${what}\n${during(start, end)}\n${state}`;
            const queued = began === null ? end : began;
            return svg`${queued !== start ? bar(start, queued, "sn-wf-queued", `queued · ${hover}`) : nothing}
              ${began !== null ? bar(began, end, `sn-wf-bar sn-wf-node sn-wf-${token(state)}`, hover) : nothing}`;
          })
        : bar(
            at(item.start),
            at(item.end),
            `sn-wf-bar sn-wf-${kind} sn-wf-${token(item.status)}`,
            `${item.label}\n${during(at(item.start), at(item.end))} · ${item.status}` +
              (item.title ? `\n${item.title}` : ""),
          );
    const open = item.kind === "node" ? () => focus({ node: item.path }) : null;
    return svg`<g class=${`sn-wf-row sn-wf-row-${kind}`} data-key=${item.key} data-kind=${item.kind}
        transform=${`translate(0 ${y})`}>
      <text class=${open ? "sn-wf-label sn-wf-link" : "sn-wf-label"} x=${indent} y=${rowHeight - 7}
        @click=${open || nothing}>${label}<title>${item.title || item.label}</title></text>
      <g transform="translate(0 2)">${bars}</g>
    </g>`;
  };
  return html`<div class="sn-wf-box">
    <svg class="sn-waterfall" viewBox=${`0 0 ${width} ${height}`} width=${width} height=${height} role="img">
      <title>run ${fall.run}: model calls, tool calls, pauses and children on one time axis</title>
      ${ticks.map(
        (t) => svg`<line class="sn-wf-tick" x1=${x(t)} y1=${axis - 4} x2=${x(t)} y2=${height}></line>
          <text class="sn-axis-label" x=${x(t) + 2} y=${axis - 8}>${seconds(t)}</text>`,
      )}
      ${repeat(rowsIn, (item) => item.key, row)}
    </svg>
    <div class="sn-legend">
      <span class="sn-key sn-wf-key-node">node's task</span>
      <span class="sn-key sn-wf-key-queued">queued</span>
      <span class="sn-key sn-wf-key-model">model call</span>
      <span class="sn-key sn-wf-key-tool">tool call</span>
      <span class="sn-key sn-wf-key-pause">paused</span>
    </div>
  </div>`;
}
