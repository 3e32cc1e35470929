"""`StepWriter`: commits a session's steps off the event loop, in groups; one library thread
(the store thread) serves every writer.

The store thread looks every `LOOK_SECONDS` and commits what every session queued meanwhile
(a group commit); `put(..., at_once=True)` and `drain` commit at once. Waking the thread for
each step would cost the busy library loop a GIL hand-over each time (benchmarks/README.md
has the measurement).
"""

from __future__ import annotations

import atexit
import collections
import concurrent.futures
import heapq
import itertools
import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from .._base.errors import StoreError
from .protocol import PlainCommitStore

if TYPE_CHECKING:
    from .protocol import PlainStep, SessionRows, Step, Store

log = logging.getLogger("sagents_nb")

QUIET_SECONDS = 0.002
"""A session's journal hands a step over once the session has been quiet this long..."""

MAX_DELAY_SECONDS = 0.05
"""...or at the latest this long after the step ended."""

LOOK_SECONDS = 0.05
"""How often the store thread commits what was handed over (and runs chores that are due).
A crash loses at most `MAX_DELAY_SECONDS + LOOK_SECONDS` of finished work besides the action
in flight."""

_lock = threading.Condition()
_waiting: list[StepWriter] = []
_chores: collections.deque[Callable[[], None]] = collections.deque()
_timed: list[tuple[float, int, Callable[[], None]]] = []
_order = itertools.count()
_sleeping_until = 0.0
"""When the store thread wakes up next by itself (monotonic time; 0 while it is awake)."""
_urgent = False
"""A writer asked for a commit at once while the store thread was awake."""
_thread: threading.Thread | None = None
_writers: weakref.WeakSet[StepWriter] = weakref.WeakSet()


class Encodable(Protocol):
    """A step recorded on the loop, encoded to rows by the writer (off the loop)."""

    def encode(self) -> Step: ...

    def plain(self) -> PlainStep:
        """The rows as plain data, for a `PlainCommitStore` (`SQLiteStore`)."""
        ...


class StepWriter:
    """Commits one session's steps in order, in groups that share a transaction.

    A failed commit is logged and retried with the session's next step; `drain` raises it.

    Args:
        store: where to write.
        session_id: the session the steps belong to.
        cut: called first by `drain`, to queue the step being recorded.
        create: the new session's rows, written (`Store.create`) by the store thread before
            its first step, and at its next look in any case (`LOOK_SECONDS`).
    """

    def __init__(
        self,
        store: Store,
        session_id: str,
        cut: Callable[[], None] | None = None,
        create: SessionRows | None = None,
    ) -> None:
        self.store = store
        self._plain = store if isinstance(store, PlainCommitStore) else None
        """The store, if it takes steps as plain data (`PlainCommitStore`)."""
        self.session_id = session_id
        self._cut = cut
        self._create = create
        self._pending: list[Encodable] = []
        self._promises: list[concurrent.futures.Future[None]] = []
        """Futures of `settle` calls, resolved by the commit that takes the steps queued
        before them."""
        self._writing = False
        _writers.add(self)
        if create is not None:  # stored at the store thread's next look
            with _lock:
                _waiting.append(self)
                _wake(at_once=False)

    def put(self, step: Encodable, *, at_once: bool = False) -> None:
        """Queue `step` for the store thread's next look, or for a commit `at_once`."""
        with _lock:
            self._pending.append(step)
            if self not in _waiting:
                _waiting.append(self)
            _wake(at_once=at_once)

    def settle(self) -> concurrent.futures.Future[None]:
        """Queue the step being recorded and have the store thread commit everything queued
        at once; the future is done when it is committed (a `StoreError` if the store refused).
        Awaitable from any loop (`asyncio.wrap_future`) without blocking it."""
        if self._cut is not None:
            self._cut()
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        with _lock:
            if not (self._pending or self._writing or self._create is not None):
                future.set_result(None)
                return future
            self._promises.append(future)
            if self not in _waiting:
                _waiting.append(self)
            _wake(at_once=True)
        return future

    def drain(self) -> None:
        """Commit every queued step (and the one being recorded) now, on this thread, and
        wait; raise `StoreError` if the store refuses."""
        if self._cut is not None:
            self._cut()
        with _lock:
            _lock.wait_for(lambda: not self._writing)
            steps, self._pending = self._pending, []
            promises, self._promises = self._promises, []
            self._writing = True
        error = self._commit(steps, promises)
        if error is not None:
            raise self._refused(error) from error

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
        self, steps: list[Encodable], promises: list[concurrent.futures.Future[None]]
    ) -> Exception | None:
        """Encode and commit `steps` (the caller set `_writing`), then settle `promises`; on
        failure put the steps back first in line."""
        global _urgent
        error = None
        try:
            if self._create is not None:
                self.store.create(self._create)
                self._create = None
            if steps and self._plain is not None:
                self._plain.commit_plain(self.session_id, [step.plain() for step in steps])
            elif steps:
                self.store.commit(self.session_id, [step.encode() for step in steps])
        except Exception as exc:
            error = exc
        with _lock:
            self._writing = False
            if error is not None:
                self._pending[:0] = steps
            if self._promises:  # promised while this commit ran: the next look is now
                _urgent = True
            _lock.notify_all()
        for promise in promises:
            if error is None:
                promise.set_result(None)
            else:
                promise.set_exception(self._refused(error))
        return error


def later(chore: Callable[[], None], delay: float = 0.0) -> None:
    """Run `chore` on the store thread (at its first look `delay` seconds or more from now,
    within `LOOK_SECONDS` more), e.g. closing a connection
    (SQLite then checkpoints and syncs the file, which takes milliseconds nobody should wait
    for).

    Safe without a delay from a garbage-collection finalizer on any thread, the store thread
    included: the chore waits in a deque until the thread next looks.
    """
    if delay <= 0:
        _chores.append(chore)
        with _lock:
            _wake(at_once=True)
        return
    with _lock:
        heapq.heappush(_timed, (time.monotonic() + delay, next(_order), chore))
        _wake(at_once=False)


def _wake(*, at_once: bool) -> None:
    """Start the store thread; wake it now if `at_once` (the caller holds `_lock`)."""
    global _thread, _urgent
    if _thread is None:
        _thread = threading.Thread(target=_serve, name="sagents_nb-store", daemon=True)
        _thread.start()
    if at_once:
        _urgent = True
        if _sleeping_until:
            _lock.notify_all()


def _serve() -> None:
    """The store thread: run chores; commit each waiting writer's steps when they are due (a
    writer whose commit failed waits for its next step, or a drain, to try again)."""
    while True:
        chores, batches = _next_turn()
        _run(chores)
        _commit_all(batches)
        del chores, batches  # nothing of a session outlives its turn here


Batch = tuple["StepWriter", list[Encodable], list[concurrent.futures.Future[None]]]


def _next_turn() -> tuple[list[Callable[[], None]], list[Batch]]:
    """Sleep until the next look (or a wake-up); take the chores that are due and every
    waiting writer's steps (marked as writing)."""
    global _sleeping_until, _urgent
    with _lock:
        if not (_chores or _urgent):
            now = time.monotonic()
            left = min(LOOK_SECONDS, _timed[0][0] - now) if _timed else LOOK_SECONDS
            if left > 0:
                _sleeping_until = now + left
                _lock.wait(left)
                _sleeping_until = 0.0
        _urgent = False
        now = time.monotonic()
        while _timed and _timed[0][0] <= now:
            _chores.append(heapq.heappop(_timed)[2])
        chores = [_chores.popleft() for _ in range(len(_chores))]
        due = [w for w in _waiting if not w._writing]
        _waiting[:] = [w for w in _waiting if w._writing]
        batches = [(w, w._pending, w._promises) for w in due]
        for writer in due:
            writer._pending, writer._promises, writer._writing = [], [], True
        return chores, batches


def _run(chores: list[Callable[[], None]]) -> None:
    for chore in chores:
        try:
            chore()
        except Exception:
            log.exception("a store chore failed: %r", chore)


def _commit_all(batches: list[Batch]) -> None:
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


def drain_all() -> None:
    """Commit every session's queued steps, so that reading a store in this process sees them
    (a failure is logged: the session's own `flush()` raises it)."""
    for writer in list(_writers):
        try:
            writer.drain()
        except StoreError as exc:
            log.error("%s", exc)


atexit.register(drain_all)  # a script that ends normally keeps everything its sessions recorded
