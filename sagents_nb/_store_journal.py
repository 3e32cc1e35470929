"""`Journal`: records a live session step by step, and hands each step to its writer."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._loop import library_loop, on_library_thread
from ._messages import Message
from ._store import (
    EventRow,
    MessageRow,
    MessageWrite,
    NodeRow,
    SessionRows,
    Step,
    Store,
    StoredSession,
    TaskRow,
)
from ._store_snapshot import NODE_FIELDS, dump_json, kind_state, node_state, node_values
from ._store_writer import MAX_DELAY_SECONDS, QUIET_SECONDS, StepWriter
from .events import ModelRequest

if TYPE_CHECKING:
    from ._node import Node, TaskEntry
    from ._session import Session
    from .events import Event

    Written = tuple[dict[tuple[str, str], TaskEntry], set[tuple[str, str]]]
    """The task entries written for a node, and the keys of those written unsettled."""

STEP_ENDS = frozenset(
    {
        "model_request",
        "paused",
        "run_finished",
        "tool_call_finished",
        "task_finished",
        "compaction",
        "resumed",
        "kind_swapped",
        "preprocessor_swapped",
        "llm_swapped",
        "error",
    }
)
"""Events that end a step (as do replies and tool results reaching storage); an input and
the events in between belong to the step that follows them."""

BEFORE_WAITING = frozenset({"model_request", "paused", "run_finished"})
"""Step ends after which the library loop may stay busy for long (a model call whose handler
blocks it, a person, another session's run): the step is cut at once. Other steps are cut
once the session is quiet (see `_step_ended`)."""

CHILD_EVENTS = frozenset({"task_spawned", "task_reattached", "task_finished"})
"""Events at a parent's path that name a child (`event.child`). They (and `kind_swapped`)
follow every change of the parent's task entries: only then are the entries compared."""

KIND_EVENTS = frozenset({"cold_sink", "compaction", "context_full", "window_trim", "kind_swapped"})
"""Events after which a node's kind state (e.g. Main's cold storage) is written again."""


class Journal:
    """Records what a session does, step by step, for its `Store`.

    A session's `store` attribute is its journal. The runtime reports storage writes to it
    (`messages_appended`, `history_replaced`) and it follows the event log. A step (see
    `STEP_ENDS`) is cut on the loop, with the events, messages, node states and task entries
    since the last one, and handed to a `StepWriter`, which encodes and commits it off the
    loop in one transaction with the steps that follow at once. A crash loses at most those
    last moments and the action in flight (a reply whose tools were still running is asked
    again on resume). Reading a store in this process (`Session.open`, `list_stored`) commits
    what is queued first; `fork`, `export_jsonl` and `flush()` do so for their session.

    Args:
        session: the session to record.
        store: where to write.
        rows: the session's stored record when it was reopened or forked; None for a new one.
        fresh_id: a new session's id was generated here, so nobody else can have taken it:
            its record is created by the store thread with its first step. A chosen id is
            created at once, so that a taken one raises `StoreError` here.
    """

    def __init__(
        self,
        session: Session,
        store: Store,
        *,
        rows: SessionRows | None = None,
        fresh_id: bool = False,
    ):
        self.session = session
        self.store = store
        self._lock = threading.Lock()
        self._logged = len(session.bus.log)
        self._writes: list[tuple[str, str, list[tuple[int, Message]], bool]] = []
        self._numbers: dict[int, tuple[Message, str]] = {}
        self._next_number = 1
        self._dirty: set[str] = set()
        self._nodes: dict[str, Node] = {session.root.path: session.root}
        self._states: dict[str, tuple[Any, ...]] = {}
        self._kinds: dict[str, dict[str, Any]] = {}
        self._kind_dirty: set[str] = set()
        self._task_dirty: set[str] = set()
        self._tasks: dict[str, Written] = {}
        self._ended = self._seen = 0
        self._cut_at: float | None = None
        created = None
        if rows is None:
            root = session.root
            state = node_values(root)
            self._states[root.path] = state
            created = SessionRows(
                StoredSession(session.id, session.agent.name, time.time()),
                nodes=[NodeRow(root.path, "state", 0, dump_json(node_state(state)))],
            )
            if not fresh_id:  # a chosen id may be taken: say so now
                store.create(created)
                created = None
        self._writer = StepWriter(store, session.id, cut=self._end_step, create=created)
        if rows is not None:
            for (path, part), row in rows.latest_nodes().items():
                data = json.loads(row.body)
                if part == "state":
                    self._states[path] = tuple(data[name] for name in NODE_FIELDS)
                else:
                    self._kinds[path] = data
            self._next_number = max((m.n for m in rows.messages), default=0) + 1
            live = rows.live_messages()
            root = session.root
            self._number(root.display or [], live.get((root.path, "display"), []))
            for node in root.walk():
                self._number(node.history, live.get((node.path, "llm"), []))
                self._nodes[node.path] = node
                self._tasks[node.path] = (
                    dict(node.tasks),
                    {key for key, entry in node.tasks.items() if entry.outcome is None},
                )
        session.bus.subscribe(self._on_event)

    def __repr__(self) -> str:
        return f"Journal(session={self.session.id!r}, store={self.store!r})"

    # what the runtime reports

    def messages_appended(self, node: Node, messages: Sequence[Message]) -> None:
        """Record messages added to a node's storage (and the display transcript's copies)."""
        if not messages:
            return
        with self._lock:
            self._nodes[node.path] = node
            self._writes.append(self._write(node.path, "llm", messages))
            if node.display is not None:
                self._writes.append(
                    self._write(node.path, "display", node.display[-len(messages) :])
                )
            self._dirty.add(node.path)
        if messages[-1].role != "user":  # an input waits for its model request
            self._step_ended()

    def history_replaced(self, node: Node) -> None:
        """Record a compaction's new storage (the old rows stay, retired, for forks)."""
        with self._lock:
            self._nodes[node.path] = node
            self._writes.append(self._write(node.path, "llm", node.history, replace=True))
            self._dirty.add(node.path)
            self._kind_dirty.add(node.path)

    def _write(
        self, path: str, transcript: str, messages: Sequence[Message], *, replace: bool = False
    ) -> tuple[str, str, list[tuple[int, Message]], bool]:
        """Number the messages: a view in an event names a stored message by its number."""
        numbered = []
        for message in messages:
            number = self._next_number
            self._next_number += 1
            self._numbers[id(message)] = (message, str(number))
            numbered.append((number, message))
        return path, transcript, numbered, replace

    def _number(self, messages: list[Message], rows: list[MessageRow]) -> None:
        for message, row in zip(messages, rows, strict=True):
            self._numbers[id(message)] = (message, str(row.n))

    def _on_event(self, event: Event) -> None:
        """Cut a step at once after the events in `BEFORE_WAITING`, and once the session is
        quiet after the other step ends (the events themselves are read from the session's log
        when the step is cut)."""
        kind = event.type
        if kind in BEFORE_WAITING:
            self._end_step()
        elif kind in STEP_ENDS:
            self._step_ended()

    # committing

    def flush(self) -> None:
        """Commit everything recorded so far and wait; raises `StoreError` if the store refuses."""
        self._writer.drain()

    def _step_ended(self) -> None:
        """A step ended: cut it once the session is quiet (`QUIET_SECONDS`), taking along the
        steps that end meanwhile, at the latest `MAX_DELAY_SECONDS` later. Steps are cut on the
        library loop, between its callbacks; off it they are cut at once."""
        self._ended += 1
        if self._cut_at is not None:
            return
        if not on_library_thread():
            self._end_step()
            return
        now = time.monotonic()
        self._cut_at = now + MAX_DELAY_SECONDS
        self._seen = self._ended
        library_loop().call_later(QUIET_SECONDS, self._cut_when_quiet)

    def _cut_when_quiet(self) -> None:
        if self._ended != self._seen:  # not quiet: look again later, up to the deadline
            left = self._cut_at - time.monotonic() if self._cut_at is not None else 0.0
            if left > 0:
                self._seen = self._ended
                library_loop().call_later(min(QUIET_SECONDS, left), self._cut_when_quiet)
                return
        self._cut_at = None
        self._end_step()

    def _end_step(self) -> None:
        """Cut a step from what was recorded since the last one and hand it to the writer (a
        failed commit is logged and retried with the next step, never raised into the run)."""
        with self._lock:
            events = self.session.bus.log[self._logged :]
            if not (events or self._writes or self._dirty):
                return
            for event in events:
                path = event.path
                self._dirty.add(path)
                kind = event.type
                if kind in CHILD_EVENTS:  # they change the child's counters too
                    self._dirty.add(event.child)  # type: ignore[attr-defined]
                    self._task_dirty.add(path)
                elif kind in KIND_EVENTS:
                    self._kind_dirty.add(path)
                    if kind == "kind_swapped":  # forgets the tasks settled under the old kind
                        self._task_dirty.add(path)
            written: dict[str, Written] = {}
            step = self._step(events, written)
            self._logged += len(events)
            if step.events or step.messages or step.nodes or step.tasks or step.retired:
                self._writer.put(step)
            self._writes = []
            self._dirty.clear()
            self._kind_dirty.clear()
            self._task_dirty.clear()
            for path, part, data in step.nodes:
                if part == "state":
                    self._states[path] = data
                else:
                    self._kinds[path] = data
            self._tasks.update(written)

    def _step(self, events: list[Event], written: dict[str, Written]) -> PendingStep:
        seq = events[-1].seq if events else self.session.bus.last_seq
        step = PendingStep(seq, events, self._writes, self._numbers)
        for path in self._dirty:
            node = self._node(path)
            if node is None:
                continue
            state = node_values(node)
            if self._states.get(path) != state:
                step.nodes.append((path, "state", state))
            kind = kind_state(node) if path in self._kind_dirty else None
            if kind is not None and self._kinds.get(path) != kind:
                step.nodes.append((path, "kind", kind))
            if path in self._task_dirty:
                changes = self._task_changes(node, step)
                if changes is not None:
                    written[path] = changes
        return step

    def _node(self, path: str) -> Node | None:
        node = self._nodes.get(path)
        if node is None:
            node = self.session.root.find(path)
            if node is not None:
                self._nodes[path] = node
        return node

    def _task_changes(self, node: Node, step: PendingStep) -> Written | None:
        """Add the node's new, settled and forgotten tasks to `step`; None when unchanged.

        Tasks are only added (at the end), settled once, or forgotten (the count drops), so
        only the newest and the unsettled ones need a look unless the count dropped.
        """
        tasks = node.tasks
        known = self._tasks.get(node.path)
        if known is None:
            if not tasks:
                return None
            known = ({}, set())
        written, unsettled = known
        added = len(tasks) - len(written)
        if added == 0 and all(
            tasks.get(key) is written[key] and written[key].outcome is None for key in unsettled
        ):
            return None  # e.g. a child still running: nothing new
        candidates = [*unsettled, *itertools.islice(reversed(tasks), max(added, 0))]
        full = added < 0 or any(key not in tasks for key in unsettled)
        if full or any(key in written for key in candidates[len(unsettled) :]):
            candidates = list(tasks)
        now, still = dict(written), set(unsettled)
        for key in candidates:
            entry = tasks[key]
            outcome = entry.outcome
            previous = now.get(key)
            if previous is entry and (key not in still or outcome is None):
                continue
            if previous is not None and previous is not entry:
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
            now[key] = entry
            if outcome is None:
                still.add(key)
            else:
                still.discard(key)
        if full:
            for key in [key for key in now if key not in tasks]:
                step.retired.append((node.path, *key))
                del now[key]
                still.discard(key)
        return now, still


@dataclass
class PendingStep:
    """A step as recorded on the loop: the objects themselves. The writer encodes them (JSON)
    off the loop; events and messages are immutable, node states are copies."""

    seq: int
    events: list[Event]
    messages: list[tuple[str, str, list[tuple[int, Message]], bool]]
    numbers: dict[int, tuple[Message, str]]
    """The journal's message numbers (only ever added to), for the views in requests."""
    nodes: list[tuple[str, str, Any]] = field(default_factory=list)
    """(path, "state", `node_values` tuple) or (path, "kind", `kind_state` dict)."""
    tasks: list[TaskRow] = field(default_factory=list)
    retired: list[tuple[str, str, str]] = field(default_factory=list)

    def encode(self) -> Step:
        """The step's rows, as a store writes them."""
        return Step(
            self.seq,
            [EventRow(e.seq, e.run, e.type, e.path, self._event_json(e)) for e in self.events],
            [
                MessageWrite(path, transcript, [(n, _message_json(m)) for n, m in numbered], swap)
                for path, transcript, numbered, swap in self.messages
            ],
            [
                NodeRow(
                    path, part, self.seq, dump_json(node_state(data) if part == "state" else data)
                )
                for path, part, data in self.nodes
            ],
            self.tasks,
            self.retired,
        )

    def _event_json(self, event: Event) -> str:
        """The event's JSON; a request's view names stored messages by number."""
        if type(event) is not ModelRequest:
            return event.__pydantic_serializer__.to_json(event).decode()
        numbers = self.numbers
        parts = []
        for message in event.messages:
            known = numbers.get(id(message))
            if known is not None and known[0] is message:
                parts.append(known[1])
            else:
                parts.append(_message_json(message))
        head = event.model_dump_json(exclude={"messages"})
        return f'{head[:-1]},"messages":[{",".join(parts)}]}}'


_serialize_message = Message.__pydantic_serializer__


def _message_json(message: Message) -> str:
    return _serialize_message.to_json(message, exclude_defaults=True).decode()
