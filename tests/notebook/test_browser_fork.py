"""Real-browser tests of forking from the view and of the decisions kept after a run: "Fork here"
shows the fork's own live view below, with the fork's true status; a run paused, edited and
rejected keeps its decisions on screen after the fact (as under Run All)."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks._browser import Lab, open_notebook, run_cell

from .conftest import XSS, screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

BANK = f'''
import sagents_nb as sn
from sagents_nb.notebook import view

@sn.tool
def transfer(amount: int, to: str) -> str:
    """Transfer money.

    Args:
        amount: how much.
        to: to whom.
    """
    return f"envoyé {{amount}} à {{to}} ✓"

def model(request):
    if request.last["role"] == "user":
        return sn.reply(tool_calls=[sn.call("transfer", amount=1000, to="Mallory 🦹 {XSS}")])
    return f"Résultat : {{request.tool_results[-1]}}"

session = sn.Session(sn.Agent("bank", tools=[transfer]), llm=sn.mock_llm(model), store=":memory:")
run = session.send("payer la facture — 請求書 💶", pause_on={{"tool"}})
run.wait()
v = view(session)
v
'''
CHECK_FORK = """
fork = v.forks[0]
print("fork", fork.id != session.id, v.fork_views[0].target.session is fork, fork.runs[-1].status)
"""


def own(view: Any, selector: str) -> Any:
    """`selector` among the view's own parts, not those of a fork's view nested in it."""
    return view.locator(f":scope > {selector}")


def test_fork_here_shows_the_forks_own_view_below_with_its_true_status(page: Any, lab: Lab) -> None:
    open_notebook(page, lab.notebook("fork.ipynb", BANK, CHECK_FORK))
    run_cell(page, 0)
    view = page.locator(".jp-OutputArea-output .sagents-view").first
    own(view, ".sn-pending .sn-decision").wait_for()
    own(view, ".sn-body .sn-tab[data-tab='events']").click()
    paused = view.locator(".sn-pane .sn-event", has=page.locator(".sn-type", has_text="paused"))
    paused.first.locator(".sn-fork").click()

    forked = view.locator(".sn-forks .sn-forked .sagents-view")
    forked.locator(".sn-run").wait_for()
    notice = own(view, ".sn-notice").inner_text()
    assert ".forks[0]" in notice and "v.forks" not in notice, notice
    # the fork was cut at a pause: nothing runs in it, its node waits there, and it says so
    wait_until(lambda: "incomplete" in forked.locator(".sn-run").inner_text(), what="incomplete")
    assert forked.locator(".sn-node[data-path='bank'] .sn-status").inner_text() == "paused"
    # its pause is a card before resume(), marked as waiting for it
    assert own(forked, ".sn-pending .sn-decision-stored").count() == 1
    assert "waiting for session.resume()" in own(forked, ".sn-pending").inner_text()
    assert "forked from session" in forked.locator(".sn-answer").inner_text()
    resume = own(forked, ".sn-controls button[data-action='resume']")
    assert resume.is_enabled()
    assert "asks again the decisions pending at the cut" in (resume.get_attribute("title") or "")
    # the parent still waits at its own pause
    assert own(view, ".sn-pending .sn-decision").count() == 1
    assert "paused" in own(view, ".sn-header .sn-run").inner_text()

    resume.click()  # the cut run goes on, and pauses where it paused
    own(forked, ".sn-pending .sn-decision:not(.sn-decision-stored)").wait_for()
    own(forked, ".sn-pending .sn-approve").click()
    forked.locator(".sn-answer", has_text="Résultat : envoyé 1000").wait_for()
    assert "done" in forked.locator(".sn-run").inner_text()
    assert own(view, ".sn-pending .sn-decision").count() == 1, "the original is untouched"

    # compare with origin: the diff below the fork's title, escaped
    view.locator(".sn-forks .sn-forked-title .sn-compare").first.click()
    found = view.locator(".sn-forks .sn-fork-diff").first
    found.wait_for()
    assert "first diverging event" in found.locator(".sn-fork-diff-first").inner_text()
    row = found.locator("tr[data-path='bank']")
    cells = row.locator("td").all_inner_texts()
    assert cells[0] == "≠" and cells[2].startswith("paused") and cells[4].startswith("done")
    assert cells[5] == f"Résultat : envoyé 1000 à Mallory 🦹 {XSS} ✓"
    assert page.evaluate("window.__xss") is None
    screenshot(page, "fork-view.png")

    run_cell(page, 1)
    cell = page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(1)
    cell.locator(".jp-OutputArea-output", has_text="fork True True done").wait_for()


TEACHING = [
    BANK.replace("v = view(session)\nv\n", "").replace('{"tool"}', '{"model", "tool"}'),
    "view(run)",
    """run.step()
run.wait()
run.edit(amount=10, to="Alice — アリス 👩")
run.wait()
run.resume()
print(run.result().text)""",
    f"""run2 = session.send("encore — もう一度", pause_on={{"tool"}})
run2.wait()
run2.reject("il faut deux signatures — 二人の承認 {XSS}")
print(run2.result().status)""",
    "view(session)",
]


def test_a_paused_edited_and_rejected_session_keeps_its_decisions_on_screen(
    page: Any, lab: Lab
) -> None:
    open_notebook(page, lab.notebook("decisions.ipynb", *TEACHING))
    for index in range(len(TEACHING)):  # as Run All does: nobody looks until the end
        run_cell(page, index)
    last = page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(len(TEACHING) - 2)
    last.locator(".jp-OutputArea-output", has_text="done").wait_for(timeout=30_000)
    views = page.locator(".jp-OutputArea-output .sagents-view")
    wait_until(lambda: views.count() == 2, timeout=20, what="the session's view")
    # run 1's view keeps to run 1: its three pauses, and a note naming run 2
    first = views.first
    first.locator(".sn-answer", has_text="Résultat : envoyé 10 à Alice").wait_for()
    assert first.locator(".sn-pending .sn-decision").count() == 0
    first.locator(".sn-later", has_text="run 2 is done").wait_for()
    first.locator(".sn-tab[data-tab='decisions']").click()
    wait_until(
        lambda: first.locator(".sn-pane .sn-decision-entry").count() == 3, what="run 1's pauses"
    )
    assert "rejected" not in first.locator(".sn-pane").inner_text()

    view = views.nth(1)  # the session's: both runs
    view.locator(".sn-tab[data-tab='decisions']").click()
    entries = view.locator(".sn-pane .sn-decision-entry")
    wait_until(lambda: entries.count() == 4, what="the four pauses on the timeline")
    texts = [entries.nth(i).inner_text() for i in range(4)]
    assert "approved" in texts[0] and "model request from bank" in texts[0]
    assert "edited" in texts[1] and "tool call transfer from bank" in texts[1]
    assert "approved" in texts[2] and "rejected" in texts[3] and "run 2" in texts[3]
    diff = entries.nth(1).locator(".sn-diff")
    before = diff.locator(".sn-diff-before").all_inner_texts()
    after = diff.locator(".sn-diff-after").all_inner_texts()
    assert before == ["1000", f'"Mallory 🦹 {XSS}"'] and after == ["10", '"Alice — アリス 👩"']
    reason = entries.nth(3).locator(".sn-reason-text").inner_text()
    assert reason == f"reason: il faut deux signatures — 二人の承認 {XSS}"
    screenshot(page, "decisions-tab.png")

    view.locator(".sn-tab[data-tab='transcript']").click()
    edited = view.locator(".sn-pane .sn-msg.sn-role-tool .sn-decided-edited")
    edited.wait_for()
    assert edited.locator(".sn-diff-after").all_inner_texts() == ["10", '"Alice — アリス 👩"']
    edited.locator(".sn-diff-whole summary").click()
    assert "Mallory" in edited.locator(".sn-diff-whole .sn-column").first.inner_text()
    rejected = view.locator(".sn-pane .sn-msg.sn-role-tool .sn-decided-rejected")
    assert "二人の承認" in rejected.inner_text()
    assert page.evaluate("window.__xss") is None
    screenshot(page, "decisions-transcript.png")
