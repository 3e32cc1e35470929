// sagents_nb live view (anywidget ES module, no build step).
// Draws the state the kernel projects from events. Every string from models, tools, users and
// CLIs enters the page as text (text nodes, textContent, attribute values), never as HTML.

const SVG = "http://www.w3.org/2000/svg";
const TABS = [
  ["transcript", "Transcript"],
  ["context", "Context"],
  ["tools", "Tool calls"],
  ["compaction", "Compaction"],
  ["wire", "Wire"],
  ["events", "Events"],
];
const ACTIVE = new Set(["running", "spawned", "paused", "waiting"]);

function h(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "value") node.value = value;
    else if (key === "checked") node.checked = Boolean(value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  add(node, children);
  return node;
}

function add(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
}

function fill(node, ...children) {
  node.replaceChildren();
  add(node, children);
}

function s(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  add(node, children);
  return node;
}

function token(value) {
  return String(value ?? "").replace(/[^a-zA-Z0-9_-]/g, "");
}

function pill(text, kind) {
  return h("span", { class: `sn-pill sn-${token(kind)}` }, text);
}

function status(value) {
  return h("span", { class: `sn-status sn-st-${token(value)}` }, value);
}

function pre(text, cls) {
  return h("pre", { class: cls ? `sn-pre ${cls}` : "sn-pre" }, text ?? "");
}

function seconds(value) {
  if (value === null || value === undefined) return "";
  return value < 1 ? `${Math.round(value * 1000)} ms` : `${value.toFixed(2)} s`;
}

function earlier(count, what) {
  return count ? h("div", { class: "sn-earlier" }, `${count} earlier ${what} not shown`) : null;
}

function render({ model, el }) {
  const paneState = () => JSON.parse(model.get("pane") || "{}");
  const initial = paneState();
  // `wanted`: a focus change sent to the kernel whose pane has not arrived yet.
  const ui = { node: initial.node || null, tab: initial.tab || "transcript", pauseId: null, wanted: null };
  const send = (message) => model.send(message);

  const header = h("div", { class: "sn-header" });
  const notice = h("div", { class: "sn-notice" });
  const controls = h("div", { class: "sn-controls" });
  const pending = h("div", { class: "sn-pending" });
  const tree = h("div", { class: "sn-tree" });
  const tabs = h("div", { class: "sn-tabs", role: "tablist" });
  const pane = h("div", { class: "sn-pane" });
  const root = h(
    "div",
    { class: "sagents-view" },
    header,
    notice,
    controls,
    pending,
    h("div", { class: "sn-body" }, tree, h("div", { class: "sn-main" }, tabs, pane)),
  );
  el.append(root);

  function focus(change) {
    if ("node" in change) ui.node = change.node;
    if ("tab" in change) ui.tab = change.tab;
    ui.wanted = { node: ui.node, tab: ui.tab, at: Date.now() };
    send({ action: "focus", ...change });
    drawTree();
    drawTabs();
  }

  // header, notice, controls, pending decision

  function drawHeader() {
    const state = model.get("header") || {};
    const run = state.run;
    const parts = [h("span", { class: "sn-title" }, "sagents_nb · ", state.title || "")];
    if (run) parts.push(h("span", { class: "sn-run" }, `run ${run.number} `, status(run.status)));
    if (state.llm) parts.push(h("span", { class: "sn-llm", title: "endpoint" }, state.llm));
    if (state.live && state.preprocessors && state.preprocessors.length) {
      parts.push(preprocessorSelect(state));
    }
    parts.push(h("span", { class: "sn-count" }, `${state.events || 0} events`));
    fill(header, parts);

    const message = state.notice || {};
    notice.className = message.error ? "sn-notice sn-error" : "sn-notice";
    notice.textContent = message.text || "";

    const open = state.live && run && (run.status === "running" || run.status === "paused");
    const button = (label, action, hint) =>
      h("button", { class: "sn-button", title: hint, disabled: !open, onclick: () => send({ action }) }, label);
    fill(
      controls,
      state.live
        ? [
            button("Step", "step", "pause again before the very next action"),
            button("Resume", "resume", "run to the end without pausing"),
            button("Cancel", "cancel", "stop the run and its children"),
          ]
        : null,
      run && run.text !== null && run.text !== undefined && !ACTIVE.has(run.status)
        ? h("div", { class: "sn-answer" }, h("span", { class: "sn-label" }, `[${run.status}] `), run.text)
        : null,
    );
    drawPending(state);
  }

  function preprocessorSelect(state) {
    const select = h("select", {
      class: "sn-preprocessor",
      title: "the session's message preprocessor",
      onchange: () => send({ action: "preprocessor", name: select.value }),
    });
    const names = [...state.preprocessors];
    if (state.preprocessor && !names.includes(state.preprocessor)) names.push(state.preprocessor);
    for (const name of names) {
      const option = h("option", { value: name }, name);
      if (!state.preprocessors.includes(name)) option.disabled = true;
      select.append(option);
    }
    select.value = state.preprocessor || "none";
    return h("label", { class: "sn-select" }, "preprocessor ", select);
  }

  function drawPending(state) {
    const first = (state.pending || [])[0];
    if (!first || !state.live) {
      ui.pauseId = null;
      fill(pending);
      return;
    }
    if (ui.pauseId === first.pause_id && pending.childElementCount) return;
    ui.pauseId = first.pause_id;
    const what =
      first.action === "model"
        ? `model request from ${first.path}`
        : `${first.action} call ${first.name} from ${first.path}`;
    const editor = h("textarea", {
      class: "sn-edit",
      rows: 4,
      spellcheck: "false",
      placeholder: first.action === "model" ? "a reply to use instead of calling the model" : "",
      value: first.action === "model" ? "" : first.arguments || "{}",
    });
    const reason = h("input", { class: "sn-reason", type: "text", placeholder: "reason (for Reject)" });
    const decide = (action, extra) => send({ action, pause_id: first.pause_id, ...extra });
    const more = state.pending.length > 1 ? ` (+${state.pending.length - 1} more waiting)` : "";
    fill(
      pending,
      h("div", { class: "sn-pending-what" }, pill("paused", "paused"), " before ", what, more),
      h("div", { class: "sn-label" }, first.action === "model" ? "reply (for Edit)" : "arguments (JSON, for Edit)"),
      editor,
      h(
        "div",
        { class: "sn-decide" },
        h("button", { class: "sn-button sn-approve", onclick: () => decide("approve") }, "Approve"),
        h(
          "button",
          {
            class: "sn-button",
            title: "send the text above instead",
            onclick: () => decide("edit", { text: editor.value }),
          },
          "Edit",
        ),
        h(
          "button",
          { class: "sn-button sn-reject", onclick: () => decide("reject", { reason: reason.value }) },
          "Reject",
        ),
        reason,
      ),
    );
  }

  // tree

  function drawTree() {
    const state = model.get("tree") || {};
    const head = model.get("header") || {};
    const selected = ui.node || state.id;
    if (!state.id) {
      fill(tree, h("div", { class: "sn-empty" }, "no runs yet"));
      return;
    }
    fill(tree, treeNode(state, 0, selected, head));
  }

  function treeNode(node, depth, selected, state) {
    const row = h(
      "div",
      {
        class: node.id === selected ? "sn-node sn-selected" : "sn-node",
        "data-path": node.id,
        title: node.detail ? `${node.id}\n${node.detail}` : node.id,
        onclick: () => focus({ node: node.id }),
      },
      h("span", { class: "sn-agent" }, node.agent),
      h("span", { class: "sn-kind" }, node.kind),
      status(node.status),
      h("span", { class: "sn-meta" }, `${node.turns} turns · ${node.tokens} tokens`),
      node.display_text && ACTIVE.has(node.status) ? h("span", { class: "sn-display" }, node.display_text) : null,
      node.reattached ? h("span", { class: "sn-flag sn-reattached" }, `reattached ×${node.reattached}`) : null,
      depth > 0 && state.live ? kindSelect(node, state) : null,
    );
    const refused = (node.refused || []).map((reason) =>
      h("div", { class: "sn-refused-row" }, pill("refused", "refused"), " ", reason),
    );
    const children = (node.children || []).map((child) => treeNode(child, depth + 1, selected, state));
    return h("div", { class: "sn-branch" }, row, refused, h("div", { class: "sn-children" }, children));
  }

  function kindSelect(node, state) {
    const current = (state.agent_kinds || {})[node.agent];
    const select = h("select", {
      class: "sn-kind-select",
      "data-agent": node.agent,
      title: `kind ${node.agent} uses from its next task`,
      onclick: (event) => event.stopPropagation(),
      onchange: () => send({ action: "kind", agent: node.agent, kind: select.value }),
    });
    const names = [...(state.kinds || [])];
    if (current && !names.includes(current)) names.push(current);
    for (const name of names) select.append(h("option", { value: name }, name));
    select.value = current || "";
    return select;
  }

  // tabs and panes

  function drawTabs() {
    fill(
      tabs,
      TABS.map(([name, label]) =>
        h(
          "button",
          {
            class: name === ui.tab ? "sn-tab sn-active" : "sn-tab",
            role: "tab",
            "data-tab": name,
            onclick: () => focus({ tab: name }),
          },
          label,
        ),
      ),
    );
  }

  function drawPane() {
    const state = paneState();
    const wanted = ui.wanted;
    const arrived = !wanted || (wanted.tab === state.tab && (!wanted.node || wanted.node === state.node));
    if (arrived || Date.now() - wanted.at > 2000) {
      ui.wanted = null;
      ui.node = state.node || null;
      ui.tab = state.tab || "transcript";
      drawTree();
    }
    const draw = { transcript, context, tools, compaction, wire, events }[state.tab] || transcript;
    const title = state.node ? h("div", { class: "sn-pane-title" }, state.node) : null;
    fill(pane, title, state.empty ? h("div", { class: "sn-empty" }, state.empty) : draw(state));
    drawTabs();
  }

  function message(row) {
    return h(
      "div",
      { class: `sn-msg sn-role-${token(row.role)}` },
      h(
        "div",
        { class: "sn-msg-head" },
        pill(row.role, `role-${row.role}`),
        row.name ? h("span", { class: "sn-name" }, row.name) : null,
        row.status && row.status !== "ok" ? status(row.status) : null,
        row.mark ? pill(row.mark, `mark-${row.mark}`) : null,
      ),
      row.text ? h("div", { class: "sn-text" }, row.text) : null,
      (row.calls || []).map((call) =>
        h("div", { class: "sn-call" }, "→ ", h("b", {}, call.name), " ", h("code", {}, call.arguments)),
      ),
      row.sent_as
        ? h("details", { class: "sn-sent-as" }, h("summary", {}, "sent to the model as"), pre(row.sent_as))
        : null,
    );
  }

  function transcript(state) {
    return h(
      "div",
      { class: "sn-transcript" },
      earlier(state.earlier, "messages"),
      (state.entries || []).map(message),
      state.streaming
        ? h("div", { class: "sn-msg sn-streaming" }, pill("streaming", "running"), state.streaming)
        : null,
      (state.entries || []).length || state.streaming ? null : h("div", { class: "sn-empty" }, "no messages yet"),
    );
  }

  function context(state) {
    const rows = state.chart || [];
    if (!rows.length) return h("div", { class: "sn-empty" }, "no model turns yet");
    const detail = state.detail;
    const go = (turn) => send({ action: "focus", turn });
    const nav = h(
      "div",
      { class: "sn-turn-nav" },
      h("button", { class: "sn-button", disabled: state.index <= 0, onclick: () => go(state.index - 1) }, "◀"),
      h("span", {}, ` turn ${detail.turn} (${state.index + 1} of ${rows.length}) `),
      h(
        "button",
        { class: "sn-button", disabled: state.index >= rows.length - 1, onclick: () => go(state.index + 1) },
        "▶",
      ),
      h("button", { class: "sn-button", disabled: state.following, onclick: () => go(-1) }, "latest"),
      h(
        "span",
        { class: "sn-meta" },
        ` kind ${detail.kind} · model ${detail.model}`,
        detail.tool_choice ? ` · tool_choice ${detail.tool_choice}` : "",
      ),
    );
    const column = (title, items, more) =>
      h(
        "div",
        { class: "sn-column" },
        h("div", { class: "sn-column-title" }, title),
        earlier(more, "items"),
        items.map(message),
      );
    const sent = detail.view.length + detail.view_earlier;
    return h(
      "div",
      { class: "sn-context" },
      chart(rows, state.markers || [], state.legend || [], state.index, go),
      nav,
      h(
        "div",
        { class: "sn-columns" },
        column(`View sent · ${sent} messages · ${detail.view_tokens} tokens`, detail.view, detail.view_earlier),
        column(
          `Storage · ${detail.storage_tokens} tokens · ${detail.hidden} not in view`,
          detail.storage,
          detail.storage_earlier,
        ),
      ),
      detail.reply
        ? h(
            "div",
            { class: "sn-reply" },
            h("div", { class: "sn-column-title" }, `Reply · ${seconds(detail.duration)}`),
            message(detail.reply),
          )
        : null,
    );
  }

  function chart(rows, markers, keys, index, go) {
    const width = 640;
    const height = 150;
    const pad = 34;
    const top = rows.reduce((m, r) => Math.max(m, r.view_tokens, r.storage_tokens), 1);
    const n = rows.length;
    const x = (i) => (n === 1 ? width / 2 : pad + (i * (width - 2 * pad)) / (n - 1));
    const y = (v) => height - pad + 10 - (v * (height - pad - 10)) / top;
    const line = (key, cls) =>
      s("polyline", { class: cls, points: rows.map((r, i) => `${x(i)},${y(r[key])}`).join(" ") });
    const svg = s(
      "svg",
      { class: "sn-chart", viewBox: `0 0 ${width} ${height}`, role: "img" },
      s("title", {}, "context size per turn: view sent (solid) and storage (dashed), in tokens"),
      s("line", { class: "sn-axis", x1: pad, y1: y(0), x2: width - pad, y2: y(0) }),
      s("text", { class: "sn-axis-label", x: 2, y: y(top) + 4 }, String(top)),
      s("text", { class: "sn-axis-label", x: 2, y: y(0) }, "0"),
      s("text", { class: "sn-axis-label", x: pad, y: height - 4 }, `turn ${rows[0].turn}`),
      s("text", { class: "sn-axis-label", x: width - pad - 40, y: height - 4 }, `turn ${rows[n - 1].turn}`),
      line("storage_tokens", "sn-line-storage"),
      line("view_tokens", "sn-line-view"),
    );
    for (const mark of markers) {
      const at = Math.min(n - 1, Math.max(0, mark.at - 0.5));
      const position = n === 1 ? x(0) : pad + (at * (width - 2 * pad)) / (n - 1);
      svg.append(
        s(
          "line",
          { class: `sn-marker sn-marker-${token(mark.type)}`, x1: position, y1: 8, x2: position, y2: y(0) },
          s("title", {}, `${mark.title} (event ${mark.seq})`),
        ),
      );
    }
    rows.forEach((r, i) => {
      const dot = s(
        "circle",
        {
          class: i === index ? "sn-dot sn-dot-selected" : "sn-dot",
          cx: x(i),
          cy: y(r.view_tokens),
          r: i === index ? 4 : 2.5,
        },
        s(
          "title",
          {},
          `turn ${r.turn}: view ${r.view_tokens} tokens (${r.view_messages} messages), ` +
            `storage ${r.storage_tokens} tokens (${r.storage_messages} messages)`,
        ),
      );
      dot.addEventListener("click", () => go(i));
      svg.append(dot);
    });
    const legend = h(
      "div",
      { class: "sn-legend" },
      h("span", { class: "sn-key sn-key-view" }, "view"),
      h("span", { class: "sn-key sn-key-storage" }, "storage"),
      keys.map(([type, label]) => h("span", { class: `sn-key sn-key-${token(type)}` }, label)),
    );
    return h("div", { class: "sn-chart-box" }, svg, legend);
  }

  function tools(state) {
    const cards = state.cards || [];
    if (!cards.length) return h("div", { class: "sn-empty" }, "no tool calls yet");
    return h(
      "div",
      { class: "sn-cards" },
      earlier(state.earlier, "calls"),
      cards.map((card) =>
        h(
          "div",
          { class: `sn-card sn-card-${token(card.status)}`, "data-call": card.call_id },
          h(
            "div",
            { class: "sn-card-head" },
            h("b", {}, card.name),
            " ",
            status(card.status),
            h("span", { class: "sn-meta" }, ` ${seconds(card.duration)} · ${card.call_id}`),
            card.child
              ? h("button", { class: "sn-link", onclick: () => focus({ node: card.child }) }, `open ${card.child}`)
              : null,
          ),
          card.display_text ? h("div", { class: "sn-display" }, card.display_text) : null,
          h("div", { class: "sn-label" }, "arguments"),
          pre(card.arguments),
          card.result !== null ? [h("div", { class: "sn-label" }, "result"), pre(card.result, "sn-result")] : null,
          (card.notes || []).map((note) => h("div", { class: "sn-note" }, note)),
        ),
      ),
    );
  }

  function compaction(state) {
    const entries = state.entries || [];
    if (!entries.length) return h("div", { class: "sn-empty" }, "no compaction, sinking, trimming or swaps yet");
    return h(
      "ol",
      { class: "sn-timeline" },
      earlier(state.earlier, "entries"),
      entries.map((entry) =>
        h(
          "li",
          { class: `sn-mark sn-mark-${token(entry.type)}` },
          h(
            "div",
            {},
            h("b", {}, entry.title),
            h("span", { class: "sn-meta" }, ` after turn ${entry.at} · event ${entry.seq}`),
          ),
          h(
            "table",
            { class: "sn-details" },
            entry.details.map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, v))),
          ),
          entry.text ? [h("div", { class: "sn-label" }, "summary"), pre(entry.text)] : null,
          entry.previews.length ? h("ul", { class: "sn-previews" }, entry.previews.map((p) => h("li", {}, p))) : null,
        ),
      ),
    );
  }

  function wire(state) {
    const rows = state.exchanges || [];
    if (!rows.length) return h("div", { class: "sn-empty" }, state.note || "no exchanges yet");
    return h(
      "div",
      { class: "sn-wire" },
      state.note ? h("div", { class: "sn-earlier" }, state.note) : null,
      earlier(state.earlier, "exchanges"),
      rows.map((row) =>
        h(
          "details",
          { class: "sn-exchange" },
          h(
            "summary",
            {},
            `#${row.index} `,
            h("b", {}, row.model || ""),
            " ",
            status(row.error ? "error" : String(row.status ?? "…")),
            h("span", { class: "sn-meta" }, ` ${seconds(row.duration)} · ${row.url}`),
            row.error ? h("span", { class: "sn-note" }, ` ${row.error}`) : null,
          ),
          h("div", { class: "sn-label" }, "request"),
          pre(row.request),
          h("div", { class: "sn-label" }, "response"),
          pre(row.response),
          h("div", { class: "sn-label" }, "headers (redacted)"),
          pre(row.headers),
        ),
      ),
    );
  }

  function events(state) {
    const head = model.get("header") || {};
    const chosen = new Set(state.selected || []);
    const toggle = (type, on) => {
      const next = new Set(chosen);
      if (on) next.add(type);
      else next.delete(type);
      send({ action: "focus", types: [...next] });
    };
    const filter = h(
      "div",
      { class: "sn-filter" },
      h("span", { class: "sn-label" }, "types "),
      Object.entries(state.types || {}).map(([type, count]) =>
        h(
          "label",
          { class: "sn-check" },
          h("input", {
            type: "checkbox",
            checked: chosen.has(type),
            "data-type": type,
            onchange: (e) => toggle(type, e.target.checked),
          }),
          `${type} (${count})`,
        ),
      ),
      h(
        "label",
        { class: "sn-check" },
        h("input", {
          type: "checkbox",
          checked: state.node_only,
          onchange: (e) => send({ action: "focus", node_only: e.target.checked }),
        }),
        "this node only",
      ),
      h("span", { class: "sn-meta" }, ` showing ${(state.rows || []).length} of ${state.total}`),
    );
    const fork = (seq) => (event) => {
      event.preventDefault();
      event.stopPropagation();
      send({ action: "fork", seq });
    };
    return h(
      "div",
      { class: "sn-events" },
      filter,
      head.live && !head.fork
        ? h("div", { class: "sn-earlier" }, "Fork here needs a durable session: sn.Session(agent, store=...)")
        : null,
      (state.rows || []).map((row) =>
        h(
          "details",
          { class: "sn-event", "data-seq": row.seq },
          h(
            "summary",
            {},
            h("span", { class: "sn-seq" }, String(row.seq)),
            h("span", { class: "sn-type" }, row.type),
            h("span", { class: "sn-path" }, row.path),
            h("span", { class: "sn-headline" }, row.headline),
            head.fork
              ? h(
                  "button",
                  { class: "sn-link sn-fork", title: "branch a new session at this event", onclick: fork(row.seq) },
                  "Fork here",
                )
              : null,
          ),
          pre(row.json),
        ),
      ),
    );
  }

  const onHeader = () => {
    drawHeader();
    drawTree();
  };
  model.on("change:header", onHeader);
  model.on("change:tree", drawTree);
  model.on("change:pane", drawPane);
  drawHeader();
  drawTree();
  drawPane();
  return () => {
    model.off("change:header", onHeader);
    model.off("change:tree", drawTree);
    model.off("change:pane", drawPane);
  };
}

export default { render };
