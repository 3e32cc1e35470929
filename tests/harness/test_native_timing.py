"""A CLI child's reported cost and tokens reach the Timing tab's rollup and the result tree."""

from __future__ import annotations

from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb.notebook import token_rollup

from .test_native_kind import coder, delegate_once

pytestmark = pytest.mark.timeout(60)


def test_a_cli_childs_cost_is_shown_as_reported_and_rolled_up(fake_cli) -> None:
    session = sn.Session(
        sn.Agent("boss", team=[coder(fake_cli, "happy")]), llm=sn.mock_llm(delegate_once)
    )
    result = session.send("go").result()
    boss, child = token_rollup(result)
    assert child.path == "boss/coder.1" and child.cost_usd == child.subtree_cost_usd == 0.0123
    assert boss.cost_usd is None and boss.subtree_cost_usd == 0.0123
    assert (boss.priced, boss.spent) == (1, 2)  # the mock-served parent has no price
    truth = result.tree.children[0].usage
    assert (child.prompt_tokens, child.completion_tokens) == (
        truth.prompt_tokens,
        truth.completion_tokens,
    )
    assert result.tree.subtree_cost_usd == 0.0123


def test_a_cli_childs_cost_stays_reported_beside_its_parents_estimate(fake_cli) -> None:
    def parent(request: sn.ChatRequest) -> Any:
        reply = delegate_once(request)
        usage = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}
        return reply if not isinstance(reply, str) else sn.reply(reply, usage=usage)

    session = sn.Session(
        sn.Agent("boss", team=[coder(fake_cli, "happy")]),
        llm=sn.mock_llm(parent, model="gpt-4o"),
    )
    result = session.send("go").result()
    child = result.node_cost("boss/coder.1")
    assert child.reported_usd == 0.0123 and child.estimated_usd is None
    cost = result.cost
    assert cost.reported_usd == 0.0123 and cost.estimated_usd is not None
    assert cost.usd == pytest.approx(cost.estimated_usd + 0.0123)
    assert "$0.0123 reported" in str(cost) and "estimated" in str(cost)
    boss, row = token_rollup(result)
    assert (row.cost_usd, row.estimated_usd, row.unpriced) == (0.0123, None, ())
    assert boss.subtree_cost_usd == 0.0123 and boss.subtree_estimated_usd == cost.estimated_usd
