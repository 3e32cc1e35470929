"""The context pane's marks: which stored messages a turn's view held, and which view messages
came from nowhere in storage, told by identity (`ContextBuilt.from_storage`), so two messages
with the same text are told apart; and the pages of its two columns."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb._base.messages import Message, user
from sagents_nb._runtime.turns import SUMMARY_INSTRUCTIONS
from sagents_nb.events import ContextBuilt
from sagents_nb.kinds import BaseKind
from sagents_nb.notebook._context_pane import context_pane
from sagents_nb.notebook._controls import handle_message
from sagents_nb.notebook._panes import Focus, pane_state
from sagents_nb.notebook._projector import Projector
from sagents_nb.notebook._render import ROWS

TWINS = [
    "continuer, s'il te plaît 🔁",
    "继续",
    "続けてください",
    "🔁🔁",
    "print('again')  # \"continue\"\n",
]


def project(session: sn.Session, *, drop_runs: bool = False) -> Projector:
    projector = Projector()
    for event in session.events:
        if drop_runs and isinstance(event, ContextBuilt):  # as a log from before from_storage
            event = event.model_copy(update={"from_storage": None})
        projector.fold(event)
    return projector


def marks(rows: list[dict[str, Any]]) -> list[str | None]:
    return [row.get("mark") for row in rows]


def detail(projector: Projector, path: str, turn: int) -> dict[str, Any]:
    return context_pane(projector.nodes[path], turn)["detail"]


@pytest.mark.parametrize("text", TWINS, ids=["fr", "zh", "ja", "emoji", "code"])
def test_a_trimmed_message_is_not_in_view_because_its_twin_is(text: str) -> None:
    agent = sn.Agent("live", kind=sn.kinds.Realtime(window=1))
    session = sn.Session(agent, llm=sn.mock_llm(lambda request: "d'accord ✅"))
    for _ in range(3):
        session.send(text).result()
    projector = project(session)
    second = detail(projector, "live", 1)
    assert [row["text"] for row in second["storage"]] == [text, "d'accord ✅", text]
    assert marks(second["storage"]) == ["trimmed", "trimmed", "in view"]
    assert second["left_out"] == {"trimmed": 2}
    assert marks(second["view"]) == [None]
    third = detail(projector, "live", 2)
    assert marks(third["storage"]) == ["trimmed"] * 4 + ["in view"]
    assert third["left_out"] == {"trimmed": 4}


@pytest.mark.parametrize("text", TWINS, ids=["fr", "zh", "ja", "emoji", "code"])
def test_the_same_tool_result_twice_only_the_newer_in_view(text: str) -> None:
    @sn.tool
    def look() -> str:
        """Look again."""
        return text

    def handler(request: sn.ChatRequest) -> Any:
        if request.last["role"] == "user":  # an endpoint that numbers its calls per reply
            return sn.reply(tool_calls=[sn.call("look", _id="call_0")])
        return "vu 👀"

    agent = sn.Agent("live", tools=[look], kind=sn.kinds.Realtime(window=1))
    session = sn.Session(agent, llm=sn.mock_llm(handler))
    session.send("regarde 🔍").result()
    session.send("encore 🔍").result()
    last = detail(projector := project(session), "live", 3)
    storage = last["storage"]
    results = [i for i, row in enumerate(storage) if row["role"] == "tool"]
    assert [storage[i]["text"] for i in results] == [text, text]
    assert [storage[i]["mark"] for i in results] == ["trimmed", "in view"]
    assert marks(storage) == ["trimmed"] * 4 + ["in view"] * 3
    assert last["left_out"] == {"trimmed": 4}
    assert len(projector.nodes["live"].turn_log) == 4


class Reminder(BaseKind):
    """Shows the newest message only, and repeats the first input after it as a new message
    of the same text: a view-only copy of a stored message."""

    name = "reminder"

    def build_context(self, child: Any, input: str) -> list[Message]:
        history = child.history
        return [*child.system_messages(), *history[-1:], user(history[0].content or "")]


@pytest.mark.parametrize("text", TWINS, ids=["fr", "zh", "ja", "emoji", "code"])
def test_a_view_only_copy_is_marked_so_and_its_stored_twin_hidden(text: str) -> None:
    agent = sn.Agent("scribe", instructions="note 📝", kind=Reminder())
    session = sn.Session(agent, llm=sn.mock_llm(lambda request: "noté"))
    session.send(text).result()
    session.send("ensuite 次").result()
    second = detail(project(session), "scribe", 1)
    assert [row["text"] for row in second["storage"]] == [text, "noté", "ensuite 次"]
    assert marks(second["storage"]) == ["hidden", "hidden", "in view"]
    assert [row["text"] for row in second["view"]] == ["note 📝", "ensuite 次", text]
    assert marks(second["view"]) == ["view only", None, "view only"]
    assert second["left_out"] == {"hidden": 2}


def test_a_summary_compaction_keeps_the_marks_right() -> None:
    def handler(request: sn.ChatRequest) -> Any:
        if request.system == SUMMARY_INSTRUCTIONS:
            return "Résumé : 继续 ×3 🔁"
        if "task" in request.tools:
            if request.last["role"] == "user":
                prompt = request.last_user
                return sn.reply(tool_calls=[sn.call("task", agent="keeper", prompt=prompt)])
            return f"keeper: {request.tool_results[-1]}"
        return "d'accord ✅"

    keeper = sn.Agent(
        "keeper", kind=sn.kinds.Resident(window_tokens=30, keep_recent=1, relevance=False)
    )
    session = sn.Session(sn.Agent("lead", team=[keeper]), llm=sn.mock_llm(handler))
    for _ in range(4):
        session.send("继续 🔁 " * 4).result()
    projector = project(session)
    node = projector.nodes["lead/keeper.1"]
    compacted = [i for i, turn in enumerate(node.turn_log) if turn.forgotten_len]
    assert compacted, "the window is small enough to compact"
    for index in compacted:
        turn = node.turn_log[index]
        shown = detail(projector, "lead/keeper.1", index)
        storage = shown["storage"][turn.forgotten_len :]
        forgotten = shown["storage"][: turn.forgotten_len]
        assert set(marks(forgotten)) == {"summarised"}
        assert storage[0]["mark"] == "summary" and "Résumé" in storage[0]["text"]
        assert set(marks(storage[1:])) == {"in view"}  # relevance off: the rest is all shown
        assert marks(shown["view"]).count("summary") == 1
        assert "view only" not in marks(shown["view"])
        assert shown["left_out"] == {"summarised": turn.forgotten_len}


def test_a_log_without_from_storage_still_marks_by_text() -> None:
    """A log from before `from_storage` (or a kind whose turn gave none) can only be read by
    text: twins are both taken as in view there."""
    session = sn.Session(
        sn.Agent("live", kind=sn.kinds.Realtime(window=1)),
        llm=sn.mock_llm(lambda request: "d'accord ✅"),
    )
    session.send("continuer 🔁").result()
    session.send("continuer 🔁").result()
    second = detail(project(session, drop_runs=True), "live", 1)
    assert marks(second["storage"]) == ["in view", "trimmed", "in view"]
    assert marks(second["view"]) == [None]


# the columns' pages


@sn.tool
def tick(n: int) -> str:
    """Count one.

    Args:
        n: which tick.
    """
    return f"tick {n} · 計数 ✓ 🎉"


def long_node(turns: int, kind: sn.kinds.ChildKind) -> Projector:
    count = itertools.count()

    def handler(request: sn.ChatRequest) -> Any:
        done = next(count)
        if done >= turns:
            return "fini — 終わり"
        return sn.reply(tool_calls=[sn.call("tick", n=done)])

    session = sn.Session(sn.Agent("counter", tools=[tick], kind=kind), llm=sn.mock_llm(handler))
    assert session.send("compte — 数えて").result().status == "done"
    projector = Projector()
    for event in session.events:
        projector.fold(event)
    return projector


def test_each_column_pages_on_its_own_and_the_marks_count_every_item() -> None:
    projector = long_node(150, sn.kinds.Main(top_k=4, recent=2, max_turns=200))
    focus = Focus(node="counter", tab="context")
    newest = pane_state(projector, focus, [], {})["detail"]
    total = 1 + 2 * 150 + 1  # the input, a call and its result a turn, the last reply
    assert newest["storage_items"] == total - 1  # the latest turn's view is before its reply
    page = newest["storage_page"]
    assert page == {"start": total - 1 - ROWS, "total": total - 1, "size": ROWS, "following": True}
    assert len(newest["storage"]) == ROWS and newest["storage_earlier"] == page["start"]
    hidden = projector.nodes["counter"].turn_log[-1].hidden  # as the turn counted it
    assert newest["left_out"] == {"sunk": hidden} and hidden > ROWS
    assert newest["view_page"]["total"] == newest["view_items"] < ROWS
    focus.storage_start = 0
    oldest = pane_state(projector, focus, [], {})["detail"]
    assert oldest["storage"][0]["text"] == "compte — 数えて"
    assert oldest["storage"][0]["mark"] == "in view"  # the current input is protected
    assert oldest["storage"][2]["text"] == "tick 0 · 計数 ✓ 🎉"
    assert oldest["storage"][2]["mark"] == "in view"  # the reply to the input is one item with it
    assert oldest["storage"][4]["text"] == "tick 1 · 計数 ✓ 🎉"
    assert oldest["storage"][4]["mark"] == "sunk"
    assert oldest["storage_page"]["start"] == 0 and not oldest["storage_page"]["following"]
    assert oldest["left_out"] == newest["left_out"]
    assert oldest["view"] == newest["view"]  # the other column stays where it was


def test_a_long_view_pages_too() -> None:
    projector = long_node(120, sn.kinds.Main(top_k=None, max_turns=200))
    focus = Focus(node="counter", tab="context")
    newest = pane_state(projector, focus, [], {})["detail"]
    assert newest["view_items"] > ROWS and len(newest["view"]) == ROWS
    assert newest["view_page"]["following"] and newest["view_earlier"] > 0
    focus.view_start = 0
    oldest = pane_state(projector, focus, [], {})["detail"]
    assert [row["text"] for row in oldest["view"][:1]] == ["compte — 数えて"]
    assert "mark" not in oldest["view"][0]  # a stored message, sent
    assert oldest["storage"] == newest["storage"]


class FakeView:
    """What `handle_message`'s focus action reads and calls on a view."""

    def __init__(self) -> None:
        self.focus = Focus(node="counter", tab="context")
        self.projector = Projector()

    def refresh(self, *, now: bool = False) -> None:
        pass


def test_column_pages_stay_across_turns_and_reset_on_another_node_or_tab() -> None:
    view: Any = FakeView()
    handle_message(view, {"action": "focus", "storage_start": 0, "view_start": 200})
    assert (view.focus.storage_start, view.focus.view_start) == (0, 200)
    handle_message(view, {"action": "focus", "turn": 3})
    assert (view.focus.storage_start, view.focus.view_start) == (0, 200)
    handle_message(view, {"action": "focus", "storage_start": None, "view_start": "x"})
    assert (view.focus.storage_start, view.focus.view_start) == (None, None)
    handle_message(view, {"action": "focus", "storage_start": 5})
    handle_message(view, {"action": "focus", "tab": "transcript"})
    assert view.focus.storage_start is None
    handle_message(view, {"action": "focus", "tab": "context", "storage_start": 5})
    handle_message(view, {"action": "focus", "node": "counter/other.1"})
    assert view.focus.storage_start is None
