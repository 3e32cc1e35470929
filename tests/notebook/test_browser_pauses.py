"""Real-browser tests of the decisions at pauses: the request a model pause stands before, in the
Context tab; one card per pending pause, each decided from its own buttons."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks._browser import Lab, open_notebook, run_cell

from .conftest import screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

WEATHER = '''
import sagents_nb as sn

@sn.tool
def weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city.
    """
    return f"soleil à {city}"
'''
AT_A_MODEL_PAUSE = (
    WEATHER
    + """
llm = sn.mock_llm(lambda request: "réponse ✓", model="modèle-7")
session = sn.Session(sn.Agent("météo", instructions="Réponds en une phrase 🌦", tools=[weather]), llm=llm)
run = session.send("Quel temps à 東京 ?", pause_on={"model"})
run.wait()
session
"""
)


def _shown(page: Any, lab: Lab, name: str, code: str) -> Any:
    """The live view a one-cell notebook shows."""
    open_notebook(page, lab.notebook(name, code))
    run_cell(page, 0)
    return page.locator(".sagents-view")


def test_the_context_tab_at_a_model_pause_shows_the_request_about_to_be_sent(
    page: Any, lab: Lab
) -> None:
    view = _shown(page, lab, "model_pause.ipynb", AT_A_MODEL_PAUSE)
    view.locator(".sn-pending .sn-decision").wait_for()
    view.get_by_role("tab", name="Context").click()
    about = view.locator(".sn-pane .sn-about-to-send")
    about.wait_for()
    text = about.inner_text()
    assert "about to be sent" in text and "2 messages" in text
    assert "model modèle-7" in text and "tools weather" in text
    assert "Réponds en une phrase 🌦" in text and "Quel temps à 東京 ?" in text
    assert "no model turns yet" not in view.locator(".sn-pane").inner_text()
    screenshot(page, "context-about-to-send.png")
    view.locator(".sn-pending .sn-approve").click()
    view.locator(".sn-answer", has_text="réponse ✓").wait_for()
    wait_until(lambda: about.count() == 0, what="the request to leave once sent")
    assert "View sent · 2 messages" in view.locator(".sn-pane").inner_text()


TWO_SCOUTS = (
    WEATHER
    + """
def handler(request):
    if request.node == "chef":
        if not request.tool_results:
            return sn.reply(tool_calls=[sn.call("task", agent="scout", prompt="Paris"),
                                        sn.call("task", agent="scout", prompt="東京")])
        return "deux réponses ✓ " + " / ".join(request.tool_results)
    if not request.tool_results:
        return sn.reply(tool_calls=[sn.call("weather", city=request.last_user)])
    return request.tool_results[-1]

scout = sn.Agent("scout", does="checks the weather", tools=[weather], pause_on={"tool"})
session = sn.Session(sn.Agent("chef", team=[scout]), llm=sn.mock_llm(handler))
run = session.send("Quel temps ? 天気は？")
while len(run.pending) < 2:
    run.wait(0.05)
session
"""
)


def test_two_parallel_pauses_show_two_cards_and_the_second_is_decided_first(
    page: Any, lab: Lab
) -> None:
    view = _shown(page, lab, "two_pauses.ipynb", TWO_SCOUTS)
    cards = view.locator(".sn-pending .sn-decision")
    wait_until(lambda: cards.count() == 2, timeout=30, what="two cards")
    first, second = cards.nth(0), cards.nth(1)
    first_path, second_path = first.get_attribute("data-path"), second.get_attribute("data-path")
    assert first_path != second_path
    assert (
        f"from {first_path}" in first.inner_text() and f"from {second_path}" in second.inner_text()
    )
    assert "2 pauses waiting" in view.locator(".sn-pending").inner_text()
    screenshot(page, "two-pause-cards.png")
    second.locator("textarea.sn-edit").fill('{"city": "Zürich 🥝"}')
    second.get_by_role("button", name="Edit", exact=True).click()
    wait_until(lambda: cards.count() == 1, timeout=15, what="the second card to go")
    assert cards.nth(0).get_attribute("data-path") == first_path
    cards.nth(0).locator(".sn-reject").click()
    view.locator(".sn-answer", has_text="deux réponses ✓").wait_for(timeout=15_000)
    answer = view.locator(".sn-answer").inner_text()
    assert "soleil à Zürich 🥝" in answer and "rejected" in answer
    view.get_by_role("tab", name="Decisions").click()
    entries = view.locator(".sn-pane .sn-decision-entry")
    wait_until(lambda: entries.count() == 2, what="both decisions")
    # listed in the order they paused, each with what was decided there
    assert f"rejected tool call weather from {first_path}" in entries.nth(0).inner_text()
    assert f"edited tool call weather from {second_path}" in entries.nth(1).inner_text()
