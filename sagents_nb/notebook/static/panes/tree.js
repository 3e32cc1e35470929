// The delegation tree: its filter, summary, kind selectors and rows (the WAI-ARIA tree pattern).
// Its state: notebook/_tree.py, Tree.state(): a node with many children lists a page of them and
// an aggregate row for the rest.

import { html, nothing, repeat } from "../lit-html.js";
import { amount, pill, shown, status } from "./parts.js";
import { counted } from "./words.js";

const SUMMARY = ["running", "waiting", "paused", "queued", "done", "incomplete", "error", "cancelled"];

export function tree(view, head, pane, live) {
  const { model, ui, focus, schedule, send } = view;
  const state = model.get("tree") || {};
  if (!state.id) return html`<div class="sn-tree"><div class="sn-empty">no runs yet</div></div>`;
  const selected = ui.node || pane.node || state.id;
  // every node by status, from the kernel: the rows listed are a part of them
  const summed = (state.summary && state.summary.statuses) || {};
  const total = (state.summary && state.summary.nodes) || 0;
  const summary = SUMMARY.filter((name) => summed[name] || ["running", "queued", "done"].includes(name))
    .map((name) => `${summed[name] || 0} ${name}`)
    .join(" · ");
  // the kernel filters (it looks through every node, listed or not) and says what for
  const filtered = Boolean((state.filter || "").trim());
  const none = filtered && state.matched === 0;
  ui.rows = none ? [] : treeRows(view, state, filtered);
  const cursor = ui.rows.some((row) => row.id === ui.cursor) ? ui.cursor : selected;
  return html`<div class="sn-tree">
    <div class="sn-tree-tools">
      <input
        class="sn-tree-filter"
        type="search"
        placeholder="filter nodes (name, status, prompt, tool)"
        aria-label="filter the tree"
        .value=${ui.filter}
        @input=${(e) => {
          ui.filter = e.target.value;
          send({ action: "tree", filter: ui.filter });
          schedule();
        }}
      />
      <button
        class="sn-link sn-follow"
        title="select the paused or newest active node as the run goes"
        ?disabled=${ui.node === null || !!ui.dead}
        @click=${() => focus({ node: null })}
      >
        ${ui.node === null ? "following the run" : "follow the run"}
      </button>
    </div>
    <div class="sn-tree-summary">${counted(total, "node")} · ${summary}</div>
    ${live ? kindSelectors(view, head) : nothing}
    <div class="sn-tree-rows" role="tree" aria-label="delegation tree" @keydown=${(event) => treeKeys(view, event)}>
      ${none
        ? html`<div class="sn-empty">no node matches “${state.filter}”</div>`
        : treeNode(view, state, 0, selected, filtered, 1, 1, cursor)}
    </div>
  </div>`;
}

// An aggregate row's words: "87 more children: 80 done, 7 error".
function moreWords(more) {
  const statuses = more.statuses.map(([name, count]) => `${count} ${shown(name)}`).join(", ");
  return `${counted(more.count, "more child", "more children")}: ${statuses}`;
}

// Opening an aggregate row lists a page more of the node's children (the kernel sends them).
function openMore(view, id, more) {
  view.send({ action: "tree", more: id, listed: more.listed + more.page });
}

function treeNode(view, node, depth, selected, filtered, position, siblings, cursor) {
  const { ui, focus, schedule } = view;
  const children = node.children || [];
  const more = node.more || null;
  const collapsed = ui.collapsed.has(node.id) && !filtered;
  const name = depth === 0 ? node.agent : node.id.slice(node.id.lastIndexOf("/") + 1);
  const toggle = (event) => {
    event.stopPropagation();
    if (ui.collapsed.has(node.id)) ui.collapsed.delete(node.id);
    else ui.collapsed.add(node.id);
    schedule();
  };
  const below = node.descendants || 0;
  return html`<div class="sn-branch">
    <div
      class=${node.id === selected ? "sn-node sn-selected" : "sn-node"}
      data-path=${node.id}
      role="treeitem"
      aria-level=${depth + 1}
      aria-selected=${node.id === selected ? "true" : "false"}
      aria-expanded=${children.length || more ? (collapsed ? "false" : "true") : nothing}
      aria-posinset=${position}
      aria-setsize=${siblings}
      tabindex=${node.id === cursor ? "0" : "-1"}
      title=${[node.id, node.display_text, node.detail].filter(Boolean).join("\n")}
      @click=${() => focus({ node: node.id })}
    >
      ${children.length || more
        ? html`<button
            class="sn-twist"
            title=${collapsed ? "expand" : "collapse"}
            tabindex="-1"
            aria-hidden="true"
            @click=${toggle}
          >
            ${collapsed ? "▸" : "▾"}
          </button>`
        : html`<span class="sn-twist-space"></span>`}
      <span class="sn-agent">${name}</span>
      <span class="sn-kind">${node.kind}</span>
      ${status(node.status)}
      <span
        class="sn-meta"
        title=${`${counted(node.tokens, "token")}: ${node.prompt_tokens ?? "?"} prompt + ` +
        `${node.completion_tokens ?? "?"} completion, as the endpoint reported them ` +
        "(this node and those below)"}
        >${counted(node.turns, "turn")} · ${counted(amount(node.tokens), "token")}</span
      >
      ${node.cost && node.cost.text
        ? html`<span class="sn-meta sn-cost" title=${`${node.cost.text} (this node and those below; estimated: at the model's price, reported: as the CLI gave it)`}
            >· ${costWords(node.cost)}</span
          >`
        : nothing}
      ${collapsed && below ? html`<span class="sn-meta">(${below} below)</span>` : nothing}
      ${node.prompt ? html`<span class="sn-display" title=${node.prompt}>${node.prompt}</span>` : nothing}
      ${node.reattached
        ? html`<span class="sn-flag sn-reattached">reattached ×${node.reattached}</span>`
        : nothing}
    </div>
    ${(node.refused || []).map(
      (reason) => html`<div class="sn-refused-row">${pill("refused", "refused")} ${reason}</div>`,
    )}
    ${collapsed || !(children.length || more)
      ? nothing
      : html`<div class="sn-children" role="group">
          ${repeat(
            children,
            (child) => child.id,
            (child, i) =>
              treeNode(view, child, depth + 1, selected, filtered, i + 1, children.length + (more ? 1 : 0), cursor),
          )}
          ${more ? moreRow(view, node.id, more, depth + 1, children.length + 1, cursor) : nothing}
        </div>`}
  </div>`;
}

// The children a node does not list, counted by status; Enter or a click lists a page more.
function moreRow(view, id, more, depth, position, cursor) {
  const key = `${id}\u0000more`;
  const words = moreWords(more);
  return html`<div
    class="sn-more-row"
    data-more=${id}
    data-path=${key}
    role="treeitem"
    aria-level=${depth + 1}
    aria-posinset=${position}
    aria-setsize=${position}
    tabindex=${key === cursor ? "0" : "-1"}
    title=${`list ${counted(Math.min(more.page, more.count), "more child", "more children")}`}
    @click=${() => openMore(view, id, more)}
  >
    <span class="sn-twist-space"></span><span class="sn-more-words">${words}</span>
  </div>`;
}

// The rows on screen, in order (collapsed branches left out; an aggregate row last among its
// siblings).
function treeRows(view, root, filtered) {
  const { ui } = view;
  const found = [];
  const visit = (node, parent) => {
    const children = node.children || [];
    const collapsed = ui.collapsed.has(node.id) && !filtered;
    found.push({ id: node.id, parent, expandable: children.length > 0 || !!node.more, collapsed });
    if (collapsed) return;
    for (const child of children) visit(child, node.id);
    if (node.more) found.push({ id: `${node.id}\u0000more`, parent: node.id, more: node.more, of: node.id });
  };
  visit(root, null);
  return found;
}

// The WAI-ARIA tree pattern: arrows move, Left/Right fold, Home/End jump, Enter selects.
function treeKeys(view, event) {
  const { ui, focus, schedule } = view;
  const item = event.target.closest('[role="treeitem"]');
  const rows = ui.rows;
  const at = item ? rows.findIndex((row) => row.id === item.dataset.path) : -1;
  if (at < 0 || event.altKey || event.ctrlKey || event.metaKey) return;
  const row = rows[at];
  let next = null;
  switch (event.key) {
    case "ArrowDown":
      next = rows[at + 1];
      break;
    case "ArrowUp":
      next = rows[at - 1];
      break;
    case "Home":
      next = rows[0];
      break;
    case "End":
      next = rows[rows.length - 1];
      break;
    case "ArrowRight":
      if (row.more) openMore(view, row.of, row.more);
      else if (row.expandable && row.collapsed) ui.collapsed.delete(row.id);
      else if (row.expandable) next = rows[at + 1];
      break;
    case "ArrowLeft":
      if (row.expandable && !row.collapsed) ui.collapsed.add(row.id);
      else next = rows.find((other) => other.id === row.parent);
      break;
    case "Enter":
    case " ":
      if (row.more) openMore(view, row.of, row.more);
      else focus({ node: row.id });
      break;
    default:
      return;
  }
  event.preventDefault();
  if (next) {
    ui.cursor = next.id;
    // this view's rows only: a fork's own view is nested in `el`
    const items = [...event.currentTarget.querySelectorAll('[role="treeitem"]')];
    const target = items.find((node) => node.dataset.path === next.id);
    if (target) {
      // the one tab stop moves now, not at the next frame: a Tab pressed at once leaves the tree
      for (const node of items) node.tabIndex = node === target ? 0 : -1;
      target.focus();
    }
  } else {
    ui.cursor = row.id;
  }
  schedule();
}

// One selector per agent (not per instance): the kind its next task runs with.
function kindSelectors(view, state) {
  const { send } = view;
  const current = state.agent_kinds || {};
  const options = state.kind_options || {};
  return html`<div class="sn-kinds">
    <span class="sn-label">kind for the next task:</span>
    ${repeat(
      Object.keys(current),
      (agent) => agent,
      (agent) => html`<label class="sn-kind-choice"
        >${agent}
        <select
          class="sn-kind-select"
          data-agent=${agent}
          title=${`the kind ${agent} uses from its next task`}
          @change=${(e) => send({ action: "kind", agent, kind: e.target.value })}
        >
          ${(options[agent] || [current[agent]]).map(
            (name) => html`<option value=${name} .selected=${name === current[agent]}>${name}</option>`,
          )}
        </select></label
      >`,
    )}
  </div>`;
}

// A node's cost in the tree: estimated (priced) and reported (a CLI's own) told apart.
function costWords(cost) {
  if (cost.waiting) return "pricing…";
  const parts = [];
  if (cost.estimated_usd !== null) parts.push(`$${cost.estimated_usd.toFixed(4)} est.`);
  if (cost.reported_usd !== null) parts.push(`$${cost.reported_usd.toFixed(4)} reported`);
  return parts.join(" + ") || "no price";
}
