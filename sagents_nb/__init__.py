"""sagents_nb: build, watch and step-debug LLM agents that delegate to sub-agents, in Jupyter."""

import typing as _typing

from . import events, kinds
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
from ._base.messages import Message, ToolCall, Usage
from ._endpoints.openai import LLM
from ._runtime.agent import Agent, Task
from ._runtime.pausing import PendingAction
from ._runtime.preprocess import Mentions, MessagePreprocessor, PreprocessContext
from ._runtime.result import Result, TreeNode
from ._runtime.run import Run
from ._runtime.session import Session
from ._store.protocol import Store, StoredSession
from ._tools.hooks import Deny, ToolCallInfo
from ._tools.tool import Tool, ToolError, ToolResult, tool

if _typing.TYPE_CHECKING:
    from ._compare.comparison import Comparison
    from ._compare.sweep import compare, sweep
    from ._endpoints.cassette import record, replay
    from ._endpoints.mock import ChatRequest, call, mock_llm, reply, script
    from ._endpoints.mock_server import MockServer
    from ._store.sqlite.store import SQLiteStore

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
]


# Public names whose modules load on first use, not at import: the mocks and cassettes need
# httpx (which loads its CLI's click, rich and pygments when installed), SQLiteStore
# needs sqlite3 (it loads with the first durable session); compare and sweep need both.
_LAZY = {
    "ChatRequest": "._endpoints.mock",
    "Comparison": "._compare.comparison",
    "MockServer": "._endpoints.mock_server",
    "SQLiteStore": "._store.sqlite.store",
    "call": "._endpoints.mock",
    "compare": "._compare.sweep",
    "mock_llm": "._endpoints.mock",
    "record": "._endpoints.cassette",
    "replay": "._endpoints.cassette",
    "reply": "._endpoints.mock",
    "script": "._endpoints.mock",
    "sweep": "._compare.sweep",
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

    if name == "harness":  # only needed for native CLI children
        return importlib.import_module(".harness", __name__)
    if name in _LAZY:
        value = _publish(getattr(importlib.import_module(_LAZY[name], __name__), name))
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module 'sagents_nb' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


for _name in __all__:
    if _name in globals() and _name not in ("events", "kinds"):
        _publish(globals()[_name])


def load_ipython_extension(ipython: object) -> None:
    """`%load_ext sagents_nb`: register the notebook magics."""
    from .notebook import load_ipython_extension as load

    load(ipython)
