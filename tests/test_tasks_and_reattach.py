"""Task classes, reattach and the child's endpoint: what the seeds mean (issue 18)."""

from __future__ import annotations

import asyncio
import time

import pytest

import sagents_nb as sn


def test_a_repeated_task_call_waits_for_a_paused_child_and_gets_its_real_answer() -> None:
    @sn.tool
    def lookup(q: str) -> str:
        return f"found {q}"

    def handler(req: sn.ChatRequest):
        if "task" in req.tools:  # the parent: the same task twice, then the answers
            if not req.tool_results:
                first = sn.call("task", "first", agent="explore", prompt="find x")
                return sn.reply(
                    tool_calls=[first, sn.call("task", "again", agent="explore", prompt="find x")]
                )
            return " | ".join(req.tool_results)
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("lookup", q="x")])
        return f"child says {req.tool_results[-1]}"

    class RepeatOncePaused:
        """Holds the repeated call back until the child waits at its pause."""

        async def before_tool(self, call: sn.ToolCallInfo) -> None:
            if call.id == "again":
                for _ in range(500):
                    run = session.current_run
                    if run is not None and any(p.name == "lookup" for p in run.pending):
                        return
                    await asyncio.sleep(0.01)

    explore = sn.Agent("explore", does="looks", tools=[lookup], pause_on={"tool"})
    session = sn.Session(
        sn.Agent("boss", team=[explore]), llm=sn.mock_llm(handler), hooks=[RepeatOncePaused()]
    )
    run = session.send("go")
    assert run.wait() == "paused" and run.paused_at.name == "lookup"
    for _ in range(500):  # the repeated call reattaches meanwhile, to a child waiting at a pause
        if any(e.type == "task_reattached" for e in session.events):
            break
        time.sleep(0.01)
    run.approve()
    result = run.result()
    assert result.status == "done"
    assert result.text == "child says found x | child says found x"
    reattached = [e for e in result.events if e.type == "task_reattached"]
    assert [e.state for e in reattached] == ["pending"]


class SearchTask(sn.Task):
    task_name = "search-web"
    description = "searches"
    instructions = "Search."


def test_a_task_class_edited_between_runs_takes_effect_at_the_next_turn() -> None:
    class Notes(sn.Task):
        task_name = "notes"
        description = "takes notes"
        instructions = "Be terse."

    systems: list[str] = []

    def handler(req: sn.ChatRequest):
        if "task" in req.tools:
            if req.messages[-1]["role"] == "user":
                return sn.reply(tool_calls=[sn.call("task", agent="notes", prompt="p")])
            return "ok"
        systems.append(req.messages[0]["content"])
        return "noted"

    session = sn.Session(sn.Agent("boss", team=[Notes]), llm=sn.mock_llm(handler))
    session.send("one").result()
    Notes.instructions = "Be verbose."
    Notes.description = "writes notes at length"
    session.send("two").result()
    assert systems[0].endswith("Be terse.") and systems[-1].endswith("Be verbose.")
    request = session.llm.exchanges[-1].request  # the parent's last request
    task = next(t for t in request["tools"] if t["function"]["name"] == "task")
    assert "notes: writes notes at length" in task["function"]["description"]


def test_a_new_message_does_new_work_and_reattach_session_keeps_the_earlier_answer() -> None:
    answers = iter(["it is 9:00", "it is 10:00", "never asked"])

    def handler(req: sn.ChatRequest):
        if "task" in req.tools:
            if req.messages[-1]["role"] == "user":
                return sn.reply(tool_calls=[sn.call("task", agent="clock", prompt="what time?")])
            return req.tool_results[-1]
        return next(answers)

    clock = sn.Agent("clock", does="tells the time")
    per_run = sn.Session(sn.Agent("boss", team=[clock]), llm=sn.mock_llm(handler))
    assert per_run.send("time?").result().text == "it is 9:00"
    second = per_run.send("and now?").result()
    assert second.text == "it is 10:00"
    assert [c.id for c in second.tree.children] == ["boss/clock.1", "boss/clock.2"]

    answers = iter(["it is 9:00", "never asked"])
    durable = sn.Session(
        sn.Agent("boss", team=[clock]), llm=sn.mock_llm(handler), reattach="session"
    )
    durable.send("time?").result()
    again = durable.send("and now?").result()
    assert again.text == "it is 9:00"
    assert any(e.type == "task_reattached" and e.state == "settled" for e in again.events)
    with pytest.raises(sn.ConfigurationError, match="reattach must be"):
        sn.Session(sn.Agent("boss"), llm=sn.script("x"), reattach="forever")  # type: ignore[arg-type]


def test_a_task_without_a_name_or_with_method_callbacks_fails_at_definition() -> None:
    with pytest.raises(TypeError, match="needs task_name"):

        class Nameless(sn.Task):
            description = "no name"

    with pytest.raises(TypeError, match="instructions must be a plain value"):

        class Methods(sn.Task):
            task_name = "methods"

            def instructions(self) -> str:  # type: ignore[override]
                return "never called"


def test_a_running_task_is_labelled_by_its_display_text_or_its_name() -> None:
    class Labelled(sn.Task):
        task_name = "fetch"
        description = "fetches"
        display_text = "Fetching the page"

    def handler(req: sn.ChatRequest):
        if "task" in req.tools and not req.tool_results:
            return sn.reply(
                tool_calls=[
                    sn.call("task", agent="fetch", prompt="a"),
                    sn.call("task", agent="search-web", prompt="b"),
                ]
            )
        return "done"

    result = sn.Agent("boss", team=[Labelled, SearchTask]).run_sync("x", llm=sn.mock_llm(handler))
    spawned = {e.agent: e.display_text for e in result.events if e.type == "task_spawned"}
    assert spawned == {"fetch": "Fetching the page", "search-web": "Running search-web"}


def test_get_task_instructions_offers_only_members_that_have_them() -> None:
    class WithUse(sn.Task):
        task_name = "with-use"
        description = "has usage notes"
        use_instructions = "Call me with a file path."

    offered: list[dict] = []

    def handler(req: sn.ChatRequest):
        offered.extend(req.body.get("tools", []))
        return "done"

    sn.Agent("boss", team=[WithUse, SearchTask]).run_sync("x", llm=sn.mock_llm(handler))
    schema = next(t for t in offered if t["function"]["name"] == "get_task_instructions")
    assert schema["function"]["parameters"]["properties"]["agent"]["enum"] == ["with-use"]


def test_model_override_may_name_an_endpoint() -> None:
    own = sn.mock_llm(lambda req: f"from the child's endpoint ({req.model})", model="small")

    class Cheap(sn.Task):
        task_name = "cheap"
        description = "runs on a small model"
        model_override = own

    def parent(req: sn.ChatRequest):
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("task", agent="cheap", prompt="p")])
        return req.tool_results[-1]

    result = sn.Agent("boss", team=[Cheap]).run_sync("x", llm=sn.mock_llm(parent))
    assert result.text == "from the child's endpoint (small)"
    assert len(own.exchanges) == 1


def test_worker_exposes_its_clamped_turn_cap() -> None:
    assert sn.kinds.Worker(max_turns=7).max_turns == 7
    assert sn.kinds.Worker(max_turns=99).max_turns == 30


def test_the_preprocessor_sees_the_agent_state_and_the_user_dict_under_its_own_name() -> None:
    seen: list[sn.PreprocessContext] = []

    def preprocess(scope, message, context):
        seen.append(context)
        context.user_state["count"] = context.user_state.get("count", 0) + 1
        return message, message

    session = sn.Session(
        sn.Agent("helper"), llm=sn.script("one", "two"), preprocessor=preprocess, state={}
    )
    session.send("first").result()
    session.send("second").result()
    first, second = seen
    assert first.state.agent == "helper" and first.state.messages == ()
    assert [m.content for m in second.state.messages] == ["first", "one"]
    assert second.state.turns == 1 and second.state.usage.total_tokens >= 0
    assert second.user_state is session.state and session.state == {"count": 2}


def _spend(tokens: int):
    """A reply that reports `tokens` used."""
    return {"prompt_tokens": tokens - 10, "completion_tokens": 10, "total_tokens": tokens}


def test_a_childs_budget_is_capped_by_what_its_parent_has_left() -> None:
    def handler(req: sn.ChatRequest):
        if "task" in req.tools:
            if not req.tool_results:
                return sn.reply(
                    tool_calls=[sn.call("task", agent="spender", prompt="work")], usage=_spend(150)
                )
            return sn.reply("parent done", usage=_spend(10))
        return sn.reply(tool_calls=[sn.call("noop")], usage=_spend(120))  # never answers

    @sn.tool
    def noop() -> str:
        return "ok"

    spender = sn.Agent("spender", does="spends", tools=[noop], token_budget=500, max_turns=20)
    boss = sn.Agent("boss", team=[spender], token_budget=250)
    result = boss.run_sync("go", llm=sn.mock_llm(handler))
    child = result.tree.children[0]
    # the parent had 100 left after its own 150: the child stops once the pool is spent
    assert child.status == "incomplete"
    assert child.usage.total_tokens == 120
    finished = next(e for e in result.events if e.type == "task_finished")
    assert "boss's budget of 250 is spent" in finished.text


def test_siblings_draw_one_pool_and_an_exhausted_pool_refuses_spawns() -> None:
    replies = iter(
        [
            sn.reply(
                tool_calls=[
                    sn.call("task", agent="worker", prompt="a"),
                    sn.call("task", agent="worker", prompt="b"),
                ],
                usage=_spend(20),
            ),
            sn.reply(tool_calls=[sn.call("task", agent="worker", prompt="c")], usage=_spend(20)),
        ]
    )

    def handler(req: sn.ChatRequest):
        if "task" in req.tools:
            return next(replies, sn.reply("boss done", usage=_spend(10)))
        return sn.reply(f"did {req.last_user}", usage=_spend(60))

    worker = sn.Agent("worker", does="works")
    boss = sn.Agent("boss", team=[worker], token_budget=160)
    result = boss.run_sync("go", llm=sn.mock_llm(handler))
    # boss 20 + workers 60 + 60, then boss 20: the pool of 160 is spent before the third spawn
    assert [c.status for c in result.tree.children] == ["done", "done"]
    refused = [e for e in result.events if e.type == "task_refused"]
    assert len(refused) == 1 and "boss's budget of 160 is spent" in refused[0].reason
    assert result.status == "incomplete" and "budget of 160 is spent" in result.text


def test_ancestors_of_a_paused_child_show_that_their_subtree_waits_and_where() -> None:
    @sn.tool
    def lookup(q: str) -> str:
        return f"found {q}"

    def handler(req: sn.ChatRequest):
        if "task" in req.tools:
            if not req.tool_results:
                return sn.reply(tool_calls=[sn.call("task", agent="explore", prompt="p")])
            return "boss done"
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("lookup", q="x")])
        return "child done"

    explore = sn.Agent("explore", does="looks", tools=[lookup], pause_on={"tool"})
    session = sn.Session(sn.Agent("boss", team=[explore]), llm=sn.mock_llm(handler))
    run = session.send("go")
    assert run.wait() == "paused"
    boss = session.root
    assert boss.status == "waiting"
    assert session.tree.status == "waiting"
    changed = [e for e in session.events if e.type == "status_changed" and e.path == "boss"]
    assert changed[-1].status == "waiting" and "boss/explore.1" in changed[-1].detail
    assert "lookup" in changed[-1].detail
    run.approve()
    assert run.result().text == "boss done"
    statuses = [e.status for e in session.events if e.type == "status_changed" and e.path == "boss"]
    assert statuses[-3:] == ["waiting", "running", "done"]
