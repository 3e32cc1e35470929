"""`Session`: a live conversation with one agent tree, the object a notebook keeps across cells."""

from __future__ import annotations

import asyncio
import inspect
import os
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._base.checks import (
    check_callable,
    check_instance,
    check_int,
    check_items,
    check_path,
    check_str,
    refuse,
)
from .._base.errors import ConfigurationError, Rejected, RunPaused
from .._base.ids import checked_session_id, new_session_id
from .._base.loop import block_on, droppable, run_on_library_loop, run_sync, submit
from .._base.messages import Message, Usage, estimate_tokens, user
from .._base.outcome import Outcome
from .._base.prices import PriceBook, checked_prices
from .._endpoints.openai import LLM
from .._tools.tool import HOOK, is_hook
from ..events import (
    ErrorOccurred,
    Event,
    LLMSwapped,
    MessagePreprocessed,
    MessageRefused,
    PreprocessorSwapped,
    RunFinished,
    RunStarted,
)
from ..kinds import Main, Worker
from .breakpoints import split, stored
from .bus import EventBus
from .limits import MAX_MODEL_CALLS, MAX_NODES, MAX_TOKENS, checked_cap, checked_count
from .node import Node
from .pausing import APPROVE, Decision
from .result import Result, TreeNode
from .run import Run

if TYPE_CHECKING:
    from .._store.protocol import Store, StoredSession
    from .agent import Agent
    from .decisions import StoredPauses
    from .journal import Journal
    from .pending import StoredPause


WHERE = "sn.Session(...)"

_LIVE: weakref.WeakValueDictionary[str, Session] = weakref.WeakValueDictionary()
"""The sessions of this process by id, the newest of each: a reopen takes from the one that
ran what it reopens the objects no store keeps (each node's kind and endpoint)."""
A_DICT = "a dict or None"


def checked_llm(value: object) -> LLM:
    """An endpoint for `llm=`: an `sn.LLM` (a mock, a cassette), or a URL for `sn.LLM(base_url=...)`."""
    if isinstance(value, LLM):
        return value
    if isinstance(value, str) and value.startswith(("http://", "https://")):
        return LLM(base_url=value)
    refuse(
        "llm",
        value,
        "an endpoint (sn.LLM(...), sn.mock_llm(...), sn.script(...)), a URL such as "
        "'http://localhost:8000/v1', or None",
        where=WHERE,
    )


def _default_llm(agent: Agent) -> LLM:
    """The session's endpoint when `llm=` is not given: its top agent's own, if it has one
    (children without one inherit it), else `sn.LLM()` from the environment."""
    own = agent.model
    return own if isinstance(own, LLM) else LLM()


def checked_agent(value: Any) -> Agent:
    """The top agent: an `sn.Agent`, or an `sn.Task` subclass (its agent)."""
    as_agent = getattr(value, "as_agent", None)
    if isinstance(value, type) and callable(as_agent):
        value = as_agent()
    # an Agent told by its shape: the runtime below `agent` never imports it
    if not (hasattr(value, "members") and hasattr(value, "pause_on")):
        refuse("agent", value, "an sn.Agent (or an sn.Task subclass)", where=WHERE)
    return value


# The preprocessors' module (its context dataclasses, `Mentions`) loads with the first session
# given a preprocessor, and `resume`'s with the first resume: a first run needs neither.


def _checked_preprocessor(value: Any) -> Any:
    if value is None:
        return None
    from .preprocess import checked_preprocessor

    return checked_preprocessor(value)


def _preprocessor_name(preprocessor: Any) -> str:
    from .preprocess import preprocessor_name

    return preprocessor_name(preprocessor)


class Session:
    """A live conversation with one agent tree.

    Args:
        agent: the top agent.
        llm: the endpoint (`sn.mock_llm(...)`, `sn.script(...)`, `sn.LLM(...)`, or a URL for
            `sn.LLM(base_url=...)`); defaults to the top agent's own endpoint (`model=`), else
            to `sn.LLM()` from `OPENAI_BASE_URL` / `OPENAI_API_KEY`.
        scope: passed to the preprocessor as its first argument.
        preprocessor: makes the display and LLM versions of each user message: a function
            `(scope, message, context) -> (display, llm)` or an object with such a `preprocess`
            method (a wrong signature raises `ConfigurationError` here). Events name it by its
            `name` attribute, else the function's name, else its class's.
        store: makes the session durable: a file path (a str or `os.PathLike`: SQLite,
            created if missing), `":memory:"`, or a `sn.Store` (e.g.
            `sagents_nb.store.MemoryStore()`); every event, both transcripts and each node's
            state are written as they happen. `session.store` is then that `Store`;
            `session.flush()` commits now.
        hooks: tool hooks applied to every agent in the tree.
        max_depth: how deep delegation may go.
        max_parallel: children of one parent running at once.
        reattach: how long a repeated `task(agent, prompt)` returns the earlier child's result
            instead of running again: `"run"` (default) within one message's run, so a new
            message does new work; `"session"` for the session's life (toolnexus's durable
            semantics). An interrupted run resumed with `session.resume()` reattaches either way.
        max_model_calls: model requests one run (one `send`) may make across the whole tree;
            at the cap every node stops at its next request and the run ends `incomplete`,
            saying so. None for no cap.
        max_nodes: sub-agents one run may spawn across the whole tree; past it the `task`
            call is refused (the model is told why) and, as at the other caps, every node
            stops at its next model request: the run ends `incomplete`. None for no cap.
        max_tokens: tokens one run may spend (the endpoint's reported usage); like
            `max_model_calls`, checked before each request. None for no cap.
        token_counter: `count(message) -> int`; an estimate by default.
        state: your own dict, handed to the preprocessor as `context.user_state`.
        tool_context: data for your tools and preprocessor (`context.tool_context`).
        session_id: the id to store the session under (generated by default).
        durability: when a durable session's run is committed: `"async"` (default) within
            100 ms of each step (plus the commit's own time), off the run's path; `"turn"` also before each model request
            is sent (the run waits for it); `"exit"` only when the run pauses or ends. Whatever
            the mode, `result()`, `wait()`, `run_sync` and `Session(...)` return after what
            they report is committed, and `session.resume()` never redoes a committed tool
            call.
        prices: your prices by model, US dollars per million tokens, e.g.
            `{"gpt-4o": {"input": 2.5, "output": 10.0}}`: they override genai-prices' table
            (the `prices` extra) in `result.cost`, the view and comparisons.
    """

    def __init__(
        self,
        agent: Agent,
        *,
        llm: LLM | None = None,
        scope: Any = None,
        preprocessor: Any = None,
        store: Any = None,
        hooks: Sequence[Any] = (),
        max_depth: int = 3,
        max_parallel: int = 8,
        reattach: Literal["run", "session"] = "run",
        max_model_calls: int | None = MAX_MODEL_CALLS,
        max_nodes: int | None = MAX_NODES,
        max_tokens: int | None = MAX_TOKENS,
        token_counter: Callable[[Message], int] | None = None,
        state: dict[str, Any] | None = None,
        tool_context: dict[str, Any] | None = None,
        session_id: str | None = None,
        durability: Literal["turn", "async", "exit"] = "async",
        prices: dict[str, dict[str, float]] | None = None,
    ) -> None:
        if session_id is not None:
            checked_session_id(session_id)
        self.id = session_id or new_session_id()
        self.durability = durability
        self.prices = PriceBook(checked_prices(prices))
        """What its costs are read with: `prices=` over genai-prices' table."""
        self.agent = agent = checked_agent(agent)
        self._llm = checked_llm(llm) if llm is not None else _default_llm(agent)
        self.scope = scope
        self._preprocessor = _checked_preprocessor(preprocessor)
        self._preprocessors: dict[str, Any] = {}
        self._remember_preprocessor(preprocessor)
        self.journal: Journal | None = None
        """Records this session into its store (None when the session is not durable)."""
        self.hooks = check_items("hooks", hooks, is_hook, where=WHERE, accepted=HOOK)
        if durability not in ("turn", "async", "exit"):
            refuse("durability", durability, "one of 'async', 'turn', 'exit'", where=WHERE)
        if reattach not in ("run", "session"):
            raise ConfigurationError(
                f'reattach must be "run" (a new message does new work) or "session" (a repeated '
                f"task returns its earlier result for the session's life), not {reattach!r}"
            )
        self.reattach = reattach
        self.max_depth = checked_count("max_depth", max_depth, 0, "how deep delegation may go")
        self.max_parallel = checked_count(
            "max_parallel", max_parallel, 1, "children of one parent running at once"
        )
        self.max_model_calls = checked_cap("max_model_calls", max_model_calls)
        self.max_nodes = checked_cap("max_nodes", max_nodes)
        self.max_tokens = checked_cap("max_tokens", max_tokens)
        self.run_model_calls = self.run_nodes = 0
        self.limit_hit: str | None = None
        check_callable("token_counter", token_counter, where=WHERE, optional=True)
        self.token_counter = token_counter or estimate_tokens
        check_instance("state", state, (dict, type(None)), where=WHERE, accepted=A_DICT)
        self.state = state if state is not None else {}
        check_instance(
            "tool_context", tool_context, (dict, type(None)), where=WHERE, accepted=A_DICT
        )
        self.tool_context = tool_context if tool_context is not None else {}
        self.bus = EventBus()
        self.default_main = Main()
        self.default_worker = Worker()
        self.root = Node(self, agent, agent.kind or self.default_main, path=agent.name)
        self.root.display = []
        self.runs: list[Run] = []
        self.current_run: Run | None = None
        self.run_usage = Usage()
        self._tail: asyncio.Task[Any] | None = None
        self.stored_from: dict[str, int] = {}
        """A reopened or forked session's stored events, as how many first events are each
        session's (its own; its origin's, for a fork), whatever those sessions did since."""
        self.kinds_ran: dict[tuple[str, str], Any] = {}
        """(node path, kind class) -> the kind object that node last ran with of that class
        (what a fork in this process gives a node whose kind's arguments are not JSON)."""
        self.swaps: list[tuple[int, str, Any, Any]] = []
        """(seq, "preprocessor" or "llm", old, new) of each swap of the session's own parts, so
        that a fork takes the ones in force at its event."""
        self.endpoint_choices: list[tuple[int, str, tuple[Any, str | None]]] = []
        """(seq, node path, (endpoint or None, model name or None)) each time what a node's
        agents chose for its requests changed (`agent.model = ...` on a shared agent), so that
        a fork gives each node the one in force at its event."""
        self.stored_queue: list[dict[str, Any]] = []
        self.stored_pauses: StoredPauses | None = None
        """What a reopened session's cut run had pending and decided; `resume()` takes it."""
        """Inputs a reopened session found queued behind its interrupted run (the store's
        `queue` row); `resume()` runs them after it."""
        self._slots: dict[str, asyncio.Semaphore] = {}
        _LIVE[self.id] = self
        if store is not None:
            self._record_into(store, later=False)

    def _record_into(self, store: Any, *, later: bool) -> None:
        """Record this session into `store` from now on. `later`: its record goes in with its
        first commit, in that transaction (a read-only store is refused at once all the same),
        rather than in one of its own now."""
        from .journal import Journal  # the store's modules load with the first durable session

        target = resolved(store, create=True)
        later = later and not getattr(target, "read_only", False)
        self.journal = Journal(self, target, durability=self.durability, create_later=later)

    def __repr__(self) -> str:
        return (
            f"Session({self.id!r}, agent={self.agent.name!r}, runs={len(self.runs)}, "
            f"llm={self._llm!r})"
        )

    def _ipython_display_(self) -> None:
        from ..notebook import display_live  # the display hook: widgets load when shown

        display_live(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from .static import static_bundle  # `html` and its entity table: for HTML only

        last = self.runs[-1] if self.runs else None
        result = last._result if last else None
        return static_bundle(
            self.tree, result.text if result else "", last.status if last else "idle"
        )

    # what a notebook reads

    @property
    def events(self) -> Sequence[Event]:
        """The session's whole event log (a list-like `EventLog`; a reopened session's stored
        events are decoded as they are read)."""
        return self.bus.log

    @property
    def display_messages(self) -> list[Message]:
        """The transcript a person sees (user messages as typed)."""
        return list(self.root.display or ())

    @property
    def llm_messages(self) -> list[Message]:
        """The transcript the model is given (preprocessed, and compacted where a kind does so)."""
        return list(self.root.history)

    @property
    def tree(self) -> TreeNode:
        """A snapshot of the delegation tree."""
        return self.root.tree()

    @property
    def pending(self) -> list[StoredPause]:
        """The decisions waiting now, each as (path, action, name, arguments): the paused run's,
        or, in a session reopened (or forked) at a pause, each one its cut run was waiting for,
        which `resume()` presents again first."""
        run = self.current_run
        waiting = list(run.pending) if run is not None and run.pending else []
        if not waiting and self.stored_pauses is not None:
            waiting = list(self.stored_pauses.pending)
        from .pending import StoredPause

        return [StoredPause(p.path, p.action, p.name, p.arguments) for p in waiting]

    @property
    def last_run(self) -> Run | None:
        return self.runs[-1] if self.runs else None

    @property
    def store(self) -> Store | None:
        """The `Store` this session is recorded in, or None when it is not durable."""
        return self.journal.store if self.journal is not None else None

    def flush(self) -> None:
        """Commit everything recorded so far and wait; raises `StoreError` if the store refuses.
        Does nothing for a session without a store."""
        if self.journal is not None:
            self.journal.flush()

    def _settle_here(self, *, cut: bool = True) -> None:
        """For a thread waiting on a run that stopped: commit what it reports, on this thread
        (it waits anyway: no wake-up of the store thread, then of the loop), and wait until the
        user's callbacks were handed it. `cut=False`: the step was cut on the loop already."""
        if self.journal is not None:
            self.journal.flush(cut=cut)
        self.bus.caught_up()

    def _run_waiting(self, text: str, pause_on: Any, *, what: str) -> Result:
        """`run(text)` for a thread that blocks until it ends (`agent.run_sync`): the run's
        last step is cut on the loop as it stops, and committed on this thread before this
        returns (or raises `RunPaused`)."""
        try:
            result = run_sync(self._run_through(text, pause_on, settle=False), what=what)
        except RunPaused:
            self._settle_here(cut=False)
            raise
        self._settle_here(cut=False)
        return result

    def release(self) -> None:
        """For an owner done with this session for good, once its runs ended and were flushed
        (a sweep, once a run's record is taken): drop the references between it and its runs,
        journal and nodes, and from each child node to its parent, so that reference counting
        frees it with all its parts when the owner drops it, without the cycle collector. Its
        events stay readable; its runs and journal are forgotten, its nodes unusable. Does
        nothing while a run is queued, running or paused (the cycle collector frees it then)."""
        if not all(run.done for run in self.runs):
            return
        self.runs.clear()
        self.current_run = None
        self._tail = None
        if self.journal is not None:
            self.journal.detach()
            self.journal = None
        for node in self.root.walk():
            node.release()

    def node(self, path: str) -> Node | None:
        """The live node at `path` (for inspection)."""
        return self.root.find(path)

    # hot-swappable parts

    @property
    def preprocessor(self) -> Any:
        return self._preprocessor

    @preprocessor.setter
    def preprocessor(self, value: Any) -> None:
        old, self._preprocessor = self._preprocessor, _checked_preprocessor(value)
        self._remember_preprocessor(value)
        event = self.bus.emit(
            PreprocessorSwapped(
                path=self.root.path, old=_preprocessor_name(old), new=_preprocessor_name(value)
            )
        )
        self.swaps.append((event.seq, "preprocessor", old, self._preprocessor))

    @property
    def preprocessors(self) -> dict[str, Any]:
        """Every preprocessor this session has had, by name (the newest object under each
        name): the live view's selector offers them, to switch back to."""
        return dict(self._preprocessors)

    def _remember_preprocessor(self, preprocessor: Any) -> None:
        if preprocessor is not None:
            # in the order first seen, so that the selector's options keep their places
            self._preprocessors[_preprocessor_name(preprocessor)] = preprocessor

    @property
    def llm(self) -> LLM:
        return self._llm

    @llm.setter
    def llm(self, value: LLM | str) -> None:
        value = checked_llm(value)
        old, self._llm = self._llm, value
        event = self.bus.emit(LLMSwapped(path=self.root.path, old=old.label, new=value.label))
        self.swaps.append((event.seq, "llm", old, value))

    def in_force(self, part: str, seq: int) -> Any:
        """The session's `part` ("preprocessor" or "llm") as it was at event `seq`: the newest
        swap at or before it, else what the first swap after it replaced, else the current one."""
        current = self._preprocessor if part == "preprocessor" else self._llm
        swaps = [(at, old, new) for at, what, old, new in self.swaps if what == part]
        before = [new for at, old, new in swaps if at <= seq]
        if before:
            return before[-1]
        return next((old for at, old, new in swaps if at > seq), current)

    # following events

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Call `callback(event)` for every event from now on (current statuses first).

        The callback runs in order on a thread of its own, so a slow one never holds up the
        run; a run's `wait()` and `result()` return once it was handed the run's events.
        Returns a function that unsubscribes.
        """
        check_callable("callback", callback, where="session.subscribe()")
        return self.bus.subscribe_queued(callback)

    def stream(self) -> AsyncIterator[Event]:
        """`async for event in session.stream()`: events as they happen."""
        return self.bus.stream()

    # sending

    def send(self, text: str, *, pause_on: Any = ()) -> Run:
        """Send a user message; returns its `Run` at once (queued behind a run in flight).

        `pause_on`: breakpoints for this run: action names (`model`, `tool`, `task` to pause
        before; `reply` after a child's answer, before its parent reads it), `sn.when(...)`
        predicates or callables taking the `PendingAction`; one or several.

        The run goes on in the background: `run.wait()` blocks until it pauses or ends (Ctrl-C
        there cancels it), `run.result()` until it ends (Ctrl-C there only stops the wait).

        Raises `sn.Rejected` if the preprocessor refuses the message (nothing is added).
        """
        return block_on(submit(self._enqueue(text, pause_on)), what="session.send()")

    async def send_async(self, text: str, *, pause_on: Any = ()) -> Run:
        """`send` for async code."""
        return await run_on_library_loop(self._enqueue(text, pause_on))

    def retry(self, *, pause_on: Any = ()) -> Run:
        """Run the top agent again from its current transcript (e.g. after an endpoint error)."""
        return block_on(submit(self._enqueue(None, pause_on)), what="session.retry()")

    async def run(self, text: str, *, pause_on: Any = ()) -> Result:
        """Send `text` and await the `Result` (a pause raises `RunPaused`; use `send` to step)."""
        return await run_on_library_loop(self._run_through(text, pause_on))

    # durability (a session made with store=...)

    @classmethod
    def open(
        cls, store: Any, session_id: str, *, agent: Agent, llm: LLM | None = None, **options: Any
    ) -> Session:
        """Reopen a stored session (e.g. after a kernel restart): transcripts, events, tree.

        Configuration stays in code: pass the same `agent` (its tools, team and kinds) and an
        endpoint (needed only to send or resume); `options` are the other `Session` arguments.
        A run the interruption cut short shows as `incomplete`; a node it left at a pause reads
        `paused` and `session.pending` names the decision; `session.resume()` continues it.
        Each node keeps the endpoint it was on, as a fork does, when this process ran the
        session with this very `agent`; else (another process: an endpoint object is not
        stored) it uses what its agents give now, and where that is not the endpoint its last
        `llm_swapped` named, its next request records the swap.

        Raises:
            StoreError: no such file, not a sagents_nb store, an unknown id (the error lists the
                ids there are), or a store written by an incompatible version.
        """
        # restore builds a Message and loads httpx at import: loaded to reopen, not to run
        from .restore import open_session, reopening_endpoint

        checked_session_id(session_id)
        options["llm"] = reopening_endpoint(llm)
        live = _LIVE.get(session_id)
        ran_here = live if live is not None and live.agent is agent else None
        return open_session(cls, store, session_id, agent, options, ran_here)

    @staticmethod
    def list_stored(store: Any) -> list[StoredSession]:
        """The sessions in `store` (a path or `sn.Store`); forks name their parent and seq."""
        return resolved(store, create=False).sessions()

    @classmethod
    def import_jsonl(
        cls,
        path: str | os.PathLike[str],
        store: Any,
        *,
        agent: Agent,
        llm: LLM | None = None,
        session_id: str | None = None,
        **options: Any,
    ) -> Session:
        """Add a session exported by `export_jsonl` to `store` (under its id, or `session_id`)
        and open it."""
        # jsonl loads restore (a Message, httpx): loaded to import or export, not to run
        from .jsonl import import_jsonl
        from .restore import reopening_endpoint

        if session_id is not None:
            checked_session_id(session_id)
        options["llm"] = reopening_endpoint(llm)
        check_path("path", path, where="sn.Session.import_jsonl()")
        target = resolved(store, create=True)
        return import_jsonl(cls, path, target, agent, session_id, options)

    def export_jsonl(self, path: str | os.PathLike[str]) -> Path:
        """Write this durable session (events, transcripts, node state) to `path` as JSON lines."""
        # jsonl loads restore (a Message, httpx): loaded to import or export, not to run
        from .jsonl import export_jsonl

        return export_jsonl(self, check_path("path", path, where="session.export_jsonl()"))

    def save_html(self, path: str | os.PathLike[str]) -> Path:
        """Write this session's view to one self-contained HTML file anyone can open: every
        tab (tree, transcripts, context and its diff, tool calls, timing, decisions) works
        offline, with no kernel and no network request. Returns the file's path."""
        from ..notebook import save_html  # the display layer: loaded when a file is written

        return save_html(self, check_path("path", path, where="session.save_html()"))

    def to_test(
        self, path: str | os.PathLike[str], *, agents: str, overwrite: bool = False
    ) -> Path:
        """Write a pytest file that replays this session offline and checks it ends the same.

        The test answers each node with the replies it received, sends the messages with their
        `pause_on`, decides each pause as it was decided, and checks the answers, the tree and
        the tool results; the agents' tools run for real. Returns the file's path.

        Args:
            path: the file to write (`test_<name>.py`, so that pytest collects it).
            agents: where the test imports the top agent from, `"module:attribute"`; the
                module must be importable where pytest runs (beside the file will do).
            overwrite: replace an existing file.

        Raises:
            ConfigurationError: `agents` does not import to this session's top agent, the
                file exists, or the session has nothing a replay can reproduce (no runs, a run
                in flight, a request without a reply, a run cut short or cancelled mid-run).
        """
        from .to_test import write_test

        return write_test(self, path, agents=agents, overwrite=overwrite)

    def resume(self, *, pause_on: Any = ()) -> Run:
        """Continue the run an interruption (a crash, a kernel restart) left unfinished.

        It goes on from the last committed step: finished tool turns are not redone, settled
        children are reattached by their task key, a child cut mid-task continues from its own
        last step. Then the messages that were sent while it ran and had not started run, in
        order (they are stored when sent). Returns the first `Run` at once, like `send`;
        `session.runs` holds the others.

        The run's stored breakpoints, step mode and decisions hold: the pauses it was waiting
        at (`session.pending`) are presented again first, a decision made before the cut is
        applied, not asked again. A predicate's code cannot be stored: one stored with code
        pauses wherever its `path`, `action` and `tool` match, unless `pause_on` passes
        predicates again, which take the place of those.
        """
        from .resume import enqueue_resume

        return block_on(submit(enqueue_resume(self, pause_on)), what="session.resume()")

    def fork(self, at: int | None = None) -> Session:
        """A new session in the same store, branched at event `at` (default: the latest).

        The fork holds the state as of that event: transcripts, node state, each node's kind
        as it ran (an agent whose kind changed since swaps at its next turn, with a
        `kind_swapped` event), the session's preprocessor and endpoint in force then, each node's
        endpoint in force then (an `agent.model = ...` made after the cut is not the fork's,
        until its agents are given another endpoint after the fork), and the pauses
        pending then (`fork.pending`; a node stopped at one reads `paused`); this session is
        untouched. A fork taken mid-run continues with `fork.resume()`, which asks those
        pauses again first and applies the decisions made before the cut; until then its run, and every other node the cut left in flight,
        is `incomplete`.
        """
        # restore builds a Message and loads httpx at import: loaded to reopen, not to run
        from .restore import fork_session

        return fork_session(self, check_int("at", at, where="session.fork()", optional=True))

    async def _run_through(self, text: str, pause_on: Any, *, settle: bool = True) -> Result:
        """Send `text` and wait for the run's `Result`; with `settle` False, what it reports is
        cut, not committed (see `_run_waiting`)."""
        run = await self._enqueue(text, pause_on)
        try:
            if settle:
                await run.wait_async()
            else:
                await run._stopped()
                if self.journal is not None:
                    self.journal.cut()
        except asyncio.CancelledError:  # the caller gave up (Ctrl-C in run_sync): so does the run
            await run.cancel_and_settle()
            raise
        if run.status == "paused":
            run.cancel()
            raise RunPaused(
                f"the run paused before {run.paused_at}; agent.run() cannot step — "
                "use sn.Session(agent, llm=...).send(...) and run.approve()/resume()"
            )
        return run._result_now()

    async def _enqueue(self, text: str | None, pause_on: Any) -> Run:
        check_str("text", text, where="session.send()", optional=True)
        display = llm_message = None
        if text is not None:
            try:
                display, llm_message = await self._preprocess(user(text))
            except Rejected as refusal:
                name = _preprocessor_name(self._preprocessor)
                self.bus.emit(
                    MessageRefused(path=self.root.path, preprocessor=name, reason=refusal.reason)
                )
                raise
        run = Run(self, len(self.runs) + 1, pause_on=pause_on, message=llm_message, display=display)
        previous = self._tail
        run._task = droppable(asyncio.get_running_loop().create_task(self._execute(run, previous)))
        self._tail = run._task
        self.runs.append(run)
        if self.journal is not None and previous is not None and not previous.done():
            self.journal.queue_changed()  # it waits behind a run in flight: keep it durable
            await self.journal.settled()
        return run

    def queued_runs(self) -> list[Run]:
        """The runs waiting for the one in flight, in order."""
        return [run for run in self.runs if run.status == "queued" and run._task is not None]

    async def _preprocess(self, message: Message) -> tuple[Message, Message]:
        preprocessor = self._preprocessor
        if preprocessor is None:
            return message, message
        from .preprocess import AgentState, PreprocessContext

        context = PreprocessContext(
            agent_id=self.root.path,
            conversation_id=self.id,
            tool_context=self.tool_context,
            state=AgentState(
                agent=self.agent.name,
                status=self.root.status,
                messages=tuple(self.root.history),
                display_messages=tuple(self.root.display or ()),
                turns=self.root.turns,
                usage=self.root.usage,
            ),
            user_state=self.state,
        )
        method = getattr(preprocessor, "preprocess", preprocessor)
        try:
            outcome = method(self.scope, message, context)
            if inspect.isawaitable(outcome):
                outcome = await outcome
            display, llm_message = outcome
        except Rejected:
            raise
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # SystemExit too: user code must not end the loop thread
            raise Rejected(
                f"preprocessor {_preprocessor_name(preprocessor)} failed "
                f"({type(exc).__name__}: {exc}); the message was not sent"
            ) from exc
        if not isinstance(display, Message) or not isinstance(llm_message, Message):
            raise Rejected(
                f"preprocessor {_preprocessor_name(preprocessor)} must return two "
                "sn.Message objects (display, llm)"
            )
        return display, llm_message

    async def _execute(
        self, run: Run, previous: asyncio.Task[Any] | None, *, resume: bool = False
    ) -> None:
        if previous is not None and not previous.done():
            try:
                await asyncio.wait({previous})
            except asyncio.CancelledError:
                run._finish(self._result(run, Outcome("cancelled", "cancelled before it started")))
                if self.journal is not None:
                    self.journal.queue_changed()
                # its place holds until the run before it ends: the runs behind it wait for that
                while not previous.done():
                    try:
                        await asyncio.wait({previous})
                    except asyncio.CancelledError:  # cancelled again: it has ended already
                        continue
                return
        self.current_run = run
        self.bus.run = run.number
        self.run_usage = Usage()
        self.run_model_calls = self.run_nodes = 0
        self.limit_hit = None
        run._started()
        if self.journal is not None:
            self.journal.queue_changed()  # written with the run's start, in one step
        root = self.root
        try:  # from here on the run ends, whatever fails: recording its start too
            if run.message is not None and run.display is not None:
                root.display_swaps[id(run.message)] = run.display
                if self._preprocessor is not None:
                    self.bus.emit(
                        MessagePreprocessed(
                            path=root.path,
                            preprocessor=_preprocessor_name(self._preprocessor),
                            display=run.display,
                            llm=run.message,
                        )
                    )
            actions, tests = split(run.pause_on)
            self.bus.emit(
                RunStarted(
                    path=root.path,
                    agent=self.agent.name,
                    input=run.display.content if run.display else None,
                    pause_on=sorted(actions),
                    breakpoints=stored(tests),
                )
            )
            outcome = await root.run_task(run.message, resume=resume)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            outcome = Outcome("cancelled", "the run was cancelled")
        except BaseException as exc:  # a kind failing before its task began (or the start
            # not recorded): end, never hang
            root.busy = False
            root.emit(ErrorOccurred(error_type=type(exc).__name__, message=str(exc)))
            outcome = Outcome("error", f"{type(exc).__name__}: {exc}")
        self.bus.emit(
            RunFinished(
                path=root.path,
                status=outcome.status,
                text=outcome.text,
                turns=root.task_turns,
                usage=self.run_usage,
            )
        )
        run._finish(self._result(run, outcome))

    def _result(self, run: Run, outcome: Outcome) -> Result:
        log = self.bus.log
        return Result(
            text=outcome.text,
            status=outcome.status,
            turns=self.root.task_turns if run.status != "queued" else 0,
            usage=self.run_usage,
            events=log[run._first :],
            tree=self.tree,
            run=run.number,
            exchanges=run._exchanges(),
            prices=self.prices,
        )

    # used by the runtime

    async def gate(self, node: Node, action: str, **details: Any) -> Decision:
        """Pause before `action` if the current run asks to; return the user's decision."""
        run = self.current_run
        if run is None:
            return APPROVE
        return await run.gate(node, action, details)

    def may_pause(self, node: Node, action: str, name: str | None = None) -> bool:
        """Whether the current run's gate of `action` at `node` (a call of `name`) could pause
        (see `Run.may_pause`): False, and `gate` would approve at once."""
        run = self.current_run
        return run is not None and run.may_pause(node, action, name)

    def child_slots(self, parent: Node) -> asyncio.Semaphore:
        """The semaphore capping how many children of `parent` run at once."""
        slots = self._slots.get(parent.path)
        if slots is None:
            slots = self._slots[parent.path] = asyncio.Semaphore(self.max_parallel)
        return slots

    def add_usage(self, usage: Usage) -> None:
        """Count `usage` towards the current run."""
        self.run_usage = self.run_usage + usage


def resolved(store: Any, *, create: bool) -> Store:
    """`store=` as a store (`_store.resolve`): the store's modules load with the first session
    that names one, not with every run (~8 ms of a first run)."""
    from .._store.resolve import resolve_store

    return resolve_store(store, create=create)
