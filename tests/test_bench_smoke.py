"""The smoke benchmark (`benchmarks/run.py --smoke`) runs end to end, so the benchmark cannot rot.

Only that it completes, prints the table and that sagents_nb and the floor did the scenario's
work are asserted; timings are measured by the benchmark, never asserted here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FANOUT_10 = "41 calls / 30 tools"  # 4N+1 model calls, 3N tool calls
PREDICATE = "sagents_nb + never-firing predicate"


def test_smoke_benchmark_prints_the_table_with_the_expected_work(tmp_path: Path) -> None:
    out = tmp_path / "smoke.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--smoke", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=110,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert any(line.startswith("| framework | fanout 10 µs/turn |") for line in lines), done.stdout
    for label in ("floor", "sagents_nb", PREDICATE):
        row = next((line for line in lines if line.startswith(f"| {label} |")), None)
        assert row is not None, done.stdout
        assert FANOUT_10 in row, row
    assert any(line.startswith("Targets:") for line in lines)
    assert any("sagents_nb <= 1.3x floor" in line for line in lines)
    assert any("never-firing predicate attached <= 1.05x" in line for line in lines)
    assert any("first run_sync <= 1.5x import httpx" in line for line in lines)
    assert any(
        re.match(r"- (PASS|FAIL): sn\.diff of two [\d,]+-event sessions <= 1 s: [\d.]+ s", line)
        for line in lines
    ), done.stdout

    data = json.loads(out.read_text())
    assert data["mode"] == "smoke"
    rows = {row["label"]: row for row in data["results"]}
    assert set(rows) == {"floor", "sagents_nb", PREDICATE}
    for row in rows.values():
        assert not row.get("error"), row
        assert row["scenario"].startswith("fanout") and row["n"] == 10
        assert (row["model_calls"], row["tool_calls"]) == (41, 30)
        assert row["runs"] >= 1 and row["us_per_turn"] > 0
    assert "sagents_nb" in data["imports"]
