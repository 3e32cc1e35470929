"""A variant sets any of the session's per-run keywords (limits, durability, reattach, state,
tool context, token counter), applied to that variant's session only; bad values fail first."""

from __future__ import annotations

import pytest

import sagents_nb as sn
from sagents_nb._base.loop import run_sync
from sagents_nb._compare.record import run_session
from sagents_nb._compare.variants import check_variants


def delegating(req: sn.ChatRequest):
    """boss sends two tasks to helper at once, helper one to sub; each answers what it got."""
    if "task" in req.tools and req.last["role"] == "user":
        if req.agent == "boss":
            calls = [sn.call("task", agent="helper", prompt=p) for p in ("寿司 🍣", "ramen 🍜")]
            return sn.reply(tool_calls=calls, usage={"prompt_tokens": 60, "completion_tokens": 5})
        return sn.reply(tool_calls=[sn.call("task", agent="sub", prompt="plus bas")])
    if req.tool_results:
        return f"{req.agent}: " + " | ".join(req.tool_results)
    return sn.reply(f"{req.agent}: {req.last_user}", usage={"prompt_tokens": 60})


def team() -> sn.Agent:
    sub = sn.Agent("sub", does="en dessous")
    return sn.Agent("boss", team=[sn.Agent("helper", does="aide", team=[sub])])


def test_limits_are_variants_applied_to_their_own_session_only() -> None:
    cmp = sn.compare(
        team(),
        "va",
        {
            "free": {},
            "capped": {"max_model_calls": 2},
            "tokens": {"max_tokens": 100},
            "nodes": {"max_nodes": 1},
            "depth": {"max_depth": 1},
        },
        llm=sn.mock_llm(delegating),
    )
    rows = {r["variant"]: r for r in cmp.rows}
    assert rows["free"]["status"] == "done" and "sub: plus bas" in rows["free"]["answer"]
    assert rows["capped"]["status"] == "incomplete" and rows["capped"]["model_calls"] == 2
    assert "max_model_calls (2)" in rows["capped"]["answer"]
    assert rows["tokens"]["status"] == "incomplete"
    assert "max_tokens (100)" in rows["tokens"]["answer"]
    # one helper spawned: the next spawn stops the run, as the other caps do
    assert rows["nodes"]["status"] == "incomplete"
    assert "max_nodes (1)" in rows["nodes"]["answer"]
    assert "depth limit (1)" in rows["depth"]["answer"] and "sub:" not in rows["depth"]["answer"]


def run(variants: dict, store=None) -> sn.Session:
    (variant,) = check_variants(team(), variants, sn.mock_llm(delegating))
    record, session = run_sync(
        run_session(variant, team(), sn.mock_llm(delegating), ["va"], store=store), what="a test"
    )
    assert record.status == "done" and session is not None
    return session


def test_durability_reattach_state_tool_context_and_token_counter_reach_the_session(
    tmp_path,
) -> None:
    state = {"langue": "français"}
    session = run(
        {
            "v": {
                "durability": "turn",
                "reattach": "session",
                "state": state,
                "tool_context": {"clé": "値"},
                "token_counter": lambda message: 7,
            }
        },
        store=tmp_path / "runs.db",
    )
    assert session.durability == "turn" and session.journal.durability == "turn"
    assert session.reattach == "session" and session.tool_context == {"clé": "値"}
    assert session.state == state and session.state is not state  # each run has its own
    assert session.token_counter(sn.Message(role="user", content="x")) == 7


def test_a_stored_variant_with_a_limit_reopens_with_it(tmp_path) -> None:
    cmp = sn.compare(
        team(),
        "va",
        {"capped": {"max_model_calls": 2, "durability": "exit"}},
        llm=sn.mock_llm(delegating),
        store=tmp_path / "runs.db",
    )
    session = cmp.open("capped", llm=sn.mock_llm(delegating))
    assert session.max_model_calls == 2 and session.durability == "exit"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"max_model_calls": 0}, "'v': max_model_calls must be a positive whole number"),
        ({"max_tokens": "beaucoup"}, "'v': max_tokens must be a positive whole number"),
        ({"max_nodes": True}, "'v': max_nodes must be a positive whole number"),
        ({"max_depth": True}, "'v': 'max_depth' must be a positive int"),
        ({"durability": "toujours"}, "'v': 'durability' must be one of 'turn', 'async', 'exit'"),
        ({"reattach": "jamais"}, "'v': 'reattach' must be one of 'run', 'session'"),
        ({"state": ["liste"]}, "'v': 'state' must be a dict"),
        ({"token_counter": 3}, "'v': 'token_counter' must be a function"),
        ({"store": "x.db"}, "'store' is neither an agent"),
    ],
)
def test_a_bad_session_option_fails_before_anything_runs(changes, message) -> None:
    asked: list[sn.ChatRequest] = []
    with pytest.raises(sn.ConfigurationError, match=message):
        sn.compare(team(), "va", {"v": changes}, llm=sn.mock_llm(lambda r: asked.append(r) or ""))
    assert asked == []
