"""`session.to_test(...)`: a stepped session becomes a pytest file that replays it offline; the
suite runs each generated test in its own pytest process, then changes the lesson or the
recording to see it fail."""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import sagents_nb as sn

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

    passed = run_pytest(tmp_path)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "4 passed" in passed.stdout

    # the lesson's tool answers otherwise: the replay's tool results differ
    changed = LESSON.replace("virement de {amount} €", "virement refusé de {amount} €")
    (tmp_path / "lesson.py").write_text(changed, encoding="utf-8")
    failed = run_pytest(tmp_path)
    assert failed.returncode == 1, failed.stdout
    assert "FAILED test_lesson.py::test_tool_results" in failed.stdout
    assert "virement refusé de 10 € à Alice" in failed.stdout
    (tmp_path / "lesson.py").write_text(LESSON, encoding="utf-8")

    # a recorded reply changed: the boss's answer of the first run
    head, replies = source.split("\nREPLIES = ", 1)
    answer = repr("Fait : teller: virement de 10 € à Alice ✅")
    assert replies.count(answer) == 1
    written.write_text(
        head + "\nREPLIES = " + replies.replace(answer, repr("Fait : autre chose")), "utf-8"
    )
    failed = run_pytest(tmp_path)
    assert failed.returncode == 1, failed.stdout
    assert "FAILED test_lesson.py::test_each_run_answers_as_recorded" in failed.stdout
    assert "autre chose" in failed.stdout


def test_a_team_changed_in_the_lesson_fails_the_replay_at_its_first_divergence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = stepped_bank(lesson_module(tmp_path, monkeypatch))
    session.to_test(tmp_path / "test_lesson.py", agents="lesson:boss")
    without_auditor = LESSON.replace("team=[auditor]", "team=[]")
    (tmp_path / "lesson.py").write_text(without_auditor, encoding="utf-8")
    failed = run_pytest(tmp_path)
    assert failed.returncode == 1, failed.stdout
    # the teller's task call is refused: the auditor never pauses, so the replay says so
    assert "never paused before" in failed.stdout
    assert "boss/teller.1/auditor.1" in failed.stdout


TRICKY = [
    'guillemets "doubles" et \'simples\', triple """ et \'\'\' et \\ barre \\n pas un saut',
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
    passed = run_pytest(tmp_path, "test_tricky.py")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "4 passed" in passed.stdout
