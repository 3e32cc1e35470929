"""Find anything: the search over a view's events, `#N`, going to a result, the tree filter's
words."""

from __future__ import annotations

from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb.notebook import LiveView, view
from sagents_nb.notebook._search import FOUND, fold, seq_query

from .conftest import XSS, wait_until
from .test_view import click


def find(widget: LiveView, query: str, **more: Any) -> dict[str, Any]:
    click(widget, action="search", query=query, **more)
    widget.flush()
    return dict(widget.found)


@sn.tool
def lookup(city: str) -> str:
    """Look a city up.

    Args:
        city: the city.
    """
    return f"Le Café de {city} — 東京タワーの近く ☕🚀 {XSS}"


def handler(request: sn.ChatRequest) -> Any:
    if "task" in request.tools:
        if request.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="guide", prompt="trouve un café")])
        return f"Résumé : {request.tool_results[-1]}"
    if request.last["role"] == "user":
        return sn.reply(tool_calls=[sn.call("lookup", city="Zürich")])
    return "北京烤鸭也不错 — ça marche ✓"


@pytest.fixture
def widget() -> LiveView:
    guide = sn.Agent("guide", does="trouve des lieux", tools=[lookup])
    session = sn.Session(sn.Agent("boss", team=[guide]), llm=sn.mock_llm(handler))
    session.send("Où boire un café ?").result()
    return view(session)


def test_fold_ignores_case_accents_and_width_and_keeps_other_scripts() -> None:
    assert fold("Café") == fold("cafe") == fold("CAFÉ") == fold("ｃａｆｅ") == "cafe"
    assert fold("Straße") == "strasse" and fold("ﬁn") == "fin"
    assert fold("が") != fold("か")  # a voicing mark is not an accent
    assert fold("東京タワー 🚀 ❤️") == "東京タワー 🚀 ❤"
    assert seq_query("#12") == seq_query("seq 12") == seq_query(" SEQ12 ") == 12
    assert seq_query("#12a") is None and seq_query("café") is None


@pytest.mark.parametrize("query", ["café", "CAFE", "Cafe", "タワー", "京", "☕🚀", "zurich"])
def test_the_search_finds_tool_results_and_arguments_in_any_script(
    widget: LiveView, query: str
) -> None:
    found = find(widget, query)
    assert found["page"]["total"] >= 1, found
    row = next(r for r in found["rows"] if r["type"] == "tool_call_finished")
    assert row["path"] == "boss/guide.1"
    assert fold(row["match"]) == fold(query)
    assert fold(query) in fold(row["before"] + row["match"] + row["after"])


def test_the_search_finds_transcript_text_and_event_fields(widget: LiveView) -> None:
    assert find(widget, "烤鸭")["rows"][0]["type"] == "model_response"
    spawned = next(r for r in find(widget, "trouve un café")["rows"] if r["type"] == "task_spawned")
    assert (spawned["path"], spawned["node"]) == ("boss", "boss/guide.1")  # the node it is about
    assert {r["path"] for r in find(widget, "guide.1")["rows"]} == {"boss", "boss/guide.1"}
    markup = find(widget, "<img src=x")["rows"][0]
    assert markup["match"] == "<img src=x"  # text, escaped by the page's bindings
    assert find(widget, "introuvable — 見つからない")["note"].startswith("nothing matches")
    assert find(widget, "  ") == {}


def test_results_come_a_page_at_a_time_with_their_count() -> None:
    session = sn.Session(sn.Agent("écho"), llm=sn.mock_llm(lambda r: f"réponse à {r.last_user}"))
    for i in range(FOUND):  # three events say each message
        session.send(f"message {i} — メッセージ").result()
    widget = view(session)
    found = find(widget, "メッセージ")
    total = found["page"]["total"]
    assert len(found["rows"]) == FOUND and total > 2 * FOUND
    later = find(widget, "メッセージ", start=FOUND)
    assert later["page"]["start"] == FOUND and len(later["rows"]) == FOUND
    assert later["rows"][0]["seq"] > found["rows"][-1]["seq"]
    assert find(widget, "réponse")["page"]["start"] == 0  # another query: its first page


def test_a_result_or_seq_goes_to_its_event_in_the_events_tab(widget: LiveView) -> None:
    row = next(r for r in find(widget, "Zürich")["rows"] if r["type"] == "tool_call_finished")
    click(widget, action="focus", tab="events", node=row["path"], seq=row["seq"])
    wait_until(lambda: widget.current_pane().get("at") == row["seq"])
    pane = widget.current_pane()
    assert pane["tab"] == "events" and pane["chosen"] == "boss/guide.1"
    shown = next(r for r in pane["rows"] if r["seq"] == row["seq"])
    assert "json" in shown  # opened
    goto = find(widget, "#3")
    assert [r["seq"] for r in goto["rows"]] == [3]
    last = widget.projector.events[-1].seq
    assert (
        find(widget, "#99999")["note"]
        == f"no event #99999 in this view (its events are #1–#{last})"
    )
    click(widget, action="focus", seq=99999)
    wait_until(lambda: "no event #99999" in widget.header["notice"]["text"])
    click(widget, action="focus", tab="transcript")
    wait_until(lambda: widget.current_pane()["tab"] == "transcript")
    click(widget, action="focus", tab="events")
    wait_until(lambda: widget.current_pane()["tab"] == "events")
    assert widget.current_pane()["at"] is None


def test_the_tree_carries_tool_names_and_call_statuses_for_its_filter(widget: LiveView) -> None:
    tree = widget.tree
    child = tree["children"][0]
    assert set(child["calls"].split()) == {"lookup", "ok"}
    assert set(tree["calls"].split()) == {"task", "ok"}
