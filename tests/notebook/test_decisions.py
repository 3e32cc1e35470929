"""The decisions timeline folded from the event stream: each pause and how it ended (approved,
edited with the arguments' diff, rejected with the reason, cancelled, interrupted by a fork),
the edit marked on the call's transcript line, and the timeline in the static rendering."""

from __future__ import annotations

from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb.notebook import view
from sagents_nb.notebook._decision_pane import arguments_diff, decisions_pane
from sagents_nb.notebook._export import static_view
from sagents_nb.notebook._panes import Focus, pane_state
from sagents_nb.notebook._projector import Projector

from .conftest import XSS

pytestmark = pytest.mark.timeout(30)


@sn.tool
def transfer(amount: int, to: str, memo: str = "") -> str:
    """Transfer money.

    Args:
        amount: how much.
        to: to whom.
        memo: a note.
    """
    return f"envoyé {amount} à {to} {memo}".strip()


def model(request: sn.ChatRequest) -> sn.Reply | str:
    if request.last["role"] == "user":
        return sn.reply(tool_calls=[sn.call("transfer", amount=1000, to="Mallory 🦹")])
    return f"Résultat : {request.tool_results[-1]}"


def bank(**options: Any) -> sn.Session:
    return sn.Session(sn.Agent("bank", tools=[transfer]), llm=sn.mock_llm(model), **options)


def folded(session: sn.Session) -> Projector:
    projector = Projector()
    for event in session.events:
        projector.fold(event)
    return projector


def decided(session: sn.Session) -> list[dict[str, Any]]:
    return list(decisions_pane(folded(session).decisions)["decisions"])


def test_a_stepped_edited_and_rejected_session_keeps_every_decision() -> None:
    session = bank()
    run = session.send("payer la facture — 請求書", pause_on={"model", "tool"})
    run.wait()
    run.step()
    run.wait()
    run.edit(arguments={"amount": 10, "to": "Alice", "memo": "loyer — 家賃 🏠"})
    run.wait()
    run.resume()
    assert run.result().text == "Résultat : envoyé 10 à Alice loyer — 家賃 🏠"
    second = session.send("encore", pause_on={"tool"})
    second.wait()
    second.reject(f"deux signatures — 二人の承認 {XSS}")
    second.result()

    entries = decided(session)
    assert [(e["run"], e["action"], e["decision"]) for e in entries] == [
        (1, "model", "approved"),
        (1, "tool", "edited"),
        (1, "model", "approved"),
        (2, "tool", "rejected"),
    ]
    edit = entries[1]
    assert edit["what"] == "tool call transfer from bank"
    assert edit["diff"] == [
        ["amount", "changed", "1000", "10"],
        ["to", "changed", '"Mallory 🦹"', '"Alice"'],
        ["memo", "added", "", '"loyer — 家賃 🏠"'],
    ]
    assert '"Mallory 🦹"' in edit["arguments"] and '"loyer — 家賃 🏠"' in edit["edited"]
    assert entries[3]["reason"] == f"deux signatures — 二人の承認 {XSS}"
    assert entries[3]["edited"] is None and entries[3]["diff"] == []


def test_the_transcript_marks_an_edited_call_with_the_model_arguments_and_the_edit() -> None:
    session = bank()
    run = session.send("payer", pause_on={"tool"})
    run.wait()
    run.edit(to="Alice")
    run.result()
    pane = pane_state(folded(session), Focus(tab="transcript"), None, {})
    [tool] = [row for row in pane["entries"] if row["role"] == "tool"]
    assert tool["decided"]["decision"] == "edited"
    assert tool["decided"]["diff"] == [["to", "changed", '"Mallory 🦹"', '"Alice"']]
    [call] = next(row for row in pane["entries"] if row.get("calls"))["calls"]
    assert "Mallory" in call["arguments"]  # the model's own call stays as it wrote it
    assert all("decided" not in row for row in pane["entries"] if row["role"] != "tool")


def test_a_cancelled_pause_and_a_model_edit_are_on_the_timeline() -> None:
    session = bank()
    run = session.send("payer", pause_on={"model"})
    run.wait()
    run.edit(reply="je refuse poliment — お断りします 🙅")
    assert run.result().text == "je refuse poliment — お断りします 🙅"
    second = session.send("encore", pause_on={"tool"})
    second.wait()
    second.cancel()
    assert second.wait(timeout=10) == "cancelled"
    entries = decided(session)
    assert [(e["action"], e["decision"]) for e in entries] == [
        ("model", "edited"),
        ("tool", "cancelled"),
    ]
    assert entries[0]["reply"] == "je refuse poliment — お断りします 🙅"
    assert entries[1]["reason"] == "the run stopped at this pause"


def test_a_view_of_a_fork_cut_at_a_pause_shows_it_waiting_then_asked_again() -> None:
    session = bank(store=":memory:")
    run = session.send("payer", pause_on={"tool"})
    run.wait()
    fork = session.fork()
    widget = view(fork)
    [entry] = widget.projector.decisions.entries
    assert entry.decision == "waiting"  # for fork.resume(), which asks it again
    [card] = widget.header["pending"]
    assert card["stored"] and card["name"] == "transfer"
    resumed = fork.resume()
    resumed.wait(timeout=10)
    resumed.reject("non")
    resumed.result(timeout=10)
    widget.flush()
    # the fork's own log, folded alone, has the cut pause before the one asked again
    assert [e["decision"] for e in decided(fork)] == ["interrupted", "rejected"]
    with widget.projector.lock:
        widget.projector.catch_up()
        shown = [e.decision for e in widget.projector.decisions.entries]
    assert shown == ["interrupted", "reject"]
    widget.close()
    run.cancel()
    assert run.wait(timeout=10) == "cancelled"


def test_the_static_rendering_lists_the_decisions_escaped() -> None:
    session = bank()
    run = session.send("payer", pause_on={"tool"})
    run.wait()
    run.edit(to=XSS)
    run.result()
    second = session.send("encore", pause_on={"tool"})
    second.wait()
    second.reject(f"non — いいえ {XSS}")
    second.result()
    widget = view(session)
    static = static_view(widget)
    widget.close()
    text, page = static["text/plain"], static["text/html"]
    assert "Decisions at pauses" in text
    assert f'tool call transfer from bank: edited · to: "Mallory 🦹" → "{XSS}"' in text
    assert f"rejected (non — いいえ {XSS})" in text
    assert "<img" not in page and "<script" not in page
    assert "&lt;img src=x onerror=window.__xss=1&gt;" in page and "Decisions at pauses" in page


def test_an_arguments_diff_names_each_change() -> None:
    before = {"a": 1, "b": "x", "c": [1, 2]}
    after = {"a": 1, "b": "y 😀", "d": None}
    assert arguments_diff(before, after) == [
        ["b", "changed", '"x"', '"y 😀"'],
        ["c", "removed", "[1, 2]", ""],
        ["d", "added", "", "null"],
    ]
    assert arguments_diff(before, "not json") == [
        ["(all)", "replaced", '{"a": 1, "b": "x", "c": [1, 2]}', "not json"]
    ]
