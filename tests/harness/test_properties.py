"""Property tests: no driver's parse_line raises, whatever the line."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sagents_nb.harness import ClaudeCode, Codex, CursorAgent, Grok, HarnessEventAdapter

pytestmark = pytest.mark.timeout(30)

DRIVERS = [ClaudeCode(), CursorAgent(), Codex(), Grok()]

# Keys and `type` values the drivers look at, so generated objects reach their deeper branches.
KNOWN_KEYS = [
    "type", "subtype", "message", "content", "text", "thinking", "name", "input", "id",
    "parent_tool_use_id", "result", "is_error", "errors", "usage", "input_tokens",
    "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "item", "error",
    "command", "tool", "arguments", "args", "query", "changes", "data", "stopReason", "call_id",
    "tool_call", "toolCall", "function", "readToolCall",
]  # fmt: skip
KNOWN_TYPES = [
    "assistant", "result", "system", "user", "text", "thinking", "tool_use", "tool_call",
    "item.started", "item.completed", "turn.completed", "turn.failed", "error", "agent_message",
    "reasoning", "command_execution", "mcp_tool_call", "web_search", "file_change", "thought",
    "end", "max_turns_reached", "delta", "started", "success", "error_max_turns", "Cancelled",
]  # fmt: skip

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.sampled_from(KNOWN_TYPES)
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KNOWN_KEYS) | st.text(max_size=8), children, max_size=6)
    ),
    max_leaves=12,
)
shaped_objects = st.fixed_dictionaries(
    {"type": st.sampled_from(KNOWN_TYPES)},
    optional={key: json_values for key in KNOWN_KEYS if key != "type"},
)


def _assert_valid_events(driver, line: str) -> None:
    events = driver.parse_line(line)
    assert isinstance(events, list)
    for event in events:
        assert HarnessEventAdapter.validate_json(HarnessEventAdapter.dump_json(event)) == event


@pytest.mark.parametrize("driver", DRIVERS, ids=lambda d: d.name)
@given(line=st.text())
def test_arbitrary_text_never_raises(driver, line):
    _assert_valid_events(driver, line)


@pytest.mark.parametrize("driver", DRIVERS, ids=lambda d: d.name)
@given(value=json_values)
def test_arbitrary_json_never_raises(driver, value):
    _assert_valid_events(driver, json.dumps(value))


@pytest.mark.parametrize("driver", DRIVERS, ids=lambda d: d.name)
@given(value=shaped_objects)
def test_objects_shaped_like_cli_events_never_raise(driver, value):
    _assert_valid_events(driver, json.dumps(value))
