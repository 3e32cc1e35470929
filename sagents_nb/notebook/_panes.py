"""Which pane the person looks at (`Focus`), and a node's transcript, tool and timeline panes."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..events import (
    ErrorOccurred,
    Event,
    HarnessEventOccurred,
    MessageRefused,
    ModelResponse,
    RunStarted,
    TaskSpawned,
    ToolCallFinished,
)
from ._context_pane import context_pane
from ._decision_pane import decisions_pane, transcript_decision
from ._log_panes import Wire, events_pane, headline, wire_pane
from ._paging import page_of
from ._projector import Projector
from ._render import as_json, calls_state, clip
from ._state import Mark, NodeState, ToolCard
from ._timing_pane import timing_pane
from ._words import counted

TABS = ("transcript", "context", "tools", "compaction", "wire", "events", "timing", "decisions")


@dataclass
class Focus:
    """What the person looks at: a node, a pane, a turn, and the event-log filter."""

    node: str | None = None
    """The node the person chose; None follows the run (`Projector.followed`)."""
    tab: str = "transcript"
    turn: int | None = None
    """Index into the node's turns; None follows the latest."""
    types: list[str] = field(default_factory=list)
    """Event types shown in the log; empty shows all."""
    node_only: bool = False
    opened: list[int] = field(default_factory=list)
    """Events whose JSON the person opened in the log."""
    run: int | None = None
    """The run the Timing tab shows; None: the newest one with the node in it."""
    start: int | None = None
    """Where the page of the pane's list begins; None follows the newest rows."""
    zoom: tuple[int, int] | None = None
    """The range of turn indices the context chart shows; None shows every turn."""
    view_start: int | None = None
    storage_start: int | None = None
    """Where the pages of the context pane's view and storage columns begin; None follows."""
    at: int | None = None
    """The event a search result or `#N` went to: the Events tab shows it, opened."""
    query: str = ""
    """What the search box looks for (`_search.search_state`)."""
    found_start: int | None = None
    """Where the page of search results begins; None: the first page."""
    tree_more: dict[str, int] = field(default_factory=dict)
    """Children the tree lists, by node, where the person opened an aggregate row."""
    tree_filter: str = ""
    """The tree's filter (`_tree.TreeAsk.filter`)."""

    def key(self) -> tuple[Any, ...]:
        return (
            self.node,
            self.tab,
            self.turn,
            tuple(self.types),
            self.node_only,
            tuple(self.opened),
            self.run,
            self.start,
            self.zoom,
            self.view_start,
            self.storage_start,
            self.at,
        )


def pane_state(
    projector: Projector,
    focus: Focus,
    exchanges: Sequence[Any] | Wire | None,
    json_cache: dict[int, str],
) -> dict[str, Any]:
    """The selected node's pane named by `focus.tab`."""
    chosen = focus.node if focus.node in projector.nodes else None
    path = chosen or projector.followed()
    pane: dict[str, Any] = {"node": path, "chosen": chosen, "tab": focus.tab}
    node = projector.nodes.get(path) if path else None
    if projector.loading is not None:  # every pane is folded from the events
        pane["empty"] = projector.loading.words()
    elif focus.tab == "events":
        only = path if focus.node_only else None
        types = set(focus.types)
        pane.update(events_pane(projector, types, only, json_cache, focus.opened, focus.start))
        pane["at"] = focus.at
    elif focus.tab == "wire":
        pane.update(wire_pane(exchanges, node, focus.start))
    elif focus.tab == "timing":
        pane.update(timing_pane(projector, chosen, focus.run))
    elif focus.tab == "decisions":
        pane.update(decisions_pane(projector.decisions))
    elif node is None:
        pane["empty"] = "nothing has happened yet"
    else:
        pane.update(node_pane(projector, node, focus))
    return pane


def node_pane(projector: Projector, node: NodeState, focus: Focus) -> dict[str, Any]:
    """A pane about one node: transcript, context, tool calls or compaction timeline."""
    match focus.tab:
        case "context":
            return context_pane(
                node, focus.turn, focus.zoom, (focus.view_start, focus.storage_start)
            )
        case "tools":
            cards, page = page_of(list(node.cards.values()), focus.start)
            return {"cards": tools_state(cards), "earlier": page["start"], "page": page}
        case "compaction":
            marks, page = page_of(node.timeline, focus.start)
            entries = [mark_state(mark) for mark in marks]
            return {"entries": entries, "earlier": page["start"], "page": page}
        case _:
            return transcript_pane(projector, node, focus.start)


def transcript_pane(
    projector: Projector, node: NodeState, start: int | None = None
) -> dict[str, Any]:
    """One page of the node's conversation as a person reads it (the newest unless `start`
    says where), and any text still streaming."""
    streaming = "".join(node.streaming) if node.asking is not None else ""
    events, page = page_of(node.transcript, start)
    return {
        "entries": [transcript_row(projector, e) for e in events],
        "earlier": page["start"],
        "page": page,
        "streaming": clip(streaming),
    }


def transcript_row(projector: Projector, event: Event) -> dict[str, Any]:
    """One transcript line from the event that said it; an event without a case of its own
    shows as its type and its fields."""
    row: dict[str, Any]
    match event:  # the most frequent first: a pane of 200 rows is made on every push
        case ModelResponse():
            message = event.message
            row = {"seq": event.seq, "role": "assistant", "text": clip(message.content)}
            if message.tool_calls:
                row["calls"] = calls_state(message.tool_calls)
        case ToolCallFinished():
            row = {
                "seq": event.seq,
                "role": "tool",
                "text": clip(event.result),
                "call_id": event.call_id,
                "name": event.name,
                "status": event.status,
            }
            if projector.decisions.by_call:
                decided = transcript_decision(projector.decisions, event.call_id)
                if decided is not None:
                    row["decided"] = decided
        case RunStarted():
            row = {"seq": event.seq, "role": "user", "text": clip(event.input)}
            preprocessed = projector.preprocessed.get(event.run)
            if preprocessed is not None and preprocessed.llm.content != event.input:
                row["sent_as"] = clip(preprocessed.llm.content)
        case TaskSpawned():
            row = {"seq": event.seq, "role": "user", "text": clip(event.prompt)}
        case ErrorOccurred():
            row = {"seq": event.seq, "role": "error"}
            row["text"] = clip(f"{event.error_type}: {event.message}")
        case MessageRefused():
            row = {"seq": event.seq, "role": "user", "name": f"preprocessor {event.preprocessor}"}
            row["status"] = "refused"
            row["text"] = clip(f"message refused, not sent: {event.reason}")
        case HarnessEventOccurred():
            data = event.event
            kind = str(data.get("type", "event"))
            text = data.get("text") or data.get("content") or data.get("message")
            role = {"reasoning": "reasoning", "error": "error"}.get(kind, "cli")
            row = {"seq": event.seq, "role": role, "name": kind}
            row["text"] = clip(str(text or as_json(data)))
            if kind == "done":
                row["facts"] = _run_facts(data)
        case _:
            row = {"seq": event.seq, "role": event.type, "text": headline(event)}
    return row


def _run_facts(done: dict[str, Any]) -> str:
    """A CLI's own account of its run, as one line: turns, time, cost, refusals, session."""
    facts = []
    if isinstance(turns := done.get("turns"), int):
        facts.append(counted(turns, "turn"))
    if isinstance(duration := done.get("duration_ms"), int):
        facts.append(f"{duration / 1000:.1f} s")
    if isinstance(cost := done.get("cost_usd"), int | float):
        facts.append(f"${cost:.4f} at list price")
    if denials := done.get("permission_denials"):
        facts.append(counted(len(denials), "permission denial"))
    if session := done.get("session_id"):
        facts.append(f"session {session}")
    return clip(" · ".join(facts))


def tools_state(cards: Iterable[ToolCard]) -> list[dict[str, Any]]:
    """Tool-call cards: arguments, result, duration, status."""
    return [
        {
            "call_id": card.call_id,
            "name": card.name,
            "arguments": clip(_pretty(card.arguments), 8000),
            "status": card.status,
            "result": None if card.result is None else clip(card.result),
            "duration": card.duration,
            "display_text": card.display_text,
            "child": card.child,
            "notes": [clip(note, 1000) for note in card.notes],
            "seq": card.seq,
        }
        for card in cards
    ]


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=1, ensure_ascii=False)
    except ValueError:
        return arguments


def mark_state(mark: Mark) -> dict[str, Any]:
    """One entry of the compaction timeline."""
    return {
        "seq": mark.seq,
        "type": mark.type,
        "at": mark.at,
        "title": mark.title,
        "details": [[str(k), clip(str(v), 2000)] for k, v in mark.details.items()],
        "text": None if mark.text is None else clip(mark.text),
        "previews": [clip(p, 500) for p in mark.previews],
    }
