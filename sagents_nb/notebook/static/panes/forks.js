// The sessions forked from this one, below it.
// Its state: notebook/_widget.py, LiveView._fork_refs().

import { html, nothing, repeat } from "../lit-html.js";
import { pill } from "./parts.js";
import { counted } from "./words.js";

// Sessions forked with "Fork here", each shown right below by its own live view (a widget
// of its own, made by the kernel): its element is made once and kept across redraws.
function forkSlot(view, fork) {
  const { model, forkSlots } = view;
  let slot = forkSlots.get(fork.model);
  if (slot) return slot.el;
  slot = { el: document.createElement("div"), view: null };
  slot.el.className = "sn-forked-view";
  forkSlots.set(fork.model, slot);
  const manager = model.widget_manager;
  Promise.resolve()
    .then(() => manager.get_model(fork.model))
    .then((child) => manager.create_view(child))
    .then((childView) => {
      slot.view = childView;
      slot.el.appendChild(childView.el);
    })
    .catch((error) => {
      slot.el.textContent =
        `the fork's view could not be shown here (${error && error.message ? error.message : error}); ` +
        `show it with sagents_nb.notebook.view(...) on this view's .forks[${fork.index}]`;
    });
  return slot.el;
}

export function forks(view, state) {
  const list = state.forks || [];
  if (!list.length) return nothing;
  return html`<div class="sn-forks">
    ${repeat(
      list,
      (fork) => fork.model,
      (fork) => html`<div class="sn-forked" data-fork=${fork.id}>
        <div class="sn-forked-title">
          ${pill("fork", "fork")} branched at event ${fork.seq} · session ${fork.id} ·
          <span class="sn-meta">in Python: this view's <code>.forks[${fork.index}]</code></span>
          <button
            class="sn-button sn-compare"
            title="sn.diff(origin, fork): the first event where they part, each node's answer, tokens and turns"
            @click=${() => view.send({ action: "compare", index: fork.index })}
          >
            compare with origin
          </button>
        </div>
        ${fork.diff ? forkDiff(fork.diff) : nothing}
        ${forkSlot(view, fork)}
      </div>`,
    )}
  </div>`;
}

function sideText(side) {
  if (!side) return "(no such node)";
  return `${side.status} · ${side.kind} · ${counted(side.turns, "turn")} · ${counted(side.tokens, "token")}`;
}

// `sn.diff(origin, fork)`: where they part, and each node in both, side by side.
function forkDiff(found) {
  return html`<div class="sn-fork-diff">
    <div class="sn-fork-diff-first">${found.divergence}</div>
    <table>
      <thead>
        <tr><th></th><th>node</th><th>origin</th><th>origin's answer</th><th>fork</th><th>fork's answer</th></tr>
      </thead>
      <tbody>
        ${found.nodes.map(
          (node) => html`<tr class=${node.same ? "sn-same" : "sn-changed"} data-path=${node.path}>
            <td>${node.same ? "=" : "≠"}</td>
            <td><code>${node.path}</code></td>
            <td>${sideText(node.a)}</td>
            <td class="sn-fork-answer">${node.a ? node.a.answer || "" : ""}</td>
            <td>${sideText(node.b)}</td>
            <td class="sn-fork-answer">${node.b ? node.b.answer || "" : ""}</td>
          </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

// Each fork's view is removed with this one's.
export function removeForks(view) {
  for (const slot of view.forkSlots.values()) if (slot.view) slot.view.remove();
}
