"""Executing a notebook headless (nbclient) keeps the live view's widget state in the notebook."""

from __future__ import annotations

import json

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(90)]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def test_saved_widget_state_renders_the_last_view() -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import sagents_nb as sn\n"
            "session = sn.Session(sn.Agent('solo'), llm=sn.script('hello <b>from</b> the mock'))\n"
            "session.send('hi').result()\n"
            "session"
        ),
        nbformat.v4.new_code_cell("%load_ext sagents_nb\n%sagents_view"),
    ]
    NotebookClient(nb, kernel_name="python3", timeout=60, store_widget_state=True).execute()
    # the widget, then its static rendering as an output of its own (nbconvert shows a widget
    # output as the widget alone when the notebook stores widget state)
    [shown, static] = nb.cells[0].outputs
    assert shown["output_type"] == static["output_type"] == "display_data"
    assert WIDGET_VIEW not in static["data"]
    assert shown["data"]["text/html"] == shown["data"]["text/plain"] == ""
    assert "hello &lt;b&gt;from&lt;/b&gt; the mock" in static["data"]["text/html"]
    assert "solo [main] done" in static["data"]["text/plain"]
    model_id = shown["data"][WIDGET_VIEW]["model_id"]
    state = nb.metadata["widgets"][WIDGET_STATE]["state"][model_id]["state"]
    assert state["_model_name"] == "AnyModel"
    assert state["tree"]["agent"] == "solo" and state["tree"]["status"] == "done"
    assert state["header"]["run"]["text"] == "hello <b>from</b> the mock"
    assert json.loads(state["pane"])["entries"][-1]["text"] == "hello <b>from</b> the mock"
    assert "export default" in state["_esm"]
    [again, again_static] = nb.cells[1].outputs
    assert WIDGET_VIEW in again["data"] and "solo [main] done" in again_static["data"]["text/plain"]


STREAMING = """
import asyncio
import sagents_nb as sn
from sagents_nb.notebook import view

async def handler(request):
    await asyncio.sleep(0.3)
    if "task" in request.tools:
        if request.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="lecteur", prompt="lis — 読む")])
        return "fini — 終わり 🎉"
    return "lu : « bonjour »"

team = [sn.Agent("lecteur", does="lit")]
session = sn.Session(sn.Agent("chef", team=team), llm=sn.mock_llm(handler))
run = session.send("délègue")
view(session)
"""


def test_the_output_made_after_the_cell_that_starts_a_run_is_the_views_text() -> None:
    """In a real kernel, the static output made after the cell that starts a run (IPython's
    `post_run_cell`) is the view's text: the offline viewer's panes, made on the kernel's main
    thread, held the clicks for seconds while the run streamed. Once a later cell finds the run
    stopped, the output holds the viewer."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(STREAMING), nbformat.v4.new_code_cell("run.wait(30)")]
    client = NotebookClient(nb, kernel_name="python3", timeout=60)
    with client.setup_kernel():
        client.execute_cell(nb.cells[0], 0)
        [_, static] = nb.cells[0].outputs
        assert "chef [main] running" in static["data"]["text/plain"]
        assert "sagents-saved" not in static["data"]["text/html"]
        client.execute_cell(nb.cells[1], 1)
        [_, static] = nb.cells[0].outputs
        assert "fini — 終わり 🎉" in static["data"]["text/plain"]
        assert "sagents-saved" in static["data"]["text/html"]
