"""Profile a sagents_nb scenario with cProfile on the library's loop thread (where runs execute).

    .venv/bin/python benchmarks/profile_sagents.py --scenario fanout --n 10 --runs 50
    .venv/bin/python benchmarks/profile_sagents.py --scenario long --n 1000 --runs 1

Prints the hottest functions by own time (share of the profiled total, calls per model turn) and
the same time grouped by package. cProfile inflates pure-Python code relative to C code, so read
the shares as a ranking; confirm a suspected cost by timing with and without it.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import pstats
import threading

import sagents

from sagents_nb._base.loop import library_loop


def on_loop(fn: object) -> None:
    done = threading.Event()
    library_loop().call_soon_threadsafe(lambda: (fn(), done.set()))  # type: ignore[operator]
    done.wait()


def where(filename: str) -> str:
    if "sagents_nb/" in filename:
        return "sagents_nb/" + filename.split("sagents_nb/")[-1]
    if "site-packages/" in filename:
        return filename.split("site-packages/")[-1]
    if filename == "~":
        return "(builtin)"
    return "/".join(filename.split("/")[-2:])


def group(filename: str) -> str:
    name = where(filename)
    if name.startswith("sagents_nb/"):
        return name
    return name.split("/")[0] if "/" in name else name


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenario", default="fanout")
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    scenarios = {
        "fanout": sagents.fanout,
        "fanout-view": sagents.fanout_session(view=True),
        "fanout-store": sagents.fanout_store,
        "long": sagents.long(lambda: sagents.sn.kinds.Main(top_k=None)),
        "long-main64": sagents.long(lambda: sagents.sn.kinds.Main(top_k=64)),
        "long-realtime": sagents.long_realtime,
    }
    run = scenarios[args.scenario]
    for _ in range(3):
        run(min(args.n, 20))
    profile = cProfile.Profile()
    on_loop(profile.enable)
    turns = 0
    for _ in range(args.runs):
        turns += run(args.n).calls
    on_loop(profile.disable)
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    rows = sorted(
        ((tt, nc, fn, line, name) for (fn, line, name), (_, nc, tt, _, _) in stats.items()),
        reverse=True,
    )
    total = sum(r[0] for r in rows)
    print(f"{args.scenario} N={args.n}: {turns} model turns, {total / turns * 1e6:.0f} µs/turn")
    print("profiled (cProfile overhead included)\n\nhottest functions by own time:")
    for tt, nc, fn, line, name in rows[: args.top]:
        print(f"{tt / total:6.1%}  {nc / turns:7.1f}/turn  {where(fn)}:{line}({name})")
    groups: collections.Counter[str] = collections.Counter()
    for tt, _, fn, _, _ in rows:
        groups[group(fn)] += tt
    print("\nown time by package / sagents_nb module:")
    for name, tt in groups.most_common(args.top):
        print(f"{tt / total:6.1%}  {name}")


if __name__ == "__main__":
    main()
