"""The delegation tree the view draws: each node's figures rolled up from its subtree, and the
rows shown. A node with many children lists a page of them and one aggregate row for the rest
("87 more children: 80 done, 7 error"), which opens a page at a time, so that a tree of 10,000
nodes sends and draws a few hundred rows; the node chosen (or followed) is always in sight, and
the filter looks through every node, listed or not."""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._base.prices import DEFAULT, PriceBook
from .._runtime.costs import WAITING, CostSum
from .._runtime.restore import collector_paused
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


_DEPTH = operator.methodcaller("count", "/")
"""A node's depth from its path (a sort key without a Python call per node)."""


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
    """The tree's state for the front end (`state`), with what every node rolls up kept as
    running sums: a node changed since the last projector version moves its ancestors' sums by
    the difference it makes, whatever the rows asked.

    Args:
        wait: a cost whose price would load genai-prices' table now says so (`WAITING`) and
            is priced once `warm()` has loaded it (a live view's first paint does not wait);
            False: priced at once.
    """

    def __init__(self, *, wait: bool = True) -> None:
        self.wait = wait
        self.rolls = 0
        """Roll-ups done: the sums may have moved since a state made at a lower count."""
        self._version = -1
        self._root: str | None = None
        self._prices: PriceBook | None = None
        self._seen: dict[str, tuple[NodeState, int, str]] = {}
        """Each node as last rolled up: its object, its version and its status as shown."""
        self._own: dict[str, tuple[tuple[int, int, int], tuple[Any, ...], CostSum | None]] = {}
        """Each node's own tokens, its spending as priced (`_spent`) and what that cost (None:
        nothing)."""
        self._totals: dict[str, list[int]] = {}
        """Tokens, prompt and completion tokens of each node's subtree, and its descendants."""
        self._sums: dict[str, CostSum] = {}
        """The cost of each subtree where a node below its top spent anything (elsewhere the
        subtree costs what its top does: most nodes are leaves)."""
        self._statuses: dict[str, int] = {}
        self._child_statuses: dict[str, dict[str, int]] = {}
        """Each node's children by status as shown (its aggregate row's figures)."""
        self._costs: dict[str, dict[str, Any]] = {}
        self._own_costs: dict[int, tuple[CostSum | None, dict[str, Any]]] = {}
        """The cost row of each own cost, by its id (kept with it: a cost never changes)."""
        self._waiting: set[str] = set()
        """Nodes whose cost waits for genai-prices' table."""
        self._words: dict[str, tuple[NodeState, int, str]] = {}
        self._matched: tuple[tuple[str, int], set[str]] | None = None

    @property
    def waiting(self) -> bool:
        """Whether some cost waits for genai-prices' table (`warm()` loads it)."""
        return bool(self._waiting)

    def priceable(self, projector: Projector) -> bool:
        """Whether costs that waited can be priced now (the table has loaded)."""
        return bool(self._waiting) and not (projector.prices or DEFAULT).loading

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
        """Roll up the nodes whose state changed since the last version (a node's `version`
        moves with each change; a view that took a folded projector over has new node objects),
        and those whose cost waited for the table once it has loaded: each moves its own and
        its ancestors' sums by its difference, so a push during a run of 1,000 nodes costs
        what its changed nodes do. Most nodes changed (the first state, a projector taken
        over): every sum is made again, bottom up."""
        priceable = self.priceable(projector)
        if self._version == projector.version and not priceable:
            return
        self._version = projector.version
        self.rolls += 1
        nodes = projector.nodes
        seen = self._seen
        changed = []
        for path, node in nodes.items():
            kept = seen.get(path)
            if kept is None or kept[0] is not node or kept[1] != node.version:
                changed.append(path)
        if (
            2 * len(changed) > len(nodes)
            or projector.root != self._root
            or projector.prices is not self._prices
            or not (seen.keys() <= nodes.keys())
        ):
            self._build(projector)
            return
        for path in changed:  # a new node's parent may come after it in `nodes`
            if path not in seen:
                self._totals[path] = [0, 0, 0, 0]
                self._own[path] = ((0, 0, 0), (), None)
        repriced = self._waiting - set(changed) if priceable else set()
        for path in changed:
            self._roll_up(projector, path)
        for path in repriced:
            self._roll_up(projector, path)

    def _build(self, projector: Projector) -> None:
        """Every node's sums made afresh: its own figures, then added to its parent's, deepest
        nodes first."""
        with collector_paused():  # what it makes is kept: not walked by the young generations
            self._sum_up(projector)

    def _sum_up(self, projector: Projector) -> None:
        self._root, self._prices = projector.root, projector.prices
        nodes, book = projector.nodes, projector.prices or DEFAULT
        self._seen, self._own, self._totals, self._sums = {}, {}, {}, {}
        self._statuses, self._child_statuses, self._costs, self._waiting = {}, {}, {}, set()
        self._own_costs = {}
        seen, own, totals, sums = self._seen, self._own, self._totals, self._sums
        statuses, siblings = self._statuses, self._child_statuses
        priced: dict[tuple[Any, ...], CostSum | None] = {}
        """Each spending priced once: siblings doing the same task mostly spend alike."""
        for path, node in nodes.items():
            status = SHOWN.get(node.status, node.status)
            seen[path] = (node, node.version, status)
            statuses[status] = statuses.get(status, 0) + 1
            if node.parent is not None:
                counts = siblings.get(node.parent)
                if counts is None:
                    counts = siblings[node.parent] = {}
                counts[status] = counts.get(status, 0) + 1
            tokens = (node.tokens, node.prompt_tokens, node.completion_tokens)
            totals[path] = [*tokens, 0]
            spent = _spent(node)
            cost = priced[spent] = self._priced(node, book, priced.get(spent))
            own[path] = (tokens, spent, cost)
        for path in sorted(nodes, key=_DEPTH, reverse=True):
            parent = nodes[path].parent
            if parent is None:
                continue
            below, above = totals[path], totals[parent]
            above[0] += below[0]
            above[1] += below[1]
            above[2] += below[2]
            above[3] += 1 + below[3]
            cost = sums.get(path) or own[path][2]
            if cost is not None:
                self._subtree(parent).add(cost)

    def _priced(
        self, node: NodeState, book: PriceBook, known: CostSum | None = None
    ) -> CostSum | None:
        """What the node's own spending costs (None: it spent nothing); noted in `_waiting`
        while a price waits for the table. `known`: that cost, when another node's same
        spending was priced (a cost is never changed once made: sums are new objects)."""
        spend = node.spend
        if not spend.tokens and spend.reported_usd is None:
            self._waiting.discard(node.path)
            return None
        cost = known or CostSum.of(spend, book, wait=self.wait)
        if cost.waiting:
            self._waiting.add(node.path)
        else:
            self._waiting.discard(node.path)
        return cost

    def _roll_up(self, projector: Projector, path: str) -> None:
        """Move `path`'s and its ancestors' sums by what changed in it since it was last seen."""
        nodes = projector.nodes
        node = nodes[path]
        kept = self._seen.get(path)
        status = SHOWN.get(node.status, node.status)
        self._seen[path] = (node, node.version, status)
        if kept is None or kept[2] != status:
            self._count(node, kept[2] if kept is not None else None, status)
        tokens, spent, cost = self._own[path]
        own = (node.tokens, node.prompt_tokens, node.completion_tokens)
        key = _spent(node)
        if kept is not None and own == tokens and key == spent and path not in self._waiting:
            return  # a status, a turn or a call: no sum moves
        difference = None
        if key != spent or path in self._waiting:
            priced = self._priced(node, projector.prices or DEFAULT)
            if priced != cost:
                difference = CostSum()
                if priced is not None:
                    difference.add(priced)
                if cost is not None:
                    difference.add(cost, -1)
            cost = priced
        self._own[path] = (own, key, cost)
        moved = [now - before for now, before in zip(own, tokens, strict=True)]
        at: str | None = path
        while at is not None:
            totals = self._totals[at]
            totals[0] += moved[0]
            totals[1] += moved[1]
            totals[2] += moved[2]
            if kept is None and at != path:
                totals[3] += 1
            if difference is not None:
                if at != path:
                    self._subtree(at).add(difference)
                elif at in self._sums:
                    self._sums[at].add(difference)
                self._costs.pop(at, None)
            at = nodes[at].parent

    def _subtree(self, path: str) -> CostSum:
        """The running cost of `path`'s subtree, made from its own the first time a node below
        it spends."""
        total = self._sums.get(path)
        if total is None:
            total = self._sums[path] = CostSum()
            own = self._own[path][2]
            if own is not None:
                total.add(own)
        return total

    def _count(self, node: NodeState, before: str | None, status: str) -> None:
        """Count `node` as `status` instead of `before` (None: a new node), in the summary and
        among its parent's children."""
        counters = [self._statuses]
        if node.parent is not None:
            counters.append(self._child_statuses.setdefault(node.parent, {}))
        for counter in counters:
            if before is not None:
                _count(counter, before, -1)
            _count(counter, status, 1)

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
        listed = children[:limit]
        hidden = len(children) - len(listed)
        if pinned is not None and hidden and pinned.startswith(path + "/"):
            # the child of this node that the pinned node is (or is below)
            on_path = f"{path}/{pinned[len(path) + 1 :].partition('/')[0]}"
            if on_path not in listed and (visible is None or on_path in visible):
                listed = [*listed, on_path]
                hidden -= 1
        state = self._row(projector, node)
        state["children"] = [
            self._branch(projector, child, visible, pinned, more) for child in listed
        ]
        if hidden:
            statuses: Counter[str]
            if visible is None:  # every child but those listed, from the running count
                statuses = Counter(self._child_statuses[path])
                statuses.subtract(shown(nodes[child].status) for child in listed)
            else:
                shown_ = set(listed)
                statuses = Counter(
                    shown(nodes[child].status) for child in children if child not in shown_
                )
            state["more"] = {
                "count": hidden,
                "listed": limit,
                "page": TREE_PAGE,
                "statuses": sorted(
                    ((status, n) for status, n in statuses.items() if n > 0),
                    key=lambda item: (-item[1], item[0]),
                ),
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
            "refused": [clip(reason, 500) for reason in node.refused] if node.refused else [],
            "calls": _call_words(node),
            "cost": self._cost(projector, node),
        }

    def _cost(self, projector: Projector, node: NodeState) -> dict[str, Any]:
        kept = self._costs.get(node.path)
        if kept is not None:
            return kept
        total = self._sums.get(node.path)
        if total is None:  # the node's own cost, which nodes that spent alike share
            own = self._own[node.path][2]
            shared = self._own_costs.get(id(own))
            if shared is None:
                if len(self._own_costs) > 4 * len(self._own) + 64:
                    self._own_costs.clear()
                shared = self._own_costs[id(own)] = (own, self._cost_row(projector, own))
            kept = self._costs[node.path] = shared[1]
            return kept
        kept = self._costs[node.path] = self._cost_row(projector, total)
        return kept

    def _cost_row(self, projector: Projector, total: CostSum | None) -> dict[str, Any]:
        total = total or CostSum()
        if total.waiting:
            return {"estimated_usd": None, "reported_usd": None, "text": WAITING, "waiting": True}
        if total.estimates or total.reports or total.unpriced:
            cost = total.cost(projector.prices or DEFAULT)
            return {
                "estimated_usd": cost.estimated_usd,
                "reported_usd": cost.reported_usd,
                "text": str(cost),
            }
        return {"estimated_usd": None, "reported_usd": None, "text": ""}


def more_words(more: Mapping[str, Any]) -> str:
    """An aggregate row in words: `87 more children: 80 done, 7 error`."""
    statuses = ", ".join(f"{count} {status}" for status, count in more["statuses"])
    return f"{counted(more['count'], 'more child', 'more children')}: {statuses}"


def tree_state(projector: Projector, ask: TreeAsk | None = None) -> dict[str, Any]:
    """The delegation tree as the front end draws it (`Tree.state`), worked out afresh (its
    costs priced at once)."""
    return Tree(wait=False).state(projector, ask)


def _spent(node: NodeState) -> tuple[Any, ...]:
    """What a node's cost is worked out from: its tokens by model and its CLIs' reports."""
    spend = node.spend
    if not spend.tokens and spend.reported_usd is None:
        return ()
    spent: list[Any] = []
    for model, (prompt, completion) in spend.tokens.items():
        spent += (model, prompt, completion)
    spent.append(spend.reported_usd)
    return tuple(spent)


def _count(counter: dict[str, int], key: str, by: int) -> None:
    count = counter.get(key, 0) + by
    if count:
        counter[key] = count
    else:
        del counter[key]


def _call_words(node: NodeState) -> str:
    """The node's tool names and their calls' statuses (and `refused`), for the tree filter."""
    words: set[str] = set()
    for card in node.cards.values():
        words.add(card.name)
        words.add(card.status)
    if node.refused:
        words.add("refused")
    return " ".join(sorted(words))


def _one_line(text: str | None, limit: int = 160) -> str | None:
    """The first line of `text`, clipped: a label for a tree row."""
    if not text:
        return None
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= limit else f"{line[:limit]}…"
