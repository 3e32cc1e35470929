"""The `Store` protocol durable sessions write to, and the rows that cross it (public in
`sagents_nb.store`).

A store keeps rows, not objects: events, transcript messages, node snapshots and task entries,
each stamped with the event `seq` it follows (a message with the last event before it was
stored; a snapshot with the event it was taken at). The state "as of" any event is then a
filter over the rows (`SessionRows.at`), which is what reopening and forking read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any, NamedTuple, Protocol, cast, runtime_checkable

import msgspec

from .text import body_text, read_json


@dataclass(frozen=True)
class StoredSession:
    """One session in a store; a fork names the session and the event it branched from."""

    id: str
    agent: str
    """The top agent's name."""
    created: float
    """Unix time the session was created."""
    parent: str | None = None
    """The session this one was forked from."""
    fork_seq: int | None = None
    """The parent's event this one branched at."""
    last_seq: int = 0
    """The last committed event (0 when none)."""


class EventRow(msgspec.Struct, gc=False):
    """One event, as its JSON text.

    A `model_request`'s `messages` (a `model_response`'s `message`) may hold message numbers
    (`MessageRow.n`) in place of messages that are stored as rows, so a long session's views
    do not repeat its history. A number names the row the message had as of the event (added
    at or before its `seq`), so the rows `SessionRows.at(seq)` keeps hold every message its
    events name.

    A struct made in C (a reopened session makes one for each of its events: 160,000 for a
    tree of 10,000 nodes), which the cycle collector does not track: its fields are numbers
    and text, so it can be in no cycle.
    """

    seq: int
    run: int
    type: str
    path: str
    body: str


@dataclass(slots=True)
class MessageRow:
    """One transcript message: live from event `added` (the last event before it was stored)
    until event `removed` (a compaction)."""

    n: int
    """The message's number in its session (write order; a compaction that keeps a message
    stores it again under a new number)."""
    path: str
    transcript: str
    """`llm` (the node's storage) or `display` (the top agent's display transcript)."""
    added: int
    removed: int | None
    body: str


@dataclass(slots=True)
class NodeRow:
    """Part of a node's state as of event `seq`, as a JSON object: `state` (counters, status,
    outcome...) or `kind` (what its kind keeps besides the messages, e.g. cold storage).

    A `state` row may hold only the fields that changed since the node's previous row: the
    state as of an event is the node's rows up to it, merged in order (`SessionRows.nodes_at`).
    """

    path: str
    part: str
    seq: int
    body: str


@dataclass(slots=True)
class TaskRow:
    """A delegated task keyed by (parent, agent, prompt); `status` stays None until it settles.

    `seq` and `settled` are the events at which the parent's entries were compared (model
    requests and step ends). A task the parent forgets (e.g. its agent's kind was swapped) is
    `retired` at such an event.
    """

    parent: str
    agent: str
    prompt: str
    child: str
    seq: int
    status: str | None = None
    text: str | None = None
    settled: int | None = None
    retired: int | None = None

    def values(self) -> tuple[object, ...]:
        """The fields, in order."""
        return (
            self.parent,
            self.agent,
            self.prompt,
            self.child,
            self.seq,
            self.status,
            self.text,
            self.settled,
            self.retired,
        )


@dataclass(slots=True)
class MessageWrite:
    """Messages added to one transcript; `replace` first retires the transcript's live rows."""

    path: str
    transcript: str
    seq: int
    """The last event before the messages were stored (their rows' `added`, and `removed` of
    the rows `replace` retires)."""
    messages: list[tuple[int, str]]
    """(number, JSON text) of each message."""
    replace: bool = False


@dataclass
class Step:
    """What one step wrote; a store commits it atomically. Its rows carry their own stamps."""

    seq: int
    """The last event the step covers."""
    events: list[EventRow] = field(default_factory=list)
    messages: list[MessageWrite] = field(default_factory=list)
    nodes: list[NodeRow] = field(default_factory=list)
    tasks: list[TaskRow] = field(default_factory=list)
    """New tasks and newly settled ones; a key's live row is updated, else a row is added."""
    retired: list[tuple[str, str, str, int]] = field(default_factory=list)
    """(parent, agent, prompt, seq) of tasks the parent forgot, and the event it did at."""

    @classmethod
    def from_plain(cls, seq: int, plain: PlainStep) -> Step:
        """The step whose rows `plain` holds (a plain event's JSON made from its fields)."""
        events, messages, nodes, tasks, retired = plain
        return cls(
            seq,
            [
                EventRow(s, run, kind, path, cast(str, body_text(body)))
                for s, run, kind, path, body in events
            ],
            [MessageWrite(*write) for write in messages],
            [NodeRow(*node) for node in nodes],
            [TaskRow(*task) for task in tasks],
            list(retired),
        )


@dataclass
class SessionRows:
    """A session's whole record: every event and every version of its state, in write order."""

    info: StoredSession
    events: list[EventRow] = field(default_factory=list)
    messages: list[MessageRow] = field(default_factory=list)
    nodes: list[NodeRow] = field(default_factory=list)
    tasks: list[TaskRow] = field(default_factory=list)

    def at(self, seq: int) -> SessionRows:
        """The record as it stood after event `seq`: later rows dropped, later retirements undone."""
        messages = [
            replace(m, removed=None) if m.removed is not None and m.removed > seq else m
            for m in self.messages
            if m.added <= seq
        ]
        tasks = [
            replace(
                t if t.settled is not None and t.settled <= seq else _unsettled(t),
                retired=None,
            )
            for t in self.tasks
            if t.seq <= seq and (t.retired is None or t.retired > seq)
        ]
        return SessionRows(
            info=self.info,
            events=[e for e in self.events if e.seq <= seq],
            messages=messages,
            nodes=[n for n in self.nodes if n.seq <= seq],
            tasks=tasks,
        )

    def live_messages(self) -> dict[tuple[str, str], list[MessageRow]]:
        """Each transcript's live messages in order, by (path, transcript)."""
        live: dict[tuple[str, str], list[MessageRow]] = {}
        for m in self.messages:
            if m.removed is None:
                live.setdefault((m.path, m.transcript), []).append(m)
        return live

    def node_states(self) -> dict[tuple[str, str], dict[str, Any]]:
        """Each node's parts as of the last row, by (path, part): its rows merged in order."""
        merged: dict[tuple[str, str], dict[str, Any]] = {}
        for row in sorted(self.nodes, key=_node_seq):
            data = read_json(row.body)
            key = (row.path, row.part)
            known = merged.get(key)
            if known is None:
                merged[key] = data
            else:
                known.update(data)
        return merged


_node_seq = attrgetter("seq")


def _unsettled(task: TaskRow) -> TaskRow:
    return replace(task, status=None, text=None, settled=None)


@runtime_checkable
class Store(Protocol):
    """Where durable sessions live: `SQLiteStore` (a file) and `MemoryStore` (this process)
    are built in; another database can stand behind the same five methods (pass it as
    `store=`). `MemoryStore` is the reference: its code says in plain Python what each method
    keeps, and tests/test_store_contract.py holds every store to the same behaviours.

    It is called from two threads (the store thread commits; the caller's thread reads, and
    creates forks and imports): a store serializes its methods. Rows crossing the seam are the store's own: it copies what it keeps and what it
    returns. `load` reads a session's whole record; reading part of it (paging) would be a
    further, optional method, so a store with these five keeps working.

    Some methods are optional, each declared by a protocol of its own that a store satisfies by
    having the method (no registration, no base class; the runtime asks `isinstance(store,
    ForkingStore)`, `isinstance(store, PlainCommitStore)`):

    - `fork(source, seq, info)` (`ForkingStore`): the same as `create` of
      `load(source).at(seq)` under `info`, which `Session.fork` does without it; a store that
      can copy rows where they are (SQL's INSERT ... SELECT) spares reading and sending them.
    - `commit_plain(session_id, steps)` (`PlainCommitStore`): the same as `commit` of the
      steps given as plain tuples (`PlainStep`), which the store thread then hands over
      without building the `Step` rows, and with plain events' bodies still as their fields.
    - `commit_group(writes)` (`GroupCommitStore`): several sessions' `create` and
      `commit_plain` in one transaction, which the store thread uses to commit what every
      session of the store handed over at once (a sweep's thousands of short runs).
    - `outline(session_id, types)` (`OutliningStore`): `load` with only some events, and an
      `EventOutline` of them all, which `Session.open` uses to read a long session's other
      events when they are first looked at.
    """

    def create(self, rows: SessionRows) -> None:
        """Add a new session with its rows (none for a fresh session) in one transaction,
        kept as given (a fork's or an import's `removed`, `settled` and `retired` stamps too).

        Raises `StoreError` if the id is taken, or if two rows clash (an event `seq` or a
        message number twice, two live task rows of one key); nothing is added then.
        """

    def commit(self, session_id: str, steps: Sequence[Step]) -> None:
        """Write steps in order, all in one transaction: each step's events, then its message
        writes in order, node rows, retired tasks and tasks.

        A message write's rows are live from its `seq`; `replace` first stamps the
        transcript's live rows `removed` (those written earlier in the same commit too). A
        node row replaces the one with the same (seq, path, part). A task whose key has a live
        (unretired) row updates its child, status and text, keeping its first `seq` and its
        first `settled`; otherwise it is a new row. Retiring stamps the key's live row
        `retired`, so its next task is a new row.

        Raises `StoreError`, writing nothing, if an event `seq` or a message number is taken
        (another writer on the session). Committing to a session never created is the
        caller's error (`MemoryStore` refuses it).
        """

    def load(self, session_id: str) -> SessionRows:
        """The session's whole record: events by `seq`, messages by `n`, node rows by (seq,
        path, part), tasks in write order; `info.last_seq` is the last event's seq.

        Raises `StoreError` naming the ids there are if unknown.
        """

    def sessions(self) -> list[StoredSession]:
        """Every session in the store, oldest first (by `created`, then id)."""

    def close(self) -> None:
        """Release the store's resources; using it afterwards raises `StoreError` (closing
        twice is fine)."""


PlainStep = tuple[list[Any], list[Any], list[Any], list[Any], list[Any]]
"""A `Step`'s rows as plain data, the fields of each row in order: `(events, messages, nodes,
tasks, retired)` with `events` [(seq, run, type, path, body)], `messages` [(path, transcript,
seq, [(n, body)], replace)], `nodes` [(path, part, seq, body)], `tasks` [`TaskRow.values()`]
and `retired` [(parent, agent, prompt, seq)]. An event's body is its JSON text, or (for an
event whose fields are all plain values) the dict of its fields, whose JSON the store makes
(`_store.text.body_text`), off the library loop."""


@runtime_checkable
class ForkingStore(Store, Protocol):
    """A `Store` that forks in place (optional; see `Store`)."""

    def fork(self, source: str, seq: int, info: StoredSession) -> None:
        """Add session `info` holding `source`'s rows as they stood after event `seq`: the
        same as `create` of `load(source).at(seq)` with `info`, in one transaction.

        Raises `StoreError` if the id is taken; nothing is added then.
        """


@runtime_checkable
class SkimmingStore(Store, Protocol):
    """A `Store` that reads a few fields of some events of every session in one pass
    (optional; see `Store`): what a listing of a large store needs, without loading whole
    sessions."""

    def skim(self, types: Sequence[str], fields: dict[str, str]) -> dict[str, list[EventRow]]:
        """Each session's events of `types`, by `seq`, keyed by session id (sessions without
        one are absent). Each row's `body` is a JSON object of `fields` (name to a JSON path
        such as `$.usage` or `$.event.type`), null where an event has no such field.
        """


class EventOutline:
    """A session's events as `OutliningStore.outline` tells them without reading them all:
    how many (their seqs run 1..`count`), each run's first and last seq, and `read(first,
    last)`, which reads the rows of those seqs when they are first needed (a store closed
    before then reads them all as it closes, `keep`)."""

    def __init__(
        self,
        count: int,
        runs: dict[int, tuple[int, int]],
        read: Callable[[int, int], list[EventRow]],
    ) -> None:
        self.count = count
        self.runs = runs
        """Each run's (first seq, last seq), by run number (events of no run left out)."""
        self._read = read
        self._kept: list[EventRow] | None = None
        self._handed = 0
        """How many rows `read` has handed over (a log reads each of its blocks once)."""
        self._lock = threading.Lock()

    def read(self, first: int, last: int) -> list[EventRow]:
        """The event rows of seqs `first`..`last`, by seq."""
        with self._lock:
            kept = self._kept
            rows = kept[first - 1 : last] if kept is not None else self._read(first, last)
            self._handed += len(rows)
            return rows

    def keep(self) -> None:
        """Read every row now, while the store is open (it is about to close), unless every
        one was read already."""
        with self._lock:
            if self._kept is None and self._handed < self.count:
                self._kept = self._read(1, self.count)

    def __repr__(self) -> str:
        return f"EventOutline({self.count} events, {len(self.runs)} runs)"


@runtime_checkable
class OutliningStore(Store, Protocol):
    """A `Store` that outlines a session's events (optional; see `Store`): reopening a long
    session reads the few rows it restores from, and the rest when they are first looked at."""

    def outline(
        self, session_id: str, types: Sequence[str]
    ) -> tuple[SessionRows, EventOutline] | None:
        """`load(session_id)` with only the events of `types` in its `events` (by seq), and
        the outline of them all; None when the store cannot tell it (then `load`).

        Raises `StoreError` naming the ids there are if unknown.
        """


@runtime_checkable
class PlainCommitStore(Store, Protocol):
    """A `Store` that takes steps as plain data (optional; see `Store`)."""

    def commit_plain(self, session_id: str, steps: list[PlainStep]) -> None:
        """`commit` of `steps` given as `PlainStep`s: the same rows, the same refusals."""


class Span(NamedTuple):
    """What a store checks of a packed commit before it keeps it: its first and last event
    numbers and message numbers (0 where it has none), and how many stream chunks it holds."""

    first: int
    last: int
    low: int
    top: int
    chunks: int


@dataclass(frozen=True, slots=True)
class PackedSteps:
    """A commit's steps as the journal packs them, each one msgpack blob (`_store.packed.unpack`
    reads back the `PlainStep` it is), with their `Span`."""

    blobs: list[bytes]
    span: Span


@runtime_checkable
class PackedCommitStore(Store, Protocol):
    """A `Store` that takes a commit's steps packed (optional; see `Store`)."""

    def commit_packed(self, session_id: str, steps: PackedSteps) -> None:
        """`commit` of the steps packed in `steps`: the same rows, the same refusals."""


GroupWrite = tuple[SessionRows | None, str, list[PlainStep] | PackedSteps]
"""One session's part of a group commit: its new record (None for a session already created),
its id, and its steps as plain data (or packed, for a store that is a `PackedCommitStore`)."""


@runtime_checkable
class GroupCommitStore(PlainCommitStore, Protocol):
    """A `Store` that commits several sessions' writes in one transaction (optional; see
    `Store`)."""

    def commit_group(self, writes: list[GroupWrite]) -> None:
        """For each write in order, `create` of its record (when given) then `commit_plain` of
        its steps, all in one transaction: everything is written, or (a `StoreError`, the
        refusal of any one of them) nothing."""


def plain_steps(steps: list[PlainStep]) -> list[Step]:
    """`commit_plain`'s steps as the `Step`s `commit` takes (each numbered by its last event),
    for a store whose `commit_plain` is its `commit`."""
    return [Step.from_plain(step[0][-1][0] if step[0] else 0, step) for step in steps]


def supports(store: Any, protocol: Any) -> bool:
    """`isinstance(store, protocol)` for the store protocols (their methods are a class's),
    answered once per class: a runtime protocol's check walks its members each time, and a
    sweep makes a writer per run."""
    key = (type(store), protocol)
    found = _supported.get(key)
    if found is None:
        found = _supported[key] = isinstance(store, protocol)
    return found


_supported: dict[tuple[type, Any], bool] = {}
