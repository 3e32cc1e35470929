"""`Journal`: records a live session step by step, and hands each step to its writer."""

from __future__ import annotations

import functools
import itertools
import logging
import operator
import threading
import time
import types
import typing
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from msgspec import to_builtins
from msgspec.json import encode
from msgspec.msgpack import Encoder as MsgpackEncoder
from msgspec.structs import replace
from pydantic_core import to_jsonable_python

from .._base.errors import ConfigurationError, StoreError
from .._base.loop import library_loop, on_library_thread, running_library_loop
from .._base.messages import Message, Usage
from .._store.protocol import (
    NodeRow,
    SessionRows,
    Span,
    Step,
    Store,
    StoredSession,
)
from .._store.rows import (
    Ref,
    message_json,
    request_json,
    response_json,
    state_json,
    stored_message_json,
    task_values,
    without,
)
from .._store.text import UNENCODABLE, Report, body_text, has_surrogate, repaired, safe_json
from .._store.writer import MAX_DELAY_SECONDS, QUIET_SECONDS, StepWriter, later, weakly
from ..events import (
    ErrorOccurred,
    ModelRequest,
    ModelResponse,
    TextDelta,
    _event_classes,
    event_fields,
)
from .breakpoints import split, stored
from .snapshot import MAPPINGS, KindSpecs, NodeSnapshot, dump_json, kind_state, stored_parts

log = logging.getLogger("sagents_nb")

if TYPE_CHECKING:
    from .._store.protocol import PlainStep
    from ..events import Event
    from .node import Node, TaskEntry
    from .session import Session

    Written = tuple[dict[tuple[str, str], TaskEntry], set[tuple[str, str]]]
    """The task entries written for a node, and the keys of those written unsettled."""
    MessageWrites = tuple[str, str, int, tuple[Message, ...], bool]
    """(path, transcript, seq, messages, replace): see `MessageWrite`."""
    Refs = dict[int, list[Ref] | Ref]
    """The messages each model request (its view) and model response of a step names, by the
    event's index in the step (see `rows.Ref`)."""

RESCUE_SECONDS = MAX_DELAY_SECONDS
"""How often the rescue watch looks: a model request's sealed rows wait for the library loop
to hand them over; if the loop emits no event between two looks (a sync handler or tool blocks
it), the watch hands them over, committed at once: within twice this long of the seal (100 ms,
the bound of `durability="async"`)."""

# An event's class says how it bears on steps, so an event added to `sagents_nb.events` needs
# nothing here. `ends_step`: it ends a step (as do replies and tool results reaching storage);
# an input and the events in between belong to the step that follows them. `waits`: the
# session may wait long after it (a person, the next message), so the step is cut at once;
# other steps are cut once the session is quiet (see `_step_ended`), and a model request seals
# its step first (see `Journal`). `names_child`: it (like `kind_swapped`) follows every change
# of its parent's task entries; only then are the entries compared.

CUT_WAIT_SECONDS = 1.0
"""How long a flush from another thread waits for the library loop to cut the step between
its callbacks; a loop blocked longer (a sync handler) has it cut from that thread."""

_KIND_STATE_SAVES = frozenset({"kind_swapped", "status_changed"})
"""Events after which a node's kind state is taken again; a kind reports its other changes
with `child.state_changed()`."""

_NAMES_CHILD, _SAVES_KIND, _SWAPS = 1, 2, 3
"""What an event class means to a seal (`_SEAL_FLAGS`), besides its node: 0 nothing more."""


class _SealFlags(dict[type["Event"], int]):
    """Each event class's flag for a seal (`_NAMES_CHILD`...), learnt when first met."""

    def __missing__(self, kind: type[Event]) -> int:
        flag = 0
        if kind.names_child:
            flag = _NAMES_CHILD
        elif kind.type in _KIND_STATE_SAVES:
            flag = _SWAPS if kind.type == "kind_swapped" else _SAVES_KIND
        self[kind] = flag
        return flag


_SEAL_FLAGS = _SealFlags()


DURABILITY = ("turn", "async", "exit")
"""When a run's steps are committed (`sn.Session(durability=...)`): `async` within a bounded
window of each step (`MAX_DELAY_SECONDS` plus the store thread's `LOOK_SECONDS`: 100 ms, then
the commit's own time), off the run's path; `turn` likewise, and each turn is committed before its model request is sent;
`exit` when the run pauses or ends, and when the process exits normally. Whatever the mode, a
call that returns (`result()`, `wait()`, `run_sync`, session creation) returns after what it
reports is committed."""

_path = operator.attrgetter("path")

_watch_lock = threading.Lock()
_watched: weakref.WeakSet[Journal] = weakref.WeakSet()
"""Journals whose sealed rows wait for their loop to hand them over (see `Journal._rescue`)."""
_watch_due: float | None = None
"""When the rescue watch's next look is due (None: no look is scheduled)."""


def _watch(journal: Journal) -> None:
    """Have the rescue watch look after `journal` (the caller holds its lock). One timer looks
    after every journal, every `RESCUE_SECONDS`: a timer for each would wake the chore thread
    at each run, taking the GIL from the busy loop."""
    global _watch_due
    every = RESCUE_SECONDS
    with _watch_lock:
        _watched.add(journal)
        due = time.monotonic() + every
        if _watch_due is not None and _watch_due <= due:
            return
        _watch_due = due
    later(functools.partial(_look_after_all, due), every)


def _look_after_all(due: float) -> None:
    """On the chore thread: each watched journal's rescue, then the next look while any is
    still watched (unless a sooner look was scheduled since: it goes on instead)."""
    global _watch_due
    with _watch_lock:
        if _watch_due != due:
            return
        journals = list(_watched)
    for journal in journals:
        journal._rescue()
    del journals  # held weakly between looks
    every = RESCUE_SECONDS
    with _watch_lock:
        if not _watched:
            _watch_due = None
            return
        due = _watch_due = time.monotonic() + every
    later(functools.partial(_look_after_all, due), every)


class Journal:
    """Records what a session does, step by step, for its `Store`.

    A durable session's `journal` is one. The runtime reports storage writes to it
    (`messages_appended`, `history_replaced`) and it follows the event log. Every row is
    stamped with the event it follows, so the state as of any event can be read back.

    At each model request the journal *seals*: it takes the events and messages since the
    last seal and copies of the node states and task entries they changed, stamped with the
    request (so a fork at a request is exact). The sealed rows are handed to a `StepWriter`
    when the session is quiet (see `_step_ended`), at once after `paused` and `run_finished`,
    or by the rescue watch (on the chore thread) when the loop stays busy in one callback (a
    sync handler or tool blocking it, see `RESCUE_SECONDS`: the sealed rows are copies, safe
    to take from another thread). The store thread encodes and commits what all sessions
    handed over every `LOOK_SECONDS` (a group commit), and at once what the rescue hands
    over. A crash loses at most those last moments (`MAX_DELAY_SECONDS + LOOK_SECONDS`) and
    the action in flight (a reply whose tools were still running is asked again on resume),
    and never what a call that returned reported: `result()`, `wait()` and `run_sync` commit
    first (`flush`, `settled`), and `durability="turn"` commits before each model request
    (`before_request`); `"exit"` hands steps over only when the run pauses or ends. Reading
    a store in this process (`Session.open`, `list_stored`) commits what is queued first;
    `fork`, `export_jsonl` and `flush()` do so for their session.

    Args:
        session: the session to record.
        store: where to write.
        rows: the session's stored record when it was reopened or forked; None for a new one.
        durability: `turn`, `async` or `exit` (see `DURABILITY`).
        node_states: `stored_parts(rows)`, when the caller has read them already.
        numbering: a restored session's message numbers (`Numbering`), which each node's
            stored messages join when they are first read (`restore._Stored.history`).
        nodes: more node rows for a new session's record (a sweep's fingerprint).
        create_later: a new session's record is created by the store thread with its first
            step (a sweep's runs: the library loop does not wait for the store's lock; a taken
            id is then logged, not raised).

    A new session's record is created before the constructor returns (a taken id raises
    `StoreError` here).
    """

    def __init__(
        self,
        session: Session,
        store: Store,
        *,
        rows: SessionRows | None = None,
        durability: str = "async",
        node_states: dict[tuple[str, str], Any] | None = None,
        nodes: Sequence[NodeRow] = (),
        create_later: bool = False,
        numbering: Numbering | None = None,
    ):
        if durability not in DURABILITY:
            raise ConfigurationError(
                f"durability must be one of {', '.join(map(repr, DURABILITY))} (when a run's "
                f"steps are committed), not {durability!r}"
            )
        self.durability = durability
        self.session = session
        self.store = store
        self._lock = threading.Lock()
        self._logged = len(session.bus.log)
        self._writes: list[MessageWrites] = []
        self._numbering = numbering if numbering is not None else Numbering()
        self._dirty: set[str] = set()
        self._nodes: dict[str, Node] = {session.root.path: session.root}
        self._states: dict[str, NodeSnapshot] = {}
        self._state_seqs: dict[str, int] = {}
        """The event of each node's last state row: a row at the same event replaces it, so it
        is written whole rather than as changes."""
        self._kinds: dict[str, str] = {}
        """The JSON of each node's kind state as last written."""
        self._kind_specs = KindSpecs()
        self._kind_failed: set[str] = set()
        """Nodes whose kind failed to dump its state (told once)."""
        self._queue: dict[str, Any] = {"inputs": []}
        """The inputs waiting behind a run in flight, as last written (see `queue_changed`)."""
        self._queue_dirty = False
        self._kind_dirty: set[str] = set()
        self._task_dirty: set[str] = set()
        self._swapped: set[str] = set()
        """Nodes whose task entries a kind swap changed since the last seal."""
        self._tasks: dict[str, Written] = {}
        self._orphans: set[str] = set()
        """Paths with live stored messages but no stored node (a fork cut between a child's
        first message and its first state row): a node spawned there retires them first."""
        self._ended = self._seen = 0
        self._cut_at: float | None = None
        self._report = weakly(self._repaired)
        self._step = PendingStep(0, [], [], self._numbering, report=self._report)
        self._rescuing = False
        self._rescue_seen = 0
        created = None
        if rows is None:
            root = session.root
            state = NodeSnapshot.of(root)
            self._states[root.path] = state
            self._state_seqs[root.path] = 0
            created = SessionRows(
                StoredSession(session.id, session.agent.name, time.time()),
                nodes=[NodeRow(root.path, "state", 0, state_json(state.row())), *nodes],
            )
            if not create_later:
                store.create(created)
                created = None
        self._writer = StepWriter(
            store, session.id, cut=weakly(self._cut_for_flush), create=created
        )
        if rows is not None:
            merged = node_states if node_states is not None else stored_parts(rows)
            for (path, part), data in merged.items():
                if part == "state":
                    self._states[path] = data
                elif part == "queue" and path == session.root.path:
                    self._queue = data
            for row in rows.nodes:  # in seq order (`Store.load`); a kind row is whole
                if row.part == "state":
                    self._state_seqs[row.path] = row.seq
                elif row.part == "kind":
                    self._kinds[row.path] = row.body
            self._numbering.next = max((m.n for m in rows.messages), default=0) + 1
            for node in session.root.walk():
                self._nodes[node.path] = node
                self._tasks[node.path] = (
                    dict(node.tasks),
                    {key for key, entry in node.tasks.items() if entry.outcome is None},
                )
            self._orphans = {
                m.path for m in rows.messages if m.removed is None
            } - self._nodes.keys()
        self._unsubscribe: Callable[[], None] | None = session.bus.subscribe(
            self._on_event,
            statuses=False,  # it reads the nodes' own
        )

    def __repr__(self) -> str:
        return f"Journal(session={self.session.id!r}, store={self.store!r})"

    def detach(self) -> None:
        """Stop recording the session: for its owner done with it for good, once it was
        flushed (see `Session.release`)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    # what the runtime reports

    def messages_appended(self, node: Node, messages: Sequence[Message]) -> None:
        """Record messages added to a node's storage (and the display transcript's copies)."""
        if not messages:
            return
        seq = self.session.bus.last_seq
        path, stored = node.path, tuple(messages)
        with self._lock:
            self._nodes[path] = node
            orphaned = path in self._orphans  # its first write retires them
            if orphaned:
                self._orphans.discard(path)
            self._writes.append((path, "llm", seq, stored, orphaned))
            if node.display is not None:
                shown = node.display[-len(stored) :]
                same = len(shown) == len(stored) and all(map(operator.is_, shown, stored))
                display = stored if same else tuple(shown)  # most often the same messages
                self._writes.append((path, "display", seq, display, False))
            self._dirty.add(path)
        if messages[-1].role != "user" and self.durability != "exit":
            self._step_ended()  # an input waits for its model request

    def queue_changed(self) -> None:
        """Record that inputs were queued behind a run in flight, or one of them started: the
        root's `queue` row lists those still waiting, so that `session.resume()` runs them
        after a crash."""
        with self._lock:
            self._queue_dirty = True

    def _queue_rows(self, seq: int, step: PendingStep) -> None:
        """Add the root's `queue` row to `step` if the waiting inputs changed (the caller
        holds the lock)."""
        self._queue_dirty = False
        queue = {"inputs": list(map(queued_input, self.session.queued_runs()))}
        if queue != self._queue:
            step.nodes.append(
                (self.session.root.path, "queue", seq, _dump(queue, self._repaired), None)
            )
            self._queue = queue

    def history_replaced(self, node: Node) -> None:
        """Record a compaction's new storage (the old rows stay, retired, for forks)."""
        seq = self.session.bus.last_seq
        with self._lock:
            self._nodes[node.path] = node
            self._orphans.discard(node.path)
            self._writes.append((node.path, "llm", seq, tuple(node.history), True))
            self._dirty.add(node.path)
            self._kind_dirty.add(node.path)

    def kind_state_changed(self, node: Node) -> None:
        """Record that the node's kind state changed (its `dump_state` is taken at the seal)."""
        with self._lock:
            self._nodes[node.path] = node
            self._dirty.add(node.path)
            self._kind_dirty.add(node.path)

    def _repaired(self, count: int) -> None:
        """Say in the session's log (an `error` event, from the loop) that text was stored
        with U+FFFD in place of characters UTF-8 cannot encode; called while a step is
        encoded, on any thread."""
        try:
            library_loop().call_soon_threadsafe(self._say_repaired, count)
        except RuntimeError:  # the loop is gone (the process is ending)
            log.warning("session %s: %d lone surrogate(s) stored as U+FFFD", self.session.id, count)

    def _say_repaired(self, count: int) -> None:
        self.session.root.emit(
            ErrorOccurred(
                error_type="UnicodeEncodeError",
                message=(
                    "text with lone surrogates (characters UTF-8 cannot encode) was stored with "
                    f"U+FFFD in their place ({count} in this step's rows); the session in "
                    "memory keeps them as they were"
                ),
            )
        )

    def stored_messages(self) -> dict[int, Message]:
        """The stored messages this process holds, by number: a fork takes these rather than
        parse their rows again. A message whose text was stored repaired (a lone surrogate)
        is left out, so the fork gets the stored copy."""
        numbered = self._numbering.numbered()
        return {n: message for n, message in numbered.items() if _storable_as_is(message)}

    def _on_event(self, event: Event) -> None:
        """Seal at a model request; cut a step at once after an event the session may wait
        after (`Event.waits`), and once the session is quiet after the other step ends (the
        events themselves are read from the session's log when the step is sealed)."""
        kind = type(event)
        if kind is ModelRequest:
            if self.durability != "exit":
                self._seal_request()
            else:  # sealed (a fork at a request is exact), committed at the end
                with self._lock:
                    self._seal()
        elif kind.waits:
            self._end_step()
        elif kind.ends_step and self.durability != "exit":
            self._step_ended()

    def _seal_request(self) -> None:
        """Seal at a model request; have the rescue watch look after the sealed rows."""
        with self._lock:
            self._seal()
            if not self._rescuing:
                self._rescuing, self._rescue_seen = True, -1
                _watch(self)
        self._step_ended()

    def _rescue(self) -> None:
        """On the chore thread, at each look of the rescue watch (`_look_after_all`): hand the
        sealed rows over if the session emitted no event since the last look (its loop is
        blocked, e.g. by a sync handler); stop being watched once they were handed over, by
        the loop or here."""
        with self._lock:
            if self._step.empty():
                self._unwatch()
                return
            seen = len(self.session.bus.log)
            if seen == self._rescue_seen:
                self._hand_over(at_once=True)
                self._unwatch()
                return
            self._rescue_seen = seen

    def _unwatch(self) -> None:
        """Leave the rescue watch (the caller holds the lock)."""
        self._rescuing = False
        with _watch_lock:
            _watched.discard(self)

    # committing

    def flush(self, *, cut: bool = True) -> None:
        """Commit everything recorded so far and wait; raises `StoreError` if the store refuses.
        `cut=False`: the caller had the step cut on the loop already (`cut()`), with nothing
        scheduled there since (no round trip to the loop to cut it)."""
        self._writer.drain(cut=cut)

    def cut(self) -> None:
        """On the loop: seal and hand over what was recorded so far (see `flush`)."""
        self._end_step()

    async def settled(self) -> None:
        """Await the commit of everything recorded so far, from any loop, without blocking it;
        raises `StoreError` if the store refuses."""
        await self._writer.settled()

    async def before_request(self) -> None:
        """With `durability="turn"` (the caller checks), await the commit of the turn so far
        before its model request is sent (a refused commit is logged and retried later, never
        raised into the run)."""
        try:
            await self.settled()
        except StoreError as exc:
            log.error("%s", exc)

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

    def _cut_for_flush(self) -> None:
        """Seal and hand over the step being recorded, for a flush: on the library loop,
        between its callbacks, so that a flush from another thread (a `wait()` returning
        while the next run starts) never seals an event without the writes that follow it in
        the same callback (a run's start without its input); if the loop stays blocked for
        `CUT_WAIT_SECONDS`, from here."""
        loop = running_library_loop()
        if loop is None or on_library_thread():
            self._end_step()
            return
        cut = threading.Event()

        def on_loop() -> None:
            self._end_step()
            cut.set()

        try:
            loop.call_soon_threadsafe(on_loop)
        except RuntimeError:  # the loop was closed (the process is ending)
            pass
        if not cut.wait(CUT_WAIT_SECONDS):
            self._end_step()

    def _end_step(self) -> None:
        """Seal what was recorded since the last seal and hand the step to the writer (a failed
        commit is logged and retried with the next step, never raised into the run)."""
        with self._lock:
            self._seal()
            self._hand_over()

    def _hand_over(self, *, at_once: bool = False) -> None:
        """Queue the sealed step for the writer (the caller holds the lock)."""
        step = self._step
        if not step.empty():
            self._writer.put(step, at_once=at_once)
            self._step = PendingStep(0, [], [], self._numbering, report=self._report)

    def _seal(self) -> None:
        """Add the events and messages recorded since the last seal to the step, with the node
        states, kind states and task entries they changed, stamped with the last event (the
        caller holds the lock)."""
        events = self.session.bus.log.since(self._logged)  # walked three times below
        if not (events or self._writes or self._dirty or self._queue_dirty):
            return
        self._dirty.update(map(_path, events))
        for event in events:
            flag = _SEAL_FLAGS[type(event)]
            if not flag:
                continue
            if flag == _NAMES_CHILD:  # they change the child's counters too
                self._dirty.add(event.child)  # type: ignore[attr-defined]
                self._task_dirty.add(event.path)
            else:  # a kind's state is stored when its node's status changes, and at a swap
                self._kind_dirty.add(event.path)
                if flag == _SWAPS:  # forgets the tasks settled under the old kind
                    self._task_dirty.add(event.path)
                    self._swapped.add(event.path)
        step = self._step
        seq = step.seq = events[-1].seq if events else self.session.bus.last_seq
        step.events += events
        step.messages += self._writes
        self._logged += len(events)
        self._writes = []
        states, state_seqs, nodes = self._states, self._state_seqs, self._nodes
        kind_dirty, task_dirty = self._kind_dirty, self._task_dirty
        for path in self._dirty:
            node = nodes.get(path)
            if node is None and (node := self._node(path)) is None:
                continue
            state = NodeSnapshot.of(node)
            previous = states.get(path)
            if previous != state:
                if state_seqs.get(path) == seq:
                    previous = None
                step.nodes.append((path, "state", seq, state, previous))
                states[path] = state
                state_seqs[path] = seq
            kind = self._kind_state(node) if path in kind_dirty else None
            if kind is not None and self._kinds.get(path) != kind:
                step.nodes.append((path, "kind", seq, kind, None))
                self._kinds[path] = kind
            if path in task_dirty:
                self._task_changes(node, seq, step, swapped=path in self._swapped)
        if self._queue_dirty:
            self._queue_rows(seq, step)
        self._dirty.clear()
        kind_dirty.clear()
        task_dirty.clear()
        self._swapped.clear()

    def _kind_state(self, node: Node) -> str | None:
        """The JSON of what the node's kind keeps (`kind_state`); a kind whose `dump_state`
        fails is logged (once per node), and its state is not stored this time."""
        try:
            return kind_state(node, self._kind_specs)
        except Exception as exc:  # a custom kind's bug must not stop the recording
            if node.path in self._kind_failed:
                return None
            self._kind_failed.add(node.path)
            log.warning(
                "sagents_nb: the %r kind of %s could not dump its state, which is not stored "
                "while it fails (%s: %s); dump_state must return JSON-able data (dicts, lists, "
                "text, numbers, booleans) or None",
                node.kind.name,
                node.path,
                type(exc).__name__,
                exc,
            )
            return None

    def _node(self, path: str) -> Node | None:
        node = self._nodes.get(path)
        if node is None:
            node = self.session.root.find(path)
            if node is not None:
                self._nodes[path] = node
        return node

    def _task_changes(
        self, node: Node, seq: int, step: PendingStep, *, swapped: bool = False
    ) -> None:
        """Add the node's new, settled and forgotten tasks to `step`, stamped `seq`, and note
        them as written.

        Tasks are only added (at the end), settled once, or forgotten by a kind swap, so only
        the newest and the unsettled ones need a look unless the count dropped or a kind was
        `swapped` (it may forget tasks and add as many, under the same keys or others, before
        the next seal).
        """
        tasks = node.tasks
        known = self._tasks.get(node.path)
        if known is None:
            if not tasks:
                return
            known = self._tasks[node.path] = ({}, set())
        written, unsettled = known
        added = len(tasks) - len(written)
        full = swapped or added < 0 or not unsettled <= tasks.keys()
        if (
            not full
            and added == 0
            and all(
                tasks.get(key) is written[key] and written[key].outcome is None for key in unsettled
            )
        ):
            return  # e.g. a child still running: nothing new
        new = list(itertools.islice(reversed(tasks), added)) if added > 0 else []
        if full or not written.keys().isdisjoint(new):
            candidates = list(tasks)
        else:
            candidates = [*unsettled, *new] if unsettled else new
        path = node.path
        for key in candidates:
            entry = tasks[key]
            outcome = entry.outcome
            previous = written.get(key)
            if previous is entry and (outcome is None or key not in unsettled):
                continue
            if previous is not None and previous is not entry:
                step.retired.append((path, *key, seq))
            if outcome is None:
                step.tasks.append((path, *key, entry.child.path, seq, None, None, None, None))
            else:
                step.tasks.append(
                    (path, *key, entry.child.path, seq, outcome.status, outcome.text, seq, None)
                )
            written[key] = entry
            if outcome is None:
                unsettled.add(key)
            else:
                unsettled.discard(key)
        if full:
            for key in [key for key in written if key not in tasks]:
                step.retired.append((node.path, *key, seq))
                del written[key]
                unsettled.discard(key)


def queued_input(run: Any) -> dict[str, Any]:
    """A queued `Run` as its `queue` row keeps it: number, pause points and both messages
    (None for a `retry`)."""
    actions, tests = split(run.pause_on)
    return {
        "run": run.number,
        "pause_on": sorted(actions),
        "breakpoints": stored(tests),
        "llm": _message_data(run.message),
        "display": _message_data(run.display),
    }


def _message_data(message: Message | None) -> dict[str, Any] | None:
    return message.model_dump(mode="json", exclude_defaults=True) if message else None


def plain_events() -> frozenset[type[Event]]:
    """The registered event classes whose fields are all plain values (see `is_plain`)."""
    return frozenset(filter(is_plain, _event_classes()))


_PLAIN: dict[type[Event], tuple[str, ...] | None] = {}


def is_plain(kind: type[Event]) -> bool:
    """Whether an event class's fields are all plain values (text, numbers, flags, lists of
    text or of integers): its `__dict__` is then its JSON's content, which the store thread
    encodes when it commits, off the run's path. Learnt once per class, from its fields."""
    return text_fields(kind) is not None


def text_fields(kind: type[Event]) -> tuple[str, ...] | None:
    """The fields of a plain event class that hold text (`str`, or a list of them): the only
    ones a lone surrogate can be in (a `Literal` is the class's own constant, not data); None
    if the class is not plain. Learnt once per class."""
    if kind not in _PLAIN:
        fields = kind.model_fields.items()
        plain = all(_plain_type(field.annotation) for _, field in fields)
        _PLAIN[kind] = tuple(n for n, f in fields if _text_type(f.annotation)) if plain else None
    return _PLAIN[kind]


def _plain_type(annotation: Any) -> bool:
    if annotation in (str, int, float, bool, type(None)):
        return True
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return all(isinstance(a, str) for a in args)
    if origin in (typing.Union, types.UnionType):
        return all(map(_plain_type, args))
    return origin is list and args in ((str,), (int,))


def _text_type(annotation: Any) -> bool:
    """Whether a plain field's values may be text (see `text_fields`)."""
    if annotation is str:
        return True
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(map(_text_type, args))
    return origin is list and args == (str,)


def _storable_as_is(message: Message) -> bool:
    """Whether `message`'s stored copy is the message itself (no text repaired)."""
    texts = [message.content or "", message.name or "", message.tool_call_id or ""]
    for call in message.tool_calls or ():
        texts += (call.id, call.name, call.arguments)
    repairs: list[int] = []
    if message.meta:  # rare: walked for text at any depth
        repaired(message.meta, repairs.append)
    return not repairs and not any(map(has_surrogate, texts))


class Numbering:
    """Numbers of a session's stored messages, given in write order by the thread that encodes
    its steps (one at a time): `texts` maps a message's id to its number's text, and `held`
    keeps every numbered message alive, so that no other object takes its id (an id found in
    `texts` is that message's)."""

    def __init__(self) -> None:
        self.texts: dict[int, str] = {}
        self.held: list[Message] = []
        self.next = 1

    def write(self, messages: Sequence[Message]) -> None:
        """Number `messages`, written in this order (the next numbers, one after the other)."""
        self.held += messages
        texts, n = self.texts, self.next
        for message in messages:
            texts[id(message)] = str(n)
            n += 1
        self.next = n

    def numbered(self) -> dict[int, Message]:
        """Each numbered message by its (latest) number: one copy of each table, safe while
        the store thread numbers more."""
        texts, held = self.texts.copy(), tuple(self.held)
        return {int(texts[id(m)]): m for m in held if id(m) in texts}


_meta = operator.attrgetter("meta")

_AS_IS, _REQUEST, _RESPONSE, _JSON = range(4)
"""How `PendingStep.packed` packs an event of a class: as it is (its fields come back from
msgpack as their JSON had them), as a model request or response naming stored messages by
number, or as its JSON."""


class _Packings(dict[type["Event"], int]):
    """How each event class is packed (see `_AS_IS`), learnt from its fields when first met.
    A variant of `TextDelta` (its `type`, another class) is packed as its JSON, since `unpack`
    tells a stream's chunk, whose row keeps its fields, by its `type`."""

    def __missing__(self, kind: type[Event]) -> int:
        if kind is ModelRequest or kind is ModelResponse:
            packing = _REQUEST if kind is ModelRequest else _RESPONSE
        elif kind.type == "text_delta" and kind is not TextDelta:
            packing = _JSON
        elif all(_packable_type(field.annotation) for field in kind.model_fields.values()):
            packing = _AS_IS
        else:
            packing = _JSON
        self[kind] = packing
        return packing


_PACKING = _Packings()


def _packable_type(annotation: Any) -> bool:
    """Whether a field's values come back from msgpack as their JSON had them: plain values
    (`_plain_type`), `Usage`, and lists, tuples and unions of them; not `Any` (an aware
    datetime comes back in UTC), nor a message (its `meta`)."""
    if annotation is Usage or _plain_type(annotation):
        return True
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return all(map(_packable_type, args))
    return origin in (list, tuple) and all(_packable_type(a) for a in args if a is not Ellipsis)


@dataclass
class _Numbered:
    """A step's messages numbered (`PendingStep._numbered`), for its rows or its packing."""

    first: int
    """The number of the step's first message written: the others follow it, in write order."""
    refs: Refs
    odd: list[int]
    """The indices of the events packed as their JSON (see `_Packings`)."""
    loose_meta: bool
    """Whether a message that is not a number in `refs`, or a message written, has a `meta`, whose
    values msgpack might not give back as their JSON had them (see `_packable_type`)."""


@dataclass
class PendingStep:
    """A step as recorded on the loop: the objects themselves, each with the event it follows.
    The writer encodes them (JSON, or a msgpack blob) off the loop; events and messages are
    immutable, node states are copies."""

    seq: int
    """The last event the step covers."""
    events: list[Event]
    messages: list[MessageWrites]
    numbering: Numbering
    """The journal's message numbers: given when a step is first encoded, in order."""
    nodes: list[tuple[str, str, int, Any, Any]] = field(default_factory=list)
    """(path, "state", seq, `NodeSnapshot`, the previous one or None) or (path, "kind" or
    "queue", seq, JSON text, None): a state row holds the fields that changed, or all."""
    tasks: list[tuple[Any, ...]] = field(default_factory=list)
    """Each a `TaskRow`'s values."""
    retired: list[tuple[str, str, str, int]] = field(default_factory=list)
    report: Report | None = None
    """Told how many characters of text were stored as U+FFFD (see `_store.text`)."""
    _plain: PlainStep | None = None
    _numbers: _Numbered | None = field(default=None, init=False, repr=False)
    _packed: bytes | None = field(default=None, init=False, repr=False)

    def empty(self) -> bool:
        return not (self.events or self.messages or self.nodes or self.tasks or self.retired)

    def encode(self) -> Step:
        """The step's rows, as a store writes them."""
        return Step.from_plain(self.seq, self.plain())

    def plain(self) -> PlainStep:
        """The step's rows as plain data (`PlainStep`); numbers its messages
        first, so that the views in its requests can name them. Encoded once: a commit that
        is tried again sends the same rows."""
        if self._plain is None:
            replaced = [0]
            report, self.report = self.report, lambda n: replaced.__setitem__(0, replaced[0] + n)
            try:
                self._plain = self._encode()
            finally:
                self.report = report
            if replaced[0] and report is not None:  # said once a step
                report(replaced[0])
        return self._plain

    def packed(self) -> bytes | None:
        """The step as one msgpack blob, made by msgspec from the events and messages as they
        are (`_store.packed.unpack` makes its rows: those `plain()` gives); None if it cannot
        be packed as it is (text with a lone surrogate, which `plain()` repairs and reports,
        or a value msgpack cannot take). Numbers its messages first, as `plain()` would, which
        then keeps the numbers."""
        if self._packed is None:
            try:
                self._packed = self._pack()
            except (ValueError, TypeError, OverflowError):  # UnicodeEncodeError is a ValueError
                return None
        return self._packed

    def span(self) -> Span:
        """The step's first and last event numbers, first and last message numbers (0 where
        none) and stream chunks: what a store checks of it packed (after `packed`)."""
        events = self.events
        count = sum([len(write[3]) for write in self.messages])
        low = self._numbered().first if count else 0
        return Span(
            events[0].seq if events else 0,
            events[-1].seq if events else 0,
            low,
            low + count - 1 if count else 0,
            operator.countOf(map(type, events), TextDelta),
        )

    def _numbered(self) -> _Numbered:
        """Number the step's messages, once. Messages are numbered in write order, each event
        after the writes made before it: an event names the row its message had *then* (live
        as of the event, so in a fork there), never one a later write of the same step (a
        compaction storing the message again) added."""
        numbered = self._numbers
        if numbered is not None:
            return numbered
        numbering = self.numbering
        texts = numbering.texts
        loose: list[Message] = []  # the messages events name that are not stored (yet)
        events = self.events
        packings = _PACKING
        marks = map(packings.__getitem__, map(type, events))
        first = numbering.next
        refs: Refs = {}
        odd = []
        pending, done = self.messages, 0
        waiting = len(pending)
        for index in itertools.compress(itertools.count(), marks):  # all but `_AS_IS`
            event = events[index]
            packing = packings[type(event)]
            if packing == _JSON:
                odd.append(index)
                continue
            seq = event.seq
            while done < waiting and pending[done][2] <= seq:  # the writes made before it
                numbering.write(pending[done][3])
                done += 1
            if packing == _REQUEST:
                view = event.messages  # type: ignore[attr-defined]
                found: list[Any] = list(map(texts.get, map(id, view)))
                if None in found:  # a message not stored (yet): the message itself
                    found = [
                        r if r is not None else _loose(m, loose)
                        for r, m in zip(found, view, strict=True)
                    ]
                refs[index] = found
            else:
                message = event.message  # type: ignore[attr-defined]
                text = texts.get(id(message))
                refs[index] = text if text is not None else _loose(message, loose)
        for _, _, _, written, _ in pending[done:]:
            numbering.write(written)
        messages = itertools.chain.from_iterable(map(_written, pending))
        meta = any(map(_meta, loose)) or any(map(_meta, messages))
        numbered = self._numbers = _Numbered(first, refs, odd, meta)
        return numbered

    def _encode(self) -> PlainStep:
        """Number the step's messages (`_numbered`) and encode its rows."""
        numbered = self._numbered()
        report, refs = self.report, numbered.refs
        encoded: dict[int, str] = {}  # the root's display copies are its messages: encoded once

        def row(message: Message) -> str:
            text = encoded.get(id(message))
            if text is None:
                text = encoded[id(message)] = message_json(message, report)
            return text

        body, plain = self._event_body, _PLAIN_JSON
        events = []
        for index, e in enumerate(self.events):
            text: str | dict[str, Any] | None = None
            if plain.get(type(e)):  # most events: `_event_body`'s first case, without a call
                try:
                    text = encode(e).decode()
                except UnicodeEncodeError:
                    pass
            if text is None:
                text = body(e, refs.get(index))
            events.append((e.seq, e.run, e.type, e.path, text))
        writes, n = [], numbered.first
        for path, transcript, seq, messages, swap in self.messages:
            rows = []
            for message in messages:
                rows.append((n, row(message)))
                n += 1
            writes.append((path, transcript, seq, rows, swap))
        return (
            events,
            writes,
            [
                (path, part, seq, _node_json(part, data, previous, report))
                for path, part, seq, data, previous in self.nodes
            ],
            [task_values(task, report) for task in self.tasks],
            [task_values(key, report) for key in self.retired],
        )

    def _pack(self) -> bytes:
        """The step's blob (see `packed`): its events (a model request without its view and a
        model response without its message, those given apart, by the events' index, as
        numbers or messages; an event of a class msgpack might not give back as its JSON had
        it, as that JSON with its seq, run, type and path); its message writes as recorded (a
        message with a `meta` as its row's JSON) and the first one's number, the others
        following in write order; its node rows as recorded (a state row's snapshot and the
        previous one, the snapshot's fields named once); tasks' values and retired keys."""
        numbered = self._numbered()
        events: list[Any] = self.events.copy()
        refs, writes = numbered.refs, self.messages
        for index in refs:
            event = events[index]
            if type(event) is ModelRequest:
                events[index] = replace(event, messages=[])  # type: ignore[type-var]
            else:
                events[index] = replace(event, message=None)  # type: ignore[type-var]
        for index in numbered.odd:
            event = events[index]
            events[index] = (event.seq, event.run, event.type, event.path, encode(event).decode())
        if numbered.loose_meta:
            refs = {
                index: [_packed_ref(r) for r in ref] if type(ref) is list else _packed_ref(ref)  # type: ignore[arg-type]
                for index, ref in refs.items()
            }
            writes = [
                (path, transcript, seq, [_packed_ref(m) for m in messages], swap)  # type: ignore[misc]
                for path, transcript, seq, messages, swap in writes
            ]
        tasks = self.tasks
        nodes, retired = self.nodes, self.retired
        return _packer((events, refs, numbered.first, writes, _STATE_FIELDS, nodes, tasks, retired))

    def _event_body(
        self, event: Event, refs: list[Ref] | Ref | None = None
    ) -> str | dict[str, Any]:
        """The event's JSON; a stream's chunk (`TextDelta`) as its fields, which a store packs
        (the writer makes their JSON); text that UTF-8 cannot encode is repaired (see
        `_store.text`). `refs`: the messages a model request or response names."""
        kind = type(event)
        plain = _PLAIN_JSON.get(kind)
        if plain is None:
            plain = _PLAIN_JSON[kind] = kind is not TextDelta and is_plain(kind)
        if plain:
            try:
                return encode(event).decode()  # events are not changed once emitted
            except UnicodeEncodeError:  # a lone surrogate: repaired, as below
                return body_text(self._fields(event))  # type: ignore[return-value]
        if text_fields(kind) is not None:
            return self._fields(event)
        try:
            return self._event_json(event, refs)
        except UNENCODABLE:
            return safe_json(
                lambda: self._event_json(event, refs).encode(),
                lambda: to_builtins(event),
                self.report,
            )

    def _fields(self, event: Event) -> dict[str, Any]:
        """A plain event's fields, their text repaired if need be."""
        fields = event_fields(event)
        if any(_unencodable(fields[name]) for name in text_fields(type(event)) or ()):
            return repaired(fields, self.report)  # type: ignore[no-any-return]
        return fields

    def _event_json(self, event: Event, refs: list[Ref] | Ref | None) -> str:
        """The event's JSON; a request's view and a response's message name stored messages
        by number (`refs`)."""
        kind = type(event)
        if kind is ModelRequest:
            head = without(encode(replace(event, messages=[])), b',"messages":[]')  # type: ignore[type-var]
            return request_json(head, refs, self.report)  # type: ignore[arg-type]
        if kind is ModelResponse:
            head = without(encode(replace(event, message=None)), b',"message":null')  # type: ignore[type-var]
            return response_json(head, refs, self.report)  # type: ignore[arg-type]
        return encode(event).decode()


_PLAIN_JSON: dict[type[Event], bool] = {}
"""Whether an event class's rows are made from its fields here (`_event_body`)."""

_packer = MsgpackEncoder().encode
_STATE_FIELDS = (NodeSnapshot._fields, sorted(MAPPINGS))
"""A state row's snapshot's fields, and those a row stores as objects (see `NodeSnapshot`)."""
_written = operator.itemgetter(3)
"""A `MessageWrites`' messages."""


def _loose(message: Message, loose: list[Message]) -> Message:
    """A message an event names that is not stored (yet), noted in `loose`."""
    loose.append(message)
    return message


def _packed_ref(ref: Ref) -> Ref:
    """A message as a step's blob holds it: its row's JSON if it has a `meta` (see
    `_Numbered.loose_meta`); text that UTF-8 cannot encode raises `UnicodeEncodeError`."""
    if type(ref) is str or not ref.meta:  # type: ignore[union-attr]
        return ref
    return stored_message_json(ref)  # type: ignore[arg-type]


def _node_json(part: str, data: Any, previous: NodeSnapshot | None, report: Report | None) -> str:
    if part != "state":
        return data  # a kind state (or the queue) is JSON already
    return state_json(data.row() if previous is None else data.changes(previous), report)


def _dump(data: Any, report: Report | None) -> str:
    try:
        return dump_json(data)
    except UNENCODABLE:
        return dump_json(repaired(to_jsonable_python(data), report))


def _unencodable(value: object) -> bool:
    """Text (or a list of texts, as plain events have) with a lone surrogate."""
    if type(value) is str:
        return has_surrogate(value)
    return type(value) is list and any(type(v) is str and has_surrogate(v) for v in value)
