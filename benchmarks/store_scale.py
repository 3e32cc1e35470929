"""The store at scale: how fast a long session reopens and forks, and how much disk a long
answer takes (issue 19 items 6 and 7).

    .venv/bin/python benchmarks/store_scale.py            # 1,000 and 4,000 tool turns, 5 MB
    .venv/bin/python benchmarks/store_scale.py --growth-only   # the disk figures alone
    .venv/bin/python benchmarks/store_scale.py --turns 200 800 --answer-mb 1   # quicker

Targets: `Session.open` and `fork()` of the longest session (4,000 tool turns, ~20,000 events)
take at most 0.3 s each, and grow sub-linearly with the session's length (4x the turns costs
less than 4x the time); a session's file grows by at most 2x the text it produced, for one
big answer (`--answer-mb`), for a streamed one (`--streamed-kb`, a `Realtime` agent: thousands
of chunks of a few characters) and for an ordinary session (three runs of file reads, a
delegation and answers of a few KB; text in French, Japanese, Chinese, emoji and code).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


PIECES = (
    "Les données du rapport sont prêtes : « déjà vérifiées ». ",
    "東京の報告書は準備できました。",
    "数据已经核实。",
    "🚀✨👩‍💻 ",
    'def total(rows):\n    return sum(r["amount"] for r in rows)  # line of code = 42\n',
)


def mixed_text(size: int, start: int = 0) -> str:
    """`size` characters of French, Japanese, Chinese, emoji and code."""
    pieces = PIECES[start % len(PIECES) :] + PIECES[: start % len(PIECES)]
    line = "".join(pieces)
    return (line * (size // len(line) + 1))[:size]


@sn.tool
def read_file(name: str) -> str:
    """Read a file of the project.

    Args:
        name: the file's name.
    """
    return f"# {name}\n" + mixed_text(1500 + 500 * len(name), len(name))


def big_answer(path: Path, megabytes: float) -> sn.Session:
    """One answer of about `megabytes` MB (of UTF-8)."""
    sample = mixed_text(10_000)
    text = mixed_text(int(megabytes * 1_000_000 * len(sample) / len(sample.encode())))
    session = sn.Session(sn.Agent("writer"), llm=sn.script(text), store=path)
    session.send("write the report").result()
    return session


def streamed_answer(path: Path, kilobytes: float) -> sn.Session:
    """One answer of about `kilobytes` KB (of UTF-8), streamed in chunks of a few characters."""
    sample = mixed_text(10_000)
    text = mixed_text(int(kilobytes * 1_000 * len(sample) / len(sample.encode())))
    agent = sn.Agent("writer", kind=sn.kinds.Realtime())
    session = sn.Session(
        agent, llm=sn.mock_llm(lambda req: sn.reply(text, stream=True)), store=path
    )
    session.send("write the report, streaming").result()
    chunks = sum(event.type == "text_delta" for event in session.events)
    assert chunks > len(text) // 20, f"the answer came in {chunks} chunks"
    return session


def ordinary_session(path: Path) -> sn.Session:
    """Three runs of an agent that reads files (1.5-4 KB each), delegates a part to a worker
    (who reads one and answers in 1 KB) and answers in 2-3 KB."""

    def handler(req: sn.ChatRequest) -> object:
        done = len(req.tool_results)
        if "task" not in req.tools:  # the worker
            if done == 0:
                return sn.reply(tool_calls=[sn.call("read_file", name="part.py")])
            return "Partie faite / 完了: " + mixed_text(1000, 3)
        if done < 3:
            return sn.reply(tool_calls=[sn.call("read_file", name=f"{'src/' * done}m{done}.py")])
        if done == 3:
            return sn.reply(tool_calls=[sn.call("task", agent="worker", prompt=req.last_user)])
        return mixed_text(2500, len(req.last_user))

    worker = sn.Agent("worker", does="writes one part", tools=[read_file])
    lead = sn.Agent("lead", does="writes reports", tools=[read_file], team=[worker])
    session = sn.Session(lead, llm=sn.mock_llm(handler), store=path)
    for prompt in ("écris le rapport", "報告を書いてください", "再写一遍，加上代码 🙂"):
        session.send(prompt).result()
    return session


def disk_growth(path: Path, make: Callable[[Path], sn.Session]) -> tuple[int, int]:
    """Bytes of text a session produced (every message's text and tool arguments, in every
    node's storage), and bytes its store file grew by."""
    empty = sn.SQLiteStore(path)
    empty.close()
    before = _size(path)
    session = make(path)
    session.store.close()
    produced = sum(
        len((m.content or "").encode()) + sum(len(c.arguments.encode()) for c in m.tool_calls or ())
        for node in session.root.walk()
        for m in node.history
    )
    return produced, _size(path) - before


def _size(path: Path) -> int:
    return sum(os.path.getsize(p) for p in (path, Path(f"{path}-wal")) if p.exists())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[1000, 4000])
    parser.add_argument("--answer-mb", type=float, default=5.0)
    parser.add_argument("--streamed-kb", type=float, default=500.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--growth-only", action="store_true", help="only the disk figures")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="sn-scale-") as tmp:
        folder = Path(tmp)
        for turns in [] if args.growth_only else sorted(args.turns):
            path, sid, events = long_session(folder, turns)
            opened, forked = timed_open(path, sid, args.repeat)
            rows.append({"turns": turns, "events": events, "open_s": opened, "fork_s": forked})
            print(json.dumps(rows[-1]), flush=True)
        growths = {}
        for name, make in (
            ("big answer", lambda path: big_answer(path, args.answer_mb)),
            ("streamed answer", lambda path: streamed_answer(path, args.streamed_kb)),
            ("ordinary session", ordinary_session),
        ):
            produced, grew = disk_growth(folder / f"{name.replace(' ', '-')}.db", make)
            growths[name] = grew / produced
            print(json.dumps({name: {"text_bytes": produced, "file_bytes": grew}}), flush=True)
    print()
    if rows:
        speed_verdicts(rows)
    for name, growth in growths.items():
        verdict = "PASS" if growth <= GROWTH_TARGET else "FAIL"
        print(f"- {verdict}: {name}: file <= {GROWTH_TARGET}x the text: {growth:.2f}x")
    return 0


def speed_verdicts(rows: list[dict[str, Any]]) -> None:
    longest, shortest = rows[-1], rows[0]
    scale = longest["turns"] / shortest["turns"]
    verdicts = [
        (f"open {longest['events']} events <= {OPEN_TARGET_S} s", longest["open_s"], None),
        (f"fork {longest['events']} events <= {FORK_TARGET_S} s", longest["fork_s"], None),
    ]
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


if __name__ == "__main__":
    sys.exit(main())
