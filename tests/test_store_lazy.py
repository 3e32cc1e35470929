"""A reopened (or forked) session reads its stored events only when they are looked at: the log
decodes an event the first time it is read, and behaves like the list it was."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path

import pytest

import sagents_nb as sn
from sagents_nb._runtime import restore
from sagents_nb._runtime.eventlog import EventLog

from .settled import settled

pytestmark = pytest.mark.timeout(60)

TURNS = 40


@sn.tool
def step(i: int) -> str:
    """One step of a long job.

    Args:
        i: the step's number.
    """
    return f"étape {i} 完了 ✅"


def long_job() -> object:
    """A mock model that calls `step` TURNS times, then answers; again for each run."""
    calls = iter(range(1_000_000))

    def handler(req: sn.ChatRequest) -> object:
        done = next(calls) % (TURNS + 1)
        if done < TURNS:
            return sn.reply(tool_calls=[sn.call("step", i=done)])
        return "全部 fini 🎉"

    return sn.mock_llm(handler)


def agent() -> sn.Agent:
    return sn.Agent("worker", tools=[step], max_turns=TURNS + 5, kind=sn.kinds.Main(top_k=4))


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The type of every event the restore decodes, in order."""
    seen: list[str] = []
    parse = restore.parse_event

    def counting(data: object) -> sn.events.Event:
        event = parse(data)  # type: ignore[arg-type]
        seen.append(event.type)
        return event

    monkeypatch.setattr(restore, "parse_event", counting)
    return seen


def stored(tmp_path: Path) -> tuple[Path, str, list[dict[str, object]]]:
    db = tmp_path / "runs.db"
    session = sn.Session(agent(), llm=long_job(), store=db)
    session.send("go").result()
    session.send("again").result()
    events = [e.model_dump() for e in session.events]
    session.store.close()
    return db, session.id, events


def test_a_reopened_session_decodes_only_what_is_read(tmp_path: Path, parses: list[str]) -> None:
    db, sid, original = stored(tmp_path)
    assert len(original) > 6 * TURNS
    reopened = sn.Session.open(db, sid, agent=agent())
    assert parses == ["run_finished", "run_finished"]  # the runs' results, nothing else
    log = reopened.events
    assert isinstance(log, EventLog) and len(log) == len(original)
    assert log.undecoded == len(original) - 2
    assert reopened.runs[-1].result().text == "全部 fini 🎉"

    assert log[-1].model_dump() == original[-1] and log[-1] is log[-1]
    assert [e.model_dump() for e in log[-3:]] == original[-3:]
    assert len(parses) == 2 + 2  # the last is the second run's run_finished, decoded already
    assert next(reversed(log)).model_dump() == original[-1]
    assert log.undecoded == len(original) - 4

    first = reopened.runs[0].events
    assert [e.model_dump() for e in first] == original[: len(first)]
    assert log.undecoded == len(original) - len(first) - 3  # and the three read above
    assert [e.model_dump() for e in log] == original
    assert log.undecoded == 0 and len(parses) == len(original)
    assert log == list(log) and log[:2] == list(log)[:2]
    result = reopened.runs[0].result()
    for copied in (pickle.loads(pickle.dumps(result)).events, copy.deepcopy(log[:5])):
        assert [e.model_dump() for e in copied] == [e.model_dump() for e in result.events][
            : len(copied)
        ]


def test_a_reopened_session_goes_on_appending_to_its_log(tmp_path: Path) -> None:
    db, sid, original = stored(tmp_path)
    reopened = sn.Session.open(db, sid, agent=agent(), llm=long_job())
    result = reopened.send("once more").result()
    log = reopened.events
    assert len(log) > len(original) and log.undecoded == len(original) - 2
    assert [e.seq for e in result.events] == list(range(len(original) + 1, len(log) + 1))
    assert [e.seq for e in log] == list(range(1, len(log) + 1))
    forked = reopened.fork(at=len(original))
    assert [e.model_dump() for e in forked.events] == original
    held = {id(m) for m in reopened.journal.stored_messages().values()}
    assert forked.llm_messages and all(id(m) in held for m in forked.llm_messages)  # shared
    reopened.store.close()


def test_a_damaged_event_says_so_when_it_is_read(tmp_path: Path) -> None:
    import sqlite3

    db, sid, _ = stored(tmp_path)
    with sqlite3.connect(settled(db)) as conn:
        conn.execute("UPDATE events SET body = '{' WHERE session = ? AND seq = 3", (sid,))
    reopened = sn.Session.open(db, sid, agent=agent())
    assert reopened.events[4].seq == 5
    with pytest.raises(sn.StoreError, match=r"event 3 .* could not be read back"):
        reopened.events[2]
    reopened.store.close()


def test_messages_read_back_have_caches_of_their_own() -> None:
    body = '{"role":"assistant","content":"東京 🤖","tool_calls":[{"id":"c1","name":"step","arguments":"{}"}]}'
    first, second = sn.Message.model_validate_json(body), sn.Message.model_validate_json(body)
    assert first.to_wire() == second.to_wire() and first.to_wire() is not second.to_wire()
    assert first == second == sn.Message(**first.model_dump())
    assert sn.Message(role="user", content="à").to_wire()["content"] == "à"
