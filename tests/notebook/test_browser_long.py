"""Real-browser tests of the live view on long runs (issue 21, item 10): every list pages back to
its oldest rows with a bounded number of rows on the page, the context chart of 1,000 turns
draws a bounded number of marks and zooms into a range, and a tab switch mid-run draws one page."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks._browser import Lab, open_notebook, run_cell

from .conftest import screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

PAGE = 100
"""Rows of a page (`sagents_nb.notebook._paging.PAGE`)."""

LONG_RUN = '''
import itertools, time
import sagents_nb as sn
from sagents_nb.notebook import view

@sn.tool
def tick(n: int) -> str:
    """Count one.

    Args:
        n: which tick.
    """
    return f"tick {n} · 計数 ✓ 🎉"

SLOW_AFTER = int(__import__('os').environ.get('SN_SLOW_AFTER', 10**6))

turns = itertools.count()  # not the results in view: Main sinks most of them

def handler(request):
    done = next(turns)
    if done >= 1000:
        return "fini — 終わり 🎉"
    if done >= SLOW_AFTER:
        time.sleep(0.05)  # from here on it streams, about 100 events a second
    return sn.reply(tool_calls=[sn.call("tick", n=done)])

# Main with a small view: a sink to cold storage at nearly every turn (a marker each)
counter = sn.Agent("counter", does="compte — 数える", tools=[tick],
                   kind=sn.kinds.Main(top_k=4, recent=2, max_turns=1100))
session = sn.Session(counter, llm=sn.mock_llm(handler))
shown = view(session)
shown
'''
FINISH = 'print("RESULT", session.send("compte jusqu’à mille — 千まで数えて").result().status)'
STREAM = 'run = session.send("compte jusqu’à mille — 千まで数えて")'


def finished_long_run(page: Any, lab: Lab, name: str) -> Any:
    """A view of a finished 1,000-turn run (about 6,000 events, 2,000 transcript rows)."""
    open_notebook(page, lab.notebook(name, LONG_RUN, FINISH))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    view.locator('.sn-node[data-path="counter"]').wait_for()
    run_cell(page, 1)
    page.locator(".jp-OutputArea-output", has_text="RESULT done").wait_for(timeout=120_000)
    view.locator(".sn-run", has_text="done").wait_for(timeout=30_000)
    return view


def pane_rows(view: Any, selector: str) -> int:
    return int(view.locator(f".sn-pane {selector}").count())


def pager_at(view: Any) -> tuple[int, int]:
    pager = view.locator(".sn-pane .sn-pager").first
    return int(pager.get_attribute("data-start")), int(pager.get_attribute("data-total"))


def page_to(view: Any, button: str, start: int) -> None:
    view.locator(f".sn-pane .sn-pager .{button}").first.click()
    wait_until(lambda: pager_at(view)[0] == start, timeout=10, what=f"the page at {start}")


def test_older_rows_are_reachable_by_paging(page: Any, lab: Lab) -> None:
    view = finished_long_run(page, lab, "long_pages.ipynb")
    wait_until(lambda: pane_rows(view, ".sn-msg") > 0, what="the transcript")
    start, total = pager_at(view)
    assert total > 2000 and start == total - PAGE, (start, total)
    assert pane_rows(view, ".sn-msg") <= PAGE
    page_to(view, "sn-oldest", 0)
    first = view.locator(".sn-pane .sn-msg .sn-text").first
    assert "compte jusqu’à mille — 千まで数えて" in first.inner_text()
    page_to(view, "sn-newer", PAGE)
    assert "tick 49 " in view.locator(".sn-pane .sn-msg .sn-text").first.inner_text()
    page_to(view, "sn-newest", total - PAGE)
    last = view.locator(".sn-pane .sn-msg .sn-text").last
    # rows scrolled out of their box are not laid out (content-visibility): innerText is empty
    last.scroll_into_view_if_needed()
    wait_until(lambda: "fini — 終わり 🎉" in last.inner_text(), what="the newest row drawn")

    view.locator('.sn-tab[data-tab="tools"]').click()
    view.locator('.sn-pane[data-tab="tools"] .sn-pager').wait_for()
    assert pane_rows(view, ".sn-card") <= PAGE
    page_to(view, "sn-oldest", 0)
    assert '"n": 0' in view.locator(".sn-pane .sn-card pre").first.inner_text()

    view.locator('.sn-tab[data-tab="compaction"]').click()
    view.locator('.sn-pane[data-tab="compaction"] .sn-pager').wait_for()
    assert pane_rows(view, ".sn-mark") <= PAGE
    page_to(view, "sn-oldest", 0)

    view.locator('.sn-tab[data-tab="events"]').click()
    view.locator('.sn-pane[data-tab="events"] .sn-pager').wait_for()
    assert pane_rows(view, ".sn-event") <= PAGE
    page_to(view, "sn-oldest", 0)
    assert view.locator(".sn-pane .sn-event").first.get_attribute("data-seq") == "1"
    screenshot(page, "long-run-events-oldest.png")


def test_the_chart_of_1000_turns_is_bounded_and_zooms(page: Any, lab: Lab) -> None:
    view = finished_long_run(page, lab, "long_chart.ipynb")
    view.locator('.sn-tab[data-tab="context"]').click()
    chart = view.locator(".sn-pane .sn-chart")
    chart.wait_for()
    dots, markers = chart.locator("circle.sn-dot").count(), chart.locator("line.sn-marker").count()
    assert 0 < dots <= 300, dots
    assert 0 < markers <= 120, markers  # a sink at every turn: merged, not a solid block
    assert "of 1001" in view.locator(".sn-chart-range").inner_text()
    merged = chart.locator("line.sn-marker title", has_text="more").first.text_content()
    assert "sunk to cold storage" in merged, merged

    view.locator(".sn-zoom-in").click()
    wait_until(
        lambda: "turns 1–1001 " not in view.locator(".sn-chart-range").inner_text() + " ",
        what="the chart to zoom in",
    )
    view.locator(".sn-zoom-all").click()
    wait_until(lambda: "turns 1–1001 of 1001" in view.locator(".sn-chart-range").inner_text())

    box = chart.bounding_box()
    assert box is not None
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.3, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.4, y, steps=5)
    page.mouse.up()

    def zoomed() -> bool:
        text = view.locator(".sn-chart-range").inner_text()  # "turns a–b of 1001 ..."
        first, last = text.split()[1].split("–")
        return 150 < int(first) < int(last) < 450

    wait_until(zoomed, timeout=10, what="the dragged range to be zoomed into")
    assert chart.locator("circle.sn-dot").count() < 240
    screenshot(page, "long-run-chart-zoomed.png")


def test_a_tab_switch_mid_run_draws_one_page_and_paging_holds(page: Any, lab: Lab) -> None:
    open_notebook(
        page,
        lab.notebook(
            "long_stream.ipynb",
            "import os; os.environ['SN_SLOW_AFTER'] = '500'\n" + LONG_RUN,
            STREAM,
        ),
    )
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    view.locator('.sn-node[data-path="counter"]').wait_for()
    run_cell(page, 1)
    wait_until(
        lambda: int(view.locator(".sn-count").inner_text().split()[0]) > 3000,
        timeout=120,
        what="a long history",
    )
    view.locator('.sn-tab[data-tab="events"]').click()
    view.locator('.sn-pane[data-tab="events"] .sn-event').first.wait_for()
    assert pane_rows(view, ".sn-event") <= PAGE
    pager = view.locator(".sn-pane .sn-pager").first
    assert pager.get_attribute("data-following") == "true"
    pager.locator(".sn-older").click()
    wait_until(lambda: pager.get_attribute("data-following") == "false", what="an older page")
    start, total = pager_at(view)
    first = view.locator(".sn-pane .sn-event").first.get_attribute("data-seq")
    page.wait_for_timeout(1500)
    assert pager_at(view)[1] > total, "the run should have streamed meanwhile"
    assert pager_at(view)[0] == start, "the older page moved with the run"
    assert view.locator(".sn-pane .sn-event").first.get_attribute("data-seq") == first
    assert pane_rows(view, ".sn-event") <= PAGE
    pager.locator(".sn-newest").click()
    wait_until(lambda: pager.get_attribute("data-following") == "true", what="the newest page")
    assert pager_at(view)[0] > start
    view.locator('button[data-action="cancel"]').click()
    view.locator(".sn-run", has_text="cancelled").wait_for(timeout=30_000)
