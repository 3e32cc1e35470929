"""One command for the whole benchmark: `python benchmarks/run.py` (or `make bench`).

It builds each peer's venv under `benchmarks/.envs/` (pip, bounded in time), then runs the same
scenarios on the floor, on sagents_nb and on every peer, each scenario in its own subprocess in
the framework's venv (the scenario files print one JSON line), and prints one table: medians over
several runs, µs per model turn, the ratio to the floor, long-run growth, peak RSS and import time,
followed by the targets as PASS/FAIL lines, the live view's in JupyterLab and chromium among
them (`view_browser.py`; `--no-browser` skips it). Then `sweep_scale.py`: `sn.sweep` of 10,000
items in process and on a local Ray cluster, beside Inspect AI (its venv built like a peer's) at
1,000 and 10,000 samples. The results go to `benchmarks/results/latest.json` and the table into
`benchmarks/README.md`.

`--smoke` runs only sagents_nb and the floor at N = 10 (and the import check, a sweep of 500
items in process), and the live view on a stored tree of 501 nodes, quickly; it writes JSON only
where `--out` says.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime as dt
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ENVS = HERE / ".envs"
RESULTS = HERE / "results"
README = HERE / "README.md"
MARK = "BENCH_JSON "
JUPYTER = (
    "IPython",
    "ipykernel",
    "ipywidgets",
    "anywidget",
    "jupyter_client",
    "jupyter_core",
    "jupyterlab",
    "nbformat",
    "nbclient",
    "traitlets",
    "comm",
    "widgetsnbextension",
    "zmq",
)


@dataclass
class Framework:
    """A framework under test: its scenario file, and (for peers) what its venv needs."""

    name: str
    script: str
    module: str
    packages: list[str] = field(default_factory=list)
    peer: bool = True
    python: str = sys.executable
    unavailable: str | None = None


PEERS = [
    Framework("pydantic-ai", "peer_pydantic_ai.py", "pydantic_ai", ["pydantic-ai-slim==2.68.0"]),
    Framework(
        "langgraph",
        "peer_langgraph.py",
        "langgraph.prebuilt",
        ["langgraph==1.2.24", "langchain-core==1.8.3"],
    ),
    Framework("smolagents", "peer_smolagents.py", "smolagents", ["smolagents==1.26.0"]),
    Framework("openai-agents", "peer_openai_agents.py", "agents", ["openai-agents==0.24.0"]),
]
INSPECT = Framework("inspect-ai", "peer_inspect.py", "inspect_ai", ["inspect-ai==0.3.285"])
"""Inspect AI, the peer of the eval-scale sweep (`sweep_scale.py`), not of the fanout."""
FLOOR = Framework("floor", "floor.py", "httpx", peer=False)
SAGENTS = Framework("sagents_nb", "sagents.py", "sagents_nb", peer=False)
PREDICATE = "sagents_nb + never-firing predicate"
FLOOR_LIMIT = 1.3
"""Issue 32: the fanout costs at most this much the floor's per model turn."""

FIRST_RUN = (
    "import sagents_nb as sn; sn.Agent('a').run_sync('hi', llm=sn.mock_llm(lambda req: 'ok'))"
)
FIRST_REQUEST = (
    "import httpx; "
    "c = httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(200, json={'a': 1}))); "
    "c.post('http://mock/v1', json={'q': 1}).json()"
)
"""Issue 32's first-use target: `import sagents_nb`, an `sn.Agent`, `sn.mock_llm` and a first
`run_sync`, against `import httpx` and one request over `httpx.MockTransport` (each over bare
Python)."""


def log(text: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


# machine and environments


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory = f"{int(line.split()[1]) / 2**20:.0f} GB"
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": memory,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_average": load_average(),
    }


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def base_python() -> str:
    """The interpreter behind the project's venv (peers get venvs of the same Python)."""
    return getattr(sys, "_base_executable", None) or sys.executable


def build_env(fw: Framework, timeout: float) -> None:
    """Create (or reuse) the peer's venv and pip-install its pinned packages, within `timeout`."""
    env = ENVS / fw.script.removesuffix(".py").removeprefix("peer_")
    python = env / "bin" / "python"
    stamp = env / ".bench-spec"
    spec = " ".join(fw.packages)
    fw.python = str(python)
    if python.exists() and stamp.exists() and stamp.read_text() == spec:
        return
    started = time.monotonic()
    try:
        if not python.exists():
            subprocess.run(
                [base_python(), "-m", "venv", str(env)],
                check=True,
                capture_output=True,
                timeout=timeout,
            )
        left = max(10.0, timeout - (time.monotonic() - started))
        done = subprocess.run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                *fw.packages,
            ],
            capture_output=True,
            text=True,
            timeout=left,
        )
    except subprocess.TimeoutExpired:
        fw.unavailable = f"pip install did not finish within {timeout:.0f} s"
        return
    except (OSError, subprocess.CalledProcessError) as exc:
        fw.unavailable = f"could not create its venv: {exc}"
        return
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
        errors = [ln for ln in lines if "ERROR" in ln] or lines
        fw.unavailable = f"pip install failed: {(errors[-1] if errors else 'no output')[:200]}"
        return
    stamp.write_text(spec)


def build_envs(peers: list[Framework], timeout: float, install: bool) -> None:
    ENVS.mkdir(parents=True, exist_ok=True)
    if not install:
        for fw in peers:
            env = ENVS / fw.script.removesuffix(".py").removeprefix("peer_")
            fw.python = str(env / "bin" / "python")
            if not Path(fw.python).exists():
                fw.unavailable = "no venv (run without --no-install to build it)"
        return
    log(f"building peer venvs in {ENVS} (pip, at most {timeout:.0f} s each)")
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(peers) or 1) as pool:
        list(pool.map(lambda fw: build_env(fw, timeout), peers))
    for fw in peers:
        log(f"  {fw.name}: {fw.unavailable or 'ready'}")


# running scenarios


def scenario_env(peer: bool = False) -> dict[str, str]:
    """The environment of a scenario process: a peer's venv sees no outside path; sagents_nb's
    and the floor's see this checkout first (from a worktree, the worktree is measured)."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if not peer:
        env["PYTHONPATH"] = str(HERE.parent)
    env["PYTHONHASHSEED"] = "0"
    return env


def run_scenario(
    fw: Framework, scenario: str, n: int, runs: int, warmup: int, budget: float, timeout: float
) -> dict[str, Any]:
    """Run one scenario in a fresh process of the framework's Python; its JSON line, parsed."""
    command = [
        fw.python,
        str(HERE / fw.script),
        f"--scenario={scenario}",
        f"--n={n}",
        f"--runs={runs}",
        f"--warmup={warmup}",
        f"--budget={budget}",
    ]
    started = time.monotonic()
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=HERE,
            env=scenario_env(fw.peer),
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    payload: dict[str, Any] | None = None
    for line in done.stdout.splitlines():
        if line.startswith(MARK):
            payload = json.loads(line[len(MARK) :])
    if payload is None:
        tail = [ln for ln in done.stderr.splitlines() if ln.strip()][-1:] or ["no output"]
        return {"error": f"exit {done.returncode}: {tail[0][:300]}"}
    payload["process_s"] = round(time.monotonic() - started, 2)
    return payload


def merge(payloads: list[dict[str, Any]]) -> dict[str, Any]:
    """Several rounds of one scenario: their samples pooled, the first problem kept."""
    merged: dict[str, Any] = {k: v for k, v in payloads[0].items() if k != "samples"}
    merged["samples"] = [s for p in payloads for s in p.get("samples", [])]
    merged["peak_rss_mb"] = max((p.get("peak_rss_mb") or 0.0) for p in payloads) or None
    for key in ("error", "unavailable"):
        found = next((p[key] for p in payloads if p.get(key)), None)
        if found:
            merged[key] = found
    return merged


def med(samples: list[dict[str, Any]], key: str) -> float | None:
    values = [s[key] for s in samples if key in s]
    return statistics.median(values) if values else None


def summarise(fw: str, label: str, scenario: str, n: int, data: dict[str, Any]) -> dict[str, Any]:
    samples = data.get("samples") or []
    row: dict[str, Any] = {
        "framework": fw,
        "label": label,
        "scenario": scenario,
        "n": n,
        "version": data.get("version"),
        "runs": len(samples),
        "us_per_turn": med(samples, "us_per_turn"),
        "cpu_us_per_turn": med(samples, "cpu_us_per_turn"),
        "min_us_per_turn": min((s["us_per_turn"] for s in samples), default=None),
        "model_calls": samples[0]["model_calls"] if samples else None,
        "tool_calls": samples[0]["tool_calls"] if samples else None,
        "peak_rss_mb": data.get("peak_rss_mb"),
        "rss_before_mb": data.get("rss_before_mb"),
    }
    if scenario.startswith("long"):
        row.update(
            early_us=med(samples, "early_us"),
            late_us=med(samples, "late_us"),
            growth=med(samples, "growth"),
            early_mean_us=med(samples, "early_mean_us"),
            late_mean_us=med(samples, "late_mean_us"),
            growth_mean=med(samples, "growth_mean"),
            growth_after_100=med(samples, "growth_after_100"),
        )
    for key in ("error", "unavailable"):
        if data.get(key):
            row[key] = data[key]
    return row


# import time


def import_time(fw: Framework, repeat: int) -> dict[str, Any]:
    """Median wall time of `python -c "import X"` minus that of `python -c "pass"`, warm caches.

    Bytecode goes to a cache folder under .envs (PYTHONDONTWRITEBYTECODE is lifted there), so a
    source checkout is measured like an installed package: compiled once, then loaded.
    """
    env = scenario_env(fw.peer)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(ENVS / "pycache" / fw.name)

    def wall(code: str) -> float:
        started = time.perf_counter()
        subprocess.run([fw.python, "-c", code], check=True, capture_output=True, env=env, cwd=HERE)
        return time.perf_counter() - started

    probe = f"import sys, json, {fw.module}; print(json.dumps(sorted(sys.modules)))"
    try:
        modules = json.loads(
            subprocess.run(
                [fw.python, "-c", probe], check=True, capture_output=True, text=True, env=env
            ).stdout
        )
        bare, loaded = [], []
        for _ in range(repeat):
            bare.append(wall("pass"))
            loaded.append(wall(f"import {fw.module}"))
    except (subprocess.CalledProcessError, OSError, ValueError) as exc:
        return {"error": f"import failed: {exc}"[:300]}
    jupyter = sorted({m.split(".")[0] for m in modules if m.split(".")[0] in JUPYTER})
    bare_ms = statistics.median(bare) * 1e3
    return {
        "ms_over_bare": statistics.median(loaded) * 1e3 - bare_ms,
        "bare_ms": bare_ms,
        "modules": len(modules),
        "jupyter_modules": jupyter,
    }


def first_use(repeat: int) -> dict[str, Any]:
    """Wall time of FIRST_RUN and of FIRST_REQUEST over bare Python (medians, warm caches)."""
    env = scenario_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(ENVS / "pycache" / "first-use")

    def wall(code: str) -> float:
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, env=env, cwd=HERE
        )
        return time.perf_counter() - started

    try:
        wall(FIRST_RUN), wall(FIRST_REQUEST)  # compile once
        times: dict[str, list[float]] = {"bare": [], "sagents_nb": [], "httpx": []}
        for _ in range(repeat):
            times["bare"].append(wall("pass"))
            times["sagents_nb"].append(wall(FIRST_RUN))
            times["httpx"].append(wall(FIRST_REQUEST))
    except (subprocess.CalledProcessError, OSError) as exc:
        return {"error": f"first use failed: {exc}"[:300]}
    bare = statistics.median(times["bare"])
    return {
        "sagents_ms": (statistics.median(times["sagents_nb"]) - bare) * 1e3,
        "httpx_ms": (statistics.median(times["httpx"]) - bare) * 1e3,
    }


# the plan


@dataclass
class Job:
    fw: Framework
    label: str
    scenario: str
    n: int
    runs: int
    rounds: int = 1
    warmup: int = 2
    budget: float = 120.0
    timeout: float = 600.0


def plan(smoke: bool, peers: list[Framework], runs: int, rounds: int) -> list[Job]:
    if smoke:
        return [
            Job(FLOOR, "floor", "fanout", 10, 5, rounds=1, warmup=3),
            Job(SAGENTS, "sagents_nb", "fanout", 10, 5, rounds=1, warmup=3),
            Job(SAGENTS, PREDICATE, "fanout-breakpoint", 10, 5, rounds=1, warmup=3),
        ]
    jobs: list[Job] = []
    core = [
        (FLOOR, "floor", "fanout"),
        (FLOOR, "floor (sync httpx.Client)", "fanout-sync"),
        (SAGENTS, "sagents_nb", "fanout"),
        (SAGENTS, "sagents_nb via Session.send", "fanout-session"),
        (SAGENTS, "sagents_nb + notebook view", "fanout-view"),
        (SAGENTS, "sagents_nb + SQLite store", "fanout-store"),
        (SAGENTS, PREDICATE, "fanout-breakpoint"),
    ]
    for n in (10, 100):
        for fw, label, scenario in core:
            if n == 100 and scenario not in ("fanout",):
                continue
            if n == 10:
                jobs.append(Job(fw, label, scenario, n, runs, rounds=rounds))
            else:
                jobs.append(Job(fw, label, scenario, n, 3, rounds=2))
    long_core = [
        (FLOOR, "floor", "long"),
        (SAGENTS, "sagents_nb", "long"),
        (SAGENTS, "sagents_nb Main(top_k=64)", "long-main64"),
        (SAGENTS, "sagents_nb Realtime(window=4)", "long-realtime"),
    ]
    for fw, label, scenario in long_core:
        jobs.append(Job(fw, label, scenario, 1000, 5, rounds=1, budget=60))
    for fw in peers:
        jobs.append(Job(fw, fw.name, "fanout", 10, 5, rounds=min(rounds, 3)))
        jobs.append(Job(fw, fw.name, "fanout", 100, 3, rounds=1, budget=60))
        jobs.append(Job(fw, fw.name, "long", 1000, 3, rounds=1, warmup=1, budget=45))
    return jobs


def execute(jobs: list[Job]) -> list[dict[str, Any]]:
    """Run the jobs; rounds of the same (framework, scenario) are interleaved across jobs."""
    payloads: dict[int, list[dict[str, Any]]] = {i: [] for i in range(len(jobs))}
    most = max((j.rounds for j in jobs), default=0)
    for round_ in range(most):
        for i, job in enumerate(jobs):
            if round_ >= job.rounds:
                continue
            if job.fw.unavailable:
                payloads[i].append({"unavailable": job.fw.unavailable})
                continue
            if any(p.get("unavailable") for p in payloads[i]):
                continue
            log(f"{job.label}: {job.scenario} N={job.n} (round {round_ + 1}/{job.rounds})")
            payloads[i].append(
                run_scenario(
                    job.fw, job.scenario, job.n, job.runs, job.warmup, job.budget, job.timeout
                )
            )
    return [
        summarise(job.fw.name, job.label, job.scenario, job.n, merge(payloads[i]))
        for i, job in enumerate(jobs)
    ]


# the report


def find(rows: list[dict[str, Any]], label: str, scenario: str, n: int) -> dict[str, Any] | None:
    for row in rows:
        if row["label"] == label and row["scenario"] == scenario and row["n"] == n:
            return row
    return None


def value(row: dict[str, Any] | None, key: str) -> float | None:
    if row is None or row.get("error") or row.get("unavailable"):
        return None
    return row.get(key)


def targets(
    rows: list[dict[str, Any]], imports: dict[str, Any], peers: list[Framework]
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(name: str, measured: str, ok: bool | None, detail: str = "") -> None:
        status = "n/a" if ok is None else ("PASS" if ok else "FAIL")
        out.append({"target": name, "measured": measured, "status": status, "detail": detail})

    sn10 = value(find(rows, "sagents_nb", "fanout", 10), "us_per_turn")
    floor10 = value(find(rows, "floor", "fanout", 10), "us_per_turn")
    floor_name = f"fanout N=10: sagents_nb <= {FLOOR_LIMIT}x floor"
    if sn10 and floor10:
        ratio = sn10 / floor10
        add(
            floor_name,
            f"{ratio:.2f}x",
            ratio <= FLOOR_LIMIT,
            cpu_note(rows, ("sagents_nb", "fanout"), ("floor", "fanout")),
        )
    else:
        add(floor_name, "missing", False)
    peer_values = [
        (fw.name, value(find(rows, fw.name, "fanout", 10), "us_per_turn")) for fw in peers
    ]
    peer_values = [(name, v) for name, v in peer_values if v]
    if sn10 and peer_values:
        name, fastest = min(peer_values, key=lambda p: p[1])
        speedup = fastest / sn10
        add(
            "fanout N=10: sagents_nb >= 3x faster than the fastest peer",
            f"{speedup:.2f}x ({name})",
            speedup >= 3.0,
            cpu_note(rows, (name, "fanout"), ("sagents_nb", "fanout")),
        )
    else:
        add("fanout N=10: sagents_nb >= 3x faster than the fastest peer", "no peer ran", None)
    sn_long = find(rows, "sagents_nb", "long", 1000)
    floor_long = find(rows, "floor", "long", 1000)
    g_sn, g_floor = value(sn_long, "growth"), value(floor_long, "growth")
    if sn_long is not None or floor_long is not None:
        ok = g_sn is not None and g_floor is not None and g_sn <= g_floor
        m_sn, m_floor = value(sn_long, "growth_mean"), value(floor_long, "growth_mean")
        add(
            "long N=1000: growth (turns 901-1000 / 1-100) <= the floor's",
            f"{g_sn:.1f}x vs floor {g_floor:.1f}x" if g_sn and g_floor else "missing",
            ok,
            f"window means: {m_sn:.1f}x vs {m_floor:.1f}x" if m_sn and m_floor else "",
        )
        rss = value(sn_long, "peak_rss_mb")
        add(
            "long N=1000: sagents_nb peak RSS <= 80 MB",
            f"{rss:.1f} MB" if rss else "missing",
            bool(rss and rss <= 80),
        )
    imp = imports.get("sagents_nb", {})
    if "ms_over_bare" in imp:
        add(
            "import sagents_nb <= 150 ms over bare Python",
            f"{imp['ms_over_bare']:.0f} ms",
            imp["ms_over_bare"] <= 150,
        )
        jupyter = imp["jupyter_modules"]
        add(
            "import sagents_nb loads no Jupyter package",
            ", ".join(jupyter) or "none",
            not jupyter,
        )
    elif imp:
        add("import sagents_nb <= 150 ms over bare Python", imp.get("error", "?"), False)
    first = imports.get("first use", {})
    first_name = "import + Agent + mock_llm + first run_sync <= 1.5x import httpx + one request"
    if first.get("httpx_ms"):
        ratio = first["sagents_ms"] / first["httpx_ms"]
        add(
            first_name,
            f"{ratio:.2f}x",
            ratio <= 1.5,
            f"{first['sagents_ms']:.0f} ms vs {first['httpx_ms']:.0f} ms over bare Python",
        )
    elif first:
        add(first_name, first.get("error", "?"), False)
    for label, scenario, base_label, base_scenario, limit in (
        (
            "sagents_nb + notebook view",
            "fanout-view",
            "sagents_nb via Session.send",
            "fanout-session",
            1.15,
        ),
        ("sagents_nb + SQLite store", "fanout-store", "sagents_nb", "fanout", 1.3),
        (PREDICATE, "fanout-breakpoint", "sagents_nb", "fanout", 1.05),
    ):
        row = find(rows, label, scenario, 10)
        if row is None:
            continue
        name = f"fanout N=10: {label.removeprefix('sagents_nb + ')} attached <= {limit}x"
        if row.get("unavailable"):
            add(name, "n/a", None, row["unavailable"])
            continue
        a, b = (
            value(row, "us_per_turn"),
            value(find(rows, base_label, base_scenario, 10), "us_per_turn"),
        )
        if a and b:
            note = cpu_note(rows, (label, scenario), (base_label, base_scenario))
            add(name, f"{a / b:.2f}x", a / b <= limit, note)
        else:
            add(name, "error", False, row.get("error", ""))
    for label, scenario in (
        ("sagents_nb Main(top_k=64)", "long-main64"),
        ("sagents_nb Realtime(window=4)", "long-realtime"),
    ):
        row = find(rows, label, scenario, 1000)
        if row is None:
            continue
        growth, mean = value(row, "growth"), value(row, "growth_mean")
        after = value(row, "growth_after_100")
        notes = [f"window means: {mean:.2f}x" if mean else "", ""]
        if after:
            notes[1] = f"turns 901-1000 over 101-200: {after:.2f}x"
        add(
            f"issue 4: {label.removeprefix('sagents_nb ')} growth over 1,000 turns <= 1.5x",
            f"{growth:.2f}x" if growth else row.get("error", "missing"),
            bool(growth and growth <= 1.5),
            "; ".join(n for n in notes if n),
        )
    for row in rows:
        if row.get("error"):
            add(f"{row['label']} {row['scenario']} N={row['n']} ran", "error", False, row["error"])
    return out


def cpu_note(rows: list[dict[str, Any]], top: tuple[str, str], bottom: tuple[str, str]) -> str:
    """The same ratio in process CPU time, which the machine's other load disturbs less."""
    a = value(find(rows, top[0], top[1], 10), "cpu_us_per_turn")
    b = value(find(rows, bottom[0], bottom[1], 10), "cpu_us_per_turn")
    return f"in CPU time {a / b:.2f}x" if a and b else ""


def fmt(v: float | None, digits: int = 0) -> str:
    if v is None:
        return "–"
    return f"{v:,.{digits}f}"


def table(rows: list[dict[str, Any]], imports: dict[str, Any]) -> str:
    floor = {n: value(find(rows, "floor", "fanout", n), "us_per_turn") for n in (10, 100)}
    labels: list[str] = []
    for row in rows:
        if row["label"] not in labels:
            labels.append(row["label"])
    head = (
        "| framework | fanout 10 µs/turn | × floor | fanout 100 µs/turn | × floor "
        "| long 1000: turns 1–100 µs | turns 901–1000 µs | growth | long µs/turn | peak RSS MB "
        "| import ms | work (fanout 10) |"
    )
    lines = [head, "|" + "---|" * 12]
    for label in labels:
        mine = [r for r in rows if r["label"] == label]
        fw = mine[0]["framework"]
        cells = [label]
        problem = next(
            (
                r.get("unavailable") or r.get("error")
                for r in mine
                if r.get("unavailable") or r.get("error")
            ),
            None,
        )
        for n in (10, 100):
            row = next(
                (r for r in mine if r["scenario"].startswith("fanout") and r["n"] == n), None
            )
            v = value(row, "us_per_turn")
            cells.append(fmt(v))
            cells.append(f"{v / floor[n]:.2f}" if v and floor.get(n) else "–")
        long = next((r for r in mine if r["scenario"].startswith("long")), None)
        cells += [
            fmt(value(long, "early_us")),
            fmt(value(long, "late_us")),
            fmt(value(long, "growth"), 1),
            fmt(value(long, "us_per_turn")),
            fmt(value(long, "peak_rss_mb") if long else None, 1),
        ]
        imp = imports.get(fw, {})
        cells.append(fmt(imp.get("ms_over_bare")) if label == fw else "")
        row10 = next((r for r in mine if r["scenario"].startswith("fanout") and r["n"] == 10), None)
        if row10 and value(row10, "us_per_turn"):
            cells.append(f"{row10['model_calls']} calls / {row10['tool_calls']} tools")
        else:
            cells.append("")
        if problem and all(c in ("–", "") for c in cells[1:-1]):
            cells = [label, f"unavailable: {problem}"] + [""] * 10
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def versions(rows: list[dict[str, Any]]) -> str:
    """The frameworks measured, each with the version its scenario reported."""
    seen: dict[str, str] = {}
    for row in rows:
        name = row["label"].split(" ")[0]
        if row.get("version") and name not in seen:
            seen[name] = row["version"]
    words = [v if v.split(" ")[0] == n else f"{n} {v}" for n, v in seen.items()]
    return "Versions: " + "; ".join(words) + "."


def report(result: dict[str, Any]) -> str:
    m = result["machine"]
    parts = [
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory']}, {m['os']}, Python {m['python']}; "
        f"{m['date']}; {result['mode']} run in {result['duration_s']:.0f} s "
        f"(load average {m['load_average']} at the start, {result['load_average_end']} at the end).",
        "",
        versions(result["results"]),
        "",
        table(result["results"], result["imports"]),
        "",
    ]
    problems = [
        f"- {r['label']} {r['scenario']} N={r['n']}: {r.get('unavailable') or r.get('error')}"
        for r in result["results"]
        if r.get("unavailable") or r.get("error")
    ]
    if problems:
        parts += ["Not measured:", *problems, ""]
    parts.append("Targets:")
    for t in result["targets"]:
        detail = f" ({t['detail']})" if t.get("detail") else ""
        parts.append(f"- {t['status']}: {t['target']}: {t['measured']}{detail}")
    for note in result.get("notes", []):
        parts.append(f"- note: {note}")
    return "\n".join(parts)


def update_readme(text: str) -> None:
    start, end = "<!-- bench:start -->", "<!-- bench:end -->"
    block = f"{start}\n{text}\n{end}"
    current = README.read_text() if README.exists() else f"# Benchmarks\n\n{start}\n{end}\n"
    if start in current and end in current:
        current = re.sub(
            re.escape(start) + ".*?" + re.escape(end), lambda _: block, current, flags=re.S
        )
    else:
        current = current.rstrip() + "\n\n" + block + "\n"
    README.write_text(current)


DIFF_LINE = re.compile(r"^sn\.diff (.+?): (\d+) vs (\d+) events, .*: ([\d.]+) s \(")


def diff_target(turns: int) -> dict[str, Any]:
    """Issue 28's `sn.diff` target: `session_diff.py` (three comparisons of a session of
    `turns` tool turns, ~6 events each) as one row, its slowest case measured."""
    name = "sn.diff of two long sessions <= 1 s"
    try:
        done = subprocess.run(
            [sys.executable, str(HERE / "session_diff.py"), "--turns", str(turns)],
            capture_output=True,
            text=True,
            timeout=900,
            cwd=HERE,
        )
    except subprocess.TimeoutExpired:
        return _target(name, "did not finish within 900 s", False)
    cases = [m.groups() for m in map(DIFF_LINE.match, done.stdout.splitlines()) if m]
    if done.returncode not in (0, 1) or len(cases) != 3:
        return _target(name, f"exited {done.returncode}", False, done.stderr[-300:])
    slowest = max(float(seconds) for *_, seconds in cases)
    events = max(int(a) for _, a, _, _ in cases)
    detail = "; ".join(f"{label}: {float(seconds):.3f} s" for label, _, _, seconds in cases)
    name = f"sn.diff of two {events:,}-event sessions <= 1 s"
    return _target(name, f"{slowest:.3f} s", slowest <= 1.0, detail)


def _target(name: str, measured: str, ok: bool, detail: str = "") -> dict[str, Any]:
    return {
        "target": name,
        "measured": measured,
        "status": "PASS" if ok else "FAIL",
        "detail": detail,
    }


def sweep_scale(smoke: bool, inspect: Framework | None) -> dict[str, Any]:
    """Run `sweep_scale.py` (issue 32 item 2): 10,000 items locally, on local Ray and beside
    Inspect AI at 1,000 and 10,000 samples; `--smoke`, 500 items locally only. Its progress
    line goes to this stderr; its rows and targets come back."""
    command = [sys.executable, str(HERE / "sweep_scale.py")]
    if smoke:
        command.append("--items=500")
    else:
        command += ["--items=10000", "--ray"]
        if inspect is not None and not inspect.unavailable:
            command += [f"--inspect={inspect.python}", "--inspect-items=1000,10000"]
    try:
        done = subprocess.run(
            command, stdout=subprocess.PIPE, text=True, timeout=3600, cwd=HERE, env=scenario_env()
        )
    except subprocess.TimeoutExpired:
        return {"error": "sweep_scale.py did not finish within 3600 s"}
    for line in done.stdout.splitlines():
        if line.startswith(MARK):
            found: dict[str, Any] = json.loads(line[len(MARK) :])
            if not smoke and (inspect is None or inspect.unavailable):
                reason = inspect.unavailable if inspect else "not asked for (--peers)"
                found["targets"].append(
                    {
                        "status": "n/a",
                        "target": "sn.sweep faster than Inspect AI",
                        "measured": reason,
                    }
                )
            return found
    return {"error": f"sweep_scale.py exited {done.returncode} without its rows"}


def view_overhead_note() -> str | None:
    """If the notebook engineer's `view_overhead.py` exists, run it and quote its last line."""
    script = HERE / "view_overhead.py"
    if not script.exists():
        return None
    try:
        done = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=HERE
        )
    except subprocess.TimeoutExpired:
        return "view_overhead.py did not finish within 300 s"
    lines = [ln for ln in done.stdout.splitlines() if ln.strip()]
    if done.returncode != 0 or not lines:
        return f"view_overhead.py exited {done.returncode}"
    return f"view_overhead.py says: {lines[-1][:300]}"


def view_browser_targets(smoke: bool) -> list[dict[str, Any]]:
    """The live view's targets in JupyterLab and chromium (`view_browser.py`, in a process of
    its own): all of them, or (`smoke`) a stored tree of 501 nodes opened and clicked."""
    command = [sys.executable, str(HERE / "view_browser.py")]
    command += ["--only", "big", "--big", "10x49", "--clicks", "6"] if smoke else ["--clicks", "20"]
    name = "live view in chromium (view_browser.py)"
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=600 if smoke else 2400, cwd=HERE
        )
    except subprocess.TimeoutExpired:
        return [{"target": name, "measured": "timeout", "status": "FAIL", "detail": ""}]
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(MARK)]
    if done.returncode != 0 or not lines:
        why = (done.stderr.strip().splitlines() or [f"exited {done.returncode}"])[-1][:300]
        return [{"target": name, "measured": "error", "status": "FAIL", "detail": why}]
    data = json.loads(lines[-1][len(MARK) :])
    return [
        {
            "target": what,
            "measured": figure,
            "status": "PASS" if met else "FAIL",
            "detail": f"load {data['load']}",
        }
        for what, met, figure in data["targets"]
    ]


SOAK_TIMEOUT_S = 900.0
"""The soak's 1,000 kills have 10 minutes (a FAIL row past them), and this to report it."""


def soak_targets() -> tuple[list[dict[str, Any]], str | None]:
    """Issue 32 item 4: `soak.py`, 1,000 SIGKILLs each followed by `Session.open` and
    `resume()`: its PASS/FAIL rows, and its first line (kills, time) as a note."""
    log("soak: 1,000 SIGKILLs at random moments of durable runs, each reopened and resumed")
    try:
        done = subprocess.run(
            [sys.executable, str(HERE / "soak.py")],
            capture_output=True,
            text=True,
            timeout=SOAK_TIMEOUT_S,
            cwd=HERE,
        )
    except subprocess.TimeoutExpired:
        row = {
            "target": "soak: 1,000 kills within 10 minutes",
            "measured": f"did not finish within {SOAK_TIMEOUT_S:.0f} s",
            "status": "FAIL",
            "detail": "",
        }
        return [row], None
    rows = []
    for line in done.stdout.splitlines():
        status, _, rest = line.partition(": ")
        if status in ("PASS", "FAIL"):
            target, _, measured = rest.rpartition(": ")
            rows.append({"target": target, "measured": measured, "status": status, "detail": ""})
    if not rows:
        tail = [ln for ln in done.stderr.splitlines() if ln.strip()][-1:] or ["no output"]
        failed = f"exit {done.returncode}: {tail[0][:300]}"
        rows.append({"target": "soak ran", "measured": failed, "status": "FAIL", "detail": ""})
    first = done.stdout.splitlines()[:1]
    return rows, f"soak.py: {first[0]}" if first else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="sagents_nb and the floor, N=10")
    parser.add_argument("--out", type=Path, help="JSON results (default: results/latest.json)")
    parser.add_argument(
        "--peers", default=",".join(p.name for p in [*PEERS, INSPECT]), help="comma list"
    )
    parser.add_argument("--no-install", action="store_true", help="use existing peer venvs")
    parser.add_argument("--install-timeout", type=float, default=600.0)
    parser.add_argument("--runs", type=int, default=7, help="runs per process, fanout N=10")
    parser.add_argument("--rounds", type=int, default=8, help="interleaved processes, fanout 10")
    parser.add_argument("--no-readme", action="store_true", help="leave README.md alone")
    parser.add_argument("--no-browser", action="store_true", help="skip view_browser.py")
    args = parser.parse_args()

    started = time.monotonic()
    host = machine()
    wanted = {p.strip() for p in args.peers.split(",") if p.strip()}
    peers = [] if args.smoke else [p for p in PEERS if p.name in wanted]
    inspect = INSPECT if not args.smoke and INSPECT.name in wanted else None
    build_envs([*peers, *([inspect] if inspect else [])], args.install_timeout, not args.no_install)

    imports: dict[str, Any] = {}
    for fw in [SAGENTS, FLOOR, *peers]:
        if fw.unavailable:
            continue
        log(f"import time: {fw.module} ({fw.name})")
        imports[fw.name] = import_time(fw, 3 if args.smoke else 9)

    log("first use: import, Agent, mock_llm and a first run_sync vs httpx")
    imports["first use"] = first_use(3 if args.smoke else 9)

    rows = execute(plan(args.smoke, peers, args.runs, args.rounds))
    log("sweep at eval scale: sweep_scale.py")
    sweep = sweep_scale(args.smoke, inspect)
    notes = []
    soak_rows: list[dict[str, Any]] = []
    if not args.smoke:
        note = view_overhead_note()
        if note:
            notes.append(note)
        soak_rows, note = soak_targets()
        if note:
            notes.append(note)
    result: dict[str, Any] = {
        "mode": "smoke" if args.smoke else "full",
        "machine": host,
        "imports": imports,
        "results": rows,
        "sweep": sweep,
        "notes": notes,
    }
    result["targets"] = targets(rows, imports, peers) + soak_rows
    log("sn.diff of two long sessions (session_diff.py)")
    result["targets"].append(diff_target(40 if args.smoke else 4000))
    result["targets"] += sweep.get("targets") or [
        {"status": "FAIL", "target": "sweep_scale.py ran", "measured": sweep.get("error", "?")}
    ]
    if not args.no_browser:
        log("the live view in JupyterLab and chromium (view_browser.py)")
        result["targets"] += view_browser_targets(args.smoke)
    result["duration_s"] = time.monotonic() - started
    result["load_average_end"] = load_average()
    text = report(result)
    print(text)
    out = args.out or (None if args.smoke else RESULTS / "latest.json")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n")
        log(f"wrote {out}")
    if not args.smoke and not args.no_readme:
        update_readme(text)
        log(f"updated {README}")
    broken = [r for r in rows if r.get("error") and r["framework"] in ("sagents_nb", "floor")]
    return 1 if broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
