"""`sn.diff(a, b)`: two sessions side by side (a fork and its origin, or any two): the first event
where they part, and each node's answer, tokens and turns in both."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._base.checks import refuse
from .._base.messages import Message
from ..events import Event, event_fields

if TYPE_CHECKING:
    from .._runtime.result import TreeNode
    from .._runtime.session import Session

_UNCOMPARED = frozenset({"seq", "ts", "duration", "delay"})
"""Event fields two runs of the same event differ in: where and when it was logged, how long it
took or waited."""


@dataclass(frozen=True)
class NodeSide:
    """One node in one of the two sessions."""

    status: str
    kind: str
    answer: str | None
    tokens: int
    """Its own model calls' tokens (its children's not counted)."""
    turns: int


@dataclass(frozen=True)
class NodeDiff:
    """A node path and what it is in each session (None where that session has no such node)."""

    path: str
    a: NodeSide | None
    b: NodeSide | None

    @property
    def same(self) -> bool:
        return self.a == self.b


@dataclass(frozen=True)
class SessionDiff:
    """What `sn.diff(a, b)` found. `first` is the index in both logs of the first event that is
    not the same in both (None: the logs are equal), `a_event` / `b_event` the events there
    (None past the end of the shorter log); `nodes` every node of either tree, in tree order."""

    a_id: str
    b_id: str
    a_events: int
    b_events: int
    first: int | None
    a_event: Event | None
    b_event: Event | None
    nodes: list[NodeDiff]
    fork_seq: int | None
    """The event `b` was forked from `a` at (or `a` from `b`), when one is the other's fork."""

    @property
    def same(self) -> bool:
        return self.first is None and all(node.same for node in self.nodes)

    def __str__(self) -> str:
        lines = [
            f"sn.diff: session {self.a_id} ({self.a_events} events) vs {self.b_id} ({self.b_events} events)"
        ]
        if self.fork_seq is not None:
            lines.append(f"  forked at event {self.fork_seq}")
        lines.append("  " + self._divergence())
        for node in self.nodes:
            mark = "=" if node.same else "≠"
            lines.append(f"  {mark} {node.path}")
            for label, side in (("a", node.a), ("b", node.b)):
                lines.append(f"      {label}: {_side_text(side)}")
        return "\n".join(lines)

    def _divergence(self) -> str:
        if self.first is None:
            return "the events are the same"
        return (
            f"first diverging event #{self.first + 1}: a {_event_text(self.a_event)} | "
            f"b {_event_text(self.b_event)}"
        )

    def _repr_html_(self) -> str:
        esc = html.escape
        rows = []
        for node in self.nodes:
            cells = "".join(
                f"<td>{esc(_side_text(side, answer=False))}</td>"
                f'<td style="white-space:pre-wrap">{esc(side.answer or "") if side else ""}</td>'
                for side in (node.a, node.b)
            )
            mark = "=" if node.same else "≠"
            rows.append(f"<tr><td>{mark}</td><td><code>{esc(node.path)}</code></td>{cells}</tr>")
        forked = f" · forked at event {self.fork_seq}" if self.fork_seq is not None else ""
        return (
            '<div class="sn-diff">'
            f"<div><b>sn.diff</b>: session <code>{esc(self.a_id)}</code> ({self.a_events} events)"
            f" vs <code>{esc(self.b_id)}</code> ({self.b_events} events){forked}</div>"
            f'<div class="sn-diff-first">{esc(self._divergence())}</div>'
            "<table><thead><tr><th></th><th>node</th><th>a</th><th>a's answer</th><th>b</th>"
            f"<th>b's answer</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able copy (what the live view draws)."""
        return {
            "a": self.a_id,
            "b": self.b_id,
            "fork_seq": self.fork_seq,
            "divergence": self._divergence(),
            "nodes": [
                {
                    "path": node.path,
                    "same": node.same,
                    "a": _side_dict(node.a),
                    "b": _side_dict(node.b),
                }
                for node in self.nodes
            ],
        }


def diff(a: Session, b: Session) -> SessionDiff:
    """Compare two sessions: the first event where they part, each node's answer side by side,
    its tokens and turns in each."""
    for name, value in (("a", a), ("b", b)):
        if not (hasattr(value, "events") and hasattr(value, "tree")):
            refuse(name, value, "an sn.Session", where="sn.diff(a, b)")
    first = _first_difference(a.events, b.events, _shared(a, b))
    nodes = _nodes(a, b)
    return SessionDiff(
        a.id,
        b.id,
        len(a.events),
        len(b.events),
        first,
        _at(a.events, first),
        _at(b.events, first),
        nodes,
        _fork_seq(a, b),
    )


def _shared(a: Session, b: Session) -> int:
    """How many first events the two hold by construction: those one read from the other's
    store when it was forked from it or reopened (the same rows: not decoded to be compared)."""
    if a.store is None or a.store is not b.store:
        return 0
    shared = max(b.stored_from.get(a.id, 0), a.stored_from.get(b.id, 0))
    return min(shared, len(a.events), len(b.events))


def _first_difference(a: Sequence[Event], b: Sequence[Event], shared: int) -> int | None:
    if shared:
        a, b = a[shared:], b[shared:]
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x is not y and not _same_event(x, y):
            return shared + index
    return None if len(a) == len(b) else shared + min(len(a), len(b))


def _same_event(x: Event, y: Event) -> bool:
    if type(x) is not type(y):
        return False
    mine, theirs = event_fields(x), event_fields(y)
    for key, value in mine.items():
        other = theirs[key]
        if value is other or key in _UNCOMPARED:
            continue
        if _plain(value) != _plain(other):
            return False
    return True


def _plain(value: Any) -> Any:
    """Messages as their wire dicts (built once per message), compared at C speed."""
    if isinstance(value, Message):
        return value.to_wire()
    if isinstance(value, list | tuple) and value and isinstance(value[0], Message):
        return [m.to_wire() if isinstance(m, Message) else m for m in value]
    return value


def _at(events: Sequence[Event], index: int | None) -> Event | None:
    return events[index] if index is not None and index < len(events) else None


def _fork_seq(a: Session, b: Session) -> int | None:
    for one, other in ((a, b), (b, a)):
        store = other.store
        if store is None:
            continue
        for stored in store.sessions():
            if stored.id == other.id and stored.parent == one.id:
                return stored.fork_seq
    return None


def _nodes(a: Session, b: Session) -> list[NodeDiff]:
    sides_a, sides_b = _sides(a), _sides(b)
    paths = list(sides_a) + [path for path in sides_b if path not in sides_a]
    return [NodeDiff(path, sides_a.get(path), sides_b.get(path)) for path in paths]


def _sides(session: Session) -> dict[str, NodeSide]:
    sides: dict[str, NodeSide] = {}
    stack: list[TreeNode] = [session.tree]
    while stack:
        tree = stack.pop()
        node = session.node(tree.id)
        outcome = node.last_outcome if node is not None else None
        sides[tree.id] = NodeSide(
            tree.status,
            tree.kind,
            outcome.text if outcome is not None else None,
            tree.own_usage.total_tokens,
            tree.turns,
        )
        stack.extend(reversed(tree.children))
    return sides


def _event_text(event: Event | None) -> str:
    if event is None:
        return "(no more events)"
    return f"{event.type} at {event.path} (seq {event.seq})"


def _side_text(side: NodeSide | None, *, answer: bool = True) -> str:
    if side is None:
        return "(no such node)"
    text = f"{side.status} · {side.kind} · {side.turns} turns · {side.tokens} tokens"
    if answer and side.answer is not None:
        short = side.answer if len(side.answer) <= 200 else side.answer[:199] + "…"
        text += f" · {short!r}"
    return text


def _side_dict(side: NodeSide | None) -> dict[str, Any] | None:
    if side is None:
        return None
    return {
        "status": side.status,
        "kind": side.kind,
        "answer": side.answer,
        "tokens": side.tokens,
        "turns": side.turns,
    }
