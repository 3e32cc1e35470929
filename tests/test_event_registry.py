"""One registry per event type: a new event shown in the view, defined here with no change to the
package, is journaled, stored and reloaded, drawn by the hypothesis strategy, projected, given a
trace line, and left out of the Timing tab on purpose: the table of event folds has no gap."""

from __future__ import annotations

import json
import sqlite3
import typing
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import find

import sagents_nb as sn
from sagents_nb import events
from sagents_nb._runtime.journal import is_plain
from sagents_nb._runtime.trace import LINES, describe
from sagents_nb._tools.hooks import ToolCallInfo
from sagents_nb.events import Event, _event_classes, parse_event
from sagents_nb.notebook._context_pane import context_pane
from sagents_nb.notebook._log_panes import events_pane
from sagents_nb.notebook._panes import transcript_pane
from sagents_nb.notebook._projector import Projector, handles
from sagents_nb.notebook._timings import FOLD as TIMINGS
from sagents_nb.notebook._timings import Span, Timings

from .folds import FOLDS, gaps, matrix
from .settled import settled
from .strategies import events as any_event

NOTE = "budget dépassé · 预算超支 · 予算オーバー 🚨 `tokens > budget`"


class BudgetWarning(Event):
    """A node's tokens passed its budget (the new event: this class is all the registry needs)."""

    type: Literal["budget_warning"] = "budget_warning"
    tokens: int
    budget: int
    note: str = ""
    ends_step = True


@handles(BudgetWarning, chart="over budget")
def _budget_warning(projector: Projector, event: BudgetWarning) -> None:
    """Its view handling: a timeline mark (charted) and a transcript line."""
    node = projector.node(event.path)
    projector.mark(node, event, f"{event.tokens} tokens of {event.budget}", note=event.note)
    node.transcript.append(event)


@LINES.handles(BudgetWarning)
def _budget_line(event: BudgetWarning) -> str:
    """Its trace line (a consumer that sees every event handles it or ignores it)."""
    return f"over budget: {event.tokens} tokens of {event.budget}"


TIMINGS.ignore(BudgetWarning)  # it takes no time of its own and reports no tokens


class BudgetWatch:
    """The emitter: a tool hook that warns after every tool call of the run."""

    session: sn.Session | None = None

    def after_tool(self, call: ToolCallInfo, result: sn.ToolResult) -> None:
        assert self.session is not None
        node = self.session.root.find(call.path)
        assert node is not None
        node.emit(BudgetWarning(tokens=120, budget=100, note=NOTE))


@sn.tool
def lookup(word: str) -> str:
    """Look a word up."""
    return f"{word}: found"


def handler(req: sn.ChatRequest) -> sn.Reply | str:
    if req.last["role"] == "user":
        return sn.reply(tool_calls=[sn.call("lookup", word="éléphant")])
    return "done"


def test_a_new_event_is_journaled_stored_drawn_and_projected(tmp_path: Path) -> None:
    agent = sn.Agent("a", tools=[lookup])
    watch = BudgetWatch()
    db = tmp_path / "runs.db"
    session = watch.session = sn.Session(agent, llm=sn.mock_llm(handler), store=db, hooks=[watch])
    assert session.send("go").result().text == "done"
    warned = [e for e in session.events if isinstance(e, BudgetWarning)]
    assert [(e.path, e.tokens, e.note) for e in warned] == [("a", 120, NOTE)]

    # journaled: committed as its fields (all plain), one row of its type
    assert is_plain(BudgetWarning)
    session.flush()
    with sqlite3.connect(settled(db)) as conn:
        rows = conn.execute("SELECT body FROM events WHERE type = 'budget_warning'").fetchall()
    assert [json.loads(body)["note"] for (body,) in rows] == [NOTE]

    # stored and reloaded
    again = sn.Session.open(db, session.id, agent=agent)
    assert [e for e in again.events if isinstance(e, BudgetWarning)] == warned
    assert [e.model_dump() for e in again.events] == [e.model_dump() for e in session.events]

    # drawn by the hypothesis strategy every property test uses
    drawn = find(any_event(), lambda e: isinstance(e, BudgetWarning) and e.tokens > 0)
    assert parse_event(drawn.model_dump_json()) == drawn

    # projected: a timeline mark on the chart, a transcript line, a row of the event log
    projector = Projector()
    for event in again.events:
        projector.fold(event)
    node = projector.nodes["a"]
    assert [(m.type, m.title) for m in node.timeline] == [("budget_warning", "120 tokens of 100")]
    pane = context_pane(node, None)
    assert [m["type"] for m in pane["markers"]] == ["budget_warning"]
    assert ["budget_warning", "over budget"] in pane["legend"]
    lines = transcript_pane(projector, node)["entries"]
    assert [line["role"] for line in lines] == [
        "user",
        "assistant",
        "budget_warning",
        "tool",
        "assistant",
    ]
    assert NOTE in lines[2]["text"]
    log = events_pane(projector, {"budget_warning"}, None, {})
    assert [row["type"] for row in log["rows"]] == ["budget_warning"]
    assert "tokens=120" in log["rows"][0]["headline"]

    # folded by every consumer that sees all events: a line of its own, no span of its own
    assert "over budget: 120 tokens of 100" in describe(warned[0])
    timings = Timings()
    timings.update(again.events)
    nodes = timings.runs[1].nodes.values()
    labels = [span.label for node in nodes for span in node.entries if isinstance(span, Span)]
    assert labels and not [label for label in labels if "budget" in label]
    table = matrix([BudgetWarning])
    assert not gaps([BudgetWarning]), table
    row = table.splitlines()[1].split()
    assert row == ["BudgetWarning", "✓", "·", "✓"]  # view, timings, trace; the rest read none
    assert len(FOLDS) > 3


def test_the_package_events_are_all_in_the_union_and_public() -> None:
    """A package event left out of `AnyEvent` (for type checkers) or `__all__` fails here."""
    mine = [c for c in _event_classes() if vars(events).get(c.__name__) is c]
    union = typing.get_args(events.AnyEvent)
    assert mine == list(union)
    assert {c.__name__ for c in mine} <= set(events.__all__)


def test_a_taken_type_is_refused_and_a_redefined_class_replaces_itself() -> None:
    with pytest.raises(TypeError, match=r"'error' is taken by sagents_nb\.events\.ErrorOccurred"):

        class Clash(Event):
            type: Literal["error"] = "error"

    assert parse_event({"type": "error", "error_type": "E", "message": "m"}).__class__ is (
        events.ErrorOccurred
    )

    def define() -> type[Event]:
        class Rerun(Event):  # as when a notebook cell that defines it runs again
            type: Literal["rerun_cell"] = "rerun_cell"
            n: int

        return Rerun

    first, second = define(), define()
    parsed = parse_event({"type": "rerun_cell", "n": 1})
    assert type(parsed) is second and type(parsed) is not first


def test_a_variant_keeps_its_parents_type() -> None:
    class LoudError(events.ErrorOccurred):
        pass

    assert type(parse_event(LoudError(error_type="E", message="m").model_dump_json())) is (
        events.ErrorOccurred
    )
