"""Every row of the README's failure table, as a case: the failure it names, made to happen,
ends in the status and the events the row promises. A row without a case fails here."""

from __future__ import annotations

import _thread
import asyncio
import json
import re
import sys
import threading
import time
from collections.abc import Callable
from email.utils import formatdate
from pathlib import Path

import httpx
import pytest

import sagents_nb as sn
from tests.harness.conftest import FakeCli, fake_cli  # noqa: F401  (the fixture, for CLI rows)
from tests.loopback import Answer, LoopbackServer

pytestmark = pytest.mark.timeout(60)

README = Path(__file__).parents[1] / "README.md"
KEY = "sk-table-4f9e1c7d2a8b6e3f"


def readme_rows() -> list[str]:
    """The first cell of each row of the README's failure table."""
    text = README.read_text(encoding="utf-8")
    table = text.split("## Failure behaviour", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in table.splitlines() if line.startswith("| ")]
    return [line.split(" | ", 1)[0].removeprefix("| ") for line in lines[1:]]  # past the head


Case = Callable[[pytest.FixtureRequest, Path], None]
CASES: dict[str, Case] = {}


def row(start: str) -> Callable[[Case], Case]:
    """Register a case for the README row whose first cell starts with `start`."""

    def register(case: Case) -> Case:
        CASES[start] = case
        return case

    return register


def case_for(cell: str) -> Case:
    matches = [case for start, case in CASES.items() if cell.startswith(start)]
    assert len(matches) == 1, f"the README row {cell!r} has {len(matches)} cases here"
    return matches[0]


def test_every_row_of_the_table_has_exactly_one_case_and_every_case_a_row() -> None:
    rows = readme_rows()
    assert len(rows) >= 25
    for cell in rows:
        case_for(cell)
    unused = [start for start in CASES if not any(cell.startswith(start) for cell in rows)]
    assert unused == []


@pytest.mark.parametrize("cell", readme_rows(), ids=lambda cell: re.sub(r"\W+", "-", cell)[:50])
def test_the_row_holds(cell: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    case_for(cell)(request, tmp_path)


# helpers


def types(result: sn.Result) -> list[str]:
    return [e.type for e in result.events]


def errors(result: sn.Result) -> list[sn.events.ErrorOccurred]:
    return [e for e in result.events if e.type == "error"]


def sse(*payloads: object, done: bool = True) -> httpx.Response:
    lines = [f"data: {json.dumps(p, ensure_ascii=False)}\n\n" for p in payloads]
    return httpx.Response(
        200,
        content="".join(lines) + ("data: [DONE]\n\n" if done else ""),
        headers={"content-type": "text/event-stream"},
    )


def chunk(text: str) -> dict[str, object]:
    return {"choices": [{"delta": {"content": text}}]}


def streaming(llm: sn.LLM, **options: object) -> sn.Session:
    return sn.Session(sn.Agent("a", kind=sn.kinds.Realtime()), llm=llm, **options)


def interrupt_after(seconds: float) -> None:
    """Ctrl-C in the main thread after `seconds`, as a kernel interrupt does."""
    threading.Timer(seconds, _thread.interrupt_main).start()


@sn.tool
def lookup(city: str) -> str:
    """Look a city up.

    Args:
        city: its name.
    """
    return f"{city}: 晴れ"


@sn.tool
async def slow(seconds: float) -> str:
    """Wait.

    Args:
        seconds: how long.
    """
    await asyncio.sleep(seconds)
    return "waited"


def calls(*names: str, **arguments: object):
    """A model that calls `names` (in one reply) first, then echoes the tool results."""

    def model(req: sn.ChatRequest):
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call(name, **arguments) for name in names])
        return " | ".join(req.tool_results)

    return model


# the wire


@row("HTTP 429, 500, 502, 503, 504")
def _transient(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    failures = iter(
        [
            httpx.Response(429, headers={"retry-after": "0"}, text="slow down"),
            httpx.Response(503, text="overloaded"),
            httpx.ConnectError("refused"),
        ]
    )

    def handler(req: sn.ChatRequest):
        failure = next(failures, None)
        if isinstance(failure, Exception):
            raise failure
        return failure or "enfin ✓"

    llm = sn.mock_llm(handler, retries=3, backoff=0.01)
    result = sn.Session(sn.Agent("a"), llm=llm).send("x").result(timeout=30)
    assert (result.status, result.text) == ("done", "enfin ✓")
    assert [e.status for e in result.events if e.type == "retry"] == [429, 503, None]
    bounded = sn.mock_llm(lambda req: httpx.Response(502), retries=1, backoff=0.01)
    result = sn.Session(sn.Agent("a"), llm=bounded).send("x").result(timeout=30)
    assert result.status == "error" and len(bounded.exchanges) == 2
    assert len([e for e in result.events if e.type == "retry"]) == 1 and errors(result)
    an_hour = httpx.Response(429, headers={"retry-after": "3600"}, text="plus tard")
    patient = sn.mock_llm(lambda req: an_hour, retries=3, max_retry_time=30)
    result = sn.Session(sn.Agent("a"), llm=patient).send("x").result(timeout=30)
    assert result.status == "error" and len(patient.exchanges) == 1  # a wait past the bound
    assert "retry" not in types(result)
    dated = iter([httpx.Response(503, headers={"retry-after": formatdate(time.time() + 1)})])
    llm = sn.mock_llm(lambda req: next(dated, "à l'heure"), retries=1)
    result = sn.Session(sn.Agent("a"), llm=llm).send("x").result(timeout=30)
    assert result.text == "à l'heure"
    assert [e.delay > 0 for e in result.events if e.type == "retry"] == [True]


def keep_alive_after_text(body: bytes, answer: Answer) -> None:
    answer.head(200, {"content-type": "text/event-stream"})
    answer.write(f"data: {json.dumps(chunk('début'))}\n\n".encode())
    while answer.write(b": keep-alive\n\n") and answer.pause(0.2):
        pass


@row("a server that never finishes")
def _never_finishes(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    with LoopbackServer(keep_alive_after_text) as server:
        llm = sn.LLM(server.url, api_key=KEY, timeout=1.0, retries=0)
        result = streaming(llm).send("x").result(timeout=30)
    assert (result.status, result.text) == ("incomplete", "début [truncated]")
    assert next(e for e in result.events if e.type == "model_response").truncated
    assert "did not finish within 1.0 s" in errors(result)[0].message


@row("any other 4xx")
def _other_4xx(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    for status in (400, 401, 404):
        llm = sn.LLM(
            "https://api.example.test/v1",
            api_key=KEY,
            transport=httpx.MockTransport(lambda r, s=status: httpx.Response(s, text=KEY)),
        )
        result = sn.Session(sn.Agent("a"), llm=llm).send("x").result(timeout=30)
        assert result.status == "error" and len(llm.exchanges) == 1
        assert str(status) in result.text and "https://api.example.test/v1" in result.text
        assert KEY not in result.text and errors(result)


@row("a reply that is not a chat completion")
def _not_a_completion(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    replies = iter([httpx.Response(200, text="<html>502 Bad Gateway</html>")])
    session = sn.Session(sn.Agent("a"), llm=sn.mock_llm(lambda req: next(replies, "revenu")))
    result = session.send("bonjour").result(timeout=30)
    assert result.status == "error" and "<html>502 Bad Gateway" in result.text
    assert errors(result)
    assert [m.content for m in session.display_messages] == ["bonjour"]
    assert session.send("encore").result(timeout=30).text == "revenu"


@row("a reply of the right JSON with the wrong types")
def _wrong_types(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    bad = httpx.Response(200, json={"choices": [{"message": {"content": "", "tool_calls": 7}}]})
    plain, streamed = iter([bad]), iter([sse({"choices": 5})])
    for session in (
        sn.Session(sn.Agent("a"), llm=sn.mock_llm(lambda req: next(plain, "ok"))),
        streaming(sn.mock_llm(lambda req: next(streamed, "ok"))),
    ):
        result = session.send("x").result(timeout=30)
        assert result.status == "error" and (
            "tool_calls" in result.text or "choices" in result.text
        )
        assert errors(result)[0].error_type == "MalformedReply"
        assert session.send("y").result(timeout=30).status == "done"


@row("a JSON completion in answer to a `stream: true` request")
def _json_to_a_stream(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    answer = httpx.Response(200, json={"choices": [{"message": {"content": "en un bloc 🧱"}}]})
    result = streaming(sn.mock_llm(lambda req: answer)).send("x").result(timeout=30)
    assert (result.status, result.text) == ("done", "en un bloc 🧱")
    assert [e.text for e in result.events if e.type == "text_delta"] == ["en un bloc 🧱"]


@row("a stream cut before `[DONE]`")
def _cut_stream(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    llm = sn.mock_llm(lambda req: sse(chunk("moitié "), chunk("de réponse"), done=False))
    result = streaming(llm).send("x").result(timeout=30)
    assert (result.status, result.text) == ("incomplete", "moitié de réponse [truncated]")
    assert next(e for e in result.events if e.type == "model_response").truncated


@row("streamed text with U+2028")
def _unicode_line_breaks(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    text = "un\u2028deux\u0085trois\u2029四"
    result = streaming(sn.mock_llm(lambda req: sse(chunk(text)))).send("x").result(timeout=30)
    assert (result.status, result.text) == ("done", text)


@row("an API key with whitespace")
def _bad_key(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    for bad in (KEY + "\n", " " + KEY, KEY[:8] + "\t" + KEY[8:]):
        with pytest.raises(sn.ConfigurationError, match=r"sn\.LLM\(api_key=") as refused:
            sn.LLM("https://api.example.test/v1", api_key=bad)
        assert KEY[:10] not in str(refused.value)


@row("a server that echoes the key")
def _echoed_key(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    llm = sn.LLM(
        "https://api.example.test/v1",
        api_key=KEY,
        transport=httpx.MockTransport(
            lambda r: httpx.Response(401, json={"error": {"message": f"bad key {KEY}"}})
        ),
    )
    session = sn.Session(sn.Agent("a"), llm=llm, store=tmp_path / "s.db")
    result = session.send("x").result(timeout=30)
    assert result.status == "error" and "bad key ***" in result.text
    seen = [result.text, *(e.model_dump_json() for e in session.events)]
    seen += [json.dumps(x.to_dict()) for x in llm.exchanges]
    seen.append(session.export_jsonl(tmp_path / "s.jsonl").read_text())
    session.store.close()
    assert [text for text in seen if KEY in text] == []
    assert not any(KEY.encode() in p.read_bytes() for p in tmp_path.glob("s.db*"))


# cassettes


def recorded(tmp_path: Path) -> Path:
    path = tmp_path / "c.jsonl"
    llm = sn.record(sn.mock_llm(lambda req: f"re: {req.last_user}"), path)
    sn.Session(sn.Agent("a"), llm=llm).send("bonjour").result(timeout=30)
    return path


@row("a request a cassette holds no unplayed exchange for")
def _cassette_mismatch(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    path = recorded(tmp_path)
    for llm in (sn.replay(path), sn.record(sn.mock_llm(lambda req: "x"), path, mode="none")):
        result = sn.Session(sn.Agent("a"), llm=llm).send("au revoir").result(timeout=30)
        assert result.status == "error" and "no unplayed exchange" in result.text
        assert errors(result)[0].error_type == "CassetteMismatch"


@row("a hand-edited cassette entry")
def _hand_edited(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    path = recorded(tmp_path)
    header, entry = path.read_text().splitlines()
    path.write_text(f"{header}\n{json.dumps({**json.loads(entry), 'status': '200'})}\n")
    with pytest.raises(sn.ConfigurationError) as refused:
        sn.replay(path)
    assert f"{path} line 2" in str(refused.value) and "'status'" in str(refused.value)


# tools, children, preprocessors


@row("bad tool arguments, an unknown tool")
def _bad_tool_calls(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    @sn.tool
    def fails(city: str) -> str:
        """Fail.

        Args:
            city: a city.
        """
        raise ValueError(f"pas de {city}")

    @sn.tool(timeout=0.1)
    async def slow(seconds: float) -> str:
        """Wait.

        Args:
            seconds: how long.
        """
        await asyncio.sleep(seconds)
        return "waited"

    def model(req: sn.ChatRequest):
        if not req.tool_results:
            return sn.reply(
                tool_calls=[
                    sn.call("lookup", town="Lyon"),
                    sn.call("nowhere"),
                    sn.call("fails", city="Lyon"),
                    sn.call("slow", seconds=5),
                ]
            )
        return "la suite"

    agent = sn.Agent("a", tools=[lookup, fails, slow])
    result = sn.Session(agent, llm=sn.mock_llm(model)).send("x").result(timeout=30)
    assert (result.status, result.text) == ("done", "la suite")
    finished = [e for e in result.events if e.type == "tool_call_finished"]
    assert [e.status for e in finished] == ["error"] * 4
    assert "invalid arguments" in finished[0].result and "timed out" in finished[3].result


@row("a child that fails")
def _failing_child(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    def model(req: sn.ChatRequest):
        if "task" not in req.tools:
            return httpx.Response(400, json={"error": {"message": "refusé"}})
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("task", agent="kid", prompt="fais-le")])
        return f"parent: {req.tool_results[0][:7]}"

    boss = sn.Agent("boss", team=[sn.Agent("kid", does="fails")])
    result = sn.Session(boss, llm=sn.mock_llm(model)).send("x").result(timeout=30)
    assert (result.status, result.text) == ("done", "parent: [error]")
    assert [e.status for e in result.events if e.type == "task_finished"] == ["error"]


@row("a preprocessor that refuses or crashes")
def _preprocessor_refuses(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    def refuse(scope, message, context):
        raise sn.Rejected("pas ça")

    def crash(scope, message, context):
        raise RuntimeError("bug")

    for preprocessor in (refuse, crash):
        session = sn.Session(sn.Agent("a"), llm=sn.script("ok"), preprocessor=preprocessor)
        with pytest.raises(sn.Rejected):
            session.send("secret 秘密")
        assert session.display_messages == [] and session.llm_messages == []
        refused = [e for e in session.events if e.type == "message_refused"]
        assert len(refused) == 1 and "秘密" not in refused[0].model_dump_json()
        session.preprocessor = None
        assert session.send("y").result(timeout=30).text == "ok"


@row("a preprocessor that cannot take")
def _preprocessor_signature(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    with pytest.raises(sn.ConfigurationError, match="preprocessor"):
        sn.Session(sn.Agent("a"), llm=sn.script("x"), preprocessor=lambda message: message)

    def fine(scope, message, context):
        return message, message

    session = sn.Session(sn.Agent("a"), llm=sn.script("x"), preprocessor=fine)
    with pytest.raises(sn.ConfigurationError, match="preprocessor"):
        session.preprocessor = type("Preprocessor", (), {"preprocess": lambda self, m: m})
    assert session.preprocessor is fine


# cancel and Ctrl-C


@row("`run.cancel()` / Ctrl-C during")
def _cancel(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    agent = sn.Agent("a", tools=[slow])
    session = sn.Session(agent, llm=sn.mock_llm(calls("slow", seconds=30)))
    run = session.send("x")
    assert run.wait(timeout=0.5) == "running"
    run.cancel()
    assert run.wait(10) == "cancelled"
    finished = [e for e in run.events if e.type == "tool_call_finished"]
    assert [e.status for e in finished] == ["cancelled"]
    for wait in ("run.wait", "run_sync"):
        session = sn.Session(agent, llm=sn.mock_llm(calls("slow", seconds=30)))
        interrupt_after(0.5)
        with pytest.raises(KeyboardInterrupt):
            if wait == "run.wait":
                session.send("x").wait()
            else:
                agent.run_sync("x", llm=sn.mock_llm(calls("slow", seconds=30)))
        if wait == "run.wait":
            assert session.runs[-1].status == "cancelled"
            assert [m.content[:11] for m in session.llm_messages if m.role == "tool"] == [
                "[cancelled]"
            ]


@row("Ctrl-C during `run.result()`")
def _ctrl_c_in_result(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    session = sn.Session(sn.Agent("a", tools=[slow]), llm=sn.mock_llm(calls("slow", seconds=1)))
    run = session.send("x")
    interrupt_after(0.3)
    with pytest.raises(KeyboardInterrupt):
        run.result()
    assert run.status == "running"
    assert run.result(timeout=30).status == "done"


def raisers(raised: BaseException) -> tuple[sn.Tool, type, Callable[..., object]]:
    """A tool, a hook class and a preprocessor that each raise `raised`."""

    @sn.tool
    def helper() -> str:
        """Parse arguments."""
        raise raised

    class Hook:
        def before_tool(self, call):
            raise raised

    def preprocess(scope, message, context):
        raise raised

    return helper, Hook, preprocess


@row("a tool, hook or preprocessor that raises `SystemExit`")
def _base_exceptions(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    for raised in (SystemExit(2), KeyboardInterrupt(), GeneratorExit()):
        helper, Hook, preprocess = raisers(raised)
        name = type(raised).__name__
        result = sn.Session(sn.Agent("a", tools=[helper]), llm=sn.mock_llm(calls("helper")))
        tool_result = result.send("x").result(timeout=30)
        assert tool_result.status == "done" and f"failed: {name}" in tool_result.text
        hooked = sn.Session(
            sn.Agent("a", tools=[lookup]), hooks=[Hook()], llm=sn.mock_llm(calls("lookup"))
        )
        hook_result = hooked.send("x").result(timeout=30)
        assert hook_result.status == "error" and name in hook_result.text
        session = sn.Session(sn.Agent("a"), llm=sn.script("fine"), preprocessor=preprocess)
        with pytest.raises(sn.Rejected, match=name):
            session.send("x")
    assert sn.Session(sn.Agent("b"), llm=sn.script("alive")).send("y").result().text == "alive"


@row("a sync tool that blocks")
def _blocking_tool(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    release = threading.Event()

    @sn.tool(timeout=0.3)
    def blocks() -> str:
        """Block."""
        release.wait(10)
        return "late"

    @sn.tool
    def blocks_for_good() -> str:
        """Block with no time limit."""
        release.wait(10)
        return "late"

    session = sn.Session(sn.Agent("a", tools=[blocks]), llm=sn.mock_llm(calls("blocks")))
    run = session.send("x")
    other = sn.Session(sn.Agent("b"), llm=sn.script("meanwhile"))
    assert other.send("y").result(timeout=5).text == "meanwhile"
    result = run.result(timeout=30)
    assert result.status == "done" and "timed out after 0.3 s" in result.text
    stuck = sn.Session(
        sn.Agent("a", tools=[blocks_for_good]), llm=sn.mock_llm(calls("blocks_for_good"))
    )
    run = stuck.send("x")
    assert run.wait(timeout=0.3) == "running"
    run.cancel()
    assert run.wait(5) == "cancelled"  # the thread still blocks; the run has ended
    release.set()


@row("a `before_tool` hook that raises among parallel calls")
def _hook_among_parallel_calls(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    from tests.test_faults import test_a_failing_hook_among_parallel_calls_cancels_its_siblings

    test_a_failing_hook_among_parallel_calls_cancels_its_siblings()


# the caps


def self_delegating() -> tuple[sn.Agent, sn.LLM]:
    inner = sn.Agent("deeper", does="delegates again")
    inner.team = [inner]

    def model(req: sn.ChatRequest):
        if not req.tool_results:
            return sn.reply(
                tool_calls=[sn.call("task", agent="deeper", prompt=f"n{i}") for i in range(3)],
                usage={"prompt_tokens": 90, "completion_tokens": 10, "total_tokens": 100},
            )
        return "assez"

    return sn.Agent("top", team=[inner]), sn.mock_llm(model)


@row("a run past `max_model_calls`, `max_tokens` or `max_nodes`")
def _caps(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    for cap, value in (("max_model_calls", 5), ("max_tokens", 450), ("max_nodes", 4)):
        agent, llm = self_delegating()
        session = sn.Session(agent, llm=llm, max_depth=20, **{cap: value})
        result = session.send("go").result(timeout=30)
        assert result.status == "incomplete", (cap, result.status, result.text)
        assert f"{cap} ({value})" in result.text and f"sn.Session(..., {cap}=...)" in result.text
        assert [e.error_type for e in errors(result)] == ["LimitReached"], cap
        assert session.send("again").result(timeout=30).status in ("done", "incomplete")


@row("`run.edit(arguments=...)` that is not a JSON object")
def _edit_not_an_object(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    session = sn.Session(
        sn.Agent("a", tools=[lookup]), llm=sn.mock_llm(calls("lookup", city="Oslo"))
    )
    run = session.send("x", pause_on="tool")
    assert run.wait(10) == "paused"
    for bad in ("[1, 2]", "{nope", 5):
        with pytest.raises(sn.ConfigurationError, match="JSON object"):
            run.edit(arguments=bad)
    assert run.wait(1) == "paused" and run.paused_at.arguments == {"city": "Oslo"}
    run.approve()
    assert run.result(timeout=30).text == "Oslo: 晴れ"


@row("two tools of the same name in one request")
def _same_name(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    twin = sn.tool(lambda city: city, name="lookup")
    with pytest.raises(sn.ConfigurationError, match="'lookup'"):
        sn.Agent("a", tools=[lookup, twin])
    task = sn.tool(lambda agent, prompt: "mine", name="task")
    llm = sn.mock_llm(lambda req: "never")
    boss = sn.Agent("boss", tools=[task], team=[sn.Agent("kid", does="x")])
    result = sn.Session(boss, llm=llm).send("x").result(timeout=30)
    assert result.status == "error" and "'task'" in result.text and len(llm.exchanges) == 0
    assert errors(result)


# CLI children


def cli_boss(kind: sn.kinds.Native) -> sn.Agent:
    return sn.Agent("boss", team=[sn.Agent("coder", does="codes", tools=[lookup], kind=kind)])


def delegate_once(req: sn.ChatRequest):
    if not req.tool_results:
        return sn.reply(tool_calls=[sn.call("task", agent="coder", prompt="code-le")])
    return f"parent: {req.tool_results[0]}"


API_ERROR_CLI = """import json
print(json.dumps({"type": "assistant", "message": {"id": "m1", "model": "<synthetic>",
    "role": "assistant", "content": [{"type": "text", "text": "API Error: 500 boom"}]}}))
print(json.dumps({"type": "result", "subtype": "success", "is_error": True,
    "result": "API Error: 500 boom", "session_id": "s"}))
"""


@row("a CLI child's model fails")
def _cli_model_fails(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    cli: FakeCli = request.getfixturevalue("fake_cli")
    driver = sn.harness.ClaudeCode(executable=cli.path)
    boss = cli_boss(sn.kinds.Native(driver, env=cli.env("crash")))
    result = sn.Session(boss, llm=sn.mock_llm(delegate_once)).send("x").result(timeout=60)
    assert result.status == "done" and result.text.startswith("parent: [error]")
    assert result.text.count("Invalid API key") == 1
    assert result.tree.children[0].status == "error"
    script = tmp_path / "api-error-cli"
    script.write_text(f"#!{sys.executable}\n{API_ERROR_CLI}")
    script.chmod(0o755)
    boss = cli_boss(sn.kinds.Native(sn.harness.ClaudeCode(executable=str(script))))
    result = sn.Session(boss, llm=sn.mock_llm(delegate_once)).send("x").result(timeout=60)
    assert result.text.startswith("parent: [error]") and "API Error: 500 boom" in result.text
    assert result.tree.children[0].status == "error"


@row("a CLI child goes quiet")
def _cli_quiet(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    cli: FakeCli = request.getfixturevalue("fake_cli")
    driver = sn.harness.ClaudeCode(executable=cli.path)
    kind = sn.kinds.Native(driver, env=cli.env("silent"), inactivity_timeout=0.5)
    result = sn.Session(cli_boss(kind), llm=sn.mock_llm(delegate_once)).send("x").result(60)
    assert result.status == "done" and result.text.startswith("parent: [error]")
    assert "0.5" in result.text and result.tree.children[0].status == "error"


@row("a kernel tool called by a CLI raises or is denied")
def _cli_tool_fails(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    cli: FakeCli = request.getfixturevalue("fake_cli")

    class Deny:
        def before_tool(self, call):
            return sn.Deny("pas pour toi") if call.name == "add" else None

    add = sn.tool(lambda a, b: a + b, name="add")
    kind = sn.kinds.Native(sn.harness.ClaudeCode(executable=cli.path), env=cli.env("mcp"))
    coder = sn.Agent("coder", does="codes", tools=[add], kind=kind)
    session = sn.Session(
        sn.Agent("boss", team=[coder]), hooks=[Deny()], llm=sn.mock_llm(delegate_once)
    )
    result = session.send("x").result(timeout=60)
    assert result.status == "done" and "pas pour toi" in result.text
    assert "nope_error=True" in result.text  # an unknown tool: an MCP error result
    denied = [e for e in result.events if e.type == "tool_call_finished" and e.name == "add"]
    assert [e.status for e in denied] == ["denied"]


# limits and doors


@row("a limit no run could work under")
def _unworkable_limits(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    bad = [("max_parallel", v) for v in (0, -1, "8", 2.5, True, None)]
    bad += [("max_depth", -1), ("max_depth", "3"), ("max_nodes", 0), ("max_model_calls", "9")]
    for name, value in bad:
        with pytest.raises(sn.ConfigurationError, match=rf"^{name}\b") as refused:
            sn.Session(sn.Agent("a"), llm=sn.script("x"), **{name: value})
        assert repr(value) in str(refused.value)
    boss = sn.Agent("boss", team=[sn.Agent("kid", does="answers")])
    llm = sn.mock_llm(calls("task", agent="kid", prompt="p"))
    result = sn.Session(boss, llm=llm, max_parallel=1).send("x").result(timeout=30)
    assert result.status == "done"
    no_children = sn.Session(boss, llm=llm, max_depth=0).send("x").result(timeout=30)
    assert [e.type for e in no_children.events].count("task_refused") == 1


@row("a `pause_on` that names no action")
def _pause_on_typo(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    from tests.test_breakpoints import test_pause_on_refuses_what_is_not_a_breakpoint as refused
    from tests.test_run_doors import (
        test_a_typo_in_the_agents_pause_on_is_refused_as_send_refuses_it as typo,
    )
    from tests.test_run_doors import (
        test_one_action_name_is_one_pause_point_at_the_agent_and_at_send as one_name,
    )

    typo({"tools"})
    one_name()
    refused()


@row("a breakpoint predicate that raises")
def _predicate_raises(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    from tests.test_breakpoints import test_a_predicate_that_raises_pauses_and_says_why as raises

    raises(request.getfixturevalue("caplog"))


@row("a kill (or a fork) while a run waits at a pause")
def _kill_at_a_pause(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    from tests.test_breakpoints import (
        test_a_fork_after_a_decision_applies_it_and_keeps_the_step_mode as forked,
    )
    from tests.test_breakpoints_crash import test_an_edited_task_call_stands_after_a_kill as killed

    for folder in ("killed", "forked"):
        (tmp_path / folder).mkdir()
    killed(tmp_path / "killed")
    forked(tmp_path / "forked")


@row("`cancel()` of a run still queued behind another")
def _cancel_queued(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    from tests.test_queue_cancel import (
        test_cancelling_the_middle_run_keeps_the_last_one_behind_the_first as middle,
    )

    middle(tmp_path, True)


@row("a run whose start cannot be recorded")
def _unrecordable_start(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    from tests.test_run_doors import test_a_run_whose_start_cannot_be_recorded_ends_as_an_error

    test_a_run_whose_start_cannot_be_recorded_ends_as_an_error(tmp_path, False)


@row("a variant of `sn.compare` / `sn.sweep` that raises")
def _raising_variant(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    from tests.test_sweep import test_a_base_exception_raised_in_a_variant_is_its_error_row

    for raised in ("SystemExit", "KeyboardInterrupt", "custom"):
        test_a_base_exception_raised_in_a_variant_is_its_error_row("sweep", raised, "factory")


@row("a store whose disk stalls")
def _stalled_store(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    from tests.test_store_writer import test_a_stalled_store_holds_up_no_other_stores_commits

    test_a_stalled_store_holds_up_no_other_stores_commits(tmp_path)


@row("a 400 saying the request exceeds the context window")
def _context_overflow(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    from tests.test_overflow import (
        test_a_child_recovers_by_trimming_its_view,
        test_the_root_recovers_from_an_overflow_and_the_next_message_works,
        test_two_failed_shrinks_end_the_run_in_error_saying_what_to_do,
    )

    test_the_root_recovers_from_an_overflow_and_the_next_message_works("openai")
    test_a_child_recovers_by_trimming_its_view("llama.cpp")
    test_two_failed_shrinks_end_the_run_in_error_saying_what_to_do()


@row("a server that speaks another wire format")
def _foreign_format(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    from tests.test_faults_wire import FOREIGN, test_a_server_speaking_another_wire_format_is_named

    for name in sorted(FOREIGN):
        test_a_server_speaking_another_wire_format_is_named(name)


@row("a key in `base_url`'s userinfo")
def _key_in_userinfo(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    from tests.test_faults_wire import test_a_key_in_the_base_url_userinfo_is_never_shown

    test_a_key_in_the_base_url_userinfo_is_never_shown(tmp_path, request.getfixturevalue("caplog"))


@row("an argument of the wrong type at a public call")
def _wrong_type(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    for make, named in [
        (lambda: sn.Agent("a", token_budget="100"), "token_budget"),
        (lambda: sn.Agent("a", tools=[5]), "tools"),
        (lambda: sn.LLM(timeout="5"), "timeout"),
    ]:
        with pytest.raises(TypeError, match=named) as caught:
            make()
        assert isinstance(caught.value, sn.ConfigurationError)
    agent = sn.Agent("a", kind="resident")  # a kind's registered name is taken
    assert isinstance(agent.kind, sn.kinds.Resident)
    with pytest.raises(sn.ConfigurationError, match="kind"):
        agent.kind = 5
    assert isinstance(agent.kind, sn.kinds.Resident)  # the old value stays
    session = sn.Session(agent, llm=sn.script("ok"))
    session.send("x").result(timeout=30)
    with pytest.raises(TypeError, match="at"):
        session.fork(at=1.5)
