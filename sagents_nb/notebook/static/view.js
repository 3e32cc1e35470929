// sagents_nb live view (anywidget ES module, no build step): this shell and the pane modules in
// panes/, which the widget inlines into one module (notebook/_view_module.py).
// Draws the state the kernel projects from events, patching the page in place (lit-html): an
// update never replaces a button being pressed, an open <details>, a focused field or a
// scrolled pane. Every string from models, tools, users and CLIs enters the page through
// lit-html's text and attribute bindings, never as HTML.

import { html, nothing, render as paint } from "./lit-html.js";
import { keepFocusOnDecisions } from "./panes/focus.js";
import { forks, removeForks } from "./panes/forks.js";
import { controls, header, notice, pending } from "./panes/header.js";
import { reveal, search } from "./panes/search.js";
import { paneView, tabs } from "./panes/tabs.js";
import { tree } from "./panes/tree.js";

// The host's theme, read from the page's body: JupyterLab and Notebook 7 set
// data-jp-theme-light, marimo data-theme, VS Code a vscode-dark class. CSS cannot see the body
// from marimo's shadow root, where the view draws: the view carries sn-dark instead.
function darkHost() {
  const body = document.body;
  if (!body) return false;
  return (
    body.dataset.jpThemeLight === "false" ||
    body.dataset.theme === "dark" ||
    body.classList.contains("vscode-dark")
  );
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
    query: "", // what the search box holds
    reveal: null, // the seq of the event gone to, to scroll into sight once drawn
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
  // what the panes draw with: the model, the page's own state and the ways to change it
  const view = {
    model,
    ui,
    uid,
    send,
    focus,
    schedule,
    forkSlots: new Map(), // model id -> { el, view }, a fork's view made once
  };
  keepFocusOnDecisions(el);

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
        class=${`sagents-view${ui.dead ? " sn-disconnected" : ""}${darkHost() ? " sn-dark" : ""}`}
        aria-disabled=${ui.dead ? "true" : "false"}
      >
        ${header(view, head, live)}
        ${ui.dead
          ? html`<div class="sn-dead" role="status">
              disconnected: ${ui.dead}. This view shows the state it last had; run the cell
              again for a live view.
            </div>`
          : nothing}
        ${notice(head)} ${controls(view, head, live)} ${pending(view, head, live)} ${search(view)}
        <div class="sn-body">
          ${tree(view, head, pane, live)}
          <div class="sn-main">${tabs(view)} ${paneView(view, head, pane)}</div>
        </div>
        ${forks(view, head)}
      </div>`,
      el,
    );
    reveal(view, el);
  }

  // A kernel restart or shutdown leaves this page's copy of the widget without a kernel: say so
  // instead of offering buttons that would throw "Cannot send".
  const onLive = () => disconnect("the kernel restarted or shut down");
  const onClose = () => disconnect("the kernel closed this view");
  model.on("change:header", schedule);
  model.on("change:tree", schedule);
  model.on("change:pane", schedule);
  model.on("change:found", schedule);
  model.on("comm_live_update", onLive);
  model.on("comm:close", onClose);
  const themes = new MutationObserver(schedule);
  const attributes = ["class", "data-theme", "data-jp-theme-light"];
  if (document.body) themes.observe(document.body, { attributes: true, attributeFilter: attributes });
  draw();
  return () => {
    cancelAnimationFrame(frame);
    themes.disconnect();
    removeForks(view);
    model.off("change:header", schedule);
    model.off("change:tree", schedule);
    model.off("change:pane", schedule);
    model.off("change:found", schedule);
    model.off("comm_live_update", onLive);
    model.off("comm:close", onClose);
  };
}

export default { render };
