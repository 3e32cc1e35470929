"""`MemoryStore`: the reference `Store`, in plain Python, kept in this process's memory."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Sequence
from copy import copy
from dataclasses import dataclass, field, replace

from .._base.errors import StoreError
from .protocol import (
    EventRow,
    MessageRow,
    MessageWrite,
    NodeRow,
    PlainStep,
    SessionRows,
    Step,
    StoredSession,
    TaskRow,
    plain_steps,
)

TaskKey = tuple[str, str, str]
"""(parent, agent, prompt): a task's key."""


class MemoryStore:
    """Durable sessions kept in this process's memory: the reference `Store`.

    Each write says in Python what `SQLiteStore` says in SQL, and the contract tests
    (tests/test_store_contract.py) hold both to the same behaviours; a new store can follow
    this class. What a store keeps:

    - events: one row per `seq`; a number already stored refuses the whole commit;
    - messages: one row per number `n`, live from `added` until a `replace` write of its
      transcript stamps `removed` (rows already removed keep their stamp);
    - node rows: one per (seq, path, part), a row at the same key replaces it; a node's
      state as of an event is its rows up to it merged in order (`SessionRows.node_states`);
    - tasks: at most one live (unretired) row per key; a task row for a live key updates its
      child, status and text, keeping its first `seq` and its first `settled`; retiring
      stamps the live row's `retired`, and the key's next task row is a new row;
    - every commit and create is all or nothing; reads return copies.

    A fork reads `load(...).at(seq)`, the rows as they stood after event `seq` (rows carry the
    event they follow), and `create`s them as a new session. Sessions live as long as this
    object; `close()` drops them.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, _Record] | None = {}

    def __repr__(self) -> str:
        count = "closed" if self._sessions is None else f"{len(self._sessions)} sessions"
        return f"MemoryStore({count})"

    def create(self, rows: SessionRows) -> None:
        """Add a new session with its rows (kept as given: `removed`, `settled`, `retired`
        too), all or nothing."""
        info = rows.info
        with self._lock:
            sessions = self._open()
            if info.id in sessions:
                raise StoreError(
                    f"a session with id {info.id!r} already exists in this store; pass another "
                    "session id"
                )
            record = _Record(
                StoredSession(info.id, info.agent, info.created, info.parent, info.fork_seq)
            )
            record.add_events(info.id, list(map(copy, rows.events)))
            for message in rows.messages:
                record.add_message(info.id, replace(message))
            for node in rows.nodes:
                record.nodes[(node.seq, node.path, node.part)] = replace(node)
            for task in rows.tasks:
                record.add_task(info.id, replace(task))
            sessions[info.id] = record

    def fork(self, source: str, seq: int, info: StoredSession) -> None:
        """Add session `info` holding `source`'s rows as of event `seq` (the optional `fork`
        of the protocol: exactly `create` of `load(source).at(seq)` under `info`)."""
        rows = self.load(source).at(seq)
        rows.info = info
        self.create(rows)

    def commit(self, session_id: str, steps: Sequence[Step]) -> None:
        """Write steps in order, all or nothing: each step's events, its message writes in
        order, its node rows, the tasks it retires, then its tasks."""
        steps = [_copy_step(step) for step in steps]  # a malformed row fails before any write
        with self._lock:
            record = self._open().get(session_id)
            if record is None:
                raise StoreError(
                    f"no session {session_id!r} in this MemoryStore to commit to; create it first"
                )
            record.check(session_id, steps)
            for step in steps:
                record.apply(step)

    def commit_plain(self, session_id: str, steps: list[PlainStep]) -> None:
        """`commit` of steps given as plain data (the optional `commit_plain`)."""
        self.commit(session_id, plain_steps(steps))

    def load(self, session_id: str) -> SessionRows:
        """The session's whole record, as copies."""
        with self._lock:
            sessions = self._open()
            record = sessions.get(session_id)
            if record is None:
                ids = [s.info.id for s in sorted(sessions.values(), key=_age)]
                raise StoreError(
                    f"no session {session_id!r} in this MemoryStore (sessions there: "
                    f"{', '.join(ids) or 'none'}); pass one of those ids"
                )
            return record.rows()

    def sessions(self) -> list[StoredSession]:
        """Every session in the store, oldest first."""
        with self._lock:
            return [record.stored() for record in sorted(self._open().values(), key=_age)]

    def close(self) -> None:
        """Drop every session; the store refuses to be used afterwards."""
        with self._lock:
            self._sessions = None

    def _open(self) -> dict[str, _Record]:
        if self._sessions is None:
            raise StoreError(
                "this MemoryStore was closed, and its sessions with it; use a new MemoryStore()"
            )
        return self._sessions


@dataclass
class _Record:
    """One session's rows, indexed the way writes look them up."""

    info: StoredSession
    events: list[EventRow] = field(default_factory=list)
    """In `seq` order."""
    seqs: set[int] = field(default_factory=set)
    messages: dict[int, MessageRow] = field(default_factory=dict)
    numbers: list[int] = field(default_factory=list)
    """The message numbers, in order."""
    live: dict[tuple[str, str], list[MessageRow]] = field(default_factory=dict)
    """Each (path, transcript)'s live message rows."""
    nodes: dict[tuple[int, str, str], NodeRow] = field(default_factory=dict)
    tasks: list[TaskRow] = field(default_factory=list)
    """In write order."""
    live_tasks: dict[TaskKey, TaskRow] = field(default_factory=dict)

    def check(self, sid: str, steps: list[Step]) -> None:
        """Refuse `steps` before any write if an event or message number is taken."""
        seqs = [e.seq for step in steps for e in step.events]
        if len(set(seqs)) != len(seqs) or not self.seqs.isdisjoint(seqs):
            raise _taken_events(sid)
        numbers = [n for step in steps for write in step.messages for n, _ in write.messages]
        if len(set(numbers)) != len(numbers) or not self.messages.keys().isdisjoint(numbers):
            raise _taken_messages(sid)

    def apply(self, step: Step) -> None:
        """Write one checked step."""
        self.add_events(self.info.id, step.events)
        for write in step.messages:
            self.write_messages(write)
        for node in step.nodes:
            self.nodes[(node.seq, node.path, node.part)] = node
        for parent, agent, prompt, seq in step.retired:
            task = self.live_tasks.pop((parent, agent, prompt), None)
            if task is not None:
                task.retired = seq
        for task in step.tasks:
            self.put_task(task)

    def add_events(self, sid: str, events: list[EventRow]) -> None:
        seqs = [e.seq for e in events]
        if len(set(seqs)) != len(seqs) or not self.seqs.isdisjoint(seqs):
            raise _taken_events(sid)
        for event in events:
            self.seqs.add(event.seq)
            if self.events and self.events[-1].seq > event.seq:
                bisect.insort(self.events, event, key=_seq)
            else:
                self.events.append(event)

    def add_message(self, sid: str, message: MessageRow) -> None:
        if message.n in self.messages:
            raise _taken_messages(sid)
        self.messages[message.n] = message
        if self.numbers and self.numbers[-1] > message.n:
            bisect.insort(self.numbers, message.n)
        else:
            self.numbers.append(message.n)
        if message.removed is None:
            self.live.setdefault((message.path, message.transcript), []).append(message)

    def write_messages(self, write: MessageWrite) -> None:
        """Add a write's messages; `replace` first retires the transcript's live rows."""
        key = (write.path, write.transcript)
        if write.replace:
            for row in self.live.pop(key, ()):
                row.removed = write.seq
        for n, body in write.messages:
            self.add_message(self.info.id, MessageRow(n, *key, write.seq, None, body))

    def add_task(self, sid: str, task: TaskRow) -> None:
        """A created session's task row, kept as given; two live rows of a key are refused."""
        key = (task.parent, task.agent, task.prompt)
        if task.retired is None:
            if key in self.live_tasks:
                raise StoreError(
                    f"session {sid!r} has two live task rows for {key!r}; a key has at most "
                    "one unretired row"
                )
            self.live_tasks[key] = task
        self.tasks.append(task)

    def put_task(self, task: TaskRow) -> None:
        """A committed task row: it updates its key's live row, else it is a new row."""
        key = (task.parent, task.agent, task.prompt)
        live = self.live_tasks.get(key) if task.retired is None else None
        if live is None:
            self.add_task(self.info.id, task)
            return
        live.child, live.status, live.text = task.child, task.status, task.text
        if live.settled is None:
            live.settled = task.settled

    def rows(self) -> SessionRows:
        return SessionRows(
            self.stored(),
            list(map(copy, self.events)),
            [replace(self.messages[n]) for n in self.numbers],
            [replace(self.nodes[key]) for key in sorted(self.nodes)],
            [replace(t) for t in self.tasks],
        )

    def stored(self) -> StoredSession:
        return replace(self.info, last_seq=self.events[-1].seq if self.events else 0)


def _copy_step(step: Step) -> Step:
    return Step(
        step.seq,
        list(map(copy, step.events)),
        [
            MessageWrite(
                w.path, w.transcript, w.seq, [(n, body) for n, body in w.messages], w.replace
            )
            for w in step.messages
        ],
        [replace(n) for n in step.nodes],
        [replace(t) for t in step.tasks],
        [(parent, agent, prompt, seq) for parent, agent, prompt, seq in step.retired],
    )


def _taken_events(sid: str) -> StoreError:
    return StoreError(
        f"session {sid!r} already has events with these numbers: another Session object is "
        "writing it; keep one live Session per stored session"
    )


def _taken_messages(sid: str) -> StoreError:
    return StoreError(
        f"session {sid!r} already has messages with these numbers: another Session object is "
        "writing it; keep one live Session per stored session"
    )


def _seq(event: EventRow) -> int:
    return event.seq


def _age(record: _Record) -> tuple[float, str]:
    return record.info.created, record.info.id
