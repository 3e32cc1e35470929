"""The public surface is explicit, sorted and free of Jupyter imports."""

from __future__ import annotations

import subprocess
import sys
import types

import sagents_nb as sn

DESIGN_NAMES = {
    # ../shared/DESIGN.md section 2: the names notebooks and users rely on
    *("tool", "Agent", "Task", "mock_llm", "script", "reply", "call", "LLM", "Session", "Run"),
    *("Result", "kinds", "MessagePreprocessor", "Rejected", "events", "harness", "ChatRequest"),
    *("Message", "Deny", "record", "replay"),
    # section 10
    *("compare", "sweep", "Comparison"),
}


def _exposed_by_a_fresh_import() -> set[str]:
    """The public names bound in `sagents_nb` once every name in `__all__` has been used."""
    code = (
        "import sagents_nb as sn\n"
        "for name in sn.__all__: getattr(sn, name)\n"
        "print(' '.join(sorted(n for n in vars(sn) if not n.startswith('_'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_all_is_sorted_and_is_exactly_what_the_package_exposes() -> None:
    assert sn.__all__ == sorted(sn.__all__, key=lambda n: (not n.isupper(), n))
    # no helper leaks (typing's Any, TYPE_CHECKING, __future__'s annotations...); IPython looks
    # up `load_ipython_extension` by that name for `%load_ext sagents_nb`
    assert _exposed_by_a_fresh_import() - {"load_ipython_extension"} == set(sn.__all__)
    assert DESIGN_NAMES <= set(sn.__all__)


def test_public_classes_and_functions_show_the_package_as_their_module() -> None:
    for name in sn.__all__:
        value = getattr(sn, name)
        if not isinstance(value, types.ModuleType):
            assert value.__module__ == "sagents_nb", name
    assert repr(sn.Session).startswith("<class 'sagents_nb.Session'")


def _loaded_by_import() -> set[str]:
    """The top-level names of the modules `import sagents_nb` adds in a fresh interpreter."""
    code = (
        "import sys; before = set(sys.modules); import sagents_nb; "
        "print(' '.join(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_import_loads_no_jupyter_package() -> None:
    jupyter = {"IPython", "ipykernel", "ipywidgets", "anywidget", "comm", "traitlets", "zmq"}
    jupyter |= {"jupyter_client", "jupyter_core", "jupyterlab", "nbformat", "nbclient"}
    assert {m.split(".")[0] for m in _loaded_by_import()} & jupyter == set()


def test_import_defers_the_http_stack_plugin_scan_and_sqlite() -> None:
    # Each loads on first use instead (issue 10, `import sagents_nb` <= 150 ms): httpx with the
    # first mock, cassette or request (it loads its CLI's click, rich and pygments when they are
    # installed); importlib.metadata with pydantic's first schema build, which scans every
    # installed package for plugins; sqlite3 with the first durable session.
    deferred = {"httpx", "click", "rich", "pygments", "importlib.metadata", "sqlite3"}
    assert _loaded_by_import() & deferred == set()


def test_import_defers_the_core_and_every_optional_part() -> None:
    # `import sagents_nb` <= 150 ms over bare Python (benchmarks/run.py): msgspec and asyncio
    # (and pydantic, with a first tool) are most of what importing the core costs, so the core (events, messages, tools, kinds,
    # the runtime) loads with the first public name looked up, e.g. `sn.Agent`; what only some
    # users need loads later still (the store, the CLI drivers and MCP, compare and sweep).
    deferred = {"pydantic", "pydantic_core", "msgspec", "asyncio", "ssl", "subprocess", "ray"}
    deferred |= {"mcp"}
    deferred |= {"sagents_nb.events", "sagents_nb.kinds", "sagents_nb._base.messages"}
    deferred |= {"sagents_nb._runtime", "sagents_nb._tools", "sagents_nb._endpoints"}
    deferred |= {"sagents_nb._store", "sagents_nb.harness", "sagents_nb._compare"}
    deferred |= {"sagents_nb.notebook"}
    code = "import sys, sagents_nb; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert set(out.stdout.split()) & deferred == set()


def test_the_first_look_up_loads_the_core_without_the_optional_parts() -> None:
    code = (
        "import sys, sagents_nb as sn; sn.Agent; sn.Message; sn.kinds.Worker\n"
        "print(' '.join(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(out.stdout.split())
    assert {"msgspec", "asyncio", "sagents_nb.events", "sagents_nb._runtime.agent"} <= loaded
    optional = {"sagents_nb._store.sqlite", "sagents_nb.harness", "sagents_nb._compare"}
    optional |= {"sagents_nb.notebook", "httpx", "sqlite3", "ray", "mcp", "pydantic"}
    assert loaded & optional == set()


def test_a_run_without_a_store_or_a_stream_loads_neither() -> None:
    # issue 32's first use (`import sagents_nb`, `sn.Agent`, `sn.mock_llm`, a first `run_sync`):
    # the store's modules (its rows, resolution, the journal and the writer threads) load with
    # the first session that names a store, the event-stream decoder with the first stream
    code = (
        "import sys, sagents_nb as sn\n"
        "sn.Agent('a').run_sync('hi', llm=sn.mock_llm(lambda req: 'ok'))\n"
        "print(' '.join(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(out.stdout.split())
    assert "sagents_nb._runtime.session" in loaded
    store = {m for m in loaded if m.startswith("sagents_nb._store")}
    deferred = {"sagents_nb._runtime.journal", "sagents_nb._runtime.snapshot"}
    assert store | (loaded & {*deferred, "sagents_nb._endpoints.sse"}) == set()
    # nor the kinds it does not use (each loads with its name's first look-up), the recovery
    # from a context overflow (with the first overflow) or the costs (with `result.cost`)
    kinds = {"_cli_agent", "_native", "_realtime", "_resident", "_resident_control"}
    assert loaded & {f"sagents_nb.kinds.{name}" for name in kinds} == set()
    later = {"_runtime.overflow", "_endpoints.overflow", "_runtime.costs"}
    # nor what a run without a preprocessor, a resume, a restored pause, a tool call or a pause
    # uses (issue 32 item 3: each loads with its first use)
    later |= {"_runtime.preprocess", "_runtime.resume", "_runtime.decisions", "_runtime.pending"}
    later |= {"_runtime.toolcalls", "_tools.hooks"}
    assert loaded & {f"sagents_nb.{name}" for name in later} == set()


def test_a_first_run_without_tools_imports_no_pydantic() -> None:
    # issue 32's first use: the events and messages are msgspec structs, and pydantic (with
    # pydantic_core) loads with the first tool, for its arguments model and schema
    code = (
        "import sys, sagents_nb as sn\n"
        "r = sn.Agent('a', instructions='be brief').run_sync('hi', "
        "llm=sn.mock_llm(lambda req: 'ok'))\n"
        "assert r.status == 'done' and r.text == 'ok', r\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core')))\n"
        "@sn.tool\n"
        "def add(a: int, b: int) -> int:\n"
        "    return a + b\n"
        "replies = [sn.reply(tool_calls=[sn.call('add', a=1, b='x')]), 'ok']\n"
        "r = sn.Agent('a', tools=[add]).run_sync('hi', llm=sn.script(*replies))\n"
        "print(r.status, 'pydantic' in sys.modules)\n"
        "print([e.result for e in r.events if e.type == 'tool_call_finished'])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, with_tool, results = out.stdout.splitlines()
    assert first == "[]" and with_tool == "done True", out.stdout
    assert "invalid arguments for add: b:" in results  # pydantic's refusal, said to the model


def test_an_offline_run_imports_no_httpx_until_a_response_or_stream_is_made() -> None:
    # issue 32's first use: a mock's plain answers are JSON bytes in memory; httpx (whose import
    # also loads its CLI's click, rich and pygments) loads with a handler's own httpx.Response,
    # a stream, or `sn.record`
    code = (
        "import sys, copy, pickle, sagents_nb as sn\n"
        "@sn.tool\n"
        "def add(a: int, b: int) -> int:\n"
        "    return a + b\n"
        "def model(req):\n"
        "    if req.tool_results:\n"
        "        return f'= {req.tool_results[-1]} ✓ 多少'\n"
        "    return sn.reply(tool_calls=[sn.call('add', a=1, b=2)])\n"
        "llm = sn.mock_llm(model)\n"
        "copies = [copy.deepcopy(llm), pickle.loads(pickle.dumps(llm))]\n"
        "agent = sn.Agent('a', tools=[add])\n"
        "r = agent.run_sync('combien ?', llm=llm)\n"
        "copies.append(llm.fresh())\n"
        "texts = [agent.run_sync('encore', llm=c).text for c in copies]\n"
        "s = sn.sweep(agent, ['un', 'deux'], llm=llm, progress=False)\n"
        "print(r.text, len(llm.exchanges), texts == [r.text] * 3, 'httpx' in sys.modules)\n"
        "print([row['status'] for row in s.rows], 'httpx' in sys.modules)\n"
        "live = sn.Agent('b', kind=sn.kinds.Realtime())\n"  # a streaming kind
        "t = live.run_sync('x', llm=sn.mock_llm(lambda req: '流 れ'))\n"
        "print(t.text, 'httpx' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "= 3 ✓ 多少 2 True False",
        "['done', 'done'] False",
        "流 れ True",
    ], out.stdout


def test_the_deferred_kinds_load_on_first_look_up_and_by_name() -> None:
    code = (
        "import sys, sagents_nb as sn\n"
        "from sagents_nb.kinds import Native\n"
        "assert 'sagents_nb.kinds._resident' not in sys.modules\n"
        "assert {'CliAgent', 'Realtime', 'Resident'} <= set(dir(sn.kinds))\n"
        "assert type(sn.kinds.checked_kind('resident', where='x')) is sn.kinds.Resident\n"
        "print(sorted(sn.kinds.registry()), sn.kinds.registry()['realtime'].__name__,\n"
        "      Native.__name__, sn.kinds.CliAgent.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [
        *("['main',", "'realtime',", "'resident',", "'worker']", "Realtime"),
        *("Native", "CliAgent"),
    ]
    assert not hasattr(sn.kinds, "Nothing") and "Nothing" not in dir(sn.kinds)


def test_lazy_public_names_are_listed_and_resolve_on_first_use() -> None:
    assert set(sn.__all__) <= set(dir(sn))  # tab completion sees them before first use
    from sagents_nb import ChatRequest

    assert sn.ChatRequest is ChatRequest and "ChatRequest" in vars(sn)


def test_events_round_trip_through_json() -> None:
    from sagents_nb.events import ModelResponse, TaskSpawned, parse_event

    for event in (
        TaskSpawned(child="a/b.1", agent="b", prompt="p", kind="worker", seq=3, path="a"),
        ModelResponse(turn=1, message=sn.Message(role="assistant", content="hi"), seq=4),
    ):
        again = parse_event(event.model_dump_json())
        assert type(again) is type(event)
        assert again == event


def test_message_copies_do_not_keep_stale_wire_or_token_caches() -> None:
    from sagents_nb._base.messages import estimate_tokens

    original = sn.Message(role="user", content="short")
    assert original.to_wire()["content"] == "short" and estimate_tokens(original) == 5
    copy = original.model_copy(update={"content": "a much longer message than before"})
    assert copy.to_wire()["content"] == "a much longer message than before"
    assert estimate_tokens(copy) == 12


def test_equal_messages_compare_equal_whatever_their_caches() -> None:
    a, b = sn.Message(role="user", content="x"), sn.Message(role="user", content="x")
    a.to_wire()
    assert a == b and hash(a) == hash(b)
    assert a != sn.Message(role="user", content="y")


def test_the_ports_plugins_are_written_against_are_these_members() -> None:
    # A kind sees its node as `sn.kinds.Child` and a CLI driver is an `sn.harness.NativeHarness`:
    # a member added or dropped changes what every plugin may rely on (issue 27 items 1, 7;
    # `record_child`, `record_finished`: issue 31 item 6).
    def members(protocol: type) -> list[str]:
        own = set(vars(protocol)) | set(vars(protocol).get("__annotations__", {}))
        return sorted(name for name in own if not name.startswith("_"))

    assert members(sn.kinds.Child) == [
        *("add_usage", "agent", "append", "busy", "context_tokens", "cost_usd", "count_turn"),
        *("emit", "execute_tools", "forget", "history", "history_tokens", "inbox"),
        *("input_index", "input_text", "kind", "kind_state", "notices", "parent", "path"),
        *("persistent", "record_child", "record_finished", "release_inbox", "replace_history"),
        *("set_status", "state_changed"),
        *("state_of", "status", "stop_tasks_of", "summarise", "system_messages"),
        *("token_count", "tool_map"),
    ]
    assert members(sn.kinds.ChildKind) == [  # `interrupts`, `overflow`: issue 30 items 6, 8
        *("append_history", "build_context", "compact", "deliver", "describe", "dispose"),
        *("dump_state", "emit", "flush", "interrupts", "load_state", "maintain", "name"),
        *("overflow", "own_tools", "parent_tools", "persistent", "prepare", "run_task"),
        *("run_tools", "salvage", "stream", "turn_limit", "waiting_inputs"),
    ]
    assert members(sn.harness.NativeHarness) == [
        *("args", "env", "env_vars", "executable", "gate_builtin_tools", "injects_mcp_tools"),
        *("name", "parse_line"),
    ]
