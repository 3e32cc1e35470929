"""Relevance keeps an input with its answer (issue 30 item 7): in `Main` and `Resident` a question
and the reply to it enter and leave the view together, and the view's events say so."""

from __future__ import annotations

import sagents_nb as sn
from sagents_nb.kinds._relevance import split_groups

ANSWERS = {
    "Quelle est la capitale de la France ? 🇫🇷": "Paris, bien sûr.",
    "寿司の作り方を教えて": "酢飯と新鮮な魚を使います。",
    "长城有多长？": "两万多公里。",
    "🍕🍕 pizza margherita recipe": "Tomato, mozzarella, basil 🌿",
    "Et la capitale de la France, déjà ?": "Toujours Paris.",
}
QUESTION, ANSWER = "Quelle est la capitale de la France ? 🇫🇷", "Paris, bien sûr."


def answer(req: sn.ChatRequest) -> str:
    return ANSWERS[req.last_user]


def stored(view: list[dict], text: str) -> bool:
    return any(m.get("content") == text for m in view)


def test_a_question_and_its_answer_are_one_group_and_a_tool_call_stays_with_its_result() -> None:
    history = [
        sn.Message(role="user", content=QUESTION),
        sn.Message(role="assistant", content=ANSWER),
        sn.Message(role="user", content="长城有多长？"),
        sn.Message(
            role="assistant",
            tool_calls=(sn.ToolCall(id="c1", name="look", arguments='{"q": "长城"}'),),
        ),
        sn.Message(role="tool", tool_call_id="c1", content="21196 km"),
        sn.Message(role="assistant", content="两万多公里。"),
    ]
    spans = [(g.start, g.end) for g in split_groups(history, lambda m: 1)]
    assert spans == [(0, 2), (2, 5), (5, 6)]


def test_main_brings_a_question_back_with_its_answer_and_sinks_them_together() -> None:
    views: list[list[dict]] = []

    def handler(req: sn.ChatRequest) -> str:
        views.append(req.messages)
        return answer(req)

    session = sn.Session(
        sn.Agent("main", kind=sn.kinds.Main(top_k=1, recent=1)), llm=sn.mock_llm(handler)
    )
    for question in list(ANSWERS)[:4]:
        session.send(question).result()
    gone = views[-1]  # asked about pizza: France sank long ago, question and answer alike
    assert not stored(gone, QUESTION) and not stored(gone, ANSWER)
    result = session.send("Et la capitale de la France, déjà ?").result()
    assert result.text == "Toujours Paris."
    back = views[-1]
    assert stored(back, QUESTION) and stored(back, ANSWER)  # the question came back with "Paris"
    sinks = [e for e in session.events if e.type == "cold_sink"]
    france = next(s for s in sinks if any(QUESTION in p for p in s.previews))
    assert any(ANSWER in p for p in france.previews)  # they sank as one item
    restore = next(e for e in result.events if e.type == "cold_restore")
    assert (
        restore.restored == 1 and ANSWER in restore.previews[0] and QUESTION in restore.previews[0]
    )
    built = [e for e in result.events if e.type == "context_built"][-1]
    history = session.root.history
    shown = {
        s + k for v, s, n in zip(*[iter(built.from_storage)] * 3, strict=True) for k in range(n)
    }
    assert {history.index(m) for m in history if m.content in (QUESTION, ANSWER)} <= shown
    assert built.hidden == built.storage_messages - len(shown) == 6


def test_a_resident_shows_a_question_with_its_answer_or_neither() -> None:
    views: list[list[dict]] = []

    def handler(req: sn.ChatRequest) -> str:
        if "task" in req.tools:
            if req.last["role"] == "user":
                return sn.reply(tool_calls=[sn.call("task", agent="keeper", prompt=req.last_user)])
            return req.tool_results[-1]
        views.append(req.messages)
        return answer(req)

    keeper = sn.Agent("keeper", does="remembers", kind=sn.kinds.Resident(keep_recent=1))
    session = sn.Session(sn.Agent("boss", team=[keeper]), llm=sn.mock_llm(handler))
    for question in list(ANSWERS)[:4]:
        session.send(question).result()
    unrelated = views[-1]
    assert not stored(unrelated, QUESTION) and not stored(unrelated, ANSWER)
    result = session.send("Et la capitale de la France, déjà ?").result()
    assert result.text == "Toujours Paris."
    related = views[-1]
    assert stored(related, QUESTION) and stored(related, ANSWER)
    assert not stored(related, "寿司の作り方を教えて") and not stored(
        related, "酢飯と新鮮な魚を使います。"
    )
    shown = [e for e in result.events if e.type == "relevance_view"][-1]
    assert (shown.kept_groups, shown.left_out) == (2, 3)  # France and the new question; 3 topics
    built = [e for e in result.events if e.type == "context_built" and e.path != "boss"][-1]
    assert built.hidden == 6 and built.view_messages == 3


def test_main_keeps_the_current_input_in_view_from_its_first_turn() -> None:
    @sn.tool
    def note(text: str) -> str:
        return f"noté : {text}"

    views: list[list[dict]] = []
    steps = ["un 🥇", "二", "三 🎌", "四"]

    def handler(req: sn.ChatRequest) -> sn.Reply | str:
        views.append(req.messages)
        if len(views) <= len(steps):
            return sn.reply(tool_calls=[sn.call("note", text=steps[len(views) - 1])])
        return "fini"

    agent = sn.Agent("main", tools=[note], kind=sn.kinds.Main(top_k=0, recent=1))
    session = sn.Session(agent, llm=sn.mock_llm(handler))
    assert session.send("Notez ces nombres, s'il vous plaît 📝").result().text == "fini"
    assert all(stored(view, "Notez ces nombres, s'il vous plaît 📝") for view in views)
    assert any(e.type == "cold_sink" for e in session.events)  # the other steps did sink


def test_mains_kept_spans_and_tokens_agree_with_its_groups_through_sinks_and_restores() -> None:
    """Main keeps its hot and cold spans and hot tokens as groups sink and come back (instead of
    walking every group each turn): at each request they equal a count over the groups, and each
    view's `from_storage` equals the runs found by identity."""
    from sagents_nb._runtime.turns import storage_runs
    from sagents_nb.kinds._main import _spans

    kind = sn.kinds.Main(top_k=2, recent=1, budget_tokens=400)
    checked: list[bool] = []

    def handler(req: sn.ChatRequest) -> str:
        state = session.root.kind_state["main"]
        checked.append(
            state.spans == _spans(state.hot)
            and state.cold_spans == _spans(state.cold)
            and state.hot_tokens == sum(g.tokens for g in state.hot)
        )
        return answer(req)

    session = sn.Session(sn.Agent("main", kind=kind), llm=sn.mock_llm(handler))
    for question in [*ANSWERS, QUESTION, "寿司の作り方を教えて"]:
        session.send(question).result()
    assert checked and all(checked)
    events = session.events
    assert any(e.type == "cold_restore" for e in events)
    history = session.root.history
    built = [e for e in events if e.type == "context_built"]
    requests = [e for e in events if e.type == "model_request"]
    for context, request in zip(built, requests, strict=True):
        assert context.from_storage == storage_runs(request.messages, history)


def test_mains_span_helpers_match_merging_the_groups_anew() -> None:
    """Adding and removing group spans in any order keeps the spans `_spans` would merge."""
    import random

    from sagents_nb.kinds._main import _add_span, _remove_span, _spans
    from sagents_nb.kinds._relevance import Group

    rng = random.Random(4)
    for _ in range(200):
        groups = [Group(i, i + 1, 1) for i in range(12)]
        held: list[Group] = []
        spans: list[list[int]] = []
        for group in rng.sample(groups, len(groups)):
            _add_span(spans, group.start, group.end)
            held.append(group)
            if rng.random() < 0.4:
                gone = held.pop(rng.randrange(len(held)))
                _remove_span(spans, gone.start, gone.end)
            assert spans == _spans(held)
