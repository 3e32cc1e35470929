"""The live view with a real front end: JupyterLab on loopback and Debian's chromium.

Measures, during a 200-child run streaming about 100 events a second: click (a tree row or a
tab) to the pane updated, in the page (p50 / p95), and how many clicks landed; the longest
main-thread task (Long Tasks API); the same during a 1,000-node run, and on a long run (1,000
turns, ~6,000 events, then streaming) for tab switches; and the kernel-side cost of a connected
view: the same run in the kernel (one agent, ~5,000 events; a root delegating to 1,000 children),
timed in CPU seconds, with no view and with one displayed in the page. Prints each of issue 21's
targets as PASS or FAIL: p95 <= 100 ms, every click lands, no task over 100 ms, cost <= 1.15x.
And issue 32 item 1: a stored session of 10,000 nodes (~160,000 events) opened (`Session.open`
and the view, from the cell's run to its first rows painted; the imports in the cell before) in
<= 2 s; clicks on grandchildren's rows while its events are read (every one lands), then click
to pane p95 <= 150 ms. The last line (`BENCH_JSON `) holds the figures and targets for `run.py`.

    .venv/bin/python benchmarks/view_browser.py [--clicks 40] [--json] [--only big ...]
        [--big 100x99]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from _browser import Lab, chromium, jupyter_lab, missing_browser, open_notebook, run_cell

from sagents_nb.notebook._tree import TREE_CHILDREN

IDLE_MS = 60_000
"""How long an opened notebook's kernel may take to be idle (an earlier one may still run)."""

SETUP = '''
import asyncio
import sagents_nb as sn
from sagents_nb.notebook import view

@sn.tool
def tick(n: int) -> str:
    """Count one.

    Args:
        n: which tick.
    """
    return f"tick {n} ✓"

async def handler(request):  # a network-bound endpoint: the loop is free while it waits
    if "task" in request.tools:
        if request.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="worker", prompt=f"partie {i} — 部分")
                                        for i in range(CHILDREN)])
        return "fini"
    await asyncio.sleep(0.5)  # 8 children at a time: about 100 events a second
    if len(request.tool_results) < 4:
        return sn.reply(tool_calls=[sn.call("tick", n=len(request.tool_results))])
    return "compté"

worker = sn.Agent("worker", does="compte", tools=[tick])
session = sn.Session(sn.Agent("coordinator", does="délègue", team=[worker]), llm=sn.mock_llm(handler),
                     max_nodes=CHILDREN + 10)
view(session)
'''
SEND = 'run = session.send("deux cents enfants")'
COST = '''
import time, itertools
import sagents_nb as sn
from sagents_nb.notebook import view

@sn.tool
def lookup(key: int) -> str:
    """Look a key up.

    Args:
        key: which key.
    """
    return f"value {key}"

def one_agent():  # about 5,000 events
    keys, turns = itertools.count(), itertools.count()
    def handler(request):
        if next(turns) >= 430:
            return "done"
        return sn.reply(tool_calls=[sn.call("lookup", key=next(keys)) for _ in range(4)])
    return sn.Session(sn.Agent("bench", tools=[lookup], max_turns=500), llm=sn.mock_llm(handler))

def tree(children=1000):  # a root delegating to 1,000 children, a tool call each
    def handler(request):
        if "task" in request.tools:
            if request.last["role"] == "user":
                return sn.reply(tool_calls=[sn.call("task", agent="worker", prompt=f"part {i}")
                                            for i in range(children)])
            return "done"
        if request.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("lookup", key=len(request.last_user or ""))])
        return "found"
    worker = sn.Agent("worker", tools=[lookup])
    return sn.Session(sn.Agent("root", team=[worker]), llm=sn.mock_llm(handler),
                      max_nodes=children + 10, max_model_calls=None)

def bench(with_view):
    session = SESSION()
    shown = view(session) if with_view else None
    if shown is not None:
        display(shown)
        time.sleep(1.0)  # let the page render it
    cpu, wall = time.process_time(), time.perf_counter()
    session.send("go").result()
    if shown is not None:
        shown.flush()
    return time.process_time() - cpu, time.perf_counter() - wall, len(session.events)
'''
COST_RUN = """
import json
samples = {False: [], True: []}
for repeat in range(3):
    for with_view in ((False, True) if repeat % 2 == 0 else (True, False)):
        samples[with_view].append(bench(with_view))
print("COST", json.dumps({str(k): v for k, v in samples.items()}))
"""
LONG = '''
import itertools, time
import sagents_nb as sn
from sagents_nb.notebook import view

@sn.tool
def tick(n: int) -> str:
    """Count one.

    Args:
        n: which tick.
    """
    return f"tick {n} ✓"

turns = itertools.count()

def handler(request):
    done = next(turns)
    if done >= 1600:
        return "fini"
    if done >= 1000:
        time.sleep(0.05)  # a long history, then it streams: about 100 events a second
    return sn.reply(tool_calls=[sn.call("tick", n=done)])

counter = sn.Agent("counter", tools=[tick], kind=sn.kinds.Main(top_k=4, recent=2, max_turns=2000))
session = sn.Session(counter, llm=sn.mock_llm(handler))
view(session)
'''
LONG_SEND = 'run = session.send("compte")'
BIG_SETUP = """
import sys, time
sys.path.insert(0, {bench!r})
import sagents_nb as sn
from sagents_nb.notebook import view
from search import team

agent, _ = team({children}, {each})
print("READY")
"""
BIG = """
began, cpu = time.perf_counter(), time.process_time()
session = sn.Session.open({path!r}, {sid!r}, agent=agent)
opened, opened_cpu = time.perf_counter() - began, time.process_time() - cpu
shown = view(session)
viewed, viewed_cpu = time.perf_counter() - began - opened, time.process_time() - cpu - opened_cpu
display(shown)
print("BIG", opened, viewed, opened_cpu, viewed_cpu)
"""
"""Issue 32 item 1: `Session.open` and the view, timed from the cell's run to its first rows
painted (the imports and the agents in the cell before)."""
LOADED = """
() => !document.querySelector('.sagents-view .sn-pane')?.textContent.includes('stored events…')
"""
WATCH_LOADED = f"""
() => {{
  const loaded = {LOADED.strip()};
  const look = () => {{
    if (loaded()) window.__snLoaded = performance.now() - window.__snCell;
    else setTimeout(look, 20);
  }};
  look();
}}
"""
"""Notes when the pane stops saying the stored events are being read (`window.__snLoaded`)."""
BIG_PAINTED = """
() => new Promise((resolve) => {
  const check = () => {
    if (document.querySelector('.sagents-view .sn-node[data-path="root"]')) {
      requestAnimationFrame(() => resolve(performance.now() - window.__snCell));
    } else if (performance.now() - window.__snCell > 120000) resolve(120000);
    else setTimeout(check, 5);
  };
  check();
})
"""
TARGETS = {"p95_ms": 100, "longest_task_ms": 100, "cpu_ratio": 1.15}
BIG_TARGETS = {"open_paint_s": 2.0, "p95_ms": 150}
"""Issue 32 item 1: a stored 10,000-node session opened and painted, its rows clicked."""
PROBE = """
() => {
  window.__sn = { clicks: [], long: [] };
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) window.__sn.long.push(entry.duration);
  }).observe({ type: "longtask", buffered: true });
  document.addEventListener("click", (event) => {
    const tab = event.target.closest(".sagents-view .sn-tab");
    const node = event.target.closest(".sagents-view .sn-node");
    if (!tab && !node) return;
    const start = performance.now();
    const check = () => {
      const pane = document.querySelector(".sagents-view .sn-pane");
      const done = tab ? pane.dataset.tab === tab.dataset.tab : pane.dataset.node === node.dataset.path;
      if (done) window.__sn.clicks.push(performance.now() - start);
      else if (performance.now() - start > 5000) window.__sn.clicks.push(5000);
      else requestAnimationFrame(check);
    };
    requestAnimationFrame(check);
  }, true);
}
"""


def measure_clicks(page: Any, lab: Lab, clicks: int, children: int = 200) -> dict[str, Any]:
    setup = f"CHILDREN = {children}\n{SETUP}"
    open_notebook(page, lab.notebook(f"clicks-{children}.ipynb", setup, SEND), timeout=IDLE_MS)
    page.evaluate(PROBE)
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    view.locator('.sn-node[data-path="coordinator"]').wait_for(timeout=60_000)
    run_cell(page, 1)
    view.locator('.sn-node[data-path="coordinator/worker.20"]').wait_for(timeout=60_000)
    page.evaluate("() => { window.__sn.long = []; }")  # from here on: while it streams
    count = view.locator(".sn-count")
    before, started = int(count.inner_text().split()[0]), time.monotonic()
    tabs = ["context", "tools", "events", "transcript"]
    for i in range(clicks):
        if i % 2:
            view.locator(f'.sn-tab[data-tab="{tabs[(i // 2) % len(tabs)]}"]').click()
        else:
            view.locator(f'.sn-node[data-path="coordinator/worker.{1 + (i * 7) % 20}"]').click()
        page.wait_for_timeout(400)
    rate = (int(count.inner_text().split()[0]) - before) / (time.monotonic() - started)
    page.wait_for_timeout(1000)
    probe = page.evaluate("() => window.__sn")
    summary = view.locator(".sn-tree-summary").inner_text()
    cancel = view.get_by_role("button", name="Cancel", exact=True)
    if cancel.is_enabled():
        cancel.click()
    return {"events_per_second": round(rate), **_latencies(probe, clicks), "tree_summary": summary}


def measure_big(
    page: Any, lab: Lab, folder: Path, clicks: int, children: int = 100, each: int = 99
) -> dict[str, Any]:
    """A stored session of `children` × (`each` + 1) + 1 nodes: `Session.open` plus the view,
    from the cell's run to its first rows painted; clicks on grandchildren's rows while its
    events are read, then once they are."""
    from search import stored_session

    began = time.perf_counter()
    path, sid, _agent = stored_session(folder, children, each)
    built = time.perf_counter() - began
    here = str(Path(__file__).resolve().parent)
    setup = BIG_SETUP.format(bench=here, children=children, each=each)
    cell = BIG.format(path=str(path), sid=sid)
    open_notebook(page, lab.notebook(f"big-{children}x{each}.ipynb", setup, cell), timeout=IDLE_MS)
    run_cell(page, 0)
    output = page.locator('.jp-OutputArea-output[data-mime-type$="stdout"]', has_text="READY")
    output.wait_for(timeout=120_000)
    page.get_by_text("| Idle").first.wait_for(timeout=IDLE_MS)
    page.evaluate(PROBE)
    page.evaluate("() => { window.__snCell = performance.now(); }")
    run_cell(page, 1)
    painted_ms = page.evaluate(BIG_PAINTED)
    page.evaluate(WATCH_LOADED)
    output = page.locator('.jp-OutputArea-output[data-mime-type$="stdout"]', has_text="BIG")
    output.wait_for(timeout=120_000)
    figures = output.inner_text().split("BIG", 1)[1].split()[:4]
    opened, viewed, opened_cpu, viewed_cpu = (float(x) for x in figures)
    view = page.locator(".sagents-view")
    rows = view.locator(".sn-node").count()
    summary = view.locator(".sn-tree-summary").inner_text()
    listed = min(children, TREE_CHILDREN)  # rows listed before a node's aggregate row
    targets = [
        f"root/mid.{1 + (i * 7) % listed}/leaf.{1 + (i * 11) % min(each, TREE_CHILDREN)}"
        for i in range(max(clicks, 10))
    ]
    page.evaluate("() => { window.__sn.long = []; window.__sn.clicks = []; }")
    loading_clicks = 0
    while not page.evaluate(LOADED) and loading_clicks < len(targets):
        view.locator(f'.sn-node[data-path="{targets[loading_clicks]}"]').click()
        loading_clicks += 1
        page.wait_for_timeout(300)
    page.wait_for_timeout(5500)  # a click that has not landed counts as 5 s
    probe = page.evaluate("() => window.__sn")
    while_loading = _latencies(probe, loading_clicks) if loading_clicks else None
    page.wait_for_function("() => window.__snLoaded !== undefined", timeout=120_000)
    loaded_ms = page.evaluate("() => window.__snLoaded")
    page.wait_for_timeout(1000)
    page.evaluate("() => { window.__sn.long = []; window.__sn.clicks = []; }")
    for target in targets[:clicks]:
        view.locator(f'.sn-node[data-path="{target}"]').click()
        page.wait_for_timeout(300)
    page.wait_for_timeout(1000)
    probe = page.evaluate("() => window.__sn")
    return {
        "nodes": children * (each + 1) + 1,
        "build_s": round(built, 1),
        "open_s": round(opened, 2),
        "view_s": round(viewed, 2),
        "open_cpu_s": round(opened_cpu, 2),
        "view_cpu_s": round(viewed_cpu, 2),
        "open_paint_s": round(painted_ms / 1000, 2),
        "events_read_s": round(loaded_ms / 1000, 2),
        "rows_drawn": rows,
        "tree_summary": summary,
        "while_loading": while_loading,
        **_latencies(probe, clicks),
    }


def measure_cost(page: Any, lab: Lab, session: str = "one_agent") -> dict[str, Any]:
    """The kernel's CPU time of the same run with no view and with one shown in the page,
    interleaved: `one_agent` (~5,000 events) or `tree` (1,000 children)."""
    cells = (f"{COST}\nSESSION = {session}", COST_RUN)
    open_notebook(page, lab.notebook(f"cost-{session}.ipynb", *cells), timeout=IDLE_MS)
    run_cell(page, 0)
    page.wait_for_timeout(500)
    run_cell(page, 1)
    # the printed figures (the view's static copy may name COST too)
    output = page.locator('.jp-OutputArea-output[data-mime-type$="stdout"]', has_text="COST")
    output.wait_for(timeout=600_000)
    text = output.inner_text().split("COST", 1)[1].strip()
    samples = json.loads(text)
    cpu = {k: statistics.median(s[0] for s in v) for k, v in samples.items()}
    wall = {k: statistics.median(s[1] for s in v) for k, v in samples.items()}
    return {
        "events": samples["True"][0][2],
        "cpu_s": {"without": round(cpu["False"], 3), "with": round(cpu["True"], 3)},
        "wall_s": {"without": round(wall["False"], 3), "with": round(wall["True"], 3)},
        "cpu_ratio": round(cpu["True"] / cpu["False"], 3),
        "wall_ratio": round(wall["True"] / wall["False"], 3),
    }


def measure_long(page: Any, lab: Lab, clicks: int) -> dict[str, Any]:
    """Tab switches on a long run while it streams: click to the pane of the new tab."""
    open_notebook(page, lab.notebook("long.ipynb", LONG, LONG_SEND), timeout=IDLE_MS)
    page.evaluate(PROBE)
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    view.locator('.sn-node[data-path="counter"]').wait_for(timeout=60_000)
    run_cell(page, 1)
    count = view.locator(".sn-count")
    deadline = time.monotonic() + 300
    while int(count.inner_text().split()[0]) < 6000 and time.monotonic() < deadline:
        page.wait_for_timeout(500)
    page.evaluate("() => { window.__sn.long = []; window.__sn.clicks = []; }")
    before, started = int(count.inner_text().split()[0]), time.monotonic()
    tabs = ["events", "context", "tools", "transcript", "compaction"]
    for i in range(clicks):
        view.locator(f'.sn-tab[data-tab="{tabs[i % len(tabs)]}"]').click()
        page.wait_for_timeout(500)
    rate = (int(count.inner_text().split()[0]) - before) / (time.monotonic() - started)
    page.wait_for_timeout(1000)
    probe = page.evaluate("() => window.__sn")
    cancel = view.get_by_role("button", name="Cancel", exact=True)
    if cancel.is_enabled():
        cancel.click()
    result = _latencies(probe, clicks)
    return {"events_per_second": round(rate), "events_at_start": before, **result}


def _latencies(probe: dict[str, Any], clicks: int) -> dict[str, Any]:
    latencies = sorted(probe["clicks"])
    return {
        "clicks": clicks,
        "landed": sum(1 for ms in latencies if ms < 5000),
        "p50_ms": round(statistics.median(latencies)),
        "p95_ms": round(latencies[max(0, round(0.95 * len(latencies)) - 1)]),
        "longest_task_ms": round(max(probe["long"], default=0)),
        "tasks_over_100_ms": sum(1 for d in probe["long"] if d > 100),
    }


def verdicts(results: dict[str, Any]) -> list[tuple[str, bool, str]]:
    """Issue 21's and issue 32's targets: (what, met, the figure) each."""
    checks: list[tuple[str, bool, str]] = []
    big = results.get("big")
    if big is not None:
        nodes = f"stored {big['nodes']:,}-node session"
        loading = big["while_loading"]
        during = (
            f"; {loading['landed']} of {loading['clicks']} landed while its events were read"
            if loading
            else ""
        )
        checks += [
            (f"{nodes}: Session.open + view's first paint <= {BIG_TARGETS['open_paint_s']:g} s",
             big["open_paint_s"] <= BIG_TARGETS["open_paint_s"],
             f"{big['open_paint_s']} s (Session.open {big['open_s']} s, view() {big['view_s']} s; "
             f"in the kernel's CPU time {big['open_cpu_s']} s and {big['view_cpu_s']} s; "
             f"{big['rows_drawn']} rows drawn; every event read {big['events_read_s']} s)"),
            (f"{nodes}: click -> pane p95 <= {BIG_TARGETS['p95_ms']} ms",
             big["p95_ms"] <= BIG_TARGETS["p95_ms"] and big["landed"] == big["clicks"],
             f"{big['p95_ms']} ms (p50 {big['p50_ms']} ms, {big['landed']} of {big['clicks']} "
             f"landed{during})"),
        ]  # fmt: skip
    named = (
        ("clicks", "200-child run"),
        ("clicks_1000", "1,000-node run"),
        ("long", "1,000-turn run, tab switches"),
    )
    for name, what in named:
        if name not in results:
            continue
        got = results[name]
        checks += [
            (f"{what}: click -> pane p95 <= 100 ms", got["p95_ms"] <= TARGETS["p95_ms"],
             f"{got['p95_ms']} ms (p50 {got['p50_ms']} ms, {got['events_per_second']} events/s)"),
            (f"{what}: every click lands while it streams", got["landed"] == got["clicks"],
             f"{got['landed']} of {got['clicks']} ({got['events_per_second']} events/s)"),
            (f"{what}: no main-thread task over 100 ms while streaming",
             got["longest_task_ms"] <= TARGETS["longest_task_ms"],
             f"longest {got['longest_task_ms']} ms, {got['tasks_over_100_ms']} over 100 ms"),
        ]  # fmt: skip
    for name, what in (("kernel_cost", "one agent"), ("kernel_cost_1000", "1,000-node run")):
        cost = results.get(name)
        if cost is not None:
            checks.append(
                (f"kernel-side cost of a connected view <= 1.15x ({what}, {cost['events']:,} events)",
                 cost["cpu_ratio"] <= TARGETS["cpu_ratio"],
                 f"{cost['cpu_ratio']}x CPU ({cost['wall_ratio']}x wall)")
            )  # fmt: skip
    return checks


MEASURES = ("big", "clicks", "clicks_1000", "long", "kernel_cost", "kernel_cost_1000")
MARK = "BENCH_JSON "
"""The line `run.py` reads: the figures and the targets as JSON."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clicks", type=int, default=40)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    parser.add_argument(
        "--only", choices=MEASURES, action="append", help="measure only these (repeatable)"
    )
    parser.add_argument(
        "--big", default="100x99", help="the stored tree: CHILDREN x GRANDCHILDREN each"
    )
    options = parser.parse_args()
    wanted = set(options.only or MEASURES)
    children, each = (int(n) for n in options.big.split("x"))
    missing = missing_browser()
    if missing is not None:
        raise SystemExit(missing)
    with tempfile.TemporaryDirectory() as tmp, jupyter_lab(Path(tmp)) as lab, chromium() as browser:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(30_000)
        measures = {
            "big": lambda page: measure_big(page, lab, Path(tmp), options.clicks, children, each),
            "clicks": lambda page: measure_clicks(page, lab, options.clicks),
            "clicks_1000": lambda page: measure_clicks(page, lab, options.clicks, 1000),
            "long": lambda page: measure_long(page, lab, max(10, options.clicks // 2)),
            "kernel_cost": lambda page: measure_cost(page, lab),
            "kernel_cost_1000": lambda page: measure_cost(page, lab, "tree"),
        }
        results: dict[str, Any] = {}
        for name, measure in measures.items():
            if name not in wanted:
                continue
            page = context.new_page()
            results[name] = measure(page)
            page.close()
            lab.shutdown_kernels()
    if options.json:
        print(json.dumps(results, indent=1, ensure_ascii=False))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average at the end: {load}")
    checks = verdicts(results)
    for what, met, figure in checks:
        print(f"{'PASS' if met else 'FAIL'}: {what}: {figure}")
    print(MARK + json.dumps({"results": results, "load": load, "targets": checks}))


if __name__ == "__main__":
    main()
