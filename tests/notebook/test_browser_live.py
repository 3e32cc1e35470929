"""Real-browser tests of the live view under a streaming run: clicks land, what the person is
doing survives updates, pauses end on screen, and a view whose kernel went away says so."""

from __future__ import annotations

import time
from typing import Any

import pytest

from benchmarks._browser import Lab, open_notebook, run_cell

from .conftest import screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

STREAMING_TEAM = '''
import time
import sagents_nb as sn
from sagents_nb.notebook import view

@sn.tool
def tick(n: int) -> str:
    """Count one.

    Args:
        n: which tick.
    """
    return f"tick {n} · 計数 ✓"

def handler(request):
    time.sleep(0.06)  # about 95 events a second
    if "task" in request.tools:
        done = len(request.tool_results)
        if done >= 200:
            return "fini — 終わり 🎉"
        return sn.reply(tool_calls=[sn.call("task", agent="worker", prompt=f"partie {done} — 部分 🧩")])
    if len(request.tool_results) < 28:
        return sn.reply(tool_calls=[sn.call("tick", n=len(request.tool_results))])
    return "compté ✓"

worker = sn.Agent("worker", does="compte — 数える", tools=[tick], kind=sn.kinds.Worker(30))
session = sn.Session(sn.Agent("coordinator", does="délègue", team=[worker]), llm=sn.mock_llm(handler))
view(session)
'''
SEND = 'run = session.send("compte jusqu’à deux cents — 二百まで数えて")'


def press(page: Any, target: Any, hold_ms: int = 100) -> bool:
    """A human-speed click: press, hold `hold_ms`, release, at the target's centre (False if
    the target was not on screen to press)."""
    box = target.bounding_box()
    if box is None:
        return False
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.wait_for_timeout(hold_ms)
    page.mouse.up()
    return True


def landed(check: Any, timeout: float = 5.0) -> bool:
    try:
        wait_until(check, timeout=timeout)
    except AssertionError:
        return False
    return True


def event_count(view: Any) -> int:
    text = view.locator(".sn-count").inner_text()
    return int(text.split()[0])


def start_streaming(page: Any, lab: Lab, name: str) -> Any:
    open_notebook(page, lab.notebook(name, STREAMING_TEAM, SEND))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    view.locator('.sn-node[data-path="coordinator"]').wait_for()
    run_cell(page, 1)
    view.locator('.sn-node[data-path="coordinator/worker.1"]').wait_for()
    return view


def test_human_speed_clicks_land_while_a_run_streams(page: Any, lab: Lab) -> None:
    view = start_streaming(page, lab, "clicks.ipynb")
    before, started = event_count(view), time.monotonic()
    page.wait_for_timeout(2000)
    rate = (event_count(view) - before) / (time.monotonic() - started)
    print(f"streaming at {rate:.0f} events/s")
    step = view.get_by_role("button", name="Step", exact=True)
    resume = view.get_by_role("button", name="Resume", exact=True)
    decision = view.locator(".sn-pending .sn-pending-what")
    hits = {"step": 0, "tab": 0, "cancel": 0}
    for _ in range(8):
        if press(page, step) and landed(lambda: decision.count() == 1):
            hits["step"] += 1
            press(page, resume)
            wait_until(lambda: decision.count() == 0, timeout=5, what="the run to go on")
    latencies = []
    for name in ("context", "tools", "compaction", "wire", "events", "transcript"):
        tab = view.locator(f'.sn-tab[data-tab="{name}"]')
        pressed = time.monotonic()
        if press(page, tab) and landed(
            lambda t=tab: "sn-active" in (t.get_attribute("class") or "")
        ):
            hits["tab"] += 1
            latencies.append(time.monotonic() - pressed)
    cancel = view.get_by_role("button", name="Cancel", exact=True)
    if press(page, cancel) and landed(lambda: "cancelled" in view.locator(".sn-run").inner_text()):
        hits["cancel"] += 1
    print("tab press to active, incl. the 100 ms hold:", [f"{s * 1000:.0f} ms" for s in latencies])
    assert hits == {"step": 8, "tab": 6, "cancel": 1}


def test_what_the_person_is_doing_survives_live_updates(page: Any, lab: Lab) -> None:
    view = start_streaming(page, lab, "survive.ipynb")
    kind = view.locator('select.sn-kind-select[data-agent="worker"]')
    kind.evaluate("node => { node.__snMark = 'mine' }")
    preprocessor = view.locator("select.sn-preprocessor")
    preprocessor.evaluate("node => { node.__snMark = 'mine' }")
    view.locator('.sn-tab[data-tab="events"]').click()
    first = view.locator(".sn-pane .sn-event").first
    first.wait_for()
    seq = first.get_attribute("data-seq")
    first.locator("summary").click()
    pane = view.locator(".sn-pane")
    pane.evaluate("node => { node.scrollTop = 120 }")
    scrolled = pane.evaluate("node => node.scrollTop")
    search = view.locator(".sn-tree-filter")
    search.click()
    page.keyboard.type("partie 0 — 部分")
    before = event_count(view)
    page.wait_for_timeout(2500)
    assert event_count(view) > before + 50, "the run should have streamed meanwhile"
    opened = view.locator(f'.sn-pane .sn-event[data-seq="{seq}"]')
    assert opened.evaluate("node => node.open"), "the opened event closed"
    assert kind.evaluate("node => node.__snMark") == "mine", "the kind selector was replaced"
    assert preprocessor.evaluate("node => node.__snMark") == "mine"
    assert search.evaluate("node => node === document.activeElement"), "the filter lost focus"
    assert search.input_value() == "partie 0 — 部分"
    assert pane.evaluate("node => node.scrollTop") >= min(scrolled, 60), "the pane scrolled back"
    screenshot(page, "live-view-streaming.png")
    view.locator('button[data-action="cancel"]').click()
    view.locator(".sn-run", has_text="cancelled").wait_for()


def test_filter_collapse_and_summary_of_a_growing_tree(page: Any, lab: Lab) -> None:
    view = start_streaming(page, lab, "tree.ipynb")
    view.locator('.sn-node[data-path="coordinator/worker.3"]').wait_for(timeout=30_000)
    summary = view.locator(".sn-tree-summary").inner_text()
    assert "running" in summary and "done" in summary, summary
    row = view.locator('.sn-node[data-path="coordinator/worker.1"]')
    assert row.locator(".sn-agent").inner_text() == "worker.1"
    assert "partie 0 — 部分 🧩" in row.locator(".sn-display").inner_text()
    view.locator(".sn-tree-filter").fill("partie 1 ")
    wait_until(lambda: view.locator(".sn-node").count() == 2, what="the filter to keep one child")
    assert view.locator('.sn-node[data-path="coordinator/worker.2"]').count() == 1
    view.locator(".sn-tree-filter").fill("")
    view.locator('.sn-node[data-path="coordinator"] .sn-twist').click()
    wait_until(lambda: view.locator(".sn-node").count() == 1, what="the tree to collapse")
    assert "below)" in view.locator('.sn-node[data-path="coordinator"]').inner_text()
    view.locator('button[data-action="cancel"]').click()
    view.locator(".sn-run", has_text="cancelled").wait_for()


TWO_PAUSES = '''
import sagents_nb as sn

@sn.tool
def weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city.
    """
    return f"soleil à {city}"

def forecast(request):
    if not request.tool_results:
        return sn.reply(tool_calls=[sn.call("weather", city="Paris"), sn.call("weather", city="東京")])
    return "deux prévisions ☀️"

session = sn.Session(sn.Agent("forecaster", tools=[weather]), llm=sn.mock_llm(forecast))
run = session.send("Quel temps ? 天気は？", pause_on=("tool",))
run.wait()
session
'''
AGAIN = 'print(session.send("encore 🌦").result().status)'


def test_cancel_at_a_pause_clears_the_panel_and_the_cards(page: Any, lab: Lab) -> None:
    open_notebook(page, lab.notebook("cancel_pause.ipynb", TWO_PAUSES, AGAIN))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    pending = view.locator(".sn-pending")
    pending.get_by_text("2 pauses waiting").wait_for()
    view.get_by_role("button", name="Cancel", exact=True).click()
    view.locator(".sn-run", has_text="cancelled").wait_for()
    wait_until(lambda: pending.inner_text().strip() == "", what="the pause panel to clear")
    view.get_by_role("tab", name="Tool calls").click()
    view.locator(".sn-pane .sn-card").first.wait_for()
    assert view.locator(".sn-pane .sn-card-pending").count() == 0
    assert view.locator(".sn-pane .sn-card-cancelled").count() == 2
    run_cell(page, 1)
    cell = page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(1)
    cell.locator(".jp-OutputArea-output", has_text="done").wait_for()
    view.locator(".sn-run", has_text="run 2").wait_for()
    page.wait_for_timeout(300)
    assert pending.inner_text().strip() == ""


TEAM = """
import sagents_nb as sn

def handler(request):
    if "task" in request.tools and request.last["role"] == "user":
        return sn.reply(tool_calls=[sn.call("task", agent="explore", prompt="lis le README — 読んで")])
    return "résumé : rien à signaler 👍"

explore = sn.Agent("explore", does="reads files")
session = sn.Session(sn.Agent("coordinator", does="delegates", team=[explore]), llm=sn.mock_llm(handler))
session.send("Qu’y a-t-il ? 何がある？").wait()
session
"""


def test_after_a_kernel_restart_the_view_says_it_is_disconnected(page: Any, lab: Lab) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if "Cannot send" in m.text else None)
    open_notebook(page, lab.notebook("restart.ipynb", TEAM, 'print("le noyau est revenu ✓")'))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    view.locator(".sn-answer", has_text="rien à signaler").wait_for()
    assert view.get_by_role("button", name="Step", exact=True).count() == 1
    page.locator(".lm-MenuBar-itemLabel", has_text="Kernel").click()
    page.locator(".lm-Menu-itemLabel", has_text="Restart Kernel…").first.click()
    page.locator(".jp-Dialog .jp-mod-accept").click()
    view.locator(".sn-dead", has_text="disconnected").wait_for()
    assert "sn-disconnected" in (view.get_attribute("class") or "")
    assert view.get_by_role("button", name="Step", exact=True).count() == 0
    assert view.locator("select").count() == 0
    assert view.locator('.sn-tab[data-tab="events"]').is_disabled()
    view.locator('.sn-node[data-path="coordinator/explore.1"]').click(force=True)
    page.wait_for_timeout(300)
    assert view.locator(".sn-answer", has_text="rien à signaler").count() == 1
    screenshot(page, "live-view-disconnected.png")
    assert not [e for e in errors if "Cannot send" in e], errors
    run_cell(page, 1)  # the new kernel answers (and is up before the page's kernels stop)
    cell = page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(1)
    cell.locator(".jp-OutputArea-output", has_text="le noyau est revenu ✓").wait_for()
