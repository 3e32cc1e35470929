"""A state row's JSON by msgspec (`state_json`) is the bytes pydantic wrote (`dump_json`)."""

from __future__ import annotations

from sagents_nb._runtime.snapshot import NodeSnapshot, dump_json
from sagents_nb._store.rows import state_json

TEXTS = [
    "",
    "plain",
    "Café crème, déjà vu",
    "中文文本",
    "日本語のテキスト",
    "emoji 🎉👍🏽",
    'code: print("x")\n\tif a < b & c > d: pass\\',
    "".join(map(chr, range(32))) + "\x7f\u2028\u2029\ufeff",
]


def snapshot(text: str) -> NodeSnapshot:
    return NodeSnapshot(
        "worker",
        "main",
        "/parent",
        3,
        "done",
        2**40,
        1,
        0,
        -5,
        (10, 20, 30),
        (("worker", 2), (text, 1)),
        (("helper", "/parent/helper"),),
        4,
        text,
        None,
        0,
        (text, "b"),
        (),
        ("ok", text),
    )


def test_state_rows_are_the_bytes_pydantic_wrote():
    first = snapshot("")
    for text in TEXTS:
        state = snapshot(text)
        assert state_json(state.row()) == dump_json(state.row())
        assert state_json(state.changes(first)) == dump_json(state.changes(first))


def test_a_lone_surrogate_is_stored_repaired_and_reported():
    told: list[int] = []
    row = snapshot("broken \ud800 text").row()
    assert "broken \ufffd text" in state_json(row, told.append)
    assert told == [4]  # a counter's name, input_text, refused, outcome
