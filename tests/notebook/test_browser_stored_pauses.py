"""Real-browser tests of the pause cards: a session reopened after SIGKILL shows the pause its
cut run waits at before `resume()`, and approving its card resumes and decides it; a model
pause's card edits the request's messages, which the model receives and Decisions diffs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks._browser import Lab, open_notebook, run_cell

from ..test_breakpoints_crash import killed_at
from .conftest import screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.timeout(150)]

REOPEN = """
import runpy, sys
import sagents_nb as sn

sys.argv = ["bank.py", "unused.db", {log}]
bank = runpy.run_path({script}, run_name="definitions")
llm = sn.mock_llm(bank["bank"])
session = sn.Session.open({db}, {session_id}, agent=bank["BOSS"], llm=llm)
session
"""


def test_a_reopened_sessions_stored_pause_is_a_card_that_approving_resumes(
    page: Any, lab: Lab, tmp_path: Path
) -> None:
    session_id, db, log, _ = killed_at(tmp_path, "tool")
    code = REOPEN.format(
        log=json.dumps(str(log)),
        script=json.dumps(str(tmp_path / "bank.py")),
        db=json.dumps(str(db)),
        session_id=json.dumps(session_id),
    )
    open_notebook(page, lab.notebook("reopened.ipynb", code))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    card = view.locator(".sn-pending .sn-decision")
    card.wait_for(timeout=30_000)
    text = card.inner_text()
    assert "before tool call transfer from boss/mid.1/audit.1" in text
    assert "waiting for session.resume()" in text
    assert "Mallory 🦹" in card.locator("textarea.sn-edit").input_value()
    assert "incomplete" in view.locator(".sn-run").inner_text()
    screenshot(page, "stored-pause-card.png")
    assert log.read_text(encoding="utf-8") == ""
    card.locator(".sn-approve").click()
    view.locator(".sn-answer", has_text="envoyé 1000 à Mallory 🦹").wait_for(timeout=20_000)
    assert log.read_text(encoding="utf-8") == "transfer 1000 Mallory 🦹\n"
    wait_until(lambda: card.count() == 0, what="the card to go")
    assert "continues from where it was cut" in view.locator(".sn-notice").inner_text()
    view.get_by_role("tab", name="Decisions").click()
    entries = view.locator(".sn-pane .sn-decision-entry")
    wait_until(lambda: entries.count() == 2, what="the cut pause and the one asked again")
    assert "interrupted" in entries.nth(0).inner_text()
    assert "approved tool call transfer" in entries.nth(1).inner_text()


AT_A_MODEL_PAUSE = """
import sagents_nb as sn

seen = []

def answer(request):
    seen.append(request.messages)
    return f"vu {request.last_user}"

session = sn.Session(sn.Agent("boss", instructions="bref 📝"), llm=sn.mock_llm(answer))
run = session.send("<b>avant</b> & 東京", pause_on={"model"})
run.wait()
session
"""


def test_a_model_pauses_messages_are_edited_in_its_card(page: Any, lab: Lab) -> None:
    sent = "print('sent:', [m['content'] for m in seen[0]])"
    open_notebook(page, lab.notebook("edit_messages.ipynb", AT_A_MODEL_PAUSE, sent))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    card = view.locator(".sn-pending .sn-decision")
    card.wait_for(timeout=30_000)
    card.locator(".sn-messages-edit summary").click()
    editors = card.locator("textarea.sn-message-edit")
    assert editors.count() == 2
    assert json.loads(editors.nth(1).input_value()) == {
        "role": "user",
        "content": "<b>avant</b> & 東京",
    }
    assert card.locator("b").count() == 0, "the untrusted text is shown as text"
    edited = {"role": "user", "content": "après ✍ <i>東京</i> 🎉"}
    editors.nth(1).fill(json.dumps(edited, ensure_ascii=False))
    screenshot(page, "model-pause-edit-messages.png")
    card.locator(".sn-edit-messages").click()
    view.locator(".sn-answer", has_text="vu après ✍ <i>東京</i> 🎉").wait_for(timeout=15_000)
    view.get_by_role("tab", name="Decisions").click()
    diff = view.locator(".sn-pane .sn-messages-diff")
    diff.wait_for()
    row = diff.locator("tr.sn-diff-changed")
    assert "#2" in row.inner_text()
    assert row.locator(".sn-diff-before").inner_text() == "user: <b>avant</b> & 東京"
    assert row.locator(".sn-diff-after").inner_text() == "user: après ✍ <i>東京</i> 🎉"
    assert view.locator(".sn-pane i").count() == 0
    run_cell(page, 1)
    printed = page.locator(".jp-OutputArea-output", has_text="sent:")
    printed.wait_for()
    assert "sent: ['bref 📝', 'après ✍ <i>東京</i> 🎉']" in printed.inner_text()
