"""The run the browser tests of other hosts (Notebook 7, marimo) drive: a coordinator whose
`explore` child pauses at its tool call, and the step and resume they do from the view."""

from __future__ import annotations

from typing import Any

from .conftest import wait_until

TEAM = '''
import sagents_nb as sn

@sn.tool
def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: which file.
    """
    return "# projet démo — デモ 🚀"

def handler(request):
    if "task" in request.tools:
        if request.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="explore", prompt="lis le README — 読んで")])
        return f"Résumé : {request.tool_results[-1]}"
    if request.last["role"] == "user":
        return sn.reply(tool_calls=[sn.call("read_file", path="README.md")])
    return f"trouvé {request.tool_results[-1]}"

explore = sn.Agent("explore", does="reads files", tools=[read_file])
session = sn.Session(sn.Agent("coordinator", does="delegates", team=[explore]),
                     llm=sn.mock_llm(handler))
run = session.send("Qu’y a-t-il dans README.md ? 中身は？", pause_on=("tool",))
run.wait()
'''
CHILD = "coordinator/explore.1"


def step_the_paused_child(view: Any) -> None:
    """The child paused at its `read_file` call: Step (it pauses again before its next action),
    then Resume; the tree then shows both nodes done."""
    pending = view.locator(".sn-pending")
    pending.get_by_text(f"tool call read_file from {CHILD}").wait_for()
    child = view.locator(f'.sn-node[data-path="{CHILD}"]')
    child.locator(".sn-status", has_text="paused").wait_for()
    assert '"path": "README.md"' in pending.locator("textarea.sn-edit").input_value()
    before = pending.inner_text()
    view.get_by_role("button", name="Step", exact=True).click()
    wait_until(lambda: pending.inner_text() not in ("", before), 10, "the pause after the step")
    assert f"from {CHILD}" in pending.inner_text()
    view.get_by_role("button", name="Resume", exact=True).click()
    view.locator(".sn-answer", has_text="Résumé : trouvé # projet démo — デモ 🚀").wait_for()
    child.locator(".sn-status", has_text="done").wait_for()
    root = view.locator('.sn-node[data-path="coordinator"]')
    # text_content: a row scrolled out of its pane has no inner text (content-visibility)
    assert (root.locator(".sn-status").first.text_content() or "").strip() == "done"
    assert (child.locator(".sn-kind").text_content() or "").strip() == "worker"
