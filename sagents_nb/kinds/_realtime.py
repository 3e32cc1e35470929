"""Realtime: streams output per chunk; keeps the whole history; the view is a window of recent turns."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._base.checks import check_int
from .._base.messages import Message
from ..events import TextDelta, WindowTrim
from ._protocol import BaseKind, View, whole_view

if TYPE_CHECKING:
    from ._child import Child


@dataclass
class _RealtimeState:
    starts: list[int] = field(default_factory=list)
    dropped: int = 0
    fit: int | None = None
    """Turn groups an endpoint's context window allows (learnt from its overflow answer)."""
    queue: asyncio.Queue[str | None] | None = None
    pump: asyncio.Task[None] | None = None


class Realtime(BaseKind):
    """A session-long child: storage keeps every turn, the view holds the newest `window` turn groups.

    A turn group is one input and everything that answered it. Output is streamed and emitted per
    chunk through a queue, so event subscribers never hold up generation. While it works on one
    input, one more may wait: a newer one replaces it (the replaced one is answered superseded),
    and the one waiting cuts into the work at its next turn boundary (`interrupts`).

    Args:
        window: turn groups in view.
        max_turns: model calls per task.
    """

    name = "realtime"
    persistent = True
    stream = True
    waiting_inputs = 1  # one slot: the newest input waiting replaces an older one
    interrupts = True

    def __init__(self, window: int = 4, max_turns: int = 10) -> None:
        check_int("window", window, where="sn.kinds.Realtime(...)")
        check_int("max_turns", max_turns, where="sn.kinds.Realtime(...)", minimum=1)
        self.window = max(1, window)
        self.default_max_turns = max_turns

    def __repr__(self) -> str:
        return f"Realtime(window={self.window})"

    def _state(self, child: Child) -> _RealtimeState:
        state = child.state_of(self.name, _RealtimeState)
        if state is None:
            state = child.kind_state[self.name] = _RealtimeState()
            state.starts = [i for i, m in enumerate(child.history) if m.role == "user"]
        return state

    def append_history(self, child: Child, *messages: Message) -> None:
        state = self._state(child)
        start = len(child.history)
        child.append(*messages)
        state.starts.extend(start + i for i, m in enumerate(messages) if m.role == "user")

    def _window(self, state: _RealtimeState) -> int:
        return self.window if state.fit is None else min(self.window, state.fit)

    def build_context(self, child: Child, input: str) -> View:
        state = self._state(child)
        window = self._window(state)
        if len(state.starts) <= window:
            return whole_view(child)
        first = state.starts[-window]
        view = View(child.system_messages())
        view.runs = [len(view), first, len(child.history) - first]
        view.extend(child.history[first:])
        dropped = len(state.starts) - window
        if dropped > state.dropped:
            state.dropped = dropped
            child.state_changed()
            child.emit(
                WindowTrim(
                    dropped_groups=dropped,
                    kept_groups=window,
                    before_tokens=child.history_tokens,
                    after_tokens=sum(child.token_count(m) for m in view),
                )
            )
        return view

    async def overflow(self, child: Child, limit: int) -> str | None:
        """Narrow the window to the newest turn groups that fit `limit` (one at least)."""
        state = self._state(child)
        window, history, count = self._window(state), child.history, child.token_count
        starts = state.starts[-window:]
        total, keep = sum(map(count, child.system_messages())), 0
        for start, end in reversed(list(zip(starts, [*starts[1:], len(history)], strict=True))):
            total += sum(map(count, history[start:end]))
            if keep and total > limit:
                break
            keep += 1
        if not keep or keep >= len(starts):
            return None
        state.fit = keep
        child.state_changed()
        return f"the window holds the newest {keep} turn(s) now, {len(starts) - keep} fewer"

    def emit(self, child: Child, text: str) -> None:
        state = self._state(child)
        if state.queue is None:
            state.queue = asyncio.Queue()
            state.pump = asyncio.get_running_loop().create_task(_pump(child, state.queue))
        state.queue.put_nowait(text)

    def dump_state(self, child: Child) -> Any:
        state = child.state_of(self.name, _RealtimeState)
        if state is None:
            return None
        return {"dropped": state.dropped} | ({"fit": state.fit} if state.fit else {})

    def load_state(self, child: Child, state: Any) -> None:
        realtime = self._state(child)
        realtime.dropped = state["dropped"]
        realtime.fit = state.get("fit")

    async def flush(self, child: Child) -> None:
        """Wait until every chunk emitted so far has been delivered as an event."""
        state = self._state(child)
        if state.queue is not None and state.pump is not None:
            state.queue.put_nowait(None)
            await state.pump
            state.queue = state.pump = None


async def _pump(child: Child, queue: asyncio.Queue[str | None]) -> None:
    while (text := await queue.get()) is not None:
        child.emit(TextDelta(text=text))
