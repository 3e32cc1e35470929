"""A kind a reopen could not build again, and how the tree shows a node's kind."""

from __future__ import annotations

from typing import Any

from ..kinds import BaseKind, Child, ChildKind, kind_name


class NotRebuilt(BaseKind):
    """Stands for the kind a node ran as when this process cannot build it again (its
    arguments were not stored: not JSON, or they may hold a secret; or its class is not
    imported). The tree shows its name, marked "(not rebuilt)"; it keeps the stored row as it
    was, and it never runs: at the node's next turn its agent's kind takes over, with a
    `kind_swapped` event."""

    def __init__(self, name: str, stored: dict[str, Any]) -> None:
        self.name = name
        self.spec = {"class": stored.get("class", ""), "given": stored.get("given")}
        self.stored_state = stored.get("state")

    def dump_state(self, child: Child) -> Any:
        return self.stored_state

    def __repr__(self) -> str:
        return (
            f"NotRebuilt({self.name!r}: ran as {self.spec['class'] or self.name}, whose "
            "arguments were not stored; its agent's kind takes over at the node's next turn)"
        )


def shown_kind(kind: ChildKind) -> str:
    """A kind's name as the tree shows it: one a reopen could not build again is marked."""
    name = kind_name(kind)
    return f"{name} (not rebuilt)" if type(kind) is NotRebuilt else name  # not a protocol check
