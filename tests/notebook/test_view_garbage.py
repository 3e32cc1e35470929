"""Views opened and closed run after run leave Python's cycle collector collecting: a view's
push pauses it for its work, and once promoted everything young straight to the oldest
generation, which reset the collector's counts, so that no full collection came and each run's
cyclic garbage stayed (400 runs of the fanout benchmark held 220 MB)."""

from __future__ import annotations

import gc
from typing import Any

import sagents_nb as sn
from sagents_nb import notebook
from sagents_nb._runtime.restore import PROMOTE_AT, collector_paused


@sn.tool
def note(text: str) -> str:
    """Keep a note.

    Args:
        text: the note.
    """
    return f"noté {text} 東京 🍣"


WORKER = sn.Agent("worker", does="écrit", tools=[note])
BOSS = sn.Agent("boss", team=[WORKER])


def handler(req: sn.ChatRequest) -> Any:
    if "task" in req.tools:
        if req.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="worker", prompt="écris 🍵")] * 2)
        return "fini"
    if req.last["role"] == "user":
        return sn.reply(tool_calls=[sn.call("note", text="thé")])
    return "ok"


def oldest(value: object) -> bool:
    return any(o is value for o in gc.get_objects(generation=2))


def test_a_small_paused_block_leaves_its_objects_young_and_a_big_one_promotes_them() -> None:
    with collector_paused():
        small = [{"n": n} for n in range(100)]
    assert not oldest(small)
    with collector_paused():
        big = [{"n": n} for n in range(PROMOTE_AT)]
    assert oldest(big)


def test_views_opened_run_after_run_leave_no_growing_garbage() -> None:
    gc.collect()
    for i in range(150):
        session = sn.Session(BOSS, llm=sn.mock_llm(handler))
        view = notebook.view(session)
        assert session.send(f"tour {i} 🌸").result().text == "fini"
        view.flush()
        view.close()
    left = gc.collect()
    assert left < 30_000  # the old promotion left ~50,000 here, and more each run
