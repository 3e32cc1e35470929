"""`StepWriter`: commits a session's steps off the event loop, in groups; each store has its
own thread (its store thread), so a stalled disk under one store holds up no other's commits.

A store thread looks every `LOOK_SECONDS` and commits what every session of its store queued
meanwhile (a group commit: in one transaction where the store takes a group,
`GroupCommitStore`); `put(..., at_once=True)` and `drain` commit at once. Waking the
thread for each step would cost the busy library loop a GIL hand-over each time; and
committing a short run's steps beside it costs more CPU and wall time than it takes off the
run: each commit is a transaction of its own, and the encoding holds the GIL, taking turns
with the run, so only SQLite's statements would overlap it (benchmarks/README.md, "Issue 32
item 3: the store beside the run"). A store thread ends once its store has had nothing to
commit for `IDLE_SECONDS`; the next step starts another. Chores (`later`) run on a thread of
their own.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import heapq
import itertools
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

from .._base.collector import collector_held
from .._base.errors import StoreError
from .protocol import (
    GroupCommitStore,
    PackedCommitStore,
    PackedSteps,
    PlainCommitStore,
    PlainStep,
    Span,
    supports,
)

if TYPE_CHECKING:
    from .protocol import SessionRows, Step, Store

log = logging.getLogger("sagents_nb")

QUIET_SECONDS = 0.002
"""A session's journal hands a step over once the session has been quiet this long..."""

MAX_DELAY_SECONDS = 0.05
"""...or at the latest this long after the step ended."""

LOOK_SECONDS = 0.05
"""How often a store thread commits what was handed over. A crash loses at most
`MAX_DELAY_SECONDS + LOOK_SECONDS` of finished work besides the action in flight."""

IDLE_SECONDS = 2.0
"""How long a store thread waits with nothing to commit before it ends."""

_mutex = threading.RLock()  # a finalizer may call `later` on a thread that holds it
_lock = threading.Condition(_mutex)
"""Guards every writer and lane; notified when a commit ends (for `drain`)."""
_chores: collections.deque[Callable[[], None]] = collections.deque()
_timed: list[tuple[float, int, Callable[[], None]]] = []
_order = itertools.count()
_chore_wake = threading.Condition(_mutex)
_chore_thread: threading.Thread | None = None
_unstarted: collections.deque[threading.Thread] = collections.deque()
"""Store threads made under `_lock`, started once it is let go (`_start_threads`)."""
_writers: weakref.WeakSet[StepWriter] = weakref.WeakSet()


class _Lane:
    """One store's writers waiting for a commit, and the thread that commits them."""

    def __init__(self) -> None:
        self.waiting: list[StepWriter] = []
        self.wake = threading.Condition(_mutex)
        self.urgent = False
        """A writer asked for a commit at once."""
        self.sleeping = False
        self.thread: threading.Thread | None = None


_lanes: dict[int, _Lane] = {}
"""Each store's lane, by the store's id (a waiting writer keeps its store alive); a lane leaves
with its thread."""
_lane_names = itertools.count(1)


class Encodable(Protocol):
    """A step recorded on the loop, encoded to rows by the writer (off the loop)."""

    def encode(self) -> Step: ...

    def plain(self) -> PlainStep:
        """The rows as plain data, for a `PlainCommitStore`."""
        ...

    def packed(self) -> bytes | None:
        """The step as one blob, for a `PackedCommitStore` (`SQLiteStore`); None if it cannot
        be packed (then `plain`)."""
        ...

    def span(self) -> Span:
        """The packed step's numbers (after `packed`)."""
        ...


class StepWriter:
    """Commits one session's steps in order, in groups that share a transaction.

    A failed commit is logged and retried with the session's next step; `drain` raises it.

    Args:
        store: where to write.
        session_id: the session the steps belong to.
        cut: called first by `drain`, to queue the step being recorded.
        create: the new session's rows, written (`Store.create`) by the store thread with
            its first step (in its transaction where the store takes a group), and in any
            case at its first look once the writer is `LOOK_SECONDS` old (within two looks).
    """

    def __init__(
        self,
        store: Store,
        session_id: str,
        cut: Callable[[], None] | None = None,
        create: SessionRows | None = None,
    ) -> None:
        self.store = store
        self._plain = cast(PlainCommitStore, store) if supports(store, PlainCommitStore) else None
        """The store, if it takes steps as plain data (`PlainCommitStore`)."""
        self._group = cast(GroupCommitStore, store) if supports(store, GroupCommitStore) else None
        """The store, if it commits several sessions' writes at once (`GroupCommitStore`)."""
        self._packed = (
            cast(PackedCommitStore, store) if supports(store, PackedCommitStore) else None
        )
        """The store, if it takes steps packed (`PackedCommitStore`)."""
        self.session_id = session_id
        self._cut = cut
        self._create = create
        self._born = time.monotonic()
        """When the writer was made: a record the store thread makes waits a look (see
        `_due`)."""
        self._pending: list[Encodable] = []
        self._promises: list[asyncio.Future[None]] = []
        """Futures of `settle` calls, resolved by the commit that takes the steps queued
        before them."""
        self._writing = False
        _writers.add(self)
        if create is not None:  # stored at the store thread's next look
            with _lock:
                self._queue(at_once=False)
            _start_threads()

    def put(self, step: Encodable, *, at_once: bool = False) -> None:
        """Queue `step` for the store thread's next look, or for a commit `at_once`."""
        with _lock:
            self._pending.append(step)
            self._queue(at_once=at_once)
        _start_threads()

    async def settled(self) -> None:
        """Queue the step being recorded, have the store thread commit everything queued at
        once, and await the commit (a `StoreError` if the store refused) on the running loop
        without blocking it. The store thread wakes each loop once for all the promises a
        commit settles (`_wake`), not once for each."""
        if self._cut is not None:
            self._cut()
        future = asyncio.get_running_loop().create_future()
        with _lock:
            if not (self._pending or self._writing or self._create is not None):
                return
            self._promises.append(future)
            self._queue(at_once=True)
        _start_threads()
        await future

    def _queue(self, *, at_once: bool) -> None:
        """Wait in the store's lane for its thread (made if need be, and started by the
        caller's `_start_threads` once it has let `_lock` go; the caller holds `_lock`),
        woken now if `at_once`."""
        lane = _lanes.get(id(self.store))
        if lane is None:
            lane = _lanes[id(self.store)] = _Lane()
        if self not in lane.waiting:
            lane.waiting.append(self)
        if lane.thread is None:
            name = f"sagents_nb-store-{next(_lane_names)}"
            lane.thread = threading.Thread(target=_serve, args=(lane,), name=name, daemon=True)
            _unstarted.append(lane.thread)
        if at_once:
            lane.urgent = True
            if lane.sleeping:
                lane.wake.notify()

    def drain(self, *, cut: bool = True) -> None:
        """Commit every queued step (and the one being recorded, unless `cut` is False: the
        caller had it queued) now, on this thread, and wait; raise `StoreError` if the store
        refuses."""
        if cut and self._cut is not None:
            self._cut()
        with _lock:
            _lock.wait_for(lambda: not self._writing)
            steps, self._pending = self._pending, []
            promises, self._promises = self._promises, []
            self._writing = True
        error = self._commit(steps, promises)
        if error is not None:
            raise self._refused(error) from error

    def _due(self, now: float) -> bool:
        """Whether the store thread has something to commit for this writer at a look: steps,
        promises, or a new session's record made at least `LOOK_SECONDS` ago (a short run
        commits it with its steps, in one transaction, rather than in one of its own)."""
        if self._writing:
            return False
        return bool(self._pending or self._promises) or (
            self._create is not None and now - self._born >= LOOK_SECONDS
        )

    def _idle(self) -> bool:
        """Nothing to commit, nor a commit under way (its steps were drained on the caller's
        thread): the store thread need not wait for it."""
        return not (self._writing or self._pending or self._promises or self._create is not None)

    def _refused(self, error: Exception) -> StoreError:
        what, remedy = str(error), "fix what it names, then call session.flush()"
        if isinstance(error, StoreError) and error.remedy:
            what, remedy = error.what, error.remedy
        return StoreError(
            f"could not write session {self.session_id} to {self.store!r} ({what}); it goes "
            "on in memory",
            remedy=remedy,
        )

    def _commit(
        self, steps: list[Encodable], promises: list[asyncio.Future[None]]
    ) -> Exception | None:
        """Encode and commit `steps` (the caller set `_writing`), then settle `promises`
        (`_committed`)."""
        error = None
        try:
            with collector_held():  # packing and rows: all gone once committed
                self._commit_steps(steps)
        except Exception as exc:
            error = exc
        self._committed(steps, promises, error)
        return error

    def _commit_steps(self, steps: list[Encodable]) -> None:
        """Write the session's record if new, and `steps`, by the store's fastest way."""
        if self._create is not None and self._group is not None:  # in one transaction
            self._group.commit_group([(self._create, self.session_id, self._rows(steps))])
            self._create = None
            return
        if self._create is not None:
            self.store.create(self._create)
            self._create = None
        if steps and self._plain is not None:
            rows = self._rows(steps)
            if isinstance(rows, PackedSteps):
                cast(PackedCommitStore, self._packed).commit_packed(self.session_id, rows)
            else:
                self._plain.commit_plain(self.session_id, rows)
        elif steps:
            self.store.commit(self.session_id, [step.encode() for step in steps])

    def _rows(self, steps: list[Encodable]) -> list[PlainStep] | PackedSteps:
        """`steps` packed for a `PackedCommitStore` if each can be, else as plain data."""
        if self._packed is not None and steps:
            blobs = [step.packed() for step in steps]
            if None not in blobs:
                spans = [step.span() for step in steps]
                return PackedSteps(
                    cast(list[bytes], blobs),
                    Span(
                        min([s.first for s in spans if s.first], default=0),
                        max(s.last for s in spans),
                        min([s.low for s in spans if s.low], default=0),
                        max(s.top for s in spans),
                        sum(s.chunks for s in spans),
                    ),
                )
        return [step.plain() for step in steps]

    def _committed(
        self,
        steps: list[Encodable],
        promises: list[asyncio.Future[None]],
        error: Exception | None,
        woken: list[asyncio.Future[None]] | None = None,
    ) -> None:
        """After a commit of `steps` (which failed if `error`): clear `_writing`, settle
        `promises` (or, after a group's commit, add them to `woken`, settled together after);
        on failure put the steps back first in line."""
        with _lock:
            self._writing = False
            if error is not None:
                self._pending[:0] = steps
            if self._promises:  # promised while this commit ran: the next look is now
                self._queue(at_once=True)
            _lock.notify_all()
        _start_threads()
        if woken is not None:
            woken.extend(promises)
        else:
            _wake(promises, None if error is None else self._refused(error))


def _wake(promises: list[asyncio.Future[None]], error: StoreError | None) -> None:
    """Settle `promises` on their loops, with one wake-up of each loop for them all."""
    by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
    for promise in promises:
        by_loop.setdefault(promise.get_loop(), []).append(promise)
    for loop, settled in by_loop.items():
        try:
            loop.call_soon_threadsafe(_settle, settled, error)
        except RuntimeError:  # that loop is closed: nobody awaits its promises any more
            pass


def _settle(promises: list[asyncio.Future[None]], error: StoreError | None) -> None:
    for promise in promises:
        if promise.done():  # its waiter was cancelled
            continue
        if error is None:
            promise.set_result(None)
        else:
            promise.set_exception(error)


def later(chore: Callable[[], None], delay: float = 0.0) -> None:
    """Run `chore` on the chore thread (`delay` seconds or more from now), e.g. closing a
    connection (SQLite then checkpoints and syncs the file, which takes milliseconds nobody
    should wait for).

    Safe from a garbage-collection finalizer on any thread, the chore thread included (the
    lock is reentrant).
    """
    global _chore_thread
    with _lock:
        sooner = delay <= 0
        if delay > 0:
            due = time.monotonic() + delay
            sooner = not _timed or due < _timed[0][0]
            heapq.heappush(_timed, (due, next(_order), chore))
        else:
            _chores.append(chore)
        if _chore_thread is None:
            _chore_thread = threading.Thread(
                target=_serve_chores, name="sagents_nb-store-chores", daemon=True
            )
            _unstarted.append(_chore_thread)
        if sooner:  # the chore thread sleeps until the soonest chore: tell it of a sooner one
            _chore_wake.notify()
    _start_threads()


def _start_threads() -> None:
    """Start the store threads made while `_lock` was held, now that it is not (unless an
    outer frame of this thread still holds it: a finalizer's `later`). A thread's `start`
    waits until the thread runs, and a garbage collection in its first steps may run a
    store's finalizer, whose `later` takes `_lock`: started under it, they wait for each
    other for ever."""
    while _unstarted and not _mutex._is_owned():  # type: ignore[attr-defined]
        try:
            thread = _unstarted.popleft()
        except IndexError:  # another thread started it
            return
        thread.start()


def weakly(method: Callable[..., None]) -> Callable[..., None]:
    """`method`, holding its object by a weak reference (a chore or hook must not keep it
    alive, nor be a reference cycle with it); a call once the object is gone does nothing."""
    bound = weakref.WeakMethod(method)

    def call(*args: Any) -> None:
        found = bound()
        if found is not None:
            found(*args)

    return call


def _serve(lane: _Lane) -> None:
    """A store thread: commit each waiting writer's steps when they are due (a writer whose
    commit failed waits for its next step, or a drain, to try again); end when idle."""
    while (batches := _next_turn(lane)) is not None:
        _commit_all(batches)
        del batches  # nothing of a session outlives its turn here


Batch = tuple["StepWriter", list[Encodable], list[asyncio.Future[None]]]


def _next_turn(lane: _Lane) -> list[Batch] | None:
    """Sleep until the next look (or a wake-up); take every waiting writer's steps (marked as
    writing). None once the lane has had nothing to commit for `IDLE_SECONDS` (it is gone)."""
    idle_until = time.monotonic() + IDLE_SECONDS
    with _lock:
        while True:
            if not lane.urgent:
                lane.sleeping = True
                lane.wake.wait(LOOK_SECONDS)
                lane.sleeping = False
            lane.urgent = False
            now = time.monotonic()
            lane.waiting[:] = [w for w in lane.waiting if not w._idle()]
            due = [w for w in lane.waiting if w._due(now)]
            if due:
                break
            if not lane.waiting and now >= idle_until:
                for key, known in list(_lanes.items()):
                    if known is lane:
                        del _lanes[key]
                return None
        lane.waiting[:] = [w for w in lane.waiting if not w._due(now)]
        batches = [(w, w._pending, w._promises) for w in due]
        for writer in due:
            writer._pending, writer._promises, writer._writing = [], [], True
        return batches


def _serve_chores() -> None:
    """The chore thread: run the chores that are due, sleeping until the soonest timed one
    (`later` wakes it for a sooner one)."""
    while True:
        with _lock:
            while not _chores:
                now = time.monotonic()
                while _timed and _timed[0][0] <= now:
                    _chores.append(heapq.heappop(_timed)[2])
                if not _chores:
                    _chore_wake.wait(_timed[0][0] - now if _timed else None)
            chores = [_chores.popleft() for _ in range(len(_chores))]
        _run(chores)
        del chores  # nothing of a session outlives its turn here


def _run(chores: list[Callable[[], None]]) -> None:
    for chore in chores:
        try:
            chore()
        except Exception:
            log.exception("a store chore failed: %r", chore)


def _commit_all(batches: list[Batch]) -> None:
    if len(batches) > 1 and _commit_together(batches):
        return
    for writer, steps, promises in batches:
        error = writer._commit(steps, promises)
        if error is not None:
            log.error(
                "could not write session %s to %r (%s); the run goes on in memory and "
                "the write is retried with the next step",
                writer.session_id,
                writer.store,
                error,
            )


def _commit_together(batches: list[Batch]) -> bool:
    """Commit every batch in one transaction if their store takes a group
    (`GroupCommitStore`). False if it does not, or refused the group: each batch is then
    committed alone, so that a refusal is its own session's and the others' rows are kept."""
    group = batches[0][0]._group
    if group is None:
        return False
    try:
        with collector_held():
            group.commit_group(
                [(w._create, w.session_id, w._rows(steps)) for w, steps, _ in batches]
            )
    except Exception:
        return False
    woken: list[asyncio.Future[None]] = []
    for writer, steps, promises in batches:
        writer._create = None
        writer._committed(steps, promises, None, woken)
    _wake(woken, None)
    return True


def drain_all(target: object = None) -> None:
    """Commit every session's queued steps (those recorded into `target` when given: a store,
    or a store file's path), so that reading a store in this process sees them (a failure is
    logged: the session's own `flush()` raises it). A stalled store holds up only its own."""
    for writer in list(_writers):
        if target is not None and not _writes_to(writer.store, target):
            continue
        try:
            writer.drain()
        except StoreError as exc:
            log.error("%s", exc)


def _writes_to(store: Store, target: object) -> bool:
    if isinstance(target, str | os.PathLike):
        path = getattr(store, "path", None)
        try:
            wanted = os.path.realpath(os.fsdecode(target))
        except (TypeError, ValueError):  # no file name: `resolve_store` says why
            return False
        return isinstance(path, str) and os.path.realpath(path) == wanted
    return store is target or store is getattr(target, "store", None)


atexit.register(drain_all)  # a script that ends normally keeps everything its sessions recorded
