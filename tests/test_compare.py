"""sn.compare: variants (kinds, parameters, preprocessors, endpoints, hooks, limits) run on the
same model behaviour, concurrently; bad variants fail first; the table, forgetting report, plot."""

from __future__ import annotations

import asyncio
import json
import xml.etree.ElementTree as ET

import httpx
import pytest

import sagents_nb as sn

PROMPTS = ["My name is Ada.", "J'aime le thé 🍵.", "我叫什么名字？"]


def parent_then(child_reply, prompts=PROMPTS):
    """The parent hands each prompt to `helper` in turn, then finishes."""

    def model(req: sn.ChatRequest):
        if "task" not in req.tools:
            return child_reply(req)
        since_user = 0
        for message in reversed(req.messages):
            if message["role"] == "user":
                break
            since_user += message["role"] == "tool"
        if since_user < len(prompts):
            return sn.reply(
                tool_calls=[sn.call("task", agent="helper", prompt=prompts[since_user])]
            )
        return "finished"

    return model


def child(req: sn.ChatRequest):
    if req.system.startswith("You compress"):
        return "The user is called Ada."
    seen = [m["content"] for m in req.messages if m["role"] in ("user", "system")]
    return sn.reply(
        f"I can see {len(seen)} message(s): {seen}",
        usage={"prompt_tokens": 55 * len(seen), "completion_tokens": 5},
    )


def team() -> sn.Agent:
    return sn.Agent("boss", team=[sn.Agent("helper", does="remembers things")])


KINDS = {
    "worker": {"helper": sn.kinds.Worker()},
    # relevance=False: the resident sees its whole storage, so the mock's reported usage (55 a
    # message in view) measures all of it and the probe compacts
    "resident": {"helper": sn.kinds.Resident(window_tokens=100, keep_recent=1, relevance=False)},
    "realtime": {"helper": {"kind": "realtime", "window": 1}},
}


def test_kind_variants_show_what_each_child_forgot_and_where_they_diverge() -> None:
    cmp = sn.compare(team(), "go", KINDS, llm=sn.mock_llm(parent_then(child)))
    rows = {r["variant"]: r for r in cmp.rows}
    assert [r["status"] for r in cmp.rows] == ["done"] * 3
    assert rows["resident"]["compactions"] >= 1 and rows["resident"]["context_full"] >= 1
    assert rows["realtime"]["trims"] >= 1 and rows["worker"]["compactions"] == 0
    assert all(r["model_calls"] >= 7 and r["tool_calls"] == 3 for r in cmp.rows)
    assert all(r["prompt_tokens"] > 0 and r["peak_context"] > 0 for r in cmp.rows)

    report = cmp.forgetting()
    worker = report.forgotten("worker", "helper")
    assert worker[2][0].text == "My name is Ada."  # a new worker per task
    assert report.forgotten("resident", "helper")[2] == []  # a resident remembers...
    assert any(f.text == "My name is Ada." for f in report.forgotten("resident", "helper")[3])
    assert report.divergence("worker", "resident")["helper"] == 2
    assert report.divergence("worker", "realtime")["helper"] is None  # window=1 == a fresh worker
    assert report.divergence("worker", "resident")["boss"] is not None
    text = str(report)
    assert "worker: first forgot at turn 2" in text and "'My name is Ada.'" in text
    last = report.turns["worker"]["helper"][2]
    assert last.path == "boss/helper.3" and last.view[-1].content == "我叫什么名字？"
    assert "J'aime le thé 🍵." in report.rows[-1]["forgotten_facts"]


def test_each_variant_runs_its_own_copy_and_the_agent_is_untouched() -> None:
    boss = team()
    helper = boss.member("helper")
    cmp = sn.compare(boss, "go", KINDS, llm=sn.mock_llm(parent_then(child)))
    assert boss.kind is None and helper is not None and helper.kind is None
    kinds = {r.variant: {e.kind for e in r.events if e.type == "task_spawned"} for r in cmp.records}
    assert kinds == {"worker": {"worker"}, "resident": {"resident"}, "realtime": {"realtime"}}


def test_kind_parameters_rebuild_the_kind_keeping_its_other_settings() -> None:
    boss = sn.Agent(
        "boss", team=[sn.Agent("helper", kind=sn.kinds.Resident(window_tokens=100, keep_recent=3))]
    )
    cmp = sn.compare(
        boss,
        "go",
        {
            "as is": {},
            "small window": {"helper": {"window_tokens": 60}},
            "named kind": {"helper": {"kind": "resident", "window_tokens": 70, "max_turns": 2}},
        },
        llm=sn.mock_llm(parent_then(child)),
    )
    windows = {
        r.variant: {e.window for e in r.events if e.type == "context_full"} for r in cmp.records
    }
    assert windows == {"as is": {100}, "small window": {60}, "named kind": {70}}


class Tally(sn.kinds.BaseKind):
    """Keeps its settings under names of its own: a variant rebuilds it from its arguments."""

    name = "tally"

    def __init__(self, every: int = 1, *, label: str = "tally") -> None:
        self._every = every
        self._label = label


def test_a_variant_rebuilds_a_custom_kind_from_the_arguments_it_was_given() -> None:
    from sagents_nb._compare.variants import check_variants

    boss = sn.Agent("boss", team=[sn.Agent("helper", kind=Tally(3, label="première"))])
    (variant,) = check_variants(boss, {"v": {"helper": {"label": "seconde 二"}}}, sn.script("x"))
    kind = variant.agents["helper"]["kind"]
    assert isinstance(kind, Tally) and (kind._every, kind._label) == (3, "seconde 二")
    with pytest.raises(sn.ConfigurationError, match=r"parameters of its kind Tally: every, label"):
        check_variants(boss, {"v": {"helper": {"lable": "x"}}}, sn.script("x"))


def test_preprocessor_model_llm_hooks_and_limits_are_variants() -> None:
    @sn.tool
    def lookup(q: str) -> str:
        """Look something up.

        Args:
            q: the query.
        """
        return f"found {q}"

    def shout(scope, message, context):
        return message, message.model_copy(update={"content": message.content.upper()})

    class NoLookups:
        def before_tool(self, call):
            return sn.Deny("no lookups today") if call.name == "lookup" else None

    def model(req: sn.ChatRequest):
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("lookup", q=req.last_user)])
        return f"{req.model}: {req.tool_results[-1]}"

    agent = sn.Agent("solo", tools=[lookup])
    other = sn.mock_llm(lambda req: "from the other endpoint")
    cmp = sn.compare(
        agent,
        "thé",
        {
            "plain": {},
            "shout": {"preprocessor": shout},
            "big model": {"model": "big-1"},
            "agent model": {"solo": {"model": "small-2"}},
            "other llm": {"llm": other},
            "hooked": {"hooks": [NoLookups()]},
            "one turn": {"solo": {"max_turns": 1}},
        },
        llm=sn.mock_llm(model),
    )
    answers = {r["variant"]: (r["status"], r["answer"]) for r in cmp.rows}
    assert answers["plain"] == ("done", "mock: found thé")
    assert answers["shout"] == ("done", "mock: found THÉ")
    assert answers["big model"] == ("done", "big-1: found thé")
    assert answers["agent model"] == ("done", "small-2: found thé")
    assert answers["other llm"] == ("done", "from the other endpoint")
    assert answers["hooked"][1].startswith("mock: ") and "no lookups today" in answers["hooked"][1]
    assert answers["one turn"][0] == "incomplete"
    assert other.exchanges == type(other.exchanges)()  # the variant used its own fresh copy


def test_every_variant_meets_the_script_from_its_first_reply() -> None:
    llm = sn.script("one", "two", "three")
    cmp = sn.compare(sn.Agent("solo"), ["a", "b"], {"x": {}, "y": {}, "z": {}}, llm=llm)
    assert [r["answer"] for r in cmp.rows] == ["two", "two", "two"]
    assert all(r["turns"] == 2 for r in cmp.rows)


def test_a_stateful_handler_is_made_per_variant_by_a_factory() -> None:
    def make():
        calls = {"n": 0}

        def handler(req):
            calls["n"] += 1
            return f"call {calls['n']}"

        return sn.mock_llm(handler)

    cmp = sn.compare(sn.Agent("solo"), ["a", "b"], {"x": {}, "y": {}}, llm=make)
    assert [r["answer"] for r in cmp.rows] == ["call 2", "call 2"]


def test_variants_run_concurrently_on_the_library_loop() -> None:
    barrier: dict[str, asyncio.Barrier] = {}

    async def handler(req):
        # each variant's first request waits for the others': run one after another, they
        # would never all arrive
        gate = barrier.setdefault("gate", asyncio.Barrier(3))
        await asyncio.wait_for(gate.wait(), timeout=20)
        return "together"

    cmp = sn.compare(sn.Agent("solo"), "hi", {"a": {}, "b": {}, "c": {}}, llm=sn.mock_llm(handler))
    assert [r["status"] for r in cmp.rows] == ["done"] * 3, cmp.rows


@pytest.mark.parametrize(
    ("variants", "message"),
    [
        (
            {"good": {}, "typo": {"helpr": sn.kinds.Resident()}},
            "variant 'typo': 'helpr' is neither",
        ),
        ({"bad param": {"helper": {"window_token": 5}}}, "variant 'bad param': 'window_token'"),
        ({"bad kind": {"helper": "goldfishy"}}, "variant 'bad kind': no kind named 'goldfishy'"),
        ({"bad limit": {"helper": {"max_turns": "3"}}}, "variant 'bad limit': helper.max_turns"),
        ({"bad llm": {"llm": 42}}, "variant 'bad llm': 'llm' must be an endpoint"),
        ({"not a dict": [1]}, "variant 'not a dict': changes must be a dict"),
    ],
)
def test_a_variant_that_does_not_apply_fails_before_anything_runs(variants, message) -> None:
    calls = []
    llm = sn.mock_llm(lambda req: calls.append(req) or "hi")
    with pytest.raises(sn.ConfigurationError, match=message.replace("(", r"\(")):
        sn.compare(team(), "go", variants, llm=llm)
    assert calls == []


def test_empty_or_non_dict_variants_are_told_what_is_wrong() -> None:
    with pytest.raises(sn.ConfigurationError, match="variants= is empty: give at least one"):
        sn.compare(team(), "allons-y", {}, llm=sn.script("x"))
    with pytest.raises(sn.ConfigurationError, match=r"variants= takes a dict .*not list"):
        sn.compare(team(), "allons-y", ["worker"], llm=sn.script("x"))


def test_the_error_lists_the_agents_and_the_kinds_parameters() -> None:
    with pytest.raises(sn.ConfigurationError) as info:
        sn.compare(team(), "go", {"v": {"helper": {"kind": "resident", "windw": 1}}}, llm=None)
    assert "window_tokens" in str(info.value) and "keep_recent" in str(info.value)
    with pytest.raises(sn.ConfigurationError, match="agents: boss, helper"):
        sn.compare(team(), "go", {"v": {"nobody": {}}}, llm=sn.script("x"))
    with pytest.raises(sn.ConfigurationError, match="no endpoint"):
        sn.compare(team(), "go", {"v": {}})


def test_an_erroring_variant_is_an_error_row_and_the_others_finish() -> None:
    def refuse(req):
        return httpx.Response(400, json={"error": {"message": "quota gone for 日本"}})

    def boom():
        raise RuntimeError("the factory broke")

    cmp = sn.compare(
        sn.Agent("solo"),
        "hi",
        {"fine": {}, "refused": {"llm": sn.mock_llm(refuse)}, "broken": {"llm": boom}},
        llm=sn.script("hello"),
    )
    rows = {r["variant"]: r for r in cmp.rows}
    assert rows["fine"]["status"] == "done" and rows["fine"]["answer"] == "hello"
    assert (
        rows["refused"]["status"] == "error" and "quota gone for 日本" in rows["refused"]["error"]
    )
    assert rows["broken"]["status"] == "error"
    assert rows["broken"]["error"] == "RuntimeError: the factory broke"


def test_a_replayed_cassette_serves_every_variant(tmp_path) -> None:
    path = tmp_path / "c.jsonl"
    recorder = sn.record(sn.script("recorded answer"), path)
    sn.Agent("solo").run_sync("hi", llm=recorder)
    cmp = sn.compare(sn.Agent("solo"), "hi", {"a": {}, "b": {}}, llm=sn.replay(path))
    assert [r["answer"] for r in cmp.rows] == ["recorded answer"] * 2


def test_the_table_columns_text_and_pandas() -> None:
    cmp = sn.compare(team(), "go", KINDS, llm=sn.mock_llm(parent_then(child)))
    from sagents_nb._compare.table import COLUMNS

    assert all(tuple(r) == COLUMNS for r in cmp.rows)
    assert str(cmp).splitlines()[0].split()[:3] == ["variant", "status", "answer"]
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"pip install 'sagents_nb\[pandas\]'"):
            cmp.to_pandas()
    else:
        assert list(cmp.to_pandas()["variant"]) == ["worker", "resident", "realtime"]


def test_the_plot_is_svg_with_a_line_per_variant_and_markers_and_escapes_names() -> None:
    variants = {"<b>résident</b>": KINDS["resident"], "日本語 worker": KINDS["worker"]}
    cmp = sn.compare(team(), "go", variants, llm=sn.mock_llm(parent_then(child)))
    plot = cmp.plot()
    assert plot.agent == "helper"
    svg = plot.svg(highlight=2)
    root = ET.fromstring(svg)  # well-formed
    series = root.findall("{http://www.w3.org/2000/svg}g")
    assert [g.get("data-variant") for g in series] == list(variants)
    assert "<b>" not in svg and "&lt;b&gt;résident&lt;/b&gt;" in svg
    assert "compaction (<b>" not in svg and 'class="marker"' in svg and 'class="highlight"' in svg
    points = plot.points
    assert (
        len(points["日本語 worker"]) == 3
        and points["<b>résident</b>"][1][1] > points["日本語 worker"][1][1]
    )
    bundle = cmp._repr_mimebundle_()
    assert "<svg" in bundle["text/html"] and "<b>résident" not in bundle["text/html"]
    assert "Comparison(2 variants x 1 items: 2 done)" in bundle["text/plain"]


def test_the_forgetting_report_rows_are_json_ready() -> None:
    cmp = sn.compare(team(), "go", KINDS, llm=sn.mock_llm(parent_then(child)))
    rows = cmp.forgetting().rows
    json.dumps(rows)
    helper_rows = [r for r in rows if r["variant"] == "resident" and r["agent"] == "helper"]
    assert [r["turn"] for r in helper_rows] == [1, 2, 3]
    assert "compaction" in helper_rows[2]["markers"] or "context_full" in helper_rows[1]["markers"]


def test_the_text_table_aligns_wide_characters() -> None:
    cmp = sn.sweep(
        sn.Agent("solo"),
        [{"id": "ja", "prompt": "私の名前は？"}, {"id": "en", "prompt": "name?"}],
        llm=sn.mock_llm(lambda req: req.last_user),
        progress=False,
    )
    header, ja, en = str(cmp).splitlines()
    turns = header.index("turns")
    assert ja.startswith("ja") and "私の名前は？" in ja
    # the cells after the answer start in the same terminal column on every line
    wide = sum(1 for ch in ja[:turns] if "\u3000" <= ch <= "\u9fff" or ch in "？")
    assert ja[turns - wide] == en[turns] == "1"
