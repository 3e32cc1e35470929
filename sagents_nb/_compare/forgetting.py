"""What each variant forgot: per agent and turn, the facts it had been given or produced that its
view no longer held, and the first turn at which two variants' views differ.

Within a run a stored message is one fact however often its text recurs: a view's messages are
told apart by identity (`ContextBuilt.from_storage`), by text only where a log or kind does not
say. Across runs (divergence) there is no identity to share, so views are compared by text.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._base.messages import Message
from ..events import (
    ColdSink,
    Compaction,
    ContextBuilt,
    ContextFull,
    Event,
    Fold,
    ModelRequest,
    ModelResponse,
    RunStarted,
    TaskSpawned,
    WindowTrim,
)
from .record import RunRecord

Key = tuple[Any, ...]


def message_key(message: Message) -> Key:
    """What makes two messages the same fact across runs: role, text and the calls asked for
    (call ids differ between runs, so they are left out)."""
    calls = tuple((c.name, c.arguments) for c in message.tool_calls or ())
    return (message.role, message.content or "", calls)


class StoredMessages:
    """Numbers each node's stored messages as they first appear and follows its storage as it
    changes (only a compaction rewrites it: its first `removed` go, its summary comes first),
    so that `from_storage` names which message a view holds, duplicates of a text apart."""

    def __init__(self) -> None:
        self.items: dict[str, list[int]] = {}
        self.next = 0

    def _new(self) -> int:
        self.next += 1
        return self.next - 1

    def compact(self, event: Compaction) -> None:
        items = self.items.setdefault(event.path, [])
        del items[: event.removed]
        if event.strategy == "summary" and event.summary:
            items.insert(0, self._new())

    def fit(self, path: str, count: int) -> None:
        """Number what was stored since the last look (storage grows between compactions)."""
        items = self.items.setdefault(path, [])
        del items[count:]
        items.extend(self._new() for _ in range(count - len(items)))

    def stored(self, path: str) -> Key:
        """The key of a message stored next (a reply, kept right after its turn's view)."""
        item = self._new()
        self.items.setdefault(path, []).append(item)
        return ("stored", path, item)

    def keys(self, path: str, runs: list[int], size: int) -> list[Key | None]:
        """Each view message's key by identity, None for one that is not stored (the prompt)."""
        items = self.items.get(path, [])
        keys: list[Key | None] = [None] * size
        for start in range(0, len(runs) - 2, 3):
            at, first, count = runs[start : start + 3]
            for offset in range(count):
                if first + offset < len(items) and at + offset < size:
                    keys[at + offset] = ("stored", path, items[first + offset])
        return keys


def preview(message: Message, width: int = 60) -> str:
    """A short one-line text for a message."""
    text = message.content or ", ".join(
        f"{c.name}({c.arguments})" for c in message.tool_calls or ()
    )
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


@dataclass(frozen=True)
class Fact:
    """A message an agent was given or produced: a user or task input, a tool result, a reply."""

    role: str
    text: str
    """A one-line preview."""
    turn: int
    """The agent turn it was first known at."""
    key: Key = field(repr=False, compare=True)


@dataclass
class Turn:
    """One model request of an agent (its instances' turns numbered together, in order)."""

    turn: int
    path: str
    seq: int
    view: list[Message] = field(repr=False)
    tokens: int
    """The view's size (tokens, as the session counted it)."""
    known: int
    """Facts known by this turn."""
    forgotten: list[Fact]
    """Known facts the view did not hold."""
    markers: list[str] = field(default_factory=list)
    """Compactions, sinks, trims and context_full signals that took effect at this turn."""


AGENTS: Fold[Callable[[dict[str, str], Any], None]] = Fold("forgetting: agents", sees_all=False)
"""Where `agent_of_paths` learns a node path's agent."""


@AGENTS.handles(RunStarted)
def _root_agent(agents: dict[str, str], event: RunStarted) -> None:
    agents[event.path] = event.agent


@AGENTS.handles(TaskSpawned)
def _child_agent(agents: dict[str, str], event: TaskSpawned) -> None:
    agents[event.child] = event.agent


def agent_of_paths(events: list[Event]) -> dict[str, str]:
    """Each node path's agent name."""
    agents: dict[str, str] = {}
    AGENTS.into(agents, events)
    return agents


TURNS: Fold[Callable[[_Turns, Any], None]] = Fold("forgetting", sees_all=False)
"""What each event class does to the facts and turns `turns_by_agent` follows."""


class _Turns:
    """The state of one run's fold into every agent's turns (`turns_by_agent`)."""

    def __init__(self, events: list[Event]) -> None:
        self.agents = agent_of_paths(events)
        self.turns: dict[str, list[Turn]] = {}
        self.known: dict[str, dict[Key, Fact]] = {}
        self.texts: dict[str, dict[Key, Key]] = {}  # each fact's key -> its text's key
        self.known_texts: dict[str, set[Key]] = {}
        self.sizes: dict[str, int] = {}
        self.runs: dict[str, list[int] | None] = {}
        self.pending: dict[str, list[str]] = {}
        self.summarising: dict[str, bool] = {}
        self.storage = StoredMessages()

    def agent(self, path: str) -> str:
        return self.agents.get(path) or path.rpartition("/")[2].rpartition(".")[0] or path

    @TURNS.handles(ColdSink, WindowTrim, ContextFull)
    def _marker(self, event: Event) -> None:
        self.pending.setdefault(self.agent(event.path), []).append(event.type)

    @TURNS.handles(Compaction)
    def _compaction(self, event: Compaction) -> None:
        self._marker(event)
        self.storage.compact(event)

    @TURNS.handles(ContextBuilt)
    def _context_built(self, event: ContextBuilt) -> None:
        self.sizes[event.path] = event.view_tokens
        self.runs[event.path] = event.from_storage
        self.storage.fit(event.path, event.storage_messages)

    @TURNS.handles(ModelRequest)
    def _model_request(self, event: ModelRequest) -> None:
        tokens = self.sizes.pop(event.path, None)
        self.summarising[event.path] = tokens is None  # a compaction's summary call, not a turn
        if tokens is None:
            return
        name = self.agent(event.path)
        facts = self.known.setdefault(name, {})
        text_of, told = self.texts.setdefault(name, {}), self.known_texts.setdefault(name, set())
        number = len(self.turns.get(name, ())) + 1
        mapped = self.runs.get(event.path)
        stored = (
            self.storage.keys(event.path, mapped, len(event.messages))
            if mapped is not None
            else [None] * len(event.messages)
        )
        held, held_texts = set(), set()
        for message, identity in zip(event.messages, stored, strict=True):
            text = message_key(message)
            key = identity or text
            held.add(key)
            if identity is None:  # told by its text: an old log, a kind's own message
                held_texts.add(text)
            if message.role == "system" or key in facts:
                continue
            if identity is None and text in told:
                continue  # a stored message's text, shown as a copy: the same fact
            facts[key] = Fact(message.role, preview(message), number, key)
            text_of[key] = text
            told.add(text)
        self.turns.setdefault(name, []).append(
            Turn(
                number,
                event.path,
                event.seq,
                event.messages,
                tokens,
                len(facts),
                [f for k, f in facts.items() if k not in held and text_of[k] not in held_texts],
                self.pending.pop(name, []),
            )
        )

    @TURNS.handles(ModelResponse)
    def _model_response(self, event: ModelResponse) -> None:
        if self.summarising.get(event.path):
            return
        name = self.agent(event.path)
        facts = self.known.setdefault(name, {})
        text = message_key(event.message)
        key = self.storage.stored(event.path) if self.runs.get(event.path) is not None else text
        number = len(self.turns.get(name, ())) + 1
        if key not in facts:
            facts[key] = Fact("assistant", preview(event.message), number, key)
            self.texts.setdefault(name, {})[key] = text
            self.known_texts.setdefault(name, set()).add(text)


def turns_by_agent(events: list[Event]) -> dict[str, list[Turn]]:
    """Every agent's turns in a run, with what each forgot."""
    state = _Turns(events)
    TURNS.into(state, events)
    for name, left in state.pending.items():  # after the agent's last turn: mark that turn
        if state.turns.get(name):
            state.turns[name][-1].markers.extend(left)
    return state.turns


def first_divergence(a: list[Turn], b: list[Turn]) -> int | None:
    """The first turn at which two runs' views of an agent differ (a turn one of them did not
    make counts); None when they are the same throughout."""
    for turn_a, turn_b in zip(a, b, strict=False):
        if list(map(message_key, turn_a.view)) != list(map(message_key, turn_b.view)):
            return turn_a.turn
    if len(a) != len(b):
        return min(len(a), len(b)) + 1
    return None


class ForgettingReport:
    """What each variant of one item forgot, per agent and turn, and where variants diverge.

    `report.turns[variant][agent]` lists `Turn`s; `report.forgotten(variant, agent)` the facts
    forgotten at each turn; `report.divergence(a, b)` the first differing turn per agent.
    """

    def __init__(self, records: list[RunRecord]) -> None:
        self.item = records[0].item if records else None
        self.variants = [r.variant for r in records]
        self.turns: dict[str, dict[str, list[Turn]]] = {
            r.variant: turns_by_agent(r.events) for r in records
        }

    @property
    def agents(self) -> list[str]:
        """Agents with turns in some variant, in the order they first spoke."""
        names: dict[str, None] = {}
        for by_agent in self.turns.values():
            names.update(dict.fromkeys(by_agent))
        return list(names)

    def forgotten(self, variant: str, agent: str) -> dict[int, list[Fact]]:
        """Turn -> facts `agent` had but did not see at that turn, under `variant`."""
        return {t.turn: t.forgotten for t in self._turns(variant, agent)}

    def divergence(self, a: str, b: str) -> dict[str, int | None]:
        """Agent -> the first turn at which variants `a` and `b` showed it different views."""
        return {
            agent: first_divergence(self._turns(a, agent), self._turns(b, agent))
            for agent in self.agents
        }

    def _turns(self, variant: str, agent: str) -> list[Turn]:
        if variant not in self.turns:
            raise KeyError(f"no variant {variant!r} (variants: {', '.join(self.variants)})")
        return self.turns[variant].get(agent, [])

    @property
    def rows(self) -> list[dict[str, Any]]:
        """One row per (variant, agent, turn): view size, facts known and forgotten."""
        return [
            {
                "variant": variant,
                "agent": agent,
                "turn": t.turn,
                "path": t.path,
                "view_messages": len(t.view),
                "view_tokens": t.tokens,
                "known": t.known,
                "forgotten": len(t.forgotten),
                "forgotten_facts": [f.text for f in t.forgotten],
                "markers": list(t.markers),
            }
            for variant, by_agent in self.turns.items()
            for agent, turns in by_agent.items()
            for t in turns
        ]

    def lines(self) -> list[str]:
        """The report as text lines: per agent, what each variant forgot, then divergences."""
        lines: list[str] = []
        for agent in self.agents:
            lines.append(f"{agent}:")
            for variant in self.variants:
                turns = self._turns(variant, agent)
                lost = [t for t in turns if t.forgotten]
                if not turns:
                    lines.append(f"  {variant}: no turns")
                elif not lost:
                    lines.append(f"  {variant}: forgot nothing over {len(turns)} turns")
                else:
                    first = lost[0]
                    facts = "; ".join(repr(f.text) for f in first.forgotten[:3])
                    more = len(first.forgotten) - 3
                    lines.append(
                        f"  {variant}: first forgot at turn {first.turn} "
                        f"({len(first.forgotten)} facts: {facts}{f' +{more}' if more > 0 else ''})"
                        f", most at once {max(len(t.forgotten) for t in turns)}"
                    )
            for i, a in enumerate(self.variants):
                for b in self.variants[i + 1 :]:
                    turn = first_divergence(self._turns(a, agent), self._turns(b, agent))
                    where = f"diverge at turn {turn}" if turn is not None else "never diverge"
                    lines.append(f"  {a} vs {b}: views {where}")
        return lines

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return f"ForgettingReport(variants={self.variants}, agents={self.agents})"

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(str(self))}</pre>"
