"""The context diff: what entered and left a node's view at each turn, and what it forgot, for
every built-in kind, on scripted conversations (French, Chinese, Japanese, emoji)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb._base.messages import Message, system, user
from sagents_nb._runtime.turns import SUMMARY_INSTRUCTIONS, storage_runs
from sagents_nb.events import ContextBuilt
from sagents_nb.notebook._context_pane import NATIVE_NOTE, context_pane
from sagents_nb.notebook._projector import Projector


def project(session: sn.Session) -> Projector:
    projector = Projector()
    for event in session.events:
        projector.fold(event)
    return projector


def diffs(projector: Projector, path: str) -> list[dict[str, Any]]:
    node = projector.nodes[path]
    return [context_pane(node, i)["changes"] for i in range(len(node.turn_log))]


def texts(rows: list[dict[str, Any]], change: str | None = None) -> list[str]:
    return [r["text"] for r in rows if change is None or r["change"] == change]


@sn.tool
def note(text: str) -> str:
    """Keep a note.

    Args:
        text: what to note.
    """
    return f"noted: {text}"


def delegate(request: sn.ChatRequest) -> Any:
    """The parent passes each message on to `keeper` and answers with its reply; `keeper`
    answers a summary request with a summary and anything else with a fixed line."""
    if request.system == SUMMARY_INSTRUCTIONS:
        return "Résumé : 长颈鹿 and 火山 were discussed 📝"
    if "task" in request.tools:
        if request.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="keeper", prompt=request.last_user)])
        return f"keeper said: {request.tool_results[-1]}"
    return "d'accord ✅"


# the identity of view messages


def test_runs_name_stored_messages_by_identity_not_text() -> None:
    twin_a, other, twin_b = user("encore 🔁"), user("autre"), user("encore 🔁")
    history = [twin_a, other, twin_b]
    prompt, notice = system("you help"), system("a notice")
    # the same text twice: only identity tells which one the view holds
    assert storage_runs([prompt, twin_b, notice], history) == [1, 2, 1]
    assert storage_runs([prompt, twin_a, other, twin_b], history) == [1, 0, 3]
    assert storage_runs([prompt, twin_a, twin_b], history) == [1, 0, 1, 2, 2, 1]
    summary = Message(role="system", content="Summary", meta={"summary": True})
    assert storage_runs([prompt, summary, other], [summary, other]) == [1, 0, 2]
    assert storage_runs([prompt, user("encore 🔁")], history) == []  # an edited copy: view-only


@pytest.mark.parametrize(
    "kind",
    [
        sn.kinds.Main(top_k=1, recent=1),
        sn.kinds.Main(top_k=None),
        sn.kinds.Realtime(window=1),
        sn.kinds.Resident(keep_recent=1),
        sn.kinds.Resident(relevance=False),
        sn.kinds.Worker(),
    ],
    ids=repr,
)
def test_the_runs_a_kind_gives_are_the_ones_identity_finds(kind: sn.kinds.ChildKind) -> None:
    replies = iter([sn.reply(tool_calls=[sn.call("note", text="🦒")]), "un", "deux", "trois"])
    session = sn.Session(
        sn.Agent("a", tools=[note], instructions="aide 🤝", kind=kind),
        llm=sn.mock_llm(lambda request: next(replies)),
    )
    for text in ("girafe", "火山", "税"):
        session.send(text).result()
    node = session.root
    view = kind.build_context(node, node.input_text)
    assert getattr(view, "runs", None) is not None
    assert view.runs == storage_runs(view, node.history)  # type: ignore[attr-defined]


def test_every_turn_says_which_stored_messages_its_view_held(team_session: sn.Session) -> None:
    result = team_session.send("go").result()
    built = [e for e in result.events if isinstance(e, ContextBuilt)]
    assert built and all(e.from_storage is not None for e in built)
    for event in built:
        held = sum(event.from_storage[2::3])  # type: ignore[index]
        assert held == event.storage_messages - event.hidden


# Worker


def test_worker_adds_every_turn_and_forgets_nothing_up_to_its_salvage() -> None:
    explore = sn.Agent("explore", tools=[note], kind=sn.kinds.Worker(max_turns=2))

    def handler(request: sn.ChatRequest) -> Any:
        if "task" in request.tools:
            if request.last["role"] == "user":
                return sn.reply(tool_calls=[sn.call("task", agent="explore", prompt="cherche 🔍")])
            return "fini"
        if request.last_user.startswith("You have reached"):
            return "résumé: 火山"
        return sn.reply(tool_calls=[sn.call("note", text="la girafe 🦒")])

    session = sn.Session(sn.Agent("lead", team=[explore]), llm=sn.mock_llm(handler))
    session.send("go").result()
    projector = project(session)
    first, second, salvage = diffs(projector, "lead/explore.1")
    assert texts(first["added"]) == ["cherche 🔍"] and first["previous"] is None
    assert [r["role"] for r in second["added"]] == ["assistant", "tool"]
    assert second["kept"] == 1 and not second["removed"]
    assert salvage["added"][-1]["text"].startswith("You have reached the turn limit")
    assert salvage["counts"] == {"added": 3}
    forgotten = context_pane(projector.nodes["lead/explore.1"], None)["forgotten"]
    assert forgotten["total"] == 0 and forgotten["rows"] == []


# Resident


def test_resident_relevance_leaves_out_unrelated_groups_and_brings_them_back() -> None:
    keeper = sn.Agent("keeper", kind=sn.kinds.Resident(keep_recent=1))
    session = sn.Session(sn.Agent("lead", team=[keeper]), llm=sn.mock_llm(delegate))
    for text in ("la girafe mesure cinq mètres 🦒", "火山の灰について", "et la girafe ?"):
        session.send(text).result()
    projector = project(session)
    first, second, third = diffs(projector, "lead/keeper.1")
    assert texts(first["added"]) == ["la girafe mesure cinq mètres 🦒"]
    # the second task shares no term with the first: its input and the reply to it leave
    assert texts(second["removed"], "left out") == [
        "la girafe mesure cinq mètres 🦒",
        "d'accord ✅",
    ]
    reply = second["removed"][1]
    assert reply["why"].startswith("never in view") and reply["seq"] is not None
    assert texts(second["added"]) == ["火山の灰について"]
    # the third names the giraffe again: the first input comes back, the second leaves
    # ... with the reply to it: an input and its answer are one item
    assert texts(third["added"], "recalled") == ["la girafe mesure cinq mètres 🦒", "d'accord ✅"]
    assert "火山の灰について" in texts(third["removed"], "left out")
    forgotten = context_pane(projector.nodes["lead/keeper.1"], None)["forgotten"]
    rows = {r["text"]: r for r in forgotten["rows"]}
    assert rows["火山の灰について"]["left"] == third["turn"]
    assert rows["火山の灰について"]["entered"] == second["turn"]
    assert "la girafe mesure cinq mètres 🦒" not in rows  # back in view
    # as of the second turn, the giraffe was forgotten
    at_second = context_pane(projector.nodes["lead/keeper.1"], 1)["forgotten"]
    assert "la girafe mesure cinq mètres 🦒" in texts(at_second["rows"])


@pytest.mark.parametrize("summary", ["Résumé : 长颈鹿 and 火山 were discussed 📝", ""])
def test_resident_compaction_groups_what_it_summarised_under_the_summary(summary: str) -> None:
    def handler(request: sn.ChatRequest) -> Any:
        if request.system == SUMMARY_INSTRUCTIONS:
            return summary
        return delegate(request)

    keeper = sn.Agent(
        "keeper", kind=sn.kinds.Resident(window_tokens=30, keep_recent=1, relevance=False)
    )
    session = sn.Session(sn.Agent("lead", team=[keeper]), llm=sn.mock_llm(handler))
    for text in ("长颈鹿有多高？" * 3, "火山の灰 🌋 " * 3, "et après ?"):
        session.send(text).result()
    projector = project(session)
    node = projector.nodes["lead/keeper.1"]
    changed = [d for d in diffs(projector, "lead/keeper.1") if d["compactions"]]
    assert changed, "the window is small enough to compact"
    group = changed[0]["compactions"][0]
    how = "summarised" if summary else "truncated"
    assert group["strategy"] == ("summary" if summary else "truncation")
    assert group["replaced"] and {r["change"] for r in group["replaced"]} == {how}
    assert "长颈鹿有多高？" in group["replaced"][0]["text"]
    # the reply to it was compacted before any view showed it: forgotten too
    assert group["replaced"][1]["text"] == "d'accord ✅"
    assert group["replaced"][1]["why"].startswith("never in view")
    if summary:
        assert group["summary_text"] == summary
        assert summary in group["summary"]["text"]
    else:
        assert group["summary"] is None
    assert changed[0]["counts"][how] == len(group["replaced"])
    forgotten = context_pane(node, None)["forgotten"]
    first = next(r for r in forgotten["rows"] if r["text"].startswith("长颈鹿"))
    assert first["change"] == how and first["seq"] == group["seq"]


# Realtime


def test_realtime_window_trims_the_oldest_turn_groups() -> None:
    replies = iter(["un 🥇", "二", "三 🎌"])
    agent = sn.Agent("live", kind=sn.kinds.Realtime(window=1))
    session = sn.Session(agent, llm=sn.mock_llm(lambda request: next(replies)))
    for text in ("premier message 🇫🇷", "第二条消息", "三番目のメッセージ"):
        session.send(text).result()
    projector = project(session)
    first, second, third = diffs(projector, "live")
    assert texts(first["added"]) == ["premier message 🇫🇷"]
    assert texts(second["removed"], "trimmed") == ["premier message 🇫🇷", "un 🥇"]
    trim = second["removed"][0]
    assert trim["seq"] is not None and "window" in trim["why"]
    assert texts(second["added"]) == ["第二条消息"] and second["kept"] == 0
    assert texts(third["removed"], "trimmed") == ["第二条消息", "二"]
    forgotten = context_pane(projector.nodes["live"], None)["forgotten"]
    assert [(r["text"], r["left"]) for r in forgotten["rows"]] == [
        ("第二条消息", 3),
        ("二", 3),
        ("premier message 🇫🇷", 2),
        ("un 🥇", 2),
    ]
    assert forgotten["rows"][1]["never_shown"] is True  # the reply never was in a view


# Main


def test_main_top_k_sinks_recalls_and_names_the_recall_tools_answer() -> None:
    # the first note answers the input and is one item with it (an input with its reply)
    topics = iter(
        ["📋 liste du jour", "la hauteur de la girafe 🦒", "火山の灰 volcano ash", "税表 tax forms"]
    )

    def handler(request: sn.ChatRequest) -> Any:
        if request.last_user.startswith("tell"):
            topic = next(topics, None)
            if topic is not None:
                return sn.reply(tool_calls=[sn.call("note", text=topic)])
            return "all noted"
        if "recall" in request.tools and request.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("recall", query="volcano")])
        return "answered"

    agent = sn.Agent("main", tools=[note], kind=sn.kinds.Main(top_k=1, recent=1))
    session = sn.Session(agent, llm=sn.mock_llm(handler))
    session.send("tell me about tax forms").result()
    session.send("and the girafe hauteur?").result()
    projector = project(session)
    turns = diffs(projector, "main")
    sunk = turns[4]
    assert texts(sunk["removed"], "sunk") == ["", "noted: la hauteur de la girafe 🦒"]
    assert "relevance" in sunk["removed"][0]["why"] and sunk["removed"][0]["seq"]
    back = turns[5]
    assert texts(back["added"], "recalled") == ["", "noted: la hauteur de la girafe 🦒"]
    assert back["added"][0]["calls"] == ["note"]
    # the earlier input left with its reply, the note that answered it
    assert texts(back["removed"], "sunk")[:3] == [
        "tell me about tax forms",
        "",
        "noted: 📋 liste du jour",
    ]
    answer = turns[6]["added"]
    assert [r["why"] for r in answer if r["role"] == "tool"] == ["the recall tool's answer"]
    forgotten = context_pane(projector.nodes["main"], None)["forgotten"]
    rows = {r["text"]: r for r in forgotten["rows"]}
    assert rows["noted: 税表 tax forms"]["change"] == "sunk"
    assert rows["all noted"]["never_shown"] is True
    assert "noted: la hauteur de la girafe 🦒" not in rows  # back in view since turn 6
    volcano = rows["noted: 火山の灰 volcano ash"]
    assert (volcano["entered"], volcano["left"]) == (4, 6)


def test_main_without_top_k_keeps_everything_in_view() -> None:
    agent = sn.Agent("main", tools=[note], kind=sn.kinds.Main(top_k=None))
    replies = iter([sn.reply(tool_calls=[sn.call("note", text="😀")]), "ok", "encore"])
    session = sn.Session(agent, llm=sn.mock_llm(lambda request: next(replies)))
    session.send("un").result()
    session.send("deux").result()
    projector = project(session)
    assert all(not d["removed"] and d["known"] for d in diffs(projector, "main"))
    assert context_pane(projector.nodes["main"], None)["forgotten"]["total"] == 0


# logs and children without a diff


def test_a_log_from_before_from_storage_says_it_cannot_tell(team_session: sn.Session) -> None:
    team_session.send("go").result()
    projector = Projector()
    for event in team_session.events:
        if isinstance(event, ContextBuilt):
            event = event.model_copy(update={"from_storage": None})
        projector.fold(event)
    (first, *_) = diffs(projector, "coordinator")
    assert first["known"] is False and "does not say" in first["note"]


def test_the_diff_survives_a_store_and_a_reopen(tmp_path: Path) -> None:
    agent = sn.Agent("live", kind=sn.kinds.Realtime(window=1))
    replies = iter(["un", "deux"])
    path = tmp_path / "s.db"
    session = sn.Session(agent, llm=sn.mock_llm(lambda r: next(replies)), store=path)
    session.send("premier 🇫🇷").result()
    session.send("second").result()
    before = diffs(project(session), "live")
    assert texts(before[1]["removed"], "trimmed") == ["premier 🇫🇷", "un"]
    reopened = sn.Session.open(path, session.id, agent=agent)
    assert diffs(project(reopened), "live") == before


@pytest.fixture
def fake_cli(tmp_path: Path) -> str:
    """tests/harness' fake CLI behind an executable (see tests/harness/conftest.py)."""
    launcher = tmp_path / "fake-cli"
    script = Path(__file__).parents[1] / "harness" / "fake_cli.py"
    launcher.write_text(
        f"#!{sys.executable}\nimport runpy\nrunpy.run_path({str(script)!r}, run_name='__main__')\n"
    )
    launcher.chmod(0o755)
    return str(launcher)


@pytest.mark.timeout(60)
def test_a_native_child_has_no_view_and_its_parent_still_diffs(fake_cli: str) -> None:
    import os

    driver = sn.harness.ClaudeCode(executable=fake_cli)
    env = {**os.environ, "FAKE_CLI_MODE": "happy"}
    coder = sn.Agent("coder", does="codes", kind=sn.kinds.Native(driver, env=env))

    def handler(request: sn.ChatRequest) -> Any:
        if not request.tool_results:
            return sn.reply(tool_calls=[sn.call("task", agent="coder", prompt="écris 🐍")])
        return f"done: {request.tool_results[0]}"

    session = sn.Session(sn.Agent("boss", team=[coder]), llm=sn.mock_llm(handler))
    session.send("go").result()
    projector = project(session)
    pane = context_pane(projector.nodes["boss/coder.1"], None)
    assert pane["changes"] is None and pane["note"] == NATIVE_NOTE
    second = diffs(projector, "boss")[1]
    assert [r["role"] for r in second["added"]] == ["assistant", "tool"]
    assert json.dumps(second, ensure_ascii=False)  # JSON-able
