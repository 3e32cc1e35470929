"""Every endpoint in the agent tree (an agent's own `model`, a Task's `model_override`, at any
depth) is fresh per variant and per sweep item, as the session's `llm` is."""

from __future__ import annotations

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
