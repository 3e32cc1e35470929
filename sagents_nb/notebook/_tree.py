"""The delegation tree the view draws: each node's figures rolled up from its subtree, and the
rows shown. A node with many children lists a page of them and one aggregate row for the rest
("87 more children: 80 done, 7 error"), which opens a page at a time, so that a tree of 10,000
nodes sends and draws a few hundred rows; the node chosen (or followed) is always in sight, and
the filter looks through every node, listed or not."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._base.prices import PriceBook
from .._runtime.costs import NodeSpend, priced
from ._projector import Projector
from ._render import clip
from ._search import fold
from ._state import NodeState
from ._words import counted

TREE_CHILDREN = 20
"""Children a node lists before its aggregate row."""
TREE_PAGE = 100
"""Children one click on an aggregate row adds to those listed."""
SHOWN = {"spawned": "queued"}
"""The tree's word for a status where it differs (`parts.js` SHOWN)."""


def shown(status: str) -> str:
    """A status as the tree names it."""
    return SHOWN.get(status, status)


@dataclass
class TreeAsk:
    """What the person asked of the tree: which node to keep in sight, how many children of a
    node to list, and the filter."""

    pinned: str | None = None
    """A node listed whatever its place among its siblings (with its ancestors)."""
    more: Mapping[str, int] = field(default_factory=dict)
    """Children listed, by node, where an aggregate row was opened (`TREE_CHILDREN` elsewhere)."""
    filter: str = ""
    """Nodes whose name, kind, status, prompt, tools or call statuses hold this text, and
    their ancestors (empty: every node)."""


class Tree:
    """The tree's state for the front end (`state`), with what every node rolls up worked out
    once per projector version (again for the nodes changed since), whatever the rows asked."""

    def __init__(self) -> None:
        self._version = -1
        self._root: str | None = None
        self._prices: PriceBook | None = None
        self._seen: dict[str, tuple[NodeState, int, str]] = {}
        """Each node as last rolled up: its object, its version and its status as shown."""
        self._totals: dict[str, tuple[int, int, int, int]] = {}
        self._statuses: Counter[str] = Counter()
        self._costs: dict[str, dict[str, Any]] = {}
        self._words: dict[str, tuple[NodeState, int, str]] = {}
        self._matched: tuple[tuple[str, int], set[str]] | None = None

    def state(self, projector: Projector, ask: TreeAsk | None = None) -> dict[str, Any]:
        """The tree as nested rows: a node's fields (`_row`), its listed `children`, and `more`
        (the aggregate row: how many children are not listed, by status) when some are not; the
        root also carries `summary` (every node, by status), `filter` and `matched`."""
        if projector.root is None:
            return {}
        ask = ask or TreeAsk()
        self._update(projector)
        text = fold(ask.filter.strip())
        visible = self._visible(projector, text)
        root = projector.root
        pinned = ask.pinned if ask.pinned in projector.nodes else None
        if visible is not None and root not in visible:
            state = {**self._row(projector, projector.nodes[root]), "children": []}
        else:
            state = self._branch(projector, root, visible, pinned, ask.more)
        state["summary"] = {"nodes": sum(self._statuses.values()), "statuses": dict(self._statuses)}
        state["filter"] = ask.filter
        state["matched"] = len(projector.nodes) if visible is None else len(visible)
        return state

    def _update(self, projector: Projector) -> None:
        """Roll up again only the nodes whose state changed since the last version (a node's
        `version` moves with each change; a view that took a folded projector over has new
        node objects) and their ancestors: a push during a run of 1,000 nodes redoes a few."""
        if self._version == projector.version:
            return
        self._version = projector.version
        nodes = projector.nodes
        seen = self._seen
        if (
            projector.root != self._root
            or projector.prices is not self._prices
            or not (seen.keys() <= nodes.keys())
        ):
            self._root, self._prices = projector.root, projector.prices
            seen.clear()
            self._totals, self._statuses, self._costs = {}, Counter(), {}
        changed = []
        for path, node in nodes.items():
            kept = seen.get(path)
            if kept is None or kept[0] is not node or kept[1] != node.version:
                changed.append(path)
        dirty: set[str] = set()
        for path in changed:
            at: str | None = path
            while at is not None and at not in dirty:
                dirty.add(at)
                at = nodes[at].parent
        totals, statuses, costs = self._totals, self._statuses, self._costs
        # deepest first: a node's children are summed before it
        for path in sorted(dirty, key=lambda path: path.count("/"), reverse=True):
            node = nodes[path]
            tokens, prompt, completion, below = (
                node.tokens,
                node.prompt_tokens,
                node.completion_tokens,
                0,
            )
            for child in node.children:
                t = totals[child]
                tokens, prompt, completion, below = (
                    tokens + t[0],
                    prompt + t[1],
                    completion + t[2],
                    below + 1 + t[3],
                )
            totals[path] = (tokens, prompt, completion, below)
            costs.pop(path, None)
        for path in changed:
            node = nodes[path]
            kept = seen.get(path)
            status = shown(node.status)
            if kept is not None:
                statuses[kept[2]] -= 1
                if not statuses[kept[2]]:
                    del statuses[kept[2]]
            statuses[status] += 1
            seen[path] = (node, node.version, status)

    def _visible(self, projector: Projector, text: str) -> set[str] | None:
        if not text:
            return None
        if self._matched is not None and self._matched[0] == (text, self._version):
            return self._matched[1]
        keep: set[str] = set()
        nodes = projector.nodes
        for path, node in nodes.items():
            if path in keep or text not in self._haystack(node):
                continue
            at: str | None = path
            while at is not None and at not in keep:
                keep.add(at)
                at = nodes[at].parent
        self._matched = ((text, self._version), keep)
        return keep

    def _haystack(self, node: NodeState) -> str:
        """What the filter looks in (folded as the search folds), kept per node and version
        (a view whose stored log was folded apart takes new node objects over)."""
        kept = self._words.get(node.path)
        if kept is not None and kept[0] is node and kept[1] == node.version:
            return kept[2]
        words = [node.path, node.agent, node.kind, shown(node.status)]
        words += [_one_line(node.prompt or node.display_text) or "", _call_words(node)]
        text = fold(" ".join(words))
        self._words[node.path] = (node, node.version, text)
        return text

    def _branch(
        self,
        projector: Projector,
        path: str,
        visible: set[str] | None,
        pinned: str | None,
        more: Mapping[str, int],
    ) -> dict[str, Any]:
        nodes = projector.nodes
        node = nodes[path]
        children = node.children
        if visible is not None:
            children = [child for child in children if child in visible]
        limit = max(TREE_CHILDREN, more.get(path, TREE_CHILDREN))
        listed, hidden = children[:limit], children[limit:]
        if pinned is not None and hidden:
            on_path = [c for c in hidden if pinned == c or pinned.startswith(c + "/")]
            if on_path:
                listed = [*listed, *on_path]
                hidden = [c for c in hidden if c not in on_path]
        state = self._row(projector, node)
        state["children"] = [
            self._branch(projector, child, visible, pinned, more) for child in listed
        ]
        if hidden:
            statuses = Counter(shown(nodes[child].status) for child in hidden)
            state["more"] = {
                "count": len(hidden),
                "listed": limit,
                "page": TREE_PAGE,
                "statuses": statuses.most_common(),
            }
        return state

    def _row(self, projector: Projector, node: NodeState) -> dict[str, Any]:
        tokens, prompt, completion, below = self._totals[node.path]
        return {
            "id": node.path,
            "agent": node.agent,
            "kind": node.kind,
            "status": node.status,
            "detail": clip(node.detail, 500),
            "turns": node.turns,
            "tokens": tokens,
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "display_text": node.display_text,
            "prompt": _one_line(node.prompt or node.display_text),
            "descendants": below,
            "reattached": node.reattached,
            "refused": [clip(reason, 500) for reason in node.refused],
            "calls": _call_words(node),
            "cost": self._cost(projector, node),
        }

    def _cost(self, projector: Projector, node: NodeState) -> dict[str, Any]:
        kept = self._costs.get(node.path)
        if kept is not None:
            return kept
        spends: list[NodeSpend] = []
        stack = [node.path]
        while stack:
            below = projector.nodes[stack.pop()]
            spends.append(below.spend)
            stack.extend(below.children)
        cost = priced(spends, projector.prices)
        kept = self._costs[node.path] = {
            "estimated_usd": cost.estimated_usd,
            "reported_usd": cost.reported_usd,
            "text": str(cost) if cost.usd is not None or cost.unpriced else "",
        }
        return kept


def more_words(more: Mapping[str, Any]) -> str:
    """An aggregate row in words: `87 more children: 80 done, 7 error`."""
    statuses = ", ".join(f"{count} {status}" for status, count in more["statuses"])
    return f"{counted(more['count'], 'more child', 'more children')}: {statuses}"


def tree_state(projector: Projector, ask: TreeAsk | None = None) -> dict[str, Any]:
    """The delegation tree as the front end draws it (`Tree.state`), worked out afresh."""
    return Tree().state(projector, ask)


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
