"""`sn.sweep` at eval scale (issue 32, item 2): one-turn mocked items ("question i", answered
"42"), each target a PASS/FAIL line.

- local: `--items` (10,000) into a SQLite store, in this process, with the progress line shown
  (on stderr): at most 15 s, peak RSS growth at most 300 MB.
- Ray (`--ray`): the same items on a local Ray cluster of 2 CPUs started here (its start is
  stated, not counted; it is stopped after) into another store: at most 60 s, and the same rows
  as the local sweep's (sessions, their row counts, statuses and answers).
- Inspect AI (`--inspect PYTHON`, the Python of Inspect's venv): the same items as an Inspect
  eval (`peer_inspect.py`, in its own process) at each of `--inspect-items`, beside `sn.sweep`
  of as many items (at `--items`, the local row): sn.sweep faster.

The last line is `BENCH_JSON` and the rows, for `run.py`.

    .venv/bin/python benchmarks/sweep_scale.py [--items 10000] [--ray] \\
        [--inspect benchmarks/.envs/inspect/bin/python --inspect-items 1000,10000]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import MARK, peak_rss_mb, rss_mb

import sagents_nb as sn

HERE = Path(__file__).resolve().parent
LOCAL_SECONDS, RAY_SECONDS, RSS_GROWTH_MB = 15.0, 60.0, 300.0
TABLES = ("events", "messages", "nodes", "tasks", "streams")


def sweep(items: int, store: Path, executor: str | None = None) -> dict[str, Any]:
    """`sn.sweep` of `items` one-turn mocked items into `store`: its wall and CPU seconds."""
    agent = sn.Agent("solver", does="answers")
    prompts = [f"question {i}" for i in range(items)]
    started, cpu = time.perf_counter(), time.process_time()
    comparison = sn.sweep(
        agent,
        prompts,
        llm=lambda: sn.mock_llm(lambda request: "42"),
        store=store,
        executor=executor,
    )
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    done = sum(record.status == "done" and record.answer == "42" for record in comparison.records)
    return {"items": items, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "done": done}


def stored_rows(path: Path) -> dict[str, Any]:
    """Each stored session's row counts by table, and its runs' statuses and answers."""
    found: dict[str, Any] = {}
    store = sn.SQLiteStore(path, create=False)
    store.settle()  # commits kept as log rows go into the tables the SQL below reads
    store.close()
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        for (sid,) in db.execute("SELECT id FROM sessions"):
            found[sid] = {"ends": []}
        for table in TABLES:
            query = f"SELECT session, count(*) FROM {table} GROUP BY session"
            for sid, count in db.execute(query):
                found[sid][table] = count
        ends = db.execute(
            "SELECT session, json_extract(body, '$.status'), json_extract(body, '$.text') "
            "FROM events WHERE type = 'run_finished' ORDER BY session, seq"
        )
        for sid, status, text in ends:
            found[sid]["ends"].append([status, text])
    return found


def same_rows(here: dict[str, Any], there: dict[str, Any]) -> str | None:
    """None if both stores hold the same rows, else what differs first."""
    if here.keys() != there.keys():
        return f"sessions: {len(here)} here, {len(there)} there, {len(here.keys() ^ there.keys())} apart"
    for sid, rows in here.items():
        if rows != there[sid]:
            return f"session {sid}: {rows} here, {there[sid]} there"
    return None


def local_row(items: int, folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    before = rss_mb()
    row = sweep(items, folder / "local.db")
    row["peak_rss_growth_mb"] = round(peak_rss_mb() - before, 1)
    return row, stored_rows(folder / "local.db")


def ray_row(items: int, folder: Path, local: dict[str, Any]) -> dict[str, Any]:
    """The sweep on a local 2-CPU Ray cluster started (and stopped) here."""
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    started = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    start_s = time.perf_counter() - started
    node = ray._private.worker._global_node
    pids = [
        info.process.pid
        for infos in node.all_processes.values()
        for info in infos
        if info.process is not None
    ]
    try:
        row = sweep(items, folder / "ray.db", executor="ray")
    finally:
        ray.shutdown()
        left = stop(pids)
    row["cluster_start_s"] = round(start_s, 1)
    row["left_running"] = left
    row["rows_differ"] = same_rows(local, stored_rows(folder / "ray.db"))
    return row


def stop(pids: list[int]) -> list[int]:
    """Wait for Ray's processes to end after `ray.shutdown()`; end those left, by PID. The
    PIDs that were left running."""
    deadline = time.monotonic() + 10
    while [pid for pid in pids if alive(pid)] and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in pids if alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except (ProcessLookupError, OSError):
        return False


def inspect_row(python: str, items: int) -> dict[str, Any]:
    """Inspect AI's eval of `items` in its own venv (`peer_inspect.py`)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    command = [python, str(HERE / "peer_inspect.py"), f"--items={items}"]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=1800, cwd=HERE, env=env
        )
    except subprocess.TimeoutExpired:
        return {"items": items, "error": "Inspect's eval did not finish within 1800 s"}
    for line in done.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])  # type: ignore[no-any-return]
    tail = [ln for ln in done.stderr.splitlines() if ln.strip()][-1:] or ["no output"]
    return {"items": items, "error": f"exit {done.returncode}: {tail[0][:300]}"}


def targets(rows: dict[str, Any]) -> list[dict[str, str]]:
    """Each target: its status (PASS, FAIL, n/a), what it asks and what was measured."""
    out: list[dict[str, str]] = []

    def add(ok: bool | None, target: str, measured: str) -> None:
        status = "n/a" if ok is None else ("PASS" if ok else "FAIL")
        out.append({"status": status, "target": target, "measured": measured})

    local = rows["local"]
    n = local["items"]
    add(
        local["wall_s"] <= LOCAL_SECONDS and local["done"] == n,
        f"sn.sweep of {n:,} one-turn items into SQLite <= {LOCAL_SECONDS:.0f} s",
        f"{local['wall_s']:.1f} s ({local['cpu_s']:.1f} s CPU, {local['done']:,} done)",
    )
    growth = local["peak_rss_growth_mb"]
    add(
        growth <= RSS_GROWTH_MB,
        f"sn.sweep of {n:,} items: peak RSS growth <= {RSS_GROWTH_MB:.0f} MB",
        f"{growth:.0f} MB",
    )
    ray = rows.get("ray")
    if ray is not None and ray.get("unavailable"):
        add(
            None, f"sn.sweep of {n:,} items on local Ray <= {RAY_SECONDS:.0f} s", ray["unavailable"]
        )
    elif ray is not None:
        add(
            ray["wall_s"] <= RAY_SECONDS and ray["done"] == n,
            f"sn.sweep of {n:,} items on local Ray (2 CPUs) <= {RAY_SECONDS:.0f} s",
            f"{ray['wall_s']:.1f} s, {ray['wall_s'] / local['wall_s']:.2f}x in process "
            f"(cluster start {ray['cluster_start_s']:.1f} s, not counted)",
        )
        differ, left = ray["rows_differ"], ray["left_running"]
        add(
            differ is None and not left,
            "Ray's stored rows are the local sweep's (sessions, row counts, statuses, answers)",
            (differ or "the same") + (f"; Ray processes killed: {left}" if left else ""),
        )
    for peer in rows.get("inspect", []):
        m = peer["items"]
        ours = local if m == n else rows["sweep_at"][str(m)]
        name = f"{m:,} items: sn.sweep faster than an Inspect AI eval"
        if peer.get("error"):
            add(False, name, peer["error"])
            continue
        ratio = peer["wall_s"] / ours["wall_s"]
        add(
            ratio > 1 and peer["done"] == m and ours["done"] == m,
            name,
            f"{ratio:.1f}x: Inspect AI {peer['version']} {peer['wall_s']:.1f} s "
            f"({peer['cpu_s']:.1f} s CPU) vs sn.sweep {ours['wall_s']:.1f} s "
            f"({ours['cpu_s']:.1f} s CPU)",
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--ray", action="store_true", help="the same items on local Ray")
    parser.add_argument("--inspect", help="the Python of Inspect AI's venv")
    parser.add_argument("--inspect-items", default="1000", help="comma list of sample counts")
    args = parser.parse_args()
    rows: dict[str, Any] = {"load_average": " ".join(f"{x:.2f}" for x in os.getloadavg())}
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        rows["local"], local = local_row(args.items, folder)
        if args.inspect:
            counts = [int(c) for c in args.inspect_items.split(",") if c.strip()]
            rows["sweep_at"] = {
                str(m): sweep(m, folder / f"at-{m}.db") for m in counts if m != args.items
            }
            rows["inspect"] = [inspect_row(args.inspect, m) for m in counts]
        if args.ray:
            rows["ray"] = (
                ray_row(args.items, folder, local)
                if importlib.util.find_spec("ray")
                else {"unavailable": "Ray is not installed: pip install 'sagents_nb[ray]'"}
            )
    rows["targets"] = targets(rows)
    for target in rows["targets"]:
        print(f"  {target['status']}: {target['target']}: {target['measured']}")
    print(MARK + json.dumps(rows), flush=True)


if __name__ == "__main__":
    main()
