"""Child kinds: Worker salvage, Resident memory and compaction, Realtime windows, Main relevance,
hooks, hot-swap and a custom kind."""

from __future__ import annotations

import json

import pytest

import sagents_nb as sn
from sagents_nb.kinds import BaseKind
from sagents_nb.kinds._relevance import LexicalScorer


def parent_requests(llm: sn.LLM) -> list[dict]:
    return [
        x.request
        for x in llm.exchanges
        if any(t["function"]["name"] == "task" for t in x.request.get("tools", []))
    ]


def _results_since_last_user(req: sn.ChatRequest) -> int:
    count = 0
    for message in reversed(req.messages):
        if message["role"] == "user":
            return count
        count += message["role"] == "tool"
    return count


def delegating(prompts: list[str], child_reply, finish=lambda req: "finished"):
    """A handler: the parent delegates each prompt in turn to `helper`; the child uses child_reply."""

    def handler(req: sn.ChatRequest):
        if "task" in req.tools:
            n = _results_since_last_user(req)
            if n < len(prompts):
                return sn.reply(tool_calls=[sn.call("task", agent="helper", prompt=prompts[n])])
            return finish(req)
        return child_reply(req)

    return handler


def test_worker_salvages_exactly_once_at_its_cap() -> None:
    @sn.tool
    def look() -> str:
        return "a clue"

    requests: list[sn.ChatRequest] = []

    def child(req: sn.ChatRequest):
        requests.append(req)
        if req.body.get("tool_choice") == "none":
            return "found a clue, not the culprit"
        return sn.reply(tool_calls=[sn.call("look")])

    helper = sn.Agent("helper", does="looks", tools=[look], kind=sn.kinds.Worker(max_turns=2))
    boss = sn.Agent("boss", team=[helper])
    result = boss.run_sync(
        "go", llm=sn.mock_llm(delegating(["investigate"], child, lambda req: req.tool_results[0]))
    )
    assert len(requests) == 3
    salvage = [r for r in requests if r.body.get("tool_choice") == "none"]
    assert len(salvage) == 1
    assert "turn limit" in salvage[0].last_user and "Summarise" in salvage[0].last_user
    assert result.text == (
        "[incomplete] hit maxTurns (2) without a final answer; salvage "
        "summary: found a clue, not the culprit"
    )


def test_worker_turns_are_clamped() -> None:
    assert sn.kinds.Worker(max_turns=99).turn_limit(None) == 30
    assert sn.kinds.Worker(max_turns=0).turn_limit(None) == 1
    assert sn.kinds.Worker().turn_limit(None) == 5


def _memory_probe(kind) -> list[list[str]]:
    seen: list[list[str]] = []

    def child(req: sn.ChatRequest):
        seen.append([m["content"] for m in req.messages if m["role"] == "user"])
        return f"noted {req.last_user}"

    helper = sn.Agent("helper", does="remembers", kind=kind)
    sn.Agent("boss", team=[helper]).run_sync(
        "go", llm=sn.mock_llm(delegating(["my name is Ada", "what is my name?"], child))
    )
    return seen


def test_resident_remembers_across_tasks_and_worker_does_not() -> None:
    assert _memory_probe(sn.kinds.Resident())[1] == ["my name is Ada", "what is my name?"]
    assert _memory_probe(sn.kinds.Worker())[1] == ["what is my name?"]


def test_swapping_a_childs_kind_between_runs_changes_behaviour_and_is_recorded() -> None:
    seen: list[int] = []

    def child(req: sn.ChatRequest):
        seen.append(len([m for m in req.messages if m["role"] == "user"]))
        return "ok"

    helper = sn.Agent("helper", does="helps", kind=sn.kinds.Resident())
    boss = sn.Agent("boss", team=[helper])

    def handler(req: sn.ChatRequest):
        if "task" not in req.tools:
            return child(req)
        n = _results_since_last_user(req)
        if n < 2:
            return sn.reply(
                tool_calls=[sn.call("task", agent="helper", prompt=f"{req.last_user}{n}")]
            )
        return "finished"

    session = sn.Session(boss, llm=sn.mock_llm(handler))
    session.send("first").result()
    helper.kind = sn.kinds.Worker()
    session.send("second").result()
    assert seen == [1, 2, 1, 1]
    swaps = [e for e in session.events if e.type == "kind_swapped"]
    assert [(s.agent, s.old, s.new) for s in swaps] == [("helper", "resident", "worker")]
    assert session.tree.children[0].status == "disposed"


def _window_child(tokens: list[int]):
    def child(req: sn.ChatRequest):
        if req.system.startswith("You compress conversation history"):
            return "SUMMARY: Ada likes tea"
        return sn.reply(
            f"noted {req.last_user}",
            usage={"prompt_tokens": tokens.pop(0), "completion_tokens": 10},
        )

    return child


def test_context_full_fires_once_and_tells_the_parent() -> None:
    helper = sn.Agent("helper", does="h", kind=sn.kinds.Resident(window_tokens=1000))
    tokens = [300, 880, 900, 950]
    prompts = ["a", "b", "c", "d"]
    llm = sn.mock_llm(delegating(prompts, _window_child(tokens)))
    result = sn.Agent("boss", team=[helper]).run_sync("go", llm=llm)
    full = [e for e in result.events if e.type == "context_full"]
    assert len(full) == 1 and full[0].path == "boss/helper.1" and full[0].window == 1000
    notices = [
        r
        for r in parent_requests(llm)
        if any("Resident agent boss/helper.1 is at" in (m["content"] or "") for m in r["messages"])
    ]
    assert len(notices) == 1


def test_resident_over_its_window_is_compacted_by_summary() -> None:
    helper = sn.Agent("helper", does="h", kind=sn.kinds.Resident(window_tokens=500, keep_recent=1))
    llm = sn.mock_llm(delegating(["Ada likes tea", "b", "c"], _window_child([200, 600, 100])))
    result = sn.Agent("boss", team=[helper]).run_sync("go", llm=llm)
    (compaction,) = [e for e in result.events if e.type == "compaction"]
    assert compaction.strategy == "summary" and compaction.summary == "SUMMARY: Ada likes tea"
    assert compaction.before_tokens > compaction.after_tokens
    summary_calls = [
        x for x in llm.exchanges if x.request["messages"][0]["content"].startswith("You compress")
    ]
    assert len(summary_calls) == 1
    child_requests = [
        x.request
        for x in llm.exchanges
        if x not in summary_calls and x.request not in parent_requests(llm)
    ]
    last_child = child_requests[-1]["messages"]
    assert last_child[0]["content"].endswith("SUMMARY: Ada likes tea")
    assert "Ada likes tea" not in [m["content"] for m in last_child if m["role"] == "user"]


def test_compress_through_the_control_tool_and_next_request_carries_the_summary() -> None:
    child_requests: list[sn.ChatRequest] = []

    def handler(req: sn.ChatRequest):
        if req.system.startswith("You compress"):
            return "the user is Ada"
        if "task" in req.tools:
            assert "resident_agents" in req.tools
            step = len(req.tool_results)
            if step == 0:
                return sn.reply(tool_calls=[sn.call("task", agent="helper", prompt="I am Ada")])
            if step == 1:
                return sn.reply(tool_calls=[sn.call("task", agent="helper", prompt="fact two")])
            if step == 2:
                return sn.reply(
                    tool_calls=[sn.call("resident_agents", action="compress", id="boss/helper.1")]
                )
            if step == 3:
                return sn.reply(tool_calls=[sn.call("task", agent="helper", prompt="who am I?")])
            return "end"
        child_requests.append(req)
        return "ok"

    helper = sn.Agent("helper", does="h", kind=sn.kinds.Resident(keep_recent=1))
    result = sn.Agent("boss", team=[helper]).run_sync("go", llm=sn.mock_llm(handler))
    compactions = [e for e in result.events if e.type == "compaction"]
    assert len(compactions) == 1 and compactions[0].reason == "requested"
    last = child_requests[-1]
    assert last.messages[0]["content"].endswith("the user is Ada")
    assert "I am Ada" not in json.dumps(last.messages)


def test_failing_summariser_falls_back_to_truncation() -> None:
    import httpx

    def child(req: sn.ChatRequest):
        if req.system.startswith("You compress"):
            return httpx.Response(400, json={"error": {"message": "summaries are off"}})
        return sn.reply("ok", usage={"prompt_tokens": 700, "completion_tokens": 10})

    helper = sn.Agent("helper", does="h", kind=sn.kinds.Resident(window_tokens=500, keep_recent=1))
    result = sn.Agent("boss", team=[helper]).run_sync(
        "go", llm=sn.mock_llm(delegating(["a", "b"], child))
    )
    (compaction,) = [e for e in result.events if e.type == "compaction"]
    assert compaction.strategy == "truncation" and "summaries are off" in compaction.error
    assert result.status == "done"


def test_compaction_never_splits_a_tool_call_from_its_result() -> None:
    @sn.tool
    def fetch() -> str:
        return "data"

    def child(req: sn.ChatRequest):
        if req.system.startswith("You compress"):
            return "summary"
        if req.last.get("role") == "user":
            return sn.reply(tool_calls=[sn.call("fetch")])
        return sn.reply("done", usage={"prompt_tokens": 600, "completion_tokens": 1})

    helper = sn.Agent(
        "helper", does="h", tools=[fetch], kind=sn.kinds.Resident(window_tokens=500, keep_recent=2)
    )
    llm = sn.mock_llm(delegating(["a", "b"], child))
    sn.Agent("boss", team=[helper]).run_sync("go", llm=llm)
    for exchange in llm.exchanges:
        messages = exchange.request["messages"]
        ids = {c["id"] for m in messages for c in m.get("tool_calls") or ()}
        answered = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
        assert ids == answered


def test_destroy_with_residual_keep_and_drop() -> None:
    for residual, word in (("keep", "returned"), ("drop", "skipped")):

        def handler(req: sn.ChatRequest, residual=residual):
            if "task" in req.tools:
                if not req.tool_results:
                    return sn.reply(tool_calls=[sn.call("task", agent="helper", prompt="hello")])
                if len(req.tool_results) == 1:
                    return sn.reply(
                        tool_calls=[
                            sn.call("resident_agents", action="list"),
                            sn.call(
                                "resident_agents",
                                action="destroy",
                                id="boss/helper.1",
                                residual=residual,
                            ),
                        ]
                    )
                return " || ".join(req.tool_results)
            return "hi"

        helper = sn.Agent("helper", does="h", kind=sn.kinds.Resident())
        result = sn.Agent("boss", team=[helper]).run_sync("go", llm=sn.mock_llm(handler))
        listing = json.loads(result.text.split(" || ")[1])
        assert listing[0]["id"] == "boss/helper.1" and listing[0]["messages"] == 2
        assert f"disposed ({residual})" in result.text and word in result.text
        assert result.tree.children[0].status == "destroyed"


def test_realtime_view_keeps_newest_groups_while_storage_keeps_all() -> None:
    seen: list[list[str]] = []

    def child(req: sn.ChatRequest):
        assert req.stream
        seen.append([m["content"] for m in req.messages if m["role"] == "user"])
        return f"echo {req.last_user}"

    helper = sn.Agent("helper", does="h", kind=sn.kinds.Realtime(window=2))
    session = sn.Session(
        sn.Agent("boss", team=[helper]),
        llm=sn.mock_llm(delegating(["m1", "m2", "m3", "m4"], child)),
    )
    result = session.send("go").result()
    assert seen[-1] == ["m3", "m4"]
    node = session.node("boss/helper.1")
    assert [m.content for m in node.history if m.role == "user"] == ["m1", "m2", "m3", "m4"]
    trims = [e for e in result.events if e.type == "window_trim"]
    assert [t.dropped_groups for t in trims] == [1, 2]
    deltas = [e for e in result.events if e.type == "text_delta" and e.path == "boss/helper.1"]
    assert "".join(d.text for d in deltas).startswith("echo m1echo m2")


def test_main_sinks_low_relevance_groups_to_cold_storage_and_recall_finds_them() -> None:
    @sn.tool
    def note(text: str) -> str:
        return f"noted {text}"

    topics = ["giraffe height", "volcano ash", "tax forms", "giraffe diet", "river fish"]
    requests: list[sn.ChatRequest] = []

    def handler(req: sn.ChatRequest):
        requests.append(req)
        step = len(requests) - 1
        if step < len(topics):
            return sn.reply(tool_calls=[sn.call("note", text=topics[step])])
        if step == len(topics):
            return sn.reply(tool_calls=[sn.call("recall", query="volcano")])
        return "done"

    # the current input and the note answering it are protected: one more place sinks the rest
    agent = sn.Agent("main", tools=[note], kind=sn.kinds.Main(top_k=1, recent=2))
    result = agent.run_sync("tell me about giraffe facts", llm=sn.mock_llm(handler))
    sinks = [e for e in result.events if e.type == "cold_sink"]
    assert sinks and all(s.reason == "relevance" for s in sinks)
    last_view = json.dumps(requests[-2].messages)
    assert "cold storage" in last_view and "tell me about giraffe facts" in last_view
    assert "recall" in requests[-2].tools
    assert "volcano ash" in requests[-1].tool_results[-1]


def test_main_budget_prunes_and_tells_the_model() -> None:
    @sn.tool
    def blob(i: int) -> str:
        return "x" * 400

    def handler(req: sn.ChatRequest):
        return (
            sn.reply(tool_calls=[sn.call("blob", i=len(req.tool_results))])
            if len(req.tool_results) < 6
            else "done"
        )

    llm = sn.mock_llm(handler)
    agent = sn.Agent(
        "main", tools=[blob], kind=sn.kinds.Main(top_k=None, recent=2, budget_tokens=400)
    )
    result = agent.run_sync("go", llm=llm)
    assert any(e.type == "cold_sink" and e.reason == "budget" for e in result.events)
    last = llm.exchanges[-1].request["messages"]
    assert sum(1 for m in last if m["role"] == "tool") <= 3


def test_hooks_deny_rewrite_and_observe_for_children_too() -> None:
    @sn.tool
    def shell(cmd: str) -> str:
        return f"ran {cmd}"

    class Guard:
        def before_tool(self, call: sn.ToolCallInfo):
            if "rm" in call.arguments.get("cmd", ""):
                return sn.Deny("destructive commands are not allowed")
            if call.name == "shell":
                return {"cmd": call.arguments["cmd"].upper()}
            return None

        async def after_tool(self, call: sn.ToolCallInfo, result: sn.ToolResult):
            if call.name == "shell":
                return result.content + " (checked)"
            return None

    def child(req: sn.ChatRequest):
        if not req.tool_results:
            return sn.reply(
                tool_calls=[sn.call("shell", cmd="rm -rf /"), sn.call("shell", cmd="ls")]
            )
        return " | ".join(req.tool_results)

    helper = sn.Agent("helper", does="h", tools=[shell])
    session = sn.Session(
        sn.Agent("boss", team=[helper]),
        hooks=[Guard()],
        llm=sn.mock_llm(delegating(["work"], child, lambda req: req.tool_results[0])),
    )
    result = session.send("go").result()
    assert result.text == ("call rejected: destructive commands are not allowed | ran LS (checked)")
    statuses = [
        e.status for e in result.events if e.type == "tool_call_finished" and e.name == "shell"
    ]
    assert statuses == ["denied", "ok"]


def test_a_custom_kind_plugs_in() -> None:
    class LastOnly(BaseKind):
        """Shows the model only the newest message."""

        name = "last-only"

        def build_context(self, child, input):
            return [*child.system_messages(), *child.history[-1:]]

    seen: list[int] = []

    def child(req: sn.ChatRequest):
        seen.append(len(req.messages))
        return "ok"

    helper = sn.Agent("helper", does="h", kind=LastOnly())
    result = sn.Agent("boss", team=[helper]).run_sync(
        "go", llm=sn.mock_llm(delegating(["a"], child))
    )
    assert seen == [1] and result.tree.children[0].kind == "last-only"
    assert isinstance(LastOnly(), sn.kinds.ChildKind)


def test_main_measures_its_view_as_the_turn_would_count_it() -> None:
    """Main reports its view's size (tokens, messages from storage) without a count over the
    view: with nothing sunk and with groups in cold storage, it equals counting."""

    @sn.tool
    def note(text: str) -> str:
        return f"noted {text} " * 5

    topics = ["giraffe height", "volcano ash", "tax forms", "giraffe diet", "river fish"]

    def handler(req: sn.ChatRequest):
        done = len(req.tool_results)
        if done < len(topics):
            return sn.reply(tool_calls=[sn.call("note", text=topics[done])])
        return "done"

    for kind in (sn.kinds.Main(top_k=None), sn.kinds.Main(top_k=1, recent=2)):
        agent = sn.Agent("main", instructions="be brief", tools=[note], kind=kind)
        session = sn.Session(agent, llm=sn.mock_llm(handler))
        result = session.send("tell me about giraffe facts").result()
        node = session.root
        view = kind.build_context(node, node.input_text)
        count = node.token_count
        from_storage = sum(1 for m in view if m.role != "system")
        assert view.measure == (sum(map(count, view)), from_storage)
        built = [e for e in result.events if e.type == "context_built"]
        requests = [e for e in result.events if e.type == "model_request"]
        for context, request in zip(built, requests, strict=True):
            assert context.view_tokens == sum(map(count, request.messages))
            assert context.view_messages == len(request.messages)
        assert bool(node.kind_state["main"].cold) == (kind.top_k is not None)


def test_configured_is_a_copy_built_with_the_same_arguments_and_the_changes() -> None:
    scorer = LexicalScorer()
    resident = sn.kinds.Resident(100, keep_recent=3, relevance=False, scorer=scorer)
    smaller = resident.configured(window_tokens=60)
    assert type(smaller) is sn.kinds.Resident and smaller is not resident
    assert (smaller.window_tokens, smaller.keep_recent, smaller.relevance) == (60, 3, False)
    assert smaller.scorer is scorer and resident.window_tokens == 100
    assert sn.kinds.Worker(7).configured().max_turns == 7
    assert sn.kinds.Worker().configured(max_turns=99).max_turns == 30  # the constructor clamps
    assert sn.kinds.Realtime(window=2).configured(max_turns=3).window == 2
    assert sn.kinds.Main(top_k=None).configured(recent=4).top_k is None


def test_configured_refuses_an_unknown_parameter_naming_the_kinds() -> None:
    with pytest.raises(
        sn.ConfigurationError,
        match=r"Resident has no parameter 'window' \(its parameters: window_tokens, keep_recent, "
        r"max_turns, relevance, scorer\)",
    ):
        sn.kinds.Resident().configured(window=5)

    class Plain(BaseKind):
        name = "plain"

    with pytest.raises(
        sn.ConfigurationError, match=r"Plain has no parameter 'depth' \(its parameters: none\)"
    ):
        Plain().configured(depth=2)


def test_configured_says_when_the_constructor_refuses_a_value() -> None:
    class Picky(BaseKind):
        name = "picky"

        def __init__(self, size: int = 1) -> None:
            if size < 1:
                raise ValueError(f"size must be at least 1, not {size} (taille ≥ 1)")
            self.size = size

    assert Picky(2).configured(size=5).size == 5
    with pytest.raises(
        sn.ConfigurationError, match=r"cannot build Picky with \{'size': 0\} \(size must"
    ):
        Picky(2).configured(size=0)
