"""Real-browser test of scoped views: a run's view shows and steers that run only, the session's
view follows (and decides) the next run's pause."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks._browser import Lab, open_notebook, run_cell

from .conftest import screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

FIRST = '''
import sagents_nb as sn
from sagents_nb.notebook import view

@sn.tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city.
    """
    return f"ensoleillé à {city} ☀"

def forecast(request):
    if request.last["role"] == "user":
        return sn.reply(tool_calls=[sn.call("get_weather", city="Zürich")])
    return f"il fait {request.tool_results[-1]}"

session = sn.Session(sn.Agent("forecaster", tools=[get_weather]), llm=sn.mock_llm(forecast))
first = session.send("Météo à Zürich ? 天気は？")
first.result()
view(first)
'''
SECOND = """
second = session.send("Encore une fois — もう一度 🌦", pause_on=("tool",))
second.wait()
view(session)
"""


def test_a_runs_view_shows_only_its_run_and_the_sessions_view_decides_the_next(
    page: Any, lab: Lab
) -> None:
    open_notebook(page, lab.notebook("scoped.ipynb", FIRST, SECOND))
    run_cell(page, 0)
    views = page.locator(".sagents-view")
    views.first.locator(".sn-answer", has_text="il fait ensoleillé").wait_for()
    run_cell(page, 1)
    wait_until(lambda: views.count() == 2, timeout=20, what="the session's view")
    first, whole = views.nth(0), views.nth(1)
    whole.locator(".sn-decision").wait_for()
    first.locator(".sn-later", has_text="run 2 is paused: view(session) follows it").wait_for()
    assert first.locator(".sn-run").inner_text().startswith("run 1")
    assert first.locator(".sn-decision").count() == 0
    assert first.locator(".sn-approve").count() == 0
    first.locator(".sn-pane .sn-msg", has_text="天気は").first.wait_for()
    assert "もう一度" not in first.locator(".sn-pane").inner_text()
    for action in ("step", "resume", "cancel"):
        assert first.locator(f'button[data-action="{action}"]').is_disabled()
    screenshot(page, "live-view-scoped.png")

    assert whole.locator(".sn-later").count() == 0
    assert "get_weather" in whole.locator(".sn-decision").inner_text()
    whole.locator(".sn-pane .sn-msg", has_text="もう一度").first.wait_for()
    whole.locator(".sn-approve").click()
    whole.locator(".sn-answer", has_text="il fait ensoleillé à Zürich ☀").wait_for()
    first.locator(".sn-later", has_text="run 2 is done").wait_for()
    assert "もう一度" not in first.locator(".sn-pane").inner_text()
