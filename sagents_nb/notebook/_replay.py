"""A long stored log folded after the view's first paint: the tree is drawn at once from the
session's tree snapshot, its events are read and folded a slice at a time on the library loop
into a projector of their own, which the view's projector then takes over whole."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .._runtime.restore import collector_paused
from ..events import Event
from ._projector import Projector
from ._state import Loading

if TYPE_CHECKING:
    from .._runtime.result import TreeNode

FOLD_AT_ONCE = 5_000
"""Stored events a view folds before its first paint; a longer log is folded afterwards."""
CHUNK = 500
"""Events read and folded between two looks at the clock."""


class Replay:
    """Folds `events` into a projector apart from `shown`, then hands it over (`step`).

    Until then `shown` holds the tree snapshot's rows and nothing else, and says it is
    `loading`; events emitted meanwhile wait in its inbox, folded after the stored ones.
    The state once handed over is what folding at once gives: the events, then the tree
    snapshot (`Projector.apply_tree`), then `settle` (the cut runs), then the inbox.
    """

    def __init__(
        self,
        shown: Projector,
        events: Sequence[Event],
        tree: TreeNode,
        settle: Callable[[Projector], None],
    ) -> None:
        self.shown, self.events, self.tree, self.settle = shown, events, tree, settle
        self.total = len(events)
        self.staged = Projector(scope=shown.scope)
        self.staged.prices = shown.prices
        last_seq = events[-1].seq if events else 0
        with shown.lock:
            shown.loading = Loading(0, self.total, last_seq)
            shown.apply_tree(tree)

    def step(self, seconds: float) -> bool:
        """Read and fold events for about `seconds` (on the library loop); True once every
        one is folded and `shown` has taken the state over."""
        deadline = time.perf_counter() + seconds
        events, staged, loading = self.events, self.staged, self.shown.loading
        assert loading is not None, "a replay stepped after it ended"
        done = loading.done
        with collector_paused():  # what it reads and folds is kept
            while done < self.total:
                batch = list(events[done : done + CHUNK])
                staged.fold_all(batch)
                done += len(batch)
                if time.perf_counter() > deadline:
                    break
        loading.done = done
        if done < self.total:
            return False
        staged.apply_tree(self.tree)
        self.settle(staged)
        self.shown.adopt(staged)
        return True
