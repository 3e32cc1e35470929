"""Main's view is its ranking's: groups best first by (score, start), a tie going to the newer
group. A cheaper way to rank must show the model the same views, sink and restore the same groups
and store the same state, turn after turn."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
from operator import attrgetter
from typing import Any

import msgspec

import sagents_nb as sn
from sagents_nb.kinds._main import Main
from sagents_nb.kinds._relevance import LexicalScorer

WORDS = ["Seine", "Paris", "寿司", "长城", "🍕", "pizza", "giraffe", "toml", "café", "read_file"]
"""Few words, so that many groups tie (the same terms, or as many shared ones)."""


class PlainRanking(Main):
    """Main ranked by sorting on (score, start) itself: the definition, whatever the order of
    the groups it is given."""

    def _ranked(self, state: Any, child: Any, groups: list[Any]) -> list[Any]:
        super()._ranked(state, child, groups)  # scores them
        return sorted(groups, key=attrgetter("score", "start"), reverse=True)

    def _least(self, state: Any, child: Any, candidates: list[Any]) -> list[Any]:
        return self._ranked(state, child, candidates)[self.top_k :]  # every candidate, each turn


@sn.tool
def look(q: str) -> str:
    """Look something up.

    Args:
        q: what to look up.
    """
    return f"trouvé : {q}"


def session_record(kind: Main, seed: int, stop: float = 0.2) -> tuple[list[dict[str, Any]], Any]:
    """A scripted session of eight inputs (tool calls, two at a time at most, and `recall`
    calls drawn from `seed`; an answer ends an input with chance `stop`): the views sent, the
    sinks, restores and recalls (other tool calls end in any order), and the state the kind
    stores."""
    rng = random.Random(seed)

    def text() -> str:
        return " ".join(rng.sample(WORDS, rng.randint(1, 2)))

    def handler(req: sn.ChatRequest) -> sn.Reply | str:
        chance = rng.random()
        if chance < stop:
            return f"fini : {text()}"
        if chance < stop + 0.07 and "recall" in req.tools:
            return sn.reply(tool_calls=[sn.call("recall", query=text())])
        return sn.reply(tool_calls=[sn.call("look", q=text()) for _ in range(rng.randint(1, 2))])

    agent = sn.Agent("main", tools=[look], kind=kind, max_turns=200)
    session = sn.Session(agent, llm=sn.mock_llm(handler))
    for _ in range(8):
        session.send(text()).result()
    return recorded(session, kind)


def recorded(session: sn.Session, kind: Main) -> tuple[list[dict[str, Any]], Any]:
    shown = ("context_built", "cold_sink", "cold_restore", "model_request")
    record = [
        {"type": e.type}
        | {k: v for k, v in msgspec.structs.asdict(e).items() if k not in ("seq", "ts", "duration")}
        for e in session.events
        if e.type in shown or (e.type == "tool_call_finished" and e.name == "recall")
    ]
    return record, kind.dump_state(session.root)


def test_mains_views_match_ranking_by_score_and_start_over_sessions_full_of_ties() -> None:
    for seed in range(20):
        rng = random.Random(seed)
        options = {
            "top_k": rng.randint(0, 4),
            "recent": rng.randint(0, 2),
            "budget_tokens": rng.choice([None, None, 150, 300]),
        }
        assert session_record(Main(**options), seed) == session_record(
            PlainRanking(**options), seed
        ), (seed, options)


class FullRanking(Main):
    """Main as it was before it kept its order: every candidate ranked at each sink."""

    def _least(self, state: Any, child: Any, candidates: list[Any]) -> list[Any]:
        return self._ranked(state, child, candidates)[self.top_k :]


class CountedRanking(Main):
    """Main, counting the sinks that ranked every candidate."""

    full = 0

    def _ranked(self, state: Any, child: Any, groups: list[Any]) -> list[Any]:
        CountedRanking.full += 1
        return super()._ranked(state, child, groups)


class Shaky(LexicalScorer):
    """Scores some items NaN (a scorer's bug a view must survive as it did)."""

    def score(self, query: frozenset[str], item: frozenset[str]) -> float:
        return math.nan if "pizza" in item else super().score(query, item)


def test_mains_kept_order_sinks_as_ranking_every_candidate_does_over_long_inputs() -> None:
    """Inputs of some thirty turns: most sinks rank only their new candidates into the order
    kept from the sink before, which must sink the groups that ranking them all sinks."""
    CountedRanking.full = 0
    sinks = 0
    for seed in range(30, 36):
        rng = random.Random(seed)
        options: dict[str, Any] = {"top_k": rng.randint(0, 6), "recent": rng.randint(0, 3)}
        kept = session_record(CountedRanking(**options), seed, stop=0.03)
        assert kept == session_record(FullRanking(**options), seed, stop=0.03), (seed, options)
        assert kept == session_record(PlainRanking(**options), seed, stop=0.03), (seed, options)
        sinks += sum(event["type"] == "cold_sink" for event in kept[0])
    assert sinks > 500 and CountedRanking.full < sinks / 4
    for seed in range(50, 54):
        options = {"top_k": 3, "recent": 1, "scorer": Shaky()}
        assert session_record(Main(**options), seed, stop=0.05) == session_record(
            FullRanking(**options), seed, stop=0.05
        ), seed


def retuned_record(kind: Main) -> tuple[list[dict[str, Any]], Any]:
    """One input of 80 turns whose tool changes the view's `recent` and `budget_tokens` now
    and then, mid-input."""
    turns = itertools.count(1)

    @sn.tool
    def retune(recent: int) -> str:
        """Change the view.

        Args:
            recent: newest groups always in view.
        """
        kind.recent, kind.budget_tokens = recent, (60 if recent == 2 else None)
        return "ok"

    def handler(req: sn.ChatRequest) -> Any:
        turn = next(turns)
        if turn > 80:
            return "fini"
        if turn % 12 == 0:
            return sn.reply(tool_calls=[sn.call("retune", recent=[3, 0, 2, 1, 4][turn // 12 % 5])])
        return sn.reply(tool_calls=[sn.call("look", q=" ".join(WORDS[turn % 7 : turn % 7 + 2]))])

    agent = sn.Agent("main", tools=[look, retune], kind=kind, max_turns=100)
    session = sn.Session(agent, llm=sn.mock_llm(handler))
    session.send("Paris café 寿司").result()
    return recorded(session, kind)


def test_a_view_retuned_mid_input_sinks_as_ranking_every_candidate_does() -> None:
    assert retuned_record(Main(top_k=4, recent=1)) == retuned_record(FullRanking(top_k=4, recent=1))


def test_main_keeps_the_newest_groups_when_every_score_ties() -> None:
    """The long benchmark's shape: every tool call scores 0 against the input, so the view is
    the input's group and the newest `top_k + recent` groups, oldest first."""

    @sn.tool
    def noop(x: int) -> str:
        """Do nothing.

        Args:
            x: a number.
        """
        return "ok"

    requests: list[list[dict[str, Any]]] = []

    def handler(req: sn.ChatRequest) -> sn.Reply | str:
        requests.append(req.messages)
        return sn.reply(tool_calls=[sn.call("noop", x=1)]) if len(requests) <= 60 else "fin"

    agent = sn.Agent("solo", tools=[noop], kind=Main(top_k=8, recent=4), max_turns=70)
    assert agent.run_sync("vas-y 🚀", llm=sn.mock_llm(handler)).status == "done"
    for turn, messages in enumerate(requests, start=1):
        calls = [m["tool_calls"][0]["id"] for m in messages if m.get("tool_calls")]
        if turn <= 14:  # the input's group (with the first call), 4 recent, 8 more: nothing sank
            assert messages[0]["content"] == "vas-y 🚀" and len(calls) == turn - 1
            continue
        assert messages[0]["role"] == "system" and "cold storage" in messages[0]["content"]
        assert messages[1]["content"] == "vas-y 🚀"
        assert calls == [f"call_{k}" for k in [1, *range(turn - 12, turn)]]


RELEVANCE_ONLY = [(4, 2), (1, 1), (2, 1), (5, 0), (3, 3)]
"""(top_k, recent) of views that tokens and the wire's bytes play no part in."""

RECORDED = "5a92730803cdac2c2140d37cd443f3808f116ce6d68367dd0710fc402b83fc78"
"""The digest of `views_digest()` as Main (before its ranking sorted without tuples) made it."""


def views_digest() -> str:
    """What the model saw (each request's runs of storage and the tools offered), how many
    groups sank and came back, and the stored state, over scripted sessions of the
    `RELEVANCE_ONLY` views (no text: the wire's spelling of arguments plays no part)."""
    kept = []
    for (top_k, recent), seed in zip(RELEVANCE_ONLY, range(100, 105), strict=True):
        record, state = session_record(Main(top_k=top_k, recent=recent), seed)
        for event in record:
            if event["type"] == "context_built":
                kept.append([event["view_messages"], event["hidden"], event["from_storage"]])
            elif event["type"] in ("cold_sink", "cold_restore"):
                kept.append([event["type"], event.get("sunk", event.get("restored"))])
            elif event["type"] == "model_request":
                kept.append(event["tools"])
        kept.append(state)
    return hashlib.sha256(json.dumps(kept, ensure_ascii=False).encode()).hexdigest()


def test_mains_views_are_those_it_showed_before_its_ranking_was_made_cheaper() -> None:
    """A change of what Main shows, sinks or stores changes this digest: if that change is
    meant, record the new digest (and say why in the commit)."""
    assert views_digest() == RECORDED
