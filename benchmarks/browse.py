"""Browse what is stored (issue 31 item 7): a store file of 1,000 sessions (each a boss
delegating to a child with a tool call, a fork of every tenth), then `sn.browse(path)` — the
catalog of every session (runs, status, tokens, cost) and the widget's rows. Prints the figures
and PASS/FAIL against the target: <= 1 s.

    .venv/bin/python benchmarks/browse.py [--sessions 1000] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import sagents_nb as sn

TARGET_S = 1.0


@sn.tool
def probe(n: int) -> str:
    """Probe one thing.

    Args:
        n: which.
    """
    return f"sondé {n} — 調べた ✓"


def handler(req: sn.ChatRequest) -> Any:
    if "task" in req.tools:
        if req.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="scout", prompt="sonde")])
        return "fini ✓"
    if req.last["role"] == "user":
        return sn.reply(tool_calls=[sn.call("probe", n=1)])
    return "北京 ✓"


def fill(path: str, sessions: int) -> None:
    boss = sn.Agent("boss", team=[sn.Agent("scout", does="sonde", tools=[probe])])
    llm = sn.mock_llm(handler)
    made = 0
    while made < sessions:
        session = sn.Session(boss, llm=llm, store=path)
        session.send("go").result()
        made += 1
        if made % 10 == 0 and made < sessions:
            session.fork(at=session.events[-1].seq // 2).flush()
            made += 1
        session.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "runs.db")
        started = time.perf_counter()
        fill(path, args.sessions)
        filled = time.perf_counter() - started
        times = []
        for _ in range(5):
            started = time.perf_counter()
            browser = sn.browse(path)
            times.append(time.perf_counter() - started)
        rows = len(browser.table.rows)
    median = statistics.median(times)
    figures = {"sessions": rows, "fill_s": round(filled, 2), "browse_s": round(median, 3)}
    if args.json:
        print(json.dumps(figures))
        return
    print(f"a store of {rows} sessions (written in {filled:.1f} s)")
    print(f"sn.browse(path), catalog and rows: {median * 1000:.0f} ms median of 5")
    verdict = "PASS" if median <= TARGET_S else "FAIL"
    print(f"{verdict} browse a {rows}-session store: {median:.3f} s (target <= {TARGET_S:.0f} s)")


if __name__ == "__main__":
    main()
