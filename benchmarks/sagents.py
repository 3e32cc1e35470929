"""sagents_nb through its public API on its own mock endpoint (the full wire path).

The runtime builds the JSON body as UTF-8 bytes, `sn.mock_llm` parses them and calls the handler,
the handler answers (O(1): counters, the request's message count, the last message), the mock
serialises the reply to JSON bytes and the runtime parses them (a mock's own requests make no
httpx request or response: the floor's `httpx.MockTransport` does).

Scenarios:
- `fanout`: `parent.run_sync(...)` delegating N times; the headline.
- `fanout-breakpoint`: the same with a predicate breakpoint that never fires
  (`pause_on=sn.when(path="x/never/*", action="tool")`).
- `fanout-session` / `fanout-view`: the same run through `sn.Session(...).send(...).result()`,
  without and with `sagents_nb.notebook.view(session)` attached (no front end).
- `fanout-store`: `run_sync(..., store=store)`: each run a new durable session in one SQLite
  file opened once per process (n/a until the store exists).
- `long`: one agent, N tool calls, `Main(top_k=None)` (full history, like the floor and peers).
- `long-main64`: the same with the default `Main(top_k=64)` relevance view (issue 4).
- `long-realtime`: a `Realtime(window=4)` agent fed N/2 messages, each answered after one tool
  call: N model turns over a growing session (issue 4).
"""

from __future__ import annotations

import atexit
import importlib.util
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import Clock, Unavailable, main

import sagents_nb as sn

_clock = Clock()


@sn.tool
def noop(x: int) -> str:
    """Trivial tool.

    Args:
        x: a number.
    """
    _clock.tools += 1
    return "ok"


WORKER = sn.Agent("worker", does="does a subtask", tools=[noop])
PARENT = sn.Agent("parent", does="delegates", team=[WORKER], max_turns=1000)


def fanout_handler(n: int) -> Callable[[sn.ChatRequest], Any]:
    state = {"parent": 0}

    def handler(req: sn.ChatRequest) -> Any:
        _clock.tick()
        if "task" in req.tools:
            k = state["parent"]
            state["parent"] += 1
            if k < n:
                return sn.reply(tool_calls=[sn.call("task", agent="worker", prompt=f"p{k}")])
            return "done"
        if len(req.body["messages"]) < 5:
            return sn.reply(tool_calls=[sn.call("noop", x=1)])
        return "child done"

    return handler


def long_handler(n: int) -> Callable[[sn.ChatRequest], Any]:
    state = {"turn": 0}

    def handler(req: sn.ChatRequest) -> Any:
        _clock.tick()
        k = state["turn"]
        state["turn"] += 1
        return sn.reply(tool_calls=[sn.call("noop", x=1)]) if k < n else "done"

    return handler


def realtime_handler(req: sn.ChatRequest) -> Any:
    _clock.tick()
    if req.last.get("role") == "user":
        return sn.reply(tool_calls=[sn.call("noop", x=1)])
    return "ok"


def count_tasks(result: sn.Result) -> int:
    """Task calls that ran (read after the run, outside the timed part)."""
    return sum(
        1
        for e in result.events
        if e.type == "tool_call_finished" and getattr(e, "name", "") == "task"
    )


def check(result: sn.Result) -> None:
    if result.status != "done":
        raise RuntimeError(f"run ended {result.status}: {result.text[:200]}")


def fanout(n: int, pause_on: Any = ()) -> Clock:
    llm = sn.mock_llm(fanout_handler(n))
    _clock.begin()
    result = PARENT.run_sync("go", llm=llm, pause_on=pause_on)
    _clock.finish()
    check(result)
    _clock.tools += count_tasks(result)
    return _clock


NEVER = sn.when(path="x/never/*", action="tool")
"""A predicate breakpoint that never fires (`fanout-breakpoint`, issue 28's cost target)."""


def fanout_session(view: bool) -> Callable[[int], Clock]:
    attach: Callable[[sn.Session], Any] | None = None
    if view:
        if importlib.util.find_spec("sagents_nb.notebook") is None:
            raise Unavailable("sagents_nb.notebook does not exist yet")
        from sagents_nb import notebook

        attach = getattr(notebook, "view", None)
        if attach is None:
            raise Unavailable("sagents_nb.notebook has no view(session)")

    def run(n: int) -> Clock:
        session = sn.Session(PARENT, llm=sn.mock_llm(fanout_handler(n)))
        widget = attach(session) if attach is not None else None
        _clock.begin()
        result = session.send("go").result()
        if widget is not None:
            # the last update (which a notebook gets within 1/rate) is timed too: folding the
            # run's events and rendering them
            if hasattr(widget, "flush"):
                widget.flush()
            widget.close()
        _clock.finish()
        check(result)
        _clock.tools += count_tasks(result)
        return _clock

    return run


def store_supported() -> str | None:
    """Why the store scenario cannot run with the installed sagents_nb, or None if it can."""
    if not hasattr(sn.Session, "open"):
        return "no SQLite store in this sagents_nb yet (sn.Session.open is missing)"
    return None


_stores: list[Any] = []


def fanout_store(n: int) -> Clock:
    """The fanout with each run a new durable session in one SQLite file, opened once per
    process as a notebook does (`store = sn.SQLiteStore("runs.db")`, then `store=store`)."""
    reason = store_supported()
    if reason:
        raise Unavailable(reason)
    if not _stores:
        folder = tempfile.mkdtemp(prefix="sn-bench-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _stores.append(sn.SQLiteStore(str(Path(folder) / "runs.db")))
    llm = sn.mock_llm(fanout_handler(n))
    _clock.begin()
    result = PARENT.run_sync("go", llm=llm, store=_stores[0])
    _clock.finish()
    check(result)
    _clock.tools += count_tasks(result)
    return _clock


def long(kind_factory: Callable[[], Any]) -> Callable[[int], Clock]:
    def run(n: int) -> Clock:
        agent = sn.Agent("solo", tools=[noop], kind=kind_factory(), max_turns=n + 5)
        llm = sn.mock_llm(long_handler(n))
        _clock.begin()
        result = agent.run_sync("go", llm=llm)
        _clock.finish()
        check(result)
        return _clock

    return run


def long_realtime(n: int) -> Clock:
    agent = sn.Agent("rt", tools=[noop], kind=sn.kinds.Realtime(window=4))
    session = sn.Session(agent, llm=sn.mock_llm(realtime_handler))
    _clock.begin()
    for i in range(n // 2):
        check(session.send(f"message {i}").result())
    _clock.finish()
    return _clock


if __name__ == "__main__":
    main(
        "sagents_nb",
        sn.__version__,
        {
            "fanout": fanout,
            "fanout-breakpoint": lambda n: fanout(n, pause_on=NEVER),
            "fanout-session": lambda n: fanout_session(view=False)(n),
            "fanout-view": lambda n: fanout_session(view=True)(n),
            "fanout-store": fanout_store,
            "long": long(lambda: sn.kinds.Main(top_k=None)),
            "long-main64": long(lambda: sn.kinds.Main(top_k=64)),
            "long-realtime": long_realtime,
        },
    )
