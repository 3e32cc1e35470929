"""The tree of many children: a page of them listed and one aggregate row for the rest, by
status, opened a page at a time; the chosen node always in sight; the filter finds nodes the
aggregate row hides."""

from __future__ import annotations

from typing import Any

import sagents_nb as sn
from sagents_nb._base.prices import PriceBook, checked_prices
from sagents_nb.events import ModelRequest
from sagents_nb.notebook._projector import Projector
from sagents_nb.notebook._tree import (
    TREE_CHILDREN,
    TREE_PAGE,
    Tree,
    TreeAsk,
    more_words,
    tree_state,
)

CHILDREN = 130


@sn.tool
def fail(n: int) -> str:
    """Fail for some.

    Args:
        n: which.
    """
    return f"ok {n}"


def handler(req: Any) -> Any:
    if "task" in req.tools:
        if req.last["role"] == "user":
            calls = [
                sn.call("task", agent="ouvrier", prompt=f"tâche {i} 東京") for i in range(CHILDREN)
            ]
            return sn.reply(tool_calls=calls)
        return "fini"
    if req.last["role"] == "user" and "tâche 7 " in req.last["content"]:
        return sn.reply(tool_calls=[sn.call("mesurer_spécial", n=7)])  # an unknown tool
    return "fait ✓"


def projected() -> Projector:
    team = [sn.Agent("ouvrier", does="travaille", tools=[fail])]
    session = sn.Session(
        sn.Agent("boss", team=team), llm=sn.mock_llm(handler), max_nodes=CHILDREN + 10
    )
    session.send("go").result()
    projector = Projector()
    projector.fold_all(list(session.events))
    return projector


def test_many_children_list_a_page_and_one_aggregate_row_by_status() -> None:
    projector = projected()
    state = tree_state(projector)
    assert len(state["children"]) == TREE_CHILDREN
    more = state["more"]
    assert more["count"] == CHILDREN - TREE_CHILDREN and more["page"] == TREE_PAGE
    assert sum(count for _, count in more["statuses"]) == more["count"]
    assert more_words(more).startswith(f"{CHILDREN - TREE_CHILDREN} more children: ")
    assert more_words({"count": 1, "statuses": [("done", 1)]}) == "1 more child: 1 done"
    assert state["summary"]["nodes"] == CHILDREN + 1  # every node counted, listed or not


def test_an_opened_aggregate_row_lists_a_page_more_and_the_chosen_node_stays_in_sight() -> None:
    projector = projected()
    opened = tree_state(projector, TreeAsk(more={"boss": TREE_CHILDREN + TREE_PAGE}))
    assert len(opened["children"]) == TREE_CHILDREN + TREE_PAGE
    assert opened["more"]["count"] == CHILDREN - TREE_CHILDREN - TREE_PAGE
    last = projector.nodes["boss"].children[-1]
    pinned = tree_state(projector, TreeAsk(pinned=last))
    assert last in [child["id"] for child in pinned["children"]]
    assert pinned["more"]["count"] == CHILDREN - TREE_CHILDREN - 1


def test_the_filter_finds_a_node_the_aggregate_row_hides() -> None:
    projector = projected()
    hidden = projector.nodes["boss"].children[-1]
    prompt = projector.nodes[hidden].prompt
    assert prompt and hidden not in [c["id"] for c in tree_state(projector)["children"]]
    found = tree_state(projector, TreeAsk(filter=prompt.upper()))
    assert [child["id"] for child in found["children"]] == [hidden]
    assert found["matched"] == 2 and "more" not in found  # the node and its parent


def test_a_tree_kept_across_pushes_rolls_up_as_one_worked_out_afresh() -> None:
    """`Tree` redoes only the nodes changed since its last state (and their ancestors): after
    each batch of events, after a projector taken over (new node objects) and after new
    prices, its rows are those of a fresh `tree_state`."""
    events = list(projected().events)
    projector, tree = Projector(), Tree()
    ask = TreeAsk(pinned="boss/ouvrier.90")
    for start in range(0, len(events), 37):
        projector.fold_all(events[start : start + 37])
        assert tree.state(projector, ask) == tree_state(projector, ask)
    staged = Projector()
    staged.fold_all(events)
    projector.adopt(staged)
    assert tree.state(projector) == tree_state(projector)
    model = next(event.model for event in events if isinstance(event, ModelRequest))
    projector.prices = PriceBook(checked_prices({model: {"input": 1.0, "output": 2.0}}))
    projector.version += 1
    priced = tree.state(projector)
    assert priced == tree_state(projector) and priced["cost"]["estimated_usd"]
    assert tree_state(projector)["summary"]["statuses"] == {"done": CHILDREN + 1}
