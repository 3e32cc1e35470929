"""What a run cost: model calls priced from genai-prices' table or `prices=` (estimated), a
model no table knows shown as `no price`, and the extra loaded only when a cost is read."""

from __future__ import annotations

import math
import subprocess
import sys
import threading
from typing import Any

import pytest
from genai_prices import Usage, calc_price

import sagents_nb as sn
from sagents_nb._base import prices as price_module
from sagents_nb._base.prices import PriceBook, checked_prices
from sagents_nb._runtime.costs import Cost, CostSum, NodeSpend, priced

USAGE = {"prompt_tokens": 1200, "completion_tokens": 345, "total_tokens": 1545}
CHILD_USAGE = {"prompt_tokens": 800, "completion_tokens": 60, "total_tokens": 860}


def table_price(prompt: int, completion: int, model: str = "gpt-4o") -> float:
    usage = Usage(input_tokens=prompt, output_tokens=completion)
    return float(calc_price(usage, model_ref=model).total_price)


def delegating(request: sn.ChatRequest) -> Any:
    """The lead delegates once; every reply reports its usage (the child's its own)."""
    if request.agent == "helper":
        return sn.reply("子の答え: 42 ✅", usage=CHILD_USAGE)
    if not request.tool_results:
        return sn.reply(
            tool_calls=[sn.call("task", agent="helper", prompt="calcule « 6 × 7 » s'il te plaît")],
            usage=USAGE,
        )
    return sn.reply("Réponse : 42 — 答え 🎉", usage=USAGE)


def run(model: str = "gpt-4o", **options: Any) -> sn.Result:
    lead = sn.Agent("lead", team=[sn.Agent("helper", does="calcule")])
    session = sn.Session(lead, llm=sn.mock_llm(delegating, model=model), **options)
    return session.send("Combien font 6 × 7 ? 日本語でも").result()


def test_a_known_models_calls_cost_the_tables_price_per_node_and_subtree() -> None:
    result = run()
    own = table_price(2 * 1200, 2 * 345)  # the lead's two calls
    child = table_price(800, 60)
    assert result.node_cost("lead", subtree_too=False).estimated_usd == pytest.approx(own)
    assert result.node_cost("lead/helper.1").estimated_usd == pytest.approx(child)
    cost = result.cost
    assert cost.estimated_usd == pytest.approx(own + child) and cost.usd == cost.estimated_usd
    assert cost.reported_usd is None and cost.unpriced == ()
    assert cost.sources and cost.sources[0].startswith("genai-prices ")
    assert "estimated" in str(cost) and "OpenAI gpt-4o" in str(cost)


def test_a_mixed_script_transcripts_cost_comes_from_its_reported_tokens() -> None:
    result = run()
    assert "答え" in result.text
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (3200, 750)
    assert result.cost.estimated_usd == pytest.approx(table_price(2400, 690) + table_price(800, 60))


def test_a_model_no_table_knows_has_no_price_never_zero() -> None:
    cost = run(model="mon-modèle-maison-7b").cost
    assert cost.estimated_usd is None and cost.usd is None
    assert cost.unpriced == ("mon-modèle-maison-7b",)
    assert str(cost) == "no price for mon-modèle-maison-7b"


def test_user_prices_override_the_table() -> None:
    mine = {"gpt-4o": {"input": 1.0, "output": 4.0}}
    cost = run(prices=mine).cost
    assert cost.estimated_usd == pytest.approx((3200 * 1.0 + 750 * 4.0) / 1e6)
    assert cost.sources == ("prices=",)
    # and price a model the table does not know
    assert run(model="local-llm", prices={"local-llm": {"input": 0, "output": 0.5}}).cost.usd == (
        pytest.approx(750 * 0.5 / 1e6)
    )


@pytest.mark.parametrize(
    "prices",
    [
        ["gpt-4o"],
        {"gpt-4o": 2.5},
        {"gpt-4o": {"input": 2.5}},
        {"gpt-4o": {"input": 2.5, "output": -1}},
        {"gpt-4o": {"input": "2.5", "output": 10}},
    ],
)
def test_bad_prices_say_the_shape_they_take(prices: Any) -> None:
    with pytest.raises(sn.ConfigurationError, match=r'prices=\{"gpt-4o": \{"input": 2.5'):
        sn.Session(sn.Agent("lead"), prices=prices)


def test_without_the_extra_a_cost_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # as if not installed
    cost = run().cost
    assert cost.usd is None
    assert str(cost) == "no price (pip install 'sagents_nb[prices]') for gpt-4o"
    assert price_module.PriceBook().price("gpt-4o") is None


def test_the_comparison_has_cost_columns() -> None:
    lead = sn.Agent("lead", team=[sn.Agent("helper", does="calcule")])
    mine = {"gpt-4o": {"input": 1.0, "output": 4.0}}
    comparison = sn.compare(
        lead,
        ["Combien font 6 × 7 ?"],
        variants={"table": {}, "mine": {"prices": mine}},
        llm=sn.mock_llm(delegating, model="gpt-4o"),
    )
    rows = {row["variant"]: row for row in comparison.rows}
    total = table_price(2400, 690) + table_price(800, 60)
    assert rows["table"]["estimated_usd"] == pytest.approx(total)
    assert rows["mine"]["estimated_usd"] == pytest.approx((3200 + 750 * 4.0) / 1e6)
    assert rows["table"]["reported_usd"] is None and "estimated" in rows["table"]["cost"]
    assert "estimated_usd" in str(comparison) and "reported_usd" not in str(comparison)


def test_the_cost_has_no_price_without_usage() -> None:
    assert Cost(None, None).usd is None and str(Cost(None, None)) == "no price"


def test_import_loads_no_genai_prices_until_a_cost_is_read() -> None:
    code = (
        "import sys, sagents_nb as sn\n"
        "s = sn.Session(sn.Agent('a'), llm=sn.mock_llm(lambda r: 'ok', model='gpt-4o'),"
        " prices={'x': {'input': 1, 'output': 1}})\n"
        "r = s.send('hi').result()\n"
        "print('genai_prices' in sys.modules)\n"
        "r.cost\n"
        "print('genai_prices' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_prices_are_looked_up_when_read_once_per_model_never_on_a_turn() -> None:
    lead = sn.Agent("lead", team=[sn.Agent("helper", does="calcule")])
    session = sn.Session(lead, llm=sn.mock_llm(delegating, model="gpt-4o"))
    result = session.send("Combien font 6 × 7 ?").result()
    book = session.prices
    assert book._found == {} and not book._looked  # three turns ran without a look-up
    assert result.cost.estimated_usd == result.cost.estimated_usd
    assert list(book._found) == ["gpt-4o"]
    assert book.price("gpt-4o") is book.price("gpt-4o")


def test_a_stored_sweep_prices_a_reused_run_with_its_variants_prices(tmp_path: Any) -> None:
    lead = sn.Agent("lead", team=[sn.Agent("helper", does="calcule")])
    mine = {"gpt-4o": {"input": 1.0, "output": 4.0}}

    def sweep() -> sn.Comparison:
        return sn.compare(
            lead,
            ["Combien font 6 × 7 ?"],
            variants={"mine": {"prices": mine}},
            llm=sn.mock_llm(delegating, model="gpt-4o"),
            store=tmp_path / "runs.db",
        )

    first = sweep().rows[0]
    again = sweep().rows[0]
    assert again["reused"] and again["estimated_usd"] == first["estimated_usd"]
    assert again["estimated_usd"] == pytest.approx((3200 + 750 * 4.0) / 1e6)


def test_a_variants_bad_prices_are_refused_before_anything_runs() -> None:
    with pytest.raises(sn.ConfigurationError, match="variant 'bad': prices"):
        sn.compare(sn.Agent("lead"), ["hi"], variants={"bad": {"prices": {"gpt-4o": 2.5}}})


NOTEBOOK_PRICING = """
import sys, threading
import sagents_nb as sn
import sagents_nb.notebook
from sagents_nb._base import prices

def handler(request):
    if request.agent == "chef" and not request.tool_results:
        return sn.reply(tool_calls=[sn.call("task", agent="aide", prompt="résume 日本 🎌")], usage=USAGE)
    return sn.reply("fini ✅", usage=USAGE)

def shown(**options):
    session = sn.Session(lead, llm=sn.mock_llm(handler, **options))
    live = sagents_nb.notebook.view(session)
    session.send("go").result()
    live.flush()
    return live

def table():
    return "genai_prices" in sys.modules, prices._WARMER.ident is not None

USAGE = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}
lead = sn.Agent("chef", team=[sn.Agent("aide", does="résume")])
print(*table())
mock = shown()
print(*table(), repr(mock.tree["cost"]["text"]), mock._repr_mimebundle_()[0]["text/plain"].count("$"))
real = shown(model="gpt-4o")
print(prices._WARMER.ident is not None, prices._WARMER.name)
prices._WARMER.join(60)
real.refresh()
real.flush()
print(*table(), real.tree["cost"]["text"].startswith("$"), "genai-prices" in real.tree["cost"]["text"])
"""


def test_the_notebook_loads_the_table_only_for_a_model_it_prices() -> None:
    """Importing the notebook layer and viewing a run on the mock's model leave genai-prices
    alone (no table prices `mock`); a view of a real model's run loads it on a thread of its
    own and prices its costs once it has."""
    out = subprocess.run(
        [sys.executable, "-c", NOTEBOOK_PRICING], capture_output=True, text=True, check=True
    )
    assert out.stdout.splitlines() == [
        "False False",
        "False False 'no price for mock' 0",
        "True sagents_nb-prices",
        "True True True True",
    ]


def test_the_mocks_model_has_no_price_without_reading_the_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No table prices `sn.mock_llm`'s model: its cost says `no price` at once, and never
    asks to install the extra, which would not price it either."""
    monkeypatch.setattr(price_module, "_LOADED", threading.Event())  # not loaded in this book
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # as if not installed
    book = PriceBook()
    assert book.price(price_module.MOCK_MODEL) is None
    assert not book.waits(price_module.MOCK_MODEL)
    assert str(priced([spent(price_module.MOCK_MODEL)], book)) == "no price for mock"
    assert book.loading  # nothing read the table
    assert str(priced([spent(price_module.MOCK_MODEL), spent("gpt-4o")], book)) == (
        f"{price_module.NO_EXTRA} for gpt-4o, mock"
    )
    mine = PriceBook(checked_prices({"mock": {"input": 1.0, "output": 2.0}}))
    assert str(priced([spent("mock")], mine)) == "$0.0019 estimated (prices=)"


def spent(model: str) -> NodeSpend:
    spend = NodeSpend()
    spend.tokens[model] = [1200, 345]
    return spend


def test_costs_sum_exactly_whatever_the_order() -> None:
    figures = [0.1, 1e-9, 0.2, 3.3e-7, 1e16, -1e16, 0.3, 2.5e-5]
    book = PriceBook(checked_prices({"m": {"input": 1.0, "output": 0.0}}))
    spends = []
    for figure in figures:
        spend = NodeSpend()
        spend.reported(figure)
        spends.append(spend)
    forward, backward = priced(spends, book), priced(spends[::-1], book)
    assert forward.reported_usd == backward.reported_usd == math.fsum(figures)
    running = CostSum()
    for spend in spends:
        running.add(CostSum.of(spend, book))
    running.add(CostSum.of(spends[0], book), -1)
    assert running.cost(book).reported_usd == math.fsum(figures[1:])
