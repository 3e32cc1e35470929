"""The Timing tab's token table prices each node's calls (estimated, with the source) beside
what a CLI reported, with the session's `prices=` and `no price` for an unknown model."""

from __future__ import annotations

from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb.events import HarnessEventOccurred
from sagents_nb.notebook._panes import Focus, pane_state
from sagents_nb.notebook._projector import Projector
from sagents_nb.notebook._tree import tree_state

USAGE = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}


def handler(request: sn.ChatRequest) -> Any:
    if request.agent == "helper":
        return sn.reply("fini ✅ 完了", usage=USAGE)
    if not request.tool_results:
        return sn.reply(
            tool_calls=[sn.call("task", agent="helper", prompt="résume 日本")], usage=USAGE
        )
    return sn.reply("voilà", usage=USAGE)


def projected(model: str, **options: Any) -> Projector:
    lead = sn.Agent("lead", team=[sn.Agent("helper", does="résume")])
    session = sn.Session(lead, llm=sn.mock_llm(handler, model=model), **options)
    session.send("go").result()
    events = list(session.events)
    reported = HarnessEventOccurred(
        path="lead/helper.1",
        seq=events[-1].seq,
        run=1,
        ts=events[-1].ts,
        event={"type": "done", "content": "ok", "cost_usd": 0.5},
    )
    projector = Projector()
    projector.prices = session.prices
    for event in [*events[:-1], reported, events[-1]]:
        projector.fold(event)
    return projector


def timing_rows(model: str, **options: Any) -> dict[str, dict[str, Any]]:
    pane = pane_state(projected(model, **options), Focus(tab="timing"), None, {})
    return {row["path"]: row for row in pane["tokens"]}


def test_the_token_table_shows_estimated_and_reported_costs_apart() -> None:
    rows = timing_rows("gpt-4o", prices={"gpt-4o": {"input": 10.0, "output": 100.0}})
    lead, helper = rows["lead"], rows["lead/helper.1"]
    call = (1000 * 10.0 + 100 * 100.0) / 1e6
    assert lead["estimated_usd"] == pytest.approx(2 * call)
    assert helper["estimated_usd"] == helper["subtree_estimated_usd"] == pytest.approx(call)
    assert lead["subtree_estimated_usd"] == pytest.approx(3 * call)
    assert lead["price_sources"] == ("prices=",) and lead["unpriced"] == ()
    assert (lead["cost_usd"], lead["subtree_cost_usd"], helper["cost_usd"]) == (None, 0.5, 0.5)


def test_an_unknown_model_shows_no_price_in_the_token_table() -> None:
    lead = timing_rows("modèle-inconnu")["lead"]
    assert lead["estimated_usd"] is None and lead["subtree_estimated_usd"] is None
    assert lead["unpriced"] == ("modèle-inconnu",) and lead["no_price"] == "no price"
    assert lead["subtree_cost_usd"] == 0.5  # the reported figure is kept as it is


def test_the_timing_pane_names_both_kinds_of_cost() -> None:
    from pathlib import Path

    source = (Path(sn.__file__).parent / "notebook/static/panes/timing.js").read_text()
    assert "estimated cost" in source and "reported cost" in source and "no_price" in source


def test_the_tree_shows_each_subtrees_estimated_and_reported_cost() -> None:
    tree = tree_state(projected("gpt-4o", prices={"gpt-4o": {"input": 10.0, "output": 100.0}}))
    call = (1000 * 10.0 + 100 * 100.0) / 1e6
    helper = tree["children"][0]
    assert helper["cost"]["estimated_usd"] == pytest.approx(call)
    assert helper["cost"]["reported_usd"] == 0.5
    assert tree["cost"]["estimated_usd"] == pytest.approx(3 * call)
    assert tree["cost"]["text"] == "$0.0600 estimated (prices=) + $0.5000 reported"
    assert "_spends" not in tree and "_spends" not in helper
    unknown = tree_state(projected("modèle-inconnu"))
    assert unknown["cost"]["estimated_usd"] is None
    assert unknown["cost"]["text"] == "$0.5000 reported + no price for modèle-inconnu"


@pytest.mark.usefixtures("table_loaded")
def test_the_static_rendering_names_the_estimated_cost_and_the_unpriced() -> None:
    from sagents_nb.notebook import view
    from sagents_nb.notebook._export import static_view

    lead = sn.Agent("lead", team=[sn.Agent("helper", does="résume")])
    prices = {"gpt-4o": {"input": 10.0, "output": 100.0}}
    session = sn.Session(lead, llm=sn.mock_llm(handler, model="gpt-4o"), prices=prices)
    shown = view(session.send("go").result())
    try:
        text = static_view(shown)["text/plain"]
    finally:
        shown.close()
    assert "lead: 2000 prompt + 200 completion / 3000 + 300 · $0.0600 estimated" in text
    unknown = sn.Session(lead, llm=sn.mock_llm(handler, model="modèle-inconnu"))
    shown = view(unknown.send("go").result())
    try:
        assert "· no price for modèle-inconnu" in static_view(shown)["text/plain"]
    finally:
        shown.close()


def test_each_model_calls_hover_says_what_it_cost() -> None:
    prices = {"gpt-4o": {"input": 10.0, "output": 100.0}}
    pane = pane_state(projected("gpt-4o", prices=prices), Focus(tab="timing"), None, {})
    calls = [row for row in pane["waterfall"]["rows"] if row["kind"] == "model"]
    assert len(calls) == 3
    assert all(row["title"].endswith("· $0.0200 estimated (prices=)") for row in calls)
    assert "1000 prompt + 100 completion tokens (reported)" in calls[0]["title"]
    unknown = pane_state(projected("modèle-inconnu"), Focus(tab="timing"), None, {})
    titles = [row["title"] for row in unknown["waterfall"]["rows"] if row["kind"] == "model"]
    assert titles and all(t.endswith("· no price for modèle-inconnu") for t in titles)
