"""Objects the runtime builds without validation (`_messages.trusted`, `_messages.built`) must
equal validated ones."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

import sagents_nb as sn
from sagents_nb._base.messages import BUILT_BEFORE_VALIDATING, ToolCall, built, made
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


# what the runtime makes on every turn (`built`), each as the turn loop makes it
BUILT_ON_EVERY_TURN = [
    (sn.events.StatusChanged, {"status": "running", "detail": None}),
    (sn.events.StatusChanged, {"status": "waiting", "detail": "waiting for a/b.1: tool"}),
    (
        sn.events.ContextBuilt,
        {
            "turn": 2,
            "kind": "main",
            "view_messages": 3,
            "storage_messages": 3,
            "view_tokens": 40,
            "storage_tokens": 40,
            "hidden": 0,
            "from_storage": [0, 0, 3],
        },
    ),
    (
        sn.events.ModelResponse,
        {
            "turn": 1,
            "message": sn.Message(role="assistant", content="東京 ✓"),
            "usage": sn.Usage(prompt_tokens=1, completion_tokens=2, total_tokens=3),
            "duration": 0.25,
            "finish_reason": "stop",
            "truncated": False,
        },
    ),
    (sn.events.ModelResponse, {"turn": 1, "message": sn.Message(role="assistant"), "usage": None}),
    (
        sn.events.ToolCallStarted,
        {"call_id": "c1", "name": "noop", "arguments": '{"x": 1}', "display_text": None},
    ),
    (
        sn.events.ToolCallFinished,
        {
            "call_id": "c1",
            "name": "noop",
            "arguments": "{}",
            "result": "déjà vu",
            "status": "denied",
            "duration": 0.5,
        },
    ),
    (
        sn.events.TaskSpawned,
        {"child": "p/w.1", "agent": "w", "prompt": "p", "kind": "worker", "call_id": "c2"},
    ),
    (
        sn.events.TaskFinished,
        {"child": "p/w.1", "agent": "w", "status": "done", "text": "t", "turns": 2},
    ),
    (sn.events.RunStarted, {"path": "", "agent": "a", "input": "hi", "pause_on": ["tool"]}),
    (sn.events.RunStarted, {"path": "", "agent": "a", "input": None, "breakpoints": [{}]}),
    (sn.events.RunFinished, {"path": "", "status": "done", "text": "ok", "turns": 1}),
    (sn.events.TextDelta, {"text": "🙂"}),
    (sn.Message, {"role": "tool", "tool_call_id": "c1", "content": "ok"}),
    (
        sn.Message,
        {"role": "assistant", "content": None, "tool_calls": (ToolCall(id="c", name="n"),)},
    ),
    (ToolCall, {"id": "c", "name": "n", "arguments": "{}"}),
    (sn.Usage, {}),
    (sn.Usage, {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}),
]


@pytest.mark.parametrize(("cls", "values"), BUILT_ON_EVERY_TURN)
def test_made_objects_equal_validated_ones(cls: type[BaseModel], values: dict[str, Any]) -> None:
    fast, checked = made(cls, dict(values)), cls(**values)
    assert fast is not None
    assert fast == checked
    assert list(fast.__dict__) == list(checked.__dict__)  # field order, as repr shows it
    assert fast.model_fields_set == checked.model_fields_set
    assert fast.model_dump_json() == checked.model_dump_json()
    assert fast.__pydantic_private__ == checked.__pydantic_private__
    if isinstance(fast, sn.events.Event):
        assert parse_event(fast.model_dump_json()) == checked


def test_made_copies_mutable_defaults() -> None:
    first, second = made(sn.events.RunStarted, {"agent": "a"}), made(sn.events.RunStarted, {})
    assert first is not None and second is None  # `agent` is required: validation says so
    first.pause_on.append("tool")
    assert made(sn.events.RunStarted, {"agent": "b"}).pause_on == []  # type: ignore[union-attr]


def test_validation_decides_a_value_it_would_change_or_refuse() -> None:
    numbers = {"view_messages": 1, "storage_messages": 1, "view_tokens": 1, "storage_tokens": 1}
    changed: list[tuple[type[BaseModel], dict[str, Any]]] = [
        (sn.events.ToolCallFinished, {"call_id": "c", "name": "n", "result": "r", "duration": 1}),
        (sn.events.ContextBuilt, {"turn": 1, "kind": "k", **numbers, "from_storage": ["0", 1]}),
    ]
    refused: list[tuple[type[BaseModel], dict[str, Any]]] = [
        (sn.events.StatusChanged, {"status": 3}),
        (sn.events.ToolCallFinished, {"call_id": "c", "name": "n", "result": "r", "status": "?"}),
        (sn.events.TaskFinished, {"child": "c", "agent": "a", "status": "done"}),  # no `text`
        (sn.Message, {"role": "tool", "content": 7}),
    ]
    for cls, values in [*changed, *refused, (sn.Message, {"role": "user", "unknown": 1})]:
        assert made(cls, values) is None
    converted = built(sn.events.ToolCallFinished)(**changed[0][1])
    assert converted.duration == 1.0 and type(converted.duration) is float
    assert built(sn.events.ContextBuilt)(**changed[1][1]).from_storage == [0, 1]
    for cls, values in refused:
        with pytest.raises(ValidationError):
            built(cls)(**values)


def test_a_model_with_validators_of_its_own_is_validated() -> None:
    class Shouting(BaseModel):
        text: str

        @field_validator("text")
        @classmethod
        def louder(cls, value: str) -> str:
            return value.upper()

    assert made(Shouting, {"text": "hé"}) is None and built(Shouting)(text="hé").text == "HÉ"


def test_validation_takes_over_after_the_first_objects() -> None:
    class Fresh(BaseModel):
        model_config = ConfigDict(defer_build=True)
        n: int

    for _ in range(BUILT_BEFORE_VALIDATING):
        assert built(Fresh)(n=1) == Fresh.model_construct(n=1)
    assert not Fresh.__pydantic_complete__  # no schema built yet
    assert built(Fresh)(n=2).n == 2
    assert Fresh.__pydantic_complete__


def test_a_first_mock_run_builds_no_pydantic_schema() -> None:
    # A schema build is slow the first time (pydantic loads importlib.metadata and scans every
    # installed package for plugins): a first run (issue 32's first-use target) needs none.
    code = (
        "import sys, sagents_nb as sn\n"
        "r = sn.Agent('a', instructions='be brief').run_sync('hi', "
        "llm=sn.mock_llm(lambda req: 'ok'))\n"
        "assert r.status == 'done' and r.text == 'ok', r\n"
        "from pydantic import BaseModel\n"
        "def every(cls): return [cls, *(s for c in cls.__subclasses__() for s in every(c))]\n"
        "print(' '.join(sorted(c.__name__ for c in every(BaseModel) if c.__pydantic_complete__"
        " and c.__module__.startswith('sagents_nb'))))\n"
        "print('importlib.metadata' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    complete, metadata = out.stdout.split("\n")[:2]
    assert complete == "" and metadata == "False", out.stdout
