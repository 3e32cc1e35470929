"""A preprocessor is named as a user wrote it (not "function"), and one with the wrong signature
is refused when it is set, with the signature a preprocessor needs."""

from __future__ import annotations

import functools
from typing import Any

import pytest

import sagents_nb as sn


def shout(scope, message, context):
    return message, message.model_copy(update={"content": message.content.upper()})


def tagged(tag, scope, message, context):
    return message, message.model_copy(update={"content": f"[{tag}] {message.content}"})


class Scrubber:
    """A callable object, and a method of one."""

    def __call__(self, scope, message, context):
        return message, message

    def clean(self, scope, message, context):
        return message, message


class Tagger:
    def preprocess(self, scope, message, context):
        return message, message


class Named:
    name = "étiquette 東京"

    def preprocess(self, scope, message, context):
        return message, message


def made_in_a_function():
    def nested(scope, message, context):
        return message, message

    return nested


NAMES: dict[str, tuple[Any, str]] = {
    "function": (shout, "shout"),
    "lambda": (lambda scope, message, context: (message, message), "<lambda>"),
    "partial": (functools.partial(tagged, "fr"), "tagged"),
    "partial of partial": (functools.partial(functools.partial(tagged), "ja"), "tagged"),
    "nested function": (made_in_a_function(), "nested"),
    "bound method": (Scrubber().clean, "Scrubber.clean"),
    "callable object": (Scrubber(), "Scrubber"),
    "preprocess method": (Tagger(), "Tagger"),
    "name attribute": (Named(), "étiquette 東京"),
    "built-in": (sn.Mentions({}), "mentions"),
}


@pytest.mark.parametrize("preprocessor, name", NAMES.values(), ids=NAMES.keys())
def test_events_and_the_session_name_a_preprocessor_as_it_was_written(
    preprocessor: Any, name: str
) -> None:
    session = sn.Session(sn.Agent("a"), llm=sn.script("ok", "ok"), preprocessor=preprocessor)
    session.send("déjà vu 🚀").result()
    (done,) = [e for e in session.events if e.type == "message_preprocessed"]
    assert done.preprocessor == name
    assert list(session.preprocessors) == [name]
    session.preprocessor = None
    (swap,) = [e for e in session.events if e.type == "preprocessor_swapped"]
    assert (swap.old, swap.new) == (name, "none")


def test_a_refusing_function_is_named_in_the_refusal_and_a_crashing_one_in_the_error() -> None:
    def no_secrets(scope, message, context):
        if "mot de passe" in message.content:
            raise sn.Rejected("pas de mot de passe — パスワード禁止 🔒")
        raise KeyError("東京")

    session = sn.Session(sn.Agent("a"), llm=sn.script("ok"), preprocessor=no_secrets)
    with pytest.raises(sn.Rejected, match="パスワード禁止"):
        session.send("mon mot de passe")
    (refused,) = [e for e in session.events if e.type == "message_refused"]
    assert refused.preprocessor == "no_secrets"
    with pytest.raises(sn.Rejected) as crashed:
        session.send("bonjour")
    assert str(crashed.value).startswith("preprocessor no_secrets failed (KeyError: '東京')")


WRONG: dict[str, tuple[Any, str]] = {
    "one argument": (lambda message: (message, message), "preprocessor <lambda> takes (message)"),
    "too many": (lambda a, b, c, d: (c, c), "preprocessor <lambda> takes (a, b, c, d)"),
    "method": (
        type("Short", (), {"preprocess": lambda self, message: (message, message)})(),
        "preprocessor Short's preprocess method takes (message)",
    ),
    "class": (Tagger, "preprocessor Tagger is a class; pass an instance, Tagger()"),
    "not callable": ("mentions", "the preprocessor is a str, which cannot be called"),
}


@pytest.mark.parametrize("wrong, says", WRONG.values(), ids=WRONG.keys())
def test_a_wrong_signature_is_refused_when_set_saying_what_is_expected(
    wrong: Any, says: str
) -> None:
    with pytest.raises(sn.ConfigurationError) as made:
        sn.Session(sn.Agent("a"), llm=sn.script("ok"), preprocessor=wrong)
    assert str(made.value).startswith(says)
    if not says.endswith("Tagger()"):
        assert "(scope, message, context) -> (display_message, llm_message)" in str(made.value)
    session = sn.Session(sn.Agent("a"), llm=sn.script("ok"), preprocessor=shout)
    with pytest.raises(sn.ConfigurationError):
        session.preprocessor = wrong
    assert session.preprocessor is shout and list(session.preprocessors) == ["shout"]
    assert not [e for e in session.events if e.type == "preprocessor_swapped"]
    assert session.send("ok").result().status == "done"


def test_keyword_and_variadic_signatures_are_accepted() -> None:
    for fine in (
        lambda *args: (args[1], args[1]),
        lambda scope, message, context=None, extra=1: (message, message),
        lambda scope, *rest, **options: (rest[0], rest[0]),
    ):
        session = sn.Session(sn.Agent("a"), llm=sn.script("ok"), preprocessor=fine)
        assert session.send("x").result().status == "done"


def test_a_variant_with_a_wrong_preprocessor_is_named_before_anything_runs() -> None:
    llm = sn.script("ok")
    with pytest.raises(
        sn.ConfigurationError, match=r"variant 'court': preprocessor <lambda> takes \(m\)"
    ):
        sn.compare(sn.Agent("a"), "x", {"court": {"preprocessor": lambda m: (m, m)}}, llm=llm)
    assert not llm.exchanges
