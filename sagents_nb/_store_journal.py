"""`Journal`: records a live session into its `Store`, one transaction per step."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._store import (
    EventRow,
    MessageWrite,
    NodeRow,
    SessionRows,
    Step,
    Store,
    StoredSession,
    TaskRow,
)
from ._store_snapshot import dump_node

if TYPE_CHECKING:
    from ._messages import Message
    from ._node import Node, TaskEntry
    from ._session import Session
    from .events import Event

    Written = dict[tuple[str, str], tuple[TaskEntry, bool]]

log = logging.getLogger("sagents_nb")

BEFORE_WAITING = frozenset(
    {
        "model_request",
        "paused",
        "run_finished",
        "compaction",
        "kind_swapped",
        "preprocessor_swapped",
        "llm_swapped",
        "error",
    }
)
"""Events committed at once, with everything before them: time may pass after them (a model
call, a pause, the end of a run) or they change what later steps mean."""

SETTLING = frozenset({"tool_call_finished", "task_finished", "resumed"})
"""Events committed at the end of the current loop iteration, so that the burst of work that
follows them (e.g. the parent's next request) shares one transaction."""


class Journal:
    """Buffers what a session does and commits it to `store`, one transaction per step.

    A session's `store` attribute is its journal. A step is committed before anything that
    takes time: a model request (`BEFORE_WAITING`), or tool calls about to run (a reply with
    calls reaching storage). What settles a step (tool results, a final answer, a finished
    task: `SETTLING`) is committed at the end of the loop iteration, in one transaction with
    the next step when that follows at once. A crash loses at most the step in flight.

    Args:
        session: the session to record.
        store: where to write.
        rows: the session's stored record when it was reopened or forked; None for a new one.
    """

    def __init__(self, session: Session, store: Store, *, rows: SessionRows | None = None):
        self.session = session
        self.store = store
        self._lock = threading.Lock()
        self._events: list[Event] = []
        self._writes: list[tuple[str, str, list[Message], bool]] = []
        self._dirty: set[str] = set()
        self._nodes: dict[str, Node] = {session.root.path: session.root}
        self._node_bodies: dict[str, str] = {}
        self._tasks: dict[str, Written] = {}
        self._unsettled: dict[str, int] = {}
        self._scheduled = False
        if rows is None:
            store.create(SessionRows(StoredSession(session.id, session.agent.name, time.time())))
            self._dirty.add(session.root.path)
        else:
            self._node_bodies = {path: row.body for path, row in rows.latest_nodes().items()}
            for node in session.root.walk():
                self._nodes[node.path] = node
                self._remember_tasks(
                    node.path,
                    {key: (e, e.outcome is not None) for key, e in node.tasks.items()},
                )
        session.bus.subscribe(self._on_event)
        self.flush()

    def __repr__(self) -> str:
        return f"Journal(session={self.session.id!r}, store={self.store!r})"

    # what the runtime reports

    def messages_appended(self, node: Node, messages: Sequence[Message]) -> None:
        """Record messages added to a node's storage (and the display transcript's copies)."""
        if not messages:
            return
        with self._lock:
            self._nodes[node.path] = node
            self._writes.append((node.path, "llm", list(messages), False))
            if node.display is not None:
                self._writes.append((node.path, "display", node.display[-len(messages) :], False))
            self._dirty.add(node.path)
        last = messages[-1]
        if last.role == "assistant" and last.tool_calls:
            self._end_step()
        elif last.role != "user":  # an input waits for its model request
            self._end_step_soon()

    def history_replaced(self, node: Node) -> None:
        """Record a compaction's new storage (the old rows stay, retired, for forks)."""
        with self._lock:
            self._nodes[node.path] = node
            self._writes.append((node.path, "llm", list(node.history), True))
            self._dirty.add(node.path)

    def _on_event(self, event: Event) -> None:
        if event.seq == 0:  # a subscriber's greeting (current statuses), not a logged event
            return
        with self._lock:
            self._events.append(event)
            self._dirty.add(event.path)
        if event.type in BEFORE_WAITING:
            self._end_step()
        elif event.type in SETTLING:
            self._end_step_soon()

    # committing

    def flush(self) -> None:
        """Commit everything recorded so far; raises `StoreError` if the store refuses."""
        with self._lock:
            written: dict[str, Written] = {}
            step = self._step(written)
            if step is None:
                return
            self.store.commit(self.session.id, step)
            self._events.clear()
            self._writes.clear()
            self._dirty.clear()
            for row in step.nodes:
                self._node_bodies[row.path] = row.body
            for path, tasks in written.items():
                self._remember_tasks(path, tasks)

    def _remember_tasks(self, path: str, tasks: Written) -> None:
        self._tasks[path] = tasks
        self._unsettled[path] = sum(not settled for _, settled in tasks.values())

    def _end_step(self) -> None:
        """Commit at a step's end; a failure is logged and the step retried with the next one."""
        try:
            self.flush()
        except Exception:
            log.exception(
                "could not write session %s to %r; the run goes on in memory and the write is "
                "retried at the next step",
                self.session.id,
                self.store,
            )

    def _end_step_soon(self) -> None:
        """Commit at the end of this loop iteration (at once when called off the loop)."""
        if self._scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._end_step()
            return
        self._scheduled = True
        loop.call_soon(self._end_deferred_step)

    def _end_deferred_step(self) -> None:
        self._scheduled = False
        self._end_step()

    def _step(self, written: dict[str, Written]) -> Step | None:
        seq = self.session.bus.last_seq
        step = Step(seq)
        step.events = [
            EventRow(e.seq, e.run, e.type, e.path, e.model_dump_json()) for e in self._events
        ]
        step.messages = [
            MessageWrite(path, transcript, [_message_json(m) for m in messages], replace)
            for path, transcript, messages, replace in self._writes
        ]
        for path in sorted(self._dirty):
            node = self._node(path)
            if node is None:
                continue
            body = dump_node(node)
            if self._node_bodies.get(path) != body:
                step.nodes.append(NodeRow(path, seq, body))
            changes = self._task_changes(node, step)
            if changes is not None:
                written[path] = changes
        if not (step.events or step.messages or step.nodes or step.tasks or step.retired):
            return None
        return step

    def _node(self, path: str) -> Node | None:
        node = self._nodes.get(path)
        if node is None:
            node = self.session.root.find(path)
            if node is not None:
                self._nodes[path] = node
        return node

    def _task_changes(self, node: Node, step: Step) -> Written | None:
        """Add the node's new, settled and forgotten tasks to `step`; None when unchanged."""
        before = self._tasks.get(node.path, {})
        tasks = node.tasks
        if len(tasks) == len(before) and not self._unsettled.get(node.path):
            return None  # tasks are only added, settled once, or forgotten (count drops)
        now: Written = {}
        for key, entry in list(tasks.items()):
            outcome = entry.outcome
            now[key] = (entry, outcome is not None)
            known = before.get(key)
            if known is not None and known[0] is entry and (known[1] or outcome is None):
                continue
            if known is not None and known[0] is not entry:
                step.retired.append((node.path, *key))
            step.tasks.append(
                TaskRow(
                    node.path,
                    *key,
                    entry.child.path,
                    step.seq,
                    outcome.status if outcome is not None else None,
                    outcome.text if outcome is not None else None,
                    step.seq if outcome is not None else None,
                )
            )
        step.retired.extend((node.path, *key) for key in before if key not in now)
        return now


def _message_json(message: Message) -> str:
    return message.model_dump_json(exclude_defaults=True)
