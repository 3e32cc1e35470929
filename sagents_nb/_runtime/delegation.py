"""Delegation: the model-facing `task` tool, team scoping, reattach, Task instructions, residents."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from .._base.loop import droppable
from .._base.messages import user
from .._base.outcome import Outcome
from .._tools.node_tool import NodeTool
from .._tools.tool import ToolResult, ToolStatus
from ..events import KindSwapped, TaskFinished, TaskReattached, TaskRefused, TaskSpawned
from ..kinds import kind_name
from .limits import spawn_refusal
from .tasks import QueuedInput, TaskEntry

if TYPE_CHECKING:
    from ..kinds import ChildKind
    from .agent import Agent
    from .node import Node

TASK_DESCRIPTION = "Delegate a subtask to an isolated subagent. Available agents — "


class TaskTool(NodeTool["Node"]):
    """`task(agent, prompt)`: spawn (or reattach to) an isolated child from the caller's team."""

    name = "task"

    def __init__(self, members: list[Agent]) -> None:
        ordered = sorted(members, key=lambda a: a.name)
        self.description = TASK_DESCRIPTION + "; ".join(f"{a.name}: {a.does}" for a in ordered)
        self.parameters = {
            "type": "object",
            "properties": {
                "agent": {
                    "type": "string",
                    "enum": [a.name for a in ordered],
                    "description": "which team member does the subtask",
                },
                "prompt": {
                    "type": "string",
                    "description": "the subtask, complete and self-contained",
                },
            },
            "required": ["agent", "prompt"],
        }

    async def run(self, node: Node, call_id: str, arguments: dict[str, Any]) -> ToolResult:
        name, prompt = arguments.get("agent"), arguments.get("prompt")
        if not isinstance(name, str) or not isinstance(prompt, str):
            return ToolResult(
                call_id,
                self.name,
                "error: task needs string arguments 'agent' and 'prompt'",
                "error",
            )
        members = {a.name: a for a in node.agent.members()}
        if name not in members:
            reason = (
                f'agent "{name}" is not in this agent\'s team '
                f"(available: {', '.join(sorted(members)) or 'none'})"
            )
            return _refuse(node, call_id, name, prompt, reason)
        pool = node.exhausted_pool()
        if pool is not None:
            reason = f"budget exhausted ({pool}): no more children; answer with what you have"
            return _refuse(node, call_id, name, prompt, reason)
        limit = node.session.max_depth
        if node.depth >= limit:
            reason = (
                f"depth limit ({limit}) reached: {node.path} is at depth {node.depth} and "
                "cannot delegate further; do this part yourself or answer with what you have"
            )
            return _refuse(node, call_id, name, prompt, reason)
        try:
            outcome = await delegate(node, members[name], prompt, call_id)
        except SpawnRefused as exc:
            return _refuse(node, call_id, name, prompt, str(exc))
        status: ToolStatus = "error" if outcome.status in ("error", "cancelled") else "ok"
        return ToolResult(call_id, self.name, outcome.as_tool_text(), status)


class SpawnRefused(Exception):
    """A session cap refused a new child; the `task` call is answered as refused."""


def _refuse(node: Node, call_id: str, agent: str, prompt: str, reason: str) -> ToolResult:
    node.refused.append(reason)
    node.emit(TaskRefused(agent=agent, prompt=prompt, reason=reason, call_id=call_id))
    return ToolResult(call_id, "task", f"error: {reason}", "refused")


class TaskInstructionsTool(NodeTool["Node"]):
    """`get_task_instructions(agent)`: a team member's usage instructions, served on request."""

    name = "get_task_instructions"

    def __init__(self, members: list[Agent]) -> None:
        self.description = (
            "Get detailed instructions on how to use a team member before delegating to it."
        )
        self.parameters = {
            "type": "object",
            "properties": {
                "agent": {
                    "type": "string",
                    "enum": sorted(a.name for a in members if a.use_instructions),
                }
            },
            "required": ["agent"],
        }

    async def run(self, node: Node, call_id: str, arguments: dict[str, Any]) -> ToolResult:
        wanted = arguments.get("agent")
        for agent in node.agent.members():
            if agent.name == wanted and agent.use_instructions:
                return ToolResult(call_id, self.name, agent.use_instructions)
        return ToolResult(
            call_id, self.name, f"error: no instructions for agent {wanted!r}", "error"
        )


_task_tools: dict[tuple[tuple[str, str], ...], TaskTool] = {}


def team_tools(agent: Agent) -> list[Any]:
    """The tools an agent's team gives it this turn (none for an empty team)."""
    if not agent.team:
        return []
    members = agent.members()
    key = tuple((a.name, a.does) for a in members)
    task = _task_tools.get(key)
    if task is None:
        task = _task_tools[key] = TaskTool(members)
    tools: list[Any] = [task]
    if any(a.use_instructions for a in members):
        tools.append(TaskInstructionsTool(members))
    seen: set[int] = set()
    for member in members:
        kind = member.kind
        if kind is not None:
            for control in kind.parent_tools():
                if id(control) not in seen:
                    seen.add(id(control))
                    tools.append(control)
    return tools


async def delegate(parent: Node, agent: Agent, prompt: str, call_id: str | None) -> Outcome:
    """Hand `prompt` to a child of `parent` running `agent`: reattach, deliver, or spawn."""
    session = parent.session
    kind = agent.kind if agent.kind is not None else session.default_worker
    seen = parent.kinds_seen.get(agent.name)
    if seen is not None and seen is not kind:
        _swap_child_kind(parent, agent, seen, kind)
    parent.kinds_seen[agent.name] = kind
    key = (agent.name, prompt)
    entry = parent.tasks.get(key)
    if entry is not None and entry.task is None and entry.outcome is None:
        return await continue_restored(parent, entry, call_id)
    if entry is not None and entry.outcome is None and entry.task is not None and entry.task.done():
        entry = None  # cancelled before it settled: run it again rather than reattach
    run = session.current_run.number if session.current_run is not None else 0
    if entry is not None and entry.outcome is not None and session.reattach == "run":
        if entry.run != run:
            entry = None  # settled for an earlier message: a new message does new work
    if entry is not None:
        return await _reattach(parent, entry, call_id)
    child = parent.persistent.get(agent.name) if kind.persistent else None
    spawned = child is None
    if child is None:
        refusal = spawn_refusal(parent)
        if refusal is not None:
            raise SpawnRefused(refusal)
        child = parent.spawn(agent, kind)
        if kind.persistent:
            parent.persistent[agent.name] = child
    entry = parent.tasks[key] = TaskEntry(child, prompt, run=run)
    parent.emit(
        TaskSpawned(
            child=child.path,
            agent=agent.name,
            prompt=prompt,
            kind=kind_name(kind),
            call_id=call_id,
            display_text=agent.running_label,
        )
    )
    if spawned:
        child.set_status("spawned")
    entry.task = droppable(
        asyncio.get_running_loop().create_task(_run_child(parent, child, prompt))
    )
    outcome, replaced = await _reviewed(child, await _settled(entry), call_id)
    entry.outcome = outcome
    parent.emit(task_finished(child, outcome, replaced))
    return outcome


def task_finished(child: Node, outcome: Outcome, replaced: str | None = None) -> TaskFinished:
    """The `task_finished` event (emitted at its parent) of `child`'s task ended with `outcome`;
    `replaced`: the child's own answer when the user edited it."""
    return TaskFinished(
        child=child.path,
        agent=child.agent.name,
        status=outcome.status,
        text=outcome.text,
        turns=child.task_turns,
        usage=child.usage,
        replaced=replaced,
    )


async def _reviewed(
    child: Node, outcome: Outcome, call_id: str | None
) -> tuple[Outcome, str | None]:
    """The child's answer as its parent gets it, and the answer it replaced: at a `reply`
    breakpoint the user approves it, edits it (`edit(reply=...)`) or rejects it first."""
    session, name = child.session, child.agent.name
    if not session.may_pause(child, "reply", name):
        return outcome, None
    decision = await session.gate(
        child,
        "reply",
        name=name,
        arguments={"reply": outcome.text, "status": outcome.status},
        call_id=call_id,
    )
    if decision.kind == "edit" and "reply" in decision.changes:
        text = decision.reply_message().content or ""
        return Outcome(outcome.status, text), outcome.text
    if decision.kind == "reject":
        reason = decision.changes.get("reason") or "no reason given"
        refused = f"the user rejected the answer of {child.path}: {reason}"
        return Outcome("error", refused), outcome.text
    return outcome, None


async def _run_child(parent: Node, child: Node, prompt: str) -> Outcome:
    semaphore = parent.session.child_slots(parent)
    async with semaphore:
        if not child.kind.persistent:
            return await child.run_task(user(prompt))
        return await _when_free(child, prompt)


async def _when_free(child: Node, prompt: str) -> Outcome:
    """Run `prompt` on a persistent child once it is free; meanwhile it waits in the inbox,
    where a newer input may supersede it or the running task take it (`Node.take_interrupts`)."""
    item = QueuedInput(prompt, asyncio.get_running_loop().create_future())
    child.inbox.append(item)
    _supersede(child)
    try:
        async with child.lock:
            if item.future.done():
                return item.future.result()
            child.inbox.remove(item)
            return await child.run_task(user(prompt))
    finally:
        if item in child.inbox:  # cancelled while it waited
            child.inbox.remove(item)


async def _settled(entry: TaskEntry) -> Outcome:
    """The entry's outcome; a task its parent stopped (`entry.stopped`) is answered as cancelled,
    while a cancellation of the caller itself goes on up."""
    assert entry.task is not None
    try:
        return await entry.task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if entry.stopped is None or (current is not None and current.cancelling()):
            raise
        return Outcome("cancelled", entry.stopped)


def _supersede(child: Node) -> None:
    """Answer the oldest waiting inputs beyond what the child's kind lets wait."""
    limit = child.kind.waiting_inputs
    waiting = [item for item in child.inbox if not item.future.done()]
    if limit is None or len(waiting) <= limit + (0 if child.lock.locked() else 1):
        return
    for item in waiting[: len(waiting) - limit - (0 if child.lock.locked() else 1)]:
        child.inbox.remove(item)
        item.future.set_result(
            Outcome(
                "incomplete",
                f"{child.path} took a newer input instead of this one (it keeps "
                f"{limit} waiting at most): {item.prompt}",
            )
        )


async def _reattach(parent: Node, entry: TaskEntry, call_id: str | None) -> Outcome:
    child = entry.child
    parent.reattached += 1
    child.reattached += 1
    if entry.outcome is not None:
        state = "settled"
    elif child.status == "paused":
        state = "pending"
    else:
        state = "running"
    parent.emit(
        TaskReattached(
            child=child.path,
            agent=child.agent.name,
            prompt=entry.prompt,
            state=state,
            call_id=call_id,
        )
    )
    if entry.outcome is not None:
        return entry.outcome
    # a pause is inline: the repeated call waits for the paused child's real answer
    return await _settled(entry)


def _swap_child_kind(parent: Node, agent: Agent, old: ChildKind, new: ChildKind) -> None:
    # results settled under the old kind are not reattached to: the configuration changed
    for key in [k for k, e in parent.tasks.items() if k[0] == agent.name and e.outcome]:
        del parent.tasks[key]
    resident = parent.persistent.pop(agent.name, None)
    if resident is not None:
        resident.set_status("disposed", resident.kind.dispose(resident, "keep"))
    parent.emit(
        KindSwapped(agent=agent.name, old=kind_name(old), new=kind_name(new), policy="keep")
    )


async def continue_restored(parent: Node, entry: TaskEntry, call_id: str | None) -> Outcome:
    """Reattach to a child restored mid-task and let it continue from its own last step."""
    child = entry.child
    entry.task = droppable(asyncio.get_running_loop().create_task(_continue_child(parent, entry)))
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
    outcome, replaced = await _reviewed(child, await entry.task, call_id)
    entry.outcome = outcome
    parent.emit(task_finished(child, outcome, replaced))
    return outcome


async def _continue_child(parent: Node, entry: TaskEntry) -> Outcome:
    child = entry.child
    persistent = child.kind.persistent
    async with parent.session.child_slots(parent):
        started = child.input_index >= 0 and child.input_text == entry.prompt
        if persistent and not started:
            if _cut_in(parent, child, entry.prompt):  # it joined the child's unfinished task
                item = QueuedInput(entry.prompt, asyncio.get_running_loop().create_future())
                child.joined.append(item)
                return await item.future
            return await _when_free(child, entry.prompt)  # it waited in the inbox: again
        async with child.lock if persistent else contextlib.nullcontext():
            if started:
                return await child.run_task(None, resume=True)
            # spawned, but its input never reached storage (it waited for a slot)
            return await child.run_task(user(entry.prompt))


def _cut_in(parent: Node, child: Node, prompt: str) -> bool:
    """Whether `prompt` cut into the child's task, which is still to be finished: it is stored
    after the input that task started on."""
    running = parent.tasks.get((child.agent.name, child.input_text))
    if running is None or running.outcome is not None or child.input_index < 0:
        return False
    after = child.history[child.input_index + 1 :]
    return any(m.role == "user" and m.content == prompt for m in after)
