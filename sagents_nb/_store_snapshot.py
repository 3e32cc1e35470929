"""Node snapshots: a node's state besides its messages, to JSON and back (built-in kinds' too)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ._messages import Usage
from ._node import Outcome
from .kinds import Main, Realtime, Resident, kind_name

if TYPE_CHECKING:
    from ._node import Node


def dump_node(node: Node) -> str:
    """The node's state as JSON text: counters, status, children, outcome and kind state."""
    outcome = node.last_outcome
    state = {
        "agent": node.agent.name,
        "kind": kind_name(node.kind),
        "parent": node.parent.path if node.parent is not None else None,
        "status": node.status,
        "turns": node.turns,
        "task_turns": node.task_turns,
        "task_tool_calls": node.task_tool_calls,
        "task_tokens": node.task_tokens,
        "usage": node.usage.model_dump(),
        "counters": node.counters,
        "children": [child.path for child in node.order],
        "persistent": {name: child.path for name, child in node.persistent.items()},
        "input_index": node.input_index,
        "input_text": node.input_text,
        "display_text": node.display_text,
        "reattached": node.reattached,
        "refused": node.refused,
        "notices": node.notices,
        "outcome": [outcome.status, outcome.text] if outcome is not None else None,
        "kind_state": _dump_kind_state(node),
    }
    return json.dumps(state, ensure_ascii=False, separators=(",", ":"))


def load_node(node: Node, state: dict[str, Any]) -> None:
    """Put a snapshot's fields back on `node` (its history must already be restored)."""
    node.status = state["status"]
    node.turns = state["turns"]
    node.task_turns = state["task_turns"]
    node.task_tool_calls = state["task_tool_calls"]
    node.task_tokens = state["task_tokens"]
    node.usage = Usage(**state["usage"])
    node.counters = dict(state["counters"])
    node.input_index = state["input_index"]
    node.input_text = state["input_text"]
    node.display_text = state["display_text"]
    node.reattached = state["reattached"]
    node.refused = list(state["refused"])
    node.notices = list(state["notices"])
    outcome = state["outcome"]
    node.last_outcome = Outcome(*outcome) if outcome is not None else None
    _load_kind_state(node, state["kind"], state["kind_state"])


def _dump_kind_state(node: Node) -> dict[str, Any] | None:
    kind = node.kind
    state = node.kind_state.get(kind_name(kind))
    if state is None:
        return None
    if isinstance(kind, Main):
        return {"cold": [[group.start, group.end] for group in state.cold]}
    if isinstance(kind, Resident):
        return {"latched": state.latched, "compactions": state.compactions}
    if isinstance(kind, Realtime):
        return {"dropped": state.dropped}
    return None


def _load_kind_state(node: Node, stored_kind: str, data: dict[str, Any] | None) -> None:
    """Rebuild a built-in kind's state; a kind that changed since keeps only the history."""
    kind = node.kind
    if data is None or kind_name(kind) != stored_kind:
        return
    if isinstance(kind, Main):
        main = kind._state(node)
        cold = {(start, end) for start, end in data["cold"]}
        main.cold = [g for g in main.hot if (g.start, g.end) in cold]
        main.hot = [g for g in main.hot if (g.start, g.end) not in cold]
    elif isinstance(kind, Resident):
        resident = kind._state(node)
        resident.latched = data["latched"]
        resident.compactions = data["compactions"]
    elif isinstance(kind, Realtime):
        kind._state(node).dropped = data["dropped"]
