"""What the view's buttons and selectors do: each front-end message becomes a public API call."""

# Messages arrive on the kernel's main thread. The run's controls are thread-safe; the view itself
# only changes on the library loop, so handlers change plain attributes and ask for a refresh.

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .. import kinds
from .._base.errors import ConfigurationError
from .._base.messages import Message
from .._runtime.pausing import APPROVE, PAUSE_ACTIONS, Decision
from .._runtime.pending import edit_decision
from ._paging import PAGE
from ._panes import TABS, Focus
from ._render import ROWS
from ._search import QUERY_LIMIT, event_index
from ._tree import TREE_CHILDREN

if TYPE_CHECKING:
    from .._runtime.pending import PendingAction
    from .._runtime.run import Run
    from ._widget import LiveView


def handle_message(view: LiveView, message: dict[str, Any]) -> None:
    """Carry out one message from the front end."""
    action = message.get("action")
    match action:
        case "focus":
            _focus(view, message)
        case "search":
            _search(view, message)
        case "tree":
            _tree(view, message)
        case "step" if message.get("pause_id") is not None:  # a pause's own Step
            _decide(view, action, message)
        case "step" | "resume" | "cancel":
            _run_control(view, action)
        case "approve" | "edit" | "reject":
            _decide(view, action, message)
        case "kind":
            _set_kind(view, str(message.get("agent")), str(message.get("kind")))
        case "preprocessor":
            _set_preprocessor(view, str(message.get("name")))
        case "fork":
            _fork(view, message.get("seq"))
        case "compare":
            _compare_fork(view, message.get("index"))
        case _:
            view.notify(f"the view sent an unknown action {action!r}; nothing was done", error=True)


def _focus(view: LiveView, message: dict[str, Any]) -> None:
    focus = view.focus
    with view.projector.lock:
        if "node" in message:
            node = message["node"] if isinstance(message["node"], str) else None
            if node != focus.node:
                focus.turn = None
            focus.node = node
        if message.get("tab") in TABS:
            focus.tab = message["tab"]
        if "turn" in message:
            turn = message["turn"]
            focus.turn = turn if isinstance(turn, int) and turn >= 0 else None
        if isinstance(message.get("types"), list):
            focus.types = [str(t) for t in message["types"]]
        if "node_only" in message:
            focus.node_only = bool(message["node_only"])
        if "run" in message:
            run = message["run"]
            focus.run = run if isinstance(run, int) and not isinstance(run, bool) else None
        if isinstance(message.get("opened"), list):
            opened = [seq for seq in message["opened"] if isinstance(seq, int)]
            focus.opened = sorted(set(opened))[-ROWS:]
        _page_focus(focus, message)
        _column_focus(focus, message)
        if {"node", "tab"} & message.keys():
            focus.at = None
        if "seq" in message:
            _go_to_event(view, message["seq"], choose="node" not in message)
    view.refresh(now=True)


def _tree(view: LiveView, message: dict[str, Any]) -> None:
    """The tree's filter, or more children of a node listed (its aggregate row opened)."""
    focus = view.focus
    with view.projector.lock:
        if isinstance(message.get("filter"), str):
            focus.tree_filter = message["filter"][:500]
        path, listed = message.get("more"), message.get("listed")
        if isinstance(path, str) and path in view.projector.nodes:
            if isinstance(listed, int) and not isinstance(listed, bool):
                focus.tree_more[path] = max(TREE_CHILDREN, listed)
    view.refresh(now=True)


def _search(view: LiveView, message: dict[str, Any]) -> None:
    """Look for the query (a search result is a `focus` message with its `seq`)."""
    focus = view.focus
    with view.projector.lock:
        if "query" in message:
            query = str(message["query"] or "")[:QUERY_LIMIT]
            if query != focus.query:
                focus.found_start = None
            focus.query = query
        if "start" in message:
            start = message["start"]
            ok = isinstance(start, int) and not isinstance(start, bool) and start >= 0
            focus.found_start = start if ok else None
    view.refresh(now=True)


def _go_to_event(view: LiveView, seq: Any, *, choose: bool) -> None:
    """Show event `seq` in the Events tab: the unfiltered log's page holding it, its JSON
    opened, and (`choose`) its node chosen."""
    projector, focus = view.projector, view.focus
    at = event_index(projector.events, seq) if isinstance(seq, int) else None
    if at is None:
        view.notify(f"there is no event #{seq} in this view", error=True)
        return
    event = projector.events[at]
    if choose and event.path in projector.nodes and event.path != focus.node:
        focus.node, focus.turn = event.path, None
    focus.tab, focus.types, focus.node_only, focus.at = "events", [], False, event.seq
    focus.start = max(0, at - PAGE // 2)
    focus.opened = sorted({*focus.opened, event.seq})[-ROWS:]


def _page_focus(focus: Focus, message: dict[str, Any]) -> None:
    """Which page of the list and which range of the chart: another node, tab or filter shows
    its newest page again, another node its whole chart."""
    if {"node", "tab", "types", "node_only"} & message.keys() and "start" not in message:
        focus.start = None
    if "node" in message and "zoom" not in message:
        focus.zoom = None
    if "start" in message:
        start = message["start"]
        focus.start = start if isinstance(start, int) and start >= 0 else None
    if "zoom" in message:
        zoom = message["zoom"]
        ok = isinstance(zoom, list) and len(zoom) == 2 and all(isinstance(i, int) for i in zoom)
        focus.zoom = (min(zoom), max(zoom)) if ok else None


def _column_focus(focus: Focus, message: dict[str, Any]) -> None:
    """Which pages of the context pane's columns: kept from turn to turn (to compare the same
    items), the newest again on another node or tab."""
    if {"node", "tab"} & message.keys():
        focus.view_start = focus.storage_start = None
    for name in ("view_start", "storage_start"):
        if name in message:
            start = message[name]
            ok = isinstance(start, int) and not isinstance(start, bool) and start >= 0
            setattr(focus, name, start if ok else None)


def _controlled_run(view: LiveView) -> Run | None:
    run = view.target.control_run()
    if run is None:
        view.notify("there is no run to control yet: send a message first", error=True)
    return run


def _run_control(view: LiveView, action: str) -> None:
    run = _controlled_run(view)
    if run is None:
        return
    if run.done and action in ("step", "resume") and view.target.resumable():
        _continue_cut_run(view, action)
        return
    if run.done:
        view.notify(f"run {run.number} has already finished ({run.status})", error=True)
        return
    getattr(run, action)()
    view.notify(
        {
            "step": f"run {run.number}: step — it will pause before its next action",
            "resume": f"run {run.number}: resumed to the end",
            "cancel": f"run {run.number}: cancel requested",
        }[action]
    )


def _continue_cut_run(view: LiveView, action: str) -> None:
    """Resume (or Step) on a fork taken mid-run, or a session reopened after a crash: the cut
    run goes on from its last committed step (`session.resume()`), pausing where it paused."""
    session = view.target.session
    assert session is not None
    run = session.resume(pause_on=PAUSE_ACTIONS if action == "step" else ())
    view.notify(
        f"run {run.number}: continues from where it was cut"
        + (" — it will pause before its next action" if action == "step" else "")
    )


def _decide(view: LiveView, action: str, message: dict[str, Any]) -> None:
    stored = _stored_pause(view, message.get("pause_id"))
    if stored is not None:
        _decide_stored(view, action, message, stored)
        return
    run = _controlled_run(view)
    if run is None:
        return
    if not run.pending:
        view.notify(
            f"run {run.number} is not paused ({run.status}); nothing to {action}", error=True
        )
        return
    pause_id = message.get("pause_id")
    pending = next((p for p in run.pending if p.id == pause_id), None)
    if pause_id is None:
        pending = run.paused_at
    if pending is None:
        view.notify(
            f"pause {pause_id} was already decided; nothing was done (the view now shows "
            "the pauses waiting)",
            error=True,
        )
        view.refresh()
        return
    try:
        if action == "approve":
            pending.approve()
            view.notify(f"approved: {pending}")
        elif action == "step":
            pending.step()
            view.notify(f"approved: {pending} — it will pause before its next action")
        elif action == "reject":
            reason = _reason(message)
            pending.reject(reason)
            view.notify(f"rejected: {pending} ({reason})")
        else:
            changes = _edit_changes(view, pending, message, pending.messages)
            if changes is not None:
                pending.edit(**changes)
                view.notify(_edited(pending, changes))
    except ConfigurationError as exc:  # decided meanwhile, from Python or another view
        view.notify(str(exc), error=True)
        view.refresh()


def _stored_pause(view: LiveView, pause_id: Any) -> PendingAction | None:
    """The stored pause `pause_id` of a reopened or forked session's cut run, if the view's
    card is one (it waits for `session.resume()`)."""
    session = view.target.session
    stored = session.stored_pauses if session is not None else None
    if stored is None or pause_id is None or not view.target.resumable():
        return None
    return next((p for p in stored.pending if p.id == pause_id), None)


def _decide_stored(
    view: LiveView, action: str, message: dict[str, Any], pending: PendingAction
) -> None:
    """A decision on a stored pause's card: `session.resume()`, which asks that pause again
    first (recorded as paused, as before the cut) and decides it so at once."""
    session = view.target.session
    assert session is not None and session.stored_pauses is not None
    if action == "edit":
        request = (
            view.projector.nodes[pending.path].about_to_send if pending.action == "model" else None
        )
        changes = _edit_changes(
            view, pending, message, list(request.messages) if request is not None else None
        )
        if changes is None:
            return
        decision, mode, done = edit_decision(changes), None, _edited(pending, changes)
    elif action == "reject":
        reason = _reason(message)
        decision, mode = Decision("reject", {"reason": reason}), None
        done = f"rejected: {pending} ({reason})"
    else:
        decision, mode = APPROVE, "step" if action == "step" else "normal"
        done = f"approved: {pending}" + (
            " — it will pause before its next action" if action == "step" else ""
        )
    try:
        session.stored_pauses.decide_ahead(pending.id, decision, mode)
        run = session.resume()
    except ConfigurationError as exc:
        view.notify(str(exc), error=True)
        view.refresh()
        return
    view.notify(f"run {run.number} continues from where it was cut (session.resume()); {done}")


def _reason(message: dict[str, Any]) -> str:
    return str(message.get("reason") or "").strip() or "rejected in the live view"


def _edited(pending: PendingAction, changes: dict[str, Any]) -> str:
    if "messages" in changes:
        return f"edited: the model request from {pending.path} is sent with your messages"
    if "reply" in changes:
        return f"edited: the model request from {pending.path} is answered with your text"
    shown = json.dumps(changes["arguments"], ensure_ascii=False)
    return f"edited: {pending.name} runs with {shown}"


def _edit_changes(
    view: LiveView,
    pending: PendingAction,
    message: dict[str, Any],
    request_messages: list[Message] | None,
) -> dict[str, Any] | None:
    """What an Edit sends: `messages=` (a model pause's edited messages), `reply=` (a model
    pause's text) or `arguments=` (a JSON object); None, with a notice, when it is not one."""
    if pending.action == "model" and isinstance(message.get("messages"), list):
        return _edited_messages(view, message["messages"], request_messages)
    text = message.get("text")
    text = "" if text is None else str(text)
    if pending.action == "model":
        if not text.strip():
            view.notify(
                "Edit at a model pause needs the reply to use; nothing was sent", error=True
            )
            return None
        return {"reply": text}
    try:
        arguments = json.loads(text)
    except ValueError as exc:
        view.notify(
            f"Edit needs the arguments as a JSON object ({exc}); nothing was sent", error=True
        )
        return None
    if not isinstance(arguments, dict):
        view.notify('Edit needs a JSON object of arguments, e.g. {"city": "Paris"}', error=True)
        return None
    return {"arguments": arguments}


def _edited_messages(
    view: LiveView, edits: list[Any], request_messages: list[Message] | None
) -> dict[str, Any] | None:
    """The request's messages with the card's edited ones (each `{index, text}`: a message as
    JSON) in their places; the others as they were."""
    if request_messages is None:
        view.notify("this pause has no request to edit; nothing was sent", error=True)
        return None
    messages: list[Any] = list(request_messages)
    changed = False
    for edit in edits:
        index = edit.get("index") if isinstance(edit, dict) else None
        if not isinstance(index, int) or not 0 <= index < len(messages):
            view.notify(
                f"the view sent an edit of no message ({edit!r}); nothing was sent", error=True
            )
            return None
        try:
            fields = json.loads(str(edit.get("text") or ""))
            if not isinstance(fields, dict):
                raise ValueError("not a JSON object")
            edited = Message.model_validate(fields)
        except ValueError as exc:
            view.notify(
                f"message {index + 1} is not a message as JSON ({str(exc).splitlines()[0]}), "
                'e.g. {"role": "user", "content": "..."}; nothing was sent',
                error=True,
            )
            return None
        if edited.model_dump() != messages[index].model_dump():  # by fields, not wire caches
            messages[index], changed = edited, True
    if not changed:
        view.notify(
            "the messages are unchanged; nothing was sent (Approve sends them as they are)",
            error=True,
        )
        return None
    return {"messages": messages}


def _set_kind(view: LiveView, agent_name: str, kind: str) -> None:
    agent = view.target.agent(agent_name)
    factory = kinds.registry().get(kind)
    earlier = view.kinds_seen.get(agent_name, {}).get(kind)
    if agent is None or (factory is None and earlier is None):
        known = ", ".join(sorted(kinds.registry()))
        view.notify(
            f"cannot set kind {kind!r} on agent {agent_name!r} (kinds: {known})", error=True
        )
        return
    old = view.target.agent_kinds().get(agent_name)
    if agent.kind is not None:
        view.kinds_seen.setdefault(agent_name, {})[kinds.kind_name(agent.kind)] = agent.kind
    # back to a kind it had: the same object, with its configuration (a native child's CLI)
    agent.kind = earlier if earlier is not None else factory()  # type: ignore[misc]
    view.notify(f"{agent_name} uses kind {kind} from its next task (was {old})")


def _set_preprocessor(view: LiveView, name: str) -> None:
    session = view.target.session
    options = view.preprocessor_options()
    if session is None or name not in options:
        view.notify(
            f"no preprocessor called {name!r} (choose from {', '.join(options)})", error=True
        )
        return
    session.preprocessor = options[name]
    view.notify(f"preprocessor is now {name} for the next message")


def _fork(view: LiveView, seq: Any) -> None:
    session = view.target.session
    if session is None:
        view.notify("a finished result cannot be forked; fork from a session's view", error=True)
        return
    try:
        forked = session.fork(at=int(seq))
    except Exception as exc:
        view.notify(f"Fork here at event {seq} failed: {exc}", error=True)
        return
    index = len(view.forks)
    # the notice first, so that it arrives with the fork's view (which is pushed at once)
    view.notify(
        f"forked at event {seq}: session {forked.id}, shown below; in Python it is this "
        f"view's .forks[{index}] (its live view: .fork_views[{index}])"
    )
    view.show_fork(forked, int(seq))


def _compare_fork(view: LiveView, index: Any) -> None:
    """Compare a fork below with its origin (`sn.diff`), drawn under the fork's title."""
    session = view.target.session
    if session is None or not isinstance(index, int) or not 0 <= index < len(view.forks):
        view.notify(f"there is no fork {index!r} below this view to compare", error=True)
        return
    from .._compare.session_diff import diff  # loaded when a comparison is asked for

    view.fork_diffs[index] = diff(session, view.forks[index]).to_dict()
    view.notify(f"fork {index} compared with its origin: see below its title (sn.diff)")
