"""The forgetting report tells a run's stored messages apart by identity
(`ContextBuilt.from_storage`): a text that recurs is one fact per message, forgotten when its own
message leaves the view; a log without identities falls back to telling facts by text."""

from __future__ import annotations

from typing import Any

import sagents_nb as sn
from sagents_nb._compare.forgetting import ForgettingReport, Turn
from sagents_nb.events import ContextBuilt

ASK = "encore une fois 🔁 — もう一度"
REPLY = "d'accord ✅ 好的"


def again(req: sn.ChatRequest) -> Any:
    if req.tool_results and req.last["role"] == "tool":
        return REPLY
    return sn.reply(tool_calls=[sn.call("note", text="東京"), sn.call("note", text="大阪")])


@sn.tool
def note(text: str) -> str:
    """Note a fact."""
    return "noté"


def report(strip_identity: bool = False) -> ForgettingReport:
    live = sn.Agent("live", tools=[note])
    cmp = sn.compare(
        live, [ASK] * 3, {"window": {"live": sn.kinds.Realtime(window=1)}}, llm=sn.mock_llm(again)
    )
    (record,) = cmp.records
    assert record.status == "done", record.error
    if strip_identity:  # as a log written before `from_storage` reads
        record.events = [
            e.model_copy(update={"from_storage": None}) if isinstance(e, ContextBuilt) else e
            for e in record.events
        ]
    return cmp.forgetting()


def forgotten(turn: Turn) -> dict[str, int]:
    counts: dict[str, int] = {}
    for fact in turn.forgotten:
        counts[fact.text[:4]] = counts.get(fact.text[:4], 0) + 1
    return counts


def test_a_recurring_text_is_forgotten_when_its_own_message_leaves_the_view() -> None:
    # each ask: a turn calling `note` twice (two identical results), a turn answering; the
    # window keeps the newest turn group only, so each ask's view has lost the last exchange
    turns = report().turns["window"]["live"]
    assert [t.view[0].content for t in turns] == [ASK] * 6
    assert [t.known for t in turns] == [1, 4, 6, 9, 11, 14]  # each message its own fact
    assert [len(t.forgotten) for t in turns] == [0, 0, 5, 5, 10, 10]
    assert forgotten(turns[3]) == {ASK[:4]: 1, "note": 1, "noté": 2, REPLY[:4]: 1}
    assert forgotten(turns[5]) == {ASK[:4]: 2, "note": 2, "noté": 4, REPLY[:4]: 2}


def test_a_log_without_identities_still_tells_facts_by_text() -> None:
    turns = report(strip_identity=True).turns["window"]["live"]
    assert [t.known for t in turns] == [1, 3, 4, 4, 4, 4]  # a text is one fact
    assert forgotten(turns[3]) == {REPLY[:4]: 1}  # the new ask and results hold the old texts
