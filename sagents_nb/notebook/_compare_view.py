"""The live comparison view: variants side by side at one turn, each context diffed against a
baseline variant's at the same turn; one slider moves every column."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from .._compare.forgetting import ForgettingReport, Turn, message_key, preview
from ._words import counted

if TYPE_CHECKING:
    from .._compare.comparison import Comparison

STYLE = """<style>
.sn-cmp-col { font: 12px var(--jp-ui-font-family, sans-serif); padding: 4px 6px;
  border: 1px solid var(--jp-border-color2, #d0d7de); border-radius: 6px; min-width: 220px;
  margin-right: 6px; }
.sn-cmp-col h4 { margin: 0 0 4px; font-size: 13px; }
.sn-cmp-msg { margin: 2px 0; padding: 1px 4px; border-left: 3px solid #d0d7de; }
.sn-cmp-added { border-left-color: #1a7f37; background: #e6ffec; }
.sn-cmp-missing { border-left-color: #cf222e; background: #ffebe9; text-decoration: line-through; }
.sn-cmp-role { color: #57606a; margin-right: 4px; }
.sn-cmp-meta { color: #57606a; }
</style>"""


class ComparisonView(widgets.VBox):  # type: ignore[misc]
    """Variants in columns at the same turn of one agent; `turn`, `agent` and `baseline` are
    controls (and attributes), the plot marks the turn shown."""

    def __init__(self, comparison: Comparison, *, agent: str | None = None, item: Any = None):
        self.comparison = comparison
        self.report: ForgettingReport = comparison.forgetting(item)
        variants = self.report.variants
        agents = self.report.agents or [comparison.agent.name]
        chosen = agent or comparison.default_agent(self.report)
        self.agent_picker = widgets.Dropdown(
            options=agents, value=chosen if chosen in agents else agents[0], description="agent"
        )
        self.baseline_picker = widgets.Dropdown(
            options=variants, value=variants[0] if variants else None, description="diff against"
        )
        self.slider = widgets.IntSlider(value=1, min=1, max=1, description="turn")
        self.plot = widgets.HTML()
        self.columns = [widgets.HTML(layout=widgets.Layout(flex="1 1 0")) for _ in variants]
        controls = widgets.HBox([self.agent_picker, self.slider, self.baseline_picker])
        super().__init__(
            [
                widgets.HTML(STYLE),
                controls,
                self.plot,
                widgets.HBox(self.columns),
            ]
        )
        self.agent_picker.observe(lambda _: self._agent_changed(), names="value")
        self.slider.observe(lambda _: self.refresh(), names="value")
        self.baseline_picker.observe(lambda _: self.refresh(), names="value")
        self._agent_changed()

    @property
    def turn(self) -> int:
        return int(self.slider.value)

    @turn.setter
    def turn(self, value: int) -> None:
        self.slider.value = value

    @property
    def agent(self) -> str:
        """The agent whose turns the columns show (the `agent` dropdown)."""
        return str(self.agent_picker.value)

    @agent.setter
    def agent(self, name: str) -> None:
        self.agent_picker.value = _choice(name, self.agent_picker.options, "agent")

    @property
    def baseline(self) -> str | None:
        """The variant every column is diffed against (the `diff against` dropdown)."""
        value = self.baseline_picker.value
        return None if value is None else str(value)

    @baseline.setter
    def baseline(self, variant: str) -> None:
        self.baseline_picker.value = _choice(variant, self.baseline_picker.options, "variant")

    def _turns(self, variant: str) -> list[Turn]:
        return self.report.turns[variant].get(self.agent_picker.value, [])

    def _agent_changed(self) -> None:
        most = max((len(self._turns(v)) for v in self.report.variants), default=1)
        with self.slider.hold_trait_notifications():
            self.slider.max = max(1, most)
            self.slider.value = min(self.slider.value, self.slider.max)
        self.refresh()

    def refresh(self) -> None:
        """Redraw the plot and every column at the current turn."""
        turn = self.turn
        self.plot.value = self.comparison.plot(self.agent_picker.value, self.report.item).svg(
            highlight=turn
        )
        baseline = self._at(self.baseline_picker.value, turn)
        base_keys = [message_key(m) for m in baseline.view] if baseline else []
        for column, variant in zip(self.columns, self.report.variants, strict=True):
            column.value = self._column(variant, self._at(variant, turn), base_keys)

    def _at(self, variant: str | None, turn: int) -> Turn | None:
        if variant is None:
            return None
        turns = self._turns(variant)
        return turns[turn - 1] if 0 < turn <= len(turns) else None

    def _column(self, variant: str, here: Turn | None, base_keys: list[Any]) -> str:
        title = f"<h4>{html.escape(variant)}</h4>"
        if here is None:
            return f'<div class="sn-cmp-col">{title}<i>no turn {self.turn}</i></div>'
        keys = [message_key(m) for m in here.view]
        lines = []
        for message, key in zip(here.view, keys, strict=True):
            added = " sn-cmp-added" if key not in base_keys else ""
            lines.append(_message(message.role, preview(message, 200), added))
        own = set(keys)
        # what the baseline showed at this turn and this variant did not: diff's other side
        by_key = {
            message_key(m): m for t in self._turns(self.baseline_picker.value) for m in t.view
        }
        for key in base_keys:
            if key not in own and key in by_key:
                lines.append(_message(key[0], preview(by_key[key], 200), " sn-cmp-missing"))
        markers = f" · {', '.join(here.markers)}" if here.markers else ""
        meta = html.escape(
            f"{here.path} · {counted(here.tokens, 'token')} · {counted(len(here.view), 'message')} · "
            f"forgot {len(here.forgotten)}{markers}"
        )
        forgotten = "".join(
            f"<li>{html.escape(f.role)}: {html.escape(f.text)}</li>" for f in here.forgotten
        )
        lost = f"<details><summary>forgotten</summary><ul>{forgotten}</ul></details>"
        return (
            f'<div class="sn-cmp-col">{title}<div class="sn-cmp-meta">{meta}</div>'
            f"{''.join(lines)}{lost if forgotten else ''}</div>"
        )


def _choice(value: str, options: Any, what: str) -> str:
    """`value` if it is one of `options`, else a `ValueError` listing them."""
    if value not in options:
        raise ValueError(
            f"no {what} {value!r} in this comparison view (choose from: "
            f"{', '.join(map(str, options))})"
        )
    return value


def _message(role: str, text: str, extra: str) -> str:
    return (
        f'<div class="sn-cmp-msg{extra}"><span class="sn-cmp-role">{html.escape(role)}</span>'
        f"{html.escape(text)}</div>"
    )


def compare_view(comparison: Comparison, *, agent: str | None = None, item: Any = None) -> Any:
    """The live comparison view of `comparison` (see `Comparison.view`)."""
    return ComparisonView(comparison, agent=agent, item=item)
