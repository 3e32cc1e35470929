"""The view names a plain-function preprocessor by its function's name, in the selector and the
transcript's refusal line."""

from __future__ import annotations

import pytest

import sagents_nb as sn
from sagents_nb.notebook import view

from .test_view import click


def test_the_view_names_function_preprocessors_and_switches_between_them() -> None:
    def no_secrets(scope, message, context):
        if "mot de passe" in message.content:
            raise sn.Rejected("pas de mot de passe — パスワード禁止 🔒")
        return message, message

    def shout(scope, message, context):
        return message, message.model_copy(update={"content": message.content.upper()})

    session = sn.Session(sn.Agent("a"), llm=sn.mock_llm(lambda r: "ok"), preprocessor=no_secrets)
    widget = view(session)
    with pytest.raises(sn.Rejected):
        session.send("mon mot de passe")
    session.preprocessor = shout
    widget.flush()
    assert widget.header["preprocessors"] == ["none", "no_secrets", "shout"]
    assert widget.header["preprocessor"] == "shout"
    (refused,) = [r for r in widget.current_pane()["entries"] if r.get("status") == "refused"]
    assert refused["name"] == "preprocessor no_secrets"
    click(widget, action="preprocessor", name="no_secrets")
    assert session.preprocessor is no_secrets
    widget.close()
