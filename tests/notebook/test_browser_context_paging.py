"""Real-browser test of the context pane's columns on a long node: the view and the storage each
page back to their earliest items and forward again, on their own, one page on the page."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks._browser import Lab, open_notebook, run_cell

from .conftest import screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

ROWS = 200
"""Items a column's page holds (`sagents_nb.notebook._render.ROWS`)."""

LONG_NODE = '''
import itertools
import sagents_nb as sn
from sagents_nb.notebook import view

@sn.tool
def tick(n: int) -> str:
    """Count one.

    Args:
        n: which tick.
    """
    return f"tick {n} · 計数 ✓ 🎉"

turns = itertools.count()

def handler(request):
    done = next(turns)
    if done >= 130:
        return "fini — 終わり 🎉"
    return sn.reply(tool_calls=[sn.call("tick", n=done)])

# Main keeping everything in view: the view and the storage both pass a page
counter = sn.Agent("counter", instructions="tu comptes — 数える 🧮", tools=[tick],
                   kind=sn.kinds.Main(top_k=None, max_turns=200))
session = sn.Session(counter, llm=sn.mock_llm(handler))
shown = view(session)
shown
'''
FINISH = (
    'print("RESULT", session.send("compte jusqu’à cent trente — 百三十まで数えて").result().status)'
)


def pager(view: Any, column: str) -> Any:
    return view.locator(f'.sn-pane .sn-column[data-column="{column}"] .sn-pager')


def at(view: Any, column: str) -> tuple[int, int, str]:
    found = pager(view, column)
    start, total = found.get_attribute("data-start"), found.get_attribute("data-total")
    return int(start), int(total), str(found.get_attribute("data-following"))


def first_row(view: Any, column: str) -> Any:
    return view.locator(f'.sn-pane .sn-column[data-column="{column}"] .sn-msg').first


def rows(view: Any, column: str) -> int:
    return int(view.locator(f'.sn-pane .sn-column[data-column="{column}"] .sn-msg').count())


def test_both_columns_page_to_their_earliest_items_and_back(page: Any, lab: Lab) -> None:
    open_notebook(page, lab.notebook("context_pages.ipynb", LONG_NODE, FINISH))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    view.locator('.sn-node[data-path="counter"]').wait_for()
    run_cell(page, 1)
    page.locator(".jp-OutputArea-output", has_text="RESULT done").wait_for(timeout=120_000)
    view.locator(".sn-run", has_text="done").wait_for(timeout=30_000)
    view.locator('.sn-tab[data-tab="context"]').click()
    pager(view, "storage").wait_for()
    start, total, following = at(view, "storage")
    assert total > ROWS and start == total - ROWS and following == "true", (start, total)
    assert rows(view, "storage") == ROWS
    view_start, view_total, _ = at(view, "view")
    assert view_total > ROWS and view_start == view_total - ROWS

    pager(view, "storage").locator(".sn-oldest").click()
    wait_until(lambda: at(view, "storage")[0] == 0, timeout=10, what="the earliest stored items")
    first = first_row(view, "storage")
    wait_until(lambda: "百三十まで数えて" in first.inner_text(), what="the first stored message")
    assert "compte jusqu’à cent trente" in first.inner_text() and "in view" in first.inner_text()
    assert at(view, "storage")[2] == "false" and rows(view, "storage") == ROWS
    assert at(view, "view")[0] == view_start, "the view column stays on its own page"

    pager(view, "view").locator(".sn-oldest").click()
    wait_until(lambda: at(view, "view")[0] == 0, timeout=10, what="the earliest view messages")
    prompt = first_row(view, "view")
    wait_until(lambda: "tu comptes — 数える 🧮" in prompt.inner_text(), what="the prompt")
    assert "view only" in prompt.inner_text()  # the system prompt is not a stored message
    screenshot(page, "context-columns-earliest.png")

    # a turn back: each column keeps its page
    view.get_by_role("button", name="previous turn").click()
    wait_until(lambda: at(view, "storage")[1] == total - 2, timeout=10, what="the turn before")
    assert at(view, "storage")[0] == 0 and at(view, "view")[0] == 0
    assert "百三十まで数えて" in first_row(view, "storage").inner_text()

    pager(view, "storage").locator(".sn-newer").click()  # the next page is the newest
    wait_until(lambda: at(view, "storage")[2] == "true", timeout=10, what="the newest page")
    pager(view, "view").locator(".sn-newest").click()
    wait_until(lambda: at(view, "view")[2] == "true", timeout=10, what="the newest page")
    view.locator(".sn-turn-nav button", has_text="latest").click()
    wait_until(lambda: at(view, "storage")[1] == total, timeout=10, what="the latest turn")
    assert at(view, "storage")[0] == total - ROWS and at(view, "view")[0] == view_start
    newest = view.locator('.sn-pane .sn-column[data-column="storage"] .sn-msg').last
    newest.scroll_into_view_if_needed()  # rows out of their box are not laid out
    wait_until(lambda: "tick 129 · 計数 ✓ 🎉" in newest.inner_text(), what="the newest item")
