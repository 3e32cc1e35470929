"""Resuming after an interruption: finding the unfinished run and scheduling its continuation.

The turn loop finishes the turn it cut (`turns.resume_open_turn`); delegation lets children cut
mid-task go on (`delegation.continue_restored`)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from .._base.errors import ConfigurationError
from .._base.loop import droppable
from .._base.messages import Message
from ..events import RunStarted
from .breakpoints import restored
from .pausing import checked_pause_on
from .run import Run

if TYPE_CHECKING:
    from .session import Session


def interrupted_run(session: Session) -> RunStarted | None:
    """The start of the last run if it never finished, else None."""
    for event in reversed(session.bus.log):
        if event.type == "run_finished":
            return None
        if isinstance(event, RunStarted):
            return event
    return None


async def enqueue_resume(session: Session, pause_on: Any) -> Run:
    """Schedule the interrupted run's continuation; its `Run` replaces the interrupted one.

    Its breakpoints are the stored ones (a predicate with code pauses wherever it could have
    matched, unless `pause_on` passes predicates again: they replace those) and `pause_on`;
    its mode, pending pauses and decisions are the cut run's (`Run.restore_pauses`)."""
    tail = session._tail
    if tail is not None and not tail.done():
        raise ConfigurationError(
            f"session {session.id!r} has a run in flight; wait for it (run.wait()) before "
            "session.resume()"
        )
    started = interrupted_run(session)
    queued, session.stored_queue = session.stored_queue, []
    if started is None and not queued:
        raise ConfigurationError(
            f"session {session.id!r} has no interrupted run to resume (its runs all finished); "
            "send a message with session.send(...) to go on"
        )
    runs = []
    given = checked_pause_on(pause_on, "resume()")
    if started is not None:
        # the run's own pause points still hold: approvals pending at the crash are asked again
        run = Run(
            session,
            started.run,
            pause_on={*given, *started.pause_on, *restored(started.breakpoints, given)},
        )
        pauses, session.stored_pauses = session.stored_pauses, None
        if pauses is not None and pauses.run == started.run:
            run.restore_pauses(pauses)
        runs.append(run)
    for entry in queued:  # then the inputs that waited behind it, as they were sent
        runs.append(
            Run(
                session,
                entry["run"],
                pause_on={*entry["pause_on"], *restored(entry.get("breakpoints", ()))},
                message=_message(entry["llm"]),
                display=_message(entry["display"]),
            )
        )
    loop = asyncio.get_running_loop()
    for run in runs:
        resume = run.number == (started.run if started is not None else None)
        run._task = droppable(loop.create_task(session._execute(run, session._tail, resume=resume)))
        session._tail = run._task
        session.runs = [run if r.number == run.number else r for r in session.runs]
        if run not in session.runs:
            session.runs.append(run)
    session.runs.sort(key=lambda r: r.number)
    return runs[0]


def _message(data: dict[str, Any] | None) -> Message | None:
    return Message.model_validate(data) if data is not None else None
