"""The public surface is explicit, sorted and free of Jupyter imports."""

from __future__ import annotations

import subprocess
import sys

import sagents_nb as sn

EXPECTED = {
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
}


def test_all_is_sorted_and_exact() -> None:
    assert sn.__all__ == sorted(sn.__all__, key=lambda n: (not n.isupper(), n))
    assert set(sn.__all__) == EXPECTED
    for name in sn.__all__:
        assert getattr(sn, name) is not None


def test_import_loads_no_jupyter_package() -> None:
    code = (
        "import sys, sagents_nb; "
        "print([m for m in ('ipywidgets', 'anywidget', 'IPython', 'ipykernel') "
        "if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_events_round_trip_through_json() -> None:
    from sagents_nb.events import ModelResponse, TaskSpawned, parse_event

    for event in (
        TaskSpawned(child="a/b.1", agent="b", prompt="p", kind="worker", seq=3, path="a"),
        ModelResponse(turn=1, message=sn.Message(role="assistant", content="hi"), seq=4),
    ):
        again = parse_event(event.model_dump_json())
        assert type(again) is type(event)
        assert again == event


def test_message_copies_do_not_keep_stale_wire_or_token_caches() -> None:
    from sagents_nb._messages import estimate_tokens

    original = sn.Message(role="user", content="short")
    assert original.to_wire()["content"] == "short" and estimate_tokens(original) == 5
    copy = original.model_copy(update={"content": "a much longer message than before"})
    assert copy.to_wire()["content"] == "a much longer message than before"
    assert estimate_tokens(copy) == 12


def test_equal_messages_compare_equal_whatever_their_caches() -> None:
    a, b = sn.Message(role="user", content="x"), sn.Message(role="user", content="x")
    a.to_wire()
    assert a == b and hash(a) == hash(b)
    assert a != sn.Message(role="user", content="y")
