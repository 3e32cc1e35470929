"""Main: the top agent's kind; relevance view with recent turns protected and a recallable cold store."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any

from .._base.checks import check_int
from .._base.messages import Message, system
from .._tools.tool import Tool
from ..events import ColdRestore, ColdSink
from ._protocol import BaseKind, View
from ._relevance import Group, LexicalScorer, Scorer, checked_scorer, group_text, joins_group

if TYPE_CHECKING:
    from ._child import Child, OfferedTool


_score = attrgetter("score")
_start = attrgetter("start")
_first = itemgetter(0)


@dataclass
class _MainState:
    hot: list[Group] = field(default_factory=list)
    cold: list[Group] = field(default_factory=list)
    spans: list[list[int]] = field(default_factory=list)
    """The hot groups' message spans, adjacent ones merged (`_spans(hot)`, kept as hot changes):
    the view's runs of storage."""
    hot_tokens: int = 0
    """The hot groups' tokens, kept as hot changes."""
    cold_spans: list[list[int]] = field(default_factory=list)
    """`_spans(cold)`, kept as cold changes: what `dump_state` stores."""
    indexed: int = 0
    """Messages indexed into groups: with nothing sunk, the groups cover the whole history
    exactly when this is its length."""
    query: Any = None
    query_for: int = -1
    ranked_for: int = -1
    """The input the cold groups were last ranked against."""
    order: list[Group] | None = None
    """The candidates that stayed hot at the last relevance sink, worst first (by score, then
    start; `_least`); None once something else changed hot."""
    order_keys: list[tuple[float, int]] = field(default_factory=list)
    """(score, start) of each group of `order`."""
    order_query: Any = None
    """The query `order` was ranked for."""
    recall: Any = None
    """(kind, scorer, history, tool): the recall tool, rebuilt only when what it closes over changes."""
    fit: int | None = None
    """The view size an endpoint's context window allows (learnt from its overflow answer)."""


class Main(BaseKind):
    """Relevance view: the newest groups (an input with the reply to it, a tool call with its
    results: `split_groups`) and the current input's are protected, older ones are scored against
    the current input; beyond `top_k` (or over `budget_tokens`) the least relevant sink to cold storage, which the
    model can search with the `recall` tool. Storage (the whole history) is never changed.

    Args:
        top_k: older groups kept in view besides the protected recent ones; None keeps all.
        recent: newest groups always in view.
        budget_tokens: view size the request must fit; groups sink until it does.
        scorer: relevance scorer (`index(text)`, `score(query, item)`); lexical by default.
    """

    name = "main"

    def __init__(
        self,
        top_k: int | None = 64,
        *,
        recent: int = 16,
        budget_tokens: int | None = None,
        scorer: Scorer | None = None,
        max_turns: int = 50,
    ) -> None:
        where = "sn.kinds.Main(...)"
        check_int("top_k", top_k, where=where, minimum=0, optional=True)
        check_int("recent", recent, where=where, minimum=0)
        check_int("budget_tokens", budget_tokens, where=where, minimum=1, optional=True)
        checked_scorer(scorer, where)
        check_int("max_turns", max_turns, where=where, minimum=1)
        self.top_k = top_k
        self.recent = recent
        self.budget_tokens = budget_tokens
        self.scorer: Scorer = scorer or LexicalScorer()
        self.default_max_turns = max_turns

    def __repr__(self) -> str:
        return f"Main(top_k={self.top_k}, recent={self.recent}, budget_tokens={self.budget_tokens})"

    def _state(self, child: Child) -> _MainState:
        state = child.state_of(self.name, _MainState)
        if state is None:
            state = child.kind_state[self.name] = _MainState()
            for i, message in enumerate(child.history):
                self._index(state, child, i, message)
        return state

    def _index(self, state: _MainState, child: Child, i: int, message: Message) -> None:
        state.indexed += 1
        tokens = child.token_count(message)
        state.hot_tokens += tokens
        _add_span(state.spans, i, i + 1)
        if state.hot and state.hot[-1].end == i and joins_group(child.history, i):
            last = state.hot[-1]
            if last.scored is not None:  # ranked (with `recent=0`): its place in an order goes
                state.order = None
            last.end = i + 1
            last.tokens += tokens
            last.terms = last.scored = None
            return
        state.hot.append(Group(i, i + 1, tokens))

    def append_history(self, child: Child, *messages: Message) -> None:
        state = self._state(child)
        start = len(child.history)
        child.append(*messages)
        for offset, message in enumerate(messages):
            self._index(state, child, start + offset, message)

    def prepare(self, child: Child) -> None:
        state = self._state(child)
        budgets = [b for b in (self.budget_tokens, state.fit) if b is not None]
        if self.top_k is None and not budgets:
            return  # nothing can sink: skip the walk over the groups
        hot = state.hot
        candidates = _unprotected(hot, self.recent, _holding(hot, child.input_index))
        if self.top_k is not None and state.cold and state.ranked_for != child.input_index:
            # a new input: what sank for an earlier question may be what this one needs, so the
            # cold groups compete with the hot ones again (only a matching one comes back)
            state.ranked_for = child.input_index
            protected = set(hot).difference(candidates)  # groups hash by identity
            cold = set(state.cold)
            competing = sorted([*candidates, *state.cold], key=_start)
            best = self._ranked(state, child, competing)[: self.top_k]
            self._restore(child, state, [g for g in best if g in cold and g.score > 0])
            candidates = [g for g in state.hot if g not in protected]
        if self.top_k is not None and len(candidates) > self.top_k:
            if budgets:
                ranked = self._ranked(state, child, candidates)
                self._sink(child, state, ranked[self.top_k :], "relevance")
                candidates = sorted(ranked[: self.top_k], key=_start)
            else:
                self._sink(child, state, self._least(state, child, candidates), "relevance", True)
        if budgets:
            self._sink(child, state, self._over(state, child, candidates, min(budgets)), "budget")

    def _least(self, state: _MainState, child: Child, candidates: list[Group]) -> list[Group]:
        """`_ranked(candidates)[top_k:]`: the least relevant groups, best first. The others
        stay in `state.order`: while hot changes only by new groups and these sinks, they are
        its oldest candidates still, so the next turn ranks into it only the candidates after
        them; anything else that changes hot (another sink, a restore) or the query (a new
        input) ranks them all again."""
        assert self.top_k is not None
        order, keys = state.order, state.order_keys
        kept = len(order) if order is not None else 0
        fresh = None
        if (
            order is not None
            and kept <= len(candidates)
            and state.query_for == child.input_index
            and state.order_query is state.query
        ):
            fresh = self._scored(state, child, candidates[kept:])
            if any(group.score != group.score for group in fresh):
                fresh = None  # a NaN score has no place in an order
        if order is None or fresh is None:
            order = self._ranked(state, child, candidates)[::-1]
            keys = [(group.score, group.start) for group in order]
            state.order_query = state.query
        else:
            for group in fresh:
                key = (group.score, group.start)
                at = bisect.bisect(keys, key)
                keys.insert(at, key)
                order.insert(at, group)
        excess = len(candidates) - self.top_k
        least = order[:excess]
        del order[:excess], keys[:excess]
        nan = fresh is None and any(key[0] != key[0] for key in keys)
        state.order, state.order_keys = None if nan else order, keys
        return least[::-1]

    def _over(
        self, state: _MainState, child: Child, candidates: list[Group], budget: int
    ) -> list[Group]:
        """The least relevant of `candidates` (oldest first) that must sink for the view to fit
        `budget`."""
        total = state.hot_tokens
        over: list[Group] = []
        if total > budget and candidates:
            for group in reversed(self._ranked(state, child, candidates)):
                if total <= budget:
                    break
                over.append(group)
                total -= group.tokens
        return over

    async def overflow(self, child: Child, limit: int) -> str | None:
        """Sink the least relevant groups (the recent ones too, but for the newest and the
        current input's) until the view fits `limit`, which later views keep to as well."""
        state = self._state(child)
        state.fit = limit if state.fit is None else min(state.fit, limit)
        kept = _unprotected(state.hot, 1, _holding(state.hot, child.input_index))
        budget = limit - sum(map(child.token_count, child.system_messages()))
        over = self._over(state, child, kept, budget)
        if not over:
            return None
        self._sink(child, state, over, "overflow")
        return (
            f"{len(over)} older item(s) moved to cold storage (call `recall` with a query to "
            "bring back what you need)"
        )

    def _ranked(self, state: _MainState, child: Child, groups: list[Group]) -> list[Group]:
        """`groups` (oldest first) best first: by score, a tie going to the newer group."""
        # by (score, start) descending, without a tuple a group: a stable sort by score alone
        # of the groups newest first
        return sorted(reversed(self._scored(state, child, groups)), key=_score, reverse=True)

    def _scored(self, state: _MainState, child: Child, groups: list[Group]) -> list[Group]:
        """`groups`, each scored against the current input."""
        if state.query_for != child.input_index:
            state.query = self.scorer.index(child.input_text)
            state.query_for = child.input_index
        history = child.history
        query, scorer = state.query, self.scorer
        # a group's score holds while its query does (and its terms: a change clears `scored`)
        for group in [g for g in groups if g.scored is not query]:
            if group.terms is None:
                group.terms = scorer.index(group_text(history[group.start : group.end]))
            group.score, group.scored = scorer.score(query, group.terms), query
        return groups

    def _sink(
        self,
        child: Child,
        state: _MainState,
        groups: list[Group],
        reason: str,
        ranked: bool = False,
    ) -> None:
        """Sink `groups` to cold storage; `ranked`: they are what `_least` took out of
        `state.order`, which still holds the other candidates."""
        if not groups:
            return
        if not ranked:
            state.order = None
        before = state.hot_tokens
        for group in groups:
            del state.hot[bisect.bisect_left(state.hot, group.start, key=_start)]
            _remove_span(state.spans, group.start, group.end)
            _add_span(state.cold_spans, group.start, group.end)
            state.hot_tokens -= group.tokens
        state.cold.extend(groups)
        child.state_changed()
        previews = [_preview(child.history[g.start : g.end]) for g in groups[:5]]
        child.emit(
            ColdSink(
                sunk=len(groups),
                previews=previews,
                before_tokens=before,
                after_tokens=state.hot_tokens,
                reason=reason,
            )
        )

    def _restore(self, child: Child, state: _MainState, groups: list[Group]) -> None:
        if not groups:
            return
        before = state.hot_tokens
        back = set(groups)
        state.cold = [g for g in state.cold if g not in back]
        for group in groups:
            bisect.insort(state.hot, group, key=_start)
            _add_span(state.spans, group.start, group.end)
            _remove_span(state.cold_spans, group.start, group.end)
            state.hot_tokens += group.tokens
        child.state_changed()
        child.emit(
            ColdRestore(
                restored=len(groups),
                previews=[_preview(child.history[g.start : g.end]) for g in groups[:5]],
                before_tokens=before,
                after_tokens=state.hot_tokens,
            )
        )

    def build_context(self, child: Child, input: str) -> View:
        state = self._state(child)
        view = View(child.system_messages())
        if state.cold:
            view.append(
                system(
                    f"Context note: {len(state.cold)} older item(s) of this conversation were moved to "
                    "cold storage because they looked unrelated to the current task. Call `recall` "
                    "with a query to bring back what you need."
                )
            )
        head = sum(map(child.token_count, view))
        history = child.history
        if not state.cold and state.indexed == len(history):  # the groups cover it all
            view.runs = [len(view), 0, len(history)] if history else []
            view.extend(history)
            view.measure = (head + child.history_tokens, len(history))
            return view
        shown = len(view)
        runs: list[int] = []
        for start, end in state.spans:
            runs += (len(view), start, end - start)
            view.extend(history[start:end])
        view.measure = (head + state.hot_tokens, len(view) - shown)
        view.runs = runs
        return view

    def own_tools(self, child: Child) -> list[OfferedTool]:
        state = self._state(child)
        if not state.cold:
            return []
        made = state.recall  # a Tool (a pydantic model and its schema) is costly to build: reuse it
        scorer, history = self.scorer, child.history
        if made is None or made[0] is not self or made[1] is not scorer or made[2] is not history:
            made = state.recall = (self, scorer, history, self._recall_tool(child, state))
        return [made[3]]

    def _recall_tool(self, child: Child, state: _MainState) -> Tool:
        scorer, history = self.scorer, child.history

        def recall(query: str, limit: int = 3) -> str:
            """Search the conversation's cold storage and return the most relevant older items.

            Args:
                query: words describing what to find.
                limit: how many items to return.
            """
            wanted = scorer.index(query)
            for group in state.cold:
                if group.terms is None:
                    group.terms = scorer.index(group_text(history[group.start : group.end]))
            scored = [(scorer.score(wanted, g.terms), g) for g in state.cold]
            best = sorted((s for s in scored if s[0] > 0), key=lambda s: s[0], reverse=True)
            found = [_render(history[g.start : g.end]) for _, g in best[: max(1, limit)]]
            if found:
                return "\n---\n".join(found)
            return f"nothing in cold storage matches {query!r} ({len(state.cold)} item(s) there)"

        return Tool(recall)

    def dump_state(self, child: Child) -> Any:
        """The message spans in cold storage: `{"cold": [[start, end], ...]}`, and the view
        size an overflow taught (`"fit"`), if one did."""
        state = child.state_of(self.name, _MainState)
        if state is None:
            return None
        kept: dict[str, Any] = {"cold": [span.copy() for span in state.cold_spans]}
        if state.fit is not None:
            kept["fit"] = state.fit
        return kept

    def load_state(self, child: Child, state: Any) -> None:
        main = self._state(child)  # groups the restored history
        main.order = None
        spans = state["cold"]
        main.cold = [g for g in main.hot if _within(g, spans)]
        main.hot = [g for g in main.hot if not _within(g, spans)]
        main.spans = _spans(main.hot)
        main.cold_spans = _spans(main.cold)
        main.hot_tokens = sum(g.tokens for g in main.hot)
        main.fit = state.get("fit")

    def cold_messages(self, child: Child) -> list[Message]:
        """The messages currently sunk to cold storage, oldest first."""
        state = self._state(child)
        groups = sorted(state.cold, key=lambda g: g.start)
        return [m for g in groups for m in child.history[g.start : g.end]]


def _holding(groups: list[Group], index: int) -> Group | None:
    """The group among `groups` (sorted, hot) that holds message `index`: None if it sank."""
    at = bisect.bisect_right(groups, index, key=_start) - 1
    return groups[at] if at >= 0 and index < groups[at].end else None


def _unprotected(hot: list[Group], recent: int, holding: Group | None) -> list[Group]:
    """`hot` (sorted) but for its `recent` newest groups and `holding` (the input's)."""
    older = hot[: max(0, len(hot) - recent)]
    if holding is not None and older and holding.start <= older[-1].start:
        del older[bisect.bisect_left(older, holding.start, key=_start)]
    return older


def _add_span(spans: list[list[int]], start: int, end: int) -> None:
    """Add the span [start, end) (overlapping none of `spans`) to `spans`, merging neighbours."""
    at = bisect.bisect_right(spans, start, key=_first)
    after_previous = at > 0 and spans[at - 1][1] == start
    before_next = at < len(spans) and spans[at][0] == end
    if after_previous and before_next:
        spans[at - 1][1] = spans.pop(at)[1]
    elif after_previous:
        spans[at - 1][1] = end
    elif before_next:
        spans[at][0] = start
    else:
        spans.insert(at, [start, end])


def _remove_span(spans: list[list[int]], start: int, end: int) -> None:
    """Take [start, end) (within one of `spans`) out of `spans`, splitting that one if need be."""
    at = bisect.bisect_right(spans, start, key=_first) - 1
    span = spans[at]
    if span[0] == start and span[1] == end:
        del spans[at]
    elif span[0] == start:
        span[0] = end
    elif span[1] == end:
        span[1] = start
    else:
        spans.insert(at + 1, [end, span[1]])
        span[1] = start


def _spans(groups: list[Group]) -> list[list[int]]:
    """Message spans covered by `groups`, adjacent groups merged: `[[start, end], ...]`."""
    spans: list[list[int]] = []
    for group in sorted(groups, key=lambda g: g.start):
        if spans and spans[-1][1] == group.start:
            spans[-1][1] = group.end
        else:
            spans.append([group.start, group.end])
    return spans


def _within(group: Group, spans: list[list[int]]) -> bool:
    index = bisect.bisect_right(spans, group.start, key=_first) - 1
    return index >= 0 and group.end <= spans[index][1]


def _render(messages: Sequence[Message]) -> str:
    lines: list[str] = []
    for m in messages:
        if m.tool_calls:
            lines.extend(f"{m.role} called {c.name}({c.arguments})" for c in m.tool_calls)
        if m.content:
            lines.append(f"{m.role}: {m.content}")
    return "\n".join(lines)


def _preview(messages: Sequence[Message]) -> str:
    text = _render(messages)
    return text if len(text) <= 120 else text[:117] + "..."
