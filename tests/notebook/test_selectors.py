"""The view's preprocessor selector offers what the session has had, and a refused message
leaves a line in the transcript."""

from __future__ import annotations

import pytest

import sagents_nb as sn
from sagents_nb.notebook import view

from .conftest import wait_until
from .test_view import click, notice


class Shout:
    name = "shout"

    def preprocess(self, scope, message, context):
        return message, message.model_copy(update={"content": message.content.upper()})


class NoSecrets:
    name = "no-secrets"

    def preprocess(self, scope, message, context):
        if "mot de passe" in message.content:
            raise sn.Rejected("pas de mot de passe ici — パスワード禁止 🔒")
        return message, message


def test_the_selector_offers_every_preprocessor_the_session_has_had_without_arguments() -> None:
    mentions = sn.Mentions({"Plan": "Vendredi."})
    session = sn.Session(sn.Agent("a"), llm=sn.mock_llm(lambda r: "ok"), preprocessor=mentions)
    session.send("voir @Plan").result()
    shout = Shout()
    session.preprocessor = shout
    session.preprocessor = NoSecrets()
    widget = view(session)
    assert widget.header["preprocessors"] == ["none", "mentions", "shout", "no-secrets"]
    assert widget.header["preprocessor"] == "no-secrets"
    click(widget, action="preprocessor", name="mentions")
    assert session.preprocessor is mentions
    wait_until(lambda: widget.header["preprocessor"] == "mentions")
    click(widget, action="preprocessor", name="none")
    wait_until(lambda: widget.header["preprocessor"] == "none")
    assert session.preprocessor is None
    click(widget, action="preprocessor", name="shout")
    assert session.preprocessor is shout
    # one given to the view is offered besides them
    extra = view(session, preprocessors={"plan": sn.Mentions({"x": "y"})})
    assert extra.header["preprocessors"] == ["none", "mentions", "shout", "no-secrets", "plan"]
    widget.close()
    extra.close()


def test_a_refused_message_leaves_a_transcript_line_saying_why() -> None:
    session = sn.Session(sn.Agent("a"), llm=sn.mock_llm(lambda r: "ok"), preprocessor=NoSecrets())
    widget = view(session)
    with pytest.raises(sn.Rejected):
        session.send("mon mot de passe est hunter2")
    session.send("bonjour").result()
    widget.flush()
    entries = widget.current_pane()["entries"]
    refused = [row for row in entries if row.get("status") == "refused"]
    assert len(refused) == 1, entries
    assert refused[0]["name"] == "preprocessor no-secrets"
    assert "pas de mot de passe ici — パスワード禁止 🔒" in refused[0]["text"]
    assert "hunter2" not in widget.pane
    assert [row["text"] for row in entries if row["role"] == "user"][-1] == "bonjour"
    assert notice(widget) == "" or "refused" not in notice(widget)
    widget.close()
