"""Rebuilding a session from stored rows: its tree, storage, transcripts, events and runs."""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

from .._base.collector import collector_held
from .._base.errors import ConfigurationError, StoreError
from .._base.ids import new_session_id
from .._base.messages import Message
from .._base.outcome import Outcome
from .._endpoints.openai import LLM
from .._store.protocol import (
    EventOutline,
    EventRow,
    ForkingStore,
    OutliningStore,
    SessionRows,
    Store,
    StoredSession,
    TaskRow,
)
from .._store.resolve import resolve_store
from .._store.text import read_json
from ..events import (
    Event,
    Fold,
    HarnessEventOccurred,
    LLMSwapped,
    ModelRequest,
    ModelResponse,
    RunFinished,
    RunStarted,
    StatusChanged,
    TaskSpawned,
    parse_event,
)
from .decisions import stored_pauses
from .eventlog import UNREAD, EventLog
from .journal import Journal, Numbering
from .node import Node
from .result import Result
from .run import Run
from .snapshot import NodeSnapshot, kind_as_ran, kind_spec, load_kind_state, stored_parts
from .tasks import TaskEntry
from .turns import agent_choice, resolved, same_choice

if TYPE_CHECKING:
    import httpx

    from ..kinds import ChildKind
    from .agent import Agent
    from .session import Session

UNSTORED = Message(role="system", content="[this message of the view was not stored]")
"""Stands in a view for a message whose step never committed (a fork cut between the two)."""

NEVER_STARTED = "cancelled before it started"

INTERRUPTED = (
    "the process stopped before this run finished; session.resume() continues it from its last "
    "committed step"
)

ACTIVE = frozenset({"running", "paused", "waiting", "spawned"})
"""Node statuses that only a run in flight can have; nothing runs in a session just restored."""


def open_session(
    cls: type[Session],
    store: object,
    session_id: str,
    agent: Agent,
    options: dict[str, Any],
    live: Session | None = None,
) -> Session:
    """`Session.open`: load `session_id` from `store` and rebuild it around `agent`; `live`:
    the session of that id this process ran, if it ran one with this very `agent` (the kind
    and endpoint objects each node ran with, which no store keeps)."""
    backend = resolve_store(store, create=False)
    with collector_paused():
        outlined = (
            backend.outline(session_id, SCAN.types())
            if isinstance(backend, OutliningStore)
            else None
        )
        rows, outline = outlined if outlined is not None else (backend.load(session_id), None)
        session = cls(agent, session_id=session_id, **options)
        if live is not None:
            last = rows.info.last_seq
            session.endpoint_choices = [c for c in live.endpoint_choices if c[0] <= last]
            session.kinds_ran = dict(live.kinds_ran)
        return restore(session, backend, rows, outline=outline)


BIG_BLOCK = 20_000
"""Objects a paused block makes from which they are taken as kept (a session's open makes
tens of thousands; a view's push a few hundred)."""
_since = [0, -1]
"""[the heap's memory blocks, full collections] when the collector last walked everything or a
big block was kept."""


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cycle collector while a session's rows are read and rebuilt: the tens of
    thousands of rows and messages a long session has make it sweep everything alive again and
    again, and none of them form cycles. What was made meanwhile then joins the oldest
    generation as it is (`freeze` and `unfreeze` move the lists, walking nothing): walked
    through the young generations first, they cost seconds.

    Promoting so hides what the oldest generation gains from the collector's own count, so a
    view pushing run after run kept it from ever collecting the runs' cyclic garbage (400 runs
    held 220 MB): once the heap has doubled since the last full collection (or the
    last big block), one is run. Objects a user froze with `gc.freeze()` stay frozen: nothing
    is promoted then. The pause is `collector_held`'s, so a store's commit held meanwhile on
    another thread neither turns the collector on under this block nor leaves it off after."""
    was_enabled = gc.isenabled()
    with collector_held():
        try:
            yield
        finally:
            if not gc.get_freeze_count():
                made = gc.get_count()[0]  # objects made since the last collection
                gc.freeze()
                gc.unfreeze()
                if was_enabled:
                    _collect_if_grown(kept=made >= BIG_BLOCK)


def _collect_if_grown(kept: bool) -> None:
    """A full collection if the heap's memory blocks (a cheap stand-in for its objects) have
    doubled since the collector last walked everything (the garbage so stays within the live
    heap's size, and costs as few full walks as the collector's own rule makes without views);
    a big block's objects are kept, so the count starts again after one."""
    blocks, full = sys.getallocatedblocks(), gc.get_stats()[2]["collections"]
    if kept or full != _since[1]:
        _since[:] = [blocks, full]
    elif blocks > _since[0] * 2:
        gc.collect()
        _since[:] = [sys.getallocatedblocks(), full + 1]


def reopening_endpoint(llm: LLM | None) -> LLM:
    """`llm`, else the environment's endpoint, else one that tells what to do when it is used:
    reopening a session to look at it needs no endpoint."""
    if llm is not None:
        return llm
    try:
        return LLM()
    except ConfigurationError:
        return NoEndpoint("http://no-endpoint.invalid/v1")


class NoEndpoint(LLM):
    """The endpoint of a session reopened without one: each request fails saying what to do.
    Its refusing transport is made at its first use: a look at a session loads no httpx."""

    @property
    def _transport(self) -> httpx.AsyncBaseTransport:
        transport = self.__dict__.get("_transport")
        if transport is None:
            import httpx

            transport = self.__dict__["_transport"] = httpx.MockTransport(_no_endpoint)
        return transport

    @_transport.setter
    def _transport(self, transport: httpx.AsyncBaseTransport | None) -> None:
        self.__dict__["_transport"] = transport


def _no_endpoint(request: httpx.Request) -> httpx.Response:
    import httpx

    raise httpx.ConnectError(
        "this session was reopened without an endpoint; set session.llm = sn.mock_llm(...) "
        "or sn.LLM(...) before sending or resuming"
    )


def fork_session(session: Session, at: int | None) -> Session:
    """`Session.fork`: a new session in the same store holding the state as of event `at`."""
    journal = require_journal(session, "fork")
    journal.flush()
    with collector_paused():
        return _fork(session, journal, at)


def _fork(session: Session, journal: Journal, at: int | None) -> Session:
    rows = journal.store.load(session.id)
    last = rows.info.last_seq
    seq = last if at is None else at
    if not 1 <= seq <= last:
        raise StoreError(
            f"fork(at={at}): session {session.id!r} has committed events 1..{last}; "
            "pass the seq of one of them (event.seq)"
        )
    cut = rows.at(seq)
    cut.info = StoredSession(
        new_session_id(), session.agent.name, time.time(), session.id, seq, seq
    )
    store = journal.store
    if not isinstance(store, ForkingStore):
        store.create(cut)
        return restore(_branch(session, cut.info.id, seq), store, cut, journal.stored_messages())
    # the store copies the rows (in SQL, for a file) on another thread while they are rebuilt here
    with ThreadPoolExecutor(1, thread_name_prefix="sagents_nb-fork") as pool:
        copied = pool.submit(store.fork, session.id, seq, cut.info)
        held = journal.stored_messages()
        forked = restore(_branch(session, cut.info.id, seq), store, cut, held)
        copied.result()
    return forked


def _branch(session: Session, branch_id: str, seq: int) -> Session:
    """A new session object like `session` (its settings and state) under `branch_id`, with
    the preprocessor and endpoint in force at event `seq`."""
    forked = type(session)(
        session.agent,
        llm=session.in_force("llm", seq),
        scope=session.scope,
        preprocessor=session.in_force("preprocessor", seq),
        hooks=session.hooks,
        max_depth=session.max_depth,
        max_parallel=session.max_parallel,
        reattach=session.reattach,
        max_model_calls=session.max_model_calls,
        max_nodes=session.max_nodes,
        max_tokens=session.max_tokens,
        token_counter=session.token_counter,
        state=dict(session.state),
        tool_context=session.tool_context,
        session_id=branch_id,
        durability=session.durability,
    )
    forked.default_worker = session.default_worker
    forked.swaps = [swap for swap in session.swaps if swap[0] <= seq]
    forked.kinds_ran = dict(session.kinds_ran)
    forked.endpoint_choices = [c for c in session.endpoint_choices if c[0] <= seq]
    for name, preprocessor in session.preprocessors.items():  # the selector offers them all
        forked._preprocessors.setdefault(name, preprocessor)
    if session.agent.kind is None:
        forked.default_main = forked.root.kind = session.default_main
    return forked


def require_journal(session: Session, what: str) -> Journal:
    """The session's journal, or a `StoreError` saying how to make the session durable."""
    journal = session.journal
    if not isinstance(journal, Journal):
        raise StoreError(
            f"session.{what}() needs a durable session: create it with "
            "sn.Session(agent, store='runs.db') (or store=':memory:' to keep it in memory)"
        )
    return journal


def restore(
    session: Session,
    store: Store,
    rows: SessionRows,
    held: dict[int, Message] | None = None,
    outline: EventOutline | None = None,
) -> Session:
    """Put the stored state into a fresh `session` (built from code) and start recording;
    `held`: stored messages already parsed, by number (a fork's, from its source); `outline`:
    the outline of the events when `rows.events` holds only those `SCAN` reads."""
    root = session.root
    if rows.info.agent != root.agent.name:
        raise StoreError(
            f"session {rows.info.id!r} was saved with top agent {rows.info.agent!r}, not "
            f"{root.agent.name!r}; pass agent= the agent it was saved with"
        )
    try:
        stored = _Stored(rows, held, outline)
        stored.restore_node(root)
        _endpoints_as_of_cut(session, stored.swapped_to)
        root.display = stored.transcript(root.path, "display")
        stored.numbered(root.display, root.path, "display")
        events = stored.events()
        statuses = stored.statuses()
        runs = _restore_runs(session, rows, events, stored)
        if runs and runs[-1].status == "incomplete" and not stored.finished:
            session.stored_pauses = pauses = stored_pauses(rows.events)
            paused = {p.path for p in pauses.pending} if pauses is not None else set()
            statuses.update(_settle_cut_nodes(root, paused))
    except (ValueError, KeyError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
        raise StoreError(
            f"session {rows.info.id!r} could not be read back ({type(exc).__name__}: {exc}); "
            "the store is damaged or was written by another program"
        ) from exc
    bus = session.bus
    bus.log = events
    bus._seq = stored.last
    bus.statuses = statuses
    bus.run = max(stored.firsts, default=0)
    session.runs = runs
    session.stored_queue = stored.queue(root.path)
    info = rows.info
    session.stored_from = {info.id: stored.count}
    if info.parent is not None and info.fork_seq is not None:
        session.stored_from[info.parent] = info.fork_seq  # seqs run 1..n: as many events
    session.journal = Journal(
        session,
        store,
        rows=rows,
        durability=session.durability,
        node_states=stored.parts,
        numbering=stored.numbering,
    )
    return session


def read_histories(session: Session) -> None:
    """Read every node's stored messages now, not at the first look (an import checks the
    whole export before it writes any of it)."""
    for node in session.root.walk():
        len(node.history)


def stored_events(rows: SessionRows) -> EventLog:
    """A stored session's events, each request's view with its messages back (decoded as
    they are read)."""
    return _Stored(rows).events()


class _Stored:
    """A session's rows, each parsed once when it is first needed: one `Message` per stored
    message, shared by the transcripts and the views in events, and each node's newest state."""

    def __init__(
        self,
        rows: SessionRows,
        held: dict[int, Message] | None = None,
        outline: EventOutline | None = None,
    ) -> None:
        if outline is not None and not _ends_finished(rows.events):
            rows.events = outline.read(1, outline.count)  # a cut run's pauses read them all
            outline = None
        self.rows = rows
        self.outline = outline
        """How many events there are and each run's bounds, when `rows.events` holds only
        the rows `SCAN` reads (the others are read when first looked at)."""
        self.count = outline.count if outline is not None else len(rows.events)
        """How many events there are."""
        self.last = (
            outline.count if outline is not None else rows.events[-1].seq if rows.events else 0
        )
        """The last event's seq (0 when none)."""
        self.bodies = {row.n: row.body for row in rows.messages}
        self.forked_at = rows.info.fork_seq or 0
        self.own = (
            {row.n for row in rows.messages if row.added > self.forked_at}
            if self.forked_at
            else set()
        )
        """A fork's own message numbers (stored after it branched): an event it inherited
        never names one of them, though a store written before sagents_nb numbered each
        event's messages as of that event may (see `_message`)."""
        self.messages: dict[int, Message] = {}
        self.numbering = Numbering()
        """The journal's message numbers: a node's stored messages join them as it reads them."""
        if held:  # immutable, so a fork shares its source's: one object for each stored text
            known = {self.bodies[n]: m for n, m in held.items() if n in self.bodies}
            for stored in rows.messages:
                message = known.get(stored.body)
                if message is not None:
                    self.messages[stored.n] = message
        self.live = rows.live_messages()
        self.tasks: dict[str, list[TaskRow]] = {}
        for task in rows.tasks:
            if task.retired is None:
                self.tasks.setdefault(task.parent, []).append(task)
        parts = self.parts = stored_parts(rows)
        self.states: dict[str, NodeSnapshot] = {
            p: data for (p, part), data in parts.items() if part == "state"
        }
        self.kind_states = {p: data for (p, part), data in parts.items() if part == "kind"}
        self.spawned_in: dict[tuple[str, str, str], int] = {}
        """(parent, agent, prompt) -> the run that last spawned that task."""
        self.last_status: dict[str, EventRow] = {}
        """Each node's newest `status_changed` row, the newest last."""
        self.reported_cost: dict[str, float] = {}
        """What each CLI child's harness reported it cost (its `done` events' `cost_usd`)."""
        self.finished = True
        """Whether the last run ended (the events end in a `run_finished`)."""
        self.specs: dict[int, tuple[ChildKind, dict[str, Any]]] = {}
        """Each kind object's `kind_spec` (the object kept: its id stays its own)."""
        self.members: dict[tuple[int, str], Agent] = {}
        """Each parent agent's members by name, as found (`member`)."""
        self.swapped_to: dict[str, str] = {}
        """The label of the endpoint each node's newest `llm_swapped` names."""
        """The `paused` rows of the last run no `resumed` row answered, by pause id."""
        self.firsts: dict[int, int] = {}
        """The index of each run's first event row."""
        self.lasts: dict[int, int] = {}
        """The index of each run's last event row: its `run_finished`, if it has one."""
        self.ended: set[int] = set()
        """The runs that have a `run_finished` row."""
        self._scan(rows.events, outline)
        self.children: dict[str, list[str]] = {}
        for path, state in sorted(self.states.items(), key=lambda item: item[1].position):
            if state.parent is not None:
                self.children.setdefault(state.parent, []).append(path)

    def member(self, parent: Agent, name: str) -> Agent:
        """`parent`'s team member `name` (`_team_member`), looked up once per parent agent."""
        key = (id(parent), name)
        agent = self.members.get(key)
        if agent is None:
            agent = self.members[key] = _team_member(parent, name)
        return agent

    def _scan(self, events: list[EventRow], outline: EventOutline | None) -> None:
        """Go once through the event rows, unparsed: each run's bounds, and what `SCAN` reads.
        With an `outline`, the rows are those `SCAN` reads, and the bounds the outline's (an
        event's index is its seq - 1) up to each run's first `run_finished`."""
        firsts, lasts, ended = self.firsts, self.lasts, self.ended
        scans: dict[str, Callable[[_Stored, EventRow], None] | None] = {}
        if outline is not None:
            for run, (first, last) in outline.runs.items():
                firsts[run], lasts[run] = first - 1, last - 1
        for index, row in enumerate(events):
            kind, run = row.type, row.run
            if outline is not None:
                if kind == "run_finished" and run and run not in ended:
                    lasts[run] = row.seq - 1
                    ended.add(run)
            elif run and run not in ended:
                if run not in firsts:
                    firsts[run] = index
                lasts[run] = index
                if kind == "run_finished":
                    ended.add(run)
            try:
                scan = scans[kind]
            except KeyError:
                scan = scans[kind] = SCAN.for_type(kind)
            if scan is not None:
                scan(self, row)

    def kind_as_ran(self, node: Node, now: ChildKind, name: str) -> ChildKind:
        """The kind `node` ran as at the last row (`snapshot.kind_as_ran`)."""
        stored = self.kind_states.get(node.path)
        ran = node.session.kinds_ran.get((node.path, stored.get("class"))) if stored else None
        return kind_as_ran(now, name, stored, ran, self.kind_spec)

    def kind_spec(self, kind: ChildKind) -> dict[str, Any]:
        """`snapshot.kind_spec`, worked out once for each kind object (thousands of nodes
        share a few: their agents')."""
        known = self.specs.get(id(kind))
        if known is None:
            known = self.specs[id(kind)] = (kind, kind_spec(kind))
        return known[1]

    def queue(self, path: str) -> list[dict[str, Any]]:
        """The inputs that were waiting behind the run in flight (the root's `queue` row)."""
        return list(self.parts.get((path, "queue"), {}).get("inputs", []))

    def transcript(self, path: str, transcript: str) -> list[Message]:
        return [self.message(row.n) for row in self.live.get((path, transcript), ())]

    def history(self, path: str) -> list[Message]:
        """Node `path`'s storage, read when it is first looked at (`Node.restore_history`),
        from any thread: its messages numbered for the journal, which names them by number."""
        try:
            messages = self.transcript(path, "llm")
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreError(
                f"the stored messages of {path} in session {self.rows.info.id!r} could not be "
                f"read back ({type(exc).__name__}: {exc}); the store is damaged or was written "
                "by another program"
            ) from exc
        self.numbered(messages, path, "llm")
        return messages

    def numbered(self, messages: list[Message], path: str, transcript: str) -> None:
        """Give the journal the numbers of a transcript's stored messages. A message object
        both transcripts share (a fork's, one per stored text) keeps its `llm` row's number,
        whichever transcript is read first: a model request names the rows of its view."""
        texts = self.numbering.texts
        rows = self.live.get((path, transcript), ())
        self.numbering.held.extend(messages)
        if transcript == "llm":
            for message, row in zip(messages, rows, strict=True):
                texts[id(message)] = str(row.n)
        else:
            for message, row in zip(messages, rows, strict=True):
                texts.setdefault(id(message), str(row.n))

    def message(self, n: int) -> Message:
        """Stored message `n`, parsed the first time it is asked for (two threads asking at
        once get the same object)."""
        message = self.messages.get(n)
        if message is None:
            body = self.bodies.get(n)
            if body is None:
                return UNSTORED
            parsed = Message.model_validate_json(body)
            message = self.messages.setdefault(n, parsed)
        return message

    def events(self) -> EventLog:
        """The stored events, each decoded when it is first read (`event`); outlined, those
        not read yet are read from the store when one of them first is."""
        outline = self.outline
        if outline is None:
            return EventLog(self.rows.events, self.event)
        items: list[object] = [UNREAD] * outline.count
        for row in self.rows.events:
            items[row.seq - 1] = row
        return EventLog(items, self.event, outline.read)

    def event(self, row: EventRow) -> Event:
        """One stored event; a request's view gets its numbered messages back."""
        try:
            return self._event(row)
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreError(
                f"event {row.seq} of session {self.rows.info.id!r} could not be read back "
                f"({type(exc).__name__}: {exc}); the store is damaged or was written by "
                "another program"
            ) from exc

    def _event(self, row: EventRow) -> Event:
        decode = DECODE.for_type(row.type)
        if decode is None:
            return parse_event(row.body)
        data = json.loads(row.body)
        decode(self, data)
        return parse_event(data)

    def _message(self, item: dict[str, Any] | int, seq: int) -> dict[str, Any] | Message:
        """A message in event `seq`: its JSON, or the number of a stored one. An event from
        before a fork's branching point naming one of the fork's own numbers was written by
        an older sagents_nb (it could name a row a later compaction of the same step added,
        whose number the fork then gave to a message of its own): its message was not kept."""
        if isinstance(item, dict):
            return item
        if item in self.own and seq <= self.forked_at:
            return UNSTORED
        return self.message(item)

    def statuses(self) -> dict[str, str]:
        """Each node's last status, as read from the newest `status_changed` rows back until
        every node with a stored state has its own."""
        last, wanted = self.last_status, self.states.keys()
        oldest = min((last[p].seq for p in wanted), default=0) if wanted <= last.keys() else 0
        return {p: read_json(row.body)["status"] for p, row in last.items() if row.seq >= oldest}

    def restore_node(self, node: Node) -> None:
        """Restore `node`'s storage and state, then its children and their task entries."""
        node.restore_history(partial(self.history, node.path))
        state = self.states.get(node.path)
        if state is None:
            return
        state.apply(node)
        node.cost_usd = self.reported_cost.get(node.path)
        kind_state = self.kind_states.get(node.path)
        # the kind it ran as: the agent's kind now, if it has changed since, swaps at its next turn
        node.kind = self.kind_as_ran(node, node.kind, state.kind)
        if kind_state is not None:
            load_kind_state(node, kind_state)
        session = node.session
        for path in self.children.get(node.path, ()):
            agent = self.member(node.agent, self.states[path].agent)
            kind = agent.kind if agent.kind is not None else session.default_worker
            child = Node(session, agent, kind, path=path, parent=node)
            node.order.append(child)
            self.restore_node(child)  # its kind as it ran, first
            node.kinds_seen[agent.name] = child.kind
        children = {child.path: child for child in node.order}
        node.persistent = {
            name: children[path] for name, path in state.persistent if path in children
        }
        for task in self.tasks.get(node.path, ()):
            owner = children.get(task.child)
            if owner is not None:
                outcome = Outcome(task.status, task.text or "") if task.status is not None else None
                key = (task.agent, task.prompt)
                node.tasks[key] = TaskEntry(
                    owner,
                    task.prompt,
                    outcome=outcome,
                    run=self.spawned_in.get((node.path, *key), 0),
                )


SCAN: Fold[Callable[[_Stored, EventRow], None]] = Fold("restore", sees_all=False)
"""What `_Stored` reads from each event row as it first goes through them, unparsed."""


@SCAN.handles(TaskSpawned)
def _task_spawned(stored: _Stored, row: EventRow) -> None:
    spawned = read_json(row.body)
    stored.spawned_in[(row.path, spawned["agent"], spawned["prompt"])] = row.run


@SCAN.handles(StatusChanged)
def _status_changed(stored: _Stored, row: EventRow) -> None:
    stored.last_status.pop(row.path, None)
    stored.last_status[row.path] = row


@SCAN.handles(LLMSwapped)
def _llm_swapped(stored: _Stored, row: EventRow) -> None:
    stored.swapped_to[row.path] = read_json(row.body)["new"]


@SCAN.handles(HarnessEventOccurred)
def _harness_event(stored: _Stored, row: EventRow) -> None:
    reported = read_json(row.body)["event"]
    cost = reported.get("cost_usd")
    if reported.get("type") == "done" and isinstance(cost, int | float):  # as `kinds.Native` sums
        stored.reported_cost[row.path] = stored.reported_cost.get(row.path, 0.0) + cost


@SCAN.handles(RunStarted)
def _run_started(stored: _Stored, row: EventRow) -> None:
    stored.finished = False


@SCAN.handles(RunFinished)
def _run_finished(stored: _Stored, row: EventRow) -> None:
    stored.finished = True


DECODE: Fold[Callable[[_Stored, dict[str, Any]], None]] = Fold("restore: decode", sees_all=False)
"""The event classes whose stored JSON numbers the stored messages it holds: each puts them
back before the event is parsed (every other event is parsed as it was stored)."""


@DECODE.handles(ModelRequest)
def _request_view(stored: _Stored, data: dict[str, Any]) -> None:
    seq = data["seq"]
    data["messages"] = [stored._message(item, seq) for item in data["messages"]]


@DECODE.handles(ModelResponse)
def _reply(stored: _Stored, data: dict[str, Any]) -> None:
    data["message"] = stored._message(data["message"], data["seq"])


def _endpoints_as_of_cut(session: Session, swapped_to: dict[str, str]) -> None:
    """Each node's endpoint as in force at the cut: the choice its agents made then, where
    this process knows it (`session.endpoint_choices`), kept while they choose as they do now
    (the shared agents may have been given another endpoint since: the origin's, not the
    fork's); else the label its stored `llm_swapped` names: if its next request goes to an
    endpoint of another label (the object is not stored), that request records the swap."""
    chosen = {path: choice for _, path, choice in session.endpoint_choices}
    for node in session.root.walk():
        choice = chosen.get(node.path)
        if choice is not None:
            now = agent_choice(node)
            if not same_choice(choice, now):
                node.pinned_endpoint = (choice, now)
            node.choice = choice
            node.endpoint = (resolved(node, choice)[0], session.llm)
        elif node.path in swapped_to:
            node.endpoint = (swapped_to[node.path], None)


def _team_member(parent: Agent, name: str) -> Agent:
    member = parent.member(name)
    if member is not None:
        return member
    return type(parent)(
        name, does=f"restored from a store; {name!r} is not in {parent.name}'s team now"
    )


def _restore_runs(
    session: Session, rows: SessionRows, events: EventLog, stored: _Stored
) -> list[Run]:
    """Finished runs with their results; an interrupted run as `incomplete`, to be resumed.

    Only each run's bounds (`stored.firsts`, `stored.lasts`) and its `run_finished` are read;
    its other events stay stored until they are looked at."""
    firsts, lasts = stored.firsts, stored.lasts
    runs = []
    tree = session.tree
    for number in range(1, max(firsts, default=0) + 1):
        if number not in firsts:  # cancelled while queued: it left no event
            first = last = 0
            result = Result(NEVER_STARTED, "cancelled", 0, session.run_usage, [], tree, number)
        else:
            first, last = firsts[number], lasts[number] + 1
            end = events[last - 1] if number in stored.ended else None
            if isinstance(end, RunFinished):
                result = Result(end.text, end.status, end.turns, end.usage, [], tree, number)
            else:
                text = _interrupted_text(rows)
                result = Result(text, "incomplete", 0, session.run_usage, [], tree, number)
        result.events = events[first:last]
        run = Run(session, number)
        run._first, run._last = first, last
        run._result = result
        run.status = result.status
        run._finished.set_result(result)
        run._stop.set()
        runs.append(run)
    return runs


def _ends_finished(events: list[EventRow]) -> bool:
    """Whether the last of the runs' `run_started` and `run_finished` rows is a
    `run_finished` (or there are none): as `_Stored.finished` reads them."""
    for row in reversed(events):
        if row.type == "run_finished":
            return True
        if row.type == "run_started":
            return False
    return True


def _interrupted_text(rows: SessionRows) -> str:
    """How an unfinished run came to stop: a fork cut it at its branching event, else the
    process stopped."""
    info = rows.info
    if info.parent is not None and rows.events and rows.events[-1].seq == info.fork_seq:
        return (
            f"forked from session {info.parent} at event {info.fork_seq}, before this run "
            "finished; session.resume() on the fork continues it from there"
        )
    return INTERRUPTED


def _settle_cut_nodes(root: Node, paused: set[str]) -> dict[str, str]:
    """Nodes the cut run left running, waiting or queued are `incomplete` now: nothing runs
    until `session.resume()`, which sets each one running again as it goes on. A node stopped
    at a stored pause (its path in `paused`) reads `paused`: `session.pending` names it."""
    changed = {}
    for node in root.walk():
        if node.path in paused:
            node.status = changed[node.path] = "paused"
        elif node.status in ACTIVE and (node.status != "spawned" or node.parent is not None):
            node.status = changed[node.path] = "incomplete"
    return changed
