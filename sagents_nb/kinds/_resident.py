"""Resident: a child that persists across tasks, compacts by model-written summary, signals context_full."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .._base.checks import check_bool, check_int
from .._base.errors import LLMError
from .._base.messages import Message
from ..events import Compaction, ContextFull, RelevanceView
from ._protocol import BaseKind, CompactionReport, DisposePolicy, View, whole_view
from ._relevance import LexicalScorer, Scorer, checked_scorer, group_text, split_groups
from ._resident_control import RESIDENT_CONTROL

if TYPE_CHECKING:
    from ._child import Child, OfferedTool

SUMMARY_PREFIX = "Summary of the earlier conversation:\n"


@dataclass
class _ResidentState:
    latched: bool = False
    compactions: int = 0
    shown: tuple[int, int] = (-1, 0)
    """(input, groups left out) the last `relevance_view` event reported."""


class Resident(BaseKind):
    """One child per parent and agent that remembers across task calls.

    The view is light relevance: the newest `keep_recent` message groups, the current input and
    any summary are always in it; older groups only while they share terms with the current
    input (a `relevance_view` event says what was left out). Storage keeps everything. A task
    given while it works cuts into that work at its next turn boundary (`interrupts`).

    Args:
        window_tokens: the context window; over it, storage is compacted before the next request.
        keep_recent: newest message groups kept verbatim by compaction and always in view.
        max_turns: model calls per task.
        relevance: False shows the whole storage each turn.
        scorer: relevance scorer (`index(text)`, `score(query, item)`); lexical by default.
    """

    name = "resident"
    persistent = True
    interrupts = True

    def __init__(
        self,
        window_tokens: int = 8000,
        keep_recent: int = 4,
        max_turns: int = 10,
        *,
        relevance: bool = True,
        scorer: Scorer | None = None,
    ):
        where = "sn.kinds.Resident(...)"
        check_int("window_tokens", window_tokens, where=where, minimum=1)
        check_int("keep_recent", keep_recent, where=where, minimum=0)
        check_int("max_turns", max_turns, where=where, minimum=1)
        check_bool("relevance", relevance, where=where)
        checked_scorer(scorer, where)
        self.window_tokens = window_tokens
        self.keep_recent = keep_recent
        self.default_max_turns = max_turns
        self.relevance = relevance
        self.scorer: Scorer = scorer or LexicalScorer()

    def __repr__(self) -> str:
        return f"Resident(window_tokens={self.window_tokens}, keep_recent={self.keep_recent})"

    def _state(self, child: Child) -> _ResidentState:
        state = child.state_of(self.name, _ResidentState)
        if state is None:
            state = child.kind_state[self.name] = _ResidentState()
        return state

    def append_history(self, child: Child, *messages: Message) -> None:
        child.append(*messages)
        state = self._state(child)
        tokens = child.context_tokens()
        if not state.latched and tokens >= 0.9 * self.window_tokens:
            state.latched = True
            child.emit(ContextFull(tokens=tokens, window=self.window_tokens))
            child.state_changed()
            if child.parent is not None:
                child.parent.notices.append(
                    f"Resident agent {child.path} is at {tokens} of {self.window_tokens} tokens "
                    f"({100 * tokens // self.window_tokens}% of its context window). Call "
                    f"resident_agents with action=compress and id={child.path} to compact it, or "
                    "action=destroy to end it."
                )

    def build_context(self, child: Child, input: str) -> View:
        history = child.history
        groups = split_groups(history, child.token_count)
        if not self.relevance or not 0 < self.keep_recent < len(groups):
            return whole_view(child)
        recent_from = groups[-self.keep_recent].start
        query, scorer = self.scorer.index(input), self.scorer
        view = View(child.system_messages())
        runs: list[int] = []
        left_out = 0
        for group in groups:
            messages = history[group.start : group.end]
            if (
                group.start >= recent_from
                or group.start == child.input_index
                or messages[0].meta.get("summary")
                or scorer.score(query, scorer.index(group_text(messages))) > 0
            ):
                if runs and runs[-2] + runs[-1] == group.start:
                    runs[-1] += len(messages)
                else:
                    runs += (len(view), group.start, len(messages))
                view.extend(messages)
            else:
                left_out += 1
        view.runs = runs
        state = self._state(child)
        if left_out and state.shown != (child.input_index, left_out):
            state.shown = (child.input_index, left_out)
            child.emit(
                RelevanceView(
                    kept_groups=len(groups) - left_out,
                    left_out=left_out,
                    before_tokens=child.context_tokens(),
                    after_tokens=sum(map(child.token_count, view)),
                )
            )
        return view

    async def maintain(self, child: Child) -> None:
        if child.context_tokens() > self.window_tokens:
            await self.compact(child, reason="window")

    async def compact(
        self, child: Child, keep_recent: int | None = None, *, reason: str = "requested"
    ) -> CompactionReport:
        keep = self.keep_recent if keep_recent is None else keep_recent
        history = child.history
        groups = split_groups(history, child.token_count)
        cut = groups[-keep].start if 0 < keep < len(groups) else (len(history) if keep <= 0 else 0)
        older, recent = list(history[:cut]), history[cut:]
        before = child.context_tokens()
        if not older:
            return CompactionReport("truncation", before, before, 0, error="nothing to compact")
        summary: str | None = None
        error: str | None = None
        try:
            summary = await child.summarise(older)
        except LLMError as exc:
            error = str(exc)
        if summary and summary.strip():
            kept = [
                Message(
                    role="system", content=SUMMARY_PREFIX + summary.strip(), meta={"summary": True}
                ),
                *recent,
            ]
            strategy: Literal["summary", "truncation"] = "summary"
        else:
            error = error or "the summariser returned no text"
            kept, strategy = list(recent), "truncation"
        child.replace_history(kept)
        state = self._state(child)
        state.latched = False
        state.compactions += 1
        child.state_changed()
        after = child.context_tokens()
        report = CompactionReport(strategy, before, after, len(older), summary, error)
        child.emit(
            Compaction(
                strategy=strategy,
                reason=reason,
                before_tokens=before,
                after_tokens=after,
                removed=len(older),
                summary=summary,
                error=error,
            )
        )
        return report

    async def overflow(self, child: Child, limit: int) -> str | None:
        """Compact (keeping `keep_recent` groups, then only the newest if that is not enough)."""
        removed, how = 0, "summarised"
        for keep in dict.fromkeys((self.keep_recent, 1)):
            report = await self.compact(child, keep, reason="overflow")
            removed += report.removed
            how = "summarised" if report.strategy == "summary" else "dropped"
            if report.removed and report.after_tokens <= limit:
                break
        return f"{removed} older message(s) {how}" if removed else None

    def dispose(self, child: Child, policy: DisposePolicy) -> str:
        return child.release_inbox(policy)

    def parent_tools(self) -> list[OfferedTool]:
        return [RESIDENT_CONTROL]

    def describe(self, child: Child) -> dict[str, Any]:
        state = self._state(child)
        return {
            "id": child.path,
            "agent": child.agent.name,
            "status": child.status,
            "tokens": child.context_tokens(),
            "window_tokens": self.window_tokens,
            "messages": len(child.history),
            "queued": len(child.inbox),
            "compactions": state.compactions,
            "context_full": state.latched,
        }

    def dump_state(self, child: Child) -> Any:
        state = child.state_of(self.name, _ResidentState)
        if state is None:
            return None
        return {"latched": state.latched, "compactions": state.compactions}

    def load_state(self, child: Child, state: Any) -> None:
        resident = self._state(child)
        resident.latched = state["latched"]
        resident.compactions = state["compactions"]
