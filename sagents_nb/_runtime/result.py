"""What a run returns: its text and status, usage, events, and the delegation tree."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._base.messages import Usage
from .._base.text import counted

if TYPE_CHECKING:
    from .._base.prices import PriceBook
    from .._endpoints.openai import Exchange
    from ..events import Event
    from .costs import Cost


@dataclass
class TreeNode:
    """One agent instance in the delegation tree (a snapshot)."""

    id: str
    """The node's path, e.g. `coordinator/explore.1`."""
    agent: str
    kind: str
    status: str
    turns: int
    usage: Usage
    """Usage of this node and everything below it."""
    children: list[TreeNode] = field(default_factory=list)
    display_text: str | None = None
    reattached: int = 0
    refused: list[str] = field(default_factory=list)
    cost_usd: float | None = None
    """What a CLI child's own runs cost, as the CLI reported it (list price); None for others."""

    @property
    def own_usage(self) -> Usage:
        """Usage of this node's own model calls (`usage` less its children's)."""
        below = Usage()
        for child in self.children:
            below = below + child.usage
        return Usage(
            prompt_tokens=self.usage.prompt_tokens - below.prompt_tokens,
            completion_tokens=self.usage.completion_tokens - below.completion_tokens,
            total_tokens=self.usage.total_tokens - below.total_tokens,
        )

    @property
    def subtree_cost_usd(self) -> float | None:
        """The costs CLIs reported in this subtree, summed; None when none reported one (an
        OpenAI-compatible endpoint reports usage, not cost)."""
        costs = [node.cost_usd for node in self.walk() if node.cost_usd is not None]
        return sum(costs) if costs else None

    def walk(self) -> list[TreeNode]:
        """This node and every node below it, depth first."""
        nodes = [self]
        for child in self.children:
            nodes.extend(child.walk())
        return nodes

    def find(self, path: str) -> TreeNode | None:
        """The node with id `path`, if any."""
        return next((n for n in self.walk() if n.id == path), None)

    def render(self) -> str:
        """The tree as indented text lines."""
        lines: list[str] = []

        def visit(node: TreeNode, prefix: str, last: bool, root: bool) -> None:
            branch = "" if root else ("└─ " if last else "├─ ")
            extra = f", reattached x{node.reattached}" if node.reattached else ""
            extra += f", refused {len(node.refused)}" if node.refused else ""
            extra += f" · ${node.cost_usd:.4f} reported" if node.cost_usd is not None else ""
            lines.append(
                f"{prefix}{branch}{node.id} [{node.kind}] {node.status} · "
                f"{counted(node.turns, 'turn')} · {counted(node.usage.total_tokens, 'token')}{extra}"
            )
            inner = prefix if root else prefix + ("   " if last else "│  ")
            for i, child in enumerate(node.children):
                visit(child, inner, i == len(node.children) - 1, False)

        visit(self, "", True, True)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy."""
        return {
            "id": self.id,
            "agent": self.agent,
            "kind": self.kind,
            "status": self.status,
            "turns": self.turns,
            "usage": self.usage.model_dump(),
            "display_text": self.display_text,
            "reattached": self.reattached,
            "refused": self.refused,
            "cost_usd": self.cost_usd,
            "children": [c.to_dict() for c in self.children],
        }


@dataclass
class Result:
    """The outcome of one run."""

    text: str
    status: str
    """`done`, `incomplete`, `pending`, `error` or `cancelled`."""
    turns: int
    """Model calls the top agent made in this run."""
    usage: Usage
    """Tokens summed over the run, children included."""
    events: Sequence[Event]
    """The run's events (a reopened session's are decoded as they are read)."""
    tree: TreeNode
    run: int = 1
    exchanges: Sequence[Exchange] = ()
    """The session endpoint's exchanges during the run (keys redacted), as many as its log
    keeps (`sn.LLM(keep_exchanges=...)`); none for a run read back from a store."""
    prices: PriceBook | None = field(default=None, repr=False, compare=False)
    """The session's prices (`prices=` over genai-prices'); None: genai-prices' alone."""

    @property
    def cost(self) -> Cost:
        """What the run cost: API calls estimated from prices (`no price` for a model no
        table knows, never 0), CLI children's costs as they reported them."""
        from .costs import priced, spend  # with the first cost asked for, not with a first run

        return priced(spend(self.events).values(), self.prices)

    def node_cost(self, path: str, *, subtree_too: bool = True) -> Cost:
        """What node `path` cost in this run, with everything below it unless `subtree_too`
        is False (its own model calls only)."""
        from .costs import priced, spend, subtree

        nodes = spend(self.events)
        mine = subtree(nodes, path) if subtree_too else [n for at, n in nodes.items() if at == path]
        return priced(mine, self.prices)

    def __repr__(self) -> str:
        text = self.text if len(self.text) <= 80 else self.text[:77] + "..."
        return (
            f"Result(status={self.status!r}, turns={self.turns}, "
            f"tokens={self.usage.total_tokens}, text={text!r})"
        )

    def _ipython_display_(self) -> None:
        from ..notebook import display_live  # the display hook: widgets load when shown

        display_live(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from .static import static_bundle  # `html` and its entity table: for HTML only

        return static_bundle(self.tree, self.text, self.status)

    def save_html(self, path: str | os.PathLike[str]) -> Path:
        """Write this run's view to one self-contained HTML file anyone can open, every tab
        working offline (no kernel, no network request). Returns the file's path."""
        from .._base.checks import check_path
        from ..notebook import save_html  # the display layer: loaded when a file is written

        return save_html(self, check_path("path", path, where="result.save_html()"))

    def to_json(self) -> str:
        """Text, status, usage and tree as JSON (events excluded)."""
        return json.dumps(
            {
                "text": self.text,
                "status": self.status,
                "turns": self.turns,
                "usage": self.usage.model_dump(),
                "tree": self.tree.to_dict(),
            }
        )
