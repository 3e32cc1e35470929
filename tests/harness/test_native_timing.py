"""A CLI child's reported cost and tokens reach the Timing tab's rollup and the result tree."""

from __future__ import annotations

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
