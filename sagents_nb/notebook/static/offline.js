// The view without a kernel (a file saved by save_html, a notebook's static output): the same
// view module, drawing from a model that answers each click from the panes saved in the page
// (notebook/_offline.py, snapshot()). What it sends that needs a kernel (step, fork, kind...)
// gets a notice. Not part of the live view's module: a saved page joins it after that module.
// Its state: notebook/_offline.py, snapshot().

const REF = 1; // a string starting with U+0001 is a reference into the table of kept values
const SEP = "\u001f";
const SNIPPET = 40;
const FOUND = 50;

// The saved state, its kept values put back (each kept value decoded once, and shared).
function decode(saved) {
  const table = saved.table;
  const memo = new Map();
  const value = (item) => {
    if (typeof item === "string") {
      if (item.charCodeAt(0) !== REF) return item;
      const at = Number(item.slice(1));
      // a kept string is the text itself, never a reference
      if (!memo.has(at)) memo.set(at, typeof table[at] === "string" ? table[at] : value(table[at]));
      return memo.get(at);
    }
    if (Array.isArray(item)) return item.map(value);
    if (item && typeof item === "object") {
      const out = {};
      for (const [key, inner] of Object.entries(item)) out[key] = value(inner);
      return out;
    }
    return item;
  };
  return value(saved.root);
}

// notebook/_offline.py, focus_key()
function keyOf(node, tab, { turn = null, start = null, run = null, types = [], nodeOnly = false } = {}) {
  const n = (v) => (v === null || v === undefined ? "" : String(v));
  return [node || "", tab, n(turn), n(start), n(run), [...types].sort().join(","), nodeOnly ? "1" : ""].join(SEP);
}

function staticModel(state, mountView) {
  const handlers = new Map();
  const values = { header: { ...state.header }, tree: state.tree, found: {}, pane: "{}" };
  const focus = { node: null, tab: "transcript", turn: null, start: null, run: null, types: [], node_only: false };
  Object.assign(focus, { zoom: null, view_start: null, storage_start: null, at: null, opened: [] });
  const json = new Map(state.events);
  const seqs = state.rows.map((row) => row.seq);
  const nodes = new Set();
  const walkTree = (node) => {
    if (!node || !node.id) return;
    nodes.add(node.id);
    for (const child of node.children || []) walkTree(child);
  };
  walkTree(state.tree);
  // the saved pages of each list: where they begin, by the key without its start
  const starts = new Map();
  for (const key of Object.keys(state.keys)) {
    const parts = key.split(SEP);
    if (parts[3] === "") continue;
    const base = [...parts.slice(0, 3), "", ...parts.slice(4)].join(SEP);
    if (!starts.has(base)) starts.set(base, []);
    starts.get(base).push(Number(parts[3]));
  }
  for (const list of starts.values()) list.sort((a, b) => a - b);
  let noticeId = 0;

  const emit = (name) => {
    for (const callback of [...(handlers.get(name) || [])]) callback();
  };
  const notify = (text) => {
    values.header = { ...values.header, notice: { id: ++noticeId, text, error: false } };
    emit("change:header");
  };

  // the saved page that shows row `start` of the list: the last one beginning at or before it
  function savedStart(base, start) {
    if (start === null) return null;
    const list = starts.get(base) || [];
    let found = null;
    for (const at of list) if (at <= start) found = at;
    return found === null ? (list.length ? list[0] : null) : found;
  }

  function lookup() {
    // what each tab's pane depends on (the rest of the focus is kept for when it comes back)
    const { node, tab } = focus;
    const turn = tab === "context" ? focus.turn : null;
    const run = tab === "timing" ? focus.run : null;
    const types = tab === "events" ? focus.types : [];
    const nodeOnly = tab === "events" && focus.node_only && node !== null;
    // the whole event log is the same whichever node is chosen: saved once
    const at = tab === "events" && !nodeOnly ? null : node;
    const base = keyOf(at, tab, { turn, run, types, nodeOnly });
    const start = savedStart(base, focus.start);
    const tries = [
      keyOf(at, tab, { turn, start, run, types, nodeOnly }),
      base,
      keyOf(at, tab, { turn, run }),
      keyOf(at, tab),
      keyOf(null, tab),
    ];
    const hit = tries.findIndex((key) => key in state.keys);
    const paged = (starts.get(base) || []).length > 0;
    const partial = hit > 1 || (hit === 1 && focus.start !== null && paged);
    const zoomed = focus.zoom !== null || focus.view_start !== null || focus.storage_start !== null;
    if (hit < 0) return [{ node, chosen: node, tab, empty: state.left_out }, true];
    const [index, path] = state.keys[tries[hit]];
    // a pane's node as the kernel names it (the Timing tab's may be the run's root), but the event
    // log's, saved once, is the chosen node's
    const pane = { ...state.panes[index], node: at === node ? path : node, chosen: node, tab };
    if (tab === "events") {
      pane.at = focus.at;
      const shown = new Set((pane.rows || []).map((row) => row.seq));
      pane.rows = (pane.rows || []).map((row) => ({ ...row, json: json.get(row.seq) }));
      pane.kept = focus.opened
        .filter((seq) => !shown.has(seq) && seqs.includes(seq))
        .map((seq) => ({ ...state.rows[seqs.indexOf(seq)], json: json.get(seq) }));
    }
    return [pane, partial || (zoomed && tab === "context")];
  }

  function refresh() {
    const [pane, partial] = lookup();
    values.pane = JSON.stringify(pane);
    const told = (values.header.notice || {}).text === state.left_out;
    if (partial) notify(state.left_out);
    else if (told) notify("");
    emit("change:pane");
  }

  function goTo(seq, choose) {
    const at = seqs.indexOf(seq);
    if (at < 0) {
      notify(`there is no event #${seq} in this view`);
      return;
    }
    const row = state.rows[at];
    if (choose && nodes.has(row.path) && row.path !== focus.node) {
      focus.node = row.path;
      focus.turn = null;
    }
    Object.assign(focus, { tab: "events", types: [], node_only: false, at: seq, start: at });
    focus.opened = [...new Set([...focus.opened, seq])];
  }

  // notebook/_controls.py, _focus(): the same rules
  function onFocus(message) {
    const has = (name) => name in message;
    if (has("node")) {
      const node = typeof message.node === "string" ? message.node : null;
      if (node !== focus.node) focus.turn = null;
      focus.node = node;
    }
    if (state.tabs.includes(message.tab)) focus.tab = message.tab;
    if (has("turn")) focus.turn = Number.isInteger(message.turn) && message.turn >= 0 ? message.turn : null;
    if (Array.isArray(message.types)) focus.types = message.types.map(String);
    if (has("node_only")) focus.node_only = Boolean(message.node_only);
    if (has("run")) focus.run = Number.isInteger(message.run) ? message.run : null;
    if (Array.isArray(message.opened)) focus.opened = message.opened.filter(Number.isInteger);
    if (["node", "tab", "types", "node_only"].some(has) && !has("start")) focus.start = null;
    if (has("node") && !has("zoom")) focus.zoom = null;
    if (has("start")) focus.start = Number.isInteger(message.start) && message.start >= 0 ? message.start : null;
    if (has("zoom")) focus.zoom = Array.isArray(message.zoom) ? message.zoom : null;
    if (has("node") || has("tab")) {
      focus.view_start = focus.storage_start = null;
      focus.at = null;
    }
    for (const name of ["view_start", "storage_start"])
      if (has(name)) focus[name] = Number.isInteger(message[name]) && message[name] >= 0 ? message[name] : null;
    if (has("seq")) goTo(message.seq, !has("node"));
    refresh();
  }

  // notebook/_search.py: the events whose saved JSON holds the query (case folded)
  let query = "";
  function onSearch(message) {
    if ("query" in message) query = String(message.query || "");
    const wanted = query.trim().toLocaleLowerCase();
    if (!wanted) {
      values.found = {};
      emit("change:found");
      return;
    }
    const matches = [];
    for (const row of state.rows) {
      const text = json.get(row.seq) || "";
      const at = text.toLocaleLowerCase().indexOf(wanted);
      if (at >= 0) matches.push([row, text, at]);
    }
    const start = Number.isInteger(message.start) ? Math.max(0, message.start) : 0;
    const page = matches.slice(start, start + FOUND).map(([row, text, at]) => ({
      seq: row.seq,
      path: row.path,
      node: row.path,
      type: row.type,
      before: (at > SNIPPET ? "…" : "") + text.slice(Math.max(0, at - SNIPPET), at),
      match: text.slice(at, at + wanted.length),
      after: text.slice(at + wanted.length, at + wanted.length + SNIPPET) + "…",
    }));
    values.found = {
      query,
      rows: page,
      page: { start, total: matches.length, size: FOUND, following: false },
      note: matches.length ? null : `nothing matches “${query.trim()}”`,
    };
    emit("change:found");
  }

  const model = {
    get: (name) => values[name],
    set() {},
    save_changes() {},
    on(name, callback) {
      if (!handlers.has(name)) handlers.set(name, new Set());
      handlers.get(name).add(callback);
    },
    off(name, callback) {
      if (handlers.has(name)) handlers.get(name).delete(callback);
    },
    send(message) {
      if (!message || typeof message !== "object") return;
      if (message.action === "focus") onFocus(message);
      else if (message.action === "search") onSearch(message);
      else notify(`“${message.action}” needs the kernel: this is a saved copy of the view`);
    },
    widget_manager: {
      get_model: (id) => {
        const at = Number(String(id).replace(/^fork-/, ""));
        const fork = (state.forks || [])[at];
        if (!fork) throw new Error(`no saved fork ${id}`);
        return staticModel(fork, mountView);
      },
      create_view: (child) => {
        const el = document.createElement("div");
        const stop = mountView(child, el);
        return { el, remove: () => stop && stop() };
      },
    },
  };
  refresh();
  values.header = { ...state.header };
  return model;
}

// Draw every saved view of `root` (notebook/_offline.py, viewer_html()) with the view module's
// `view` (its default export, inlined before this module in the same script): each in a shadow
// root of its own with the view's stylesheet, the fallback text hidden once they are drawn.
export async function mount(root, data, view) {
  const mountView = (model, el) => view.render({ model, el });
  for (const saved of data.views) {
    const host = document.createElement("div");
    host.className = "sagents-offline";
    if (saved.title) {
      const title = document.createElement("div");
      title.className = "sagents-saved-title";
      title.textContent = saved.title;
      root.appendChild(title);
    }
    root.appendChild(host);
    const shadow = host.attachShadow({ mode: "open" });
    const style = document.createElement("style");
    style.textContent = data.css;
    const el = document.createElement("div");
    shadow.append(style, el);
    mountView(staticModel(decode(saved.state), mountView), el);
  }
  const fallback = root.querySelector(".sagents-fallback");
  if (fallback) fallback.hidden = true;
  root.dataset.ready = "true";
}
