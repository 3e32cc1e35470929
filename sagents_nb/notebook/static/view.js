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
  ["decisions", "Decisions"],
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
    brush: null, // a range of turns being dragged across the context chart
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
        ${forks(head)}
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
    // a fork taken mid-run (or a session reopened after a crash): Step and Resume continue it
    const cut = live && Boolean(state.resumable);
    const button = (label, action, hint) =>
      html`<button
        class="sn-button"
        data-action=${action}
        title=${cut && action !== "cancel" ? `${hint} (continues the cut run: session.resume())` : hint}
        ?disabled=${!open && !(cut && action !== "cancel")}
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
    const draw = { transcript, context, tools, compaction, wire, events, timing, decisions }[state.tab] || transcript;
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
      ${row.decided ? decided(row.decided) : nothing}
    </div>`;
  }

  // What was decided at the pause before a tool call; an edit shows the model's arguments
  // against those the call ran with.
  function decided(state) {
    return html`<div class="sn-decided sn-decided-${token(state.decision)}">
      ${pill(`${state.decision} at a pause`, `verdict-${state.decision}`)}
      ${state.reason ? html`<span class="sn-reason-text">${state.reason}</span>` : nothing}
      ${state.edited !== null && state.edited !== undefined ? argumentsDiff(state) : nothing}
    </div>`;
  }

  function argumentsDiff(state) {
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

  // Every pause of the session and how it ended, kept after the run (e.g. under Run All).
  function decisions(state) {
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
      ${e.reply !== null && e.reply !== undefined
        ? html`<div class="sn-label">reply used instead of calling the model</div>${pre(e.reply)}`
        : nothing}
    </li>`;
    return html`<ol class="sn-timeline sn-decisions">
      ${earlier(state.earlier, "pauses")} ${repeat(entries, (e) => `${e.run}.${e.seq}`, entry)}
    </ol>`;
  }

  // Long lists come a page at a time (the kernel sends only the page shown): older and newer
  // pages, and back to the newest rows, which then follow the run.
  function listPager(state, what, key = "start") {
    const page = state.page;
    if (!page) return earlier(state.earlier, what);
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
      <span class="sn-meta sn-page-at">${what} ${first + 1}–${last} of ${page.total}</span>
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
      ${listPager(state, "messages")} ${rows(entries, state.earlier || 0, message)}
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
    // each column a page of its own (view_start / storage_start), kept from turn to turn
    const column = (title, name) => {
      const skipped = detail[`${name}_earlier`] || 0;
      const pager = { page: detail[`${name}_page`], earlier: skipped };
      return html`<div class="sn-column" data-column=${name}>
        <div class="sn-column-title">${title}</div>
        ${listPager(pager, "items", `${name}_start`)} ${rows(detail[name], skipped, message)}
      </div>`;
    };
    const sent = detail.view_items ?? detail.view.length + detail.view_earlier;
    const turns = state.range ? state.range.turns : chartRows.length;
    return html`<div class="sn-context">
      ${chart(chartRows, state.markers || [], state.legend || [], state.index, go, state.range)}
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

  // The kernel sends at most a few hundred points (each the largest turn of its bucket) and one
  // marker per type and bucket, over the range of turns zoomed into: drag across the chart to
  // zoom, or use the buttons.
  function chart(chartRows, markers, keys, index, go, range) {
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
          ><title>${`${turnsText}: view ${r.view_tokens} tokens (${r.view_messages} messages), ` +
          `storage ${r.storage_tokens} tokens (${r.storage_messages} messages)`}</title></circle>`;
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
        <title>context size per turn: view sent (solid) and storage (dashed), in tokens</title>
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
        <span class="sn-meta sn-chart-range">turns ${first + 1}–${span.last + 1} of ${span.turns}${n < shownTurns ? ` · ${n} points` : ""}</span>
        <button class="sn-button sn-zoom-in" ?disabled=${!!ui.dead || shownTurns <= 8}
          @click=${() => around(Math.max(2, Math.floor(shownTurns / 4)))}>zoom in</button>
        <button class="sn-button sn-zoom-out" ?disabled=${!!ui.dead || !span.zoomed}
          @click=${() => (shownTurns * 2 >= span.turns ? zoom(null) : around(shownTurns))}>zoom out</button>
        <button class="sn-button sn-zoom-all" ?disabled=${!!ui.dead || !span.zoomed} @click=${() => zoom(null)}>whole run</button>
      </div>
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
      ${listPager(state, "calls")} ${repeat(cards, (c) => c.call_id, card)}
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
      ${listPager(state, "entries")} ${repeat(entries, (e) => e.seq, entry)}
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
      ${listPager(state, "exchanges")} ${repeat(exchanges, (row) => row.index, exchange)}
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
      ${listPager(state, "events")}
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

  // Sessions forked with "Fork here", each shown right below by its own live view (a widget
  // of its own, made by the kernel): its element is made once and kept across redraws.
  const forkSlots = new Map(); // model id -> { el, view }
  function forkSlot(fork) {
    let slot = forkSlots.get(fork.model);
    if (slot) return slot.el;
    slot = { el: document.createElement("div"), view: null };
    slot.el.className = "sn-forked-view";
    forkSlots.set(fork.model, slot);
    const manager = model.widget_manager;
    Promise.resolve()
      .then(() => manager.get_model(fork.model))
      .then((child) => manager.create_view(child))
      .then((view) => {
        slot.view = view;
        slot.el.appendChild(view.el);
      })
      .catch((error) => {
        slot.el.textContent =
          `the fork's view could not be shown here (${error && error.message ? error.message : error}); ` +
          `show it with sagents_nb.notebook.view(...) on this view's .forks[${fork.index}]`;
      });
    return slot.el;
  }

  function forks(state) {
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
          </div>
          ${forkSlot(fork)}
        </div>`,
      )}
    </div>`;
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
    for (const slot of forkSlots.values()) if (slot.view) slot.view.remove();
    model.off("change:header", schedule);
    model.off("change:tree", schedule);
    model.off("change:pane", schedule);
    model.off("comm_live_update", onLive);
    model.off("comm:close", onClose);
  };
}

export default { render };
