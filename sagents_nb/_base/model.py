"""The base of the events and messages: `msgspec` structs with the pydantic methods people call
(`model_dump`, `model_dump_json`, `model_validate`, `model_validate_json`, `model_copy`,
`model_fields`).

A struct's fields are keyword-only and laid out as a pydantic model's (a subclass's after its
bases'). A field `type: Literal["x"] = "x"` in a class whose base has a `tag_field` (the events)
becomes the class's tag: a class constant, written first in its JSON and read back by a
tagged-union decoder. Construction does not validate (a class checks what matters in
`__post_init__`); decoding does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal, NamedTuple, TypeVar, dataclass_transform

import msgspec

M = TypeVar("M", bound="Model")

_encode = msgspec.json.encode


class FieldInfo(NamedTuple):
    """A field as `model_fields` describes it."""

    annotation: Any
    default: Any
    """The default value; `REQUIRED` for a field without one or with a `default_factory`."""
    default_factory: Any = None

    def is_required(self) -> bool:
        """Whether the field has no default (as pydantic's `FieldInfo.is_required`)."""
        return self.default is REQUIRED and self.default_factory is None


REQUIRED: Any = msgspec.NODEFAULT


class ModelMeta(msgspec.StructMeta):
    """Makes every field keyword-only, and a `type` literal with its value the class's tag."""

    def __new__(
        mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **options: Any
    ) -> Any:
        annotations = namespace.get("__annotations__", {})
        for field in annotations:
            if type(namespace.get(field)).__name__ == "FieldInfo":  # pydantic's `Field(...)`
                raise TypeError(
                    f"{name}.{field}: pydantic's Field(...) does not apply to sagents_nb's "
                    "events and messages (msgspec structs): give a plain default, or "
                    "msgspec.field(default_factory=...)"
                )
        tag = namespace.get("type")
        if "type" in annotations and isinstance(tag, str):
            del annotations["type"]
            options["tag"] = tag
        options.setdefault("kw_only", True)
        return super().__new__(mcls, name, bases, namespace, **options)


class _Fields:
    """`Model.model_fields`: each field's `FieldInfo` by name (the tag first), learnt once per
    class."""

    def __init__(self) -> None:
        self.known: dict[type, dict[str, FieldInfo]] = {}

    def __get__(self, instance: Any, cls: type[Model]) -> dict[str, FieldInfo]:
        found = self.known.get(cls)
        if found is None:
            found = {}
            tag = cls.__struct_config__.tag
            if isinstance(tag, str):
                found[cls.__struct_config__.tag_field] = FieldInfo(Literal[tag], tag)  # type: ignore[index]
            for field in msgspec.structs.fields(cls):  # type: ignore[arg-type]
                found[field.name] = FieldInfo(
                    field.type,
                    field.default,
                    None if field.default_factory is msgspec.NODEFAULT else field.default_factory,
                )
            self.known[cls] = found
        return found


if TYPE_CHECKING:

    @dataclass_transform(kw_only_default=True, field_specifiers=(msgspec.field,))
    class _Struct:
        """What type checkers see of `msgspec.Struct`: keyword-only fields."""

        __struct_config__: ClassVar[msgspec.structs.StructConfig]

        def __init_subclass__(cls, **options: Any) -> None: ...

else:
    _Struct = msgspec.Struct


class Model(_Struct, metaclass=ModelMeta):
    """A struct with pydantic's methods."""

    model_fields: ClassVar[Any] = _Fields()
    repr_hidden: ClassVar[frozenset[str]] = frozenset()
    """Fields the repr leaves out."""

    def model_dump(
        self,
        *,
        mode: str = "python",
        exclude_defaults: bool = False,
        exclude_none: bool = False,
    ) -> dict[str, Any]:
        """The fields as a dict, nested structs as dicts (`mode` is taken for pydantic's sake:
        every value is JSON's already)."""
        if exclude_defaults or exclude_none:
            return _data(self, exclude_defaults, exclude_none)  # type: ignore[no-any-return]
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]

    def model_dump_json(self, *, indent: int | None = None) -> str:
        """The JSON text (UTF-8 as it is, not escaped)."""
        data = _encode(self)
        return (msgspec.json.format(data, indent=indent) if indent else data).decode()

    @classmethod
    def model_validate(cls: type[M], data: Any) -> M:
        """An instance from a dict (or the instance itself), validated; a bad value raises
        `msgspec.ValidationError`, a `ValueError` that says where."""
        if isinstance(data, cls):
            return data
        return msgspec.convert(data, cls)

    @classmethod
    def model_validate_json(cls: type[M], data: str | bytes) -> M:
        """An instance from its JSON, validated."""
        return msgspec.json.decode(data, type=cls)

    def model_copy(self: M, *, update: dict[str, Any] | None = None) -> M:
        """A copy with `update`'s fields changed (checked as at construction)."""
        return msgspec.structs.replace(self, **(update or {}))  # type: ignore[type-var]

    def __repr__(self) -> str:
        hidden = self.repr_hidden
        shown = [f"{n}={getattr(self, n)!r}" for n in self.model_fields if n not in hidden]
        return f"{type(self).__name__}({', '.join(shown)})"


_DEFAULTS: dict[type, tuple[tuple[str, Any], ...]] = {}
"""Each class's fields and their defaults (a factory's value made once, only compared)."""


def _defaults(cls: type[Model]) -> tuple[tuple[str, Any], ...]:
    found = _DEFAULTS.get(cls)
    if found is None:
        found = _DEFAULTS[cls] = tuple(
            (name, field.default if field.default_factory is None else field.default_factory())
            for name, field in cls.model_fields.items()
        )
    return found


def _data(value: Any, no_defaults: bool, no_none: bool) -> Any:
    """`value` as JSON-like data, fields equal to their defaults and/or None left out (nested
    structs' too), as pydantic's `exclude_defaults` / `exclude_none` do."""
    if isinstance(value, Model):
        data = {}
        for name, default in _DEFAULTS.get(type(value)) or _defaults(type(value)):
            item = getattr(value, name)
            if (no_none and item is None) or (
                no_defaults and item == default and default is not REQUIRED
            ):
                continue
            data[name] = _data(item, no_defaults, no_none)
        return data
    if isinstance(value, (list, tuple)):
        return [_data(item, no_defaults, no_none) for item in value]
    if isinstance(value, dict):
        return {key: _data(item, no_defaults, no_none) for key, item in value.items()}
    return value
