"""Checked arguments: a public call refuses a wrong-typed argument at once, naming it."""

from __future__ import annotations

import dataclasses
import functools
import os
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, NoReturn, TypeVar

from .errors import ConfigurationError

T = TypeVar("T")


class ArgumentError(ConfigurationError, TypeError):
    """An argument of the wrong type or out of range; catch it as either base."""


def described(value: object) -> str:
    """`value` for an error: its type and a short repr, e.g. `str '100'`."""
    try:
        shown = repr(value)
    except Exception:  # a broken repr must not hide the real error
        return type(value).__name__
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{type(value).__name__} {shown}"


def refuse(
    name: str, value: object, accepted: str, *, where: str, secret: bool = False
) -> NoReturn:
    """Raise the `ArgumentError` that says what `name` got and what it accepts (for a `secret`,
    such as a key, its type only)."""
    got = type(value).__name__ if secret else described(value)
    raise ArgumentError(f"{where}: {name} must be {accepted}, not {got}")


def check_int(
    name: str, value: Any, *, where: str, minimum: int | None = None, optional: bool = False
) -> Any:
    """`value` if it is an int (not a bool) of at least `minimum`, or None when `optional`."""
    if value is None and optional:
        return None
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or (minimum is not None and value < minimum)
    ):
        least = "" if minimum is None else f" of at least {minimum}"
        refuse(name, value, f"an int{least}{' or None' if optional else ''}", where=where)
    return value


def check_number(
    name: str, value: Any, *, where: str, positive: bool = False, optional: bool = False
) -> Any:
    """`value` if it is an int or float (not a bool), above 0 when `positive`; None when `optional`."""
    if value is None and optional:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or (positive and value <= 0):
        what = "a number of seconds above 0" if positive else "a number"
        refuse(name, value, f"{what}{' or None' if optional else ''}", where=where)
    return value


def check_str(
    name: str,
    value: Any,
    *,
    where: str,
    optional: bool = False,
    empty: bool = True,
    secret: bool = False,
) -> Any:
    """`value` if it is a str (non-empty unless `empty`), or None when `optional`."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or (not empty and not value):
        what = "a str" if empty else "a non-empty str"
        refuse(name, value, f"{what}{' or None' if optional else ''}", where=where, secret=secret)
    return value


def check_bool(name: str, value: Any, *, where: str) -> bool:
    """`value` if it is True or False."""
    if not isinstance(value, bool):
        refuse(name, value, "True or False", where=where)
    return value


def check_callable(
    name: str, value: Any, *, where: str, accepted: str = "a function", optional: bool = False
) -> Any:
    """`value` if it is callable, or None when `optional`."""
    if (value is None and optional) or callable(value):
        return value
    refuse(name, value, f"{accepted}{' or None' if optional else ''}", where=where)


def check_instance(
    name: str, value: Any, types: type[T] | tuple[type, ...], *, where: str, accepted: str
) -> T:
    """`value` if it is an instance of `types` (`accepted` says what that is, for the error)."""
    if not isinstance(value, types):
        refuse(name, value, accepted, where=where)
    return typing.cast(T, value)


def check_path(name: str, value: Any, *, where: str) -> Any:
    """`value` if it is a file path (a str or `os.PathLike`)."""
    if not isinstance(value, str | os.PathLike):
        refuse(name, value, "a file path (a str or pathlib.Path)", where=where)
    return value


def check_items(
    name: str, value: Any, accept: Callable[[Any], bool], *, where: str, accepted: str
) -> list[Any]:
    """The items of `value` (a list, tuple, set or other iterable, never a str) as a list, each
    passing `accept`; the first that does not is named by its index."""
    if isinstance(value, str | bytes | dict) or not isinstance(value, Iterable):
        refuse(name, value, f"a list (each item {accepted})", where=where)
    items = list(value)
    for index, item in enumerate(items):
        if not accept(item):
            refuse(f"{name}[{index}]", item, accepted, where=where)
    return items


def is_str(value: object) -> bool:
    """Whether `value` is a str (an item test for `check_items`)."""
    return isinstance(value, str)


def check_fields(obj: Any) -> None:
    """Check a dataclass's fields against their plain annotations (str, bool, int, float, None,
    a `Literal`, `list[str]`, `Sequence[str]`): a `__post_init__` for a small public record."""
    cls: Any = type(obj)
    where = f"{cls.__qualname__}(...)"
    for name, accept, accepted, secret in _field_checks(cls):
        value = getattr(obj, name)
        if not accept(value):
            refuse(name, value, accepted, where=where, secret=secret)


@functools.cache
def _field_checks(cls: type) -> list[tuple[str, Callable[[Any], bool], str, bool]]:
    hints = typing.get_type_hints(cls)
    checks = []
    for f in dataclasses.fields(cls):
        check = _check_for(hints.get(f.name))
        if check is not None:  # a field kept out of the repr (a key) is not shown in errors
            checks.append((f.name, *check, not f.repr))
    return checks


_PLAIN = {str: "a str", bool: "True or False", int: "an int", float: "a number"}


def _check_for(hint: Any) -> tuple[Callable[[Any], bool], str] | None:
    """A test and its description for an annotation this checker knows, else None."""
    if hint in _PLAIN:
        if hint is bool:
            return (lambda v: isinstance(v, bool)), _PLAIN[hint]
        plain = (int, float) if hint is float else (hint,)
        return (lambda v: isinstance(v, plain) and not isinstance(v, bool)), _PLAIN[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return (lambda v: v in args), f"one of {', '.join(map(repr, args))}"
    if origin in (types.UnionType, typing.Union) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        inner = _check_for(rest[0]) if len(rest) == 1 else None
        if inner is None:
            return None
        accept, accepted = inner
        return (lambda v: v is None or accept(v)), f"{accepted} or None"
    if origin in (list, tuple, Sequence) and args[:1] == (str,):
        return (
            lambda v: isinstance(v, list | tuple) and all(isinstance(i, str) for i in v)
        ), "a list of str"
    return None
