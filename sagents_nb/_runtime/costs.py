"""What a run cost: each node's reported tokens by model, priced when read (estimated), and
what its CLIs reported (reported), folded from the run's events."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .._base.messages import Usage
from .._base.prices import DEFAULT, NO_PRICE, PriceBook
from ..events import Event, HarnessEventOccurred, ModelRequest, ModelResponse

UNKNOWN_MODEL = "(unknown model)"
"""The model of a reply whose request came before the events start."""


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
        """Add a CLI's reported cost (anything but a number is no report)."""
        if isinstance(cost, int | float) and not isinstance(cost, bool):
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


def priced(nodes: Iterable[NodeSpend], prices: PriceBook | None = None) -> Cost:
    """What `nodes` cost together, priced with `prices` (the table's alone by default)."""
    book = prices or DEFAULT
    estimated: float | None = None
    reported: float | None = None
    unpriced: list[str] = []
    sources: list[str] = []
    for node in nodes:
        if node.reported_usd is not None:
            reported = (reported or 0.0) + node.reported_usd
        for model, (prompt, completion) in node.tokens.items():
            price = book.price(model)
            if price is None:
                if prompt + completion and model not in unpriced:
                    unpriced.append(model)
                continue
            estimated = (estimated or 0.0) + price.cost(prompt, completion)
            if price.source not in sources:
                sources.append(price.source)
    return Cost(estimated, reported, tuple(unpriced), tuple(sources), book.missing)


def subtree(nodes: dict[str, NodeSpend], path: str) -> list[NodeSpend]:
    """The spending of `path` and every node below it."""
    return [node for at, node in nodes.items() if at == path or at.startswith(path + "/")]
