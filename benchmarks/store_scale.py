"""The store at scale: how fast a long session reopens and forks, and how much disk a long
answer takes (issue 19 items 6 and 7).

    .venv/bin/python benchmarks/store_scale.py            # 1,000 and 4,000 tool turns, 5 MB
    .venv/bin/python benchmarks/store_scale.py --turns 200 800 --answer-mb 1   # quicker

Targets: `Session.open` and `fork()` of the longest session (4,000 tool turns, ~20,000 events)
take at most 0.3 s each, and grow sub-linearly with the session's length (4x the turns costs
less than 4x the time); a session's file grows by at most 2x the text it produced.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import sagents_nb as sn

OPEN_TARGET_S = 0.3
FORK_TARGET_S = 0.3
GROWTH_TARGET = 2.0


@sn.tool
def step(i: int) -> str:
    """One step of a long job.

    Args:
        i: the step's number.
    """
    return f"step {i} done"


def long_session(folder: Path, turns: int) -> tuple[Path, str, int]:
    """A stored session of `turns` tool turns, then an answer: its file, id and event count."""

    def handler(req: sn.ChatRequest) -> object:
        done = len(req.tool_results)
        if done < turns:
            return sn.reply(tool_calls=[sn.call("step", i=done)])
        return "all done"

    path = folder / f"long-{turns}.db"
    agent = sn.Agent("worker", tools=[step], max_turns=turns + 5, kind=sn.kinds.Main(top_k=8))
    # no model-call cap: the session's default (2,000 a run) would cut the long one in half
    session = sn.Session(agent, llm=sn.mock_llm(handler), store=path, max_model_calls=None)
    result = session.send("go").result()
    assert result.turns >= turns, f"the {turns}-turn session stopped early: {result.text}"
    count = len(session.events)
    session.store.close()
    return path, session.id, count


def timed_open(path: Path, sid: str, repeat: int) -> tuple[float, float]:
    """The medians of `Session.open` and of `fork()` (each on a fresh store object)."""
    agent = sn.Agent("worker", tools=[step])
    opens, forks = [], []
    for _ in range(repeat):
        store = sn.SQLiteStore(path, create=False)
        started = time.perf_counter()
        session = sn.Session.open(store, sid, agent=agent)
        opens.append(time.perf_counter() - started)
        started = time.perf_counter()
        session.fork()
        forks.append(time.perf_counter() - started)
        store.close()
    return statistics.median(opens), statistics.median(forks)


def disk_growth(folder: Path, megabytes: float) -> tuple[int, int]:
    """Bytes of text one answer produced, and bytes the store file grew by."""
    text = ("Les données du rapport, 東京の報告, line of code = 42; " * 100_000)[
        : int(megabytes * 1_000_000)
    ]
    path = folder / "growth.db"
    empty = sn.SQLiteStore(path)
    empty.close()
    before = _size(path)
    session = sn.Session(sn.Agent("writer"), llm=sn.script(text), store=path)
    session.send("write the report").result()
    session.store.close()
    return len(text.encode()), _size(path) - before


def _size(path: Path) -> int:
    return sum(os.path.getsize(p) for p in (path, Path(f"{path}-wal")) if p.exists())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[1000, 4000])
    parser.add_argument("--answer-mb", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="sn-scale-") as tmp:
        folder = Path(tmp)
        for turns in sorted(args.turns):
            path, sid, events = long_session(folder, turns)
            opened, forked = timed_open(path, sid, args.repeat)
            rows.append({"turns": turns, "events": events, "open_s": opened, "fork_s": forked})
            print(json.dumps(rows[-1]), flush=True)
        produced, grew = disk_growth(folder, args.answer_mb)
    growth = grew / produced
    print(json.dumps({"answer_bytes": produced, "file_growth_bytes": grew, "x": growth}))
    longest, shortest = rows[-1], rows[0]
    scale = longest["turns"] / shortest["turns"]
    verdicts = [
        (f"open {longest['events']} events <= {OPEN_TARGET_S} s", longest["open_s"], None),
        (f"fork {longest['events']} events <= {FORK_TARGET_S} s", longest["fork_s"], None),
    ]
    print()
    for name, value, _ in verdicts:
        target = OPEN_TARGET_S if name.startswith("open") else FORK_TARGET_S
        print(f"- {'PASS' if value <= target else 'FAIL'}: {name}: {value:.2f} s")
    if len(rows) > 1:
        for key in ("open_s", "fork_s"):
            ratio = longest[key] / shortest[key]
            verdict = "PASS" if ratio < scale else "FAIL"
            print(
                f"- {verdict}: {key[:-2]} sub-linear: {scale:.0f}x the turns, {ratio:.1f}x the time"
            )
    verdict = "PASS" if growth <= GROWTH_TARGET else "FAIL"
    print(f"- {verdict}: file growth <= {GROWTH_TARGET}x the text: {growth:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
