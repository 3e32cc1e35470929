"""An executed notebook exported to HTML shows the view's final state without JavaScript."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from nbconvert import HTMLExporter

from benchmarks._browser import Lab, open_notebook, run_cell

from .conftest import XSS, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

SHOWN_WHILE_RUNNING = f"""
import time
import sagents_nb as sn
from sagents_nb.notebook import view

PAYLOAD = {XSS!r}

def handler(request):
    time.sleep(0.3)
    if "task" in request.tools:
        if request.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="explore", prompt="lis le README — 読んで 📖")])
        return "Réponse finale : tout va bien ✅ " + PAYLOAD
    return "README : « bonjour » — こんにちは"

explore = sn.Agent("explore", does="reads files")
session = sn.Session(sn.Agent("coordinator", does="delegates", team=[explore]), llm=sn.mock_llm(handler))
run = session.send("Qu’y a-t-il ? 何がある？")
view(session)
"""
WAIT = "print(run.wait(30))"


def executed(tmp_path: Path, *, store_widget_state: bool) -> str:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(SHOWN_WHILE_RUNNING), nbformat.v4.new_code_cell(WAIT)]
    NotebookClient(
        nb, kernel_name="python3", timeout=60, store_widget_state=store_widget_state
    ).execute(cwd=str(tmp_path))
    body, _ = HTMLExporter().from_notebook_node(nb)
    return str(body)


@pytest.mark.parametrize("store_widget_state", [False, True], ids=["no-state", "widget-state"])
def test_the_exported_html_shows_the_final_tree_answer_and_context(
    tmp_path: Path, browser: Any, store_widget_state: bool
) -> None:
    page_html = executed(tmp_path, store_widget_state=store_widget_state)
    # with widget state, nbconvert renders the widget's output as the widget alone
    assert ("application/vnd.jupyter.widget-state+json" in page_html) is store_widget_state
    (tmp_path / "exported.html").write_text(page_html, encoding="utf-8")
    context = browser.new_context(java_script_enabled=False, offline=True)
    try:
        page = context.new_page()
        page.goto((tmp_path / "exported.html").as_uri())
        static = page.locator(".sagents-static")
        assert static.count() == 1
        text = static.inner_text()
        assert page.locator(".sagents-static img").count() == 0
    finally:
        context.close()
    assert "run 1 done" in text
    assert "coordinator/explore.1" in text and "lis le README — 読んで 📖" in text
    assert "running" not in text and "queued" not in text
    assert "[done] Réponse finale : tout va bien ✅ " + XSS in text
    assert "Latest context of coordinator" in text
    assert "README : « bonjour » — こんにちは" in text
    assert "<img src=x" not in page_html


def test_in_lab_the_static_output_hides_behind_the_live_view(page: Any, lab: Lab) -> None:
    open_notebook(page, lab.notebook("shown.ipynb", SHOWN_WHILE_RUNNING, WAIT))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    view.locator(".sn-node", has_text="coordinator").first.wait_for()
    run_cell(page, 1)
    page.locator(".jp-OutputArea-output", has_text="done").last.wait_for()
    static = page.locator(".sagents-static")
    wait_until(lambda: static.count() == 1, what="the static output")
    wait_until(lambda: "run 1 done" in static.text_content(), what="the static output updated")
    assert not static.is_visible()
    assert view.is_visible()
