"""Real-browser tests of the view's selectors: the preprocessor selector offers what the session
has had, and a refused message shows in the transcript."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks._browser import Lab, open_notebook, run_cell

from .conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

PREPROCESSED = """
import sagents_nb as sn
from sagents_nb.notebook import view

class Shout:
    name = "shout"

    def preprocess(self, scope, message, context):
        return message, message.model_copy(update={"content": message.content.upper()})

class NoSecrets:
    name = "no-secrets"

    def preprocess(self, scope, message, context):
        if "mot de passe" in message.content:
            raise sn.Rejected("pas de mot de passe ici — パスワード禁止 🔒 <b>non</b>")
        return message, message

docs = {"Plan": "Vendredi."}
session = sn.Session(sn.Agent("assistant"), llm=sn.mock_llm(lambda r: "lu ✅"),
                     preprocessor=sn.Mentions(docs))
session.send("voir @Plan").result()
session.preprocessor = Shout()
session.preprocessor = NoSecrets()
view(session)
"""
REFUSED = """
try:
    session.send("mon mot de passe est hunter2")
except sn.Rejected as refusal:
    print("refused:", refusal.reason)
"""


def test_the_preprocessor_selector_and_a_refused_message(page: Any, lab: Lab) -> None:
    open_notebook(page, lab.notebook("preprocessors.ipynb", PREPROCESSED, REFUSED))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    select = view.locator("select.sn-preprocessor")
    select.wait_for()
    options = select.locator("option")
    assert [text.strip() for text in options.all_inner_texts()] == [
        "none",
        "mentions",
        "shout",
        "no-secrets",
    ]
    assert select.input_value() == "no-secrets"
    assert options.evaluate_all("nodes => nodes.some(n => n.disabled)") is False
    run_cell(page, 1)
    page.locator(".jp-OutputArea-output", has_text="refused:").wait_for()
    line = view.locator(".sn-pane .sn-msg", has_text="message refused")
    line.wait_for()
    assert "pas de mot de passe ici — パスワード禁止 🔒 <b>non</b>" in line.inner_text()
    assert line.locator(".sn-status", has_text="refused").count() == 1
    assert "hunter2" not in view.inner_text()
    select.select_option("mentions")
    view.locator(".sn-notice", has_text="preprocessor is now mentions").wait_for()
    assert select.input_value() == "mentions"
    screenshot(page, "live-view-refused.png")
