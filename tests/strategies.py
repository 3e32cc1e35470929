"""Hypothesis strategies read off the event registry: every event class, every field of it."""

from __future__ import annotations

import types
import typing
from typing import Any

from hypothesis import strategies as st

from sagents_nb._base.model import Model
from sagents_nb.events import Event, _event_classes

texts = st.text(max_size=40)
"""Any text: French, Chinese, emoji, control characters (no lone surrogates)."""
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
_SIMPLE: dict[Any, st.SearchStrategy[Any]] = {
    str: texts,
    int: st.integers(-(10**9), 10**9),
    float: st.floats(allow_nan=False, allow_infinity=False),
    bool: st.booleans(),
    type(None): st.none(),
    Any: json_values,
}


def values(annotation: Any) -> st.SearchStrategy[Any]:
    """Values of a field's type, as the field's annotation says."""
    if annotation in _SIMPLE:
        return _SIMPLE[annotation]
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return st.sampled_from(args)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*map(values, args))
    if origin is list:
        return st.lists(values(args[0]), max_size=3)
    if origin is tuple and args[-1] is Ellipsis:
        return st.lists(values(args[0]), max_size=3).map(tuple)
    if origin is dict:
        return st.dictionaries(values(args[0]), values(args[1]), max_size=3)
    if isinstance(annotation, type) and issubclass(annotation, Model):
        return models(annotation)
    return st.from_type(annotation)


def models(cls: type[Model]) -> st.SearchStrategy[Any]:
    """Instances of a struct: every field drawn, fields with a default sometimes left to it
    (an event's `type` is its class's)."""
    required, optional = {}, {}
    for name, info in cls.model_fields.items():
        if name == "type" and issubclass(cls, Event):
            continue
        (required if info.is_required() else optional)[name] = values(info.annotation)
    return st.fixed_dictionaries(required, optional=optional).map(lambda fields: cls(**fields))


def events(classes: typing.Iterable[type[Event]] | None = None) -> st.SearchStrategy[Event]:
    """Any registered event (or one of `classes`): a class added to the registry is drawn
    with no change here."""

    def pick() -> st.SearchStrategy[Event]:
        chosen = sorted(classes or _event_classes(), key=lambda cls: cls.__name__)
        return st.sampled_from(chosen).flatmap(models)

    return st.deferred(pick)  # the registry as it is when a test draws, not at import
