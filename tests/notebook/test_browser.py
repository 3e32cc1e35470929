"""Real-browser tests: JupyterLab on loopback, Debian's chromium driven by Playwright."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks._browser import Lab, open_notebook, run_cell

from .conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.timeout(90)]

PAUSED_AT_A_TOOL = '''
import sagents_nb as sn

@sn.tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city.
    """
    return f"sunny in {city}"

def forecast(request):
    if not request.tool_results:
        return sn.reply(tool_calls=[sn.call("get_weather", city="Paris")])
    return f"Final answer: it is {request.tool_results[-1]}."

session = sn.Session(sn.Agent("forecaster", tools=[get_weather]), llm=sn.mock_llm(forecast))
run = session.send("Weather in Paris?", pause_on=("tool",))
run.wait()
run
'''


def test_resume_a_paused_run_from_the_view(page: Any, lab: Lab) -> None:
    open_notebook(page, lab.notebook("paused.ipynb", PAUSED_AT_A_TOOL))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    view.locator(".sn-node", has_text="forecaster").wait_for()
    pending = view.locator(".sn-pending")
    pending.get_by_text("tool call get_weather from forecaster").wait_for()
    assert '"city": "Paris"' in pending.locator("textarea.sn-edit").input_value()
    screenshot(page, "live-view-paused.png")
    view.get_by_role("button", name="Resume", exact=True).click()
    view.locator(".sn-answer", has_text="Final answer: it is sunny in Paris.").wait_for()
    assert view.locator(".sn-node .sn-status").first.inner_text() == "done"
    assert pending.inner_text() == ""
    screenshot(page, "live-view-done.png")


TEAM = '''
import sagents_nb as sn

@sn.tool
def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: which file.
    """
    return "# demo project"

def handler(request):
    if "task" in request.tools:
        if request.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="explore", prompt=request.last_user)])
        return f"Summary: {request.tool_results[-1]}"
    if request.last["role"] == "user":
        return sn.reply(tool_calls=[sn.call("read_file", path="README.md")])
    return f"found {request.tool_results[-1]}"

explore = sn.Agent("explore", does="reads files", tools=[read_file])
session = sn.Session(sn.Agent("coordinator", does="delegates", team=[explore]),
                     llm=sn.mock_llm(handler))
session.send("What is in README.md?").wait()
session
'''

NEXT_RUN = """
result = session.send("And what is in README.md now?").result()
print("used:", [(n.id, n.kind) for n in result.tree.walk()])
"""


def test_kind_selector_swaps_the_next_run(page: Any, lab: Lab) -> None:
    open_notebook(page, lab.notebook("kinds.ipynb", TEAM, NEXT_RUN))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    child = view.locator('.sn-node[data-path="coordinator/explore.1"]')
    child.locator(".sn-status", has_text="done").wait_for()
    assert child.locator(".sn-kind").inner_text() == "worker"
    view.locator('select.sn-kind-select[data-agent="explore"]').select_option("resident")
    view.locator(".sn-notice", has_text="explore uses kind resident").wait_for()
    run_cell(page, 1)
    page.locator(".jp-OutputArea-output", has_text="used:").wait_for()
    printed = page.locator(".jp-OutputArea-output", has_text="used:").inner_text()
    assert "('coordinator/explore.2', 'resident')" in printed
    second = view.locator('.sn-node[data-path="coordinator/explore.2"]')
    second.locator(".sn-status", has_text="done").wait_for()
    assert second.locator(".sn-kind").inner_text() == "resident"
    assert view.locator('select.sn-kind-select[data-agent="explore"]').input_value() == "resident"


XSS_RUN = '''
import sagents_nb as sn

PAYLOAD = "<img src=x onerror=window.__xss=1> <script>window.__xss=2</script>"

@sn.tool
def fetch(url: str) -> str:
    """Fetch a page.

    Args:
        url: where.
    """
    return PAYLOAD

def handler(request):
    if not request.tool_results:
        return sn.reply(tool_calls=[sn.call("fetch", url=PAYLOAD)])
    return "the page says " + request.tool_results[-1]

session = sn.Session(sn.Agent("reader", tools=[fetch]), llm=sn.mock_llm(handler))
session.send(PAYLOAD).result()
session
'''


def test_payloads_render_as_text(page: Any, lab: Lab) -> None:
    payload = "<img src=x onerror=window.__xss=1> <script>window.__xss=2</script>"
    open_notebook(page, lab.notebook("xss.ipynb", XSS_RUN))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    view.locator(".sn-answer", has_text="the page says").wait_for()
    assert payload in view.locator(".sn-answer").inner_text()
    for tab, selector in [
        ("Transcript", ".sn-msg"),
        ("Tool calls", ".sn-card .sn-result"),
        ("Context", ".sn-columns .sn-msg"),
        ("Wire", ".sn-exchange"),
        ("Events", ".sn-event"),
    ]:
        view.get_by_role("tab", name=tab).click()
        view.locator(".sn-pane " + selector).first.wait_for()
        view.locator(".sn-pane details").evaluate_all("nodes => nodes.forEach(n => n.open = true)")
        assert payload in view.locator(".sn-pane").inner_text(), tab
    assert view.locator("img, script").count() == 0
    assert page.evaluate("typeof window.__xss") == "undefined"
    screenshot(page, "live-view-xss-as-text.png")


XSS_CORPUS_RUN = '''
import sagents_nb as sn
from sagents_nb.events import HarnessEventOccurred

CORPUS = [
    "<img src=x onerror=window.__xss=11>",
    "<script>window.__xss=12</script>",
    "<svg onload=window.__xss=13>",
    "\\"><iframe src=javascript:window.__xss=14>",
    "<a href=javascript:window.__xss=15>click</a>",
    "{{constructor.constructor('window.__xss=16')()}}",
]
BLOB = " ".join(CORPUS)
NAME = "<img src=x onerror=window.__xss=17>"

class Probe(sn.Task):
    task_name = "probe"
    description = BLOB
    instructions = BLOB
    display_text = BLOB

@sn.tool
def fetch(url: str) -> str:
    """Fetch a page.

    Args:
        url: where.
    """
    return BLOB

def handler(request):
    if "task" in request.tools:
        if request.last["role"] == "user":
            return sn.reply(BLOB, tool_calls=[sn.call("task", agent="probe", prompt=BLOB),
                                              sn.call("task", agent=NAME, prompt=BLOB)])
        return "parent says " + BLOB
    if request.last["role"] == "user":
        return sn.reply(tool_calls=[sn.call("fetch", url=BLOB)])
    return "child says " + BLOB

agent = sn.Agent(NAME, does=BLOB, instructions=BLOB, team=[Probe], tools=[fetch])
Probe.as_agent().tools = [fetch]
session = sn.Session(agent, llm=sn.mock_llm(handler), preprocessor=sn.Mentions({"x": BLOB}))
session.send(BLOB + " @x").result()
session.bus.emit(HarnessEventOccurred(path=NAME + "/probe.1", event={"type": "text", "text": BLOB}))
session
'''


def test_an_xss_corpus_through_every_rendered_field_stays_text(page: Any, lab: Lab) -> None:
    open_notebook(page, lab.notebook("xss_corpus.ipynb", XSS_CORPUS_RUN))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    view.locator(".sn-answer", has_text="parent says").wait_for()
    view.locator(".sn-node", has_text="<img src=x onerror=window.__xss=17>").first.wait_for()
    for path in (
        "<img src=x onerror=window.__xss=17>",
        "<img src=x onerror=window.__xss=17>/probe.1",
    ):
        view.locator(f'.sn-node[data-path="{path}"]').click()
        for tab in ("Transcript", "Tool calls", "Context", "Wire", "Events"):
            view.get_by_role("tab", name=tab).click()
            view.locator(".sn-pane details").evaluate_all(
                "nodes => nodes.forEach(n => n.open = true)"
            )
            text = view.locator(".sn-pane").inner_text()
            assert "window.__xss=1" in text, (path, tab)
    assert view.locator("img, script, svg:not(.sn-chart), iframe, a[href^=javascript]").count() == 0
    assert page.evaluate("typeof window.__xss") == "undefined"
    screenshot(page, "live-view-xss-corpus.png")


NEW_EVENT = """
from typing import Literal

import sagents_nb as sn
from sagents_nb.events import Event
from sagents_nb.notebook._projector import handles

class BudgetWarning(Event):
    type: Literal["budget_warning"] = "budget_warning"
    tokens: int
    note: str

@handles(BudgetWarning, chart="over budget <img src=x onerror=window.__xss=31>")
def _budget_warning(projector, event):
    node = projector.node(event.path)
    projector.mark(node, event, f"{event.tokens} tokens", note=event.note)
    node.transcript.append(event)

session = sn.Session(sn.Agent("a"), llm=sn.mock_llm(lambda request: "fine"))
session.send("go").result()
session.root.emit(BudgetWarning(tokens=120, note="dépassé 预算 🚨 <script>window.__xss=32</script>"))
session
"""


def test_an_event_defined_in_the_notebook_shows_on_the_chart_and_in_the_transcript(
    page: Any, lab: Lab
) -> None:
    open_notebook(page, lab.notebook("new_event.ipynb", NEW_EVENT))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    view.locator(".sn-answer", has_text="fine").wait_for()
    view.get_by_role("tab", name="Transcript").click()
    line = view.locator(".sn-pane .sn-msg.sn-role-budget_warning")
    line.wait_for()
    assert "dépassé 预算 🚨 <script>" in line.inner_text()
    view.get_by_role("tab", name="Context").click()
    marker = view.locator(".sn-pane line.sn-marker-budget_warning")
    marker.wait_for(state="attached")  # a vertical line has no width: never "visible"
    assert marker.evaluate("line => getComputedStyle(line).stroke") not in ("", "none")
    keys = view.locator(".sn-legend .sn-key").all_inner_texts()
    assert keys == [  # the two lines, then only the markers that occur
        "view (estimated)",
        "storage (estimated)",
        "over budget <img src=x onerror=window.__xss=31>",
    ]
    assert view.locator("img, script").count() == 0
    assert page.evaluate("typeof window.__xss") == "undefined"
    screenshot(page, "live-view-new-event.png")
