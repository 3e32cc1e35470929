"""A kind written outside the package is a full citizen: it runs, compacts, is stored with its
own state, reopens with that state, and shows in the view, with no change to sagents_nb.

The kinds here are written against the public port, `sn.kinds.Child`, and mypy checks this file
strictly (pyproject.toml), as it would a user's module.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb._endpoints.mock import Reply
from sagents_nb.events import Compaction, Event, WindowTrim
from sagents_nb.kinds import BaseKind, Child, CompactionReport, View
from sagents_nb.notebook._context_pane import context_pane
from sagents_nb.notebook._panes import Focus, pane_state
from sagents_nb.notebook._projector import Projector
from sagents_nb.notebook._tree import tree_state

from .settled import settled

pytestmark = pytest.mark.timeout(60)


@dataclass
class LedgerBook:
    inputs: list[str] = field(default_factory=list)
    compactions: int = 0


class Ledger(BaseKind):
    """A persistent child that notes every input it is given, and folds all but its newest
    `keep` messages into a note of those inputs once storage holds more than `limit`."""

    name = "ledger"
    persistent = True

    def __init__(self, keep: int = 1, limit: int = 4) -> None:
        self.keep = keep
        self.limit = limit

    def book(self, child: Child) -> LedgerBook:
        book = child.state_of(self.name, LedgerBook)
        if book is None:
            book = child.kind_state[self.name] = LedgerBook()
        return book

    def append_history(self, child: Child, *messages: sn.Message) -> None:
        inputs = self.book(child).inputs
        inputs.extend(m.content or "" for m in messages if m.role == "user")
        child.append(*messages)

    async def maintain(self, child: Child) -> None:
        if len(child.history) > self.limit:
            await self.compact(child)

    async def compact(self, child: Child, keep_recent: int | None = None) -> CompactionReport:
        keep = self.keep if keep_recent is None else keep_recent
        book = self.book(child)
        older, recent = child.history[:-keep], child.history[-keep:]
        before = child.context_tokens()
        note = "Inputs so far: " + "; ".join(book.inputs)
        summary = sn.Message(role="system", content=note, meta={"summary": True})
        child.replace_history([summary, *recent])
        book.compactions += 1
        after = child.context_tokens()
        child.emit(
            Compaction(
                strategy="summary",
                reason="ledger",
                before_tokens=before,
                after_tokens=after,
                removed=len(older),
                summary=note,
            )
        )
        return CompactionReport("summary", before, after, len(older), note)

    def dump_state(self, child: Child) -> Any:
        book = child.state_of(self.name, LedgerBook)
        if book is None:
            return None
        return {"inputs": list(book.inputs), "compactions": book.compactions}

    def load_state(self, child: Child, state: Any) -> None:
        book = self.book(child)
        book.inputs = list(state["inputs"])
        book.compactions = state["compactions"]


def team() -> sn.Agent:
    """The agents as code builds them (again after a restart): a fresh kind each time."""
    scribe = sn.Agent("scribe", does="keeps a ledger", kind=Ledger())
    return sn.Agent("lead", does="leads", team=[scribe])


def handler(req: sn.ChatRequest) -> Reply | str:
    if "task" in req.tools:
        if req.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="scribe", prompt=req.last_user)])
        return f"lead: {req.tool_results[-1]}"
    return f"noted {req.last_user}"


def project(events: Sequence[Event]) -> Projector:
    projector = Projector()
    for event in events:
        projector.fold(event)
    return projector


def test_a_custom_kind_runs_compacts_is_stored_reopened_and_shown(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    lead = team()
    session = sn.Session(lead, llm=sn.mock_llm(handler), store=db)
    for word in ("alpha", "bravo", "charlie"):
        assert session.send(word).result().text == f"lead: noted {word}"
    scribe = session.node("lead/scribe.1")
    assert scribe is not None and session.root.persistent["scribe"] is scribe
    assert [n.path for n in session.root.order] == ["lead/scribe.1"]  # one child, three tasks
    kind = lead.team[0].kind
    assert isinstance(kind, Ledger)
    book = kind.book(scribe)
    assert book.inputs == ["alpha", "bravo", "charlie"]
    assert book.compactions == 1
    assert scribe.history[0].content == "Inputs so far: alpha; bravo; charlie"
    assert [e.path for e in session.events if e.type == "compaction"] == ["lead/scribe.1"]

    again_lead = team()  # a kernel restart: the agents come from code again
    again = sn.Session.open(db, session.id, agent=again_lead, llm=sn.mock_llm(handler))
    restored = again.node("lead/scribe.1")
    assert restored is not None and again.root.persistent["scribe"] is restored
    again_kind = again_lead.team[0].kind
    assert isinstance(again_kind, Ledger) and again_kind is not kind
    assert again_kind.book(restored) == LedgerBook(["alpha", "bravo", "charlie"], 1)
    assert [m.model_dump() for m in restored.history] == [m.model_dump() for m in scribe.history]
    # stored as the kind dumped it, tagged with its name, class and constructor arguments
    with sqlite3.connect(settled(db)) as con:
        (stored,) = con.execute(
            "SELECT body FROM nodes WHERE path = 'lead/scribe.1' AND part = 'kind' "
            "ORDER BY seq DESC LIMIT 1"
        ).fetchone()
    assert stored == (
        '{"kind":"ledger","class":"tests.test_custom_kind:Ledger","given":[[],{}],'
        '"state":{"inputs":["alpha","bravo","charlie"],"compactions":1}}'
    )

    assert again.send("delta").result().text == "lead: noted delta"
    assert again_kind.book(restored).inputs == ["alpha", "bravo", "charlie", "delta"]
    assert again.send("echo").result().status == "done"
    assert again_kind.book(restored).compactions == 2  # the count went on from the stored one
    assert restored.history[0].content == "Inputs so far: alpha; bravo; charlie; delta; echo"

    projector = project(again.events)
    (child,) = tree_state(projector)["children"]
    assert (child["id"], child["kind"], child["status"]) == ("lead/scribe.1", "ledger", "done")
    pane = context_pane(projector.nodes["lead/scribe.1"], None)
    assert pane["kind"] == "ledger"
    assert [m["type"] for m in pane["markers"]] == ["compaction", "compaction"]
    marks = [row["mark"] for row in pane["detail"]["storage"]]
    assert "summarised" in marks and "summary" in marks
    timeline = pane_state(projector, Focus("lead/scribe.1", "compaction"), None, {})["entries"]
    assert [e["title"] for e in timeline] == ["compaction by summary"] * 2
    assert timeline[-1]["text"] == "Inputs so far: alpha; bravo; charlie; delta; echo"


class Glimpse(BaseKind):
    """Shows the model only the newest message, and says so with a window trim."""

    name = "glimpse"

    def build_context(self, child: Child, input: str) -> View:
        view = View([*child.system_messages(), *child.history[-1:]])
        if len(child.history) > 1:
            child.emit(
                WindowTrim(
                    dropped_groups=len(child.history) - 1,
                    kept_groups=1,
                    before_tokens=child.history_tokens,
                    after_tokens=sum(map(child.token_count, view)),
                )
            )
        return view


def test_the_view_names_a_custom_kinds_hidden_items_from_its_events() -> None:
    @sn.tool
    def look(what: str) -> str:
        """Look.

        Args:
            what: at what.
        """
        return f"saw {what}"

    def glance(req: sn.ChatRequest) -> Reply | str:
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("look", what="the sky")])
        return "blue"

    session = sn.Session(sn.Agent("eye", tools=[look], kind=Glimpse()), llm=sn.mock_llm(glance))
    assert session.send("what colour?").result().text == "blue"
    pane = context_pane(project(session.events).nodes["eye"], None)
    assert [m["type"] for m in pane["markers"]] == ["window_trim"]
    marks = [row["mark"] for row in pane["detail"]["storage"]]
    assert marks == ["trimmed", "trimmed", "in view"]


class Recording(BaseKind):
    """Notes each input it is delivered, with the child's path and whether it was busy."""

    name = "recording"

    def __init__(self, log: list[tuple[str, str | None, bool]]) -> None:
        self.log = log

    def deliver(self, child: Child, message: sn.Message, interrupt: bool = False) -> bool:
        self.log.append((child.path, message.content, child.busy))
        return super().deliver(child, message, interrupt)


def test_every_input_reaches_a_child_through_deliver() -> None:
    delivered: list[tuple[str, str | None, bool]] = []
    helper = sn.Agent("helper", does="helps", kind=Recording(delivered))
    lead = sn.Agent("lead", team=[helper], kind=Recording(delivered))

    def handler(req: sn.ChatRequest) -> Reply | str:
        if "task" in req.tools and req.last["role"] == "user":
            return sn.reply(
                tool_calls=[sn.call("task", agent="helper", prompt="sub-" + req.last_user)]
            )
        return f"done {req.last_user}"

    session = sn.Session(lead, llm=sn.mock_llm(handler))
    assert session.send("one").result().status == "done"
    assert session.retry().result().status == "done"  # goes on from storage: no new input
    assert session.send("two").result().status == "done"
    assert delivered == [
        ("lead", "one", False),
        ("lead/helper.1", "sub-one", False),
        ("lead", "two", False),
        ("lead/helper.2", "sub-two", False),
    ]


class Counting(BaseKind):
    """Counts the turns it prepares, and tells the store each time."""

    name = "counting"

    def prepare(self, child: Child) -> None:
        child.kind_state[self.name] = (child.state_of(self.name, int) or 0) + 1
        child.state_changed()

    def dump_state(self, child: Child) -> Any:
        return child.state_of(self.name, int)

    def load_state(self, child: Child, state: Any) -> None:
        child.kind_state[self.name] = state


def three_turns(req: sn.ChatRequest) -> Reply | str:
    done = len(req.tool_results)
    return sn.reply(tool_calls=[sn.call("look", what=str(done))]) if done < 2 else "seen"


@sn.tool
def look(what: str) -> str:
    """Look.

    Args:
        what: at what.
    """
    return f"saw {what}"


def test_state_changed_stores_a_kinds_state_mid_task(tmp_path: Path) -> None:
    agent = sn.Agent("counter", tools=[look], kind=Counting())
    session = sn.Session(agent, llm=sn.mock_llm(three_turns), store=tmp_path / "runs.db")
    assert session.send("go").result().text == "seen"
    assert session.root.kind_state["counting"] == 3
    second = [e for e in session.events if e.type == "model_request"][1]
    fork = session.fork(at=second.seq)
    assert fork.root.kind_state["counting"] == 2  # as it was at that request


class Unstorable(Counting):
    name = "unstorable"

    def dump_state(self, child: Child) -> Any:
        return {"when": object()}


def test_a_state_that_is_not_json_is_logged_and_the_session_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "runs.db"
    agent = sn.Agent("counter", tools=[look], kind=Unstorable())
    session = sn.Session(agent, llm=sn.mock_llm(three_turns), store=db)
    with caplog.at_level("WARNING", logger="sagents_nb"):
        assert session.send("go").result().text == "seen"
        assert session.send("again").result().text == "seen"
    told = [r.getMessage() for r in caplog.records if "could not dump its state" in r.getMessage()]
    assert len(told) == 1 and "'unstorable' kind of counter" in told[0]
    again = sn.Session.open(db, session.id, agent=agent, llm=sn.mock_llm(three_turns))
    assert len(again.root.history) == len(session.root.history)
    assert "unstorable" not in again.root.kind_state


class Unloadable(Counting):
    name = "counting"

    def load_state(self, child: Child, state: Any) -> None:
        raise ValueError("this version reads another shape")


def test_a_kind_that_cannot_load_its_state_says_so_on_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "runs.db"
    session = sn.Session(
        sn.Agent("counter", tools=[look], kind=Counting()),
        llm=sn.mock_llm(three_turns),
        store=db,
    )
    session.send("go").result()
    # the same kind class, its code changed since: it cannot read what it stored
    monkeypatch.setattr(Counting, "load_state", Unloadable.load_state)
    broken = sn.Agent("counter", tools=[look], kind=Counting())
    with pytest.raises(sn.StoreError, match=r"'counting' kind of counter could not load its st"):
        sn.Session.open(db, session.id, agent=broken)
    monkeypatch.undo()
    fixed = sn.Session.open(db, session.id, agent=sn.Agent("counter", kind=Counting()))
    assert fixed.root.kind_state["counting"] == 3


class HandingBack(BaseKind):
    """A persistent kind that never writes an input itself (the seed's queue-type kind): each
    one goes the skeleton's way. It is offered inputs mid-task too, and hands those back."""

    name = "handing-back"
    persistent = True
    interrupts = True

    def __init__(self) -> None:
        self.offers: list[tuple[str, bool]] = []

    def deliver(self, child: Child, message: sn.Message, interrupt: bool = False) -> bool:
        self.offers.append((message.content or "", interrupt))
        return False


@sn.tool
async def skim(what: str) -> str:
    """Skim something, slowly.

    Args:
        what: what to skim.
    """
    await asyncio.sleep(0.05)
    return f"parcouru {what}"


def handing_back(prompts: Sequence[str]) -> Callable[[sn.ChatRequest], Reply | str]:
    def handler(req: sn.ChatRequest) -> Reply | str:
        if "task" in req.tools:
            if req.last["role"] == "user":
                calls = [sn.call("task", agent="helper", prompt=p) for p in prompts]
                return sn.reply(tool_calls=calls)
            return " | ".join(req.tool_results)
        if req.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("skim", what=req.last_user)])
        return f"fait : {req.last_user}"

    return handler


def test_an_input_a_kind_hands_back_is_queued_and_delivered_not_an_error() -> None:
    kind = HandingBack()
    helper = sn.Agent("helper", does="skims", tools=[skim], kind=kind)
    prompts = ["résumé du rapport 📄", "要約して"]
    session = sn.Session(sn.Agent("lead", team=[helper]), llm=sn.mock_llm(handing_back(prompts)))
    result = session.send("go").result()
    assert result.status == "done"
    assert result.text == "fait : résumé du rapport 📄 | fait : 要約して"
    # the second arrived while the child worked: offered as an interrupt, handed back, so it
    # waited and was delivered when the child was free
    assert kind.offers == [(prompts[0], False), (prompts[1], True), (prompts[1], False)]
    child = session.node("lead/helper.1")
    assert child is not None
    assert [m.content for m in child.history if m.role == "user"] == prompts
    assert session.send("encore ✓").result().status == "done"


def test_every_node_a_kind_is_given_is_a_child() -> None:
    seen: list[object] = []

    class Watching(BaseKind):
        name = "watching"

        def prepare(self, child: Child) -> None:
            seen.append(child)

    helper = sn.Agent("helper", does="helps", kind=Watching())
    lead = sn.Agent("lead", team=[helper], kind=Watching())

    def handler(req: sn.ChatRequest) -> Reply | str:
        if "task" in req.tools and req.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="helper", prompt="sous-tâche 子")])
        return "fini ✓"

    assert sn.Session(lead, llm=sn.mock_llm(handler)).send("go").result().text == "fini ✓"
    assert len(seen) == 3 and all(isinstance(child, Child) for child in seen)
