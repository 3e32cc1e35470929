"""Costs in a real browser: the tree and the Timing tab's table tell estimated from reported."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks._browser import Lab, open_notebook, run_cell

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

PRICED_TEAM = """
import sagents_nb as sn

USAGE = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}

def handler(request):
    if request.agent == "helper":
        return sn.reply("fini ✅ 完了", usage=USAGE)
    if not request.tool_results:
        return sn.reply(tool_calls=[sn.call("task", agent="helper", prompt="résume 日本")], usage=USAGE)
    return sn.reply("voilà 🎉", usage=USAGE)

lead = sn.Agent("lead", team=[sn.Agent("helper", does="résume")])
session = sn.Session(lead, llm=sn.mock_llm(handler, model="gpt-4o"),
                     prices={"gpt-4o": {"input": 10.0, "output": 100.0}})
session.send("go").result()
session
"""


def test_the_tree_and_the_timing_table_show_estimated_costs(page: Any, lab: Lab) -> None:
    open_notebook(page, lab.notebook("cost.ipynb", PRICED_TEAM))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    view.locator('.sn-node[data-path="lead/helper.1"] .sn-status', has_text="done").wait_for()
    # the tree: each subtree's cost, estimated (3 calls at $0.02 for the lead, 1 for its child)
    assert view.locator('.sn-node[data-path="lead"] .sn-cost').inner_text() == "· $0.0600 est."
    helper = view.locator('.sn-node[data-path="lead/helper.1"] .sn-cost')
    assert helper.inner_text() == "· $0.0200 est."
    assert "estimated (prices=)" in (helper.get_attribute("title") or "")

    view.get_by_role("tab", name="Timing").click()
    row = view.locator('.sn-pane[data-tab="timing"] table.sn-tokens tbody tr[data-path="lead"]')
    row.wait_for()
    estimated = row.locator("td.sn-cost-estimated")
    assert " ".join(estimated.inner_text().split()) == "$0.04 / $0.06"
    assert "estimated from prices=" in (estimated.get_attribute("title") or "")
    assert row.locator("td.sn-cost-reported").inner_text().strip() == "—"
    assert "(estimated)" in view.locator(".sn-wf-head").inner_text()


TABLE_PRICED = """
import threading
import sagents_nb as sn
import sagents_nb.notebook
from sagents_nb._base import prices
prices.warm()
prices._WARMER.join()
prices._LOADED = threading.Event()  # as if genai-prices' table were still loading

USAGE = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}
lead = sn.Agent("chef", team=[sn.Agent("aide", does="résume")])

def handler(request):
    if request.agent == "chef" and not request.tool_results:
        return sn.reply(tool_calls=[sn.call("task", agent="aide", prompt="résume 日本 🎌")], usage=USAGE)
    return sn.reply("fini ✅", usage=USAGE)

session = sn.Session(lead, llm=sn.mock_llm(handler, model="gpt-4o"))
session.send("go").result()
session
"""


def test_the_tree_says_it_is_pricing_until_the_table_has_loaded(page: Any, lab: Lab) -> None:
    open_notebook(page, lab.notebook("pricing.ipynb", TABLE_PRICED, "prices._LOADED.set()"))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    cost = view.locator('.sn-node[data-path="chef"] .sn-cost')
    cost.wait_for()
    assert cost.inner_text() == "· pricing…"
    assert "loading prices (genai-prices)" in (cost.get_attribute("title") or "")
    run_cell(page, 1)
    page.wait_for_function(
        """() => document.querySelector('.sagents-view .sn-node[data-path="chef"] .sn-cost')
                   ?.textContent.includes('est.')""",
        timeout=15_000,
    )
    assert cost.inner_text().startswith("· $") and cost.inner_text().endswith(" est.")
    assert "genai-prices" in (cost.get_attribute("title") or "")
