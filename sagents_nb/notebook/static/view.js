// sagents_nb live view (anywidget ES module, no build step).
// Draws the state the kernel projects from events, patching the page in place (lit-html): an
// update never replaces a button being pressed, an open <details>, a focused field or a
// scrolled pane. Every string from models, tools, users and CLIs enters the page through
// lit-html's text and attribute bindings, never as HTML.

import { html, nothing, render as paint, repeat, svg } from "./lit-html.js";

const TABS = [
  ["transcript", "Transcript"],
  ["context", "Context"],
  ["tools", "Tool calls"],
  ["compaction", "Compaction"],
  ["wire", "Wire"],
  ["events", "Events"],
  ["timing", "Timing"],
];
const ACTIVE = new Set(["running", "spawned", "paused", "waiting"]);
const SHOWN = { spawned: "queued" };
const SUMMARY = ["running", "waiting", "paused", "queued", "done", "incomplete", "error", "cancelled"];

function token(value) {
  return String(value ?? "").replace(/[^a-zA-Z0-9_-]/g, "");
}

function shown(value) {
  return SHOWN[value] || value;
}

function pill(text, kind) {
  return html`<span class="sn-pill sn-${token(kind)}">${text}</span>`;
}

function status(value) {
  const label = shown(value);
  return html`<span class="sn-status sn-st-${token(label)}">${label}</span>`;
}

function pre(text, cls) {
  return html`<pre class=${cls ? `sn-pre ${cls}` : "sn-pre"}>${text ?? ""}</pre>`;
}

function seconds(value) {
  if (value === null || value === undefined) return "";
  return value < 1 ? `${Math.round(value * 1000)} ms` : `${value.toFixed(2)} s`;
}

// 4166244 -> "4.2 M": figures people compare at a glance (the exact value is in the title)
function amount(value) {
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

function earlier(count, what) {
  return count ? html`<div class="sn-earlier">${count} earlier ${what} not shown</div>` : nothing;
}

function walk(node, visit) {
  visit(node);
  for (const child of node.children || []) walk(child, visit);
}

function render({ model, el }) {
  const ui = {
    node: null, // the node the person chose (null: follow the paused or newest active one)
    tab: "transcript",
    wanted: null, // a focus change sent to the kernel whose pane has not arrived yet
    paneText: null,
    pane: {},
    dead: null, // why the kernel can no longer be reached
    collapsed: new Set(),
    filter: "",
    opened: new Set(), // seqs of the events whose JSON the person opened
    cursor: null, // the tree row that holds the keyboard focus (the tree's one tab stop)
    rows: [], // the tree rows on screen, in order, for the arrow keys
  };
  // ids for aria-controls / aria-labelledby, unique on the page
  const uid = `sn-${Math.random().toString(36).slice(2, 10)}`;
  let frame = 0;

  const schedule = () => {
    if (!frame) frame = requestAnimationFrame(draw);
  };
  const disconnect = (why) => {
    if (ui.dead) return;
    ui.dead = why;
    schedule();
  };
  const send = (message) => {
    if (ui.dead) return;
    try {
      model.send(message);
    } catch (error) {
      disconnect(`the kernel cannot be reached (${error && error.message ? error.message : error})`);
    }
  };

  function readPane() {
    const text = model.get("pane") || "{}";
    if (text !== ui.paneText) {
      ui.paneText = text;
      ui.pane = JSON.parse(text);
      const wanted = ui.wanted;
      const state = ui.pane;
      const chosen = state.chosen ?? null;
      const arrived =
        !wanted || (wanted.tab === state.tab && (!("node" in wanted) || wanted.node === chosen));
      if (arrived || Date.now() - wanted.at > 2000) {
        ui.wanted = null;
        ui.node = chosen;
        ui.tab = state.tab || "transcript";
      }
    }
    return ui.pane;
  }

  function focus(change) {
    if (ui.dead) return;
    if ("node" in change) ui.node = change.node;
    if ("tab" in change) ui.tab = change.tab;
    ui.wanted = { tab: ui.tab, at: Date.now(), ...("node" in change ? { node: change.node } : {}) };
    send({ action: "focus", ...change });
    schedule();
  }

  function draw() {
    frame = 0;
    const head = model.get("header") || {};
    const pane = readPane();
    const live = Boolean(head.live) && !ui.dead;
    paint(
      html`<div
        class=${ui.dead ? "sagents-view sn-disconnected" : "sagents-view"}
        aria-disabled=${ui.dead ? "true" : "false"}
      >
        ${header(head, live)}
        ${ui.dead
          ? html`<div class="sn-dead" role="status">
              disconnected: ${ui.dead}. This view shows the state it last had; run the cell
              again for a live view.
            </div>`
          : nothing}
        ${notice(head)} ${controls(head, live)} ${pending(head, live)}
        <div class="sn-body">
          ${tree(head, pane, live)}
          <div class="sn-main">${tabs()} ${paneView(head, pane)}</div>
        </div>
      </div>`,
      el,
    );
  }

  // header, notice, controls, pending decision

  function header(state, live) {
    const run = state.run;
    return html`<div class="sn-header">
      <span class="sn-title">sagents_nb · ${state.title || ""}</span>
      ${run ? html`<span class="sn-run">run ${run.number} ${status(run.status)}</span>` : nothing}
      ${state.llm ? html`<span class="sn-llm" title="endpoint">${state.llm}</span>` : nothing}
      ${live && state.preprocessors && state.preprocessors.length ? preprocessorSelect(state) : nothing}
      <span class="sn-count">${state.events || 0} events</span>
    </div>`;
  }

  function notice(state) {
    const message = state.notice || {};
    return html`<div class=${message.error ? "sn-notice sn-error" : "sn-notice"} role="status">
      ${message.text || ""}
    </div>`;
  }

  function controls(state, live) {
    const run = state.run;
    const open = live && run && (run.status === "running" || run.status === "paused");
    const button = (label, action, hint) =>
      html`<button
        class="sn-button"
        data-action=${action}
        title=${hint}
        ?disabled=${!open}
        @click=${() => send({ action })}
      >
        ${label}
      </button>`;
    const answer =
      run && run.text !== null && run.text !== undefined && !ACTIVE.has(run.status)
        ? html`<div class="sn-answer"><span class="sn-label">[${run.status}] </span>${run.text}</div>`
        : nothing;
    return html`<div class="sn-controls">
      ${live
        ? html`${button("Step", "step", "pause again before the very next action")}
          ${button("Resume", "resume", "run to the end without pausing")}
          ${button("Cancel", "cancel", "stop the run and its children")}`
        : nothing}
      ${answer}
    </div>`;
  }

  function preprocessorSelect(state) {
    const names = [...state.preprocessors];
    if (state.preprocessor && !names.includes(state.preprocessor)) names.push(state.preprocessor);
    const current = state.preprocessor || "none";
    return html`<label class="sn-select"
      >preprocessor
      <select
        class="sn-preprocessor"
        title="the session's message preprocessor"
        @change=${(e) => send({ action: "preprocessor", name: e.target.value })}
      >
        ${names.map(
          (name) =>
            html`<option
              value=${name}
              .selected=${name === current}
              ?disabled=${!state.preprocessors.includes(name)}
            >
              ${name}
            </option>`,
        )}
      </select></label
    >`;
  }

  function pending(state, live) {
    const first = (state.pending || [])[0];
    const shownPauses = first && live ? [first] : [];
    // keyed by pause: the editor keeps what the person typed until that pause ends
    return html`<div class=${shownPauses.length ? "sn-pending sn-pending-open" : "sn-pending"}>
      ${repeat(
        shownPauses,
        (pause) => pause.pause_id,
        (pause) => decision(pause, state.pending.length),
      )}
    </div>`;
  }

  function decision(pause, waiting) {
    const model_ = pause.action === "model";
    const what = model_
      ? `model request from ${pause.path}`
      : `${pause.action} call ${pause.name} from ${pause.path}`;
    const more = waiting > 1 ? ` (+${waiting - 1} more waiting)` : "";
    const decide = (action, extra) => send({ action, pause_id: pause.pause_id, ...extra });
    const root = (e) => e.target.closest(".sn-decision");
    return html`<div class="sn-decision" data-pause=${pause.pause_id}>
      <div class="sn-pending-what">${pill("paused", "paused")} before ${what}${more}</div>
      <div class="sn-label">${model_ ? "reply (for Edit)" : "arguments (JSON, for Edit)"}</div>
      <textarea
        class="sn-edit"
        aria-label=${model_ ? "reply to use (for Edit)" : "arguments as JSON (for Edit)"}
        rows="4"
        spellcheck="false"
        placeholder=${model_ ? "a reply to use instead of calling the model" : ""}
        .value=${model_ ? "" : pause.arguments || "{}"}
      ></textarea>
      <div class="sn-decide">
        <button class="sn-button sn-approve" @click=${() => decide("approve")}>Approve</button>
        <button
          class="sn-button"
          title="send the text above instead"
          @click=${(e) => decide("edit", { text: root(e).querySelector(".sn-edit").value })}
        >
          Edit
        </button>
        <button
          class="sn-button sn-reject"
          @click=${(e) => decide("reject", { reason: root(e).querySelector(".sn-reason").value })}
        >
          Reject
        </button>
        <input class="sn-reason" type="text" placeholder="reason (for Reject)" aria-label="reason (for Reject)" />
      </div>
    </div>`;
  }

  // tree

  function tree(head, pane, live) {
    const state = model.get("tree") || {};
    if (!state.id) return html`<div class="sn-tree"><div class="sn-empty">no runs yet</div></div>`;
    const selected = ui.node || pane.node || state.id;
    const counts = {};
    let total = 0;
    walk(state, (node) => {
      const label = shown(node.status);
      counts[label] = (counts[label] || 0) + 1;
      total += 1;
    });
    const summary = SUMMARY.filter((name) => counts[name] || ["running", "queued", "done"].includes(name))
      .map((name) => `${counts[name] || 0} ${name}`)
      .join(" · ");
    const visible = matching(state, ui.filter.trim().toLowerCase());
    const following = ui.node === null;
    ui.rows = visible === null || visible.has(state.id) ? treeRows(state, visible) : [];
    const cursor = ui.rows.some((row) => row.id === ui.cursor) ? ui.cursor : selected;
    return html`<div class="sn-tree">
      <div class="sn-tree-tools">
        <input
          class="sn-tree-filter"
          type="search"
          placeholder="filter nodes (name, status, prompt)"
          aria-label="filter the tree"
          .value=${ui.filter}
          @input=${(e) => {
            ui.filter = e.target.value;
            schedule();
          }}
        />
        <button
          class="sn-link sn-follow"
          title="select the paused or newest active node as the run goes"
          ?disabled=${following || !!ui.dead}
          @click=${() => focus({ node: null })}
        >
          ${following ? "following the run" : "follow the run"}
        </button>
      </div>
      <div class="sn-tree-summary">${total} nodes · ${summary}</div>
      ${live ? kindSelectors(head) : nothing}
      <div class="sn-tree-rows" role="tree" aria-label="delegation tree" @keydown=${treeKeys}>
        ${visible === null || visible.has(state.id)
          ? treeNode(state, 0, selected, head, visible, 1, 1, cursor)
          : html`<div class="sn-empty">no node matches “${ui.filter}”</div>`}
      </div>
    </div>`;
  }

  // The ids to show for a filter: matching nodes and their ancestors (null: no filter).
  function matching(root, text) {
    if (!text) return null;
    const keep = new Set();
    const visit = (node, trail) => {
      const haystack = [node.id, node.agent, node.kind, shown(node.status), node.prompt || ""]
        .join(" ")
        .toLowerCase();
      const path = [...trail, node.id];
      if (haystack.includes(text)) for (const id of path) keep.add(id);
      for (const child of node.children || []) visit(child, path);
    };
    visit(root, []);
    return keep;
  }

  function treeNode(node, depth, selected, state, visible, position, siblings, cursor) {
    const children = (node.children || []).filter((child) => visible === null || visible.has(child.id));
    const collapsed = ui.collapsed.has(node.id) && visible === null;
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
        aria-expanded=${children.length ? (collapsed ? "false" : "true") : nothing}
        aria-posinset=${position}
        aria-setsize=${siblings}
        tabindex=${node.id === cursor ? "0" : "-1"}
        title=${[node.id, node.display_text, node.detail].filter(Boolean).join("\n")}
        @click=${() => focus({ node: node.id })}
      >
        ${children.length
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
          title=${`${node.tokens} tokens: ${node.prompt_tokens ?? "?"} prompt + ` +
          `${node.completion_tokens ?? "?"} completion, as the endpoint reported them ` +
          "(this node and those below)"}
          >${node.turns} turns · ${amount(node.tokens)} tokens</span
        >
        ${collapsed && below ? html`<span class="sn-meta">(${below} below)</span>` : nothing}
        ${node.prompt ? html`<span class="sn-display" title=${node.prompt}>${node.prompt}</span>` : nothing}
        ${node.reattached
          ? html`<span class="sn-flag sn-reattached">reattached ×${node.reattached}</span>`
          : nothing}
      </div>
      ${(node.refused || []).map(
        (reason) => html`<div class="sn-refused-row">${pill("refused", "refused")} ${reason}</div>`,
      )}
      ${collapsed || !children.length
        ? nothing
        : html`<div class="sn-children" role="group">
            ${repeat(
              children,
              (child) => child.id,
              (child, i) => treeNode(child, depth + 1, selected, state, visible, i + 1, children.length, cursor),
            )}
          </div>`}
    </div>`;
  }

  // The rows on screen, in order (collapsed branches and filtered-out nodes left out).
  function treeRows(root, visible) {
    const found = [];
    const visit = (node, parent) => {
      const children = (node.children || []).filter((child) => visible === null || visible.has(child.id));
      const collapsed = ui.collapsed.has(node.id) && visible === null;
      found.push({ id: node.id, parent, expandable: children.length > 0, collapsed });
      if (!collapsed) for (const child of children) visit(child, node.id);
    };
    visit(root, null);
    return found;
  }

  // The WAI-ARIA tree pattern: arrows move, Left/Right fold, Home/End jump, Enter selects.
  function treeKeys(event) {
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
        if (row.expandable && row.collapsed) ui.collapsed.delete(row.id);
        else if (row.expandable) next = rows[at + 1];
        break;
      case "ArrowLeft":
        if (row.expandable && !row.collapsed) ui.collapsed.add(row.id);
        else next = rows.find((other) => other.id === row.parent);
        break;
      case "Enter":
      case " ":
        focus({ node: row.id });
        break;
      default:
        return;
    }
    event.preventDefault();
    if (next) {
      ui.cursor = next.id;
      const items = [...el.querySelectorAll('.sn-tree-rows [role="treeitem"]')];
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
  function kindSelectors(state) {
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

  // tabs and panes

  // The WAI-ARIA tabs pattern: one tab stop; arrows (wrapping), Home and End switch tabs.
  function tabKeys(event) {
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

  function tabs() {
    return html`<div class="sn-tabs" role="tablist" aria-label="panes of the selected node" @keydown=${tabKeys}>
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

  function paneView(head, state) {
    const draw = { transcript, context, tools, compaction, wire, events, timing }[state.tab] || transcript;
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
      ${title} ${state.empty ? html`<div class="sn-empty">${state.empty}</div>` : draw(state, head)}
    </div>`;
  }

  function message(row) {
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
    </div>`;
  }

  // Rows of an append-only list, keyed by their position in the whole list.
  function rows(items, skipped, draw) {
    return repeat(
      items.map((item, i) => [skipped + i, item]),
      ([at]) => at,
      ([, item]) => draw(item),
    );
  }

  function transcript(state) {
    const entries = state.entries || [];
    return html`<div class="sn-transcript">
      ${earlier(state.earlier, "messages")} ${rows(entries, state.earlier || 0, message)}
      ${state.streaming
        ? html`<div class="sn-msg sn-streaming">${pill("streaming", "running")}${state.streaming}</div>`
        : nothing}
      ${entries.length || state.streaming ? nothing : html`<div class="sn-empty">no messages yet</div>`}
    </div>`;
  }

  function context(state) {
    const chartRows = state.chart || [];
    if (!chartRows.length) return html`<div class="sn-empty">${state.note || "no model turns yet"}</div>`;
    const detail = state.detail;
    const go = (turn) => send({ action: "focus", turn });
    const column = (title, items, more) =>
      html`<div class="sn-column">
        <div class="sn-column-title">${title}</div>
        ${earlier(more, "items")} ${rows(items, more || 0, message)}
      </div>`;
    const sent = detail.view.length + detail.view_earlier;
    return html`<div class="sn-context">
      ${chart(chartRows, state.markers || [], state.legend || [], state.index, go)}
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
        <span> turn ${detail.turn} (${state.index + 1} of ${chartRows.length}) </span>
        <button
          class="sn-button"
          aria-label="next turn"
          title="next turn"
          ?disabled=${state.index >= chartRows.length - 1}
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
        ${column(viewTitle(detail, sent), detail.view, detail.view_earlier)}
        ${column(storageTitle(detail), detail.storage, detail.storage_earlier)}
      </div>
      ${detail.reply
        ? html`<div class="sn-reply">
            <div class="sn-column-title">
              Reply · ${seconds(detail.duration)}${detail.completion_tokens !== null
                ? ` · ${amount(detail.completion_tokens)} completion tokens (reported)`
                : ""}
            </div>
            ${message(detail.reply)}
          </div>`
        : nothing}
    </div>`;
  }

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
        ${group.replaced.length + group.replaced_more} message(s) that were in view
        ${group.already_out ? ` · ${group.already_out} more already out of view` : ""}
      </div>
      ${group.summary_text
        ? html`<div class="sn-change-summary">${pill("summary", "mark-summary")} ${group.summary_text}</div>`
        : nothing}
      <ul class="sn-change-list">${group.replaced.map(changeRow)}</ul>
      ${earlier(group.replaced_more, "replaced messages")}
    </div>`;
  }

  function contextChanges(changes, forgotten) {
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
        ${earlier(changes.added_more + changes.removed_more, "changes")}
        ${changes.compactions.map(compactionGroup)}
        ${changes.unnamed
          ? html`<div class="sn-meta">
              ${changes.unnamed} message(s) stored since the previous turn were hidden before a view showed them
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
      <summary>Forgotten by turn ${forgotten.turn}: ${forgotten.total} message(s) no longer in view</summary>
      ${forgotten.rows.length
        ? html`<ol class="sn-change-list">${forgotten.rows.map(row)}</ol>`
        : html`<div class="sn-empty">nothing forgotten: the view holds every message it has shown</div>`}
      ${forgotten.more ? html`<div class="sn-earlier">${forgotten.more} forgotten earlier not shown</div>` : nothing}
    </details>`;
  }

  // One counting rule per figure, each labelled with where it comes from.
  function viewTitle(detail, sent) {
    const reported =
      detail.prompt_tokens !== null && detail.prompt_tokens !== undefined
        ? ` · ${amount(detail.prompt_tokens)} prompt tokens (reported)`
        : "";
    return `View sent · ${sent} messages · ~${amount(detail.view_tokens)} tokens (estimated)${reported}`;
  }

  function storageTitle(detail) {
    const out = Object.entries(detail.left_out || {});
    const total = out.reduce((sum, [, count]) => sum + count, 0);
    const how = out.map(([mark, count]) => `${count} ${mark}`).join(", ");
    return (
      `Storage · ${detail.storage_items ?? detail.storage.length} items · ` +
      `${amount(detail.storage_tokens)} tokens (reported where known, else estimated) · ` +
      (total ? `${total} not in view (${how})` : "all in view")
    );
  }

  function chart(chartRows, markers, keys, index, go) {
    const width = 640;
    const height = 150;
    const pad = 34;
    const top = chartRows.reduce((m, r) => Math.max(m, r.view_tokens, r.storage_tokens), 1);
    const n = chartRows.length;
    const x = (i) => (n === 1 ? width / 2 : pad + (i * (width - 2 * pad)) / (n - 1));
    const y = (v) => height - pad + 10 - (v * (height - pad - 10)) / top;
    const line = (key, cls) =>
      svg`<polyline class=${cls} points=${chartRows.map((r, i) => `${x(i)},${y(r[key])}`).join(" ")}></polyline>`;
    const marks = markers.map((mark) => {
      const at = Math.min(n - 1, Math.max(0, mark.at - 0.5));
      const position = n === 1 ? x(0) : pad + (at * (width - 2 * pad)) / (n - 1);
      return svg`<line class="sn-marker sn-marker-${token(mark.type)}" x1=${position} y1="8" x2=${position} y2=${y(0)}
        ><title>${mark.title} (event ${mark.seq})</title></line>`;
    });
    const dots = chartRows.map(
      (r, i) =>
        svg`<circle class=${i === index ? "sn-dot sn-dot-selected" : "sn-dot"} cx=${x(i)} cy=${y(r.view_tokens)}
          r=${i === index ? 4 : 2.5} @click=${() => go(i)}
          ><title>${`turn ${r.turn}: view ${r.view_tokens} tokens (${r.view_messages} messages), ` +
          `storage ${r.storage_tokens} tokens (${r.storage_messages} messages)`}</title></circle>`,
    );
    return html`<div class="sn-chart-box">
      <svg class="sn-chart" viewBox=${`0 0 ${width} ${height}`} role="img">
        <title>context size per turn: view sent (solid) and storage (dashed), in tokens</title>
        <line class="sn-axis" x1=${pad} y1=${y(0)} x2=${width - pad} y2=${y(0)}></line>
        <text class="sn-axis-label" x="2" y=${y(top) + 4}>${amount(top)}</text>
        <text class="sn-axis-label" x="2" y=${y(0)}>0</text>
        <text class="sn-axis-label" x=${pad} y=${height - 4}>turn ${chartRows[0].turn}</text>
        <text class="sn-axis-label" x=${width - pad - 40} y=${height - 4}>turn ${chartRows[n - 1].turn}</text>
        ${line("storage_tokens", "sn-line-storage")} ${line("view_tokens", "sn-line-view")} ${marks} ${dots}
      </svg>
      <div class="sn-legend">
        <span class="sn-key sn-key-view">view</span>
        <span class="sn-key sn-key-storage">storage</span>
        ${keys.map(([type, label]) => html`<span class="sn-key sn-key-${token(type)}">${label}</span>`)}
      </div>
    </div>`;
  }

  function tools(state) {
    const cards = state.cards || [];
    if (!cards.length) return html`<div class="sn-empty">no tool calls yet</div>`;
    const card = (c) => html`<div class="sn-card sn-card-${token(c.status)}" data-call=${c.call_id}>
      <div class="sn-card-head">
        <b>${c.name}</b> ${status(c.status)}
        <span class="sn-meta"> ${seconds(c.duration)} · ${c.call_id}</span>
        ${c.child
          ? html`<button class="sn-link" ?disabled=${!!ui.dead} @click=${() => focus({ node: c.child })}>
              open ${c.child}
            </button>`
          : nothing}
      </div>
      ${c.display_text ? html`<div class="sn-display">${c.display_text}</div>` : nothing}
      <div class="sn-label">arguments</div>
      ${pre(c.arguments)}
      ${c.result !== null ? html`<div class="sn-label">result</div>${pre(c.result, "sn-result")}` : nothing}
      ${(c.notes || []).map((note) => html`<div class="sn-note">${note}</div>`)}
    </div>`;
    return html`<div class="sn-cards">
      ${earlier(state.earlier, "calls")} ${repeat(cards, (c) => c.call_id, card)}
    </div>`;
  }

  function compaction(state) {
    const entries = state.entries || [];
    if (!entries.length) return html`<div class="sn-empty">no compaction, sinking, trimming or swaps yet</div>`;
    const entry = (e) => html`<li class="sn-mark sn-mark-${token(e.type)}">
      <div><b>${e.title}</b><span class="sn-meta"> after turn ${e.at} · event ${e.seq}</span></div>
      <table class="sn-details">
        ${e.details.map(([k, v]) => html`<tr><th>${k}</th><td>${v}</td></tr>`)}
      </table>
      ${e.text ? html`<div class="sn-label">summary</div>${pre(e.text)}` : nothing}
      ${e.previews.length
        ? html`<ul class="sn-previews">${e.previews.map((p) => html`<li>${p}</li>`)}</ul>`
        : nothing}
    </li>`;
    return html`<ol class="sn-timeline">
      ${earlier(state.earlier, "entries")} ${repeat(entries, (e) => e.seq, entry)}
    </ol>`;
  }

  function wire(state) {
    const exchanges = state.exchanges || [];
    if (!exchanges.length) return html`<div class="sn-empty">${state.note || "no exchanges yet"}</div>`;
    const exchange = (row) => html`<details class="sn-exchange">
      <summary>
        #${row.index} <b>${row.model || ""}</b> ${status(row.error ? "error" : String(row.status ?? "…"))}
        <span class="sn-meta"> ${seconds(row.duration)} · ${row.url}</span>
        ${row.error ? html`<span class="sn-note"> ${row.error}</span>` : nothing}
      </summary>
      <div class="sn-label">request</div>
      ${pre(row.request)}
      <div class="sn-label">response</div>
      ${pre(row.response)}
      <div class="sn-label">headers (redacted)</div>
      ${pre(row.headers)}
    </details>`;
    return html`<div class="sn-wire">
      ${state.note ? html`<div class="sn-earlier">${state.note}</div>` : nothing}
      ${earlier(state.earlier, "exchanges")} ${repeat(exchanges, (row) => row.index, exchange)}
    </div>`;
  }

  function events(state, head) {
    const chosen = new Set(state.selected || []);
    const toggle = (type, on) => {
      const next = new Set(chosen);
      if (on) next.add(type);
      else next.delete(type);
      send({ action: "focus", types: [...next] });
    };
    const fork = (seq) => (event) => {
      event.preventDefault();
      event.stopPropagation();
      send({ action: "fork", seq });
    };
    const current = state.rows || [];
    // An opened event's JSON comes from the kernel (only opened ones carry it), and the event
    // stays open, and on screen, when newer events push it out of the window.
    const kept = state.kept || [];
    const remember = (row) => (event) => {
      const open = event.target.open;
      if (open === ui.opened.has(row.seq)) return;
      if (open) ui.opened.add(row.seq);
      else ui.opened.delete(row.seq);
      send({ action: "focus", opened: [...ui.opened] });
    };
    const eventRow = (row) => html`<details
      class="sn-event"
      data-seq=${row.seq}
      ?open=${ui.opened.has(row.seq)}
      @toggle=${remember(row)}
    >
      <summary>
        <span class="sn-seq">${row.seq}</span>
        <span class="sn-type">${row.type}</span>
        <span class="sn-path">${row.path}</span>
        <span class="sn-headline">${row.headline}</span>
        ${head.fork && !ui.dead
          ? html`<button class="sn-link sn-fork" title="branch a new session at this event" @click=${fork(row.seq)}>
              Fork here
            </button>`
          : nothing}
      </summary>
      ${row.json === undefined ? html`<div class="sn-earlier">loading…</div>` : pre(row.json)}
    </details>`;
    return html`<div class="sn-events">
      <div class="sn-filter">
        <span class="sn-label">types </span>
        ${repeat(
          Object.entries(state.types || {}),
          ([type]) => type,
          ([type, count]) =>
            html`<label class="sn-check"
              ><input
                type="checkbox"
                .checked=${chosen.has(type)}
                ?disabled=${!!ui.dead}
                data-type=${type}
                @change=${(e) => toggle(type, e.target.checked)}
              />${type} (${count})</label
            >`,
        )}
        <label class="sn-check"
          ><input
            type="checkbox"
            .checked=${Boolean(state.node_only)}
            ?disabled=${!!ui.dead}
            @change=${(e) => send({ action: "focus", node_only: e.target.checked })}
          />this node only</label
        >
        <span class="sn-meta"> showing ${current.length} of ${state.total}</span>
      </div>
      ${head.live && !head.fork
        ? html`<div class="sn-earlier">Fork here needs a durable session: sn.Session(agent, store=...)</div>`
        : nothing}
      ${kept.length ? html`<div class="sn-label">kept open</div>` : nothing}
      ${repeat([...kept, ...current], (row) => row.seq, eventRow)}
    </div>`;
  }

  // Timing: the run's spans on one time axis (as trace viewers draw them), then each node's
  // tokens, own and with its subtree, and cost where a CLI reported one.
  function timing(state) {
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
              · ${fall.folded} nodes folded into their parents' rows (select one to see its own)</span
            >`
          : nothing}
      </div>
      ${waterfallChart(fall)} ${tokenTable(state.tokens || [], state.tokens_more || 0)}
    </div>`;
  }

  function tokenSummary(row) {
    return (
      `${amount(row.subtree_prompt_tokens)} prompt + ${amount(row.subtree_completion_tokens)} ` +
      `completion tokens (reported)${row.subtree_unreported ? `, ${row.subtree_unreported} calls unreported` : ""}` +
      (row.subtree_cost_usd !== null ? ` · ${cost(row.subtree_cost_usd)} (reported)` : "")
    );
  }

  function cost(value) {
    return value < 0.01 ? `$${value.toFixed(4)}` : `$${value.toFixed(2)}`;
  }

  // An axis step of 1, 2 or 5 times a power of ten, for about six ticks.
  function tickStep(span) {
    const rough = span / 6;
    const power = 10 ** Math.floor(Math.log10(rough));
    return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= rough) || rough;
  }

  function waterfallChart(fall) {
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

  function tokenTable(rowsIn, more) {
    if (!rowsIn.length) return nothing;
    const figure = (value, what) => html`<td class="sn-num" title=${`${value} ${what}`}>${amount(value)}</td>`;
    const estimate = (row) =>
      row.unreported
        ? html`<span class="sn-meta" title=${`${row.unreported} model calls reported no usage; their views were estimated at ${row.estimated_prompt_tokens} tokens`}
            >+ ~${amount(row.estimated_prompt_tokens)} est.</span
          >`
        : nothing;
    const costCell = (row) => {
      if (row.subtree_cost_usd === null)
        return html`<td class="sn-meta" title="no cost reported: endpoints report usage, not prices">—</td>`;
      const partial = row.priced < row.spent ? ` (${row.priced} of ${row.spent} nodes reported one)` : "";
      return html`<td class="sn-num" title=${`as the CLI reported it, at list price${partial}`}>
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
          <th title="reported by a CLI only (own / subtree)">cost</th>
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
            ${costCell(row)}
          </tr>`,
        )}
      </tbody>
      ${more ? html`<caption class="sn-earlier">${more} more nodes not listed</caption>` : nothing}
    </table>`;
  }

  // A kernel restart or shutdown leaves this page's copy of the widget without a kernel: say so
  // instead of offering buttons that would throw "Cannot send".
  const onLive = () => disconnect("the kernel restarted or shut down");
  const onClose = () => disconnect("the kernel closed this view");
  model.on("change:header", schedule);
  model.on("change:tree", schedule);
  model.on("change:pane", schedule);
  model.on("comm_live_update", onLive);
  model.on("comm:close", onClose);
  draw();
  return () => {
    cancelAnimationFrame(frame);
    model.off("change:header", schedule);
    model.off("change:tree", schedule);
    model.off("change:pane", schedule);
    model.off("comm_live_update", onLive);
    model.off("comm:close", onClose);
  };
}

export default { render };
