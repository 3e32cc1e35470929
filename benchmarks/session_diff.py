"""`sn.diff` at scale: two sessions of ~20,000 events each (issue 28 item 6).

    .venv/bin/python benchmarks/session_diff.py               # 4,000 tool turns, ~20,000 events
    .venv/bin/python benchmarks/session_diff.py --turns 400   # quicker

Target: `sn.diff` of two 20,000-event sessions takes at most 1 s, in the cases that go through
the whole log: a session against its reopened copy (every event equal: the events one read
from the other's store are the same rows, not decoded to be compared), against a fork at its
last model call resumed with an edited reply (they part at the very end), and against an
independent twin run in another store (every event compared, field by field). Prints each
figure and PASS or FAIL.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from store_scale import step  # the long job's tool (a script's folder is on sys.path)

import sagents_nb as sn

TARGET_S = 1.0


def long_session(folder: Path, turns: int) -> tuple[sn.Session, sn.Agent]:
    def handler(req: sn.ChatRequest) -> object:
        done = len(req.tool_results)
        if done < turns:
            return sn.reply(tool_calls=[sn.call("step", i=done)])
        return "tout est fait ✅"

    agent = sn.Agent("worker", tools=[step], max_turns=turns + 5, kind=sn.kinds.Main(top_k=8))
    folder.mkdir(exist_ok=True)
    session = sn.Session(
        agent, llm=sn.mock_llm(handler), store=folder / "long.db", max_model_calls=None
    )
    session.send("go").result()
    session.flush()
    return session, agent


def timed(a: sn.Session, b: sn.Session) -> tuple[float, sn.SessionDiff]:
    started = time.perf_counter()
    found = sn.diff(a, b)
    return time.perf_counter() - started, found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=4000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        session, agent = long_session(Path(folder), args.turns)
        print(f"session: {len(session.events)} events")
        reopened = sn.Session.open(session.store, session.id, agent=agent)
        cases = [("vs its reopened copy (all equal)", session, reopened)]
        last = [e for e in session.events if e.type == "model_request"][-1]
        fork = session.fork(at=last.seq)
        run = fork.resume(pause_on={"model"})
        run.wait()
        run.edit(reply="une autre fin — 别的结局")
        run.result()
        fork.flush()
        cases.append(("vs a fork edited at its last call", session, fork))
        twin, _ = long_session(Path(folder) / "twin", args.turns)
        cases.append(("vs an independent twin run (every event compared)", session, twin))
        failed = False
        for label, a, b in cases:
            seconds, found = timed(a, b)
            ok = seconds <= TARGET_S
            failed |= not ok
            where = "none" if found.first is None else f"event #{found.first + 1}"
            print(
                f"sn.diff {label}: {len(a.events)} vs {len(b.events)} events, first "
                f"divergence {where}: {seconds:.3f} s (target <= {TARGET_S} s) "
                f"{'PASS' if ok else 'FAIL'}"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
