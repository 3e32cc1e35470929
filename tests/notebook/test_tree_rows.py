"""The tree of many children: a page of them listed and one aggregate row for the rest, by
status, opened a page at a time; the chosen node always in sight; the filter finds nodes the
aggregate row hides."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb._base import prices as price_module
from sagents_nb._base.prices import NO_EXTRA, PriceBook, checked_prices
from sagents_nb._runtime.costs import WAITING, priced
from sagents_nb.events import ModelRequest
from sagents_nb.notebook import view
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


USAGE = {"prompt_tokens": 1234, "completion_tokens": 321, "total_tokens": 1555}


def priced_run(model: str = "gpt-4o", **options: Any) -> sn.Session:
    """A lead delegating to three helpers, every reply with its usage, in `model`."""

    def handler(req: Any) -> Any:
        if "task" in req.tools and req.last["role"] == "user":
            calls = [sn.call("task", agent="aide", prompt=f"résume 第{i}部 🎯") for i in range(3)]
            return sn.reply(tool_calls=calls, usage=USAGE)
        return sn.reply("fait ✓", usage=USAGE)

    lead = sn.Agent("chef", team=[sn.Agent("aide", does="résume")])
    session = sn.Session(lead, llm=sn.mock_llm(handler, model=model), **options)
    session.send("go").result()
    return session


def rows(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [state, *(row for child in state["children"] for row in rows(child))]


def subtree_cost(projector: Projector, path: str) -> Any:
    spends = [
        node.spend for at, node in projector.nodes.items() if (at + "/").startswith(path + "/")
    ]
    return priced(spends, projector.prices)


@pytest.fixture
def table_loading(table_loaded: None, monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """genai-prices' table as if `warm()` were still loading it: set the event to finish."""
    loading = threading.Event()
    monkeypatch.setattr(price_module, "_LOADED", loading)
    return loading


@pytest.mark.usefixtures("table_loaded")
def test_costs_summed_as_they_run_are_those_of_the_table_worked_out_afresh() -> None:
    """A tree kept across batches of a table-priced run: each cost cell is the subtree's
    `priced` cost, to the last bit, whatever order its sums were made in."""
    session = priced_run()
    events = list(session.events)
    projector, tree = Projector(), Tree()
    projector.prices = session.prices
    for start in range(0, len(events), 5):
        projector.fold_all(events[start : start + 5])
        state = tree.state(projector)
        assert state == tree_state(projector)
    for row in rows(state):
        cost = subtree_cost(projector, row["id"])
        assert row["cost"] == {
            "estimated_usd": cost.estimated_usd,
            "reported_usd": None,
            "text": str(cost),
        }
    root = state["cost"]
    assert root["estimated_usd"] == pytest.approx(5 * table_price(1234, 321))  # 2 + 3 × 1 calls
    assert root["text"].startswith("$") and "genai-prices" in root["text"]


def table_price(prompt: int, completion: int) -> float:
    from genai_prices import Usage, calc_price

    usage = Usage(input_tokens=prompt, output_tokens=completion)
    return float(calc_price(usage, model_ref="gpt-4o").total_price)


def test_while_the_table_loads_costs_say_so_and_are_priced_once_it_has(
    table_loading: threading.Event,
) -> None:
    session = priced_run()
    projector, tree = Projector(), Tree()
    projector.prices = PriceBook()  # a book that has not read the table yet
    projector.fold_all(list(session.events))
    waiting = tree.state(projector)
    for row in rows(waiting):
        assert row["cost"] == {
            "estimated_usd": None,
            "reported_usd": None,
            "text": WAITING,
            "waiting": True,
        }
    assert tree.waiting and not tree.priceable(projector)
    assert tree.state(projector) == waiting  # still loading: nothing to price
    table_loading.set()
    assert tree.priceable(projector)
    priced_state = tree.state(projector)
    assert not tree.waiting and priced_state == tree_state(projector)
    assert priced_state["cost"]["text"] == str(subtree_cost(projector, "chef"))


def test_the_users_prices_need_no_table(table_loading: threading.Event) -> None:
    session = priced_run(prices={"gpt-4o": {"input": 1.0, "output": 10.0}})
    projector, tree = Projector(), Tree()
    projector.prices = session.prices
    projector.fold_all(list(session.events))
    state = tree.state(projector)
    assert not tree.waiting and not table_loading.is_set()
    assert state["cost"]["estimated_usd"] == pytest.approx(5 * (1234 * 1.0 + 321 * 10.0) / 1e6)
    assert state["cost"]["text"].endswith("estimated (prices=)")


@pytest.mark.usefixtures("table_loaded")
def test_without_the_extra_a_cost_cell_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session = priced_run()
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # as if not installed
    projector, tree = Projector(), Tree()
    projector.prices = PriceBook()
    projector.fold_all(list(session.events))
    state = tree.state(projector)
    assert state["cost"]["text"] == f"{NO_EXTRA} for gpt-4o"
    assert state["cost"]["estimated_usd"] is None and not tree.waiting


def test_a_live_view_paints_before_the_table_loads_and_prices_once_it_has(
    table_loading: threading.Event,
) -> None:
    session = priced_run()
    session.prices = PriceBook()  # not read yet: the view's cells wait for the table
    shown = view(session)
    try:
        assert shown.tree["cost"]["text"] == WAITING
        table_loading.set()
        deadline = time.monotonic() + 30
        while shown.tree["cost"].get("waiting") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert shown.tree["cost"]["text"].startswith("$")
        assert "waiting" not in shown.tree["cost"]
    finally:
        shown.close()


FIRST_PAINT = """
import sys, threading
import sagents_nb as sn
from sagents_nb._base import prices
prices._WARMER = threading.Thread(target=lambda: None)  # the table never loads meanwhile
from sagents_nb.notebook import view

def handler(request):
    if request.agent == "chef" and not request.tool_results:
        return sn.reply(tool_calls=[sn.call("task", agent="aide", prompt="résume 日本")], usage=USAGE)
    return sn.reply("fini ✅", usage=USAGE)

USAGE = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}
lead = sn.Agent("chef", team=[sn.Agent("aide", does="résume")])
session = sn.Session(lead, llm=sn.mock_llm(handler, model="gpt-4o"))
session.send("go").result()
shown = view(session)
bundle = shown._repr_mimebundle_()
print("genai_prices" in sys.modules, shown.tree["cost"]["text"])
print(bundle[0]["text/plain"].count("loading prices"))
"""


def test_the_first_paint_never_waits_for_the_price_table() -> None:
    """A view of a run in a table-priced model, shown while genai-prices has not loaded: its
    widget state and its static text are made without importing it."""
    out = subprocess.run(
        [sys.executable, "-c", FIRST_PAINT], capture_output=True, text=True, check=True
    )
    assert out.stdout.splitlines() == [f"False {WAITING}", "1"]
