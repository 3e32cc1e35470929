"""`Run`: the handle of one message's run; thread-safe controls, blocking and awaitable waits."""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import threading
from collections.abc import Generator, Sequence
from time import monotonic
from typing import TYPE_CHECKING, Any

from .._base.checks import check_number, check_str
from .._base.errors import ConfigurationError, RunPaused, SagentsError
from .._base.loop import POLL_SECONDS, call_soon, on_library_thread, settle
from .._base.messages import Message
from ..events import Paused, PausedRequest, Resumed
from .breakpoints import Breakpoint, When, by_action, could_fire, fires, restored, split, stored
from .pausing import APPROVE, Decision, checked_pause_on

if TYPE_CHECKING:
    from ..events import Event
    from .agent import Agent
    from .decisions import PauseKey, StoredPauses
    from .node import Node
    from .pending import PendingAction, PendingRequest
    from .result import Result
    from .session import Session

FINAL = frozenset({"done", "incomplete", "pending", "error", "cancelled"})


class Run:
    """One message's run. Control methods return at once; `wait()` observes their effect.

    `status` is `queued`, `running`, `paused`, or one of `done`, `incomplete`, `pending`,
    `error`, `cancelled`.
    """

    def __init__(
        self,
        session: Session,
        number: int,
        *,
        pause_on: Any = (),
        message: Message | None = None,
        display: Message | None = None,
    ) -> None:
        self.pause_on = checked_pause_on(pause_on, "send()")
        self._actions, self._tests = split(self.pause_on)
        self._tests_at = by_action(self._tests)
        self.until = ()
        self._decided: dict[PauseKey, Decision] = {}
        self._awaiting: set[PauseKey] = set()
        self._ahead: dict[PauseKey, tuple[Decision, str | None]] = {}
        self.session = session
        self.number = number
        self.message = message
        self.display = display
        self.status = "queued"
        self.pending: list[PendingAction] = []
        """The pauses waiting now, oldest first: each decides itself (`pending[1].approve()`)."""
        self._claimed: set[int] = set()  # pause ids decided, their decision not yet carried out
        self._claims = threading.Lock()
        self.mode = "normal"
        self._result: Result | None = None
        self._stop = threading.Event()
        self._finished: concurrent.futures.Future[Result] = concurrent.futures.Future()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._task: asyncio.Task[Any] | None = None
        self._first = 0
        self._last: int | None = None
        self._wire_after: Any = None  # the endpoint's newest exchange as the run started
        self._pause_ids = itertools.count(1)
        self._loop_thread = threading.current_thread()  # made on the loop thread, by `send`

    def __repr__(self) -> str:
        at = f", paused_at={self.paused_at}" if self.paused_at else ""
        return f"Run({self.number}, status={self.status!r}{at})"

    def _ipython_display_(self) -> None:
        from ..notebook import display_live  # the display hook: widgets load when shown

        display_live(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from .static import static_bundle  # `html` and its entity table: for HTML only

        result = self._result
        text = result.text if result else (str(self.paused_at) if self.paused_at else "")
        return static_bundle(self.session.tree, text, self.status)

    # observation

    @property
    def paused_at(self) -> PendingAction | None:
        """The first pending action while paused, else None."""
        return self.pending[0] if self.pending else None

    @property
    def events(self) -> Sequence[Event]:
        """The events of this run so far."""
        log = self.session.bus.log
        return log[self._first : self._last] if self.status != "queued" else []

    @property
    def done(self) -> bool:
        return self.status in FINAL

    def wait(self, timeout: float | None = None) -> str:
        """Block until the run is paused or finished, or `timeout` seconds (wall time) have
        passed; return its status.

        A durable session's events are committed by then (`StoreError` if the store refuses
        them: the run's result stays in memory; `session.flush()` tries again).

        Ctrl-C (a kernel interrupt) during the wait cancels the run, as `cancel()` does
        (dangling tool calls are answered as cancelled), and re-raises `KeyboardInterrupt`.
        """
        try:
            return self._wait(timeout, "run.wait()")
        except KeyboardInterrupt:
            self.cancel()
            settle(self._finished)
            raise

    def _wait(self, timeout: float | None, what: str) -> str:
        if on_library_thread():
            raise ConfigurationError(
                f"{what} would deadlock on sagents_nb's loop thread; use `await run.wait_async()`"
            )
        check_number("timeout", timeout, where=what, optional=True)
        deadline = None if timeout is None else monotonic() + timeout
        left = POLL_SECONDS if timeout is None else timeout
        while not self._stop.wait(min(POLL_SECONDS, max(left, 0.0))):
            if not self._loop_thread.is_alive():
                raise SagentsError(
                    f"run {self.number} is lost: sagents_nb's loop thread stopped while it was "
                    f"{self.status}; send the message again (a new loop thread starts)"
                )
            if deadline is not None:
                left = deadline - monotonic()
                if left <= 0:
                    return self.status
        self.session._settle_here()
        return self.status

    async def wait_async(self) -> str:
        """Await until the run is paused or finished; return its status."""
        await self._stopped()
        journal = self.session.journal
        if journal is not None:  # what it reports is committed before it returns
            await journal.settled()
        if self.session.bus.deliveries:  # and the user's callbacks were handed it
            await asyncio.to_thread(self.session.bus.caught_up)
        return self.status

    async def _stopped(self) -> None:
        """Await until the run is paused or finished, nothing more: `wait_async` then has what
        it reports committed on the loop's side, `Session._settle_here` on a waiting thread."""
        if not self._stop.is_set():
            loop = asyncio.get_running_loop()
            future: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, future))
            if not self._stop.is_set():
                await future

    def result(self, timeout: float | None = None) -> Result:
        """Wait for the end and return the `Result`; a paused run raises `RunPaused`, a run
        still going after `timeout` seconds (wall time) `TimeoutError`.

        Ctrl-C during this wait only stops the wait: the run goes on in the background
        (`run.cancel()` stops it; `run.wait()` and `agent.run_sync()` cancel on Ctrl-C).
        """
        self._wait(timeout, "run.result()")
        return self._result_now()

    def __await__(self) -> Generator[Any, None, Result]:
        yield from self.wait_async().__await__()
        return self._result_now()

    def _result_now(self) -> Result:
        if self._result is not None:
            return self._result
        if self.status == "paused":
            raise RunPaused(
                f"run {self.number} is paused before {self.paused_at}; call "
                "run.approve(), run.step() or run.resume() (or run.reject(reason))"
            )
        raise TimeoutError(f"run {self.number} is still {self.status}")

    # controls (thread-safe)

    def approve(self) -> None:
        """Let the pending action go ahead; keep pausing at the configured points."""
        self._decide(APPROVE, mode="normal")

    def reject(self, reason: str = "rejected by the user") -> None:
        """Refuse the pending action; a tool call's model is told `reason`."""
        check_str("reason", reason, where="run.reject()")
        self._decide(Decision("reject", {"reason": reason}))

    def edit(self, **changes: Any) -> None:
        """Change the pending action, then let it go ahead.

        For a tool call: new argument values (`city="Paris"`) or `arguments={...}` to replace all
        (a dict, or a str of JSON holding an object).
        For a model request: `reply=` (a str or `sn.reply(...)`) instead of calling the model,
        or `messages=[...]` to change the view sent.

        Raises:
            ConfigurationError: `arguments=` is not a JSON object, or `messages=` not a list of
                messages; the run stays paused.
        """
        from .pending import edit_decision  # with the first pause, as the rest of `pending`

        self._decide(edit_decision(changes))

    def step(self, pause_on: Any = None) -> None:
        """Approve, and pause again before the very next action of any kind; with `pause_on`
        (as `send` takes it: `"tool"`, `sn.when(...)`, a callable), at the next action that
        breakpoint matches instead (the run's own breakpoints still hold; any pause ends it)."""
        if pause_on is None:
            self._decide(APPROVE, mode="step")
        else:
            checked = checked_pause_on(pause_on, "run.step()")
            until = tuple(When(action=b) if isinstance(b, str) else b for b in checked)
            self._decide(APPROVE, mode="normal", until=until)

    def resume(self) -> None:
        """Approve, and run to the end without pausing again."""
        self._decide(APPROVE, mode="free")

    def cancel(self) -> None:
        """Stop the run and its children; dangling tool calls are answered as cancelled.

        A queued run ends `cancelled` without starting; the runs behind it keep their places
        behind the run in flight."""
        if self.status == "paused":
            self._stop.clear()
        call_soon(self._cancel_on_loop)

    def _decide(
        self, decision: Decision, mode: str | None = None, until: tuple[Any, ...] = ()
    ) -> None:
        """Decide `paused_at`: the first pause not decided yet (the first to come, if none is
        waiting now)."""
        with self._claims:
            first = next((p for p in list(self.pending) if p.id not in self._claimed), None)
            if first is not None:
                self._claimed.add(first.id)
        self._send_decision(first, decision, mode, until)

    def _decide_pause(self, pending: PendingAction, decision: Decision, mode: str | None) -> None:
        """Decide `pending` (`PendingAction.approve()` and the others come here)."""
        with self._claims:
            # a copy: the loop thread may be changing the list
            waiting = pending.id not in self._claimed and any(
                p is pending for p in list(self.pending)
            )
            if waiting:
                self._claimed.add(pending.id)
        if not waiting:
            raise ConfigurationError(
                f"pause {pending.id} ({pending}) was already decided; nothing was done "
                f"(run {self.number}.pending lists the pauses waiting now)"
            )
        self._send_decision(pending, decision, mode)

    def _send_decision(
        self,
        pending: PendingAction | None,
        decision: Decision,
        mode: str | None,
        until: tuple[Any, ...] = (),
    ) -> None:
        if self.status == "paused":
            self._stop.clear()
        call_soon(self._decide_on_loop, decision, mode, pending, until)

    # on the library loop

    def _decide_on_loop(
        self,
        decision: Decision,
        mode: str | None,
        chosen: PendingAction | None = None,
        until: tuple[Any, ...] = (),
    ) -> None:
        if mode is not None:
            self.mode = mode
            self.until = until
        if chosen is not None:
            self._claimed.discard(chosen.id)
        if chosen is not None and chosen in self.pending:
            pending = chosen
        elif chosen is None and self.pending:
            pending = self.pending[0]  # came since the call: the first to come, as before
        else:  # ended meanwhile (cancelled, resumed to the end)
            if self.status == "paused" or self.done:
                self._signal_stop()
            return
        self.pending.remove(pending)
        changed = sorted(decision.changes) if decision.kind == "edit" else None
        self._end_pause(pending, decision.kind, decision.changes.get("reason"), changed, decision)
        if pending.future is not None and not pending.future.done():
            pending.future.set_result(decision)
        if mode == "free":
            others, self.pending = self.pending, []
            for other in others:
                self._end_pause(other, "approve", "resumed to the end")
                if other.future is not None and not other.future.done():
                    other.future.set_result(APPROVE)
        with self._claims:
            # a pause whose decision is already on its way here is not one to stop for: a
            # wait woken now would return while the run is about to go on
            undecided = [p for p in self.pending if p.id not in self._claimed]
        if undecided:
            self._signal_stop()
        elif not self.pending:
            self._set_status("running")

    @property
    def until(self) -> tuple[Breakpoint, ...]:
        """The breakpoints of `step(pause_on=...)`, until the run next pauses."""
        return self._until

    @until.setter
    def until(self, tests: tuple[Breakpoint, ...]) -> None:
        self._until = tests
        self._until_at = by_action(tests)

    def _tests_for(self, agent: Agent, action: str) -> tuple[Breakpoint, ...]:
        """The predicates that could fire at `action` of `agent`'s nodes, in the order asked."""
        return self._tests_at[action] + agent.pause_tests_at[action] + self._until_at[action]

    def _cancel_on_loop(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def cancel_and_settle(self) -> None:
        """Cancel the run and wait until it has ended (on the library loop)."""
        self._cancel_on_loop()
        if self._task is not None and not self._task.done():
            # a queued run ends at once, though its task keeps its place behind the run in flight
            ended = asyncio.wrap_future(self._finished)
            await asyncio.wait({self._task, ended}, return_when=asyncio.FIRST_COMPLETED)

    def restore_pauses(self, stored: StoredPauses) -> None:
        """Go on from a cut run's stored pauses: its mode, its pending pauses (asked again at
        their gates) and its decisions (applied at theirs, never asked again)."""
        self.mode = stored.mode
        self.until = tuple(restored(stored.until))
        self._pause_ids = itertools.count(stored.next_id)
        self._decided = dict(stored.decided)
        from .decisions import pause_key  # with the first restored run, not with every run

        self._awaiting = {pause_key(p.path, p.action, p.call_id) for p in stored.pending}
        self._ahead = dict(stored.ahead)

    async def gate(self, node: Node, action: str, details: dict[str, Any]) -> Decision:
        """The decision about `action` of `node`: one stored before a cut, else the user's at a
        pause if a breakpoint matches, else approval."""
        if self._decided or self._awaiting:  # a restored run's (`restore_pauses`)
            from .decisions import pause_key

            key = pause_key(node.path, action, details.get("call_id"))
            decision = self._decided.pop(key, None)
            if decision is not None:
                return decision
            if key in self._awaiting:
                self._awaiting.discard(key)
                return await self.pause(node, action, ahead=self._ahead.pop(key, None), **details)
        if not self.should_pause(node, action, details):
            return APPROVE
        return await self.pause(node, action, **details)

    def should_pause(self, node: Node, action: str, details: dict[str, Any] | None = None) -> bool:
        mode = self.mode
        if mode == "free":
            return False
        if mode == "step" and action != "reply":  # a reply pauses only where a breakpoint says
            return True
        agent = node.agent
        if action in self._actions or action in agent.pause_on:
            return True
        tests = self._tests_for(agent, action)
        if not tests:
            return False
        path, name = node.path, (details or {}).get("name")
        tests = tuple(test for test in tests if could_fire(test, action, path, name))
        if not tests:
            return False
        from .pending import PendingAction  # with the first predicate asked

        pending = PendingAction(0, action, node.path, **(details or {}))
        return any(fires(test, pending) for test in tests)

    def may_pause(self, node: Node, action: str, name: str | None = None) -> bool:
        """Whether the gate of `action` at `node` (a call of `name`) could pause (or apply a
        stored decision); False lets the caller skip the gate, and what only a pause shows
        (the model request)."""
        if self._decided or self._awaiting:
            return True
        mode = self.mode
        if mode == "free":
            return False
        if mode == "step" and action != "reply":
            return True
        agent = node.agent
        if action in self._actions or action in agent.pause_on:
            return True
        if not (self._tests or agent.pause_tests or self._until):
            return False
        # `_tests_for`, inline: most gates of a run with predicates end here
        tests = self._tests_at[action] + agent.pause_tests_at[action] + self._until_at[action]
        if not tests:
            return False
        path = node.path
        for test in tests:  # a loop, not `any(...)`: most gates here have one test
            if could_fire(test, action, path, name):
                return True
        return False

    async def pause(
        self,
        node: Node,
        action: str,
        ahead: tuple[Decision, str | None] | None = None,
        **details: Any,
    ) -> Decision:
        """Wait at a pause for its decision (`ahead`: one taken before `resume()` asked it
        again, recorded and applied at once)."""
        from .pending import PendingAction  # with the first pause

        future: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        pending = PendingAction(
            next(self._pause_ids),
            action,
            node.path,
            future=future,
            decide=self._decide_pause,
            **details,
        )
        self.until = ()  # a step to a breakpoint ends at any pause
        self.pending.append(pending)
        previous = node.status
        node.set_status("paused", str(pending))
        node.waiting_below(pending.path, str(pending))
        self.session.bus.emit(
            Paused(
                path=node.path,
                pause_id=pending.id,
                action=action,
                name=pending.name,
                call_id=pending.call_id,
                arguments=pending.arguments,
                request=_shown(pending.request),
            )
        )
        if ahead is not None:
            self._decide_on_loop(ahead[0], ahead[1], pending)
        else:
            self._set_status("paused")
            with self._claims:
                # decided already (from another thread, as soon as it was pending): its
                # decision is on its way here, and a wait woken now would return "running"
                if pending.id not in self._claimed:
                    self._signal_stop()
        try:
            decision = await future
        finally:
            if pending in self.pending:  # cancelled at the pause: no decision removed it
                self.pending.remove(pending)
                self._end_pause(pending, "cancelled", "the run stopped at this pause")
        node.set_status(previous if previous != "paused" else "running")
        node.waiting_below(pending.path, None)
        return decision

    def _end_pause(
        self,
        pending: PendingAction,
        decision: str,
        reason: str | None,
        changed: list[str] | None = None,
        made: Decision | None = None,
    ) -> None:
        # Every pause that ends says so in the event stream: views clear it on this event alone.
        # It keeps the decision's changes and the run's mode, so a cut run goes on as decided.
        self.session.bus.emit(
            Resumed(
                path=pending.path,
                pause_id=pending.id,
                decision=decision,
                reason=reason,
                changed=changed,
                changes=made.stored() if made is not None and made.kind == "edit" else None,
                mode=self.mode,
                until=stored(self.until) or None,
            )
        )

    def _set_status(self, status: str) -> None:
        self.status = status

    def _signal_stop(self) -> None:
        self._stop.set()
        waiters, self._waiters = self._waiters, []
        running = asyncio._get_running_loop()
        for loop, future in waiters:
            if loop is running:  # its own loop: no wake-up through the loop's socket
                loop.call_soon(_settle, future)
            else:
                loop.call_soon_threadsafe(_settle, future)

    def _started(self) -> None:
        self._first = len(self.session.bus.log)
        wire = getattr(self.session.llm, "exchanges", None)
        self._wire_after = wire[-1] if wire else None
        self._set_status("running")

    def _exchanges(self) -> tuple[Any, ...]:
        """The session endpoint's exchanges since this run started, as many as its log keeps."""
        wire = list(getattr(self.session.llm, "exchanges", ()))
        for index in range(len(wire) - 1, -1, -1):
            if wire[index] is self._wire_after:
                return tuple(wire[index + 1 :])
        return tuple(wire)

    def _finish(self, result: Result) -> None:
        self._result = result
        self._last = len(self.session.bus.log)
        for pending in self.pending:
            if pending.future is not None and not pending.future.done():
                pending.future.cancel()
        self.pending.clear()
        self.status = result.status
        self._finished.set_result(result)
        self._signal_stop()


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _shown(request: PendingRequest | None) -> PausedRequest | None:
    """The request at a pause as its event records it (tools by name: their schemas are code)."""
    if request is None:
        return None
    return PausedRequest(
        messages=request.messages,
        model=request.model,
        tools=[tool.get("function", tool).get("name", "?") for tool in request.tools],
        tool_choice=request.tool_choice,
        endpoint=request.endpoint,
        tokens=request.tokens,
    )
