"""`Session`: a live conversation with one agent tree, the object a notebook keeps across cells."""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._base.errors import ConfigurationError, Rejected, RunPaused
from .._base.ids import new_session_id
from .._base.loop import block_on, run_on_library_loop, submit
from .._base.messages import Message, Usage
from .._base.outcome import Outcome
from .._endpoints.openai import LLM
from .._store.protocol import StoredSession
from .._store.resolve import resolve_store
from ..events import (
    Event,
    LLMSwapped,
    MessagePreprocessed,
    PreprocessorSwapped,
    RunFinished,
    RunStarted,
)
from ..kinds import Main, Worker
from .bus import EventBus
from .node import Node, default_token_counter
from .pausing import APPROVE, Decision
from .preprocess import PreprocessContext, preprocessor_name
from .result import Result, TreeNode
from .run import Run

if TYPE_CHECKING:
    from .._store.journal import Journal
    from .._store.protocol import Store
    from .agent import Agent


class Session:
    """A live conversation with one agent tree.

    Args:
        agent: the top agent.
        llm: the endpoint (`sn.mock_llm(...)`, `sn.script(...)`, `sn.LLM(...)`); defaults to
            `sn.LLM()` from `OPENAI_BASE_URL` / `OPENAI_API_KEY`.
        scope: passed to the preprocessor as its first argument.
        preprocessor: makes the display and LLM versions of each user message.
        store: makes the session durable: a file path (SQLite, created if missing) or a
            `sn.Store`; every event, both transcripts and each node's state are written as
            they happen. `session.store` is then that `Store`; `session.flush()` commits now.
        hooks: tool hooks applied to every agent in the tree.
        max_depth: how deep delegation may go.
        max_parallel: children of one parent running at once.
        reattach: how long a repeated `task(agent, prompt)` returns the earlier child's result
            instead of running again: `"run"` (default) within one message's run, so a new
            message does new work; `"session"` for the session's life (toolnexus's durable
            semantics). An interrupted run resumed with `session.resume()` reattaches either way.
        token_counter: `count(message) -> int`; an estimate by default.
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
        token_counter: Callable[[Message], int] | None = None,
        state: dict[str, Any] | None = None,
        tool_context: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> None:
        self.id = session_id or new_session_id()
        self.agent = agent
        self._llm = llm if llm is not None else LLM()
        self.scope = scope
        self._preprocessor = preprocessor
        self.journal: Journal | None = None
        """Records this session into its store (None when the session is not durable)."""
        self.hooks = list(hooks)
        if reattach not in ("run", "session"):
            raise ConfigurationError(
                f'reattach must be "run" (a new message does new work) or "session" (a repeated '
                f"task returns its earlier result for the session's life), not {reattach!r}"
            )
        self.reattach = reattach
        self.max_depth = max_depth
        self.max_parallel = max_parallel
        self.token_counter = token_counter or default_token_counter
        self.state = state if state is not None else {}
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
        self._slots: dict[str, asyncio.Semaphore] = {}
        if store is not None:
            from .._store.journal import Journal

            self.journal = Journal(
                self, resolve_store(store, create=True), fresh_id=session_id is None
            )

    def __repr__(self) -> str:
        return (
            f"Session({self.id!r}, agent={self.agent.name!r}, runs={len(self.runs)}, "
            f"llm={self._llm!r})"
        )

    def _ipython_display_(self) -> None:
        from ..notebook import display_live

        display_live(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from .static import static_bundle

        last = self.runs[-1] if self.runs else None
        result = last._result if last else None
        return static_bundle(
            self.tree, result.text if result else "", last.status if last else "idle"
        )

    # what a notebook reads

    @property
    def events(self) -> list[Event]:
        """The session's whole event log."""
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

    def node(self, path: str) -> Node | None:
        """The live node at `path` (for inspection)."""
        return self.root.find(path)

    # hot-swappable parts

    @property
    def preprocessor(self) -> Any:
        return self._preprocessor

    @preprocessor.setter
    def preprocessor(self, value: Any) -> None:
        old, self._preprocessor = self._preprocessor, value
        self.bus.emit(
            PreprocessorSwapped(
                path=self.root.path, old=preprocessor_name(old), new=preprocessor_name(value)
            )
        )

    @property
    def llm(self) -> LLM:
        return self._llm

    @llm.setter
    def llm(self, value: LLM) -> None:
        old, self._llm = self._llm, value
        self.bus.emit(LLMSwapped(path=self.root.path, old=old.label, new=value.label))

    # following events

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Call `callback(event)` for every event from now on (current statuses first).

        The callback runs on the library's loop thread; returns a function that unsubscribes.
        """
        return self.bus.subscribe(callback)

    def stream(self) -> AsyncIterator[Event]:
        """`async for event in session.stream()`: events as they happen."""
        return self.bus.stream()

    # sending

    def send(self, text: str, *, pause_on: Iterable[str] = ()) -> Run:
        """Send a user message; returns its `Run` at once (queued behind a run in flight).

        Raises `sn.Rejected` if the preprocessor refuses the message (nothing is added).
        """
        return block_on(submit(self._enqueue(text, pause_on)), what="session.send()")

    async def send_async(self, text: str, *, pause_on: Iterable[str] = ()) -> Run:
        """`send` for async code."""
        return await run_on_library_loop(self._enqueue(text, pause_on))

    def retry(self, *, pause_on: Iterable[str] = ()) -> Run:
        """Run the top agent again from its current transcript (e.g. after an endpoint error)."""
        return block_on(submit(self._enqueue(None, pause_on)), what="session.retry()")

    async def run(self, text: str, *, pause_on: Iterable[str] = ()) -> Result:
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
        A run the interruption cut short shows as `incomplete`; `session.resume()` continues it.

        Raises:
            StoreError: no such file, not a sagents_nb store, an unknown id (the error lists the
                ids there are), or a store written by an incompatible version.
        """
        from .restore import open_session, reopening_endpoint

        options["llm"] = reopening_endpoint(llm)
        return open_session(cls, store, session_id, agent, options)

    @staticmethod
    def list_stored(store: Any) -> list[StoredSession]:
        """The sessions in `store` (a path or `sn.Store`); forks name their parent and seq."""
        return resolve_store(store, create=False).sessions()

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
        from .jsonl import import_jsonl
        from .restore import reopening_endpoint

        options["llm"] = reopening_endpoint(llm)
        target = resolve_store(store, create=True)
        return import_jsonl(cls, path, target, agent, session_id, options)

    def export_jsonl(self, path: str | os.PathLike[str]) -> Path:
        """Write this durable session (events, transcripts, node state) to `path` as JSON lines."""
        from .jsonl import export_jsonl

        return export_jsonl(self, path)

    def resume(self, *, pause_on: Iterable[str] = ()) -> Run:
        """Continue the run an interruption (a crash, a kernel restart) left unfinished.

        It goes on from the last committed step: finished tool turns are not redone, settled
        children are reattached by their task key, a child cut mid-task continues from its own
        last step. Returns the `Run` at once, like `send`.
        """
        from .resume import enqueue_resume

        return block_on(submit(enqueue_resume(self, pause_on)), what="session.resume()")

    def fork(self, at: int | None = None) -> Session:
        """A new session in the same store, branched at event `at` (default: the latest).

        The fork holds the transcripts and node state as of that event, and uses this
        session's agent kinds, preprocessor and endpoint as they are now; this session is
        untouched. A fork taken mid-run continues with `fork.resume()`.
        """
        from .restore import fork_session

        return fork_session(self, at)

    async def _run_through(self, text: str, pause_on: Iterable[str]) -> Result:
        run = await self._enqueue(text, pause_on)
        await run.wait_async()
        if run.status == "paused":
            run.cancel()
            raise RunPaused(
                f"the run paused before {run.paused_at}; agent.run() cannot step — "
                "use sn.Session(agent, llm=...).send(...) and run.approve()/resume()"
            )
        return run._result_now()

    async def _enqueue(self, text: str | None, pause_on: Iterable[str]) -> Run:
        display = llm_message = None
        if text is not None:
            display, llm_message = await self._preprocess(Message(role="user", content=text))
        run = Run(self, len(self.runs) + 1, pause_on=pause_on, message=llm_message, display=display)
        previous = self._tail
        run._task = asyncio.get_running_loop().create_task(self._execute(run, previous))
        self._tail = run._task
        self.runs.append(run)
        return run

    async def _preprocess(self, message: Message) -> tuple[Message, Message]:
        preprocessor = self._preprocessor
        if preprocessor is None:
            return message, message
        context = PreprocessContext(
            agent_id=self.root.path,
            conversation_id=self.id,
            tool_context=self.tool_context,
            state=self.state,
        )
        method = getattr(preprocessor, "preprocess", preprocessor)
        try:
            outcome = method(self.scope, message, context)
            if inspect.isawaitable(outcome):
                outcome = await outcome
            display, llm_message = outcome
        except Rejected:
            raise
        except Exception as exc:
            raise Rejected(
                f"preprocessor {preprocessor_name(preprocessor)} failed "
                f"({type(exc).__name__}: {exc}); the message was not sent"
            ) from exc
        if not isinstance(display, Message) or not isinstance(llm_message, Message):
            raise Rejected(
                f"preprocessor {preprocessor_name(preprocessor)} must return two "
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
                return
        self.current_run = run
        self.bus.run = run.number
        self.run_usage = Usage()
        run._started()
        root = self.root
        if run.message is not None and run.display is not None:
            root.display_swaps[id(run.message)] = run.display
        if run.message is not None and run.display is not None and self._preprocessor is not None:
            self.bus.emit(
                MessagePreprocessed(
                    path=root.path,
                    preprocessor=preprocessor_name(self._preprocessor),
                    display=run.display,
                    llm=run.message,
                )
            )
        self.bus.emit(
            RunStarted(
                path=root.path,
                agent=self.agent.name,
                input=run.display.content if run.display else None,
            )
        )
        try:
            outcome = await root.run_task(run.message, resume=resume)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            outcome = Outcome("cancelled", "the run was cancelled")
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
        )

    # used by the runtime

    async def gate(self, node: Node, action: str, **details: Any) -> Decision:
        """Pause before `action` if the current run asks to; return the user's decision."""
        run = self.current_run
        if run is None or not run.should_pause(node, action):
            return APPROVE
        return await run.pause(node, action, **details)

    def child_slots(self, parent: Node) -> asyncio.Semaphore:
        """The semaphore capping how many children of `parent` run at once."""
        slots = self._slots.get(parent.path)
        if slots is None:
            slots = self._slots[parent.path] = asyncio.Semaphore(self.max_parallel)
        return slots

    def add_usage(self, usage: Usage) -> None:
        """Count `usage` towards the current run."""
        self.run_usage = self.run_usage + usage
