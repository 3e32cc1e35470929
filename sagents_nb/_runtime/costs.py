"""What a run cost: each node's reported tokens by model, priced when read (estimated), and
what its CLIs reported (reported), folded from the run's events."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from .._base.messages import Usage
from .._base.prices import DEFAULT, NO_PRICE, PriceBook
from ..events import Event, HarnessEventOccurred, ModelRequest, ModelResponse

UNKNOWN_MODEL = "(unknown model)"
"""The model of a reply whose request came before the events start."""
WAITING = "loading prices (genai-prices)…"
"""What a view's cost says while genai-prices' table loads (`PriceBook.waits`)."""
EXACT = 1074
"""Every float is a whole multiple of 2**-EXACT: sums kept as such whole numbers are exact."""


@dataclass(slots=True)
class NodeSpend:
    """One node's spending in some events: reported tokens by model, and the CLIs' costs."""

    tokens: dict[str, list[int]] = field(default_factory=dict)
    """Model name to [prompt, completion] tokens its endpoint reported."""
    reported_usd: float | None = None
    """What its CLI runs cost as the CLI reported it; None when none did."""

    def add(self, model: str, usage: Usage) -> None:
        """Count a reply's reported usage against `model`."""
        tokens = self.tokens.setdefault(model, [0, 0])
        tokens[0] += usage.prompt_tokens
        tokens[1] += usage.completion_tokens

    def reported(self, cost: object) -> None:
        """Add a CLI's reported cost (anything but a finite number is no report)."""
        if isinstance(cost, int | float) and not isinstance(cost, bool) and math.isfinite(cost):
            self.reported_usd = (self.reported_usd or 0.0) + float(cost)


@dataclass(frozen=True, slots=True)
class Cost:
    """What some model calls cost: estimated from prices, reported by CLIs, never made up."""

    estimated_usd: float | None
    """The priced calls' cost at the table's (or `prices=`) rates; None when none was priced."""
    reported_usd: float | None
    """What CLIs reported; None when none did."""
    unpriced: tuple[str, ...] = ()
    """Models that used tokens and have no price (their calls are not in `estimated_usd`)."""
    sources: tuple[str, ...] = ()
    """Where the prices in `estimated_usd` come from."""
    missing: str = NO_PRICE
    """What an unpriced model shows (`no price`, or how to install the extra)."""

    @property
    def usd(self) -> float | None:
        """Estimated and reported together; None when there is neither (never a made-up 0)."""
        if self.estimated_usd is None and self.reported_usd is None:
            return None
        return (self.estimated_usd or 0.0) + (self.reported_usd or 0.0)

    def __str__(self) -> str:
        parts = []
        if self.estimated_usd is not None:
            parts.append(f"{dollars(self.estimated_usd)} estimated ({'; '.join(self.sources)})")
        if self.reported_usd is not None:
            parts.append(f"{dollars(self.reported_usd)} reported")
        if self.unpriced:
            parts.append(f"{self.missing} for {', '.join(self.unpriced)}")
        return " + ".join(parts) or self.missing


def dollars(value: float) -> str:
    """A dollar figure to four places (a cheap call costs a fraction of a cent)."""
    return f"${value:.4f}"


def spend(events: Iterable[Event]) -> dict[str, NodeSpend]:
    """Each node's spending in `events`, by path."""
    nodes: dict[str, NodeSpend] = {}
    asking: dict[str, str] = {}
    for event in events:
        if isinstance(event, ModelRequest):
            asking[event.path] = event.model
        elif isinstance(event, ModelResponse):
            model = asking.pop(event.path, UNKNOWN_MODEL)
            if event.usage is not None:
                nodes.setdefault(event.path, NodeSpend()).add(model, event.usage)
        elif isinstance(event, HarnessEventOccurred) and event.event.get("type") == "done":
            nodes.setdefault(event.path, NodeSpend()).reported(event.event.get("cost_usd"))
    return nodes


@dataclass(slots=True)
class CostSum:
    """Costs added together (and taken away) exactly, so that a running sum equals one made
    afresh, whatever the order: dollars as whole multiples of 2**-`EXACT`, the models without
    a price and the prices' sources counted by the calls that named them."""

    estimated: int = 0
    estimates: int = 0
    """Priced (model, node) entries in `estimated` (none: no estimate)."""
    reported: int = 0
    reports: int = 0
    """CLI reports in `reported` (none: no report)."""
    unpriced: dict[str, int] = field(default_factory=dict)
    """Models without a price, by the (model, node) entries that used tokens."""
    sources: dict[str, int] = field(default_factory=dict)
    """The prices' sources, by the entries priced from them."""
    waiting: int = 0
    """Entries not priced yet: their model waits for genai-prices' table (`PriceBook.waits`)."""

    @classmethod
    def of(cls, node: NodeSpend, book: PriceBook, *, wait: bool = False) -> CostSum:
        """One node's spending priced with `book`; `wait`: leave a model whose price would load
        genai-prices' table now unpriced, counted in `waiting`."""
        own = cls()
        if node.reported_usd is not None:
            own.reported, own.reports = _exact(node.reported_usd), 1
        for model, (prompt, completion) in node.tokens.items():
            if wait and book.waits(model):
                own.waiting += 1
                continue
            price = book.price(model)
            if price is None:
                if prompt + completion:
                    own.unpriced[model] = own.unpriced.get(model, 0) + 1
                continue
            own.estimated += _exact(price.cost(prompt, completion))
            own.estimates += 1
            own.sources[price.source] = own.sources.get(price.source, 0) + 1
        return own

    def add(self, other: CostSum, sign: int = 1) -> None:
        """Add `other` (take it away with `sign=-1`)."""
        self.estimated += sign * other.estimated
        self.estimates += sign * other.estimates
        self.reported += sign * other.reported
        self.reports += sign * other.reports
        self.waiting += sign * other.waiting
        for mine, theirs in ((self.unpriced, other.unpriced), (self.sources, other.sources)):
            for name, count in theirs.items():
                count = mine.get(name, 0) + sign * count
                if count:
                    mine[name] = count
                else:
                    del mine[name]

    def cost(self, book: PriceBook) -> Cost:
        """The sum as a `Cost` (the models and sources in name order)."""
        estimated = self.estimated / (1 << EXACT) if self.estimates else None
        reported = self.reported / (1 << EXACT) if self.reports else None
        unpriced = tuple(sorted(model for model, n in self.unpriced.items() if n > 0))
        # what a missing price shows is looked up (loading the table) only where it shows
        shows = unpriced or (estimated is None and reported is None)
        missing = book.missing_for(unpriced) if shows else NO_PRICE
        return Cost(estimated, reported, unpriced, tuple(sorted(self.sources)), missing)


def _exact(value: float) -> int:
    numerator, denominator = value.as_integer_ratio()
    return numerator << (EXACT + 1 - denominator.bit_length())


def priced(nodes: Iterable[NodeSpend], prices: PriceBook | None = None) -> Cost:
    """What `nodes` cost together, priced with `prices` (the table's alone by default)."""
    book = prices or DEFAULT
    total = CostSum()
    for node in nodes:
        total.add(CostSum.of(node, book))
    return total.cost(book)


def subtree(nodes: dict[str, NodeSpend], path: str) -> list[NodeSpend]:
    """The spending of `path` and every node below it."""
    return [node for at, node in nodes.items() if at == path or at.startswith(path + "/")]
