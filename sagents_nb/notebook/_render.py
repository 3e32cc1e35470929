"""Shared pieces of the JSON the front end draws, and the delegation tree."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, assert_never

from .._base.messages import Message, ToolCall
from .._runtime.costs import priced
from ..events import RunStarted, TaskSpawned, ToolCallFinished
from ._projector import Projector
from ._state import NodeState, Stored

# Text goes out raw (the front end inserts it as text, never as HTML) and clipped, so one update
# stays small however long a run gets.
TEXT_LIMIT = 20_000
JSON_LIMIT = 12_000
ROWS = 200
"""Rows (messages, cards, events) one pane shows at most; older ones are counted."""


def clip(text: str | None, limit: int = TEXT_LIMIT) -> str:
    """`text`, cut at `limit` characters with a note saying how much was left out."""
    text = text or ""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


def as_json(value: Any, limit: int = JSON_LIMIT) -> str:
    """Indented JSON text of `value`, clipped."""
    try:
        text = json.dumps(value, indent=1, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return clip(text, limit)


def message_parts(item: Stored) -> tuple[str, str | None, str | None, tuple[ToolCall, ...]]:
    """Role, content, answered call id and tool calls of a stored item."""
    match item:
        case Message():
            return item.role, item.content, item.tool_call_id, item.tool_calls or ()
        case ToolCallFinished():
            return "tool", item.result, item.call_id, ()
        case TaskSpawned():
            return "user", item.prompt, None, ()
        case RunStarted():
            return "user", item.input, None, ()
        case _:
            assert_never(item)


def message_state(item: Stored, mark: str | None = None) -> dict[str, Any]:
    """One stored message for the front end."""
    role, content, call_id, calls = message_parts(item)
    data: dict[str, Any] = {"role": role, "text": clip(content)}
    if calls:
        data["calls"] = calls_state(calls)
    if call_id:
        data["call_id"] = call_id
    if mark:
        data["mark"] = mark
    return data


def calls_state(calls: Iterable[ToolCall]) -> list[dict[str, Any]]:
    """Tool calls a model asked for."""
    return [{"id": c.id, "name": c.name, "arguments": clip(c.arguments, 4000)} for c in calls]


def tree_state(projector: Projector) -> dict[str, Any]:
    """The delegation tree, nested, with tokens rolled up from the children."""
    if projector.root is None:
        return {}
    tree = _tree_node(projector, projector.nodes[projector.root])
    tree.pop("_spends")
    return tree


def _tree_node(projector: Projector, node: NodeState) -> dict[str, Any]:
    children = [_tree_node(projector, projector.nodes[path]) for path in node.children]
    spends = [node.spend, *(s for c in children for s in c.pop("_spends"))]
    cost = priced(spends, projector.prices)
    return {
        "id": node.path,
        "agent": node.agent,
        "kind": node.kind,
        "status": node.status,
        "detail": clip(node.detail, 500),
        "turns": node.turns,
        "tokens": node.tokens + sum(child["tokens"] for child in children),
        "prompt_tokens": node.prompt_tokens + sum(c["prompt_tokens"] for c in children),
        "completion_tokens": node.completion_tokens + sum(c["completion_tokens"] for c in children),
        "display_text": node.display_text,
        "prompt": _one_line(node.prompt or node.display_text),
        "descendants": sum(1 + child["descendants"] for child in children),
        "reattached": node.reattached,
        "refused": [clip(reason, 500) for reason in node.refused],
        "calls": _call_words(node),
        "cost": {
            "estimated_usd": cost.estimated_usd,
            "reported_usd": cost.reported_usd,
            "text": str(cost) if cost.usd is not None or cost.unpriced else "",
        },
        "children": children,
        "_spends": spends,
    }


def _call_words(node: NodeState) -> str:
    """The node's tool names and their calls' statuses (and `refused`), for the tree filter."""
    words = {word for card in node.cards.values() for word in (card.name, card.status)}
    if node.refused:
        words.add("refused")
    return " ".join(sorted(words))


def _one_line(text: str | None, limit: int = 160) -> str | None:
    """The first line of `text`, clipped: a label for a tree row."""
    if not text:
        return None
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= limit else f"{line[:limit]}…"
