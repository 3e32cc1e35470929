"""Objects the runtime builds without validation (`_messages.trusted`) must equal validated ones."""

from __future__ import annotations

import sagents_nb as sn
from sagents_nb._runtime.turns import _model_request
from sagents_nb.events import ModelRequest, parse_event


def test_model_request_fast_path_matches_validation() -> None:
    fields = {
        "turn": 3,
        "model": "m",
        "messages": [sn.Message(role="user", content="hi")],
        "tools": ["noop"],
        "tool_choice": "auto",
        "stream": True,
    }
    fast, checked = _model_request(**fields), ModelRequest(**fields)
    assert set(fast.__dict__) == set(ModelRequest.model_fields)  # a new field must be set there
    assert fast == checked
    assert fast.model_dump_json() == checked.model_dump_json()
    assert parse_event(fast.model_dump_json()) == checked


def test_usage_sums_match_validation() -> None:
    a = sn.Usage(prompt_tokens=1, completion_tokens=2, total_tokens=3)
    total = a + sn.Usage(prompt_tokens=10, completion_tokens=20, total_tokens=30)
    assert total == sn.Usage(prompt_tokens=11, completion_tokens=22, total_tokens=33)
    assert total.model_dump() == {"prompt_tokens": 11, "completion_tokens": 22, "total_tokens": 33}
