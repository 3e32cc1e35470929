"""`LiveView`: the anywidget that shows a session, run or result, live, with its controls."""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

try:
    import anywidget
    import traitlets
except ImportError as exc:  # pragma: no cover - both ship with sagents_nb's dependencies
    raise ImportError(
        "sagents_nb.notebook needs anywidget and ipywidgets: pip install anywidget ipywidgets"
    ) from exc

from .. import kinds
from .._base.loop import call_soon, run_sync
from .._runtime.preprocess import preprocessor_name
from ._controls import handle_message
from ._export import show
from ._offline import static_output
from ._panes import Focus, pane_state
from ._projector import Projector
from ._render import compact_json
from ._search import SearchIndex, search_state
from ._state import PendingState
from ._target import Target
from ._throttle import Throttle
from ._timing_pane import TimingStamp
from ._tree import Tree, TreeAsk
from ._view_module import STATIC, view_module

if TYPE_CHECKING:
    from .. import Result, Run, Session
    from .._base.messages import Message
    from ..events import Event

MESSAGES_EDITABLE = 40
"""A model pause's card offers its request's last messages for editing, this many at most
(`pending.edit(messages=...)` from Python edits any)."""

WARM_SLICE = 0.02
"""Seconds of indexing for the search between two turns of the library loop."""


class LiveView(anywidget.AnyWidget):
    """A live view of a session, run or result: the delegation tree, panes for the selected node,
    and controls (step, resume, cancel, decisions at a pause, kind and preprocessor hot-swaps).

    Events are queued as they happen, folded into view state in batches and pushed to the front
    end at most `rate` times a second, always including the last state (a run's end at once,
    as it happens). Build one with
    `sagents_nb.notebook.view`.

    Args:
        obj: a `sn.Session`, `sn.Run` or `sn.Result`.
        preprocessors: named preprocessors the session's selector offers, besides `none` and
            every one the session has had.
        rate: front-end updates per second at most.
    """

    # The text, not the paths (the shell and its pane modules joined by `_view_module`): for a
    # path anywidget connects a closure over each widget to the file's change signal, which keeps
    # every widget (and its session) alive for good (the upstream report is in ARCHITECTURE.md).
    _esm = view_module()
    _css = (STATIC / "view.css").read_text(encoding="utf-8")

    header = traitlets.Dict().tag(sync=True)
    """The title, the controlled run, pending pauses, selector options and the latest notice."""
    tree = traitlets.Dict().tag(sync=True)
    """The delegation tree's rows, nested (`_tree.Tree.state`): a node with many children lists
    a page of them and an aggregate row for the rest."""
    found = traitlets.Dict().tag(sync=True)
    """What the search box found (`_search.search_state`): a page of matching events."""
    pane = traitlets.Unicode("{}").tag(sync=True)
    """The selected node's pane (transcript, context, tools, compaction, wire or events), as JSON
    text: it can be large, and ipywidgets walks dict and list state for binary buffers on every
    send, which costs a run more than encoding it once."""

    def __init__(
        self,
        obj: Session | Run | Result,
        *,
        preprocessors: dict[str, Any] | None = None,
        rate: float = 10.0,
    ) -> None:
        self.target = Target(obj)
        self.projector = Projector(scope=self.target.scope)
        self.projector.prices = self.target.prices
        self.focus = Focus()
        self.preprocessors = dict(preprocessors or {})
        self.kinds_seen: dict[str, dict[str, Any]] = {}
        """Kind objects each agent has had, by name, to switch back to."""
        self.forks: list[Session] = []
        """Sessions forked from this view's `Fork here` buttons, oldest first."""
        self.fork_views: list[LiveView] = []
        """Their live views, shown below this one (`forks[i]` is `fork_views[i]`'s session)."""
        self._fork_seqs: list[int] = []
        self.fork_diffs: dict[int, dict[str, Any]] = {}
        """`sn.diff(origin, fork).to_dict()` of each fork compared with its origin, by index."""
        self.display_id = f"sagents-view-{uuid.uuid4().hex}"
        """The display id of the view's static output (the same one each time it is shown)."""
        self.published: str | None = None
        """The static HTML last displayed, to update it only when it changed."""
        self._notice: dict[str, Any] = {"id": 0, "text": "", "error": False}
        self._kind_choices: tuple[Any, Any] = (None, None)
        """The kind selector's state last made (`_kind_state`), with the registry and the
        agents and their kinds it was made of."""
        self._json_cache: dict[int, str] = {}
        self._pane_stamp: tuple[Any, ...] | None = None
        self._tree: tuple[tuple[Any, ...], dict[str, Any]] = ((), {})
        self._tree_rows = Tree()
        self._search = SearchIndex()
        self._found: tuple[tuple[Any, ...], dict[str, Any]] = ((), {})
        self._timing_stamp = TimingStamp()
        self._ready = False
        self._closed = False
        self._rate = rate
        self._throttle = Throttle(self._push, rate=rate)
        self.target.attach(self.projector, self._throttle.request, self._throttle.request_at_once)
        if self.target.replay is not None:
            self._fold_stored()
        elif self.projector.events:  # a new session's view has nothing to index yet
            self._warm_search(len(self.projector.events))
        header, tree, pane, found = self._render()
        self._throttle.count_call()  # the initial state is the first update
        super().__init__(header=header, tree=tree, pane=pane or "{}", found=found)
        self.on_msg(self._on_message)
        # From here on only the library loop thread changes this widget's traits.
        self._ready = True
        # events the initial state missed, or costs waiting for the price table: their
        # pushes, asked for before now, were dropped
        if self.projector.inbox or self._tree_rows.waiting:
            self._throttle.request()

    def __repr__(self) -> str:
        return f"LiveView({self.target.title()})"

    def add_traits(self, **traits: Any) -> None:
        """Add `traits` as traitlets does (a subclass with them), but make that subclass once:
        anywidget adds the same ones (`_esm`, `_css`, `_anywidget_id`) to every view, and a
        class per view costs most of its making."""
        cls = type(self)
        made = _WITH_TRAITS.get(cls)
        if made is None or made[0] != traits.keys():
            super().add_traits(**traits)
            _WITH_TRAITS[cls] = (traits.keys(), type(self))
            return
        self.__class__ = made[1]
        for name in traits:
            getattr(made[1], name).instance_init(self)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        # Front ends without widgets (nbviewer, GitHub, consoles) pick the static rendering.
        return {**data, **static_output(self)}, metadata

    def _ipython_display_(self) -> None:
        # Under a display id, so that the static rendering saved with the notebook can be
        # brought up to date after later cells (a run outlives the cell that showed it).
        bundle = self._repr_mimebundle_()
        if bundle is not None:
            show(self, *bundle)

    # used by the controls

    def refresh(self, *, now: bool = False) -> None:
        """Push the current state soon (from any thread); `now`: without waiting for the rate
        limit (the answer to a click)."""
        if now:
            self._throttle.request_now()
        else:
            self._throttle.request()

    def flush(self) -> None:
        """Push the newest state now, and wait for it: e.g. right after a run, instead of the
        update that follows within 1/rate (from any thread but the library loop's own). At
        once when the last update is done and nothing was asked for since: no event, click,
        `refresh()` or `notify()` (a run's end is pushed as it happens)."""
        if self._throttle.settled:
            return

        async def push() -> None:
            self._throttle.call()

        run_sync(push(), what="view.flush()")

    def notify(self, text: str, *, error: bool = False) -> None:
        """Show `text` in the view's notice line."""
        self._notice = {"id": self._notice["id"] + 1, "text": text, "error": error}
        self.refresh()

    def show_fork(self, forked: Session, seq: int) -> LiveView:
        """Keep `forked` (branched at event `seq`) and show its own live view below this one."""
        fork_view = LiveView(forked, preprocessors=self.preprocessors, rate=self._rate)
        self.forks.append(forked)
        self.fork_views.append(fork_view)
        self._fork_seqs.append(seq)
        self.refresh(now=True)
        return fork_view

    def _fork_refs(self) -> list[dict[str, Any]]:
        return [
            {
                "model": fork.model_id,
                "id": session.id,
                "seq": seq,
                "index": index,
                "diff": self.fork_diffs.get(index),
            }
            for index, (fork, session, seq) in enumerate(
                zip(self.fork_views, self.forks, self._fork_seqs, strict=True)
            )
        ]

    def preprocessor_options(self) -> dict[str, Any]:
        """The preprocessor selector's choices, by name: every one the session has had, and
        those given to the view."""
        session = self.target.session
        had = session.preprocessors if session is not None else {}
        return {"none": None, **had, **self.preprocessors}

    def static_output(self) -> dict[str, str]:
        """What a notebook keeps of this view for readers without widgets: the static text,
        and as HTML the offline viewer over it (`_offline.static_output`)."""
        return static_output(self)

    def close(self) -> None:
        """Stop following the session and close the widget and its layout."""
        # also called by ipywidgets' __del__, possibly on a view whose __init__ failed
        self._closed = True
        throttle, target = getattr(self, "_throttle", None), getattr(self, "target", None)
        for fork_view in getattr(self, "fork_views", ()):
            fork_view.close()
        if throttle is not None:
            throttle.close()
        if target is not None:
            target.detach()
        # ipywidgets keeps every open widget in a registry, this one's Layout too
        layout = getattr(self, "_trait_values", {}).get("layout")
        super().close()
        if layout is not None:
            layout.close()

    # state

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        try:
            handle_message(self, content)
        except Exception as exc:
            self.notify(f"{content.get('action')} failed: {type(exc).__name__}: {exc}", error=True)

    def _push(self) -> None:
        """Set the traits whose state changed and send them in one update, as traitlets and
        `hold_sync` would (a trait that compares equal is left; the observers get each change),
        without their per-trait validation and send bookkeeping, most of a push's set: the
        values are the view's own dicts and text."""
        if not self._ready:
            return
        header, tree, pane, found = self._render()
        values = self._trait_values
        changes = []
        for name, value in (("header", header), ("tree", tree), ("found", found), ("pane", pane)):
            old = values[name]
            if value is not None and old != value:
                values[name] = value
                changes.append(
                    traitlets.Bunch(name=name, old=old, new=value, owner=self, type="change")
                )
        if not changes:
            return
        if self._property_lock:  # the front end's own values are being set: ipywidgets' way
            super().send_state([change.name for change in changes])
        else:  # the new values themselves: ipywidgets' get_state reads each trait again
            self._send_update({change.name: change.new for change in changes})
        for change in changes:
            traitlets.HasTraits.notify_change(self, change)  # ipywidgets' own would send again

    def send_state(self, key: Any = None) -> None:
        """Send the state of `key` (every trait: None) to the front end as it is: the view's
        state is JSON data without binary buffers, so ipywidgets' walk of each dict and list
        looking for them (`_remove_buffers`, most of a push's send) is skipped."""
        if self._property_lock:  # the front end's own values are being set: ipywidgets' way
            super().send_state(key)
            return
        state = self.get_state(key=key)
        if state:
            self._send_update(state)

    def _send_update(self, state: dict[str, Any]) -> None:
        self._send({"method": "update", "state": state, "buffer_paths": []}, buffers=[])

    def current_pane(self) -> dict[str, Any]:
        """The last pane sent to the front end, decoded."""
        return json.loads(self.pane)  # type: ignore[no-any-return]

    def _render(self) -> tuple[dict[str, Any], dict[str, Any], str | None, dict[str, Any]]:
        projector = self.projector
        with projector.lock:
            projector.catch_up()
            exchanges = self.target.exchanges()
            path = self._pane_node()
            stamp = (self.focus.key(), path, self._pane_version(exchanges, path))
            pane = None
            if stamp != self._pane_stamp:
                state = pane_state(projector, self.focus, exchanges, self._json_cache)
                pane = compact_json(state)
                self._pane_stamp = stamp
            focus = self.focus
            pinned = focus.node if focus.node in projector.nodes else projector.followed()
            more = tuple(sorted(focus.tree_more.items()))
            rows = self._tree_rows
            # a tab or a search changes no row; the price table, once loaded, changes costs
            # (priced here, or by the static text, which reads the same rows: `rolls`)
            asked = (pinned, focus.tree_filter, more)
            if self._tree[0] != (projector.version, rows.rolls, asked) or rows.priceable(projector):
                state = rows.state(projector, TreeAsk(pinned, dict(more), focus.tree_filter))
                self._tree = ((projector.version, rows.rolls, asked), state)
            if rows.waiting:
                self._throttle.request()  # again at the next update, until the table is loaded
            return self._header(), self._tree[1], pane, self._found_state()

    def _found_state(self) -> dict[str, Any]:
        """The search's results, looked for again only when the query, its page or the
        events changed."""
        focus, projector, index = self.focus, self.projector, self._search
        asked = bool(focus.query)
        if asked and projector.loading is not None:  # nothing to look through yet
            self._throttle.request()
            return {"query": focus.query, "rows": [], "note": projector.loading.words()}
        stamp = (focus.query, focus.found_start, asked and projector.version, len(index.folded))
        if stamp != self._found[0]:
            found = search_state(index, projector.events, focus.query, focus.found_start)
            if "searching" in found:
                self._throttle.request()  # it goes on at the next update
            stamp = (*stamp[:3], len(index.folded))
            self._found = (stamp, found)
        return self._found[1]

    def read_stored(self) -> None:
        """Fold the rest of a long stored log now, if it is still being read (in the
        background since the view opened): e.g. before the view is saved."""

        async def finish() -> None:
            self._step_replay(math.inf)

        if self.target.replay is not None:
            run_sync(finish(), what="view.read_stored()")

    def _fold_stored(self) -> None:
        """Fold a long stored log a slice at a time on the library loop, after the first
        paint; then index it for the search."""

        def fold_slice() -> None:
            if not self._closed and not self._step_replay(WARM_SLICE):
                call_soon(fold_slice)

        call_soon(fold_slice)

    def _step_replay(self, seconds: float) -> bool:
        """Fold the stored log for about `seconds` (on the library loop); whether it is all
        folded."""
        replay = self.target.replay
        if replay is None:
            return True
        if not replay.step(seconds):
            return False
        self.target.replay = None
        self._warm_search(replay.total)
        self._throttle.request()
        return True

    def _warm_search(self, upto: int) -> None:
        """Index the first `upto` events (those replayed when the view opened) a slice at a
        time on the library loop, so that a search in a long stored session finds at once."""

        def index_slice() -> None:
            if self._closed:
                return
            with self.projector.lock:
                done = self._search.update(self.projector.events, WARM_SLICE, upto)
            if not done:
                call_soon(index_slice)

        call_soon(index_slice)

    def _pane_node(self) -> str | None:
        projector, chosen = self.projector, self.focus.node
        if chosen in projector.nodes:
            return chosen
        # the Timing tab shows the root's run unless a node is chosen: following moves nothing
        return projector.root if self.focus.tab == "timing" else projector.followed()

    def _pane_version(self, exchanges: Any, path: str | None) -> Any:
        projector, tab = self.projector, self.focus.tab
        if projector.loading is not None:
            return "loading"
        if tab == "wire":
            if not exchanges:
                return (id(exchanges), 0)
            last = exchanges[-1]
            return (id(exchanges), len(exchanges), id(last), last.status, last.duration)
        if tab in ("events", "decisions"):
            return projector.version
        if tab == "timing":
            version, waiting = self._timing_stamp(projector)
            if waiting:
                self._throttle.request()  # so the newest state is drawn after the interval
            return version
        node = projector.nodes.get(path or "")
        return node.version if node is not None else projector.version

    def _header(self) -> dict[str, Any]:
        projector, target = self.projector, self.target
        live = target.live
        session = target.session
        registered, agent_kinds, kind_options = self._kind_state() if live else ([], {}, {})
        return {
            "title": target.title(),
            "live": live,
            "run": self._run_header(),
            "later": target.later(projector),
            "pending": [
                _pending(projector, p) for p in sorted(projector.pending.values(), key=_pause_id)
            ],
            "kinds": registered,
            "agent_kinds": agent_kinds,
            "kind_options": kind_options,
            "preprocessors": list(self.preprocessor_options()) if live else [],
            "preprocessor": self._preprocessor_choice(),
            "llm": projector.llm or (session.llm.label if session is not None else None),
            **self._count(),
            "fork": session is not None and session.store is not None,
            "resumable": live and target.resumable(),
            "forks": self._fork_refs(),
            "notice": self._notice,
        }

    def _count(self) -> dict[str, int]:
        """How many events the session has and the last one's seq (while a long stored log
        is folded: its own, and those waiting behind it)."""
        projector = self.projector
        events: Sequence[Event] = projector.events
        count, seq = len(events), events[-1].seq if events else 0
        if projector.loading is not None:
            events = projector.inbox
            count = projector.loading.of + len(events)
            seq = events[-1].seq if events else projector.loading.last_seq
        return {"events": count, "seq": seq}

    def _run_header(self) -> dict[str, Any] | None:
        projector = self.projector
        control = self.target.control_run()
        if control is not None:
            number = control.number
        elif self.target.result is not None:
            number = self.target.result.run
        else:
            number = max(projector.runs, default=0)
        run = projector.runs.get(number)
        if run is None:
            return None if control is None else {"number": number, "status": control.status}
        return {
            "number": run.number,
            "status": run.status,
            "input": run.input,
            "text": run.text,
            "turns": run.turns,
            "tokens": run.tokens,
        }

    def _kind_state(self) -> tuple[list[str], dict[str, str], dict[str, list[str]]]:
        """The kinds registered, the kind each agent runs with next, and each agent's kind
        choices: the registered kinds and every kind it has had (a `native` child switched to
        `worker` can be switched back). Made again only when the registry, an agent or an
        agent's kind changed since they were last made."""
        registered = sorted(kinds.registry())
        held = self.target.agents_with_kinds()
        made_of, made = self._kind_choices
        if made_of is not None and made_of[0] == registered and _same(made_of[1], held):
            return made
        for agent, kind in held:
            if kind is not None:
                self.kinds_seen.setdefault(agent.name, {})[kinds.kind_name(kind)] = kind
        agent_kinds = self.target.agent_kinds(held)
        options = {
            name: sorted({*registered, *self.kinds_seen.get(name, ()), current})
            for name, current in agent_kinds.items()
        }
        made = (registered, agent_kinds, options)
        self._kind_choices = ((registered, held), made)
        return made

    def _preprocessor_choice(self) -> str | None:
        session = self.target.session
        if session is None:
            return None
        current = session.preprocessor
        for name, option in self.preprocessor_options().items():
            if option is current:
                return name
        return f"custom: {self.projector.preprocessor or preprocessor_name(current)}"


_WITH_TRAITS: dict[type[LiveView], tuple[Any, type[LiveView]]] = {}
"""The subclass `LiveView.add_traits` made of a class, with the names of the traits it added."""


def _same(before: list[tuple[Any, Any]], now: list[tuple[Any, Any]]) -> bool:
    """Whether two lists of pairs hold the same objects, in order."""
    return len(before) == len(now) and all(
        a is c and b is d for (a, b), (c, d) in zip(before, now, strict=True)
    )


def _pause_id(pending: PendingState) -> int:
    return pending.pause_id


def _pending(projector: Projector, pending: PendingState) -> dict[str, Any]:
    arguments = None
    if pending.arguments is not None:
        arguments = json.dumps(pending.arguments, indent=1, ensure_ascii=False, default=str)
    card: dict[str, Any] = {
        "pause_id": pending.pause_id,
        "action": pending.action,
        "path": pending.path,
        "name": pending.name,
        "call_id": pending.call_id,
        "arguments": arguments,
        "stored": pending.stored,
    }
    node = projector.nodes.get(pending.path)
    request = node.about_to_send if node is not None and pending.action == "model" else None
    if request is not None:
        card["messages"] = editable_messages(request.messages)
        card["messages_total"] = len(request.messages)
    return card


def editable_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """The last `MESSAGES_EDITABLE` messages of a model request, each as its index and its
    `sn.Message` fields as JSON text (what a card's message editor shows and sends back)."""
    first = max(0, len(messages) - MESSAGES_EDITABLE)
    return [
        {
            "index": index,
            "role": message.role,
            "text": json.dumps(
                message.model_dump(mode="json", exclude_defaults=True), indent=1, ensure_ascii=False
            ),
        }
        for index, message in enumerate(messages[first:], start=first)
    ]
