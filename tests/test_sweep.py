"""sn.sweep: many items x variants at bounded concurrency, a progress line, retries, a store that
lets a re-run skip finished runs, and Ctrl-C keeping the finished rows."""

from __future__ import annotations

import _thread
import asyncio
import io
import sys
import threading
import time

import httpx
import pytest

import sagents_nb as sn
from sagents_nb._compare.progress import TerminalProgress

VARIANTS = {"short": {"solo": {"max_turns": 2}}, "long": {"solo": {"max_turns": 5}}}


def echo(req: sn.ChatRequest):
    return f"echo {req.last_user}"


def test_items_can_be_prompts_conversations_or_dicts_and_rows_follow_them() -> None:
    items = [
        "bonjour",
        ["first", "second"],
        {"id": "zh", "prompt": "你好", "lang": "zh"},
        {"prompts": ["a", "🙂"], "id": 7},
    ]
    cmp = sn.sweep(sn.Agent("solo"), items, VARIANTS, llm=sn.mock_llm(echo), progress=False)
    assert [(r["item"], r["variant"]) for r in cmp.rows] == [
        (i, v) for i in (0, 1, "zh", 7) for v in ("short", "long")
    ]
    answers = {(r["item"], r["variant"]): r["answer"] for r in cmp.rows}
    assert answers[(1, "long")] == "echo second" and answers[("zh", "short")] == "echo 你好"
    assert answers[(7, "short")] == "echo 🙂"
    assert cmp.record("short", "zh").meta == {"lang": "zh"}
    assert {r["turns"] for r in cmp.rows if r["item"] == 1} == {2}
    assert cmp.items == [0, 1, "zh", 7] and cmp.variants == ["short", "long"]


def test_concurrency_bounds_the_runs_in_flight() -> None:
    state = {"now": 0, "most": 0}

    async def slow(req):
        state["now"] += 1
        state["most"] = max(state["most"], state["now"])
        await asyncio.sleep(0.02)
        state["now"] -= 1
        return "ok"

    prompts = [f"p{i}" for i in range(8)]
    cmp = sn.sweep(
        sn.Agent("solo"), prompts, VARIANTS, llm=sn.mock_llm(slow), concurrency=3, progress=False
    )
    assert len(cmp.rows) == 16 and {r["status"] for r in cmp.rows} == {"done"}
    assert 2 <= state["most"] <= 3


def test_a_failed_run_is_retried_under_the_stated_policy() -> None:
    def flaky_once():
        seen: set[str] = set()

        def handler(req):
            if req.last_user == "flaky" and "flaky" not in seen:
                seen.add("flaky")
                return httpx.Response(400, json={"error": {"message": "a bad moment"}})
            return "fine"

        return sn.mock_llm(handler)

    agent = sn.Agent("solo")
    one = {"v": {}}
    retried = sn.sweep(agent, ["ok", "flaky"], one, llm=flaky_once(), progress=False)
    assert [(r.status, r.attempts) for r in retried.records] == [("done", 1), ("done", 2)]
    # the factory is shared by both items: make one endpoint for the whole sweep
    endpoint = flaky_once()
    no_retry = sn.sweep(agent, ["flaky"], one, llm=lambda: endpoint, retries=0, progress=False)
    assert no_retry.records[0].status == "error" and "a bad moment" in no_retry.records[0].error
    assert "retries" in sn.sweep.__doc__ and "`done`, `incomplete`" in sn.sweep.__doc__


def test_a_rerun_with_the_same_store_skips_finished_runs(tmp_path) -> None:
    store = tmp_path / "sweep.db"
    broken = {"on": True}
    asked: list[str] = []

    def handler(req):
        asked.append(req.last_user)
        if broken["on"] and req.last_user == "b":
            return httpx.Response(400, json={"error": {"message": "b is broken"}})
        return f"answer to {req.last_user}"

    agent = sn.Agent("solo")
    first = sn.sweep(agent, ["a", "b", "c"], VARIANTS, llm=sn.mock_llm(handler), store=store)
    assert [r["status"] for r in first.rows] == ["done", "done", "error", "error", "done", "done"]
    assert asked.count("b") == 4  # two variants, each tried twice (retries=1)

    broken["on"], asked[:] = False, []
    again = sn.sweep(agent, ["a", "b", "c"], VARIANTS, llm=sn.mock_llm(handler), store=store)
    assert asked == ["b", "b"]  # only the errored runs ran again
    assert [r["status"] for r in again.rows] == ["done"] * 6
    reused = [(r.item, r.variant) for r in again.records if r.reused]
    assert reused == [(0, "short"), (0, "long"), (2, "short"), (2, "long")]
    assert again.record("short", 0).answer == "answer to a"
    assert again.record("long", 1).session_id.endswith("-3")  # attempts 1 and 2 errored

    session = again.open("long", 1)
    assert session.id == again.record("long", 1).session_id
    assert session.display_messages[-1].content == "answer to b"
    assert again.forgetting(item=0).turns["short"]["solo"][0].view[-1].content == "a"
    ids = {s.id for s in sn.Session.list_stored(store)}
    assert {r["session_id"] for r in again.rows} <= ids and len(ids) == 4 + 2 * 3


def press_ctrl_c_while_waiting() -> None:
    """Ctrl-C once the main thread waits for the sweep (in `block_on`), where a person's lands:
    raised earlier, it would hit the main thread still handing the sweep to the loop."""
    main = threading.main_thread().ident

    def waiting() -> bool:
        frame = sys._current_frames().get(main)
        while frame is not None and frame.f_code.co_name != "block_on":
            frame = frame.f_back
        return frame is not None

    def press() -> None:
        while not waiting():
            time.sleep(0.001)
        _thread.interrupt_main()

    threading.Thread(target=press, daemon=True).start()


def test_ctrl_c_cancels_every_run_and_keeps_the_finished_rows(tmp_path) -> None:
    store = tmp_path / "cut.db"
    blocked: list[str] = []
    release = {"on": False}

    async def handler(req):
        if req.last_user.startswith("slow") and not release["on"]:
            blocked.append(req.last_user)
            if len(blocked) == 2:  # both slots hang: the user presses Ctrl-C
                press_ctrl_c_while_waiting()
            await asyncio.Event().wait()
        return f"done {req.last_user}"

    prompts = ["fast0", "fast1", "slow2", "slow3", "fast4"]
    agent = sn.Agent("solo")
    out = io.StringIO()
    cut = sn.sweep(
        agent,
        prompts,
        llm=sn.mock_llm(handler),
        concurrency=2,
        store=store,
        progress=TerminalProgress(out),
    )
    assert cut.interrupted and "(interrupted)" in out.getvalue()
    assert [r["status"] for r in cut.rows] == [
        "done",
        "done",
        "cancelled",
        "cancelled",
        "cancelled",
    ]
    assert cut.rows[0]["answer"] == "done fast0"
    cancelled = cut.record("baseline", 2)
    assert any(e.type == "run_finished" and e.status == "cancelled" for e in cancelled.events)

    release["on"] = True
    finished = sn.sweep(agent, prompts, llm=sn.mock_llm(handler), store=store, progress=False)
    assert [r["status"] for r in finished.rows] == ["done"] * 5
    assert [r.reused for r in finished.records] == [True, True, False, False, False]


def test_the_terminal_progress_line_counts_runs_and_errors() -> None:
    out = io.StringIO()

    def handler(req):
        if req.last_user == "x":
            return httpx.Response(400, json={"error": {"message": "no"}})
        return "ok"

    sn.sweep(
        sn.Agent("solo"),
        ["a", "x", "b"],
        llm=sn.mock_llm(handler),
        retries=0,
        progress=TerminalProgress(out, every=0),
    )
    lines = out.getvalue().split("\r")
    assert lines[1].startswith("sweep 0/3")
    assert lines[-1].startswith("sweep 3/3 · 1 error") and lines[-1].endswith("\n")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prompts": []}, "prompts= is empty"),
        ({"prompts": [{"text": "hi"}]}, r"prompts\[0\] is a dict without 'prompt'"),
        ({"prompts": [{"id": 1, "prompt": "a"}, {"id": 1, "prompt": "b"}]}, "two items"),
        ({"prompts": [3]}, r"prompts\[0\] must be a prompt"),
        ({"concurrency": 0}, "concurrency must be a positive int"),
        ({"retries": -1}, "retries must be an int >= 0"),
        ({"executor": "spark"}, "executor= takes None"),
    ],
)
def test_bad_sweep_arguments_fail_before_anything_runs(kwargs, message) -> None:
    asked = []
    arguments = {"prompts": ["hi"], **kwargs}
    with pytest.raises(sn.ConfigurationError, match=message):
        sn.sweep(
            sn.Agent("solo"),
            arguments.pop("prompts"),
            llm=sn.mock_llm(lambda req: asked.append(req) or "x"),
            **arguments,
        )
    assert asked == []


def test_ray_absent_is_an_import_error_naming_the_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if not installed
    asked = []
    with pytest.raises(ImportError, match=r"pip install 'sagents_nb\[ray\]'"):
        sn.sweep(
            sn.Agent("solo"),
            ["hi"],
            llm=sn.mock_llm(lambda req: asked.append(req) or "x"),
            executor="ray",
        )
    assert asked == []


def test_a_kept_run_holds_its_events_as_one_json_text_not_as_objects() -> None:
    # thousands of kept runs' events as objects made every full garbage collection scan them
    # all: a sweep's per-run cost grew with its length (benchmarks/compare_sweep.py)
    cmp = sn.sweep(sn.Agent("solo"), ["a", "b"], llm=sn.mock_llm(echo), progress=False)
    record = cmp.records[0]
    kept = [v for v in vars(record).values() if isinstance(v, list | tuple)]
    assert all(not isinstance(x, sn.events.Event) for v in kept for x in v)
    assert isinstance(record.log, bytes) and b'"type":"run_finished"' in record.log
    assert [e.type for e in record.events][-1] == "run_finished"  # decoded when asked
    assert cmp.rows[0]["model_calls"] == 1 and cmp.rows[0]["turns"] == 1


def test_a_stored_compare_reopens_a_run_as_its_variant_was_set_up(tmp_path) -> None:
    def shout(scope, message, context):
        return message, message.model_copy(update={"content": message.content.upper()})

    store = tmp_path / "compare.db"
    agent = sn.Agent("solo")
    cmp = sn.compare(
        agent,
        "thé",
        {"plain": {}, "loud": {"preprocessor": shout}},
        llm=sn.mock_llm(echo),
        store=store,
    )
    assert [r["answer"] for r in cmp.rows] == ["echo thé", "echo THÉ"]
    again = sn.compare(
        agent,
        "thé",
        {"plain": {}, "loud": {"preprocessor": shout}},
        llm=sn.mock_llm(echo),
        store=store,
    )
    assert all(r.reused for r in again.records)
    loud = again.open("loud", llm=sn.mock_llm(echo))
    assert loud.preprocessor is shout and loud.llm_messages[0].content == "THÉ"
    assert loud.send("encore").result().text == "echo ENCORE"


class Unusual(BaseException):
    """A BaseException of the user's own."""


RAISED = {
    "SystemExit": lambda: SystemExit(3),
    "KeyboardInterrupt": KeyboardInterrupt,
    "custom": lambda: Unusual("à moi 🙃"),
}


def raising_variant(where: str, raised: BaseException) -> dict[str, object]:
    """A variant that raises `raised` from its endpoint factory, its model or a hook."""

    def factory():
        raise raised

    def model(req: sn.ChatRequest):
        raise raised

    class Hook:
        def before_tool(self, call):
            raise raised

    return {
        "factory": {"llm": factory},
        "model": {"llm": lambda: sn.mock_llm(model)},
        "hook": {"hooks": [Hook()]},
    }[where]


@sn.tool
def lookup(city: str) -> str:
    """Look a city up.

    Args:
        city: its name.
    """
    if city == "raise":
        raise RAISED_BY_TOOL[0]
    return f"{city}: ensoleillé"


RAISED_BY_TOOL: list[BaseException] = []


def calls_lookup(req: sn.ChatRequest):
    if not req.tool_results:
        return sn.reply(tool_calls=[sn.call("lookup", city=req.last_user)])
    return f"vu: {req.tool_results[-1]}"


@pytest.mark.parametrize("entry", ["compare", "sweep"])
@pytest.mark.parametrize("raised", sorted(RAISED))
@pytest.mark.parametrize("where", ["factory", "model", "hook"])
def test_a_base_exception_raised_in_a_variant_is_its_error_row(
    entry: str, raised: str, where: str
) -> None:
    exc = RAISED[raised]()
    variants = {"fine": {}, "bad": raising_variant(where, exc)}
    agent = sn.Agent("solo", tools=[lookup])
    if entry == "compare":
        cmp = sn.compare(agent, "Lyon", variants, llm=lambda: sn.mock_llm(calls_lookup))
    else:
        cmp = sn.sweep(
            agent,
            ["Lyon", "東京"],
            variants,
            llm=lambda: sn.mock_llm(calls_lookup),
            retries=0,
            progress=False,
        )
    assert not cmp.interrupted
    rows = cmp.rows
    assert [r["status"] for r in rows if r["variant"] == "fine"] == ["done"] * len(cmp.items)
    bad = [r for r in rows if r["variant"] == "bad"]
    assert len(bad) == len(cmp.items)
    for row in bad:
        assert row["status"] == "error", row
        assert type(exc).__name__ in row["error"] and str(exc) in row["error"]


@pytest.mark.parametrize("raised", sorted(RAISED))
def test_a_base_exception_raised_by_a_tool_is_answered_and_the_sweep_goes_on(raised: str) -> None:
    RAISED_BY_TOOL[:] = [RAISED[raised]()]
    cmp = sn.sweep(
        sn.Agent("solo", tools=[lookup]),
        ["raise", "Lyon"],
        {"v": {}},
        llm=lambda: sn.mock_llm(calls_lookup),
        progress=False,
    )
    first, second = cmp.records
    assert (first.status, second.status) == ("done", "done")
    assert second.answer == "vu: Lyon: ensoleillé"
    failed = [e for e in first.events if e.type == "tool_call_finished"]
    assert failed[0].status == "error"
    assert f"tool lookup failed: {type(RAISED_BY_TOOL[0]).__name__}" in failed[0].result


def test_a_stored_sweep_creates_its_runs_off_the_loop_with_their_fingerprints(
    tmp_path, monkeypatch
) -> None:
    """Each run's record (with its fingerprint) is created by the store thread in one write:
    the library loop never waits for the store's lock (issue 32)."""
    import threading

    from sagents_nb._store.sqlite.store import SQLiteStore

    made: list[tuple[str, list[str]]] = []
    create = SQLiteStore.create

    def spied(self, rows):
        made.append((threading.current_thread().name, [n.part for n in rows.nodes]))
        return create(self, rows)

    group = SQLiteStore.commit_group

    def spied_group(self, writes):
        for rows, _, _ in writes:
            if rows is not None:
                made.append((threading.current_thread().name, [n.part for n in rows.nodes]))
        return group(self, writes)

    monkeypatch.setattr(SQLiteStore, "create", spied)
    monkeypatch.setattr(SQLiteStore, "commit_group", spied_group)
    agent = sn.Agent("solver", does="answers")
    store = tmp_path / "runs.db"
    cmp = sn.sweep(
        agent, ["a", "b", "c"], llm=lambda: sn.mock_llm(echo), store=store, progress=False
    )
    assert [r["status"] for r in cmp.rows] == ["done"] * 3
    assert len(made) == 3
    assert all(name != "sagents_nb-loop" for name, _ in made), made
    assert all(parts == ["state", "fingerprint"] for _, parts in made), made
    again = sn.sweep(
        agent, ["a", "b", "c"], llm=lambda: sn.mock_llm(echo), store=store, progress=False
    )
    assert [r["reused"] for r in again.rows] == [True] * 3


def test_young_collections_are_rarer_while_a_sweep_runs_and_as_before_after() -> None:
    """A sweep raises the collector's first threshold while it runs (a run's cyclic garbage is
    then freed young rather than by full collections) and puts the process's back after; a
    higher one of the process's own is kept."""
    import gc

    from sagents_nb._compare.record import YOUNG_THRESHOLD

    seen: list[int] = []

    def model(req: sn.ChatRequest) -> str:
        seen.append(gc.get_threshold()[0])
        return "42 ✓"

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, *before[1:])
        sn.sweep(sn.Agent("a"), ["un", "二"], llm=lambda: sn.mock_llm(model), progress=False)
        assert seen == [YOUNG_THRESHOLD] * 2
        assert gc.get_threshold() == (700, *before[1:])
        gc.set_threshold(YOUNG_THRESHOLD * 2, *before[1:])
        sn.sweep(sn.Agent("a"), ["trois"], llm=lambda: sn.mock_llm(model), progress=False)
        assert seen[-1] == YOUNG_THRESHOLD * 2 == gc.get_threshold()[0]
    finally:
        gc.set_threshold(*before)
