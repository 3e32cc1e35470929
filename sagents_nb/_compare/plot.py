"""Context size per turn, one line per variant, with compaction and sink markers, as static SVG
(no plotting library: it must survive an exported notebook)."""

from __future__ import annotations

import html
from dataclasses import dataclass

from .forgetting import Turn

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
MARKER_SHAPES = {
    "compaction": "triangle",
    "cold_sink": "diamond",
    "window_trim": "square",
    "context_full": "cross",
}
WIDTH, HEIGHT = 640, 320
LEFT, RIGHT, TOP, BOTTOM = 56, 150, 48, 40


@dataclass
class ContextPlot:
    """The context size of one agent per turn under each variant; shows as SVG."""

    agent: str
    series: dict[str, list[Turn]]
    """Variant -> the agent's turns."""

    @property
    def points(self) -> dict[str, list[tuple[int, int]]]:
        """Variant -> (turn, view tokens)."""
        return {v: [(t.turn, t.tokens) for t in turns] for v, turns in self.series.items()}

    def svg(self, *, highlight: int | None = None) -> str:
        """The plot as an SVG document; `highlight` draws a line at that turn."""
        return render_svg(self.agent, self.series, highlight=highlight)

    def _repr_svg_(self) -> str:
        return self.svg()


def _ticks(top: int, count: int = 4) -> list[int]:
    if top <= 0:
        return [0]
    step = max(1, top // count)
    magnitude = 10 ** (len(str(step)) - 1)
    step = ((step + magnitude - 1) // magnitude) * magnitude
    return list(range(0, top + 1, step))


def _marker(shape: str, x: float, y: float, colour: str, title: str) -> str:
    tip = f"<title>{html.escape(title)}</title>"
    if shape == "triangle":
        points = f"{x - 5:.1f},{y - 12:.1f} {x + 5:.1f},{y - 12:.1f} {x:.1f},{y - 4:.1f}"
        return f'<polygon class="marker" points="{points}" fill="{colour}">{tip}</polygon>'
    if shape == "diamond":
        points = f"{x:.1f},{y - 14:.1f} {x + 4:.1f},{y - 9:.1f} {x:.1f},{y - 4:.1f} {x - 4:.1f},{y - 9:.1f}"
        return f'<polygon class="marker" points="{points}" fill="{colour}">{tip}</polygon>'
    if shape == "square":
        return (
            f'<rect class="marker" x="{x - 4:.1f}" y="{y - 13:.1f}" width="8" height="8" '
            f'fill="{colour}">{tip}</rect>'
        )
    return (
        f'<path class="marker" d="M{x - 4:.1f},{y - 13:.1f} l8,8 m0,-8 l-8,8" '
        f'stroke="{colour}" stroke-width="2">{tip}</path>'
    )


def render_svg(agent: str, series: dict[str, list[Turn]], *, highlight: int | None = None) -> str:
    """An SVG line chart of view tokens per turn, one line per variant; text escaped."""
    max_turn = max((t.turn for turns in series.values() for t in turns), default=1)
    max_tokens = max((t.tokens for turns in series.values() for t in turns), default=1) or 1
    ticks_y = _ticks(max_tokens)
    top_y = max(max_tokens, ticks_y[-1]) or 1
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(turn: float) -> float:
        return LEFT + (plot_w * (turn - 1) / (max_turn - 1) if max_turn > 1 else plot_w / 2)

    def py(tokens: float) -> float:
        return TOP + plot_h - plot_h * tokens / top_y

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="sn-context-plot" width="{WIDTH}" '
        f'height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
        f'<text x="{LEFT}" y="16" font-size="13">{html.escape(f"context of {agent} per turn")}'
        "</text>",
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}" '
        'stroke="#444"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="#444"/>',
    ]
    for tick in ticks_y:
        y = py(tick)
        parts.append(
            f'<line x1="{LEFT - 3}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#eee"/>'
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{tick}</text>'
        )
    step = max(1, max_turn // 10)
    for turn in range(1, max_turn + 1, step):
        parts.append(
            f'<text x="{px(turn):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{turn}</text>'
        )
    parts.append(
        f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 6}" text-anchor="middle">turn</text>'
        f'<text x="14" y="{TOP + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {TOP + plot_h / 2:.1f})">view tokens</text>'
    )
    if highlight is not None and 1 <= highlight <= max_turn:
        x = px(highlight)
        parts.append(
            f'<line class="highlight" x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + plot_h}" '
            'stroke="#999" stroke-dasharray="4 3"/>'
        )
    for index, (variant, turns) in enumerate(series.items()):
        colour = COLOURS[index % len(COLOURS)]
        name = html.escape(variant)
        coords = " ".join(f"{px(t.turn):.1f},{py(t.tokens):.1f}" for t in turns)
        parts.append(f'<g class="series" data-variant="{name}">')
        if len(turns) > 1:
            parts.append(
                f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"/>'
            )
        for t in turns:
            x, y = px(t.turn), py(t.tokens)
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}">'
                f"<title>{name} · turn {t.turn} · {t.tokens} tokens · "
                f"forgot {len(t.forgotten)}</title></circle>"
            )
            for stack, marker in enumerate(t.markers):  # several at one turn: stacked up
                shape = MARKER_SHAPES.get(marker, "cross")
                parts.append(_marker(shape, x, y - 11 * stack, colour, f"{marker} ({variant})"))
        parts.append("</g>")
        legend_y = TOP + 14 * index
        parts.append(
            f'<line x1="{WIDTH - RIGHT + 12}" y1="{legend_y}" x2="{WIDTH - RIGHT + 30}" '
            f'y2="{legend_y}" stroke="{colour}" stroke-width="2"/>'
            f'<text x="{WIDTH - RIGHT + 34}" y="{legend_y + 4}">{name}</text>'
        )
    key_y = TOP + 14 * len(series) + 12
    for offset, (marker, shape) in enumerate(MARKER_SHAPES.items()):
        y = key_y + 16 * offset
        parts.append(_marker(shape, WIDTH - RIGHT + 21, y + 9, "#555", marker))
        parts.append(f'<text x="{WIDTH - RIGHT + 34}" y="{y + 4}">{marker}</text>')
    parts.append("</svg>")
    return "".join(parts)
