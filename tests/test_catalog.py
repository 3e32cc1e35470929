"""`sn.browse` and the catalog under it: each stored session summed up from a few fields of its
events (runs, status, tokens, cost), the same from a store that skims and one that loads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sagents_nb as sn
from sagents_nb._runtime.catalog import catalog
from sagents_nb.notebook._browse import session_row
from sagents_nb.store import MemoryStore, SkimmingStore


def handler(request: Any) -> Any:
    if "task" in request.tools:
        if request.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="scout", prompt="mesure 東京")])
        return "fini ✓ 🎉"
    if request.last["role"] == "user":
        return sn.reply(tool_calls=[sn.call("add", a=1, b=2)])
    return "北京 — ça marche"


@sn.tool
def add(a: int, b: int) -> int:
    """Add.

    Args:
        a: one.
        b: two.
    """
    return a + b


def boss() -> sn.Agent:
    return sn.Agent("boss", team=[sn.Agent("scout", does="mesure", tools=[add])])


def fill(store: Any) -> dict[str, Any]:
    """Four sessions: two runs done, one paused, one new, and a fork of the first."""
    llm = sn.mock_llm(handler)
    done = sn.Session(boss(), llm=llm, store=store)
    first = done.send("Où ?").result()
    second = done.send("Et après ?").result()
    paused = sn.Session(boss(), llm=llm, store=store)
    run = paused.send("pause", pause_on={"tool"})
    assert run.wait() == "paused"
    fresh = sn.Session(boss(), llm=llm, store=store)
    fork = done.fork(at=first_event(done, "run_finished"))
    for session in (done, paused, fresh, fork):
        session.flush()
    return {
        "done": (done, first.usage.total_tokens + second.usage.total_tokens),
        "paused": (paused, None),
        "fresh": (fresh, None),
        "fork": (fork, first.usage.total_tokens),
    }


def first_event(session: sn.Session, kind: str) -> int:
    return next(e.seq for e in session.events if e.type == kind)


def check(summaries: list[Any], made: dict[str, Any]) -> None:
    by_id = {s.id: s for s in summaries}
    done, tokens = made["done"]
    assert (by_id[done.id].runs, by_id[done.id].status, by_id[done.id].tokens) == (
        2,
        "done",
        tokens,
    )
    paused = by_id[made["paused"][0].id]
    assert (paused.runs, paused.status) == (1, "paused")
    fresh = by_id[made["fresh"][0].id]
    assert (fresh.runs, fresh.status, fresh.tokens) == (0, "new", 0)
    fork_session, fork_tokens = made["fork"]
    fork = by_id[fork_session.id]
    assert (fork.parent, fork.status, fork.tokens) == (done.id, "done", fork_tokens)
    assert fork.fork_seq is not None and fork.runs == 1
    assert by_id[done.id].cost.usd is None  # the mock has no price: none, never 0


def test_a_file_store_is_summed_up_in_one_skim(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    made = fill(str(path))
    assert isinstance(sn.SQLiteStore(path), SkimmingStore)
    check(catalog(str(path)), made)


def test_a_store_that_cannot_skim_is_summed_up_the_same(tmp_path: Path) -> None:
    store = MemoryStore()
    assert not isinstance(store, SkimmingStore)
    made = fill(store)
    check(catalog(store), made)


def test_prices_given_price_the_cost_column(tmp_path: Path) -> None:
    path = str(tmp_path / "runs.db")
    fill(path)
    summaries = catalog(path, prices={"mock": {"input": 1.0, "output": 2.0}})
    done = max(summaries, key=lambda s: s.runs)
    assert done.cost.estimated_usd and done.cost.estimated_usd > 0
    assert session_row(done)["cost"].endswith("estimated")


def test_the_browser_lists_searches_and_opens_a_session(tmp_path: Path) -> None:
    path = str(tmp_path / "runs.db")
    made = fill(path)
    browser = sn.browse(path, agents=boss(), llm=sn.mock_llm(handler))
    rows = {row["id"]: row for row in browser.table.rows}
    fork = rows[made["fork"][0].id]
    assert fork["fork"].startswith(f"fork of {made['done'][0].id} at #")
    assert "paused" in rows[made["paused"][0].id]["search"]
    paused_id = made["paused"][0].id
    browser._clicked(None, {"type": "open", "id": paused_id}, None)
    assert browser.table.opened == paused_id and browser.session is not None
    assert [p.action for p in browser.session.pending] == ["tool"]  # resumable: its agent given
    browser._clicked(None, {"type": "open", "id": "nope"}, None)
    assert "no session 'nope'" in browser.table.notice and browser.table.opened == paused_id


def test_the_search_folds_accents_as_the_front_end_does(tmp_path: Path) -> None:
    path = str(tmp_path / "runs.db")
    sn.Session(sn.Agent("Zürich_café"), llm=sn.mock_llm(lambda r: "ok")).send("x").result()
    session = sn.Session(sn.Agent("Zürich_café"), llm=sn.mock_llm(lambda r: "ok"), store=path)
    session.send("x").result()
    session.flush()
    (row,) = [session_row(summary) for summary in catalog(path)]
    assert "zurich_cafe" in row["search"] and row["agent"] == "Zürich_café"
