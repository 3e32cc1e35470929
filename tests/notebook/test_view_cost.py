"""What keeps a live view cheap to make and to push keeps its content: the pane's JSON text and
anywidget's traits are what they were."""

from __future__ import annotations

import json

import sagents_nb as sn
from sagents_nb.notebook import view
from sagents_nb.notebook._render import compact_json

TEXTS = [
    "déjà vu",
    "中文的回答",
    "日本語のテキスト",
    "emoji 😀🚀",
    "code `x = {'a': [1, 2]}`",
    "\u2028",
]


def test_compact_json_is_the_json_of_the_same_data() -> None:
    state = {"entries": [{"seq": n, "text": text} for n, text in enumerate(TEXTS)], "d": 0.25}
    assert json.loads(compact_json(state)) == state
    assert compact_json(state) == json.dumps(state, ensure_ascii=False, separators=(",", ":"))


def test_compact_json_writes_a_lone_surrogate_as_json_dumps_does() -> None:
    state = {"text": "broken \udc80 bytes"}
    assert compact_json(state) == json.dumps(state, ensure_ascii=False, separators=(",", ":"))


def test_views_share_one_class_with_anywidgets_traits() -> None:
    first, second = (
        view(sn.Session(sn.Agent("solo"), llm=sn.script("bonjour, 你好 😀"))) for _ in range(2)
    )
    try:
        assert type(first) is type(second)
        for widget in (first, second):
            state = widget.get_state()
            assert "export default" in state["_esm"]
            assert state["_css"]
            assert state["_anywidget_id"] == "sagents_nb.notebook._widget.LiveView"
    finally:
        first.close()
        second.close()


def test_the_pane_text_holds_the_transcript_in_any_language() -> None:
    session = sn.Session(sn.Agent("solo"), llm=sn.script(*TEXTS))
    widget = view(session)
    try:
        for text in TEXTS:
            session.send(f"dis: {text}").result()
        widget.flush()
        rows = widget.current_pane()["entries"]
        assert [row["text"] for row in rows if row["role"] == "assistant"] == TEXTS
    finally:
        widget.close()
