"""Recovery from a context overflow: the endpoint said the view is too long, so the kind shrinks
the next one (its own way, else the oldest message groups leave the view), the model is told
what was set aside, and the request is sent again, twice at most."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._base.errors import LLMError
from .._base.messages import Message
from .._endpoints.overflow import context_overflow
from ..events import ContextFull, WindowTrim
from ..kinds import View
from ..kinds._relevance import split_groups

if TYPE_CHECKING:
    from ..kinds import ChildKind
    from .node import Node

MAX_SHRINKS = 2
"""Shrinks tried for one request before the task ends in error."""

SHARE = (0.75, 0.5)
"""The part of the refused view (or of the endpoint's window, if smaller) each shrink keeps."""


@dataclass
class ViewFit:
    """A node's views are cut to `limit` tokens (its kind had no means of its own)."""

    limit: int
    dropped: int = 0
    """Message groups the last cut left out (a `window_trim` event says when it changes)."""


async def shrink(
    node: Node, kind: ChildKind, view: Sequence[Message], error: LLMError, tries: int
) -> None:
    """Make `node`'s next view smaller after the endpoint refused `view` (`tries` shrinks made
    for this request already); re-raise `error` when it is not an overflow, and end the task
    with an error saying what to do when the shrinks are spent."""
    overflow = context_overflow(error)
    if overflow is None:
        raise error
    tokens = sum(map(node.token_count, view))
    if tries >= MAX_SHRINKS:
        window = f" of {overflow.window} tokens" if overflow.window else ""
        raise LLMError(
            f"the conversation does not fit the endpoint's context window{window}: it answered "
            f"{overflow.said!r} again after earlier context was set aside {tries} times (the "
            f"view is now about {tokens} tokens). Start a new session or fork an earlier point, "
            "use a model with a larger window, or bound the view (sn.kinds.Main(budget_tokens="
            "...), Resident(window_tokens=...), Realtime(window=...))",
            base_url=error.base_url,
        ) from error
    base = min(tokens, overflow.window) if overflow.window else tokens
    limit = max(1, int(base * SHARE[tries]))
    node.emit(
        ContextFull(tokens=tokens, window=overflow.window or limit, endpoint_said=overflow.said)
    )
    what = await kind.overflow(node, limit)
    if what is None:
        node.view_fit = ViewFit(limit)
        what = f"the oldest messages of this task left the view (it holds about {limit} tokens)"
    node.notices.append(
        "Context note: the endpoint said this conversation no longer fits its context window, "
        f"so earlier context was set aside: {what}. Ask again for anything you still need."
    )


def fit_view(node: Node, view: View) -> View:
    """`view` within the node's `view_fit`: its oldest message groups left out, but never the
    system prompt, the current input's group or the newest group."""
    fit = node.view_fit
    assert fit is not None
    count = node.token_count
    total = before = sum(map(count, view))
    groups = split_groups(view, count)
    current = node.history[node.input_index] if node.input_index >= 0 else None
    dropped: set[int] = set()
    for group in groups[:-1]:
        if total <= fit.limit:
            break
        members = view[group.start : group.end]
        if members[0].role == "system" or any(m is current for m in members):
            continue
        dropped.update(range(group.start, group.end))
        total -= group.tokens
    if not dropped:
        return view
    fitted = View(m for i, m in enumerate(view) if i not in dropped)
    left_out = sum(1 for g in groups if g.start in dropped)
    if left_out != fit.dropped:
        fit.dropped = left_out
        node.emit(
            WindowTrim(
                dropped_groups=left_out,
                kept_groups=len(groups) - left_out,
                before_tokens=before,
                after_tokens=total,
            )
        )
    return fitted
