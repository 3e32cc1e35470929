"""What changed in a node's view between turns (added, sunk, trimmed, summarised, recalled), and
what the node has forgotten since, told by message identity (`ContextBuilt.from_storage`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._base.messages import Message
from ..events import ColdRestore, ColdSink, Compaction, Event, RelevanceView, WindowTrim
from ._render import clip, message_parts
from ._state import NodeState, Stored, Turn
from ._words import counted

ROWS = 100
"""Messages one list of a diff shows at most; the rest are counted."""
FORGOTTEN_ROWS = 100
"""Forgotten messages shown at most, the most recently forgotten first."""
TEXT = 300
"""Characters of a message a row shows (the view beside it has the whole text)."""

HIDDEN_WHY = {
    "sunk": "sunk to cold storage",
    "trimmed": "trimmed out of the window",
    "left out": "left out as unrelated to the current input",
}
"""Why a stored message left the view, by the label of the kind's last event that hid some."""


@dataclass(slots=True)
class Change:
    """A message entering or leaving the view at a turn, and why."""

    item: int
    change: str
    """`added` or `recalled` (entering); `sunk`, `trimmed`, `left out`, `summarised`,
    `truncated` or `hidden` (leaving)."""
    why: str
    seq: int | None = None
    """The event that did it, when one did."""


@dataclass(slots=True)
class Compacted:
    """A compaction before a turn: its summary and the messages it took out of storage."""

    seq: int
    at: int
    """The index of the turn it came before."""
    strategy: str
    reason: str
    summary: int | None
    """The summary message's item (None when nothing replaced them)."""
    text: str | None
    replaced: list[int] = field(default_factory=list)
    """Items it removed that the previous turn's view held."""
    removed: int = 0


@dataclass(slots=True)
class TurnChanges:
    """One turn's view against the previous turn's."""

    known: bool
    added: list[Change] = field(default_factory=list)
    removed: list[Change] = field(default_factory=list)
    compactions: list[Compacted] = field(default_factory=list)
    kept: int = 0
    unnamed: int = 0
    """Messages stored since the previous turn and hidden at once, whose text is not known."""
    note: str | None = None


@dataclass(slots=True)
class Item:
    """A stored message the view held at some turn."""

    message: Stored
    spells: list[tuple[int, Change | None]] = field(default_factory=list)
    """(turn index it entered, how it left or None), in order; an item enters again when it
    is recalled, and its last spell is open while it is in view."""
    left: list[int] = field(default_factory=list)
    """The turn index each closed spell ended at."""
    compaction: Compacted | None = None


class ContextChanges:
    """Every turn's changes for one node, worked out once per turn as turns come.

    Stored messages are numbered (items) as they first appear in storage; a compaction takes
    the first `removed` numbers out and puts its summary's number first, as it does to storage.
    """

    def __init__(self) -> None:
        self.turns: list[TurnChanges] = []
        self.items: dict[int, Item] = {}
        self.storage: list[int] = []
        """The items of storage, in order, as of the latest turn worked out."""
        self.shown: dict[int, None] = {}
        """The items the latest turn's view held, in view order."""
        self.marks = 0
        """Timeline marks read so far."""
        self.next = 0
        self.forgotten: tuple[tuple[int, int], dict[str, Any]] | None = None
        """The last forgotten list made, keyed by (turn index, turns worked out): a view
        redraws its pane often and the list walks every item."""

    def update(self, node: NodeState) -> ContextChanges:
        """Work out the turns `node` made since the last update."""
        for index in range(len(self.turns), len(node.turn_log)):
            self._turn(node, index)
        return self

    def _turn(self, node: NodeState, index: int) -> None:
        turn = node.turn_log[index]
        events: list[Event] = []
        timeline = node.timeline
        while self.marks < len(timeline) and timeline[self.marks].at <= index:
            event = timeline[self.marks].event
            if event is not None:
                events.append(event)
            self.marks += 1
        born = self.next
        previous = node.turn_log[index - 1] if index else None
        compactions, gone, overflow = self._compact(events, index, previous)
        fresh = len(self.storage)
        note = self._fit(turn.storage_count)
        if turn.from_storage is None:
            self.shown = {}
            why = "this turn's log does not say which stored messages its view held"
            self.turns.append(TurnChanges(False, compactions=compactions, note=why))
            return
        shown = self._view(turn)
        changes = TurnChanges(True, compactions=compactions, note=note)
        hide, back = (
            _last(events, (ColdSink, WindowTrim, RelevanceView)),
            _last(events, ColdRestore),
        )
        for item in self.shown:
            if item in shown:
                continue
            compacted = gone.get(item)
            if compacted is not None:
                compacted.replaced.append(item)
                how = "summarised" if compacted.summary is not None else "truncated"
                change = Change(item, how, f"compacted ({compacted.reason})", compacted.seq)
            else:
                change = _hidden(item, turn, hide)
                changes.removed.append(change)
            spells = self.items[item].spells
            spells[-1] = (spells[-1][0], change)
            self.items[item].left.append(index)
        summaries = {c.summary for c in compactions}
        calls = _call_names(turn.view)
        for item in shown:
            if item in self.shown:
                changes.kept += 1
                continue
            self.items[item].spells.append((index, None))
            if item in summaries:
                continue  # shown as the head of its compaction
            if item < born:
                changes.added.append(_recalled(item, turn, back))
            else:
                answers = message_parts(self.items[item].message)[2]
                recall = calls.get(answers or "") == "recall"
                why = "the recall tool's answer" if recall else "new in storage"
                changes.added.append(Change(item, "added", why))
        for at in range(fresh, len(self.storage)):
            item = self.storage[at]
            if item in shown:
                continue
            # stored since the previous turn (its reply, tool results, the next input) and
            # hidden before any view showed it: forgotten as much as a message that was shown
            content = _unshown(node, index, at, at == fresh and not overflow)
            if content is None:
                changes.unnamed += 1
                continue
            change = _hidden(item, turn, hide)
            change.why = f"never in view: {change.why}"
            changes.removed.append(change)
            self.items[item] = Item(content, [(index, change)], [index])
        for compacted in compactions:
            compacted.replaced.sort()  # storage order: items are numbered as they are stored
            compacted.removed -= len(compacted.replaced)  # now: those already out of view
        self.shown = shown
        self.turns.append(changes)

    def _compact(
        self, events: list[Event], index: int, previous: Turn | None
    ) -> tuple[list[Compacted], dict[int, Compacted], bool]:
        """Apply the compactions before this turn to the numbered storage; also says whether
        one removed messages stored since the previous turn (not numbered yet)."""
        compactions: list[Compacted] = []
        gone: dict[int, Compacted] = {}
        overflow = False
        for event in events:
            if not isinstance(event, Compaction):
                continue
            first_overflow = not overflow and event.removed > len(self.storage)
            overflow = overflow or first_overflow
            removed, self.storage = self.storage[: event.removed], self.storage[event.removed :]
            summary = None
            if event.strategy == "summary" and event.summary:  # as the projector stores it
                summary = self._new()
                self.storage.insert(0, summary)
            compacted = Compacted(
                event.seq,
                index,
                event.strategy,
                event.reason,
                summary,
                event.summary,
                removed=event.removed,
            )
            compactions.append(compacted)
            for item in removed:
                gone[item] = compacted
                if item in self.items:
                    self.items[item].compaction = compacted
            reply = previous.reply if previous is not None else None
            if first_overflow and reply is not None:
                # the first message stored after the previous turn is its reply: compacted
                # before any view showed it, it is forgotten all the same
                how = "summarised" if summary is not None else "truncated"
                why = f"never in view: compacted ({event.reason})"
                item = self._new()
                change = Change(item, how, why, event.seq)
                self.items[item] = Item(reply, [(index, change)], [index], compacted)
                compacted.replaced.append(item)
        return compactions, gone, overflow

    def _fit(self, count: int) -> str | None:
        """Number the messages stored since the last turn (storage only grows between
        compactions)."""
        storage = self.storage
        if len(storage) > count:
            del storage[count:]
            return "storage shrank without a compaction event: messages may be misnamed"
        storage.extend(self._new() for _ in range(count - len(storage)))
        return None

    def _new(self) -> int:
        self.next += 1
        return self.next - 1

    def _view(self, turn: Turn) -> dict[int, None]:
        runs = turn.from_storage or []
        storage, view, items = self.storage, turn.view, self.items
        shown: dict[int, None] = {}
        for start in range(0, len(runs) - 2, 3):
            at, stored, count = runs[start : start + 3]
            for offset in range(count):
                if stored + offset >= len(storage) or at + offset >= len(view):
                    break  # a run past what the event said storage held
                item = storage[stored + offset]
                shown[item] = None
                if item not in items:
                    items[item] = Item(view[at + offset])
        return shown


def context_changes(node: NodeState) -> ContextChanges:
    """The node's changes, brought up to date."""
    changes = node.context_changes
    if changes is None:
        changes = node.context_changes = ContextChanges()
    return changes.update(node)


def _last(events: list[Event], kinds: type[Event] | tuple[type[Event], ...]) -> Event | None:
    return next((e for e in reversed(events) if isinstance(e, kinds)), None)


def _hidden(item: int, turn: Turn, event: Event | None) -> Change:
    """How a message still in storage left the view: by the kind's event before this turn,
    else as its last such event named it."""
    match event:
        case ColdSink():
            why = f"sunk to cold storage ({event.reason}; the model can recall it)"
            return Change(item, "sunk", why, event.seq)
        case WindowTrim():
            why = f"trimmed out of the window (it keeps the newest {counted(event.kept_groups, 'turn group')})"
            return Change(item, "trimmed", why, event.seq)
        case RelevanceView():
            return Change(item, "left out", HIDDEN_WHY["left out"], event.seq)
    label = turn.hidden_as
    return Change(item, label, HIDDEN_WHY.get(label, "left out of the view by the kind"))


def _recalled(item: int, turn: Turn, event: Event | None) -> Change:
    if isinstance(event, ColdRestore):
        return Change(item, "recalled", "back from cold storage: it matches the input", event.seq)
    if turn.hidden_as == "left out":
        return Change(item, "recalled", "back in view: related to the current input")
    return Change(item, "recalled", "back in view")


def _unshown(node: NodeState, index: int, at: int, reply: bool) -> Stored | None:
    """A message stored since the previous turn that no view showed: the previous turn's reply
    when it is that (its place is known), else the projector's storage item at its place while
    that storage is as long as the node's was (the projector rebuilds it from events)."""
    previous = node.turn_log[index - 1] if index else None
    if reply and previous is not None and previous.reply is not None:
        return previous.reply
    turn = node.turn_log[index]
    if turn.storage_len == turn.storage_count and at < turn.storage_len:
        return turn.storage[at]
    return None


def _call_names(view: Sequence[Message]) -> dict[str, str]:
    return {call.id: call.name for m in view for call in m.tool_calls or ()}


def _row(changes: ContextChanges, item: int, **extra: Any) -> dict[str, Any]:
    role, content, call_id, calls = message_parts(changes.items[item].message)
    row: dict[str, Any] = {"role": role, "text": clip(content, TEXT), **extra}
    if calls:
        row["calls"] = [call.name for call in calls]
    if call_id:
        row["call_id"] = call_id
    return row


def _change_row(changes: ContextChanges, change: Change) -> dict[str, Any]:
    return _row(changes, change.item, change=change.change, why=change.why, seq=change.seq)


def _replaced(changes: ContextChanges, item: int, how: str) -> dict[str, Any]:
    """A row of a compaction's group: how the item left (its last spell ended there)."""
    change = changes.items[item].spells[-1][1]
    return _change_row(changes, change) if change is not None else _row(changes, item, change=how)


def diff_state(node: NodeState, index: int) -> dict[str, Any] | None:
    """The turn at `index` of the node's turn log against the turn before it, for the pane."""
    changes = context_changes(node)
    if not 0 <= index < len(changes.turns):
        return None
    turn, number = changes.turns[index], node.turn_log[index].number
    previous = node.turn_log[index - 1].number if index else None
    if not turn.known:
        return {"turn": number, "previous": previous, "known": False, "note": turn.note}
    counts: dict[str, int] = {}
    for change in [*turn.added, *turn.removed]:
        counts[change.change] = counts.get(change.change, 0) + 1
    groups = []
    for compacted in turn.compactions:
        how = "summarised" if compacted.summary is not None else "truncated"
        counts[how] = counts.get(how, 0) + len(compacted.replaced)
        summary = None
        if compacted.summary is not None and compacted.summary in changes.items:
            summary = _row(changes, compacted.summary)
        groups.append(
            {
                "seq": compacted.seq,
                "strategy": compacted.strategy,
                "reason": compacted.reason,
                "summary": summary,
                "summary_text": clip(compacted.text, TEXT) if compacted.text else None,
                "replaced": [_replaced(changes, item, how) for item in compacted.replaced[:ROWS]],
                "replaced_more": max(0, len(compacted.replaced) - ROWS),
                "already_out": max(0, compacted.removed),
            }
        )
    return {
        "turn": number,
        "previous": previous,
        "known": True,
        "note": turn.note,
        "added": [_change_row(changes, c) for c in turn.added[:ROWS]],
        "added_more": max(0, len(turn.added) - ROWS),
        "removed": [_change_row(changes, c) for c in turn.removed[:ROWS]],
        "removed_more": max(0, len(turn.removed) - ROWS),
        "compactions": groups,
        "kept": turn.kept,
        "unnamed": turn.unnamed,
        "counts": counts,
    }


def forgotten_state(node: NodeState, index: int) -> dict[str, Any]:
    """Every message the view held at some turn up to `index` and no longer held at it: the
    turn it left, why, and a compaction that later took it out of storage."""
    changes = context_changes(node)
    key = (index, len(changes.turns))
    if changes.forgotten is not None and changes.forgotten[0] == key:
        return changes.forgotten[1]
    turns = node.turn_log
    found: list[tuple[int, int, Change]] = []
    for item, record in changes.items.items():
        spell = next(
            (n for n in range(len(record.spells) - 1, -1, -1) if record.spells[n][0] <= index),
            None,
        )
        if spell is None or spell >= len(record.left) or record.left[spell] > index:
            continue  # not yet in view by then, or still in view
        change = record.spells[spell][1]
        if change is not None:
            found.append((record.left[spell], item, change))
    found.sort(key=lambda entry: (-entry[0], entry[1]))
    rows = []
    for left, item, change in found[:FORGOTTEN_ROWS]:
        record = changes.items[item]
        row = _change_row(changes, change)
        row["left"] = turns[left].number
        row["entered"] = turns[record.spells[0][0]].number
        if record.left[0] == record.spells[0][0]:
            row["never_shown"] = True
        compacted = record.compaction
        if compacted is not None and compacted.at <= index and change.seq != compacted.seq:
            how = "summarised" if compacted.summary is not None else "truncated"
            row["then"] = f"then {how} before turn {turns[compacted.at].number}"
            row["then_seq"] = compacted.seq
        rows.append(row)
    state = {
        "turn": turns[index].number if 0 <= index < len(turns) else None,
        "rows": rows,
        "more": max(0, len(found) - FORGOTTEN_ROWS),
        "total": len(found),
    }
    changes.forgotten = (key, state)
    return state
