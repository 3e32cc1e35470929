"""sagents_nb: build, watch and step-debug LLM agents that delegate to sub-agents, in Jupyter."""

from __future__ import annotations

from typing import Any

from . import events, kinds
from ._agent import Agent, Task
from ._cassette import record, replay
from ._errors import (
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
from ._hooks import Deny, ToolCallInfo
from ._messages import Message, ToolCall, Usage
from ._mock import ChatRequest, call, mock_llm, reply, script
from ._pausing import PendingAction
from ._preprocess import Mentions, MessagePreprocessor, PreprocessContext
from ._result import Result, TreeNode
from ._run import Run
from ._session import Session
from ._store import Store, StoredSession
from ._tools import Tool, ToolError, ToolResult, tool
from ._wire import LLM

__version__ = "0.1.0"

__all__ = [
    "LLM",
    "Agent",
    "ChatRequest",
    "ConfigurationError",
    "Deny",
    "EndpointError",
    "LLMError",
    "MalformedReply",
    "Mentions",
    "Message",
    "MessagePreprocessor",
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
    "events",
    "harness",
    "kinds",
    "mock_llm",
    "record",
    "replay",
    "reply",
    "script",
    "tool",
]


def __getattr__(name: str) -> Any:
    # loaded on first use: `sn.harness` is only needed for native CLI children
    if name == "harness":
        import importlib

        return importlib.import_module(".harness", __name__)
    if name == "SQLiteStore":  # sqlite3 loads with the first durable session, not at import
        from ._store_sqlite import SQLiteStore

        return SQLiteStore
    raise AttributeError(f"module 'sagents_nb' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext sagents_nb`: register the notebook magics."""
    from .notebook import load_ipython_extension as load

    load(ipython)
