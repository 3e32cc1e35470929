"""The projector: folds the event stream into view state, one handler per event type (`handles`)."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, TypeVar

from .._base.messages import Message
from .._base.prices import PriceBook
from .._runtime.costs import UNKNOWN_MODEL
from .._runtime.restore import collector_paused
from ..events import (
    ColdRestore,
    ColdSink,
    Compaction,
    ContextBuilt,
    ContextFull,
    ErrorOccurred,
    Event,
    Fold,
    HarnessEventOccurred,
    KindSwapped,
    LLMSwapped,
    MessagePreprocessed,
    MessageRefused,
    ModelRequest,
    ModelResponse,
    Paused,
    PreprocessorSwapped,
    RelevanceView,
    Resumed,
    Retry,
    RunFinished,
    RunStarted,
    StatusChanged,
    TaskFinished,
    TaskReattached,
    TaskRefused,
    TaskSpawned,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    WindowTrim,
)
from ._decisions import DecisionLog
from ._state import Loading, Mark, NodeState, PendingState, RunState, ToolCard, Turn
from ._timings import Timings
from ._words import counted

KEPT_FOLD = 100
"""Events from which a fold's batch is folded with the collector paused (`collector_paused`):
what it makes is kept, and a young collection in the middle would walk it just before."""

if TYPE_CHECKING:
    from .._runtime.result import TreeNode


Handler = Callable[["Projector", Any], None]
HandlerT = TypeVar("HandlerT", bound=Handler)

FOLD: Fold[Handler] = Fold("view")
"""The projector's handler of each event class (see `handles`); an event without one only shows
in the event log."""
CHARTED: dict[str, str] = {}
"""The event types whose timeline marks also mark the context chart, with their legend label."""


def handles(*kinds: type[Event], chart: str | None = None) -> Callable[[HandlerT], HandlerT]:
    """Register the decorated function as the projector's handler of these event classes
    (`FOLD.handles`), and say where their marks go.

    Args:
        kinds: the event classes it folds into the view state.
        chart: the legend label of the marker their timeline marks put on the context chart;
            None keeps them off the chart.
    """

    def register(handler: HandlerT) -> HandlerT:
        FOLD.handles(*kinds)(handler)
        if chart is not None:
            for kind in kinds:
                CHARTED[kind.model_fields["type"].default] = chart
        return handler

    return register


class Projector:
    """Folds events into view state. Thread-safe: fold and read under `lock`.

    A live view queues events in `inbox` as they happen (`receive`, cheap) and folds them in one
    batch before it renders (`catch_up`), at the view's update rate instead of the event rate.
    """

    def __init__(self, scope: int | None = None) -> None:
        self.scope = scope
        """The run a run's view shows: events of later runs are not folded (None: every run)."""
        self.later: dict[int, str] = {}
        """The runs after `scope`, by number, with their status: a run's view names them."""
        self._later_pauses: dict[int, set[int]] = {}
        self.lock = threading.RLock()
        self.nodes: dict[str, NodeState] = {}
        self.root: str | None = None
        self.events: list[Event] = []
        self._counts: Counter[str] = Counter()
        self._counted = 0
        """Events in `_counts` so far (`counts` adds the newer ones when read)."""
        self._at: dict[str, list[Event]] = {}
        self._placed = 0
        """Events in `_at` so far (`events_at` adds the newer ones when read)."""
        self.runs: dict[int, RunState] = {}
        self.pending: dict[int, PendingState] = {}
        self.preprocessor: str | None = None
        self.llm: str | None = None
        self.prices: PriceBook | None = None
        """What the Timing tab prices model calls with (the session's `prices=`, its table)."""
        self.version = 0
        self.preprocessed: dict[int, MessagePreprocessed] = {}
        self.decisions = DecisionLog()
        """Every pause and how it ended, kept after the run (the Decisions tab)."""
        """Each run's preprocessed input, by run number."""
        self.inbox: list[Event] = []
        """Events received and not folded yet, oldest first."""
        self.receive = self.inbox.append
        """Queue an event for the next `catch_up` (from any thread)."""
        self.timings = Timings()
        """The runs' spans and tokens, folded from `events` only when the Timing tab is drawn."""
        self._followed: tuple[int, str | None] = (-1, None)
        """The node `followed` found, and the version it looked at."""
        self.loading: Loading | None = None
        """While a long stored log is folded apart (`_replay.Replay`): how far it is. Until
        then the nodes hold the tree snapshot's figures only, and the inbox waits."""

    def fold(self, event: Event) -> None:
        """Add one event to the view state (after any still in the inbox)."""
        with self.lock:
            self.catch_up()
            self._fold([event])

    def fold_all(self, events: list[Event]) -> None:
        """Add `events` to the view state in one batch (after any still in the inbox): a
        replay of a stored session's log."""
        with self.lock:
            self.catch_up()
            self._fold(events)

    def catch_up(self) -> None:
        """Fold every event in the inbox (once the stored log is folded, `loading`)."""
        inbox = self.inbox
        if not inbox or self.loading is not None:
            return
        with self.lock:
            # Events appended meanwhile (by another thread) land after `count` and stay queued.
            count = len(inbox)
            batch = inbox[:count]
            del inbox[:count]
            if count < KEPT_FOLD:
                self._fold(batch)
                return
            with collector_paused():  # what a long batch folds is kept
                self._fold(batch)

    def adopt(self, staged: Projector) -> None:
        """Take over the state of `staged`, which folded this view's stored log apart
        (`_replay.Replay`), then fold the events that waited in the inbox meanwhile."""
        with self.lock:
            version = self.version + staged.version + 1
            for name, value in vars(staged).items():
                if name not in _OWN:
                    setattr(self, name, value)
            self.version, self.loading = version, None
            self.catch_up()

    def _fold(self, events: list[Event]) -> None:
        scope = self.scope
        if scope is not None and any(event.run > scope for event in events):
            for event in events:
                if event.run > scope:
                    self._note_later(event)
            self.version += 1
            events = [event for event in events if event.run <= scope]
        self.events.extend(events)
        self.version += len(events)
        FOLD.into(self, events)

    @property
    def counts(self) -> Counter[str]:
        """The events the view holds by type (the newest counted when read: the Events tab)."""
        with self.lock:
            events = self.events
            if self._counted < len(events):
                self._counts.update([event.type for event in events[self._counted :]])
                self._counted = len(events)
            return self._counts

    def events_at(self, path: str) -> list[Event]:
        """The events the view holds at `path`, in order (a node's Events tab): every node's
        are found in one pass over the newer events, not in one over them all at each ask."""
        with self.lock:
            events, at = self.events, self._at
            for event in events[self._placed :]:
                found = at.get(event.path)
                if found is None:
                    at[event.path] = [event]
                else:
                    found.append(event)
            self._placed = len(events)
            return at.get(path, [])

    def _note_later(self, event: Event) -> None:
        """Keep how a run after `scope` stands (running, paused, or how it ended)."""
        number = event.run
        pauses = self._later_pauses.setdefault(number, set())
        if isinstance(event, RunFinished):
            self.later[number] = event.status
            return
        if isinstance(event, Paused):
            pauses.add(event.pause_id)
        elif isinstance(event, Resumed):
            pauses.discard(event.pause_id)
        if self.later.get(number, "running") in ("running", "paused"):
            self.later[number] = "paused" if pauses else "running"

    def node(self, path: str) -> NodeState:
        """The state of the node at `path`, created (with its ancestors) on first mention;
        its `version` moves."""
        try:
            state = self.nodes[path]
        except KeyError:
            state = self._new_node(path)
        state.version += 1
        return state

    def _new_node(self, path: str) -> NodeState:
        parent, _, segment = path.rpartition("/")
        agent = (segment.rpartition(".")[0] or segment) if parent else segment
        state = self.nodes[path] = NodeState(path, agent, parent or None)
        if parent:
            self.node(parent).children.append(path)
        elif self.root is None:
            self.root = path
        return state

    def followed(self) -> str | None:
        """The node a view follows when the person has chosen none: the first one paused, else
        the newest one running, else the root."""
        if self._followed[0] != self.version:  # a look through every node, once per version
            self._followed = (self.version, self._follows())
        return self._followed[1]

    def _follows(self) -> str | None:
        if self.pending:
            return self.pending[min(self.pending)].path
        for path in reversed(self.nodes):
            if self.nodes[path].status in ("running", "paused"):
                return path
        return self.root

    def apply_tree(self, tree: TreeNode) -> None:
        """Take a tree snapshot as the truth for every node's summary (kind, status, counts);
        not in a run's view of a session that has gone on (the tree is the session's now)."""
        with self.lock:
            self.catch_up()
            if self.later:
                return
            self.version += 1
            for item in tree.walk():
                state = self.node(item.id)
                state.agent, state.kind, state.status = item.agent, item.kind, item.status
                state.turns, state.display_text = item.turns, item.display_text
                state.reattached, state.refused = item.reattached, list(item.refused)
                below = sum(child.usage.total_tokens for child in item.children)
                state.tokens = item.usage.total_tokens - below
                state.prompt_tokens = item.usage.prompt_tokens - sum(
                    child.usage.prompt_tokens for child in item.children
                )
                state.completion_tokens = item.usage.completion_tokens - sum(
                    child.usage.completion_tokens for child in item.children
                )

    # runs and status

    @handles(RunStarted)
    def _run_started(self, event: RunStarted) -> None:
        for pause_id, pending in list(self.pending.items()):
            if pending.run == event.run:  # a run resumed after a cut: its pauses are asked again
                self._end_pause(pause_id, "interrupted", "the run was cut here, and resumed later")
        self.runs[event.run] = RunState(event.run, input=event.input)
        node = self.node(event.path)
        node.agent = event.agent
        if event.input is not None:
            preprocessed = self.preprocessed.get(event.run)
            node.storage.append(preprocessed.llm if preprocessed is not None else event)
            node.transcript.append(event)

    @handles(TextDelta)
    def _text_delta(self, event: TextDelta) -> None:
        self.node(event.path).streaming.append(event.text)

    @handles(StatusChanged)
    def _status_changed(self, event: StatusChanged) -> None:
        node = self.node(event.path)
        if event.status == "running" and node.status not in ("paused", "waiting") and node.inputs:
            # a child starts its next task (it takes inputs in the order they were delegated)
            task = node.inputs.pop(0)
            node.storage.append(task)
            node.transcript.append(task)
        node.status, node.detail = event.status, event.detail

    @handles(MessagePreprocessed)
    def _message_preprocessed(self, event: MessagePreprocessed) -> None:
        self.preprocessor = event.preprocessor
        self.preprocessed[event.run] = event

    @handles(MessageRefused)
    def _message_refused(self, event: MessageRefused) -> None:
        self.node(event.path).transcript.append(event)

    @handles(RunFinished)
    def _run_finished(self, event: RunFinished) -> None:
        # A finished run waits for nothing, also in logs written before every pause's end was
        # an event.
        for pause_id, pending in list(self.pending.items()):
            if pending.run == event.run:
                self._end_pause(pause_id, "cancelled", "the run ended at this pause")
        run = self.runs.setdefault(event.run, RunState(event.run))
        run.status, run.text, run.turns = event.status, event.text, event.turns
        run.tokens = event.usage.total_tokens
        self.node(event.path)

    def run_cut(self, number: int, status: str, text: str, stored: Collection[int] = ()) -> None:
        """Run `number` stopped without a `run_finished` (a fork or reopen cut it): it ends
        as `status`; its open pauses end as `interrupted`, but those in `stored` (the pause
        ids `session.pending` names) stay, waiting for `session.resume()` to ask them again."""
        with self.lock:
            self.catch_up()
            self.version += 1
            if self.scope is not None and number > self.scope:
                self.later[number] = status
                return
            for pause_id, pending in list(self.pending.items()):
                if pending.run == number and pause_id in stored:
                    pending.stored = True
                    self.decisions.stored(pause_id, text)
                elif pending.run == number:
                    self._end_pause(pause_id, "interrupted", text)
            run = self.runs.setdefault(number, RunState(number))
            run.status, run.text = status, text

    # turns

    @handles(ContextBuilt)
    def _context_built(self, event: ContextBuilt) -> None:
        node = self.node(event.path)
        node.kind = event.kind
        node.building = Turn(
            event.turn,
            event.kind,
            event.seq,
            event.view_tokens,
            event.storage_tokens,
            event.view_messages,
            event.storage_messages,
            event.hidden,
            node.hidden_as,
            event.from_storage,
        )

    @handles(ModelRequest)
    def _model_request(self, event: ModelRequest) -> None:
        node = self.node(event.path)
        node.requests.append(event)
        if self.decisions.edited_requests:
            self.decisions.requested(event)
        turn = node.asking = node.building
        node.building = None
        if node.streaming:
            node.streaming.clear()
        if turn is None:
            return
        messages, storage = event.messages, node.storage
        if event.tool_choice == "none" and messages and messages[-1].role == "user":
            storage.append(messages[-1])
        turn.view, turn.model, turn.tool_choice = messages, event.model, event.tool_choice
        turn.storage, turn.storage_len = storage, len(storage)
        turn.forgotten_len = len(node.forgotten)
        node.turn_log.append(turn)

    @handles(ModelResponse)
    def _model_response(self, event: ModelResponse) -> None:
        node = self.node(event.path)
        if event.turn > node.turns:
            node.turns = event.turn
        usage = event.usage
        if usage is not None:
            node.tokens += usage.total_tokens
            node.prompt_tokens += usage.prompt_tokens
            node.completion_tokens += usage.completion_tokens
            requests = node.requests
            node.spend.add(requests[-1].model if requests else UNKNOWN_MODEL, usage)
            run = self.runs.get(event.run)
            if run is not None:
                run.tokens += usage.total_tokens
        turn = node.asking
        if turn is None:
            return
        node.asking = None
        if self.decisions.edited_replies:
            self.decisions.responded(event)
        turn.reply, turn.usage, turn.duration = event.message, usage, event.duration
        node.storage.append(event.message)
        node.transcript.append(event)

    # tool calls

    def _card(self, node: NodeState, call_id: str, name: str, arguments: str, seq: int) -> ToolCard:
        card = node.cards.get(call_id)
        if card is None:
            card = node.cards[call_id] = ToolCard(call_id, name, arguments, seq)
        return card

    @handles(ToolCallStarted)
    def _tool_call_started(self, event: ToolCallStarted) -> None:
        node = self.node(event.path)
        card = self._card(node, event.call_id, event.name, event.arguments, event.seq)
        card.arguments, card.status = event.arguments, "running"
        card.display_text = event.display_text
        if self.decisions.edited_calls:
            self.decisions.started(event)

    @handles(ToolCallFinished)
    def _tool_call_finished(self, event: ToolCallFinished) -> None:
        node = self.node(event.path)
        card = self._card(node, event.call_id, event.name, event.arguments, event.seq)
        card.arguments, card.status = event.arguments, event.status
        card.result, card.duration = event.result, event.duration
        node.storage.append(event)
        node.transcript.append(event)

    @handles(Paused)
    def _paused(self, event: Paused) -> None:
        self.pending[event.pause_id] = PendingState(
            event.pause_id,
            event.action,
            event.path,
            event.seq,
            event.name,
            event.call_id,
            event.arguments,
            event.run,
        )
        self.decisions.paused(event)
        if event.request is not None:
            self.node(event.path).about_to_send = event.request
        run = self.runs.get(event.run)
        if run is not None:
            run.status = "paused"
        node = self.node(event.path)
        if event.call_id is not None:
            arguments = _json(event.arguments or {})
            card = self._card(node, event.call_id, event.name or "?", arguments, event.seq)
            card.status = "pending"

    @handles(Resumed)
    def _resumed(self, event: Resumed) -> None:
        self._end_pause(event.pause_id, event.decision, event.reason, event.changed)

    def _end_pause(
        self, pause_id: int, decision: str, reason: str | None, changed: list[str] | None = None
    ) -> None:
        pending = self.pending.pop(pause_id, None)
        if pending is None:
            return
        self.decisions.ended(pause_id, decision, reason, changed)
        run = self.runs.get(pending.run)
        if run is not None and run.status == "paused":
            if not any(other.run == pending.run for other in self.pending.values()):
                run.status = "running"  # until its run_finished says how it ended
        node = self.node(pending.path)
        if pending.action == "model":
            node.about_to_send = None
        card = node.cards.get(pending.call_id) if pending.call_id is not None else None
        if card is not None:
            if card.status == "pending":
                # its tool_call_started or _finished follows unless the run stopped
                card.status = {"cancelled": "cancelled", "interrupted": "incomplete"}.get(
                    decision, "running"
                )
            card.notes += (f"{decision} at a pause{f': {reason}' if reason else ''}",)

    # delegation

    @handles(TaskSpawned)
    def _task_spawned(self, event: TaskSpawned) -> None:
        parent = self.node(event.path)
        child = self.node(event.child)
        child.agent, child.kind, child.display_text = event.agent, event.kind, event.display_text
        child.prompt = event.prompt
        child.inputs.append(event)
        if event.call_id is not None:
            card = parent.cards.get(event.call_id)
            if card is not None:
                card.child = event.child

    @handles(TaskReattached)
    def _task_reattached(self, event: TaskReattached) -> None:
        parent = self.node(event.path)
        parent.reattached += 1
        self.node(event.child).reattached += 1
        if event.call_id is not None:
            card = parent.cards.get(event.call_id)
            if card is not None:
                card.child = event.child
                card.notes += (f"reattached to {event.child} ({event.state})",)

    @handles(TaskRefused)
    def _task_refused(self, event: TaskRefused) -> None:
        parent = self.node(event.path)
        parent.refused.append(event.reason)
        if event.call_id is not None:
            card = parent.cards.get(event.call_id)
            if card is not None:
                card.notes += (f"refused: {event.reason}",)

    @handles(TaskFinished)
    def _task_finished(self, event: TaskFinished) -> None:
        child = self.node(event.child)
        child.status = event.status
        self.node(event.path)

    # context management

    def mark(self, node: NodeState, event: Event, title: str, **details: Any) -> Mark:
        """Put `event` on the node's timeline (and on its context chart when `handles` gave
        its type a chart label)."""
        mark = Mark(event.seq, event.type, len(node.turn_log), title, details, event=event)
        node.timeline.append(mark)
        return mark

    @handles(Compaction, chart="compaction")
    def _compaction(self, event: Compaction) -> None:
        node = self.node(event.path)
        how = "summarised" if event.strategy == "summary" else "truncated"
        removed = node.storage[: event.removed]
        node.forgotten.extend((how, message) for message in removed)
        kept = node.storage[event.removed :]
        if event.strategy == "summary" and event.summary:
            summary = Message(role="system", content=event.summary, meta={"summary": True})
            kept = [summary, *kept]
        node.storage = kept
        details: dict[str, Any] = {
            "reason": event.reason,
            "tokens": f"{event.before_tokens} → {event.after_tokens}",
            "messages removed": event.removed,
        }
        if event.error:
            details["summariser error"] = event.error
        mark = self.mark(node, event, f"compaction by {event.strategy}", **details)
        mark.text = event.summary

    @handles(ContextFull, chart="context full")
    def _context_full(self, event: ContextFull) -> None:
        node = self.node(event.path)
        self.mark(node, event, "context full", tokens=f"{event.tokens} of {event.window}")

    @handles(ColdSink, chart="sunk")
    def _cold_sink(self, event: ColdSink) -> None:
        node = self.node(event.path)
        node.hidden_as = "sunk"
        mark = self.mark(
            node,
            event,
            f"{counted(event.sunk, 'item')} sunk to cold storage",
            reason=event.reason,
            tokens=f"{event.before_tokens} → {event.after_tokens}",
        )
        mark.previews = list(event.previews)

    @handles(ColdRestore, chart="restored")
    def _cold_restore(self, event: ColdRestore) -> None:
        node = self.node(event.path)
        mark = self.mark(
            node,
            event,
            f"{counted(event.restored, 'item')} back from cold storage",
            tokens=f"{event.before_tokens} → {event.after_tokens}",
        )
        mark.previews = list(event.previews)

    @handles(RelevanceView, chart="left out")
    def _relevance_view(self, event: RelevanceView) -> None:
        node = self.node(event.path)
        node.hidden_as = "left out"
        self.mark(
            node,
            event,
            f"{counted(event.left_out, 'unrelated group')} left out of the view",
            **{
                "groups kept": event.kept_groups,
                "tokens": f"{event.before_tokens} → {event.after_tokens}",
            },
        )

    @handles(WindowTrim, chart="trimmed")
    def _window_trim(self, event: WindowTrim) -> None:
        node = self.node(event.path)
        node.hidden_as = "trimmed"
        self.mark(
            node,
            event,
            "window trimmed",
            **{
                "groups dropped": event.dropped_groups,
                "groups kept": event.kept_groups,
                "tokens": f"{event.before_tokens} → {event.after_tokens}",
            },
        )

    @handles(KindSwapped)
    def _kind_swapped(self, event: KindSwapped) -> None:
        node = self.node(event.path)
        if node.agent == event.agent:
            node.kind, node.hidden_as = event.new, "hidden"
            title = f"kind {event.old} → {event.new}"
        else:
            title = f"{event.agent}'s kind {event.old} → {event.new} (next task)"
        self.mark(node, event, title, policy=event.policy)

    @handles(PreprocessorSwapped)
    def _preprocessor_swapped(self, event: PreprocessorSwapped) -> None:
        self.preprocessor = event.new
        self.mark(self.node(event.path), event, f"preprocessor {event.old} → {event.new}")

    @handles(LLMSwapped)
    def _llm_swapped(self, event: LLMSwapped) -> None:
        if event.path == self.root:  # else a node's own endpoint: the session's stays
            self.llm = event.new
        self.mark(self.node(event.path), event, f"endpoint {event.old} → {event.new}")

    @handles(Retry)
    def _retry(self, event: Retry) -> None:
        node = self.node(event.path)
        self.mark(
            node,
            event,
            f"retry {event.attempt} in {event.delay:.1f} s",
            status=event.status,
            error=event.error,
        )

    # native CLI children and errors

    @handles(HarnessEventOccurred)
    def _harness_event(self, event: HarnessEventOccurred) -> None:
        node = self.node(event.path)
        data = event.event
        kind = str(data.get("type", "event"))
        if kind == "done":
            node.spend.reported(data.get("cost_usd"))
        if kind == "tool_call":
            call_id = str(data.get("id") or f"cli-{event.seq}")
            arguments = _json(data.get("arguments") or {})
            card = self._card(node, call_id, str(data.get("name", "?")), arguments, event.seq)
            card.status = "observed"
            card.notes += ("called by the CLI (its own tool runner)",)
            return
        if kind == "tool_result":
            observed = node.cards.get(str(data.get("id")))
            if observed is not None and observed.status == "observed":  # else the kernel ran it
                observed.status = "error" if data.get("is_error") else "ok"
                observed.result = str(data.get("content") or "")
            return
        if kind == "text" and data.get("delta"):
            return  # a streamed piece: the whole message follows as its own event
        node.transcript.append(event)

    @handles(ErrorOccurred)
    def _error(self, event: ErrorOccurred) -> None:
        self.node(event.path).transcript.append(event)


_OWN = frozenset({"lock", "inbox", "receive", "version", "loading", "scope", "prices"})
"""What a projector keeps of its own when it adopts another's state."""


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)
