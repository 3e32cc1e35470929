"""The turn loop every kind shares: build the view, call the model, run tools, until an answer."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._base.caller import CALLER, Caller
from .._base.errors import ConfigurationError, EndpointError, LLMError
from .._base.messages import Message, ToolCall, system, tool_message, user
from .._base.outcome import Outcome
from .._endpoints.openai import Completion, RetryNotice, WireMessages, request_json
from ..events import (
    ContextBuilt,
    ErrorOccurred,
    KindSwapped,
    LLMSwapped,
    ModelRequest,
    ModelResponse,
    Retry,
    ToolCallFinished,
)
from ..kinds import BaseKind, View, kind_name
from .delegation import team_tools
from .limits import LimitReached, before_model_call

if TYPE_CHECKING:
    from ..kinds import ChildKind
    from .node import Node
    from .pausing import Decision

SUMMARY_INSTRUCTIONS = (
    "You compress conversation history. Summarise the conversation below for the agent that "
    "will continue it: keep facts, decisions, results of tool calls and open questions; drop "
    "chatter. Answer with the summary only."
)


def salvage_prompt(limit: int) -> str:
    """The message sent with the one salvage call at a Worker's turn cap."""
    return (
        f"You have reached the turn limit for this task ({limit} model turns) without giving a "
        "final answer. Do not call any tools. Summarise what you found so far, and say what "
        "remains undone."
    )


def resolve_kind(node: Node) -> ChildKind:
    """The kind the agent asks for now (its default when unset), swapping at a turn boundary."""
    wanted = node.agent.kind
    if wanted is None:
        wanted = node.session.default_main if node.parent is None else node.session.default_worker
    if wanted is not node.kind:
        old = node.kind
        note = old.dispose(node, "keep")
        node.emit(
            KindSwapped(
                agent=node.agent.name, old=kind_name(old), new=kind_name(wanted), policy="keep"
            )
        )
        node.kind = wanted
        if note and node.inbox:
            node.notices.append(note)
    return wanted


async def run_task(node: Node, message: Message | None, *, resume: bool = False) -> Outcome:
    """Run `node` on one input (None continues from storage, e.g. a retry) until it settles.

    `resume=True` continues a task restored from a store: its turn counters carry on, and the
    turn the interruption cut short is finished first (`resume_open_turn`).
    """
    if not resume:
        node.task_turns = node.task_tool_calls = node.task_tokens = 0
    kind = resolve_kind(node)
    if message is not None:
        if not kind.deliver(node, message):  # handed back: the skeleton writes it, as it starts
            kind.append_history(node, message)
        node.input_index = len(node.history) - 1
        node.input_text = message.content or ""
    node.busy = True
    node.set_status("running")
    try:
        outcome = await kind.run_task(node) if _own(kind.run_task, BaseKind.run_task) else None
        if outcome is None:
            outcome = await resume_open_turn(node) if resume else None
        if outcome is None:
            outcome = await _turns(node)
    except asyncio.CancelledError:
        node.close_dangling("the run was cancelled")
        node.busy = False
        node.settle_joined(Outcome("cancelled", "the task this input cut into was cancelled"))
        node.set_status("cancelled")
        raise
    except LLMError as exc:
        node.close_dangling("the model endpoint failed")
        node.emit(ErrorOccurred(error_type=type(exc).__name__, message=str(exc)))
        outcome = Outcome("error", str(exc))
    except LimitReached as exc:
        node.close_dangling("a session limit stopped the run")
        outcome = Outcome("incomplete", str(exc))
    except BaseException as exc:  # a bug (or a SystemExit) in a hook or kind must not kill the loop
        node.close_dangling("an internal error stopped the task")
        node.emit(ErrorOccurred(error_type=type(exc).__name__, message=f"{exc}"))
        outcome = Outcome("error", f"{type(exc).__name__}: {exc}")
    node.busy = False
    node.settle_joined(outcome)
    if _own(node.kind.flush, BaseKind.flush):
        await node.kind.flush(node)
    node.last_outcome = outcome
    node.set_status(outcome.status)
    return outcome


def _own(hook: Any, default: Any) -> bool:
    """Whether a kind's async hook is its own, not `BaseKind`'s, which does nothing (and is
    not awaited: a coroutine saved)."""
    return getattr(hook, "__func__", hook) is not default


async def _turns(node: Node) -> Outcome:
    agent = node.agent
    shrinks = 0  # of the view, for the request about to be sent (a context overflow)
    while True:
        # let the loop breathe between turns: controls (cancel, step) and other runs get a turn
        # even when the endpoint and the tools never suspend (an in-process mock)
        await asyncio.sleep(0)
        kind = resolve_kind(node)
        if node.inbox and node.task_turns and kind.interrupts:
            node.take_interrupts()
        limit = kind.turn_limit(agent.max_turns)
        if node.task_turns >= limit:
            return await _at_turn_cap(node, limit)
        pool = node.exhausted_pool()
        if pool is not None:
            return _budget_outcome(node, pool)
        if _own(kind.maintain, BaseKind.maintain):
            await kind.maintain(node)
        kind.prepare(node)
        view = View.of(kind.build_context(node, node.input_text))
        if node.view_fit is not None:
            from .overflow import fit_view  # loads with a first overflow, not with a first run

            view = fit_view(node, view)
        if node.notices:
            noted = View([*view, system("\n".join(node.notices))])
            noted.runs = view.runs  # the notice goes last: the runs hold
            view = noted
            node.notices.clear()
        tools = _turn_tools(node, kind)
        try:
            completion = await call_model(node, view, tools, stream=kind.stream)
        except EndpointError as exc:
            from .overflow import shrink

            await shrink(node, kind, view, exc, shrinks)  # or raises
            shrinks += 1
            continue
        shrinks = 0
        if completion is None:
            return Outcome("incomplete", "the model call was rejected at a pause")
        message = _unique_call_ids(completion.message)
        kind.append_history(node, message)
        if completion.truncated:
            node.emit(
                ErrorOccurred(
                    error_type="TruncatedStream",
                    message=f"{completion.cut}; the partial reply was kept",
                )
            )
            return Outcome("incomplete", (message.content or "") + " [truncated]")
        if not message.tool_calls:
            if not kind.stream:
                kind.emit(node, message.content or "")
            return Outcome("done", message.content or "")
        over = _over_budget(node, len(message.tool_calls))
        if over is not None:
            node.close_dangling("the tool-call budget is exhausted")
            return _budget_outcome(node, over)
        node.task_tool_calls += len(message.tool_calls)
        calls = list(message.tool_calls)
        if _own(kind.run_tools, BaseKind.run_tools):
            results = await kind.run_tools(node, calls)
        else:  # what BaseKind's does, a coroutine less
            results = await node.execute_tools(calls)
        kind.append_history(node, *(tool_message(r.call_id, r.content) for r in results))
        pool = node.exhausted_pool()
        if pool is not None:
            return _budget_outcome(node, pool)


def _over_budget(node: Node, new_calls: int) -> str | None:
    budget = node.agent.tool_call_budget
    if budget is not None and node.task_tool_calls + new_calls > budget:
        return "tool calls"
    return None


def _budget_outcome(node: Node, what: str) -> Outcome:
    last = next(
        (m.content for m in reversed(node.history) if m.role == "assistant" and m.content), ""
    )
    text = f"budget exhausted ({what}); partial work preserved"
    return Outcome("incomplete", f"{text}: {last}" if last else text)


async def _at_turn_cap(node: Node, limit: int) -> Outcome:
    note = f"hit maxTurns ({limit}) without a final answer"
    if not node.kind.salvage:
        return Outcome("incomplete", note)
    node.kind.append_history(node, user(salvage_prompt(limit)))
    view = node.kind.build_context(node, node.input_text)
    completion = await call_model(node, view, _turn_tools(node, node.kind), tool_choice="none")
    if completion is None:
        return Outcome("incomplete", note)
    message = completion.message.model_copy(update={"tool_calls": None})
    node.kind.append_history(node, message)
    summary = (message.content or "").strip()
    return Outcome("incomplete", f"{note}; salvage summary: {summary}" if summary else note)


def _turn_tools(node: Node, kind: ChildKind) -> list[Any]:
    agent = node.agent
    own, team, kinds = agent.tools, team_tools(agent), kind.own_tools(node)
    tools = [*own, *team, *kinds]
    node.tool_map = {t.name: t for t in tools}
    if len(node.tool_map) != len(tools):
        raise ConfigurationError(_duplicate_names(agent.name, own, team, kinds))
    return tools


def _duplicate_names(agent: str, *groups: list[Any]) -> str:
    labels = ("its tools", "its team's delegation tools", "its kind's tools")
    seen: dict[str, list[str]] = {}
    for label, group in zip(labels, groups, strict=True):
        for tool in group:
            seen.setdefault(tool.name, []).append(label)
    clashes = "; ".join(
        f"{name!r} ({', '.join(sorted(set(where)))})"
        for name, where in seen.items()
        if len(where) > 1
    )
    return (
        f"agent {agent!r} would offer the model more than one tool of the same name: {clashes}; "
        "names must be unique in a request, so nothing was sent. Rename one with "
        "@sn.tool(name=...)"
    )


def _unique_call_ids(message: Message) -> Message:
    calls = message.tool_calls
    if not calls or len(calls) == 1 or len({c.id for c in calls}) == len(calls):
        return message
    seen: set[str] = set()
    fixed = []
    for call in calls:
        call_id = call.id
        while call_id in seen:
            call_id = f"{call_id}_dup"
        seen.add(call_id)
        fixed.append(
            call
            if call_id == call.id
            else ToolCall(id=call_id, name=call.name, arguments=call.arguments)
        )
    return message.model_copy(update={"tool_calls": tuple(fixed)})


def agent_choice(node: Node) -> tuple[Any, str | None]:
    """What the agents choose for `node`'s requests: the endpoint of its agent's `model`, else
    its nearest ancestor's (None: the session's), and the model name likewise (None: the
    endpoint's default). A `model` may be a name or an endpoint (which brings its own)."""
    llm: Any = None
    model: str | None = None
    current: Node | None = node
    while current is not None and (llm is None or model is None):
        chosen = current.agent.model
        if isinstance(chosen, str) and chosen:
            model = model or chosen
        elif chosen is not None and not isinstance(chosen, str) and llm is None:
            llm = chosen
            model = model or chosen.model
        current = current.parent
    return llm, model


def same_choice(a: tuple[Any, str | None], b: tuple[Any, str | None]) -> bool:
    return a[0] is b[0] and a[1] == b[1]


def node_choice(node: Node) -> tuple[Any, str | None]:
    """`agent_choice`, or the one a fork (or a reopen) pinned as in force at its cut, for as
    long as the agents choose what they chose when it was taken."""
    choice = agent_choice(node)
    pin = node.pinned_endpoint
    if pin is not None:
        if same_choice(choice, pin[1]):
            return pin[0]
        node.pinned_endpoint = None  # its agents were given another endpoint since: theirs now
    return choice


def resolved(node: Node, choice: tuple[Any, str | None]) -> tuple[Any, str]:
    """The endpoint and model name of a choice: the session's endpoint and its default model
    where the agents chose none."""
    llm = choice[0] if choice[0] is not None else node.session.llm
    return llm, choice[1] or llm.model


def _note_endpoint(node: Node, llm: Any, choice: tuple[Any, str | None]) -> None:
    """Record an endpoint set on the node's agent (or an ancestor's) since its last request,
    `agent.model = ...` mid-run, as an `llm_swapped` at its path; a swap of the session's own
    endpoint has its event already. The node's choice is kept in `session.endpoint_choices`
    at each change (`note_choice`)."""
    session = node.session
    session_llm = session.llm
    last = node.endpoint
    kept = node.choice
    if last is not None and last[0] is llm and last[1] is session_llm and kept is not None:
        if same_choice(kept, choice):
            return  # as at its last request: nothing to record
    node.endpoint = (llm, session_llm)
    changed = kept is None or not same_choice(kept, choice)
    node.choice = choice
    event = None
    if last is not None and last[0] is not llm and not (last[0] is last[1] and llm is session_llm):
        # a reopen in a new process knows only the label of the one it last used
        old = last[0] if isinstance(last[0], str) else last[0].label
        if old != llm.label or not isinstance(last[0], str):
            event = node.emit(LLMSwapped(old=old, new=llm.label))
    if changed:
        note_choice(node, choice, event.seq if event is not None else session.bus.last_seq)


def note_choice(node: Node, choice: tuple[Any, str | None], seq: int) -> None:
    """Keep what `node`'s agents chose as in force from event `seq` on (when it is spawned, and
    at each request that changes it), so that a fork takes the one in force at its event."""
    node.choice = choice
    node.session.endpoint_choices.append((seq, node.path, choice))


async def call_model(
    node: Node,
    view: list[Message],
    tools: list[Any],
    *,
    stream: bool = False,
    tool_choice: str | None = None,
    count_turn: bool = True,
) -> Completion | None:
    """Send one request for `node` (after its pause gate); None when the user rejected it.

    The gate sees the whole request that would be sent (`PendingRequest`); an edit there can
    replace its messages, or answer it with a reply instead of calling the model.
    """
    view = View.of(view)
    session = node.session
    choice = node_choice(node)
    llm, model = resolved(node, choice)
    _note_endpoint(node, llm, choice)  # before the gate: a pause there shows it in force
    wire_tools = [t.to_wire() for t in tools]
    count = session.token_counter
    measured = _measure(view, count)
    decision: Decision | None = None  # no gate: approved
    if session.may_pause(node, "model"):  # the whole request is built only for a pause
        from .pending import PendingRequest

        request = PendingRequest(
            messages=view,
            tools=wire_tools,
            model=model,
            tool_choice=tool_choice,
            endpoint=llm.redact(llm.label),
            tokens=measured[0],
            stream=stream,
        )
        decision = await session.gate(node, "model", messages=view, request=request)
        if decision.kind == "reject":
            return None
        if decision.kind != "edit":
            decision = None
    replied = decision is not None and "reply" in decision.changes
    if not replied:
        before_model_call(node)
    edited = decision is not None and "messages" in decision.changes
    shown = View(decision.changes["messages"]) if decision is not None and edited else view
    body: dict[str, Any] = {"model": model, "messages": wire_messages(shown, node)}
    if tools:
        body["tools"] = wire_tools
        if tool_choice:
            body["tool_choice"] = tool_choice
    if stream:
        body["stream"] = True
    turn = node.turns + 1
    left_out: int | None = None  # estimated tokens of storage the view left out
    if count_turn:
        view_tokens, in_storage = _measure(shown, count) if edited else measured
        history = node.history
        stored, storage_tokens = len(history), node.history_tokens
        left_out = max(0, storage_tokens - view_tokens)
        node.emit(
            ContextBuilt(
                turn=turn,
                kind=kind_name(node.kind),
                view_messages=len(shown),
                storage_messages=stored,
                view_tokens=view_tokens,
                storage_tokens=storage_tokens,  # the same counter as the view's
                hidden=stored - in_storage,
                from_storage=_runs(shown, history),
            )
        )
    node.emit(
        ModelRequest(
            turn=turn,
            model=model,
            messages=shown,  # a View is fresh each turn
            tools=[t.name for t in tools],
            tool_choice=tool_choice,
            stream=stream,
        )
    )
    journal = session.journal
    if journal is not None and journal.durability == "turn":  # the turn so far committed first
        await journal.before_request()
    started = time.perf_counter()
    if decision is not None and replied:
        completion = Completion(message=decision.reply_message())
    else:
        calling = CALLER.set(Caller(node.path, node.agent.name, node.task_turns + 1))
        try:
            completion = await llm.complete(
                body,
                on_delta=(lambda text: node.kind.emit(node, text)) if stream else None,
                on_retry=lambda notice: _emit_retry(node, notice),
            )
        finally:
            CALLER.reset(calling)
    if count_turn:
        node.count_turn()
    usage = completion.usage
    if usage is not None:
        node.add_usage(usage)
        if left_out is not None:  # the reported usage measures the view; storage is that plus
            node.measured = (  # what the view left out (a summary call measures neither)
                usage.prompt_tokens + usage.completion_tokens + left_out,
                len(node.history) + 1,
            )
    node.emit(
        ModelResponse(
            turn=node.turns,
            message=completion.message,
            usage=usage,
            duration=time.perf_counter() - started,
            finish_reason=completion.finish_reason,
            truncated=completion.truncated,
        )
    )
    return completion


JOINED_FROM = 32
"""Views of this many messages or more are sent as their kept JSON, joined (`WireMessages`):
below, writing the body whole costs less than joining it."""


def wire_messages(view: View, node: Node) -> list[dict[str, Any]]:
    """The view's messages as wire dicts. Where its kind said which view messages are stored
    ones (`View.runs`: `whole_view`, `Main`), those come from the node's kept dicts
    (`Node.wire_history`), a run at a time (and a long view with their kept JSON,
    `WireMessages`: the body is written by joining it); each message's dict is the one
    `to_wire` gives. Runs that do not hold the stored messages they name are not trusted: the
    view is converted message by message. The list is made in one piece, with no list of a
    run made and dropped (pieces a little longer each turn leave holes in the heap that the
    wire log's kept bodies cannot reuse)."""
    runs, history = view.runs, node.history
    if not runs or not _runs_hold(view, runs, history):
        return list(map(Message.to_wire, view))
    wires = node.wire_history()
    out: list[dict[str, Any]]
    parts: list[Any] | None = None
    if len(view) >= JOINED_FROM:
        texts, starts = node.wire_json()
        out = joined = WireMessages([], texts)
        parts = joined.parts
    else:
        out = []
    at = 0
    for i in range(0, len(runs), 3):
        where, start, count = runs[i : i + 3]
        if where > at:
            _converted(view[at:where], out, parts)
        out += wires[start : start + count] if count < len(wires) else wires
        if parts is not None:
            parts.append((starts[start], starts[start + count] - 1))  # less its last comma
        at = where + count
    _converted(view[at:], out, parts)
    if parts is not None:
        joined.length = len(out)
    return out


def _converted(messages: list[Message], out: list[dict[str, Any]], parts: list[Any] | None) -> None:
    """Add `messages` (view-only ones: the prompt, notes) to `out`, and their JSON to `parts`."""
    added = list(map(Message.to_wire, messages))
    out += added
    if parts is not None:
        parts += map(request_json, added)


def _runs_hold(view: View, runs: list[int], history: list[Message]) -> bool:
    """Whether each run's view messages are the stored ones it names (the same objects, or
    equal ones: their dicts are equal), the runs in order."""
    at = 0
    for i in range(0, len(runs), 3):
        where, start, count = runs[i : i + 3]
        end = where + count
        if (
            where < at
            or count <= 0
            or start < 0
            or end > len(view)
            or start + count > len(history)
            or view[where:end] != history[start : start + count]
        ):
            return False
        at = end
    return True


def _measure(view: View, count: Any) -> tuple[int, int]:
    """The view's tokens, and how many of its messages come from storage (as its kind measured
    them, if it did: see `kinds.View`).

    Otherwise view-only messages are taken to be the system notes (the prompt, cold-storage
    notes, notices); a resident's summary is a system message that does live in storage.
    """
    if view.measure is not None:
        return view.measure
    tokens = stored = 0
    for message in view:
        tokens += count(message)
        if message.role != "system" or message.meta.get("summary"):
            stored += 1
    return tokens, stored


def _runs(view: View, history: list[Message]) -> list[int]:
    """Which view messages are which stored ones: as the kind said (`View.runs`), else found."""
    return list(view.runs) if view.runs is not None else storage_runs(view, history)


def storage_runs(view: list[Message], history: list[Message]) -> list[int]:
    """Which view messages are which stored ones, by identity (kinds build views from the
    stored message objects): flat runs of (view index, storage index, count).

    A system message that is not a summary is taken as view-only (the prompt, notes, notices)
    unless it is the next stored message: so a view of the whole storage is matched in one
    pass, and the index of storage is built only for a view that skips some of it.
    """
    runs: list[int] = []
    where: dict[int, int] | None = None
    size, expected = len(history), 0
    for at, message in enumerate(view):
        if expected < size and history[expected] is message:
            index = expected
        elif message.role == "system" and not message.meta.get("summary"):
            continue
        else:
            if where is None:
                where = {id(stored): i for i, stored in enumerate(history)}
            index = where.get(id(message), -1)
            if index < 0:
                continue  # a message only the view has (an edited view, a kind's own note)
        if runs and runs[-3] + runs[-1] == at and runs[-2] + runs[-1] == index:
            runs[-1] += 1
        else:
            runs += (at, index, 1)
        expected = index + 1
    return runs


def _emit_retry(node: Node, notice: RetryNotice) -> None:
    node.emit(
        Retry(attempt=notice.attempt, status=notice.status, error=notice.error, delay=notice.delay)
    )


async def summarise(node: Node, messages: Sequence[Message]) -> str:
    """A model-written summary of `messages`, through the node's endpoint."""
    lines = []
    for m in messages:
        for call in m.tool_calls or ():
            lines.append(f"{m.role} called {call.name}({call.arguments})")
        if m.content:
            lines.append(f"{m.role}: {m.content}")
    view = [system(SUMMARY_INSTRUCTIONS), user("\n".join(lines))]
    completion = await call_model(node, view, [], count_turn=False)
    return (completion.message.content or "") if completion is not None else ""


async def resume_open_turn(node: Node) -> Outcome | None:
    """Finish the turn an interruption cut short, before the turn loop goes on.

    Returns the outcome when the task's answer had already been committed (no model call is
    needed). Otherwise answers the tool calls of the last reply that have no result in storage
    (reusing each result whose `tool_call_finished` was committed, running the others; a `task`
    call reattaches to its child by key) and returns None.
    """
    history = node.history
    if not history:
        return None
    last = history[-1]
    if last.role == "assistant" and not last.tool_calls:
        return Outcome("done", last.content or "")
    calls = _unanswered(history)
    if not calls:
        return None
    _turn_tools(node, node.kind)
    finished = _committed_results(node)
    todo = [call for call in calls if call.id not in finished]
    results = await node.kind.run_tools(node, todo) if todo else []
    finished.update((result.call_id, result.content) for result in results)
    node.kind.append_history(node, *(tool_message(call.id, finished[call.id]) for call in calls))
    return None


def _unanswered(history: list[Message]) -> list[ToolCall]:
    """The calls of the last reply that no tool message answers (none if it was answered)."""
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.role == "tool":
            continue
        if message.role != "assistant" or not message.tool_calls:
            return []
        answered = {m.tool_call_id for m in history[index + 1 :]}
        return [call for call in message.tool_calls if call.id not in answered]
    return []


def _committed_results(node: Node) -> dict[str, str]:
    """Results of this node's tool calls finished since its last model reply, by call id."""
    results: dict[str, str] = {}
    for event in reversed(node.session.bus.log):
        if event.path != node.path:
            continue
        if isinstance(event, ModelResponse):
            break
        if isinstance(event, ToolCallFinished) and event.status != "cancelled":
            results.setdefault(event.call_id, event.result)
    return results
