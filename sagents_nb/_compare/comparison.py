"""`Comparison`: the runs of a compare or sweep, as a table, a forgetting report and a plot."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._base.errors import ConfigurationError
from .forgetting import ForgettingReport
from .plot import ContextPlot
from .record import RunRecord
from .table import COLUMNS, html_table, row, text_table

if TYPE_CHECKING:
    from .._runtime.agent import Agent
    from .._runtime.session import Session
    from .variants import Variant

MISSING_PANDAS = (
    "Comparison.to_pandas() needs pandas, an optional extra: pip install 'sagents_nb[pandas]' "
    "(or use .rows, plain dicts)"
)


class Comparison:
    """What `sn.compare` and `sn.sweep` return: one run per (item, variant).

    `.rows` is the table (plain dicts), `.to_pandas()` the same as a DataFrame; `.forgetting()`
    reports what each variant forgot; `.plot()` draws context size per turn; `.view()` opens
    the live side-by-side view; `.open(variant)` reopens a stored run as a live session.
    """

    def __init__(
        self,
        records: list[RunRecord],
        *,
        agent: Agent,
        variants: list[Variant],
        store: Any = None,
        interrupted: bool = False,
    ) -> None:
        self.records = records
        self.agent = agent
        self._variants = {v.name: v for v in variants}
        self.store = store
        """The store the runs were recorded in (when the sweep had one)."""
        self.interrupted = interrupted
        """The sweep was cancelled (Ctrl-C): finished runs are kept, the rest are `cancelled`."""

    @property
    def variants(self) -> list[str]:
        """The variants' names, in the order given."""
        return list(self._variants)

    @property
    def items(self) -> list[Any]:
        """The items' ids, in the order given."""
        return list(dict.fromkeys(r.item for r in self.records))

    @property
    def rows(self) -> list[dict[str, Any]]:
        """One dict per (item, variant): status, answer, turns, model and tool calls, tokens,
        seconds, compactions, sinks, trims, context_full signals, peak context, error, stored
        session, whether it was reused from the store and, if a stored run was not, why."""
        return [row(r) for r in self.records]

    def to_pandas(self) -> Any:
        """The table as a `pandas.DataFrame`: one row per (item, variant), the columns of
        `.rows` (pandas is an optional extra: `pip install 'sagents_nb[pandas]'`)."""
        import importlib

        try:
            pandas = importlib.import_module("pandas")
        except ImportError as exc:
            raise ImportError(MISSING_PANDAS) from exc
        return pandas.DataFrame(self.rows, columns=list(COLUMNS))

    def record(self, variant: str, item: Any = None) -> RunRecord:
        """The run of `variant` on `item` (default: the first item)."""
        item = self.items[0] if item is None and self.records else item
        for r in self.records:
            if r.variant == variant and r.item == item:
                return r
        raise KeyError(
            f"no run of variant {variant!r} on item {item!r} "
            f"(variants: {', '.join(self.variants)}; items: {self.items})"
        )

    def forgetting(self, item: Any = None) -> ForgettingReport:
        """What each variant forgot on `item` (default: the first item)."""
        return ForgettingReport([self.record(v, item) for v in self._present(item)])

    def plot(self, agent: str | None = None, item: Any = None) -> ContextPlot:
        """Context size per turn of `agent` (default: the busiest child, else the top agent),
        one line per variant, with compaction/sink/trim/context_full markers."""
        report = self.forgetting(item)
        agent = agent or self.default_agent(report)
        return ContextPlot(agent, {v: report.turns[v].get(agent, []) for v in report.variants})

    def default_agent(self, report: ForgettingReport | None = None) -> str:
        """The agent the plot and view show by default: the child with the most turns."""
        report = report or self.forgetting()
        counts: dict[str, int] = {}
        for by_agent in report.turns.values():
            for name, turns in by_agent.items():
                counts[name] = counts.get(name, 0) + len(turns)
        children = {n: c for n, c in counts.items() if n != self.agent.name}
        pool = children or counts
        return max(pool, key=lambda n: pool[n]) if pool else self.agent.name

    def view(self, agent: str | None = None, item: Any = None) -> Any:
        """The live comparison view: variants side by side, one turn slider for all, each
        context diffed against the first variant's at the same turn."""
        from ..notebook import compare_view

        return compare_view(self, agent=agent, item=item)

    def save_html(self, path: str | os.PathLike[str]) -> Path:
        """Write the comparison (its table, plot and what each variant forgot) and every run's
        view to one self-contained HTML file anyone can open, each view's tabs working
        offline (no kernel, no network request). Returns the file's path."""
        from .._base.checks import check_path
        from ..notebook import save_html  # the display layer: loaded when a file is written

        return save_html(self, check_path("path", path, where="comparison.save_html()"))

    def open(self, variant: str, item: Any = None, **options: Any) -> Session:
        """Reopen a stored run as a live `sn.Session`, set up as its variant was (its agents,
        session options and, if it had one, its own endpoint); `options` go to
        `sn.Session.open` (e.g. `llm=` to go on talking). The sweep needs `store=`."""
        from .._runtime.session import Session

        record = self.record(variant, item)
        if self.store is None or record.session_id is None:
            raise ConfigurationError(
                "this comparison was not stored: run it with store='runs.db' to reopen its runs"
            )
        chosen = self._variants[variant]
        tree, endpoint, session_options = chosen.build(self.agent, _no_llm)
        if "llm" in chosen.session:
            session_options["llm"] = endpoint
        options = {**session_options, **options}
        return Session.open(self.store, record.session_id, agent=tree, **options)

    def _present(self, item: Any) -> list[str]:
        item = self.items[0] if item is None and self.records else item
        return [r.variant for r in self.records if r.item == item]

    def __repr__(self) -> str:
        statuses: dict[str, int] = {}
        for r in self.records:
            statuses[r.status] = statuses.get(r.status, 0) + 1
        counts = ", ".join(f"{n} {s}" for s, n in statuses.items())
        extra = ", interrupted" if self.interrupted else ""
        return (
            f"Comparison({len(self.variants)} variants x {len(self.items)} items: {counts}{extra})"
        )

    def __str__(self) -> str:
        return text_table(self.rows)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        rows = self.rows
        parts = [html_table(rows)]
        if self.records:
            plot = self.plot()
            if any(plot.series.values()):
                parts.append(plot.svg())
            parts.append(f"<pre>{html.escape(str(self.forgetting()))}</pre>")
        if self.interrupted:
            parts.insert(0, "<p><b>interrupted</b>: unfinished runs are marked cancelled</p>")
        return {
            "text/plain": f"{self!r}\n{text_table(rows)}",
            "text/html": '<div class="sn-comparison">' + "".join(parts) + "</div>",
        }


def _no_llm() -> Any:
    """A reopened run needs an endpoint only to go on; `Session.open` takes one then."""
    from .._endpoints.mock import mock_llm

    return mock_llm(lambda request: "")
