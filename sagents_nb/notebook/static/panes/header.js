// The header, the notice line, the run's controls and the decision at a pause (their messages
// are handled by the second module named below).
// Its state: notebook/_widget.py, LiveView._header(); notebook/_controls.py, handle_message().

import { html, nothing, repeat } from "../lit-html.js";
import { pill, status } from "./parts.js";
import { counted } from "./words.js";

const ACTIVE = new Set(["running", "spawned", "paused", "waiting"]);

export function header(view, state, live) {
  const run = state.run;
  return html`<div class="sn-header">
    <span class="sn-title">sagents_nb · ${state.title || ""}</span>
    ${run ? html`<span class="sn-run">run ${run.number} ${status(run.status)}</span>` : nothing}
    ${state.later ? html`<span class="sn-later" role="note">${state.later.text}</span>` : nothing}
    ${state.llm ? html`<span class="sn-llm" title="endpoint">${state.llm}</span>` : nothing}
    ${live && state.preprocessors && state.preprocessors.length ? preprocessorSelect(view, state) : nothing}
    <span class="sn-count">${counted(state.events || 0, "event")}</span>
  </div>`;
}

export function notice(state) {
  const message = state.notice || {};
  return html`<div class=${message.error ? "sn-notice sn-error" : "sn-notice"} role="status">
    ${message.text || ""}
  </div>`;
}

export function controls(view, state, live) {
  const { send } = view;
  const run = state.run;
  const open = live && run && (run.status === "running" || run.status === "paused");
  // a fork taken mid-run (or a session reopened after a crash): Step and Resume continue it
  const cut = live && Boolean(state.resumable);
  const button = (label, action, hint, cutHint) =>
    html`<button
      class="sn-button"
      data-action=${action}
      title=${cut && cutHint ? cutHint : hint}
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
      ? html`${button(
          "Step",
          "step",
          "pause again before the very next action",
          "continue the cut run (session.resume()), pausing before its very next action",
        )}
        ${button(
          "Resume",
          "resume",
          "approve, and run to the end without pausing again",
          "continue the cut run (session.resume()): it asks again the decisions pending at the cut and pauses where the run was set to",
        )}
        ${button("Cancel", "cancel", "stop the run and its children")}`
      : nothing}
    ${answer}
  </div>`;
}

function preprocessorSelect(view, state) {
  const { send } = view;
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

export function pending(view, state, live) {
  const shownPauses = live ? state.pending || [] : [];
  // one card per pause, keyed by pause: each editor keeps what the person typed until its pause ends
  return html`<div class=${shownPauses.length ? "sn-pending sn-pending-open" : "sn-pending"}>
    ${shownPauses.length > 1
      ? html`<div class="sn-pending-count">${counted(shownPauses.length, "pause")} waiting: decide each in any order</div>`
      : nothing}
    ${repeat(
      shownPauses,
      (pause) => pause.pause_id,
      (pause) => decision(view, pause),
    )}
  </div>`;
}

function decision(view, pause) {
  const { send } = view;
  const model_ = pause.action === "model";
  const what = model_ ? "model request" : `${pause.action} call ${pause.name}`;
  const decide = (action, extra) => send({ action, pause_id: pause.pause_id, ...extra });
  const root = (e) => e.target.closest(".sn-decision");
  return html`<div
    class=${pause.stored ? "sn-decision sn-decision-stored" : "sn-decision"}
    data-pause=${pause.pause_id}
    data-path=${pause.path}
  >
    <div class="sn-pending-what">
      ${pill("paused", "paused")} before ${what} from ${pause.path}
      ${model_
        ? html`<button
            class="sn-link"
            title="the whole request, in the Context tab"
            @click=${() => send({ action: "focus", node: pause.path, tab: "context" })}
          >
            see the request
          </button>`
        : nothing}
    </div>
    ${pause.stored
      ? html`<div class="sn-stored-note" role="note">
          waiting for session.resume(): stored before the session was reopened (or forked). A
          decision here resumes the run, which asks this pause again first and decides it so.
        </div>`
      : nothing}
    ${model_ && pause.messages ? messagesEditor(view, pause) : nothing}
    <div class="sn-label">${model_ ? "reply (for Edit)" : "arguments (JSON, for Edit)"}</div>
    <textarea
      class="sn-edit"
      aria-label=${model_ ? `reply to use (for Edit) at ${pause.path}` : `arguments as JSON (for Edit) at ${pause.path}`}
      rows="4"
      spellcheck="false"
      placeholder=${model_ ? "a reply to use instead of calling the model" : ""}
      .value=${model_ ? "" : pause.arguments || "{}"}
    ></textarea>
    <div class="sn-decide">
      <button class="sn-button sn-approve" @click=${() => decide("approve")}>Approve</button>
      <button
        class="sn-button sn-step-one"
        title="approve this one, and pause again before the very next action"
        @click=${() => decide("step")}
      >
        Approve &amp; step
      </button>
      <button
        class="sn-button sn-edit-button"
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
      <input class="sn-reason" type="text" placeholder="reason (for Reject)" aria-label=${`reason (for Reject) at ${pause.path}`} />
    </div>
  </div>`;
}

// A model pause's request, a message per editor (its sn.Message fields as JSON), sent back as
// edit(messages=...): the messages not shown, and those left as they are, are sent unchanged.
function messagesEditor(view, pause) {
  const { send } = view;
  const shown = pause.messages;
  const hidden = (pause.messages_total || shown.length) - shown.length;
  const sendEdited = (e) => {
    const editors = e.target.closest(".sn-messages-edit").querySelectorAll(".sn-message-edit");
    const messages = [...editors].map((editor) => ({
      index: Number(editor.dataset.index),
      text: editor.value,
    }));
    send({ action: "edit", pause_id: pause.pause_id, messages });
  };
  return html`<details class="sn-messages-edit">
    <summary>edit the messages about to be sent (${counted(shown.length, "message")}${hidden
      ? html`, the first ${counted(hidden, "message")} kept as they are`
      : nothing})</summary>
    ${shown.map(
      (message) => html`<label class="sn-label sn-message-label"
          >message ${message.index + 1} · ${message.role}
          <textarea
            class="sn-message-edit"
            data-index=${message.index}
            aria-label=${`message ${message.index + 1} (${message.role}) as JSON, at ${pause.path}`}
            rows="3"
            spellcheck="false"
            .value=${message.text}
          ></textarea
        ></label>`,
    )}
    <button
      class="sn-button sn-edit-messages"
      title="send these messages instead of the ones above (edit(messages=...))"
      @click=${sendEdited}
    >
      Send edited messages
    </button>
  </details>`;
}
