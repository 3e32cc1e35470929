"""What a view watches: a live session (and the run its buttons control) or a finished result."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .. import Agent, Result, Run, Session, kinds
from .._base.loop import on_library_thread, run_sync
from .._runtime.agent import member_agent
from .._runtime.restore import collector_paused
from .._runtime.resume import interrupted_run
from ..events import Event, RunFinished
from ._projector import Projector
from ._replay import FOLD_AT_ONCE, Replay


class Target:
    """The object behind a view.

    Args:
        obj: a `sn.Session`, `sn.Run` or `sn.Result`.
    """

    def __init__(self, obj: Session | Run | Result) -> None:
        self.session: Session | None = None
        self.run: Run | None = None
        self.result: Result | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self.replay: Replay | None = None
        """A long stored log being folded after the first paint (`attach`), until it is."""
        self._merged: tuple[Any, list[Any]] | None = None
        """The exchanges of several endpoints merged, with the state of the logs they are of."""
        if isinstance(obj, Session):
            self.session = obj
        elif isinstance(obj, Run):
            self.session, self.run = obj.session, obj
        elif isinstance(obj, Result):
            self.result = obj
        else:
            raise TypeError(
                f"sagents_nb.notebook.view() shows a sn.Session, sn.Run or sn.Result, "
                f"not {type(obj).__name__}"
            )
        self.obj = obj
        self.prices = (
            self.session.prices if self.session else self.result.prices if self.result else None
        )
        """What the view prices model calls with (the session's `prices=` over the table)."""

    @property
    def scope(self) -> int | None:
        """The run number a run's view shows and controls only (None: a session's view, which
        follows its latest run)."""
        return self.run.number if self.run is not None else None

    def later(self, projector: Projector) -> dict[str, Any] | None:
        """The newest run after a run's view's own, and where to follow it (None if none)."""
        if not projector.later:
            return None
        number = max(projector.later)
        status = projector.later[number]
        verb = "follows" if status in ("running", "paused") else "shows"
        return {
            "number": number,
            "status": status,
            "text": f"run {number} is {status}: view(session) {verb} it",
        }

    @property
    def live(self) -> bool:
        """Whether the view follows a session (and so has controls)."""
        return self.session is not None

    def title(self) -> str:
        if self.result is not None:
            return f"result of run {self.result.run}"
        assert self.session is not None
        where = f"session {self.session.id} · {self.session.agent.name}"
        return f"run {self.run.number} of {where}" if self.run is not None else where

    def attach(
        self,
        projector: Projector,
        on_change: Callable[[], None],
        on_end: Callable[[], None],
    ) -> None:
        """Replay what happened so far into `projector`, then queue new events in its inbox,
        calling `on_change` after each, and `on_end` instead after a run's `run_finished`.

        For a session, replay and subscription happen together on the library loop, where
        the runtime emits, so no event is missed or counted twice. A session's log of more
        than `FOLD_AT_ONCE` events is folded afterwards (`replay`, stepped by the view): the
        projector holds the tree snapshot until then.
        """
        if self.result is not None:
            projector.fold_all(list(self.result.events))
            projector.apply_tree(self.result.tree)
            return
        session = self.session
        assert session is not None

        receive = projector.receive

        def listen(event: Event) -> None:
            receive(event)
            if type(event) is RunFinished:
                on_end()
            else:
                on_change()

        def start() -> None:
            with collector_paused():  # a long session's objects, walked again and again
                stored, tree = session.events[:], session.tree
                # a run's view folds at once: the tree snapshot is the session's now
                if len(stored) > FOLD_AT_ONCE and self.run is None:
                    self.replay = Replay(projector, stored, tree, self._settle_cut_runs)
                else:
                    projector.fold_all(list(stored))
                    projector.apply_tree(tree)
                    self._settle_cut_runs(projector)
            # on the loop, as it folds; the statuses are in the replay already
            self._unsubscribe = session.bus.subscribe(listen, statuses=False)

        if on_library_thread():
            start()
        else:

            async def start_on_loop() -> None:
                start()

            run_sync(start_on_loop(), what="sagents_nb.notebook.view()")

    def _settle_cut_runs(self, projector: Projector) -> None:
        """A reopened or forked session's run cut mid-way has no `run_finished` in its log;
        its `Run` says how it stands (`incomplete`), and the view says the same; the pauses
        it was cut at stay, as waiting for `session.resume()`."""
        assert self.session is not None
        for run in self.session.runs:
            state = projector.runs.get(run.number)
            if run.done and run._result is not None and state is not None:
                if state.status in ("running", "paused"):
                    projector.run_cut(
                        run.number, run.status, run._result.text, self.stored_pauses(run.number)
                    )

    def stored_pauses(self, number: int) -> set[int]:
        """The ids of the pauses run `number` was cut at that `session.resume()` asks again
        (`session.pending` of a reopened or forked session)."""
        stored = self.session.stored_pauses if self.session is not None else None
        if stored is None or stored.run != number:
            return set()
        return {pending.id for pending in stored.pending}

    def resumable(self) -> bool:
        """Whether the session has a cut run that `session.resume()` continues (a fork taken
        mid-run, or a session reopened after its process stopped)."""
        session = self.session
        if session is None or any(not run.done for run in session.runs):
            return False
        started = interrupted_run(session)
        if self.run is not None:  # a run's view continues its own run only
            return started is not None and started.run == self.run.number
        return bool(session.stored_queue) or started is not None

    def detach(self) -> None:
        """Stop following the session."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def control_run(self) -> Run | None:
        """The run the buttons act on: the view's own run, else the session's unfinished one."""
        if self.run is not None:
            return self.run
        if self.session is None or not self.session.runs:
            return None
        for run in reversed(self.session.runs):
            if run.status in ("running", "paused"):
                return run
        return self.session.runs[-1]

    def exchanges(self) -> Any:
        """The exchange log of every endpoint the tree uses (a result's own, None when it kept
        none): the session's,
        those it had before a swap and those set on agents (`agent.model = sn.mock_llm(...)`),
        merged in time order when there is more than one."""
        session = self.session
        if session is None:
            kept = self.result.exchanges if self.result is not None else ()
            return kept or None
        endpoints = {id(session.llm): session.llm}
        for _, what, old, new in session.swaps:
            if what == "llm":
                endpoints.setdefault(id(old), old)
                endpoints.setdefault(id(new), new)
        for agent in self.agents():
            model = agent.model
            if model is not None and not isinstance(model, str):
                endpoints.setdefault(id(model), model)
        logs = [log for llm in endpoints.values() if (log := getattr(llm, "exchanges", None))]
        if len(logs) <= 1:
            return logs[0] if logs else getattr(session.llm, "exchanges", ())
        # the same list while no log changed, so that the wire pane is rebuilt only then
        key = tuple((id(log), len(log), id(log[-1]), log[-1].status) for log in logs)
        if self._merged is None or self._merged[0] != key:
            merged = sorted((e for log in logs for e in log), key=lambda exchange: exchange.ts)
            self._merged = (key, merged)
        return self._merged[1]

    def agents(self) -> Iterator[Agent]:
        """Every agent spec in the session's tree, each once."""
        if self.session is None:
            return
        seen: set[int] = set()
        stack = [self.session.agent]
        while stack:
            agent = stack.pop()
            if id(agent) in seen:
                continue
            seen.add(id(agent))
            yield agent
            stack.extend(member_agent(member) for member in reversed(agent.team))

    def agent(self, name: str) -> Agent | None:
        """The agent spec called `name`."""
        return next((a for a in self.agents() if a.name == name), None)

    def agent_kinds(self, held: list[tuple[Agent, Any]] | None = None) -> dict[str, str]:
        """The kind each agent will run with next (children default to `worker`); `held`:
        each agent with its kind, read before (`agents_with_kinds`)."""
        if self.session is None:
            return {}
        top = self.session.agent
        return {
            agent.name: kinds.kind_name(kind)
            if kind is not None
            else ("main" if agent is top else "worker")
            for agent, kind in (self.agents_with_kinds() if held is None else held)
        }

    def agents_with_kinds(self) -> list[tuple[Agent, Any]]:
        """Every agent spec in the session's tree, each with the kind it holds now."""
        return [(agent, agent.kind) for agent in self.agents()]
