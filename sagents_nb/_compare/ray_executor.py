"""`executor="ray"`: the (item, variant) runs as Ray tasks, up to `CHUNK` a task; each run's
events (and, for a stored sweep, its whole session record) come back to the driver. Ray is
imported only here."""

from __future__ import annotations

import asyncio
import types
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .._base.errors import ConfigurationError
from .._endpoints.openai import LLM
from .._runtime.agent import Agent
from .._store.writer import StepWriter
from .record import RunRecord, rarer_young_collections, run_session
from .variants import Endpoint, Variant, copy_tree, fresh_models

if TYPE_CHECKING:
    from .._store.protocol import SessionRows, Store
    from .items import Item

MISSING_RAY = "executor='ray' needs Ray, an optional extra: pip install 'sagents_nb[ray]'"


def import_ray() -> Any:
    """The `ray` module, or an ImportError naming the extra."""
    try:
        import ray
    except ImportError as exc:
        raise ImportError(MISSING_RAY) from exc
    return ray


CHUNK = 16
"""Runs a Ray task carries (run together on the worker's loop): Ray's own cost per task (its
arguments, the result's pickling, the task's machinery) is paid once for them all."""


@dataclass
class _Waiting:
    """One attempt waiting for its chunk's task, and the future its record comes back in."""

    variant: str
    item: Item
    session_id: str | None
    keep_rows: bool
    future: asyncio.Future[tuple[RunRecord, SessionRows | None]]
    ref: Any = None


class RayRunner:
    """Runs attempts as Ray tasks, `slots` tasks in flight, each carrying up to `CHUNK`
    attempts (those waiting when a slot frees), and turns what comes back into a `RunRecord`
    per attempt."""

    chunk = CHUNK

    def __init__(
        self, executor: str, agent: Agent, variants: list[Variant], llm: Endpoint | None
    ) -> None:
        ray = import_ray()
        from ray import cloudpickle

        # endpoints travel as fresh copies (no live client inside); each run makes its own
        shared_llm = llm.fresh() if isinstance(llm, LLM) else llm
        agent = copy_tree(agent, {})
        fresh_models(agent, {id(llm): shared_llm} if isinstance(shared_llm, LLM) else {})
        travelling_variants = {v.name: travelling(v) for v in variants}
        # what cannot travel fails now, naming the object, before any run starts
        check_travel(cloudpickle, "the agent", agent)
        for variant in travelling_variants.values():
            check_travel(cloudpickle, f"variant {variant.name!r}", variant)
        check_travel(cloudpickle, "llm=", shared_llm)
        if not ray.is_initialized():
            ray.init(address=None if executor == "ray" else executor)
        self.ray = ray
        self.store: Store | None = None
        self.slots = 1
        """Tasks in flight at most (the sweep's `concurrency`)."""
        self.shared = ray.put((agent, shared_llm, travelling_variants))
        self.task = ray.remote(run_chunk)
        self.waiting: list[_Waiting] = []
        self.in_flight = 0
        self.scheduled = False

    async def __call__(self, variant: Variant, item: Item, session_id: str | None) -> RunRecord:
        keep_rows = self.store is not None and session_id is not None
        future = asyncio.get_running_loop().create_future()
        entry = _Waiting(variant.name, item, session_id, keep_rows, future)
        self.waiting.append(entry)
        self._schedule()
        try:
            record, rows = await entry.future
        except asyncio.CancelledError:
            if entry.ref is not None:
                self.ray.cancel(entry.ref)
            raise
        if rows is not None and self.store is not None:  # in the store thread's group commit
            writer = StepWriter(self.store, rows.info.id, create=rows)
            await writer.settled()
            record.session_id = rows.info.id
        return record

    def _schedule(self) -> None:
        """Send what waits at the end of this turn of the loop, if a slot is free."""
        if not self.scheduled and self.in_flight < self.slots:
            self.scheduled = True
            asyncio.get_running_loop().call_soon(self._send)

    def _send(self) -> None:
        """Send the waiting attempts (not those cancelled meanwhile), up to `chunk` a task,
        while a slot is free."""
        self.scheduled = False
        self.waiting = [entry for entry in self.waiting if not entry.future.done()]
        while self.waiting and self.in_flight < self.slots:
            chunk, self.waiting = self.waiting[: self.chunk], self.waiting[self.chunk :]
            self._send_chunk(chunk)

    def _send_chunk(self, chunk: list[_Waiting]) -> None:
        """One task for `chunk`; each future gets its own attempt's result."""
        runs = [(e.variant, e.item.id, e.item.prompts, e.session_id, e.keep_rows) for e in chunk]
        ref = self.task.remote(self.shared, runs)
        self.in_flight += 1
        for entry in chunk:
            entry.ref = ref
        done = asyncio.wrap_future(ref.future())
        done.add_done_callback(lambda finished: self._finished(chunk, finished))

    def _finished(self, chunk: list[_Waiting], finished: asyncio.Future[Any]) -> None:
        self.in_flight -= 1
        _deliver(chunk, finished)
        if self.waiting:
            self._schedule()


def _deliver(chunk: list[_Waiting], finished: asyncio.Future[Any]) -> None:
    """Each attempt's (record, rows), or, when the task failed (its worker died, Ray failed),
    an `error` record for each of its attempts: their rows, not the sweep."""
    if finished.cancelled():
        return
    error = finished.exception()
    results = finished.result() if error is None else [None] * len(chunk)
    for entry, result in zip(chunk, results, strict=True):
        if entry.future.done():  # cancelled meanwhile
            continue
        if result is None:
            message = f"{type(error).__name__}: {error}"
            failed = RunRecord(entry.item.id, entry.variant, entry.item.prompts, "error")
            failed.error = message
            result = (failed, None)
        entry.future.set_result(result)


def travelling(variant: Variant) -> Variant:
    """`variant` with fresh copies of the endpoints it sets (a used one holds a live client)."""

    def fresh(value: Any) -> Any:
        return value.fresh() if isinstance(value, LLM) else value

    session = {key: fresh(value) for key, value in variant.session.items()}
    agents = {
        name: {key: fresh(value) for key, value in changes.items()}
        for name, changes in variant.agents.items()
    }
    return replace(variant, session=session, agents=agents)


Run = tuple[str, Any, list[str], "str | None", bool]
"""One attempt as it travels: its variant's name, the item's id and prompts, its session id,
and whether to return the session's rows."""


def run_chunk(
    shared: tuple[Agent, Endpoint | None, dict[str, Variant]], runs: list[Run]
) -> list[tuple[RunRecord, SessionRows | None]]:
    """On a Ray worker: run the attempts together on the worker's loop; return each one's
    record (its events travel as JSON) and, for a stored sweep, the session's rows, recorded
    in a store of the worker's own memory. What one attempt raises is its own `error`."""
    from .._base.loop import run_sync

    agent, llm, variants = shared
    with rarer_young_collections():
        ran = run_sync(_run_all(agent, llm, variants, runs), what="a Ray task")
        return [_returned(run, outcome) for run, outcome in zip(runs, ran, strict=True)]


async def _run_all(
    agent: Agent, llm: Endpoint | None, variants: dict[str, Variant], runs: list[Run]
) -> list[Any]:
    from .._store.memory import MemoryStore

    return await asyncio.gather(
        *(
            run_session(
                variants[name],
                agent,
                llm,
                prompts,
                item=item,
                store=MemoryStore() if keep_rows else None,
                session_id=session_id,
            )
            for name, item, prompts, session_id, keep_rows in runs
        ),
        return_exceptions=True,
    )


def _returned(run: Run, outcome: Any) -> tuple[RunRecord, SessionRows | None]:
    """One attempt's record and stored rows (its session flushed here, off the loop)."""
    name, item, prompts, _session_id, _keep_rows = run
    try:
        if isinstance(outcome, BaseException):
            raise outcome
        record, session = outcome
        if session is None:
            return record, None
        store = session.store
        if store is not None:
            session.flush()
        session.release()
        return record, store.load(session.id) if store is not None else None
    except Exception as exc:
        failed = RunRecord(item, name, prompts, "error", error=f"{type(exc).__name__}: {exc}")
        return failed, None


def check_travel(cloudpickle: Any, what: str, value: Any) -> None:
    """Raise `ConfigurationError` naming the part of `value` cloudpickle cannot send."""
    try:
        cloudpickle.dumps(value)
    except Exception as exc:
        where, culprit, error = _culprit(cloudpickle, what, value, exc, set(), 0)
        raise ConfigurationError(
            f"{what} cannot be sent to Ray workers: {where} ({_short(culprit)}) cannot be "
            f"pickled ({type(error).__name__}: {error}). Ray tasks get copies of the agent, "
            "tools, hooks and endpoint: make them from plain data (no open sockets, stores, "
            "files or locks), or run this sweep without executor='ray'"
        ) from exc


def _culprit(
    cloudpickle: Any, where: str, value: Any, error: Exception, seen: set[int], depth: int
) -> tuple[str, Any, Exception]:
    """The deepest part of `value` that fails to pickle, where it is, and why."""
    if depth < 8 and id(value) not in seen:
        seen.add(id(value))
        for name, part in _parts(value):
            try:
                cloudpickle.dumps(part)
            except Exception as inner:
                return _culprit(cloudpickle, f"{where}{name}", part, inner, seen, depth + 1)
    return where, value, error


def _parts(value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield f"[{key!r}]", item
    elif isinstance(value, list | tuple | set | frozenset):
        for index, item in enumerate(value):
            yield f"[{index}]", item
    elif isinstance(value, types.FunctionType):
        cells = value.__closure__ or ()
        for name, cell in zip(value.__code__.co_freevars, cells, strict=True):
            yield f" (the function {value.__qualname__} uses {name})", cell.cell_contents
        names = value.__code__.co_names
        for name in names:
            if name in value.__globals__:
                yield f" (the function {value.__qualname__} uses {name})", value.__globals__[name]
    elif isinstance(value, types.MethodType):
        yield f".{value.__name__}.__self__", value.__self__
    elif hasattr(value, "__dict__"):
        for key, item in vars(value).items():
            yield f".{key}", item


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_executor(executor: str) -> None:
    """An executor names Ray (`"ray"`, `"auto"`, or an address)."""
    if not isinstance(executor, str) or not (
        executor in ("ray", "auto") or executor.startswith(("ray://", "http://")) or ":" in executor
    ):
        raise ConfigurationError(
            f"executor= takes None (this process), 'ray' or a Ray address such as "
            f"'ray://head:10001' or 'auto', not {executor!r}"
        )


def ray_runner(
    executor: str, agent: Agent, variants: list[Variant], llm: Endpoint | None
) -> RayRunner:
    """The runner for `executor=` (checked first, then Ray imported and started)."""
    check_executor(executor)
    return RayRunner(executor, agent, variants, llm)
