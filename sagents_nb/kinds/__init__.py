"""Child kinds: what each agent instance keeps, what its model sees, and how it overflows.

Built-ins are plain implementations of the public `ChildKind` protocol (most start from
`BaseKind`), written against `Child`, the port to the node a kind works on; a kind written in a
notebook plugs in the same way, and `register` lists it in the views' kind selector.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._base.checks import check_callable, check_str, refuse
from ._child import Child
from ._main import Main
from ._protocol import (
    BaseKind,
    ChildKind,
    CompactionReport,
    CompactUnsupported,
    DisposePolicy,
    View,
)
from ._worker import Worker

if TYPE_CHECKING:
    from ._cli_agent import CliAgent
    from ._native import Native
    from ._realtime import Realtime
    from ._resident import Resident

_LAZY = {
    "CliAgent": "._cli_agent",
    "Native": "._native",
    "Realtime": "._realtime",
    "Resident": "._resident",
}
"""The kinds a first run does not use, by module: each loads when its name is first looked up
(issue 32's first use; `tests/test_public_api.py`)."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(module, __name__), name)
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


_registry: dict[str, Callable[[], ChildKind] | str] = {
    "worker": Worker,
    "resident": "Resident",
    "realtime": "Realtime",
    "main": Main,
}
"""The selectable kinds by name; a built-in not loaded yet is named by its class."""


def _factory(entry: Callable[[], ChildKind] | str) -> Callable[[], ChildKind]:
    if not isinstance(entry, str):
        return entry
    factory: Callable[[], ChildKind] | None = globals().get(entry)  # loaded by a look-up before
    return factory if factory is not None else __getattr__(entry)


def register(name: str, factory: Callable[[], ChildKind]) -> None:
    """Make a kind selectable by `name` (e.g. in the notebook's kind selector)."""
    check_str("name", name, where="sn.kinds.register(...)", empty=False)
    check_callable(
        "factory",
        factory,
        where="sn.kinds.register(...)",
        accepted="a kind class or a function making a kind",
    )
    _registry[name] = factory


def registry() -> dict[str, Callable[[], ChildKind]]:
    """The selectable kinds by name: the built-ins and any registered."""
    return {name: _factory(entry) for name, entry in _registry.items()}


def checked_kind(value: object, *, where: str, name: str = "kind") -> ChildKind | None:
    """The kind `value` stands for: a kind, a kind class (built without arguments) or the name
    of a registered kind (`"resident"`, as `sn.compare` takes); None stays None."""
    if value is None or isinstance(value, BaseKind):
        return value
    if isinstance(value, str):
        entry = _registry.get(value)
        if entry is None:
            refuse(
                name, value, f"a registered kind name ({', '.join(sorted(_registry))})", where=where
            )
        return _factory(entry)()
    if isinstance(value, type) and issubclass(value, BaseKind):
        try:
            return value()
        except TypeError as exc:
            refuse(
                name,
                value,
                f"a kind class that takes no arguments ({exc}); pass an instance",
                where=where,
            )
    if isinstance(value, ChildKind) and not isinstance(value, type):
        return value
    refuse(
        name,
        value,
        "a kind (sn.kinds.Resident(), ...), a kind class or a registered kind name "
        f"({', '.join(sorted(_registry))}), or None",
        where=where,
    )


def kind_name(kind: ChildKind) -> str:
    """A kind's display name (its `name`)."""
    name = getattr(kind, "name", None)
    if not isinstance(name, str):
        refuse("kind", kind, "a kind (with a name)", where="sn.kinds.kind_name(...)")
    return name


__all__ = [
    "BaseKind",
    "Child",
    "ChildKind",
    "CliAgent",
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
