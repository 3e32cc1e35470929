"""sagents_nb: build, watch and step-debug LLM agents that delegate to sub-agents, in Jupyter."""

import typing as _typing

# The errors are the only names bound at import: they load nothing else, and `except
# sn.SagentsError` needs no first use. Every other public name loads with its module the first
# time it is looked up (`__getattr__` below): the core (the events, messages, tools, kinds and
# runtime) needs msgspec and asyncio, which are most of the cost of importing the package
# (pydantic loads with the first tool).
from ._base.errors import (
    CassetteMismatch,
    ConfigurationError,
    EndpointError,
    LLMError,
    MalformedReply,
    Rejected,
    RunPaused,
    SagentsError,
    StoreError,
    TransportError,
)

if _typing.TYPE_CHECKING:
    from . import events, harness, kinds
    from ._base.messages import Message, ToolCall, Usage
    from ._compare.comparison import Comparison
    from ._compare.session_diff import SessionDiff, diff
    from ._compare.sweep import compare, sweep
    from ._endpoints.cassette import record, replay
    from ._endpoints.mock import ChatRequest, call, mock_llm, reply, script
    from ._endpoints.mock_server import MockServer
    from ._endpoints.openai import LLM
    from ._runtime.agent import Agent, Task
    from ._runtime.breakpoints import when
    from ._runtime.pending import PendingAction
    from ._runtime.preprocess import Mentions, MessagePreprocessor, PreprocessContext
    from ._runtime.result import Result, TreeNode
    from ._runtime.run import Run
    from ._runtime.session import Session
    from ._store.protocol import Store, StoredSession
    from ._store.sqlite.store import SQLiteStore
    from ._tools.hooks import Deny, ToolCallInfo
    from ._tools.tool import Tool, ToolError, ToolResult, tool

__version__ = "0.1.0"

__all__ = [
    "LLM",
    "Agent",
    "CassetteMismatch",
    "ChatRequest",
    "Comparison",
    "ConfigurationError",
    "Deny",
    "EndpointError",
    "LLMError",
    "MalformedReply",
    "Mentions",
    "Message",
    "MessagePreprocessor",
    "MockServer",
    "PendingAction",
    "PreprocessContext",
    "Rejected",
    "Result",
    "Run",
    "RunPaused",
    "SQLiteStore",
    "SagentsError",
    "Session",
    "SessionDiff",
    "Store",
    "StoreError",
    "StoredSession",
    "Task",
    "Tool",
    "ToolCall",
    "ToolCallInfo",
    "ToolError",
    "ToolResult",
    "TransportError",
    "TreeNode",
    "Usage",
    "call",
    "compare",
    "diff",
    "events",
    "harness",
    "kinds",
    "mock_llm",
    "record",
    "replay",
    "reply",
    "script",
    "sweep",
    "tool",
    "when",
]


# Where each public name that loads on first use is defined. Beyond the core: the mocks and
# cassettes need httpx (which loads its CLI's click, rich and pygments when installed),
# SQLiteStore needs sqlite3, compare and sweep need both, `harness` only native CLI children, and
# `otel` OpenTelemetry (the `otel` extra: so `sn.otel` is left out of `__all__`, and a star
# import needs no extra).
_SUBMODULES = {"events", "harness", "kinds", "otel"}
_LAZY = {
    "Agent": "._runtime.agent",
    "ChatRequest": "._endpoints.mock",
    "Comparison": "._compare.comparison",
    "Deny": "._tools.hooks",
    "LLM": "._endpoints.openai",
    "Mentions": "._runtime.preprocess",
    "Message": "._base.messages",
    "MessagePreprocessor": "._runtime.preprocess",
    "MockServer": "._endpoints.mock_server",
    "PendingAction": "._runtime.pending",
    "PreprocessContext": "._runtime.preprocess",
    "Result": "._runtime.result",
    "Run": "._runtime.run",
    "SQLiteStore": "._store.sqlite.store",
    "Session": "._runtime.session",
    "Store": "._store.protocol",
    "StoredSession": "._store.protocol",
    "Task": "._runtime.agent",
    "Tool": "._tools.tool",
    "ToolCall": "._base.messages",
    "ToolCallInfo": "._tools.hooks",
    "ToolError": "._tools.tool",
    "ToolResult": "._tools.tool",
    "TreeNode": "._runtime.result",
    "Usage": "._base.messages",
    "call": "._endpoints.mock",
    "browse": ".notebook._browse",
    "compare": "._compare.sweep",
    "diff": "._compare.session_diff",
    "SessionDiff": "._compare.session_diff",
    "mock_llm": "._endpoints.mock",
    "record": "._endpoints.cassette",
    "replay": "._endpoints.cassette",
    "reply": "._endpoints.mock",
    "script": "._endpoints.mock",
    "sweep": "._compare.sweep",
    "tool": "._tools.tool",
    "when": "._runtime.breakpoints",
}


def _publish(value: object) -> object:
    """Show a public class or function as `sagents_nb.<name>` (reprs, docs, tracebacks), as httpx does."""
    if isinstance(value, type) or callable(value):
        try:
            value.__module__ = __name__
        except (AttributeError, TypeError):  # a builtin or a protocol that refuses it
            pass
    return value


def __getattr__(name: str) -> object:
    import importlib

    if name in _SUBMODULES:
        value: object = importlib.import_module(f".{name}", __name__)
    elif name in _LAZY:
        value = _publish(getattr(importlib.import_module(_LAZY[name], __name__), name))
    else:
        raise AttributeError(f"module 'sagents_nb' has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


for _name in __all__:
    if _name in globals():
        _publish(globals()[_name])


def load_ipython_extension(ipython: object) -> None:
    """`%load_ext sagents_nb`: register the notebook magics."""
    from .notebook import load_ipython_extension as load

    load(ipython)
