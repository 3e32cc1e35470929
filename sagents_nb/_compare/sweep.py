"""`sn.compare` and `sn.sweep`: every (item, variant) run on the library's loop (or on Ray), at
bounded concurrency, resumable through a store."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._base.checks import check_instance
from .._base.errors import ConfigurationError
from .._base.loop import block_on, call_soon, submit
from .._base.prices import PriceBook, checked_prices
from .._runtime.agent import Agent
from .comparison import Comparison
from .fingerprint import run_fingerprint
from .items import Item, conversation, sweep_items
from .progress import Progress, progress_for
from .record import RunRecord, rarer_young_collections, run_variant
from .resume import Previous, attempt_id, previous_runs, run_id
from .variants import Endpoint, Variant, check_variants

if TYPE_CHECKING:
    from .._store.protocol import Store

Runner = Callable[[Variant, Item, "str | None"], Awaitable[RunRecord]]
"""Runs one attempt of (variant, item) under a session id (None: not stored)."""


def compare(
    agent: Agent,
    prompts: str | Iterable[str],
    variants: Mapping[str, Any] | None = None,
    *,
    llm: Endpoint | None = None,
    store: Any = None,
) -> Comparison:
    """Run the same conversation once per variant, all at once on the library's loop.

    Args:
        agent: the top agent; each variant runs a private copy of its tree.
        prompts: a prompt, or prompts sent in order to one session (a conversation).
        variants: `{name: changes}`. A change's key is a session option (`llm`, `model` — the
            endpoint's default model —, `preprocessor`, `hooks`, `scope`, the limits
            `max_model_calls`, `max_tokens`, `max_nodes`, `max_depth`, `max_parallel`, and
            `durability`, `reattach`, `state`, `tool_context`, `token_counter`, as
            `sn.Session` takes them) or an agent's name, whose value is a kind
            (`sn.kinds.Resident()`, `"resident"`) or a dict of its attributes (`kind`, `model`,
            `instructions`, `tools`, `hooks`, `max_turns`, `token_budget`, `tool_call_budget`,
            `does`) and its kind's parameters (`{"helper": {"kind": "resident",
            "window_tokens": 300}}`).
        llm: the endpoint every variant meets: each gets `llm.fresh()` (an `sn.script` starts
            from its first reply), or pass a function that makes one. So does every endpoint
            in the tree (an agent's `model`, a Task's `model_override`).
        store: a path or `sn.Store`: each run is recorded there as a session
            (`.open(variant)` reopens it) with its fingerprint; run again with the same store,
            a run that finished is read back instead of run again when its variant, the agent
            tree (instructions, tools, team, kinds and their parameters), the endpoint (its
            label and model, not its key) and the prompts are what they were. The table's
            `reused` says which rows were; `why` says what changed for a stored run that
            was not.

    Raises:
        ConfigurationError: a variant does not apply (an agent not in the team, an unknown
            parameter): nothing has run. A variant that fails while running is an `error` row
            naming what it raised, `SystemExit` and `KeyboardInterrupt` too.
    """
    check_instance("agent", agent, Agent, where="sn.compare(...)", accepted="an sn.Agent")
    items = [Item(0, conversation(prompts, "prompts"))]
    checked = check_variants(agent, variants, llm)
    return _execute(agent, items, checked, llm, len(checked), _store(store), 0, False, None)


def sweep(
    agent: Agent,
    prompts: Any,
    variants: Mapping[str, Any] | None = None,
    *,
    llm: Endpoint | None = None,
    concurrency: int = 8,
    executor: str | None = None,
    store: Any = None,
    retries: int = 1,
    progress: bool | Progress = True,
) -> Comparison:
    """Run every (item, variant) pair, `concurrency` at a time, with a progress bar.

    Args:
        agent, variants, llm: as for `sn.compare`.
        prompts: the items: each a prompt, a list of prompts (one conversation), or a dict with
            `prompt` (or `prompts`) and optionally `id`; a DataFrame's records work too.
        concurrency: runs in flight at once; on Ray, tasks in flight at once, each carrying
            up to 16 runs (run together on its worker).
        executor: None runs on this process's loop; `"ray"` (or a Ray address such as
            `"ray://head:10001"` or `"auto"`) runs the pairs as Ray tasks, several a task, each
            run still its own row, retries and progress step (`sagents_nb[ray]`).
        store: a path or `sn.Store`. Each run is a stored session (`.open(variant, item)`
            reopens it), and a sweep run again with the same store skips the runs that finished
            (like Inspect's eval sets): only runs that errored, were cut short, never started,
            or whose configuration or prompts changed (see `sn.compare`) run again.
        retries: the retry policy. A run that ends in `error` (an endpoint failure, an
            exception) is tried again at once, up to `retries` more times, each attempt a new
            session (the failed attempts stay in the store); `done`, `incomplete` (a limit hit)
            and `pending` are final. A re-run with the same store gives errored runs `retries`
            more attempts.
        progress: True shows a bar (a widget in a notebook, a line on stderr elsewhere).

    Ctrl-C (a kernel interrupt) while the sweep runs cancels every run in flight and returns
    the rows so far: the finished runs, the others `cancelled` (`comparison.interrupted` is
    True); run the sweep again with the same store to finish it. A `KeyboardInterrupt` or
    `SystemExit` raised inside a variant (its endpoint, a hook) is that row's error, not a
    Ctrl-C.
    """
    if not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigurationError(f"concurrency must be a positive int, not {concurrency!r}")
    if not isinstance(retries, int) or retries < 0:
        raise ConfigurationError(f"retries must be an int >= 0, not {retries!r}")
    check_instance("agent", agent, Agent, where="sn.sweep(...)", accepted="an sn.Agent")
    items = sweep_items(prompts)
    checked = check_variants(agent, variants, llm)
    runner = None
    target = _store(store)
    in_flight = concurrency
    if executor is not None:
        from .ray_executor import ray_runner

        runner = ray_runner(executor, agent, checked, llm)
        runner.store, runner.slots = target, concurrency
        in_flight = concurrency * runner.chunk
    return _execute(agent, items, checked, llm, in_flight, target, retries, progress, runner)


def _execute(
    agent: Agent,
    items: list[Item],
    variants: list[Variant],
    llm: Endpoint | None,
    concurrency: int,
    target: Store | None,
    retries: int,
    progress: bool | Progress,
    runner: Runner | None,
) -> Comparison:
    with rarer_young_collections():
        job = _Job(agent, items, variants, llm, concurrency, target, retries, runner)
        job.previous = job.stored_runs()  # read here, not on the loop
        job.progress = progress_for(progress)
        future = submit(job.run())
        interrupted = False
        try:
            records = block_on(future, what="sn.sweep()")
        except KeyboardInterrupt:
            if future.done():  # it ended meanwhile, or raised this on the loop: no Ctrl-C of ours
                records = future.result()
            else:
                interrupted = True
                call_soon(job.cancel)
                records = block_on(future, what="sn.sweep()")  # cancelling takes a moment
        if target is not None:
            from .._store.writer import drain_all

            drain_all(target)  # every stored run committed before the table says so
        return Comparison(
            records, agent=agent, variants=variants, store=target, interrupted=interrupted
        )


def _store(store: Any) -> Store | None:
    if store is None:
        return None
    from .._store.resolve import resolve_store

    return resolve_store(store, create=True)


class _Job:
    """The pairs to run, a pool of `concurrency` workers, and what they recorded."""

    def __init__(
        self,
        agent: Agent,
        items: list[Item],
        variants: list[Variant],
        llm: Endpoint | None,
        concurrency: int,
        store: Store | None,
        retries: int,
        runner: Runner | None,
    ) -> None:
        self.agent, self.items, self.variants, self.llm = agent, items, variants, llm
        self.concurrency, self.store, self.retries = concurrency, store, retries
        self.runner = runner
        """None: each run on this process's loop (`_run_here`)."""
        self.progress: Progress | None = None
        self.previous: dict[str, Previous] = {}
        self.pairs = [(item, variant) for item in items for variant in variants]
        self.bases = [run_id(item, v.name) for item, v in self.pairs] if store is not None else []
        """Each pair's run id in the store (`run_id`), made once (here, not on the loop)."""
        self.records: list[RunRecord | None] = [None] * len(self.pairs)
        self.workers: list[asyncio.Task[None]] = []
        self.cancelled = False
        self.done = self.errors = 0

    async def run(self) -> list[RunRecord]:
        previous = self.previous
        queue = []
        why: dict[int, str | None] = {}
        for index, (_, variant) in enumerate(self.pairs):
            found = previous.get(self.bases[index]) if self.store is not None else None
            if found is not None and found.finished is not None:
                self.records[index] = found.finished
                found.finished.prices = PriceBook(checked_prices(variant.session.get("prices")))
                self.done += 1
            else:
                queue.append((index, found.attempts if found else 0))
                why[index] = found.why if found else None
        if self.progress is not None:
            self.progress.start(len(self.pairs), self.done)
        pending = iter(queue)
        self.workers = [
            asyncio.get_running_loop().create_task(self._work(pending))
            for _ in range(min(self.concurrency, len(queue)))
        ]
        try:
            await asyncio.gather(*self.workers)
        finally:
            if self.progress is not None:
                self.progress.close(self.cancelled)
        records = [record or self._never_started(i) for i, record in enumerate(self.records)]
        for index, reason in why.items():
            records[index].why = reason
        return records

    def cancel(self) -> None:
        """Stop: cancel every run in flight, start no more (on the loop)."""
        self.cancelled = True
        for worker in self.workers:
            worker.cancel()

    def stored_runs(self) -> dict[str, Previous]:
        """What the store already holds of this sweep's runs."""
        if self.store is None:
            return {}
        wanted = {
            base: (item, v.name, run_fingerprint(v, item.prompts))
            for base, (item, v) in zip(self.bases, self.pairs, strict=True)
        }
        return previous_runs(self.store, wanted)

    async def _work(self, pending: Any) -> None:
        for index, stored_attempts in pending:
            if self.cancelled:
                return
            record = await self._attempts(index, stored_attempts)
            self.records[index] = record
            self.done += 1
            self.errors += record.status == "error"
            if self.progress is not None:
                self.progress.advance(self.done, self.errors)

    async def _attempts(self, index: int, stored: int) -> RunRecord:
        item, variant = self.pairs[index]
        attempt = stored
        while True:
            attempt += 1
            session_id = attempt_id(self.bases[index], attempt) if self.store is not None else None
            try:
                record = await (self.runner or self._run_here)(variant, item, session_id)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
                record = RunRecord(item.id, variant.name, item.prompts, "cancelled")
                record.error = "the sweep was cancelled"
            except BaseException as exc:  # what a runner raises is its row's, not the sweep's
                error = f"{type(exc).__name__}: {exc}"
                record = RunRecord(item.id, variant.name, item.prompts, "error", error=error)
            record.attempts = attempt - stored
            record.meta = dict(item.meta)
            if record.status != "error" or attempt - stored > self.retries or self.cancelled:
                return record

    async def _run_here(self, variant: Variant, item: Item, session_id: str | None) -> RunRecord:
        return await run_variant(
            variant,
            self.agent,
            self.llm,
            item.prompts,
            item=item.id,
            store=self.store,
            session_id=session_id,
        )

    def _never_started(self, index: int) -> RunRecord:
        item, variant = self.pairs[index]
        return RunRecord(
            item.id,
            variant.name,
            item.prompts,
            "cancelled",
            error="the sweep was cancelled before this run started",
            meta=dict(item.meta),
        )
