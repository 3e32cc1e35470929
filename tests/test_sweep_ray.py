"""sn.sweep(executor="ray") on a real local Ray cluster (two CPUs), and objects that cannot
travel to Ray workers failing before the sweep starts."""

from __future__ import annotations

import os
import socket

import pytest

import sagents_nb as sn
from tests.test_compare_endpoints import delegating as relay

try:
    import ray
except ImportError:  # CI installs it (the test extra); elsewhere it is optional
    ray = None

pytestmark = pytest.mark.skipif(
    ray is None and not os.environ.get("CI"),
    reason="Ray is not installed: pip install 'sagents_nb[ray]'",
)


def model(req: sn.ChatRequest):
    if "task" in req.tools:
        if req.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="helper", prompt=req.last_user)])
        return f"boss: {req.tool_results[-1]}"
    seen = [m["content"] for m in req.messages if m["role"] == "user"]
    return f"helper saw {seen}"


def team() -> sn.Agent:
    return sn.Agent("boss", team=[sn.Agent("helper", does="remembers")])


VARIANTS = {"worker": {"helper": sn.kinds.Worker()}, "resident": {"helper": sn.kinds.Resident()}}
ITEMS = [["Ada", "Où est Ada ?"], {"id": "zh", "prompts": ["艾达", "她在哪里？"]}]


@pytest.fixture(scope="module")
def local_ray():
    assert ray is not None
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_raylet_start_wait_time_s", "120")
    for attempt in range(3):  # Ray gives its node 30 s to start: a loaded machine can miss it
        try:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
            break
        except Exception:
            ray.shutdown()
            _stop_ray_children()  # a node that failed to start leaves its processes behind
            if attempt == 2:
                raise
    node = ray._private.worker._global_node
    pids = [
        info.process.pid
        for infos in node.all_processes.values()
        for info in infos
        if info.process is not None
    ]
    try:
        yield
    finally:
        ray.shutdown()
    alive = [pid for pid in pids if _alive(pid)]
    assert alive == [], f"Ray left processes running: {alive}"


def _stop_ray_children() -> None:
    """Stop the Ray processes this test process started (by PID)."""
    import psutil

    children = [
        p for p in psutil.Process().children(recursive=True) if "ray" in " ".join(_cmdline(p))
    ]
    for child in children:
        child.terminate()
    _gone, left = psutil.wait_procs(children, timeout=10)
    for child in left:
        child.kill()


def _cmdline(process) -> list[str]:
    import psutil

    try:
        return process.cmdline()
    except psutil.Error:
        return []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone, only not yet reaped
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.timeout(300)
def test_a_ray_sweep_gathers_every_run_into_the_table_and_the_store(local_ray, tmp_path) -> None:
    store = tmp_path / "ray.db"
    here = sn.sweep(team(), ITEMS, VARIANTS, llm=sn.mock_llm(model), progress=False)
    there = sn.sweep(
        team(),
        ITEMS,
        VARIANTS,
        llm=sn.mock_llm(model),
        executor="ray",
        concurrency=2,
        store=store,
        progress=False,
    )
    assert [r["status"] for r in there.rows] == ["done"] * 4
    strip = ("seconds", "session_id")
    assert [{k: v for k, v in r.items() if k not in strip} for r in there.rows] == [
        {k: v for k, v in r.items() if k not in strip} for r in here.rows
    ]
    # the events came back: the forgetting report and the plot work on them
    report = there.forgetting(item="zh")
    assert report.divergence("worker", "resident")["helper"] == 2
    assert report.forgotten("worker", "helper")[2][0].text == "艾达"
    assert there.plot(item="zh").points["resident"][1][1] > 0
    # and into the store: each row reopens as a session, and a re-run reads them back
    stored = {s.id for s in sn.Session.list_stored(store)}
    assert {r["session_id"] for r in there.rows} == stored
    session = there.open("resident", "zh")
    assert session.display_messages[-1].content.startswith("boss: helper saw")
    again = sn.sweep(
        team(),
        ITEMS,
        VARIANTS,
        llm=sn.mock_llm(model),
        executor="ray",
        store=store,
        progress=False,
    )
    assert all(r.reused for r in again.records)


def test_what_cannot_travel_fails_before_the_sweep_starts_naming_it() -> None:
    live = socket.socket()
    try:

        @sn.tool
        def send(text: str) -> str:
            """Send text.

            Args:
                text: what to send.
            """
            return str(live.send(text.encode()))

        asked = []
        agent = sn.Agent("boss", tools=[send])
        with pytest.raises(sn.ConfigurationError) as info:
            sn.sweep(
                agent,
                ["hi"],
                llm=sn.mock_llm(lambda req: asked.append(req) or "x"),
                executor="ray",
            )
        message = str(info.value)
        assert "the agent cannot be sent to Ray workers" in message
        assert "the function" in message and "uses live" in message and "socket" in message
        assert asked == []
    finally:
        live.close()


class Traduction(sn.Task):
    task_name = "traduction"
    description = "traduit"
    instructions = "Traduis en japonais."
    model_override = sn.script("翻訳", "二回目")


@pytest.mark.timeout(300)
def test_a_ray_sweep_gives_every_run_fresh_tree_endpoints_and_reuses_by_fingerprint(
    local_ray, tmp_path
) -> None:
    store = tmp_path / "ray.db"
    own = sn.mock_llm(relay)
    helper = sn.Agent("helper", does="aide", model=sn.mock_llm(relay), team=[Traduction])
    boss = sn.Agent("boss", team=[helper])
    # used here first: these endpoints hold live clients now, which cannot travel as they are
    assert boss.run_sync("échauffement", llm=own).status == "done"

    def sweep(resident):
        return sn.sweep(
            boss,
            ["chat 🐱", "chien 🐶", "oiseau 🐦"],
            {"w": {}, "r": {"helper": resident, "llm": own}},
            llm=sn.mock_llm(relay),
            executor="ray",
            concurrency=2,
            store=store,
            progress=False,
        )

    first = sweep("resident")
    assert [r["answer"] for r in first.rows] == ["boss: helper: 翻訳"] * 6, first.rows
    again = sweep({"kind": "resident", "window_tokens": 900})
    assert [(r["reused"], r["why"]) for r in again.rows[:2]] == [
        (True, None),
        (False, "changed: variant"),
    ]
    assert [r["answer"] for r in again.rows] == ["boss: helper: 翻訳"] * 6


class Unusual(BaseException):
    """A BaseException of the user's own."""


def exits():
    raise SystemExit("le variant quitte")


def interrupts():
    raise KeyboardInterrupt


def unusual():
    raise Unusual("à moi 🙃")


@pytest.mark.timeout(300)
def test_a_base_exception_raised_in_a_variant_on_a_worker_is_its_error_row(local_ray) -> None:
    variants = {"fine": {}, "exits": {"llm": exits}, "interrupts": {"llm": interrupts}}
    variants["unusual"] = {"llm": unusual}
    cmp = sn.sweep(
        team(),
        ["Ada"],
        variants,
        llm=sn.mock_llm(model),
        executor="ray",
        concurrency=2,
        retries=0,
        progress=False,
    )
    rows = {r["variant"]: r for r in cmp.rows}
    assert rows["fine"]["status"] == "done"
    assert (rows["exits"]["status"], rows["exits"]["error"]) == (
        "error",
        "SystemExit: le variant quitte",
    )
    assert (rows["interrupts"]["status"], rows["interrupts"]["error"]) == (
        "error",
        "KeyboardInterrupt: ",
    )
    assert rows["unusual"]["error"].endswith("Unusual: à moi 🙃")


class Steps:
    """A sweep's progress calls, as they came."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def start(self, total: int, done: int) -> None:
        self.calls.append(("start", total, done))

    def advance(self, done: int, errors: int) -> None:
        self.calls.append(("advance", done, errors))

    def close(self, interrupted: bool) -> None:
        self.calls.append(("close", interrupted))


def fails_on_boom(req: sn.ChatRequest) -> str:
    if "boom" in req.last_user:
        raise ValueError("panne 💥 sur boom")
    return f"vu : {req.last_user}"


@pytest.mark.timeout(300)
def test_a_ray_task_carries_several_runs_each_its_own_row_retry_and_progress_step(
    local_ray, tmp_path, monkeypatch
) -> None:
    from sagents_nb._compare import ray_executor

    chunks: list[int] = []
    send = ray_executor.RayRunner._send_chunk

    def counted(runner, chunk) -> None:
        chunks.append(len(chunk))
        send(runner, chunk)

    monkeypatch.setattr(ray_executor.RayRunner, "_send_chunk", counted)
    prompts = [f"question {i} 質問" for i in range(40)]
    prompts[17] = "boom"
    steps = Steps()
    cmp = sn.sweep(
        sn.Agent("solver"),
        prompts,
        llm=sn.mock_llm(fails_on_boom),
        executor="ray",
        concurrency=2,
        retries=1,
        store=tmp_path / "chunks.db",
        progress=steps,
    )
    assert max(chunks) > 1 and sum(chunks) == 41  # 40 runs and boom's retry, in few tasks
    rows = cmp.rows
    assert [r["status"] for r in rows] == ["done"] * 17 + ["error"] + ["done"] * 22
    assert cmp.records[17].attempts == 2 and "panne 💥 sur boom" in rows[17]["error"]
    assert [r["answer"] for r in rows[:2]] == ["vu : question 0 質問", "vu : question 1 質問"]
    assert all(r["error"] is None for i, r in enumerate(rows) if i != 17)
    # progress counts runs (items), not tasks: one step each, boom's the only error
    advances = [c for c in steps.calls if c[0] == "advance"]
    assert [c[1] for c in advances] == list(range(1, 41))
    assert advances[-1] == ("advance", 40, 1)
    assert steps.calls[0] == ("start", 40, 0) and steps.calls[-1] == ("close", False)
    stored = {s.id for s in sn.Session.list_stored(tmp_path / "chunks.db")}
    assert {r["session_id"] for r in rows} <= stored and len(stored) == 41
