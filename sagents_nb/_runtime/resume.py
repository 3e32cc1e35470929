"""Resuming after an interruption: the unfinished run, the turn it cut, children cut mid-task."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import TYPE_CHECKING

from .._base.errors import ConfigurationError
from .._base.messages import ToolCall, tool_message, user
from ..events import ModelResponse, TaskFinished, TaskReattached, ToolCallFinished
from .node import Node, Outcome, TaskEntry
from .run import Run

if TYPE_CHECKING:
    from .._base.messages import Message
    from .session import Session


def interrupted_run(session: Session) -> int | None:
    """The number of the last run if it started and never finished, else None."""
    for event in reversed(session.bus.log):
        if event.type == "run_finished":
            return None
        if event.type == "run_started":
            return event.run
    return None


async def enqueue_resume(session: Session, pause_on: Iterable[str]) -> Run:
    """Schedule the interrupted run's continuation; its `Run` replaces the interrupted one."""
    tail = session._tail
    if tail is not None and not tail.done():
        raise ConfigurationError(
            f"session {session.id!r} has a run in flight; wait for it (run.wait()) before "
            "session.resume()"
        )
    number = interrupted_run(session)
    if number is None:
        raise ConfigurationError(
            f"session {session.id!r} has no interrupted run to resume (its runs all finished); "
            "send a message with session.send(...) to go on"
        )
    run = Run(session, number, pause_on=pause_on)
    run._task = asyncio.get_running_loop().create_task(session._execute(run, None, resume=True))
    session._tail = run._task
    session.runs = [run if r.number == number else r for r in session.runs]
    if run not in session.runs:
        session.runs.append(run)
    return run


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
    from .turns import _turn_tools

    _turn_tools(node, node.kind)
    finished = _committed_results(node)
    todo = [call for call in calls if call.id not in finished]
    results = await node.kind.run_tools(node, todo) if todo else []
    finished.update((result.call_id, result.content) for result in results)
    node.kind.append_history(node, *(tool_message(call.id, finished[call.id]) for call in calls))
    return None


async def continue_restored(parent: Node, entry: TaskEntry, call_id: str | None) -> Outcome:
    """Reattach to a child restored mid-task and let it continue from its own last step."""
    child = entry.child
    entry.task = asyncio.get_running_loop().create_task(_continue_child(parent, entry))
    parent.reattached += 1
    child.reattached += 1
    parent.emit(
        TaskReattached(
            child=child.path,
            agent=child.agent.name,
            prompt=entry.prompt,
            state="resumed",
            call_id=call_id,
        )
    )
    entry.outcome = outcome = await entry.task
    parent.emit(
        TaskFinished(
            child=child.path,
            agent=child.agent.name,
            status=outcome.status,
            text=outcome.text,
            turns=child.task_turns,
            usage=child.usage,
        )
    )
    return outcome


async def _continue_child(parent: Node, entry: TaskEntry) -> Outcome:
    from .turns import run_task

    child = entry.child
    persistent = getattr(child.kind, "persistent", False)
    async with parent.session.child_slots(parent):
        async with child.lock if persistent else contextlib.nullcontext():
            if child.input_index >= 0 and child.input_text == entry.prompt:
                return await run_task(child, None, resume=True)
            # spawned, but its input never reached storage (it waited for a slot)
            return await run_task(child, user(entry.prompt))


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
        if isinstance(event, ToolCallFinished):
            results.setdefault(event.call_id, event.result)
    return results
