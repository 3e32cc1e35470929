"""`executor="ray"`: each (item, variant) run as a Ray task; its events (and, for a stored
sweep, its whole session record) come back to the driver. Ray is imported only here."""

from __future__ import annotations

import asyncio
import types
from collections.abc import Iterator
from dataclasses import replace
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


class RayRunner:
    """Runs one attempt as a Ray task and turns what comes back into a `RunRecord`."""

    def __init__(
        self, executor: str, agent: Agent, variants: list[Variant], llm: Endpoint | None
    ) -> None:
        ray = import_ray()
        from ray import cloudpickle

        # endpoints travel as fresh copies (no live client inside); each run makes its own
        shared_llm = llm.fresh() if isinstance(llm, LLM) else llm
        agent = copy_tree(agent, {})
        fresh_models(agent, {id(llm): shared_llm} if isinstance(shared_llm, LLM) else {})
        self.variants = {v.name: travelling(v) for v in variants}
        # what cannot travel fails now, naming the object, before any run starts
        check_travel(cloudpickle, "the agent", agent)
        for variant in self.variants.values():
            check_travel(cloudpickle, f"variant {variant.name!r}", variant)
        check_travel(cloudpickle, "llm=", shared_llm)
        if not ray.is_initialized():
            ray.init(address=None if executor == "ray" else executor)
        self.ray = ray
        self.store: Store | None = None
        self.shared = ray.put((agent, shared_llm))
        self.task = ray.remote(run_remote)

    async def __call__(self, variant: Variant, item: Item, session_id: str | None) -> RunRecord:
        keep_rows = self.store is not None and session_id is not None
        sent = self.variants[variant.name]
        ref = self.task.remote(self.shared, sent, item.id, item.prompts, session_id, keep_rows)
        try:
            record, rows = await asyncio.wrap_future(ref.future())
        except asyncio.CancelledError:
            self.ray.cancel(ref)
            raise
        except Exception as exc:  # the worker died, Ray failed: this run's row, not the sweep
            return RunRecord(
                item.id, variant.name, item.prompts, "error", error=f"{type(exc).__name__}: {exc}"
            )
        if rows is not None and self.store is not None:  # in the store thread's group commit
            writer = StepWriter(self.store, rows.info.id, create=rows)
            await asyncio.wrap_future(writer.settle())
            record.session_id = rows.info.id
        return record


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


def run_remote(
    shared: tuple[Agent, Endpoint | None],
    variant: Variant,
    item: Any,
    prompts: list[str],
    session_id: str | None,
    keep_rows: bool,
) -> tuple[RunRecord, SessionRows | None]:
    """On a Ray worker: run the attempt, return its record (its events travel as JSON) and,
    for a stored sweep, the session's rows, recorded in a store of the worker's own memory."""
    from .._base.loop import run_sync
    from .._store.memory import MemoryStore

    agent, llm = shared
    with rarer_young_collections():
        record, session = run_sync(
            run_session(
                variant,
                agent,
                llm,
                prompts,
                item=item,
                store=MemoryStore() if keep_rows else None,
                session_id=session_id,
            ),
            what="a Ray task",
        )
        rows = None
        if session is not None and session.store is not None:
            session.flush()
            rows = session.store.load(session.id)
    return record, rows


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
