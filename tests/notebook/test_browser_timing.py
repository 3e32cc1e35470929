"""The Timing tab in a real browser: one waterfall row per model call, tool call and child, labels
escaped, the token table beside it, a node's label selecting that node."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks._browser import Lab, open_notebook, run_cell

from .conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

TEAM_WITH_A_HOSTILE_TOOL = '''
import sagents_nb as sn

PAYLOAD = "<img src=x onerror=window.__xss=1> <script>window.__xss=2</script>"

@sn.tool
def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: which file.
    """
    return "# démo 项目 🎉"

def handler(request):
    if "task" in request.tools:
        if request.last["role"] == "user":
            return sn.reply(tool_calls=[
                sn.call("task", agent="explore", prompt="lis le fichier README.md, s'il te plaît"),
                sn.call(PAYLOAD, url=PAYLOAD),
            ])
        return "Résumé : fini"
    if request.last["role"] == "user":
        return sn.reply(tool_calls=[sn.call("read_file", path="README.md")])
    return f"trouvé {request.tool_results[-1]}"

explore = sn.Agent("explore", does="reads files", tools=[read_file])
session = sn.Session(sn.Agent("coordinator", does="delegates", team=[explore]),
                     llm=sn.mock_llm(handler))
result = session.send("Qu'y a-t-il dans README.md ?").result()
session
'''

COUNTS = """
import json
counts = {
    "model": sum(e.type == "model_request" for e in result.events),
    "tool": sum(e.type == "tool_call_started" for e in result.events),
    "node": len(result.tree.walk()),
}
print("counts:", json.dumps(counts))
"""


def test_the_timing_tab_draws_one_row_per_call_and_child_with_escaped_labels(
    page: Any, lab: Lab
) -> None:
    open_notebook(page, lab.notebook("timing.ipynb", TEAM_WITH_A_HOSTILE_TOOL, COUNTS))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    view.locator(
        '.sn-node[data-path="coordinator/explore.1"] .sn-status', has_text="done"
    ).wait_for()
    run_cell(page, 1)
    printed = page.locator(".jp-OutputArea-output", has_text="counts:")
    printed.wait_for()
    counts = json.loads(printed.inner_text().split("counts:", 1)[1])
    assert counts == {"model": 4, "tool": 3, "node": 2}

    view.get_by_role("tab", name="Timing").click()
    chart = view.locator('.sn-pane[data-tab="timing"] svg.sn-waterfall')
    chart.wait_for()
    rows = chart.locator("g.sn-wf-row")
    for kind, expected in counts.items():
        assert chart.locator(f'g.sn-wf-row[data-kind="{kind}"]').count() == expected, kind
    assert rows.count() == sum(counts.values())
    # every bar has a hover title with its duration; axis ticks are labelled in time
    bars = chart.locator("g.sn-wf-row rect")
    assert bars.count() >= rows.count()
    titles = [bars.nth(i).locator("title").text_content() for i in range(bars.count())]
    assert all(" → " in title and ("ms" in title or " s" in title) for title in titles)
    assert chart.locator("text.sn-axis-label").count() >= 2

    # the hostile tool name and arguments arrive as text, never as markup
    hostile = chart.locator('g.sn-wf-row[data-kind="tool"]').filter(has_text="<img src=x")
    assert hostile.count() == 1
    hover = hostile.locator("rect title").text_content()
    assert "<img src=x onerror=window.__xss=1>" in hover and "<script>" in hover
    assert page.evaluate("window.__xss") is None
    assert view.locator("img").count() == 0 and view.locator("script").count() == 0

    # the token table: one row per node, reported figures, no invented cost
    table = view.locator("table.sn-tokens")
    assert table.locator("tbody tr").count() == counts["node"]
    first = table.locator('tbody tr[data-path="coordinator"]')
    assert first.locator("td").last.inner_text().strip() == "—"
    assert "prompt" in view.locator(".sn-wf-head").inner_text()
    screenshot(page, "timing-tab.png")

    # a node's label opens its own waterfall
    chart.locator('g.sn-wf-row[data-kind="node"] text.sn-wf-link', has_text="explore.1").click()
    view.locator('.sn-pane[data-tab="timing"][data-node="coordinator/explore.1"]').wait_for()
    sub = view.locator('.sn-pane[data-tab="timing"] svg.sn-waterfall g.sn-wf-row')
    assert [sub.nth(i).get_attribute("data-kind") for i in range(sub.count())] == [
        "node",
        "model",
        "tool",
        "model",
    ]


LIVE_TEAM = '''
import time
import sagents_nb as sn
from sagents_nb.notebook import view

@sn.tool
def slow_read(path: str) -> str:
    """Read a file slowly.

    Args:
        path: which file.
    """
    time.sleep(0.5)  # long enough for the tab to draw the run while it runs
    return "contenu 内容"

def handler(request):
    if "task" in request.tools:
        if request.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="reader", prompt=f"fichier {i}")
                                        for i in range(6)])
        return "tout lu"
    if len(request.tool_results) < 3:
        return sn.reply(tool_calls=[sn.call("slow_read", path="a.txt")])
    return "lu"

reader = sn.Agent("reader", does="reads", tools=[slow_read])
session = sn.Session(sn.Agent("lead", does="delegates", team=[reader]), llm=sn.mock_llm(handler))
live = view(session)
live
'''

SEND = """
run = session.send("lis tout")
"""


def test_the_timing_tab_follows_a_streaming_run_to_its_last_state(page: Any, lab: Lab) -> None:
    open_notebook(page, lab.notebook("timing-live.ipynb", LIVE_TEAM, SEND))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    view.get_by_role("tab", name="Timing").click()
    view.locator('.sn-pane[data-tab="timing"]').wait_for()
    run_cell(page, 1)
    head = view.locator(".sn-wf-head")
    head.locator(".sn-status", has_text="running").wait_for()
    head.locator(".sn-status", has_text="done").wait_for(timeout=60_000)
    chart = view.locator("svg.sn-waterfall")
    # the last state, whole: 6 children with 3 slow reads and 4 model calls each, and the lead's
    assert chart.locator('g.sn-wf-row[data-kind="node"]').count() == 7
    assert chart.locator('g.sn-wf-row[data-kind="tool"]').count() == 6 + 6 * 3
    assert chart.locator('g.sn-wf-row[data-kind="model"]').count() == 2 + 6 * 4
    assert chart.locator("rect.sn-wf-open").count() == 0  # nothing left drawn as still going
    assert view.locator("table.sn-tokens tbody tr").count() == 7
