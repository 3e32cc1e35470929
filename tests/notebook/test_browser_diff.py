"""The context diff in JupyterLab with chromium: what changed since the previous turn, a turn
picker over it, and what the node forgot, labelled (not by colour alone) and escaped."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks._browser import Lab, open_notebook, run_cell

from .conftest import XSS, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

WINDOW_RUN = f"""
import sagents_nb as sn

XSS = {XSS!r}
replies = iter(["un 🥇", "二 " + XSS, "三 🎌"])
agent = sn.Agent("live", kind=sn.kinds.Realtime(window=1))
session = sn.Session(agent, llm=sn.mock_llm(lambda request: next(replies)))
for text in ("premier message 🇫🇷", "第二条消息 " + XSS, "三番目のメッセージ"):
    session.send(text).result()
session
"""

COMPACTION_RUN = """
import sagents_nb as sn
from sagents_nb._runtime.turns import SUMMARY_INSTRUCTIONS

def handler(request):
    if request.system == SUMMARY_INSTRUCTIONS:
        return "Résumé : 长颈鹿 📝"
    if "task" in request.tools:
        if request.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="keeper", prompt=request.last_user)])
        return "keeper said: " + request.tool_results[-1]
    return "d'accord ✅"

keeper = sn.Agent("keeper", kind=sn.kinds.Resident(window_tokens=30, keep_recent=1, relevance=False))
session = sn.Session(sn.Agent("lead", team=[keeper]), llm=sn.mock_llm(handler))
for text in ("长颈鹿有多高？" * 3, "火山の灰 🌋 " * 3, "et après ?"):
    session.send(text).result()
session
"""


def open_context(page: Any, lab: Lab, name: str, source: str, node: str | None = None) -> Any:
    open_notebook(page, lab.notebook(name, source))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    view.locator(".sn-tree").wait_for()
    if node is not None:
        view.locator(f'.sn-tree [data-path="{node}"]').first.click()
    view.get_by_role("tab", name="Context").click()
    return view


def test_the_diff_names_what_each_turn_trimmed_and_the_turn_picker_walks_it(
    page: Any, lab: Lab
) -> None:
    view = open_context(page, lab, "diff-window.ipynb", WINDOW_RUN)
    changes = view.locator(".sn-changes")
    changes.get_by_text("Changes since turn 2").wait_for()
    trimmed = changes.locator(".sn-change-trimmed")
    assert trimmed.count() == 2
    row = trimmed.first.inner_text()
    assert "trimmed" in row and "第二条消息 " + XSS in row and "✂" in row  # label, sign, text
    assert "event " in row and "window" in row
    assert "三番目のメッセージ" in changes.locator(".sn-change-added").inner_text()
    assert "+" in changes.locator(".sn-change-added .sn-change-sign").inner_text()

    forgotten = view.locator(".sn-forgotten")
    assert forgotten.get_attribute("open") is not None
    assert "Forgotten by turn 3: 4 messages" in forgotten.locator("summary").inner_text()
    lines = forgotten.locator("li").all_inner_texts()
    assert "left at turn 3" in lines[0] and "第二条消息" in lines[0]
    assert "left at turn 2" in lines[2] and "premier message 🇫🇷" in lines[2]

    view.locator(".sn-turn-nav button", has_text="◀").click()
    changes.get_by_text("Changes since turn 1").wait_for()
    assert "premier message 🇫🇷" in changes.locator(".sn-change-trimmed").first.inner_text()
    assert "Forgotten by turn 2: 2 messages" in forgotten.locator("summary").inner_text()
    view.locator(".sn-turn-nav button", has_text="◀").click()
    changes.get_by_text("Turn 1: the first view").wait_for()
    assert "nothing forgotten" in forgotten.inner_text()
    view.locator(".sn-turn-nav button", has_text="latest").click()
    changes.get_by_text("Changes since turn 2").wait_for()

    assert view.locator("img, script").count() == 0
    assert page.evaluate("typeof window.__xss") == "undefined"
    screenshot(page, "context-diff-window.png")


def test_a_compaction_shows_its_summary_over_what_it_replaced(page: Any, lab: Lab) -> None:
    view = open_context(page, lab, "diff-compaction.ipynb", COMPACTION_RUN, "lead/keeper.1")
    view.locator('.sn-pane[data-node="lead/keeper.1"]').wait_for()
    changes = view.locator(".sn-changes")
    changes.get_by_text("Changes since turn 2").wait_for()  # the latest turn, followed
    # turn 3 compacted again (the first summary among what it replaced); go back to turn 2
    view.locator(".sn-turn-nav button", has_text="◀").click()
    changes.get_by_text("Changes since turn 1").wait_for()
    group = view.locator(".sn-change-group")
    text = group.first.inner_text()
    assert "summarised" in text and "compaction by summary" in text
    assert "Résumé : 长颈鹿 📝" in group.first.locator(".sn-change-summary").inner_text()
    replaced = group.first.locator(".sn-change-summarised").all_inner_texts()
    assert "长颈鹿有多高？" in replaced[0]
    assert "d'accord ✅" in replaced[1] and "never in view" in replaced[1]
    screenshot(page, "context-diff-compaction.png")
