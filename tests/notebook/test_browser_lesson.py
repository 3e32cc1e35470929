"""Real-browser test of notebook 05 itself, run top to bottom in JupyterLab: its views show the
tree three levels deep, each run's decisions, the fork, and the diff against its origin."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest

from benchmarks._browser import Lab, open_notebook

from .conftest import screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
LESSON = NOTEBOOKS / "05_step_debugging.ipynb"


def test_notebook_05_runs_in_lab_and_its_views_show_the_lesson(page: Any, lab: Lab) -> None:
    shutil.copy(LESSON, lab.root / LESSON.name)
    shutil.copy(NOTEBOOKS / "lesson_agents.py", lab.root / "lesson_agents.py")
    cells = len(nbformat.read(LESSON, as_version=4).cells)
    open_notebook(page, f"{lab.url}/lab/tree/{LESSON.name}?reset&token={lab.token}")
    page.locator(".jp-NotebookPanel:visible .jp-Cell").first.click()
    for _ in range(cells):  # Shift+Enter runs a cell and moves to the next: Run All, by hand
        page.keyboard.press("Shift+Enter")
        page.wait_for_timeout(50)
    page.locator(".jp-OutputArea-output", has_text="all good").wait_for(timeout=90_000)

    views = page.locator(".jp-OutputArea-output .sagents-view")
    wait_until(lambda: views.count() >= 4, timeout=30, what="the lesson's four views")
    first, parallel, forked, whole = (views.nth(i) for i in range(4))
    first.locator(".sn-answer", has_text="needs a second signature").wait_for()
    assert first.locator(".sn-pending .sn-decision").count() == 0  # decided in the next cell
    first.locator(".sn-tab[data-tab='decisions']").click()
    entries = first.locator(".sn-pane .sn-decision-entry")
    wait_until(lambda: entries.count() == 1, what="run 1's decision on its view's timeline")
    assert "rejected" in entries.first.inner_text()
    assert "over 100 € needs a second signature" in entries.first.inner_text()

    parallel.locator(".sn-answer", has_text="paid 75 € to Carol").wait_for()
    assert parallel.locator(".sn-pending .sn-decision").count() == 0  # both decided

    forked.locator(".sn-answer", has_text="Dave asked to be paid next month").wait_for()

    # the session's view: the whole tree three levels deep, after its three runs
    for path in ("boss", "boss/clerk.2/payer.1", "boss/clerk.5", "boss/clerk.5/payer.1"):
        whole.locator(f".sn-node[data-path='{path}']").wait_for()
    screenshot(page, "lesson-05-session.png")

    diff = page.locator(".jp-OutputArea-output", has_text="first diverging event").last
    assert "Dave asked to be paid next month" in (diff.text_content() or "")
