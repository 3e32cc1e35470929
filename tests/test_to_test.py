"""`session.to_test(...)`: a stepped session becomes a pytest file that replays it offline; the
suite runs each generated test in its own pytest process, then changes the lesson or the
recording to see it fail."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

import sagents_nb as sn
from sagents_nb._runtime.replay_source import render

pytestmark = pytest.mark.timeout(300)

LESSON = '''\
"""A bank: the boss delegates to a teller, who asks an auditor before moving money."""

import sagents_nb as sn


@sn.tool
def balance(account: str) -> str:
    """An account's balance.

    Args:
        account: whose.
    """
    return f"{account} : 1 000 € — 残高あり"


@sn.tool
def transfer(amount: int, to: str) -> str:
    """Move money.

    Args:
        amount: how much, in euros.
        to: to whom.
    """
    return f"virement de {amount} € à {to} ✅"


auditor = sn.Agent("auditor", does="checks balances", tools=[balance])
teller = sn.Agent("teller", does="moves money", tools=[transfer], team=[auditor])
boss = sn.Agent("boss", does="runs the bank", team=[teller])
'''


def lesson_module(folder: Path, monkeypatch: pytest.MonkeyPatch, source: str = LESSON) -> Any:
    """`lesson.py` written in `folder` and imported afresh, as the notebook would have it."""
    (folder / "lesson.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "lesson", raising=False)
    return importlib.import_module("lesson")


def run_pytest(folder: Path, name: str = "test_lesson.py") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", name],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=180,
    )


def assert_passes(folder: Path, name: str = "test_lesson.py") -> None:
    passed = run_pytest(folder, name)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "4 passed" in passed.stdout


def assert_fails(folder: Path, *shown: str) -> None:
    failed = run_pytest(folder)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    for text in shown:
        assert text in failed.stdout


def load(path: Path) -> ModuleType:
    """The generated file as a module (its constants), imported as pytest would."""
    spec = importlib.util.spec_from_file_location(f"generated_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bank_model(req: sn.ChatRequest) -> Any:
    """The recording's model: each agent delegates or calls its tool once, then reports."""
    if req.agent == "boss":
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("task", agent="teller", prompt=req.last_user)])
        return f"Fait : {req.tool_results[-1]}"
    if req.agent == "teller":
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("task", agent="auditor", prompt="solde ?")])
        if len(req.tool_results) == 1:
            return sn.reply(tool_calls=[sn.call("transfer", amount=1000, to="Mallory")])
        return f"teller: {req.tool_results[-1]}"
    if not req.tool_results:
        return sn.reply(tool_calls=[sn.call("balance", account="Alice")])
    return f"auditor: {req.tool_results[-1]}"


def stepped_bank(lesson: Any) -> sn.Session:
    """Two messages stepped at depth 3: the auditor's call approved, the teller's transfer
    edited (10 to Alice, not 1000 to Mallory), then rejected with a reason."""
    session = sn.Session(lesson.boss, llm=sn.mock_llm(bank_model))
    run = session.send("Envoie l'argent, s'il te plaît", pause_on={"tool"})
    assert run.wait(timeout=30) == "paused" and run.paused_at.name == "balance"
    assert run.paused_at.path == "boss/teller.1/auditor.1"
    run.approve()
    assert run.wait(timeout=30) == "paused" and run.paused_at.name == "transfer"
    run.edit(amount=10, to="Alice")
    assert run.result(timeout=30).text == "Fait : teller: virement de 10 € à Alice ✅"
    second = session.send("Encore une fois « 再び »", pause_on={"tool"})
    second.wait(timeout=30)
    second.approve()
    assert second.wait(timeout=30) == "paused" and second.paused_at.name == "transfer"
    second.reject("trop d'argent — 多すぎる")
    assert "rejected this call: trop d'argent" in second.result(timeout=30).text
    return session


def test_a_stepped_depth_three_session_replays_and_fails_when_the_lesson_or_a_reply_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = stepped_bank(lesson_module(tmp_path, monkeypatch))
    written = session.to_test(tmp_path / "test_lesson.py", agents="lesson:boss")
    assert written == tmp_path / "test_lesson.py"
    source = written.read_text(encoding="utf-8")
    assert "from lesson import boss as AGENT" in source
    assert "importable" in source and "tools run for real" in source  # the docstring says so
    generated = load(written)
    decisions = [(p["at"]["path"], p["decision"]) for run in generated.RUNS for p in run["pauses"]]
    assert decisions == [
        ("boss/teller.1/auditor.1", "approve"),
        ("boss/teller.1", "edit"),
        ("boss/teller.2/auditor.1", "approve"),
        ("boss/teller.2", "reject"),
    ]
    assert generated.RUNS[0]["pauses"][1]["edit"] == {"arguments": {"amount": 10, "to": "Alice"}}
    assert generated.RUNS[1]["pauses"][1]["reason"] == "trop d'argent — 多すぎる"
    assert [path for path, _ in generated.TREE] == [
        "boss",
        "boss/teller.1",
        "boss/teller.1/auditor.1",
        "boss/teller.2",
        "boss/teller.2/auditor.1",
    ]

    assert_passes(tmp_path)

    # the lesson's tool answers otherwise: the replay's tool results differ
    changed = LESSON.replace("virement de {amount} €", "virement refusé de {amount} €")
    (tmp_path / "lesson.py").write_text(changed, encoding="utf-8")
    assert_fails(tmp_path, "FAILED test_lesson.py::test_tool_results", "virement refusé de 10 €")
    (tmp_path / "lesson.py").write_text(LESSON, encoding="utf-8")

    # a recorded reply changed: the boss's answer of the first run
    head, replies = source.split("\nREPLIES = ", 1)
    answer = '"Fait : teller: virement de 10 € à Alice ✅"'  # as the file writes it
    assert replies.count(answer) == 1
    written.write_text(
        head + "\nREPLIES = " + replies.replace(answer, repr("Fait : autre chose")), "utf-8"
    )
    assert_fails(
        tmp_path, "FAILED test_lesson.py::test_each_run_answers_as_recorded", "autre chose"
    )


@pytest.mark.parametrize(
    ("before", "after", "shown"),
    [
        # the teller's task call is refused: the auditor never pauses, and the replay says so
        ("team=[auditor]", "team=[]", ("never paused before", "boss/teller.1/auditor.1")),
        # the boss now pauses before delegating, where the recording did not
        (
            'boss = sn.Agent("boss"',
            'boss = sn.Agent("boss", pause_on={"task"}',
            ("paused before {'path': 'boss', 'action': 'task'", "does not have"),
        ),
    ],
)
def test_a_lesson_changed_otherwise_fails_the_replay_at_its_first_divergence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str, after: str, shown: tuple
) -> None:
    session = stepped_bank(lesson_module(tmp_path, monkeypatch))
    session.to_test(tmp_path / "test_lesson.py", agents="lesson:boss")
    assert before in LESSON
    (tmp_path / "lesson.py").write_text(LESSON.replace(before, after), encoding="utf-8")
    assert_fails(tmp_path, *shown)


TRICKY = [
    "guillemets \"doubles\" et 'simples', triple \"\"\" et ''' et \\ barre \\n pas un saut",
    "Café crème, naïveté — « déjà vu »",
    "中文：你好，世界。日本語：こんにちは、世界。🚀🎉👩🏽‍💻",
    '"""\nimport os; os._exit(3)\n"""  # si ce texte devenait du code',
    "def f(x):\n    return x ** 2  # code\n\tindent\x00nul\u2028ligne",
]


def test_texts_round_trip_as_data_whatever_they_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lesson = lesson_module(
        tmp_path,
        monkeypatch,
        textwrap.dedent(
            '''\
            import sagents_nb as sn


            @sn.tool
            def echo(text: str) -> str:
                """Say it back.

                Args:
                    text: what.
                """
                return "écho : " + text


            boss = sn.Agent("boss", tools=[echo])
            '''
        ),
    )

    def model(req: sn.ChatRequest) -> Any:
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("echo", text=req.last_user)])
        return f"{req.tool_results[-1]} | {req.last_user}"

    session = sn.Session(lesson.boss, llm=sn.mock_llm(model))
    answers = [session.send(text).result(timeout=30).text for text in TRICKY]
    assert answers == [f"écho : {text} | {text}" for text in TRICKY]
    path = session.to_test(tmp_path / "test_tricky.py", agents="lesson:boss")
    compile(path.read_text(encoding="utf-8"), str(path), "exec")
    generated = load(path)  # importing it runs no text as code (os._exit would end this test)
    assert [run["message"] for run in generated.RUNS] == TRICKY
    assert [run["answer"] for run in generated.RUNS] == answers
    calls = [c for reply in generated.REPLIES["boss"] for c in reply["tool_calls"]]
    assert [json.loads(call["arguments"])["text"] for call in calls] == TRICKY
    assert_passes(tmp_path, "test_tricky.py")


HELPER_LESSON = '''\
import sagents_nb as sn


@sn.tool
def lookup(word: str) -> str:
    """Look a word up.

    Args:
        word: the word.
    """
    return f"{word} : trouvé — 見つけた"


helper = sn.Agent("helper", does="looks things up", tools=[lookup])
boss = sn.Agent("boss", team=[helper])
'''


def helper_model(req: sn.ChatRequest) -> Any:
    if req.agent == "boss":
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("task", agent="helper", prompt=req.last_user)])
        note = f" [{req.last['content']}]" if req.last.get("role") == "system" else ""
        return f"boss: {req.tool_results[-1]}{note}"
    if not req.tool_results:
        return sn.reply(tool_calls=[sn.call("lookup", word=req.last_user)])
    return f"helper: {req.tool_results[-1]}"


def test_step_approve_edits_at_model_pauses_resume_cancel_and_a_pause_left_open_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lesson = lesson_module(tmp_path, monkeypatch, HELPER_LESSON)
    session = sn.Session(lesson.boss, llm=sn.mock_llm(helper_model))
    first = session.send("chat", pause_on={"model"})
    assert first.wait(timeout=30) == "paused" and first.paused_at.action == "model"
    first.step()  # the boss's task call pauses next, though pause_on names only "model"
    assert first.wait(timeout=30) == "paused" and first.paused_at.action == "task"
    first.approve()
    assert first.wait(timeout=30) == "paused" and first.paused_at.path == "boss/helper.1"
    first.edit(reply="Réponse éditée « ok » 編集済み")
    assert first.wait(timeout=30) == "paused" and first.paused_at.path == "boss"
    messages = [*first.paused_at.messages, sn.Message(role="system", content="Sois bref.")]
    first.edit(messages=messages)
    assert first.result(timeout=30).text == "boss: Réponse éditée « ok » 編集済み [Sois bref.]"
    second = session.send("chien", pause_on={"model"})
    second.wait(timeout=30)
    second.resume()  # the helper's model calls go ahead unpaused
    assert second.result(timeout=30).text == "boss: helper: chien : trouvé — 見つけた"
    third = session.send("oiseau", pause_on={"tool"})
    assert third.wait(timeout=30) == "paused" and third.paused_at.name == "lookup"
    third.cancel()
    assert third.result(timeout=30).status == "cancelled"
    fourth = session.send("poisson", pause_on={"task"})
    assert fourth.wait(timeout=30) == "paused"

    path = session.to_test(tmp_path / "test_lesson.py", agents="lesson:boss")
    generated = load(path)
    pauses = [[(p["at"]["action"], p["decision"]) for p in run["pauses"]] for run in generated.RUNS]
    assert pauses == [
        [("model", "step"), ("task", "approve"), ("model", "edit"), ("model", "edit")],
        [("model", "resume")],
        [("tool", "cancel")],
        [("task", "leave")],
    ]
    edits = [p["edit"] for p in generated.RUNS[0]["pauses"][2:]]
    assert edits[0] == {"reply": {"role": "assistant", "content": "Réponse éditée « ok » 編集済み"}}
    assert edits[1]["messages"][-1] == {"role": "system", "content": "Sois bref."}
    assert "boss/helper.1" not in generated.REPLIES  # its only reply was the edit's
    assert [(r["status"], r["answer"]) for r in generated.RUNS][2:] == [
        ("cancelled", "the run was cancelled"),
        ("paused", None),
    ]
    assert_passes(tmp_path)


def test_a_session_on_a_real_endpoint_replays_what_it_received_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lesson = lesson_module(tmp_path, monkeypatch, HELPER_LESSON)

    def served(req: sn.ChatRequest) -> Any:  # a served mock does not know the node: read the body
        if "task" in req.tools:
            if not req.tool_results:
                return sn.reply(tool_calls=[sn.call("task", agent="helper", prompt="mot")])
            return "boss: " + req.tool_results[-1]
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("lookup", word="mot")])
        return "helper: " + req.tool_results[-1]

    key = "sk-test-to-test-0123456789abcdef"
    with sn.MockServer(sn.mock_llm(served)) as server:
        llm = sn.LLM(base_url=server.openai_base_url, api_key=key, model="gpt-test")
        session = sn.Session(lesson.boss, llm=llm)
        run = session.send("Cherche « mot »", pause_on={"tool"})
        assert run.wait(timeout=30) == "paused"
        run.edit(word="mot juste")
        assert run.result(timeout=30).text == "boss: helper: mot juste : trouvé — 見つけた"
    path = session.to_test(tmp_path / "test_lesson.py", agents="lesson:boss")
    source = path.read_text(encoding="utf-8")
    assert key not in source and server.openai_base_url not in source
    assert load(path).MODEL == "gpt-test"
    assert_passes(tmp_path)  # the server is closed: the replay needs none


@pytest.fixture
def bank(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> sn.Session:
    lesson = lesson_module(tmp_path, monkeypatch)
    session = sn.Session(lesson.boss, llm=sn.mock_llm(bank_model))
    session.send("go").result(timeout=30)
    return session


@pytest.mark.parametrize(
    ("agents", "message"),
    [
        ("lesson.boss", "as 'module:attribute'"),
        ("lesson:boss:x", "as 'module:attribute'"),
        ("lesson:boss; import os", "is not a Python name"),
        ("lesson:class", "is not a Python name"),
        ("leçon_absente:boss", "no module 'leçon_absente' here nor beside the test file"),
        ("lesson:chef", "lesson has no attribute 'chef'; name the variable"),
        ("lesson:boss.name.x", "lesson.boss.name has no attribute 'x'"),
        ("lesson:transfer", "is a Tool, not an sn.Agent"),
        ("lesson:teller", "is agent 'teller', but this session's top agent is 'boss'"),
    ],
)
def test_an_agents_spec_that_does_not_import_is_refused_at_to_test(
    bank: sn.Session, tmp_path: Path, agents: str, message: str
) -> None:
    with pytest.raises(sn.ConfigurationError, match=re.escape(message)):
        bank.to_test(tmp_path / "test_lesson.py", agents=agents)
    assert not (tmp_path / "test_lesson.py").exists()


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("raise RuntimeError('leçon cassée')\n", "RuntimeError: leçon cassée"),
        (
            "import module_absent_ici\n",
            "ModuleNotFoundError: No module named 'module_absent_ici'",
        ),  # not the lesson
    ],
)
def test_a_lesson_that_fails_to_import_is_refused_with_its_error(
    bank: sn.Session, tmp_path: Path, source: str, error: str
) -> None:
    (tmp_path / "broken.py").write_text(source, encoding="utf-8")
    with pytest.raises(
        sn.ConfigurationError, match=re.escape(f"importing 'broken' failed ({error}")
    ):
        bank.to_test(tmp_path / "test_lesson.py", agents="broken:boss")


def test_a_lesson_beside_the_test_file_imports_as_pytest_will(
    bank: sn.Session, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "tests"
    elsewhere.mkdir()
    (elsewhere / "lecon_voisine.py").write_text("from lesson import boss\n", encoding="utf-8")
    path = bank.to_test(elsewhere / "test_lesson.py", agents="lecon_voisine:boss")
    assert "from lecon_voisine import boss as AGENT" in path.read_text(encoding="utf-8")
    assert str(elsewhere) not in sys.path


def test_bad_paths_are_refused_and_nothing_is_overwritten(bank: sn.Session, tmp_path: Path) -> None:
    with pytest.raises(sn.ConfigurationError, match=re.escape("should end in .py")):
        bank.to_test(tmp_path / "test_lesson.txt", agents="lesson:boss")
    with pytest.raises(sn.ConfigurationError, match="would shadow the module 'lesson'"):
        bank.to_test(tmp_path / "lesson.py", agents="lesson:boss")
    existing = tmp_path / "test_lesson.py"
    existing.write_text("# mine\n", encoding="utf-8")
    with pytest.raises(sn.ConfigurationError, match="exists; pass overwrite=True"):
        bank.to_test(existing, agents="lesson:boss")
    assert existing.read_text(encoding="utf-8") == "# mine\n"
    bank.to_test(existing, agents="lesson:boss", overwrite=True)
    assert "REPLIES" in existing.read_text(encoding="utf-8")


def test_a_session_with_no_runs_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lesson = lesson_module(tmp_path, monkeypatch)
    session = sn.Session(lesson.boss, llm=sn.mock_llm(bank_model))
    with pytest.raises(sn.ConfigurationError, match="no runs to replay; send a message"):
        session.to_test(tmp_path / "test_lesson.py", agents="lesson:boss")


def test_a_request_that_got_no_reply_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lesson = lesson_module(tmp_path, monkeypatch)
    failing = sn.mock_llm(lambda req: httpx.Response(400, json={"error": {"message": "non"}}))
    session = sn.Session(lesson.boss, llm=failing)
    assert session.send("go").result(timeout=30).status == "error"
    with pytest.raises(
        sn.ConfigurationError, match=re.escape("'boss''s model request (turn 1) got no reply")
    ):
        session.to_test(tmp_path / "test_lesson.py", agents="lesson:boss")


def test_a_run_cancelled_while_it_ran_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lesson = lesson_module(tmp_path, monkeypatch)
    started = threading.Event()

    async def slow(req: sn.ChatRequest) -> str:
        started.set()
        await asyncio.sleep(30)
        return "trop tard"

    session = sn.Session(lesson.boss, llm=sn.mock_llm(slow))
    run = session.send("go")
    assert started.wait(timeout=30)
    run.cancel()
    assert run.result(timeout=30).status == "cancelled"
    with pytest.raises(sn.ConfigurationError, match="run 1 was cancelled while it ran"):
        session.to_test(tmp_path / "test_lesson.py", agents="lesson:boss")


OWN_ENDPOINTS_LESSON = """\
import sagents_nb as sn


def own(req: sn.ChatRequest) -> str:
    return f"{req.agent} répond sur {req.model} ✍️"


class Scribe(sn.Task):
    task_name = "scribe"
    description = "writes things down"
    model_override = sn.mock_llm(own, model="scribe-model")


helper = sn.Agent("helper", does="helps", model=sn.mock_llm(own, model="helper-model"))
boss = sn.Agent("boss", team=[helper, Scribe])
"""


def test_agents_with_their_own_endpoints_are_replayed_too_and_parallel_pauses_decided(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lesson = lesson_module(tmp_path, monkeypatch, OWN_ENDPOINTS_LESSON)

    def boss_model(req: sn.ChatRequest) -> Any:
        if not req.tool_results:
            helper = sn.call("task", agent="helper", prompt="aide")
            return sn.reply(tool_calls=[helper, sn.call("task", agent="scribe", prompt="note")])
        return " / ".join(req.tool_results)

    session = sn.Session(lesson.boss, llm=sn.mock_llm(boss_model))
    run = session.send("Travaillez ensemble", pause_on={"model"})
    run.wait(timeout=30)
    run.approve()  # the boss's model call
    assert run.wait(timeout=30) == "paused"
    run.approve()
    assert run.wait(timeout=30) == "paused"
    run.approve()
    run.wait(timeout=30)
    run.resume()
    assert run.result(timeout=30).text == (
        "helper répond sur helper-model ✍️ / scribe répond sur scribe-model ✍️"
    )
    path = session.to_test(tmp_path / "test_lesson.py", agents="lesson:boss")
    generated = load(path)
    pauses = generated.RUNS[0]["pauses"]
    assert {p["at"]["path"] for p in pauses[1:3]} == {"boss/helper.1", "boss/scribe.1"}
    # the two children's pauses recorded the other way round: each is still decided as it was
    pauses[1:3] = pauses[2:0:-1]
    names = ("MODEL", "SESSION", "RUNS", "REPLIES", "TREE", "TOOL_RESULTS")
    data = {name: getattr(generated, name) for name in names}
    path.write_text(render(module="lesson", attribute="boss", data=data), encoding="utf-8")
    # the lesson's own endpoints now fail: the replay never asks them
    broken = OWN_ENDPOINTS_LESSON.replace(
        'return f"{req.agent}', 'raise RuntimeError(f"{req.agent}'
    )
    broken = broken.replace('✍️"', '✍️")')
    assert "raise RuntimeError" in broken and 'model} ✍️")' in broken
    (tmp_path / "lesson.py").write_text(broken, encoding="utf-8")
    assert_passes(tmp_path)


def test_a_reopened_session_writes_the_same_test_as_the_live_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lesson = lesson_module(tmp_path, monkeypatch)
    store = tmp_path / "runs.db"
    session = sn.Session(lesson.boss, llm=sn.mock_llm(bank_model, model="modèle"), store=store)
    run = session.send("Envoie", pause_on={"tool"})
    run.wait(timeout=30)
    run.approve()
    run.wait(timeout=30)
    run.reject("non")
    run.result(timeout=30)
    live = session.to_test(tmp_path / "test_live.py", agents="lesson:boss")
    reopened = sn.Session.open(store, session.id, agent=lesson.boss)
    again = reopened.to_test(tmp_path / "test_reopened.py", agents="lesson:boss")
    assert again.read_text(encoding="utf-8") == live.read_text(encoding="utf-8")
    assert load(again).MODEL == "modèle"


def test_a_reply_cut_short_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lesson = lesson_module(tmp_path, monkeypatch)
    chunk = {"choices": [{"index": 0, "delta": {"content": "à moi"}, "finish_reason": None}]}
    cut = httpx.Response(
        200,
        content=f"data: {json.dumps(chunk)}\n\n".encode(),
        headers={"content-type": "text/event-stream"},
    )
    lesson.boss.kind = sn.kinds.Realtime()  # a kind that streams
    session = sn.Session(lesson.boss, llm=sn.mock_llm(lambda req: cut))
    assert session.send("go").result(timeout=30).status == "incomplete"
    with pytest.raises(sn.ConfigurationError, match="'boss''s reply at turn 1 was cut short"):
        session.to_test(tmp_path / "test_lesson.py", agents="lesson:boss")


def test_each_message_is_sent_as_the_model_received_it_after_the_preprocessor(
    bank: sn.Session, tmp_path: Path
) -> None:
    def expand(scope: Any, message: sn.Message, context: Any) -> tuple[sn.Message, sn.Message]:
        llm = message.model_copy(update={"content": f"{message.content} (développé : 展開)"})
        return message, llm

    bank.preprocessor = expand
    bank.send("@dossier").result(timeout=30)
    generated = load(bank.to_test(tmp_path / "test_lesson.py", agents="lesson:boss"))
    assert [run["message"] for run in generated.RUNS] == ["go", "@dossier (développé : 展開)"]


def test_pauses_the_configuration_no_longer_explains_are_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lesson = lesson_module(tmp_path, monkeypatch)
    lesson.teller.pause_on = {"task"}
    session = sn.Session(lesson.boss, llm=sn.mock_llm(bank_model))
    run = session.send("go")
    assert run.wait(timeout=30) == "paused"
    run.approve()
    run.result(timeout=30)
    lesson.teller.pause_on = set()  # as lesson.py has it: the replay would not pause there
    unexplained = "run 1: a pause before task at boss/teller.1, after its start"
    with pytest.raises(sn.ConfigurationError, match=re.escape(unexplained)):
        session.to_test(tmp_path / "test_lesson.py", agents="lesson:boss")
    lesson.teller.pause_on = {"task"}
    assert session.to_test(tmp_path / "test_lesson.py", agents="lesson:boss").exists()


def test_predicate_breakpoints_and_an_edited_reply_at_depth_three_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = sn.Session(lesson_module(tmp_path, monkeypatch).boss, llm=sn.mock_llm(bank_model))
    big = sn.when(path="boss/*", tool="transfer", args=lambda a: a["amount"] > 100)
    run = session.send("Envoie « tout »", pause_on=big)
    assert run.wait(timeout=30) == "paused" and run.paused_at.path == "boss/teller.1"
    run.edit(amount=10, to="Alice")
    assert run.result(timeout=30).text == "Fait : teller: virement de 10 € à Alice ✅"
    audited = sn.when(path="boss/*/auditor.*", action="reply")
    second = session.send("Encore 再び", pause_on={audited, sn.when(tool="balance")})
    assert second.wait(timeout=30) == "paused" and second.paused_at.name == "balance"
    second.approve()
    assert second.wait(timeout=30) == "paused" and second.paused_at.action == "reply"
    second.paused_at.edit(reply="auditor : solde vérifié ✔ 確認済み")
    assert second.result(timeout=30).text == "Fait : teller: virement de 1000 € à Mallory ✅"

    path = session.to_test(tmp_path / "test_lesson.py", agents="lesson:boss")
    generated = load(path)
    first, then = generated.RUNS
    assert first["breakpoints"] == [
        {"path": "boss/*", "action": None, "tool": "transfer", "code": True}
    ]
    assert [p["decision"] for p in then["pauses"]] == ["approve", "edit"]
    assert then["pauses"][1]["edit"] == {"reply": "auditor : solde vérifié ✔ 確認済み"}
    read = generated.TOOL_RESULTS["boss/teller.2"][0]
    assert read[1:] == ["task", "ok", "auditor : solde vérifié ✔ 確認済み"]  # what the teller read
    assert_passes(tmp_path)

    # the recorded edit changed: the teller now reads something else than it did
    source = path.read_text(encoding="utf-8")
    assert source.count('"reply": "auditor : solde vérifié ✔ 確認済み"') == 1
    path.write_text(source.replace('"reply": "auditor : solde vérifié', '"reply": "autre'), "utf-8")
    assert_fails(tmp_path, "FAILED test_lesson.py::test_tool_results")
