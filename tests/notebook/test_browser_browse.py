"""`sn.browse` in a real browser: a store's sessions listed, searched (accents folded) and
sorted, a click opening that session's view below; untrusted text stays text."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks._browser import Lab, open_notebook, run_cell

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

STORED = """
import tempfile, os
import sagents_nb as sn

def handler(request):
    if "task" in request.tools and request.last["role"] == "user":
        return sn.reply(tool_calls=[sn.call("task", agent="scout", prompt="sonde 東京")])
    return "fini ✓ <img src=x onerror=window.__xss=1>"

boss = sn.Agent("boss", team=[sn.Agent("scout", does="sonde")])
path = os.path.join(tempfile.mkdtemp(), "runs.db")
ids = []
for _ in range(3):
    s = sn.Session(boss, llm=sn.mock_llm(handler), store=path)
    s.send("go").result()
    s.flush()
    ids.append(s.id)
other = sn.Session(sn.Agent("Zürich_café"), llm=sn.mock_llm(lambda r: "ok"), store=path)
other.send("x").result()
other.flush()
browser = sn.browse(path, agents=boss)
browser
"""


def test_the_stored_sessions_are_listed_searched_and_one_opens(page: Any, lab: Lab) -> None:
    open_notebook(page, lab.notebook("browse.ipynb", STORED))
    run_cell(page, 0)
    table = page.locator(".sn-browse")
    table.locator(".sn-browse-row").nth(3).wait_for()
    assert table.locator(".sn-browse-row").count() == 4
    assert table.locator(".sn-browse-count").inner_text() == "4 sessions"
    box = table.locator(".sn-browse-search")
    box.fill("zurich cafe")
    table.locator(".sn-browse-count", has_text="1 of 4 sessions").wait_for()
    assert (
        table.locator(".sn-browse-row")
        .inner_text()
        .startswith(table.locator(".sn-browse-row").get_attribute("data-id"))
    )
    box.fill("boss")
    table.locator(".sn-browse-count", has_text="3 of 4 sessions").wait_for()
    row = table.locator(".sn-browse-row").first
    session_id = row.get_attribute("data-id")
    assert row.get_attribute("data-status") == "done"
    row.click()
    view = page.locator(".sagents-view")
    view.locator('.sn-node[data-path="boss/scout.1"]').wait_for()
    table.locator(f'.sn-browse-opened[data-id="{session_id}"]').wait_for()
    assert page.evaluate("window.__xss") is None
