"""Where a run's time and tokens went: its spans as waterfall rows on one time axis, and each
node's tokens and reported cost, own and rolled up the tree (from `_timings`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._base.prices import DEFAULT, NO_PRICE, PriceBook
from .._runtime.costs import Cost, NodeSpend, dollars, priced
from ._timings import NodeTiming, RunTiming, Span
from ._words import counted

ROWS = 200
"""Waterfall rows (and token-table rows) one pane shows at most: a big run is folded to fit."""
PER_NODE = 30
"""A node's own calls shown one row each up to this many; more are merged into this many rows."""


# tokens, own and rolled up


@dataclass(frozen=True, slots=True)
class NodeTokens:
    """One node's tokens in a run: its own calls', and its subtree's (itself included)."""

    path: str
    agent: str
    depth: int
    status: str
    model_calls: int
    tool_calls: int
    prompt_tokens: int
    completion_tokens: int
    subtree_prompt_tokens: int
    subtree_completion_tokens: int
    unreported: int
    """This node's model calls whose reply reported no usage."""
    estimated_prompt_tokens: int
    """Their views' estimated size (not in `prompt_tokens`, which is reported only)."""
    subtree_unreported: int
    cost_usd: float | None
    """What this node's CLI runs cost as the CLI reported it; None when none reported a cost."""
    subtree_cost_usd: float | None
    """The reported costs summed over the subtree; None when no node in it reported one."""
    priced: int
    """Nodes in the subtree with a reported cost."""
    spent: int
    """Nodes in the subtree that used tokens (so `priced < spent` means the cost is partial)."""
    estimated_usd: float | None
    """This node's own model calls at their prices (estimated); None when none was priced."""
    subtree_estimated_usd: float | None
    """The estimates summed over the subtree; None when no call in it was priced."""
    unpriced: tuple[str, ...]
    """Models in the subtree that used tokens and have no price (not in the estimates)."""
    price_sources: tuple[str, ...]
    """Where the subtree's prices come from (`prices=`, or genai-prices and its version)."""
    no_price: str
    """What an unpriced cost shows: `no price`, or how to install the `prices` extra."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy."""
        return {name: getattr(self, name) for name in self.__slots__}


def token_rollup(
    run: RunTiming,
    top: str | None = None,
    prices: PriceBook | None = None,
    *,
    estimated: bool = True,
) -> list[NodeTokens]:
    """Every node of `top`'s subtree (the root's by default), depth first, with its own tokens
    and its subtree's, reported costs summed where any were reported, and its model calls
    priced with `prices` (genai-prices' table alone by default; none priced without
    `estimated`)."""
    top = top or run.root
    if top is None or top not in run.nodes:
        return []
    return _roll(run, run.nodes[top], 0, prices or DEFAULT, estimated)


def _roll(
    run: RunTiming, node: NodeTiming, depth: int, prices: PriceBook, estimated: bool
) -> list[NodeTokens]:
    """`node`'s row, then its subtree's rows, depth first."""
    subtrees = [_roll(run, run.nodes[path], depth + 1, prices, estimated) for path in node.children]
    below = [rows[0] for rows in subtrees]
    costs = [row.subtree_cost_usd for row in below if row.subtree_cost_usd is not None]
    if node.cost_usd is not None:
        costs.append(node.cost_usd)
    used = node.prompt_tokens + node.completion_tokens + node.unreported > 0
    own = priced([NodeSpend(node.by_model)], prices) if estimated else Cost(None, None)
    estimates = [r.subtree_estimated_usd for r in below if r.subtree_estimated_usd is not None]
    if own.estimated_usd is not None:
        estimates.append(own.estimated_usd)
    unpriced = _union(own.unpriced, *(r.unpriced for r in below))
    row = NodeTokens(
        path=node.path,
        agent=node.agent,
        depth=depth,
        status=node.status,
        model_calls=node.model_calls,
        tool_calls=node.tool_calls,
        prompt_tokens=node.prompt_tokens,
        completion_tokens=node.completion_tokens,
        subtree_prompt_tokens=node.prompt_tokens + sum(r.subtree_prompt_tokens for r in below),
        subtree_completion_tokens=node.completion_tokens
        + sum(r.subtree_completion_tokens for r in below),
        unreported=node.unreported,
        estimated_prompt_tokens=node.estimated_prompt,
        subtree_unreported=node.unreported + sum(r.subtree_unreported for r in below),
        cost_usd=node.cost_usd,
        subtree_cost_usd=sum(costs) if costs else None,
        priced=(node.cost_usd is not None) + sum(r.priced for r in below),
        spent=used + sum(r.spent for r in below),
        estimated_usd=own.estimated_usd,
        subtree_estimated_usd=sum(estimates) if estimates else None,
        unpriced=unpriced,
        price_sources=_union(own.sources, *(r.price_sources for r in below)),
        no_price=prices.missing_for(unpriced) if unpriced else NO_PRICE,
    )
    return [row, *(r for rows in subtrees for r in rows)]


def _union(*groups: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(item for group in groups for item in group))


# the waterfall's rows


@dataclass(slots=True)
class _Group:
    """Consecutive spans of a node merged into one row."""

    spans: list[Span]

    @property
    def children(self) -> list[str]:
        return [child for span in self.spans for child in span.children]


def _shown(node: NodeTiming) -> list[Span | _Group | str]:
    """A node's rows: its spans (merged into `PER_NODE` rows when there are more) and the
    children no call of it spawned, in starting order."""
    spans = sum(1 for e in node.entries if isinstance(e, Span))
    if spans <= PER_NODE:
        return list(node.entries)
    size = -(-spans // PER_NODE)
    shown: list[Span | _Group | str] = []
    group: _Group | None = None
    for entry in node.entries:
        if isinstance(entry, str):
            shown.append(entry)
            continue
        if group is None or len(group.spans) == size:
            group = _Group([])
            shown.append(group)
        group.spans.append(entry)
    return shown


def _kids(shown: list[Span | _Group | str]) -> list[str]:
    """The child paths among a node's rows, in order (those its calls spawned included)."""
    return [path for e in shown for path in ([e] if isinstance(e, str) else e.children)]


def _open(
    run: RunTiming, top: str, budget: int
) -> tuple[dict[str, list[Span | _Group | str]], int]:
    """Which nodes get their own rows opened (the shallowest first, while the budget lasts), and
    how many of the top node's children get a row (the rest share one)."""
    opened: dict[str, list[Span | _Group | str]] = {}
    shown = opened[top] = _shown(run.nodes[top])
    kids = _kids(shown)
    own = len(shown) - sum(isinstance(e, str) for e in shown)
    room = budget - 1 - own
    cap = len(kids) if len(kids) <= room else max(0, room - 1)
    used = 1 + own + min(cap + 1, len(kids))
    queue, at = kids[:cap], 0
    while at < len(queue):
        path = queue[at]
        at += 1
        if path in opened:
            continue
        shown = _shown(run.nodes[path])
        kids = _kids(shown)
        cost = len(shown) - sum(isinstance(e, str) for e in shown) + len(kids)
        if used + cost > budget:
            continue
        used += cost
        opened[path] = shown
        queue.extend(kids)
    return opened, cap


def waterfall(
    run: RunTiming, top: str | None = None, budget: int = ROWS, prices: PriceBook | None = None
) -> dict[str, Any]:
    """The waterfall of `top`'s subtree (the root's by default) in `run`, as rows for the front
    end: at most `budget` of them, the shallowest nodes opened first, the rest shown as one row
    each (and the top node's children past the budget as one row together). Times are whole
    microseconds since the run's start (compact in JSON, and cheaper than rounding). A model
    call's hover title says what it cost at its model's price (`prices`, genai-prices' table by
    default), or that it has none."""
    top = top if top in run.nodes else run.root
    base = run.start
    now = run.end if run.end is not None else run.last
    out: dict[str, Any] = {
        "run": run.number,
        "status": "paused" if run.status == "running" and run.pauses else run.status,
        "span": int((now - base) * 1e6),
        "top": top,
        "rows": [],
        "folded": 0,
    }
    if top is None:
        return out
    opened, cap = _open(run, top, budget)
    rows: list[dict[str, Any]] = out["rows"]
    placed: set[str] = set()
    more: list[str] = []
    given = 0

    def rel(value: float | None) -> int | None:
        return None if value is None else int((value - base) * 1e6)

    def add_child(path: str, depth: int) -> None:
        nonlocal given
        if path in placed:
            return  # a resident's next task, spawned by another call
        if _parent(path) == top:
            if given >= cap:
                more.append(path)
                placed.add(path)
                return
            given += 1
        add_node(path, depth)

    def add_node(path: str, depth: int) -> None:
        placed.add(path)
        node = run.nodes[path]
        shown = opened.get(path)
        counts = (
            f"{counted(node.model_calls, 'model call')} · {counted(node.tool_calls, 'tool call')}"
        )
        if shown is None and node.children:
            counts += f" · {counted(_descendants(run, node), 'node')} below (select it to see them)"
        rows.append(
            {
                "key": path,
                "kind": "node",
                "path": path,
                "depth": depth,
                "label": path.rpartition("/")[2],
                "status": node.status,
                "segments": [
                    [rel(task.start), rel(task.began), rel(task.end), task.status, task.label]
                    for task in node.tasks
                ],
                "title": f"{path} · {node.status} · {counts}",
            }
        )
        for entry in shown or ():
            if isinstance(entry, str):
                add_child(entry, depth + 1)
                continue
            rows.append(_span_row(entry, depth + 1, rel, prices or DEFAULT))
            for child in entry.children:
                add_child(child, depth + 2)

    add_node(top, 0)
    if more:
        tasks = [task for path in more for task in run.nodes[path].tasks]
        ends = [task.end for task in tasks]
        rows.append(
            {
                "key": f"more:{top}",
                "kind": "more",
                "depth": 1,
                "label": f"{len(more)} more children",
                "status": "folded",
                "start": rel(min(task.start for task in tasks)) if tasks else 0,
                "end": None if None in ends or not tasks else rel(max(e or 0.0 for e in ends)),
                "title": f"{len(more)} more children of {top}: select one in the tree to see it",
            }
        )
    nodes = sum(row["kind"] == "node" for row in rows)
    out["folded"] = _descendants(run, run.nodes[top]) + 1 - nodes
    return out


def _parent(path: str) -> str:
    return path.rpartition("/")[0]


def _span_row(
    entry: Span | _Group, depth: int, rel: Callable[[float | None], int | None], prices: PriceBook
) -> dict[str, Any]:
    if isinstance(entry, Span):
        title = entry.detail
        if entry.spent is not None:
            title = f"{title} · {_call_cost(entry.spent, prices)}"
        return {
            "key": entry.key,
            "kind": entry.kind,
            "depth": depth,
            "label": entry.label,
            "status": entry.status,
            "start": rel(entry.start),
            "end": rel(entry.end),
            "title": title,
        }
    spans = entry.spans
    models = sum(span.kind == "model" for span in spans)
    tools = sum(span.kind == "tool" for span in spans)
    busy = sum(span.end - span.start for span in spans if span.end is not None)
    ends = [span.end for span in spans]
    return {
        "key": f"group:{spans[0].key}",
        "kind": "group",
        "depth": depth,
        "label": f"{counted(len(spans), 'call')} ({models} model, {tools} tool)",
        "status": "running" if None in ends else "done",
        "start": rel(spans[0].start),
        "end": None if None in ends else rel(max(e or 0.0 for e in ends)),
        "title": f"{counted(len(spans), 'consecutive call')} merged into one row; {busy:.3f} s busy in them",
    }


def _call_cost(spent: tuple[str, int, int], prices: PriceBook) -> str:
    """One model call's cost in words: estimated at its price, or `no price`."""
    model, prompt, completion = spent
    price = prices.price(model)
    if price is None:
        return f"{prices.missing_for((model,))} for {model}"
    return f"{dollars(price.cost(prompt, completion))} estimated ({price.source})"


def _descendants(run: RunTiming, node: NodeTiming) -> int:
    return sum(1 + _descendants(run, run.nodes[path]) for path in node.children)
