"""Child kinds: what each agent instance keeps, what its model sees, and how it overflows.

Built-ins are plain implementations of the public `ChildKind` protocol (most start from
`BaseKind`), written against `Child`, the port to the node a kind works on; a kind written in a
notebook plugs in the same way, and `register` lists it in the views' kind selector.
"""

from __future__ import annotations

from collections.abc import Callable

from ._child import Child
from ._main import Main
from ._native import Native
from ._protocol import (
    BaseKind,
    ChildKind,
    CompactionReport,
    CompactUnsupported,
    DisposePolicy,
    View,
)
from ._realtime import Realtime
from ._resident import Resident
from ._worker import Worker

_registry: dict[str, Callable[[], ChildKind]] = {
    "worker": Worker,
    "resident": Resident,
    "realtime": Realtime,
    "main": Main,
}


def register(name: str, factory: Callable[[], ChildKind]) -> None:
    """Make a kind selectable by `name` (e.g. in the notebook's kind selector)."""
    _registry[name] = factory


def registry() -> dict[str, Callable[[], ChildKind]]:
    """The selectable kinds by name: the built-ins and any registered."""
    return dict(_registry)


def kind_name(kind: ChildKind) -> str:
    """A kind's display name (its `name`)."""
    return kind.name


__all__ = [
    "BaseKind",
    "Child",
    "ChildKind",
    "CompactUnsupported",
    "CompactionReport",
    "DisposePolicy",
    "Main",
    "Native",
    "Realtime",
    "Resident",
    "View",
    "Worker",
    "kind_name",
    "register",
    "registry",
]
