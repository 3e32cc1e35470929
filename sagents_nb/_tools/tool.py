"""Typed tools: a function becomes a tool with a JSON schema, validated arguments and safe errors."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, get_type_hints

from .._base.checks import check_bool, check_callable, check_number, check_str, refuse
from .._base.errors import ConfigurationError
from ..events import ToolStatus
from .threads import run_in_worker

if TYPE_CHECKING:
    import pydantic

_ARG_LINE = re.compile(r"^\s{2,}(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@dataclass
class ToolResult:
    """What a tool call produced: the text the model sees, and how it went."""

    call_id: str
    name: str
    content: str
    status: ToolStatus = "ok"
    duration: float = 0.0


class ToolError(Exception):
    """Raise inside a tool to send a clean error message back to the model."""


class Tool:
    """A function the model may call. Build one with `@sn.tool`."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        thread: bool | None = None,
    ) -> None:
        where = "sn.tool(...)"
        check_callable("fn", fn, where=where, accepted="a function to call")
        check_str("name", name, where=where, optional=True)
        check_str("description", description, where=where, optional=True)
        check_number("timeout", timeout, where=where, positive=True, optional=True)
        if thread is not None:
            check_bool("thread", thread, where=where)
        if not (name or getattr(fn, "__name__", None)):
            refuse("name", name, "a str for a function without a __name__", where=where)
        self.fn = fn
        self.name = name or fn.__name__
        summary, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
        self.description = description if description is not None else summary
        self.is_async = inspect.iscoroutinefunction(fn)
        if self.is_async and thread:
            raise ConfigurationError(
                f"tool {self.name!r} is async: it runs on the event loop; thread=True is for "
                "sync functions (drop it, or make the function sync)"
            )
        if not self.is_async and thread is False and timeout is not None:
            raise ConfigurationError(
                f"tool {self.name!r}: a sync function run with thread=False blocks the event "
                "loop, so timeout= cannot be enforced; drop thread=False (a worker thread is "
                "the default) or the timeout"
            )
        self.timeout = timeout
        self.thread = not self.is_async and thread is not False
        self._model = _arguments_model(fn, self.name, arg_docs)
        schema = self._model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        self.parameters: dict[str, Any] = schema
        self._spec = {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def to_wire(self) -> dict[str, Any]:
        """The OpenAI `tools` entry for this tool."""
        return self._spec

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validated keyword arguments; raises `pydantic.ValidationError`."""
        return dict(self._model.model_validate(arguments).__dict__)  # its fields (no extras)

    async def invoke(self, arguments: dict[str, Any]) -> str:
        """Validate `arguments`, call the function and return its result as text."""
        kwargs = self.validate(arguments)
        if self.is_async:
            call: Awaitable[Any] = self.fn(**kwargs)
        elif self.thread:
            call = run_in_worker(self.fn, kwargs)
        else:
            return result_text(self.fn(**kwargs))
        if self.timeout is not None:
            return result_text(await asyncio.wait_for(call, self.timeout))
        return result_text(await call)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    thread: bool | None = None,
) -> Any:
    """Turn a typed function (sync or async) into a `Tool`.

    The JSON schema comes from the signature; the description from the docstring's first
    paragraph, and each parameter's description from its `Args:` section.

    Args:
        fn: the function (when used as a bare decorator).
        name: the tool's name; defaults to the function's.
        description: overrides the docstring summary.
        timeout: seconds the call may take; then the model gets an error result. An async
            tool is cancelled; a sync tool's thread cannot be stopped, so it is left to finish
            and its result is dropped.
        thread: where a sync function runs. By default (and with True) in a worker thread, so
            a tool that blocks (`time.sleep`, `requests.get`) never stalls other sessions or
            the controls (`send`, `cancel`). `False` runs it on sagents_nb's event loop: a
            little faster for a function that returns at once, but while it runs nothing
            else in the process moves, and `timeout=` cannot be enforced (refused).
            Async functions always run on the loop.

    Raises:
        ConfigurationError: `thread=True` on an async function, or `timeout=` with
            `thread=False` on a sync one.
    """

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool(f, name=name, description=description, timeout=timeout, thread=thread)

    return wrap(fn) if fn is not None else wrap


HOOK = "a hook (an object with before_tool and/or after_tool)"
"""What `hooks=` takes, for the error that refuses something else."""


def is_hook(value: object) -> bool:
    """Whether `value` is a tool hook (`_tools.hooks`): it has `before_tool` or `after_tool`.
    Here, not with the hooks, which load with a first tool call."""
    return hasattr(value, "before_tool") or hasattr(value, "after_tool")


def result_text(value: Any) -> str:
    """A tool's return value as the text sent to the model."""
    if isinstance(value, str):
        return value
    from pydantic import BaseModel  # loaded with the tool's arguments model
    from pydantic_core import to_jsonable_python

    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(to_jsonable_python(value), ensure_ascii=False)


def parse_arguments(raw: str) -> dict[str, Any]:
    """Decode a tool call's JSON arguments; raises ValueError with a readable reason."""
    if raw is None or not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"arguments are not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ValueError(f"arguments must be a JSON object, got {type(value).__name__}")
    return value


def validation_message(exc: pydantic.ValidationError) -> str:
    """A compact, model-readable summary of a validation error."""
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def _arguments_model(
    fn: Callable[..., Any], name: str, docs: dict[str, str]
) -> type[pydantic.BaseModel]:
    """The pydantic model of `fn`'s arguments (pydantic loads with the first tool)."""
    import pydantic

    hints = get_type_hints(fn)
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {name!r}: *args and **kwargs cannot be described to a model")
        annotation = hints.get(param.name, Any)
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (
            annotation,
            pydantic.Field(default, description=docs.get(param.name)),
        )
    return pydantic.create_model(  # type: ignore[call-overload,no-any-return]
        f"{name}_arguments", __config__=pydantic.ConfigDict(extra="forbid"), **fields
    )


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its summary and per-argument descriptions."""
    summary_lines: list[str] = []
    args: dict[str, str] = {}
    section = "summary"
    current: str | None = None
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            section, current = "args", None
            continue
        if stripped.endswith(":") and not line.startswith(" ") and stripped[:-1].isalpha():
            section = "other"
            continue
        if section == "summary":
            if not stripped and summary_lines:
                section = "rest"
            elif stripped:
                summary_lines.append(stripped)
        elif section == "args":
            match = _ARG_LINE.match("  " + line if not line.startswith("  ") else line)
            if match and not line.startswith("      "):
                current = match.group(1).lstrip("*")
                args[current] = match.group(2).strip()
            elif current and stripped:
                args[current] = f"{args[current]} {stripped}".strip()
    return " ".join(summary_lines), args
