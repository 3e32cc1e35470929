"""Node snapshots: a node's state besides its messages, as plain data and back, and what its
kind keeps (`dump_state`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pydantic_core

if TYPE_CHECKING:
    from .node import Node


NODE_FIELDS = (
    "agent",
    "kind",
    "parent",
    "position",
    "status",
    "turns",
    "task_turns",
    "task_tool_calls",
    "task_tokens",
    "usage",
    "counters",
    "persistent",
    "input_index",
    "input_text",
    "display_text",
    "reattached",
    "refused",
    "notices",
    "outcome",
)
"""The keys of a node snapshot, in the order of `node_values`."""


def node_values(node: Node) -> tuple[Any, ...]:
    """The node's state besides its messages and kind, as a tuple in `NODE_FIELDS` order (a
    copy: cheap to take and compare on the loop; `node_state` makes the stored dict)."""
    outcome = node.last_outcome
    usage = node.usage
    parent = node.parent
    counters, persistent = node.counters, node.persistent
    return (
        node.agent.name,
        node.kind.name,
        parent.path if parent is not None else None,
        parent.order.index(node) if parent is not None else 0,
        node.status,
        node.turns,
        node.task_turns,
        node.task_tool_calls,
        node.task_tokens,
        (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens),
        tuple(counters.items()) if counters else (),
        tuple((name, child.path) for name, child in persistent.items()) if persistent else (),
        node.input_index,
        node.input_text,
        node.display_text,
        node.reattached,
        tuple(node.refused),
        tuple(node.notices),
        (outcome.status, outcome.text) if outcome is not None else None,
    )


_MAPPINGS = frozenset({"counters", "persistent"})
"""Fields `node_values` keeps as tuples of items and a snapshot stores as objects."""


def stored_field(name: str, value: Any) -> Any:
    """A `node_values` field as a snapshot stores it (tuples are JSON arrays)."""
    return dict(value) if name in _MAPPINGS else value


def node_state(values: tuple[Any, ...]) -> dict[str, Any]:
    """A snapshot from `node_values`: status, counters, outcome..."""
    return {name: stored_field(name, v) for name, v in zip(NODE_FIELDS, values, strict=True)}


def node_values_of(state: dict[str, Any]) -> tuple[Any, ...]:
    """`node_values` of a stored snapshot (to compare the next ones with)."""
    values = []
    for name in NODE_FIELDS:
        value = state[name]
        if name in _MAPPINGS:
            value = tuple(value.items())
        elif isinstance(value, list):
            value = tuple(value)
        values.append(value)
    return tuple(values)


def kind_state(node: Node) -> str | None:
    """The JSON of what the node's kind keeps besides the messages, tagged with the kind's name
    (`{"kind": name, "state": dump_state(node)}`); None if it keeps nothing."""
    kind = node.kind
    state = kind.dump_state(node)
    return dump_json({"kind": kind.name, "state": state}) if state is not None else None


def dump_json(data: Any) -> str:
    """Compact JSON text, as snapshots are stored."""
    return pydantic_core.to_json(data).decode()
