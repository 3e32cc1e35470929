"""What a live view leaves in a saved notebook for readers without widgets (nbconvert HTML,
nbviewer, GitHub): its final state as static text and escaped HTML, in an output of its own
right below the widget's, kept current by updating that output after each cell runs."""

# An output of its own: when a notebook stores widget state, nbconvert renders a widget output
# as the widget alone (an empty box offline), whatever other formats it carries. Where the
# widget does render, view.css hides the static output that follows it.

from __future__ import annotations

import html
import weakref
from typing import TYPE_CHECKING, Any

from .._base.prices import DEFAULT
from .._runtime.costs import WAITING
from ._context_pane import context_pane
from ._decision_pane import decision_lines
from ._render import clip
from ._tree import more_words
from ._waterfall import NodeTokens, token_rollup
from ._words import counted

if TYPE_CHECKING:
    from ._projector import Projector
    from ._widget import LiveView

_COLOURS = {
    "done": "#1a7f37",
    "running": "#0969da",
    "paused": "#9a6700",
    "error": "#cf222e",
    "incomplete": "#bc4c00",
    "cancelled": "#57606a",
}
STATIC_TYPES = ("text/plain", "text/html")
_TOKEN_ROWS = 50
"""Nodes the static token table lists at most."""
_shown: weakref.WeakSet[LiveView] = weakref.WeakSet()
_hooked = False


def static_view(view: LiveView) -> dict[str, str]:
    """The view's current state as `text/plain` and `text/html` (every piece of text escaped):
    the tree, the answer and the latest turn's context of the top agent."""
    with view.projector.lock:
        view.projector.catch_up()
        header = view._header()
        tree = view._tree_rows.state(view.projector)  # the view's own sums: no second look
        root = view.projector.nodes.get(view.projector.root or "")
        detail = context_pane(root, None)["detail"] if root is not None else None
        decided = decision_lines(view.projector.decisions)
    run = header.get("run") or {}
    lines, rows = [f"sagents_nb · {header['title']}"], []
    if run:
        lines.append(f"run {run['number']} {run['status']}")
    later = header.get("later")
    if later:
        lines.append(f"({later['text']})")
    for depth, node in _walk(tree):
        if "words" in node:  # an aggregate row: the children not listed, by status
            lines.append("  " * depth + node["words"])
            rows.append(
                f'<div style="margin-left:{depth * 1.2}em"><i>{_e(node["words"])}</i></div>'
            )
            continue
        label = f"{node['id'].rpartition('/')[2]} [{node['kind']}] {node['status']}"
        label += f" · {counted(node['turns'], 'turn')} · {counted(node['tokens'], 'token')}"
        if node.get("prompt"):
            label += f" · {node['prompt']}"
        extra = f" · reattached ×{node['reattached']}" if node["reattached"] else ""
        if node["refused"]:
            label += f" · refused {len(node['refused'])}"
        lines.append("  " * depth + label + extra)
        extra += "".join(f" · refused: {_e(reason)}" for reason in node["refused"])
        colour = _COLOURS.get(node["status"], "#57606a")
        rows.append(
            f'<div style="margin-left:{depth * 1.2}em"><b>{_e(node["id"])}</b> '
            f'<span style="border:1px solid #ccc;border-radius:3px;padding:0 3px">'
            f"{_e(node['kind'])}</span> "
            f'<span style="color:{colour}">{_e(node["status"])}</span>'
            f" · {counted(node['turns'], 'turn')} · {counted(node['tokens'], 'token')}"
            f"{' · <i>' + _e(node['prompt']) + '</i>' if node.get('prompt') else ''}{extra}</div>"
        )
    answer = ""
    if run.get("text") is not None:
        lines.append(f"\n[{run['status']}] {run['text']}")
        answer = (
            '<div style="margin:6px 0;padding:2px 6px;border-left:3px solid #1a7f37;'
            f'white-space:pre-wrap">[{_e(run["status"])}] {_e(run["text"])}</div>'
        )
    context = ""
    if detail is not None:
        title = (
            f"Latest context of {tree['id']}: turn {detail['turn']}, "
            f"{counted(len(detail['view']) + detail['view_earlier'], 'message')} sent "
            f"({counted(detail['view_tokens'], 'token')} estimated)"
        )
        lines.append(f"\n{title}")
        items = []
        for message in detail["view"]:
            text = clip(message.get("text") or "", 2000)
            calls = ", ".join(f"{c['name']}({c['arguments']})" for c in message.get("calls", ()))
            shown = text + (f" → {calls}" if calls else "")
            lines.append(f"  {message['role']}: {shown}")
            items.append(
                f'<li><b>{_e(message["role"])}</b>: <span style="white-space:pre-wrap">'
                f"{_e(shown)}</span></li>"
            )
        context = f"<div><b>{_e(title)}</b><ol>{''.join(items)}</ol></div>"
    tokens = _token_table(view, run.get("number"), lines)
    decisions = ""
    if decided:
        lines.append("\nDecisions at pauses")
        lines.extend(f"  {line}" for line in decided)
        entries = "".join(f'<li style="white-space:pre-wrap">{_e(line)}</li>' for line in decided)
        decisions = f"<div><b>Decisions at pauses</b><ol>{entries}</ol></div>"
    forks = ""
    for index, (fork_view, seq) in enumerate(zip(view.fork_views, view._fork_seqs, strict=True)):
        title = f"fork {index} (this view's .forks[{index}]), branched at event {seq}"
        nested = static_view(fork_view)
        lines.append(f"\n{title}")
        lines.extend(f"  {line}" for line in nested["text/plain"].splitlines())
        forks += (
            f'<div style="margin:6px 0 0 1.2em;padding-left:6px;border-left:3px solid #8250df">'
            f"<b>{_e(title)}</b>{nested['text/html']}</div>"
        )
    head = _e(lines[0]) + (f" · run {run['number']} <b>{_e(run['status'])}</b>" if run else "")
    head += f" · <i>{_e(later['text'])}</i>" if later else ""
    body = (
        '<div class="sagents-static" style="font-family:monospace;font-size:12px">'
        f"<div>{head}</div>{''.join(rows)}{answer}{context}{tokens}{decisions}{forks}</div>"
    )
    return {"text/plain": "\n".join(lines), "text/html": body}


def _token_table(view: LiveView, number: int | None, lines: list[str]) -> str:
    """The run's tokens per node (own and subtree, reported) and costs (estimated, reported), as text lines
    added to `lines` and an escaped HTML table."""
    projector = view.projector
    with projector.lock:
        projector.timings.update(projector.events)
        run = projector.timings.runs.get(number) if number is not None else None
        waits = prices_wait(projector)
        nodes = (
            token_rollup(run, None, projector.prices, estimated=not waits)
            if run is not None
            else []
        )
    if not nodes:
        return ""
    title = f"Tokens by node, run {number} (reported; own / with the subtree)"
    if waits:  # the static part is made again after a later cell, the table loaded by then
        title += f"; estimated costs: {WAITING}"
    lines.append(f"\n{title}")
    cells = []
    for node in nodes[:_TOKEN_ROWS]:
        cost = f" · {_cost_words(node)}" if _cost_words(node) else ""
        own = f"{node.prompt_tokens} prompt + {node.completion_tokens} completion"
        below = f"{node.subtree_prompt_tokens} + {node.subtree_completion_tokens}"
        lines.append(f"  {'  ' * node.depth}{node.path}: {own} / {below}{cost}")
        cells.append(
            f'<tr><td style="padding-left:{node.depth * 1.2}em">{_e(node.path)}</td>'
            f"<td>{node.prompt_tokens}</td><td>{node.completion_tokens}</td>"
            f"<td>{node.subtree_prompt_tokens}</td><td>{node.subtree_completion_tokens}</td>"
            f"<td>{_e(cost.removeprefix(' · ') or '—')}</td></tr>"
        )
    if len(nodes) > _TOKEN_ROWS:
        lines.append(f"  … {len(nodes) - _TOKEN_ROWS} more nodes")
    head = "".join(
        f"<th>{name}</th>"
        for name in ("node", "prompt", "completion", "subtree prompt", "subtree completion", "cost")
    )
    return f"<div><b>{_e(title)}</b><table><tr>{head}</tr>{''.join(cells)}</table></div>"


def prices_wait(projector: Projector) -> bool:
    """Whether pricing the view's model calls would wait for genai-prices' table to load
    (`warm()` loads it meanwhile)."""
    book = projector.prices or DEFAULT
    return book.loading and any(
        book.waits(model) for node in projector.nodes.values() for model in node.spend.tokens
    )


def _cost_words(node: NodeTokens) -> str:
    """A subtree's cost in words: estimated (priced), reported (by CLIs), and the unpriced."""
    parts = []
    if node.subtree_estimated_usd is not None:
        parts.append(f"${node.subtree_estimated_usd:.4f} estimated")
    if node.subtree_cost_usd:
        parts.append(f"${node.subtree_cost_usd:.4f} reported")
    if node.unpriced:
        parts.append(f"{node.no_price} for {', '.join(node.unpriced)}")
    return " + ".join(parts)


def show(view: LiveView, bundle: dict[str, Any], metadata: dict[str, Any]) -> None:
    """Display the widget of `bundle`, then its static part as an output of its own (under the
    view's display id), and keep that part current."""
    from IPython.display import display

    static = {key: bundle[key] for key in STATIC_TYPES if key in bundle}
    widget = {**bundle, **dict.fromkeys(STATIC_TYPES, "")}
    display(widget, metadata=metadata, raw=True)
    display(static, raw=True, display_id=view.display_id)
    view.published = static.get("text/html")
    _shown.add(view)
    _hook()


def _refresh(*_args: Any) -> None:
    """After each cell: re-publish every shown view whose static part changed."""
    from IPython.display import update_display

    for view in list(_shown):
        if getattr(view, "_closed", False) or view.comm is None:
            _shown.discard(view)
            continue
        static = view.static_output()
        if static["text/html"] != view.published:
            view.published = static["text/html"]
            update_display(static, raw=True, display_id=view.display_id)


def _hook() -> None:
    global _hooked
    if _hooked:
        return
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return
    shell.events.register("post_run_cell", _refresh)
    _hooked = True


def _walk(node: dict[str, Any], depth: int = 0) -> Any:
    if not node:
        return
    yield depth, node
    for child in node.get("children", ()):
        yield from _walk(child, depth + 1)
    if "more" in node:
        yield depth + 1, {"words": more_words(node["more"])}


def _e(text: Any) -> str:
    return html.escape(str(text))
