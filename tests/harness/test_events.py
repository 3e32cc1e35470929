"""Harness events and outcomes: discriminated by `type`, and JSON round-trips."""

from __future__ import annotations

import pytest

from sagents_nb.harness import (
    HarnessDone,
    HarnessError,
    HarnessEventAdapter,
    HarnessOutcome,
    HarnessReasoning,
    HarnessText,
    HarnessToolCall,
    HarnessUsage,
)

EVENTS = [
    HarnessText(text="hello"),
    HarnessReasoning(text="thinking"),
    HarnessToolCall(name="Bash", arguments={"command": "ls", "nested": [1, {"a": None}]}, id="t1"),
    HarnessToolCall(name="read"),
    HarnessDone(content="answer", usage=HarnessUsage(input_tokens=10, output_tokens=2)),
    HarnessError(message="it broke"),
    HarnessError(message="retrying", fatal=False),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.type)
def test_events_round_trip_through_json(event):
    assert HarnessEventAdapter.validate_json(HarnessEventAdapter.dump_json(event)) == event


def test_the_type_field_picks_the_class():
    parsed = HarnessEventAdapter.validate_python({"type": "done", "content": "x"})
    assert parsed == HarnessDone(content="x", usage=HarnessUsage())


def test_outcomes_round_trip_through_json():
    outcome = HarnessOutcome(status="error", text="partial", exit_code=2, stderr_tail=["boom"],
                             error="exited with code 2")  # fmt: skip
    assert HarnessOutcome.model_validate_json(outcome.model_dump_json()) == outcome
