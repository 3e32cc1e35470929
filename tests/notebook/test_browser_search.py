"""Real-browser test of find anything: a query in any script lists its events, a click goes to
the event in the Events tab, `#N` goes to event N, and the tree filter matches tool names and
statuses; untrusted text stays text."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks._browser import Lab, open_notebook, run_cell

from .conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

TEAM = '''
import sagents_nb as sn
from sagents_nb.notebook import view

@sn.tool
def lookup(city: str) -> str:
    """Look a city up.

    Args:
        city: the city.
    """
    return f"Le Café de {city} — 東京タワーの近く ☕ <img src=x onerror=window.__xss=1>"

@sn.tool
def mesurer(x: int) -> str:
    """Measure.

    Args:
        x: what.
    """
    return f"mesuré {x} 📏"

def handler(request):
    if "task" in request.tools:
        if request.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="guide", prompt="trouve un café"),
                                        sn.call("task", agent="scout", prompt="mesure"),
                                        sn.call("task", agent="ghost", prompt="boo")])
        return "fini ✓"
    if request.last["role"] == "user":
        if "lookup" in request.tools:
            return sn.reply(tool_calls=[sn.call("lookup", city="Zürich")])
        return sn.reply(tool_calls=[sn.call("mesurer", x=3)])
    return "北京烤鸭 ✓"

guide = sn.Agent("guide", does="trouve des lieux", tools=[lookup])
scout = sn.Agent("scout", does="mesure", tools=[mesurer])
session = sn.Session(sn.Agent("boss", team=[guide, scout]), llm=sn.mock_llm(handler))
session.send("Où boire un café ?").result()
view(session)
'''


def rows(view: Any) -> list[str]:
    return [row.get_attribute("data-path") for row in view.locator(".sn-node").all()]


def test_find_a_result_go_to_it_and_go_to_a_seq(page: Any, lab: Lab) -> None:
    open_notebook(page, lab.notebook("find.ipynb", TEAM))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    view.locator('.sn-node[data-path="boss/scout.1"]').wait_for()
    box = view.locator(".sn-search-box")
    box.fill("cafe")
    found = view.locator(".sn-found-row", has_text="tool_call_finished").first
    found.wait_for()
    assert found.locator("mark").inner_text() == "Café"
    assert "boss/guide.1" in found.inner_text()
    assert int(view.locator(".sn-search-count").get_attribute("data-total")) >= 3
    box.fill("東京タワー")
    found = view.locator(".sn-found-row", has_text="tool_call_finished").first
    found.locator("mark", has_text="東京タワー").wait_for()
    assert "<img src=x" in found.inner_text()  # shown as text
    assert page.evaluate("window.__xss") is None
    seq = found.get_attribute("data-seq")
    found.click()
    event = view.locator(f'.sn-pane[data-tab="events"] .sn-event.sn-at[data-seq="{seq}"]')
    event.wait_for()
    assert event.get_attribute("open") is not None
    assert view.locator(".sn-pane").get_attribute("data-node") == "boss/guide.1"
    assert view.locator(".sn-node.sn-selected").get_attribute("data-path") == "boss/guide.1"
    screenshot(page, "live-view-search.png")

    box.fill("#3")
    view.locator('.sn-found-row[data-seq="3"]').wait_for()
    box.press("Enter")
    view.locator('.sn-pane[data-tab="events"] .sn-event.sn-at[data-seq="3"]').wait_for()

    tree_filter = view.locator(".sn-tree-filter")
    tree_filter.fill("MESURER")
    view.locator('.sn-node[data-path="boss/guide.1"]').wait_for(state="detached")
    assert rows(view) == ["boss", "boss/scout.1"]
    tree_filter.fill("refused")
    view.locator('.sn-node[data-path="boss/scout.1"]').wait_for(state="detached")
    assert rows(view) == ["boss"]
    assert page.evaluate("window.__xss") is None
