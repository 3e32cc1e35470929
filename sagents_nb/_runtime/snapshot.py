"""`NodeSnapshot`: a node's stored state, taken from a node and put back on one; and the row of
what its kind keeps (`dump_state` / `load_state`)."""

from __future__ import annotations

import dataclasses
import importlib
import operator
import re
import sys
from collections.abc import Callable
from itertools import compress
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import pydantic_core

from .._base.errors import StoreError
from .._base.messages import Usage
from .._base.outcome import Outcome
from ..kinds import registry
from .not_rebuilt import NotRebuilt

if TYPE_CHECKING:
    from .._store.protocol import SessionRows
    from ..kinds import ChildKind
    from .node import Node


class NodeSnapshot(NamedTuple):
    """A node's state besides its messages and kind: one `state` row, both ways.

    `of(node)` takes it (a tuple: cheap to take and compare on the loop), `row()` is the JSON
    object a store keeps and `changes(previous)` the part of it that changed; `from_row(data)`
    reads a stored one back and `apply(node)` puts the node's own fields on a restored node.
    The tree's fields (`agent`, `parent`, `position`, `persistent`) are read by the restore,
    which builds the children from them. A field kept is a field here, in `of` and in `apply`.
    """

    agent: str
    kind: str
    parent: str | None
    position: int
    status: str
    turns: int
    task_turns: int
    task_tool_calls: int
    task_tokens: int
    usage: tuple[int, int, int]
    counters: tuple[tuple[str, int], ...]
    persistent: tuple[tuple[str, str], ...]
    """(name, child path) of each persistent child."""
    input_index: int
    input_text: str
    display_text: str | None
    reattached: int
    refused: tuple[str, ...]
    notices: tuple[str, ...]
    outcome: tuple[str, str] | None
    """(status, text) of the node's last task."""

    @classmethod
    def of(cls, node: Node) -> NodeSnapshot:
        """The node's state now (a copy)."""
        outcome = node.last_outcome
        usage = node.usage
        parent = node.parent
        counters, persistent = node.counters, node.persistent
        return _new(  # as a tuple: the NamedTuple `__new__` is a Python call of 19 arguments
            cls,
            (
                node.agent.name,
                node.kind.name,
                parent.path if parent is not None else None,
                parent.order.index(node) if parent is not None else 0,
                node.status,
                node.turns,
                node.task_turns,
                node.task_tool_calls,
                node.task_tokens,
                (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens),
                tuple(counters.items()) if counters else (),
                tuple((name, child.path) for name, child in persistent.items())
                if persistent
                else (),
                node.input_index,
                node.input_text,
                node.display_text,
                node.reattached,
                tuple(node.refused),
                tuple(node.notices),
                (outcome.status, outcome.text) if outcome is not None else None,
            ),
        )

    @classmethod
    def from_row(cls, data: dict[str, Any]) -> NodeSnapshot:
        """A stored state (`row()`'s object, merged from the node's rows) read back."""
        values = list(_row_values(data))
        for index in _ARRAYS:
            value = values[index]
            if type(value) is list:
                values[index] = tuple(value)
        for index in _OBJECTS:
            values[index] = tuple(values[index].items())
        return _new(cls, values)

    def row(self) -> dict[str, Any]:
        """The JSON object a `state` row stores (tuples are arrays, mappings objects)."""
        return _stored(dict(zip(self._fields, self, strict=True)))

    def changes(self, previous: NodeSnapshot) -> dict[str, Any]:
        """The part of `row()` that differs from `previous` (a row may hold only that)."""
        changed = bytes(map(operator.ne, self, previous))
        known = _CHANGES.get(changed)
        if known is None:
            known = _CHANGES[changed] = _picker(changed)
        names, pick, mappings = known
        data = dict(zip(names, pick(self), strict=True))
        return _stored(data) if mappings else data

    def apply(self, node: Node) -> None:
        """Put the node's own fields back on `node` (its history must already be restored)."""
        node.status = self.status
        node.turns = self.turns
        node.task_turns = self.task_turns
        node.task_tool_calls = self.task_tool_calls
        node.task_tokens = self.task_tokens
        prompt, completion, total = self.usage
        node.usage = Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)
        node.counters = dict(self.counters)
        node.input_index = self.input_index
        node.input_text = self.input_text
        node.display_text = self.display_text
        node.reattached = self.reattached
        node.refused = list(self.refused)
        node.notices = list(self.notices)
        outcome = self.outcome
        node.last_outcome = Outcome(*outcome) if outcome is not None else None


_new = tuple.__new__

MAPPINGS = frozenset({"counters", "persistent"})
"""Fields a snapshot keeps as tuples of items and a row stores as objects."""

_row_values = operator.itemgetter(*NodeSnapshot._fields)
_OBJECTS = [NodeSnapshot._fields.index(name) for name in MAPPINGS]
_ARRAYS = [NodeSnapshot._fields.index(name) for name in ("usage", "refused", "notices", "outcome")]
"""The fields a snapshot keeps as tuples and a row stores as arrays."""


Picker = tuple[tuple[str, ...], Callable[[NodeSnapshot], tuple[Any, ...]], bool]
"""The fields a set of changes names, what takes their values from a snapshot, and whether a
mapping is among them."""

_CHANGES: dict[bytes, Picker] = {}
"""A `Picker` for each set of changed fields met (a flag a field, as bytes): a few a run."""


def _picker(changed: bytes) -> Picker:
    indexes = list(compress(range(len(changed)), changed))
    names = tuple(NodeSnapshot._fields[i] for i in indexes)
    pick = operator.itemgetter(*indexes) if len(indexes) > 1 else _single(indexes)
    return names, pick, not MAPPINGS.isdisjoint(names)


def _single(indexes: list[int]) -> Callable[[NodeSnapshot], tuple[Any, ...]]:
    """The picker of no field or one (`itemgetter` of one index returns the value itself)."""
    if not indexes:
        return lambda snapshot: ()
    index = indexes[0]
    return lambda snapshot: (snapshot[index],)


def _stored(data: dict[str, Any]) -> dict[str, Any]:
    """`data` (fields of a snapshot) as a row stores them: each mapping's items as an object."""
    for name in MAPPINGS.intersection(data):
        data[name] = dict(data[name])
    return data


def stored_parts(rows: SessionRows) -> dict[tuple[str, str], Any]:
    """Each node's parts as of the last row (`rows.node_states()`), its `state` read as a
    `NodeSnapshot`; the `kind` and `queue` parts as stored."""
    parts: dict[tuple[str, str], Any] = rows.node_states()
    for key, data in parts.items():
        if key[1] == "state":
            parts[key] = NodeSnapshot.from_row(data)
    return parts


def kind_state(node: Node, specs: KindSpecs | None = None) -> str:
    """The JSON of the node's kind as it runs: its name, its class (`module:qualname`), the
    arguments it was built with (`given`, None when they are not JSON-able) and what it keeps
    besides the messages (`state`: `dump_state(node)`, None when nothing). `specs`: the
    `KindSpecs` that work out each kind object's part once."""
    kind = node.kind
    state = kind.dump_state(node)
    spec, stateless = (specs or KindSpecs()).of(kind)
    # the object itself, for a fork taken in this process (a kind's arguments may not be JSON)
    node.session.kinds_ran[(node.path, spec["class"])] = kind
    if state is None:
        return stateless
    return dump_json({"kind": kind.name, **spec, "state": state})


def kind_spec(kind: ChildKind) -> dict[str, Any]:
    """What names a kind object's configuration: its class and the arguments it was built with
    (None when they are not JSON, or may hold a secret: such a kind is not rebuilt on a reopen).
    An argument that is a dataclass (a CLI driver) is its class and its fields."""
    if isinstance(kind, NotRebuilt):
        return kind.spec
    cls = type(kind)
    given = getattr(kind, "_given", None)
    try:
        stored = pydantic_core.to_jsonable_python(_described(given)) if given is not None else None
    except pydantic_core.PydanticSerializationError:
        stored = None
    if stored is not None and _may_hold_a_secret(stored):
        stored = None
    return {"class": class_path(cls), "given": stored}


class KindSpecs:
    """`kind_spec` worked out once for each kind object (many nodes share a few: their
    agents'; the objects are kept, so an id stays its own), with the JSON `kind_state` makes
    when the kind keeps nothing for a node (`state` None: most nodes, at most seals). A kind
    built with no arguments (each session's default `Main()` and `Worker()`) is its class's:
    worked out once in the process."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[ChildKind, dict[str, Any], str]] = {}

    def of(self, kind: ChildKind) -> tuple[dict[str, Any], str]:
        """The kind's `kind_spec` and its stateless `kind_state` JSON."""
        known = self._known.get(id(kind))
        if known is None:
            plain = getattr(kind, "_given", None) == _NO_ARGUMENTS
            key = (type(kind), kind.name)
            found = _PLAIN_SPECS.get(key) if plain else None
            if found is None:
                spec = kind_spec(kind)
                found = (spec, dump_json({"kind": kind.name, **spec, "state": None}))
                if plain:
                    _PLAIN_SPECS[key] = found
            known = self._known[id(kind)] = (kind, *found)
        return known[1], known[2]


_NO_ARGUMENTS: tuple[tuple[Any, ...], dict[str, Any]] = ((), {})
_PLAIN_SPECS: dict[tuple[type, str], tuple[dict[str, Any], str]] = {}
"""`KindSpecs.of` of the kinds built with no arguments, by class and name."""


def class_path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


DATACLASS = "dataclass"
"""The key naming a dataclass argument's class in a kind's stored arguments."""


def _described(value: Any) -> Any:
    """`value` with each dataclass instance in it as `{DATACLASS: its class, "fields": ...}`."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.init}
        return {DATACLASS: class_path(type(value)), "fields": _described(fields)}
    if isinstance(value, dict):
        return {name: _described(item) for name, item in value.items()}
    if isinstance(value, list | tuple):
        return [_described(item) for item in value]
    return value


_SECRET_NAMES = re.compile(
    r"(^|_)(api_?key|key|token|secret|passw(or)?d|auth\w*|credentials?|headers)$|^env$", re.I
)
"""Argument names whose values may be secrets (`env`, variables and their values, but not
`pass_env`, the names of variables to pass on)."""
_SECRET_SHAPED = re.compile(r"(?=.*\d)(?=.*[A-Za-z])[A-Za-z0-9_.~+/=-]{20,}")
_PATHS = ("/", "./", "../", "~/")
"""How a file path starts (a CLI's `executable=`): shaped like a key, but not one."""


def _may_hold_a_secret(value: Any) -> bool:
    """Whether JSON data has a key named like a secret or a string shaped like a key."""
    if isinstance(value, dict):
        return any(
            (_SECRET_NAMES.search(str(name)) and item not in (None, "", {}, []))
            or _may_hold_a_secret(item)
            for name, item in value.items()
        )
    if isinstance(value, list):
        return any(map(_may_hold_a_secret, value))
    if not isinstance(value, str) or value.startswith(_PATHS):
        return False
    return _SECRET_SHAPED.fullmatch(value) is not None


def kind_as_ran(
    now: ChildKind,
    name: str,
    stored: dict[str, Any] | None,
    ran: ChildKind | None = None,
    spec: Callable[[ChildKind], dict[str, Any]] = kind_spec,
) -> ChildKind:
    """The kind a node ran as, from its `kind` row (`stored`) and its state row's kind `name`:
    `now` (the kind its agent has now) when it is the same configuration, else `ran` (the
    object the node ran with, known in this process) if it is, else one rebuilt from its class
    and arguments, else the registered kind of that name, else (arguments not stored, or a
    class not imported) a `NotRebuilt` standing for it; `now` when nothing was stored.
    `spec`: `kind_spec`, or one that remembers it for the kinds of a whole tree."""
    if stored is not None and "class" in stored:
        wanted = {"class": stored["class"], "given": stored["given"]}
        if spec(now) == wanted:
            return now
        if ran is not None and spec(ran) == wanted:
            return ran
        rebuilt = _rebuilt(stored["class"], stored["given"])
        if rebuilt is not None:
            return rebuilt
    if getattr(now, "name", None) == name:
        return now
    factory = registry().get(name)
    if factory is not None:
        return factory()
    return NotRebuilt(name, stored) if stored is not None else now


def _rebuilt(class_path: str, given: Any) -> ChildKind | None:
    found = _imported(class_path)
    if not isinstance(found, type) or given is None:
        return None
    try:
        args, kwargs = _built(given)
        return cast("ChildKind", found(*args, **kwargs))
    except Exception:  # a constructor that refuses what it was given once: not rebuilt
        return None


def _imported(class_path: str) -> Any:
    """The class `module:qualname` names: from a module already imported, or one of
    sagents_nb's own (a CLI driver's): never another import a store names."""
    module_name, _, qualname = class_path.partition(":")
    found: Any = sys.modules.get(module_name)
    if found is None and module_name.startswith("sagents_nb."):
        found = importlib.import_module(module_name)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found


def _built(value: Any) -> Any:
    """Stored arguments back as values: each dataclass built again from its fields."""
    if isinstance(value, dict):
        if DATACLASS in value:
            cls = _imported(value[DATACLASS])
            if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
                raise LookupError(f"{value[DATACLASS]} is not an imported dataclass")
            return cls(**_built(value["fields"]))
        return {name: _built(item) for name, item in value.items()}
    if isinstance(value, list):
        return [_built(item) for item in value]
    return value


def load_kind_state(node: Node, stored: dict[str, Any]) -> None:
    """Give the node's kind what `kind_state` stored; a kind that changed since keeps only the
    history."""
    kind = node.kind
    if kind.name != stored["kind"] or stored["state"] is None:
        return
    try:
        kind.load_state(node, stored["state"])
    except Exception as exc:
        raise StoreError(
            f"the {kind.name!r} kind of {node.path} could not load its stored state "
            f"({type(exc).__name__}: {exc}); the store is damaged, or the kind's load_state "
            "does not read what its dump_state wrote"
        ) from exc


def dump_json(data: Any) -> str:
    """Compact JSON text, as snapshots are stored."""
    return pydantic_core.to_json(data).decode()
