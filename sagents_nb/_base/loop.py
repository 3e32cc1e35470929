"""The library's own event loop, run by a daemon thread; sync entry points block on it in short polls.

Why not nest-asyncio: it loses kernel requests on ipykernel >= 7.1 (see the project's notes on
Jupyter async). A separate loop thread keeps runs progressing while a cell blocks and keeps
Ctrl-C / kernel interrupts responsive.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
import warnings
from collections.abc import Coroutine
from typing import Any, TypeVar

from .errors import ConfigurationError

T = TypeVar("T")
POLL_SECONDS = 0.1
SETTLE_SECONDS = 5.0
"""How long an interrupted blocking call waits for the run it cancelled to settle."""

log = logging.getLogger("sagents_nb")
_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_pid: int | None = None
_stopped_by: str | None = None


def droppable(task: asyncio.Task[T]) -> asyncio.Task[T]:
    """`task`, unreported if it is collected unfinished: a run's, a child's or a tool call's
    task waits at a pause (or behind the run before it) on futures only its session holds, so
    a session dropped there goes with its tasks, which nothing could resume any more."""
    task._log_destroy_pending = False  # type: ignore[attr-defined]  # asyncio's own switch
    return task


def library_loop() -> asyncio.AbstractEventLoop:
    """The library's event loop, started on first use (and again after a fork or a dead thread)."""
    global _loop, _thread, _pid
    if _loop is not None and threading.current_thread() is _thread and _pid == os.getpid():
        return _loop  # asked on its own thread (the runtime's many look-ups): it runs
    with _lock:
        if _loop is None or _pid != os.getpid() or _thread is None or not _thread.is_alive():
            if _loop is not None and _pid == os.getpid():
                warnings.warn(
                    f"sagents_nb's loop thread had stopped ({_stopped_by or 'reason unknown'}); "
                    "a new one was started. Runs that were in flight on it are lost: send again.",
                    RuntimeWarning,
                    stacklevel=3,
                )
            loop = asyncio.new_event_loop()
            ready = threading.Event()
            thread = threading.Thread(
                target=_serve, args=(loop, ready), name="sagents_nb-loop", daemon=True
            )
            thread.start()
            ready.wait()
            _loop, _thread, _pid = loop, thread, os.getpid()
        return _loop


def _serve(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
    """Run `loop` until it is stopped; a BaseException that escapes user code (asyncio lets
    SystemExit and KeyboardInterrupt out of a task) is logged and the loop goes on serving."""
    global _stopped_by
    asyncio.set_event_loop(loop)
    loop.call_soon(ready.set)
    while True:
        try:
            loop.run_forever()
        except BaseException as exc:  # this thread must outlive user code
            log.error("sagents_nb's loop caught %r from user code and goes on", exc, exc_info=exc)
            continue
        _stopped_by = "its event loop was stopped"
        return


def running_library_loop() -> asyncio.AbstractEventLoop | None:
    """The library loop if its thread runs in this process; None if nothing runs on it."""
    with _lock:
        alive = _pid == os.getpid() and _thread is not None and _thread.is_alive()
        return _loop if alive else None


def on_library_thread() -> bool:
    """Whether the caller runs on the library's loop thread."""
    return _thread is not None and threading.current_thread() is _thread


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Schedule `coro` on the library loop."""
    return asyncio.run_coroutine_threadsafe(coro, library_loop())


def call_soon(callback: Any, *args: Any) -> None:
    """Run `callback(*args)` on the library loop thread (thread-safe)."""
    library_loop().call_soon_threadsafe(callback, *args)


def block_on(future: concurrent.futures.Future[T], *, what: str) -> T:
    """Wait for `future` in short polls so KeyboardInterrupt (a kernel interrupt) gets through."""
    if on_library_thread():
        future.cancel()
        raise ConfigurationError(
            f"{what} blocks, and was called on sagents_nb's own loop thread where it would "
            "deadlock; use the async form (await agent.run(...), await run) instead"
        )
    while True:
        try:
            return future.result(timeout=POLL_SECONDS)
        except concurrent.futures.TimeoutError:
            continue


def run_sync(coro: Coroutine[Any, Any, T], *, what: str) -> T:
    """Run `coro` on the library loop and wait; an interrupt (Ctrl-C, a kernel interrupt)
    cancels it, waits a moment for the cancellation to settle, and re-raises."""
    if on_library_thread():
        coro.close()
        block_on(concurrent.futures.Future(), what=what)
    started = threading.Event()
    task: list[asyncio.Task[T]] = []

    async def tracked() -> T:
        task.append(asyncio.current_task())  # type: ignore[arg-type]
        started.set()
        return await coro

    future = submit(tracked())
    try:
        return block_on(future, what=what)
    except KeyboardInterrupt:
        if started.is_set():
            call_soon(task[0].cancel)
        else:
            future.cancel()
        settle(future)
        raise


def settle(future: concurrent.futures.Future[Any]) -> None:
    """Wait up to `SETTLE_SECONDS` for `future` to end, however it ends; a second interrupt
    ends the wait at once."""
    try:
        future.exception(timeout=SETTLE_SECONDS)
    except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
        pass


async def run_on_library_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Await `coro` on the library loop from any loop (inline when already there)."""
    if on_library_thread():
        return await coro
    return await asyncio.wrap_future(submit(coro))
