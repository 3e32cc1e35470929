"""One run of a comparison: a variant on one item's prompts, and what it left (its events)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from msgspec.json import encode

from .._runtime.costs import NodeSpend, spend
from .._runtime.journal import Journal
from .._runtime.session import Session
from .._store.protocol import NodeRow
from .._store.resolve import resolve_store
from ..events import ContextBuilt, Event, Fold, RunFinished
from .fingerprint import PART, run_fingerprint
from .variants import tree_endpoints

if TYPE_CHECKING:
    from .._base.prices import PriceBook
    from .._endpoints.openai import LLM
    from .._runtime.agent import Agent
    from .variants import Endpoint, Variant

FINAL = frozenset({"done", "incomplete", "pending"})
"""Statuses a run ends in for good: a re-run with the same store reads them back."""


YOUNG_THRESHOLD = 20_000
"""The cycle collector's first threshold while a sweep runs (Python's is 700). A finished run
leaves no cyclic garbage (its session is released, `Session.release`), but the objects of the
runs in flight outlive young collections, and each one promoted to the oldest generation
counts toward the next full collection, which scans every record the sweep keeps. With young
collections rarer, fewer are promoted (benchmarks/README.md, "Sweeps at eval scale")."""


@contextlib.contextmanager
def rarer_young_collections() -> Iterator[None]:
    """Raise the collector's first threshold to `YOUNG_THRESHOLD` (not lower it) for the
    block (a sweep; a run on a Ray worker); put it back after, unless someone changed it
    meanwhile."""
    threshold = gc.get_threshold()
    raised = threshold[0] < YOUNG_THRESHOLD
    if raised:
        gc.set_threshold(YOUNG_THRESHOLD, *threshold[1:])
    try:
        yield
    finally:
        if raised and gc.get_threshold()[0] == YOUNG_THRESHOLD:
            gc.set_threshold(*threshold)


@dataclass
class RunRecord:
    """What one (item, variant) run did."""

    item: Any
    """The item's id: its index in `prompts`, or the `id` of a dict item."""
    variant: str
    prompts: list[str]
    status: str
    """`done`, `incomplete`, `pending`, `error` or `cancelled`."""
    answer: str = ""
    """The top agent's last text."""
    error: str | None = None
    seconds: float = 0.0
    session_id: str | None = None
    """The stored session (when the sweep has a store)."""
    attempts: int = 1
    reused: bool = False
    """Read back from the store instead of run again."""
    why: str | None = None
    """Why a run stored under this run's id was not reused (e.g. `changed: variant`)."""
    meta: dict[str, Any] = field(default_factory=dict)
    """The item's other fields (a dict item's keys besides `prompt`/`prompts`/`id`)."""
    log: bytes = field(default=b"[]", repr=False)
    """The run's events as one JSON array: a sweep keeps thousands of runs, and their events
    as objects would leave the garbage collector ever more to scan at each full collection."""
    counts: dict[str, int] = field(default_factory=dict, repr=False)
    """What the table shows, counted from the events when they were set."""
    spent: NodeSpend = field(default_factory=NodeSpend, repr=False)
    """The run's reported tokens by model and CLI-reported cost (priced when the table is read)."""
    prices: PriceBook | None = field(default=None, repr=False)
    """The session's prices (a variant's `prices=`); None: genai-prices' table alone."""

    @property
    def events(self) -> list[Event]:
        """The run's events (decoded from `log` at each access)."""
        from ..events import event_adapter

        if self.log == b"[]":
            return []
        return [event_adapter().validate_python(item) for item in json.loads(self.log)]

    @events.setter
    def events(self, events: list[Event]) -> None:
        self.log = b"[" + b",".join(encode(e) for e in events) + b"]"
        self.counts = count(events)
        self.spent = merged(spend(events).values())


COUNTS: Fold[Callable[[dict[str, int], Any], None]] = Fold("record", sees_all=False)
"""What the table counts of each event class besides its type (`count`)."""


@COUNTS.handles(RunFinished)
def _run_finished(counts: dict[str, int], event: RunFinished) -> None:
    counts["turns"] += event.turns
    counts["prompt_tokens"] += event.usage.prompt_tokens
    counts["completion_tokens"] += event.usage.completion_tokens


@COUNTS.handles(ContextBuilt)
def _context_built(counts: dict[str, int], event: ContextBuilt) -> None:
    counts["peak"] = max(counts["peak"], event.view_tokens)


def merged(nodes: Iterable[NodeSpend]) -> NodeSpend:
    """Several nodes' spending as one."""
    total = NodeSpend()
    for node in nodes:
        for model, (prompt, completion) in node.tokens.items():
            tokens = total.tokens.setdefault(model, [0, 0])
            tokens[0] += prompt
            tokens[1] += completion
        if node.reported_usd is not None:
            total.reported_usd = (total.reported_usd or 0.0) + node.reported_usd
    return total


def count(events: list[Event]) -> dict[str, int]:
    """Event counts by type, plus the turns, tokens and peak view size the runs reported."""
    counts: dict[str, int] = {"turns": 0, "prompt_tokens": 0, "completion_tokens": 0, "peak": 0}
    for event in events:
        counts[event.type] = counts.get(event.type, 0) + 1
    COUNTS.into(counts, events)
    return counts


async def run_variant(
    variant: Variant,
    agent: Agent,
    llm: Endpoint | None,
    prompts: list[str],
    *,
    item: Any = 0,
    store: Any = None,
    session_id: str | None = None,
) -> RunRecord:
    """Run `prompts` in order on a fresh session of `variant`; never raises but for a bug.

    An exception becomes an `error` record with its message; a cancel stops the run in flight
    (its children too) and returns a `cancelled` record.
    """
    record, session = await run_session(
        variant, agent, llm, prompts, item=item, store=store, session_id=session_id
    )
    if session is not None:
        session.release()
    return record


async def run_session(
    variant: Variant,
    agent: Agent,
    llm: Endpoint | None,
    prompts: list[str],
    *,
    item: Any = 0,
    store: Any = None,
    session_id: str | None = None,
) -> tuple[RunRecord, Session | None]:
    """`run_variant`, also returning the session it ran (None when it could not be made)."""
    record = RunRecord(item, variant.name, prompts, "done", session_id=session_id)
    started = time.perf_counter()
    session: Session | None = None
    endpoints: list[LLM] = []
    run = None
    try:
        tree, endpoint, options = variant.build(agent, llm)
        endpoints = [endpoint, *tree_endpoints(tree)]
        session = Session(tree, llm=endpoint, session_id=session_id, **options)
        if store is not None:
            fingerprint = json.dumps(run_fingerprint(variant, prompts))
            session.journal = Journal(
                session,
                resolve_store(store, create=True),
                durability=session.durability,
                nodes=[NodeRow(session.root.path, PART, 0, fingerprint)],
                create_later=True,  # on the store thread: the loop never waits for its lock
            )
        for prompt in prompts:
            run = await session.send_async(prompt)
            if await run.wait_async() == "paused":
                run.cancel()
                await _settle(run)
                record.status, record.error = "error", f"the run paused before {run.paused_at}"
                break
            result = run._result_now()
            record.status, record.answer = result.status, result.text
            if result.status == "error":
                record.error = result.text
            if result.status in ("error", "cancelled"):
                break
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()  # this run ends here as a `cancelled` record
        if run is not None:
            run.cancel()
            await _settle(run)
        record.status, record.error = "cancelled", "the sweep was cancelled"
    except BaseException as exc:  # a bad variant at run time (SystemExit and KeyboardInterrupt
        # raised in it too: on this loop they are no Ctrl-C of the user's): its own row
        record.status, record.error = "error", f"{type(exc).__name__}: {exc}"
    record.seconds = time.perf_counter() - started
    for own in endpoints:  # this run's own copies
        await own.aclose()
    if session is not None:
        record.events = list(session.events)
        record.prices = session.prices
        record.session_id = session.id if session.journal is not None else None
    return record, session


async def _settle(run: Any) -> None:
    """Wait for a cancelled run to finish cancelling (its dangling calls answered)."""
    if not run.done:
        await run.wait_async()
