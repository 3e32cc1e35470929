"""The view without a kernel: every pane a click can ask for, worked out once by the projector and
kept in the page (`snapshot`), and the same view module drawing from it through a model that
answers from that state (`static/offline.js`), in one HTML file (`save_html`) or in the static
output a notebook keeps for nbconvert and nbviewer (`viewer_html`).

What a click asks for is a `Focus`; each one the file answers is keyed by the fields the front
end changes (`focus_key`, the same in `offline.js`): for every node (and none chosen), every tab
at its newest page, every page of its long lists, every turn of its context (its diff), the
Timing tab of every run, the event log filtered by each type and by the node. A focus the file
does not hold (a zoomed chart, several types at once, a page of a context column) shows the
nearest one it holds, with a notice saying so.

Repeated text and structures (a message in every later turn's context, the chart in every
turn's pane) are kept once (`intern`): a value that occurs again is a reference into a table."""

from __future__ import annotations

import base64
import gzip
import html
import json
import re
import uuid
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._base.prices import DEFAULT
from ._export import prices_wait, static_view
from ._log_panes import Wire, event_row
from ._paging import PAGE
from ._panes import TABS, Focus, pane_state
from ._render import clip
from ._tree import TreeAsk, tree_state
from ._view_module import MARK, STATIC, view_module

if TYPE_CHECKING:
    from ._widget import LiveView

REF = "\x01"
"""What starts a reference into the table of kept values (a string that starts with it is itself
kept in the table, so a reference is never mistaken for text)."""
LONG = 48
"""Characters a string has at least to be kept once in the table."""
LARGE = 160
"""Characters of JSON a structure has at least to be kept once in the table."""
TOP, DEEP = 2, 6
"""The levels of the saved state whose structures are told apart by their JSON (the state
itself and its lists of panes, events and rows are each one of a kind)."""
CONTEXT_TURNS = 300
"""Turns of a node whose Context tab a file saves, the newest (an older one shows the oldest
saved, with a notice): each turn's pane holds its view, storage and changes."""
OUTPUT_TURNS = 50
"""The same in a notebook's static output, made again after each cell that changed the view."""
OUTPUT_EVENTS = 20_000
OUTPUT_NODES = 300
"""Events and nodes past which a notebook's static output holds the view's text only, not its
panes (worked out after each cell, they would cost seconds; `save_html` writes them all). While
the view's run streams it holds the text too: the panes, made on the kernel's main thread under
the projector's lock, would hold up the clicks and the live pushes for as long (hundreds of ms
at 200 nodes), and be stale at once; they are made after the first cell once it has stopped."""
EVENT_JSON = 4000
"""Characters of an event's JSON the Events tab shows when it is opened (as the live view)."""
OFFLINE_JS = STATIC / "offline.js"
LEFT_OUT = (
    "This file holds the panes the view shows at a click; this one (a zoomed chart, several "
    "types at once, a page of a context column) was not saved: it shows the nearest saved one."
)


_json = json.JSONEncoder(ensure_ascii=False, default=str).encode
_sorted_json = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str).encode
"""`json.dumps` with these options, without making an encoder at each of the many calls of a
snapshot (`snapshot`, `intern`: tens of thousands at 100 nodes)."""


def focus_key(
    node: str | None,
    tab: str,
    *,
    turn: int | None = None,
    start: int | None = None,
    run: int | None = None,
    types: tuple[str, ...] = (),
    node_only: bool = False,
) -> str:
    """The key of a saved pane (`offline.js` builds the same from its focus)."""
    parts = [node or "", tab, _n(turn), _n(start), _n(run), ",".join(sorted(types))]
    return "\x1f".join([*parts, "1" if node_only else ""])


def _n(value: int | None) -> str:
    return "" if value is None else str(value)


def snapshot(view: LiveView, turns: int = CONTEXT_TURNS) -> dict[str, Any]:
    """Everything the view draws without a kernel: its header (controls off), tree, every pane
    a click asks for (by `focus_key`), each event's JSON, and its forks' own snapshots."""
    projector = view.projector
    panes: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    keys: dict[str, list[Any]] = {}
    cache: dict[int, str] = {}
    with projector.lock:
        projector.catch_up()
        exchanges = view.target.exchanges()
        wire = Wire(exchanges) if exchanges is not None else None  # keyed once for every node
        header = view._header()
        # a file has no kernel to list more of a node's children: every one is listed
        tree = tree_state(projector, TreeAsk(more=dict.fromkeys(projector.nodes, 1 << 30)))
        for key, focus in _foci(view, turns):
            state = pane_state(projector, focus, wire, cache)
            path = state.pop("node", None)
            for name in ("chosen", "tab", "at"):
                state.pop(name, None)
            text = _sorted_json(state)
            index = seen.setdefault(text, len(panes))
            if index == len(panes):
                panes.append(state)
            keys[key] = [index, path]
        events = [
            [event.seq, clip(event.model_dump_json(indent=1), EVENT_JSON)]
            for event in projector.events
        ]
        rows = [event_row(event, cache, False) for event in projector.events]
    header.update(
        live=False,
        resumable=False,
        fork=False,
        kinds=[],
        kind_options={},
        preprocessors=[],
        notice={"id": 0, "text": "", "error": False},
        forks=[{**ref, "model": f"fork-{ref['index']}"} for ref in view._fork_refs()],
        offline=True,
    )
    return {
        "header": header,
        "tree": tree,
        "panes": panes,
        "keys": keys,
        "events": events,
        "rows": rows,
        "page": PAGE,
        "tabs": list(TABS),
        "left_out": LEFT_OUT,
        "forks": [snapshot(fork, turns) for fork in view.fork_views],
    }


def _foci(view: LiveView, saved_turns: int) -> Iterator[tuple[str, Focus]]:
    """Every focus a click in the view can ask for that the file answers, with its key."""
    projector = view.projector
    nodes = list(projector.nodes)
    timed = sorted(projector.timings.runs) if projector.timings.runs else []
    for chosen in [None, *nodes]:
        path = chosen or projector.followed()
        node = projector.nodes.get(path or "")
        for tab in TABS:
            yield focus_key(chosen, tab), Focus(node=chosen, tab=tab)
        if node is not None:
            lists = {
                "transcript": len(node.transcript),
                "tools": len(node.cards),
                "compaction": len(node.timeline),
            }
            for tab, total in lists.items():
                for start in _starts(total):
                    yield focus_key(chosen, tab, start=start), Focus(chosen, tab, start=start)
            turns = len(node.turn_log)
            for turn in range(max(0, turns - saved_turns), turns):
                yield focus_key(chosen, "context", turn=turn), Focus(chosen, "context", turn)
        for number in timed if len(timed) > 1 else ():
            yield focus_key(chosen, "timing", run=number), Focus(chosen, "timing", run=number)
        if chosen is not None:
            mine = len(projector.events_at(chosen))
            starts: list[int | None] = [None, *_starts(mine)]
            for at in starts:
                key = focus_key(chosen, "events", start=at, node_only=True)
                yield key, Focus(chosen, "events", start=at, node_only=True)
    for first in _starts(len(projector.events)):
        yield focus_key(None, "events", start=first), Focus(None, "events", start=first)
    for kind in sorted(projector.counts):
        yield focus_key(None, "events", types=(kind,)), Focus(None, "events", types=[kind])


def _starts(total: int) -> list[int]:
    """Where the saved pages of a list of `total` rows begin: a page before the newest one at a
    time, back to the first row (the page a pager asks for is the last saved one beginning at
    or before it, `offline.js`, so going back a page from the newest is always exact)."""
    if total <= PAGE:
        return []
    return sorted({0, *range(total - PAGE, -1, -PAGE)})


def intern(value: Any) -> dict[str, Any]:
    """`value` with its long strings (and every string that starts with `REF`) and its large
    structures near the top (a pane's chart, a turn's messages, a page of rows) each kept once
    in a table and replaced by a reference to it: `{"table": [...], "root": ...}`.

    A structure is told by its JSON text, worked out only down to `DEEP` levels (deeper ones
    are small, and their strings are kept once anyway); one already kept is not walked again."""
    table: list[Any] = []
    structures: dict[str, str] = {}
    strings: dict[str, str] = {}

    def keep(out: Any) -> str:
        table.append(out)
        return f"{REF}{len(table) - 1}"

    def encode(item: Any, depth: int) -> Any:
        if isinstance(item, str):
            if len(item) < LONG and not item.startswith(REF):
                return item
            ref = strings.get(item)
            if ref is None:
                ref = strings[item] = keep(item)
            return ref
        if not isinstance(item, dict | list):
            return item
        text = None
        if TOP <= depth <= DEEP:
            text = _json(item)
            if len(text) < LARGE:
                text = None
            elif text in structures:
                return structures[text]
        if isinstance(item, dict):
            out: Any = {key: encode(inner, depth + 1) for key, inner in item.items()}
        else:
            out = [encode(inner, depth + 1) for inner in item]
        if text is None:
            return out
        ref = structures[text] = keep(out)
        return ref

    root = encode(value, 0)
    return {"table": table, "root": root}


def script_json(value: Any) -> str:
    """`value` as JSON that cannot end the `<script>` holding it nor be read as markup:
    `<`, `>`, `&` and the line separators U+2028 / U+2029 as `\\u` escapes."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    for char, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    return text


_CODE: list[str] = []
_CLOSING = re.compile(r"</script|<!--", re.IGNORECASE)


def _code() -> str:
    """The script that draws a saved page: the view module (its default export kept as `VIEW`)
    and `offline.js`, one module, with no `</script` in it; made once."""
    if not _CODE:
        module = view_module()
        shell = "export default { render };"
        if not module.rstrip().endswith(shell):
            raise RuntimeError(f"the view module no longer ends with `{shell}`")
        module = module.rstrip().removesuffix(shell) + "const VIEW = { render };\n"
        runtime = OFFLINE_JS.read_text(encoding="utf-8").replace(
            "export async function", "async function"
        )
        code = f"{module}\n{MARK}offline.js\n{runtime}"
        if _CLOSING.search(code):
            raise RuntimeError("the view's code holds `</script` or `<!--`: it cannot be inlined")
        _CODE.append(code)
    return _CODE[0]


_BOOT = """
(async () => {
  const root = document.getElementById("%s");
  // a live Jupyter front end draws the widget itself (this output then hides behind it)
  if (document.getElementById("jupyter-config-data") || !("DecompressionStream" in window)) return;
  const packed = JSON.parse(root.querySelector("script.sagents-data").textContent);
  const bytes = Uint8Array.from(atob(packed.gzip), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  await mount(root, JSON.parse(await new Response(stream).text()), VIEW);
})().catch((error) => {
  const root = document.getElementById("%s");
  if (root) root.dataset.failed = String(error && error.stack ? error.stack : error);
});
"""


def viewer_html(
    views: list[tuple[str, LiveView]], fallback: str, turns: int = CONTEXT_TURNS
) -> str:
    """An element that draws `views` (each with its title) offline, as the live view draws them,
    with `fallback` (escaped HTML) shown where JavaScript does not run.

    The code is one inline module (the view module, `offline.js`); the views' saved state and
    the stylesheet are one gzip-compressed JSON text, in base64, which the page unpacks itself
    (`DecompressionStream`): no request, and no model text in the page's markup but the
    fallback's, escaped."""
    element = f"sagents-saved-{uuid.uuid4().hex}"
    data = {
        "css": (STATIC / "view.css").read_text(encoding="utf-8"),
        "views": [
            {"title": title, "state": intern(snapshot(view, turns))} for title, view in views
        ],
    }
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    packed = base64.b64encode(gzip.compress(text.encode("utf-8"), 9, mtime=0)).decode("ascii")
    return (
        f'<div class="sagents-saved" id="{element}">'
        f'<div class="sagents-fallback">{fallback}</div>'
        f'<script type="application/json" class="sagents-data">{script_json({"gzip": packed})}'
        f'</script><script type="module">{_code()}{_BOOT % (element, element)}</script></div>'
    )


def read_saved(page: str) -> list[dict[str, Any]]:
    """What the viewers of a saved page hold (`viewer_html`), unpacked: each one's code and
    views, each view's state with its kept values put back."""
    found = []
    for packed in re.findall(
        r'<script type="application/json" class="sagents-data">(.*?)</script>', page
    ):
        raw = gzip.decompress(base64.b64decode(json.loads(packed)["gzip"]))
        data = json.loads(raw.decode("utf-8"))
        for shown in data["views"]:
            shown["state"] = unintern(shown["state"])
        found.append(data)
    return found


def unintern(saved: dict[str, Any]) -> Any:
    """`intern`'s value back (what `offline.js` `decode` does)."""
    table = saved["table"]
    memo: dict[int, Any] = {}

    def value(item: Any) -> Any:
        if isinstance(item, str):
            if not item.startswith(REF):
                return item
            at = int(item[1:])
            if at not in memo:  # a kept string is the text itself, never a reference
                kept = table[at]
                memo[at] = kept if isinstance(kept, str) else value(kept)
            return memo[at]
        if isinstance(item, list):
            return [value(inner) for inner in item]
        if isinstance(item, dict):
            return {key: value(inner) for key, inner in item.items()}
        return item

    return value(saved["root"])


_OUTPUTS: weakref.WeakKeyDictionary[LiveView, tuple[Any, dict[str, str]]] = (
    weakref.WeakKeyDictionary()
)


def static_output(view: LiveView) -> dict[str, str]:
    """What a notebook keeps of a view for readers without widgets (nbconvert, nbviewer,
    GitHub): today's static text, and as HTML the viewer over that text, which shows where
    JavaScript does not run. Made again only when the view's events or forks changed."""
    stamp = _stamp(view)
    kept = _OUTPUTS.get(view)
    if kept is not None and kept[0] == stamp:
        return kept[1]
    static = static_view(view)
    projector = view.projector
    large = len(projector.events) > OUTPUT_EVENTS or len(projector.nodes) > OUTPUT_NODES
    if large or streaming(view) or projector.loading is not None or prices_wait(projector):
        return static  # its text (the whole view: `save_html`; the rest after a later cell)
    viewer = viewer_html([("", view)], static["text/html"], OUTPUT_TURNS)
    output = {**static, "text/html": viewer}
    _OUTPUTS[view] = (stamp, output)
    return output


def streaming(view: LiveView) -> bool:
    """Whether a run of the view's session (or of one of its forks') is running: its own, or
    one ahead of it (a view of a queued run)."""
    session = view.target.session
    run = session.current_run if session is not None else None
    return (run is not None and run.status == "running") or any(
        streaming(fork) for fork in view.fork_views
    )


def _stamp(view: LiveView) -> Any:
    projector = view.projector
    with projector.lock:
        projector.catch_up()
        loading = (projector.prices or DEFAULT).loading  # costs priced once it has loaded
        mine = (projector.version, len(projector.events), len(view.fork_diffs), loading)
    return (mine, tuple(_stamp(fork) for fork in view.fork_views))


def write_page(path: Path, views: list[tuple[str, LiveView]], fallback: str, heading: str) -> Path:
    """Write one HTML page holding `views`' viewer over `fallback` (escaped HTML)."""
    body = viewer_html(views, fallback)
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(heading)}</title>"
        "<style>body{margin:12px;font-family:system-ui,sans-serif}"
        ".sagents-saved-title{font:600 13px system-ui,sans-serif;margin:12px 0 4px}</style>"
        f"</head><body>{body}</body></html>\n"
    )
    path.write_text(page, encoding="utf-8")
    return path
