"""Every endpoint in the agent tree (an agent's own `model`, a Task's `model_override`, at any
depth) is fresh per variant and per sweep item, as the session's `llm` is."""

from __future__ import annotations

import pytest

import sagents_nb as sn


def test_the_top_agents_own_script_starts_afresh_for_every_variant() -> None:
    helper = sn.Agent("helper", model=sn.script("a", "b"))
    cmp = sn.compare(helper, "salut", {"x": {}, "y": {}, "z": {}}, llm=sn.script("session"))
    assert [r["answer"] for r in cmp.rows] == ["a", "a", "a"], cmp.rows
    assert helper.model.exchanges == type(helper.model.exchanges)()  # the agent's is untouched


class Traduction(sn.Task):
    task_name = "traduction"
    description = "traduit en japonais"
    instructions = "Traduis."
    model_override = sn.script("翻訳 1", "翻訳 2")


def delegating(req: sn.ChatRequest):
    """Each agent with a team hands the prompt on once, then answers with what came back."""
    if "task" in req.tools:
        if req.last["role"] == "user":
            member = "helper" if req.agent == "boss" else "traduction"
            return sn.reply(tool_calls=[sn.call("task", agent=member, prompt=req.last_user)])
        return f"{req.agent}: {req.tool_results[-1]}"
    return "the session's endpoint should not answer here"


def test_endpoints_deep_in_the_tree_are_fresh_per_variant_and_per_item() -> None:
    helper = sn.Agent("helper", does="aide", model=sn.mock_llm(delegating), team=[Traduction])
    boss = sn.Agent("boss", team=[helper])
    cmp = sn.sweep(
        boss,
        ["chat 🐱", "chien 🐶"],
        {"w": {}, "r": {"helper": "resident"}, "m": {"traduction": {"max_turns": 2}}},
        llm=sn.mock_llm(delegating),
        concurrency=2,
        progress=False,
    )
    assert [r["answer"] for r in cmp.rows] == ["boss: helper: 翻訳 1"] * 6, cmp.rows
    assert Traduction.model_override.exchanges == type(Traduction.model_override.exchanges)()


def test_a_variants_own_agent_endpoint_is_fresh_per_item() -> None:
    cmp = sn.sweep(
        sn.Agent("solo"),
        ["un", "deux", "三"],
        {"scripted": {"solo": {"model": sn.script("première", "seconde")}}},
        llm=sn.script("session"),
        progress=False,
    )
    assert [r["answer"] for r in cmp.rows] == ["première"] * 3


def test_an_endpoint_used_before_the_compare_still_starts_each_variant_afresh() -> None:
    helper = sn.Agent("helper", model=sn.script("a", "b", "c"))
    assert helper.run_sync("d'abord", llm=sn.script("session")).text == "a"  # used in a cell
    session_llm = sn.script("unused")
    cmp = sn.compare(helper, "ensuite", {"x": {}, "y": {}}, llm=session_llm)
    assert [r["answer"] for r in cmp.rows] == ["a", "a"], cmp.rows
    assert helper.run_sync("encore", llm=session_llm).text == "b"  # its own place is kept


def test_a_fresh_copy_of_a_used_endpoint_can_travel_to_another_process() -> None:
    cloudpickle = pytest.importorskip("ray.cloudpickle")
    used = sn.script("réponse", "encore")
    assert sn.Agent("solo").run_sync("salut", llm=used).text == "réponse"
    travelled = cloudpickle.loads(cloudpickle.dumps(used.fresh()))  # no timers of its loop
    assert sn.Agent("solo").run_sync("salut", llm=travelled).text == "réponse"


def test_agents_sharing_an_endpoint_share_its_fresh_copy_as_in_a_plain_run() -> None:
    def tree() -> sn.Agent:
        shared = sn.script(
            sn.reply(tool_calls=[sn.call("task", agent="helper", prompt="aide-moi")]),
            "l'aide 助け",
            "fin 🏁",
        )
        return sn.Agent("boss", model=shared, team=[sn.Agent("helper", model=shared)])

    assert tree().run_sync("go", llm=sn.script("unused")).text == "fin 🏁"
    boss = tree()
    cmp = sn.compare(boss, "go", {"x": {}, "y": {}}, llm=boss.model)  # the session's too
    assert [r["answer"] for r in cmp.rows] == ["fin 🏁", "fin 🏁"], cmp.rows
