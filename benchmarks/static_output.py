"""What a notebook's static output of a view costs after a cell, by the size of the tree.

    python benchmarks/static_output.py [--children 50 100 200] [--rounds 3]

After each cell that changed a view, IPython's `post_run_cell` makes the view's static output
(`notebook._offline.static_output`: the offline viewer, every pane of every node) on the kernel's
main thread, which holds the clicks meanwhile; stepping a paused tree cell by cell pays it after
every step. For a finished session of a coordinator delegating to N workers (four tool calls
each), prints the fastest of `--rounds` builds, in ms, and its parts: the panes (`snapshot`),
keeping repeats once (`intern`), the JSON text and gzip.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from typing import Any

import sagents_nb as sn
from sagents_nb.notebook import _offline, view


@sn.tool
def tick(n: int) -> str:
    """Count one.

    Args:
        n: which tick.
    """
    return f"tick {n} ✓ — 一つ"


def finished(children: int) -> sn.Session:
    """A coordinator that delegates to `children` workers at once, each calling `tick` four
    times (French, Japanese and emoji in the text)."""

    def handler(request: sn.ChatRequest) -> Any:
        if "task" in request.tools:
            if request.last["role"] == "user":
                calls = [
                    sn.call("task", agent="worker", prompt=f"partie {i}") for i in range(children)
                ]
                return sn.reply(tool_calls=calls)
            return "fini 🎉"
        if len(request.tool_results) < 4:
            return sn.reply(tool_calls=[sn.call("tick", n=len(request.tool_results))])
        return "compté — 数えた"

    worker = sn.Agent("worker", does="compte", tools=[tick])
    coordinator = sn.Agent("coordinator", does="délègue", team=[worker])
    session = sn.Session(coordinator, llm=sn.mock_llm(handler), max_nodes=children + 10)
    session.send("go").wait(300)
    return session


def parts(widget: Any) -> dict[str, float]:
    """One build's parts, in ms (as `static_output` and `viewer_html` make them)."""
    started = time.perf_counter()
    state = _offline.snapshot(widget, _offline.OUTPUT_TURNS)
    snapped = time.perf_counter()
    kept = _offline.intern(state)
    interned = time.perf_counter()
    data = {"views": [{"title": "", "state": kept}]}
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    dumped = time.perf_counter()
    gzip.compress(text.encode("utf-8"), 9, mtime=0)
    zipped = time.perf_counter()
    return {
        "snapshot": (snapped - started) * 1e3,
        "intern": (interned - snapped) * 1e3,
        "json": (dumped - interned) * 1e3,
        "gzip": (zipped - dumped) * 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--children", type=int, nargs="+", default=[50, 100, 200])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print("children  events  static output  snapshot  intern  json  gzip  (ms, fastest)")
    for children in args.children:
        session = finished(children)
        widget = view(session)
        while widget.projector.loading is not None:  # a long session's log is folded apart
            time.sleep(0.05)
        _offline.static_output(widget)  # the code made once
        totals, split = [], []
        for _ in range(args.rounds):
            _offline._OUTPUTS.clear()
            started = time.perf_counter()
            output = _offline.static_output(widget)
            totals.append((time.perf_counter() - started) * 1e3)
            split.append(parts(widget))
        if "sagents-saved" not in output["text/html"]:
            raise SystemExit(f"{children} children: the static output holds no viewer")
        best = min(split, key=lambda p: sum(p.values()))
        print(
            f"{children:8d}  {len(widget.projector.events):6d}  {min(totals):13.0f}  "
            f"{best['snapshot']:8.0f}  {best['intern']:6.0f}  {best['json']:4.0f}  "
            f"{best['gzip']:4.0f}"
        )
        widget.close()


if __name__ == "__main__":
    main()
