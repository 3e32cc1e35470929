"""The four drivers, table-driven: argv for a config, and events for real-looking output lines."""

from __future__ import annotations

import json
import tomllib

import pytest

from sagents_nb.harness import (
    ClaudeCode,
    Codex,
    CursorAgent,
    Grok,
    HarnessConfig,
    HarnessDone,
    HarnessError,
    HarnessEventAdapter,
    HarnessPermissionDenied,
    HarnessReasoning,
    HarnessRetry,
    HarnessSession,
    HarnessText,
    HarnessToolCall,
    HarnessToolResult,
    HarnessUsage,
    NativeHarness,
)

DRIVERS = [ClaudeCode(), CursorAgent(), Codex(), Grok()]

FULL = HarnessConfig(
    "Fix the failing test",
    model="some-model",
    system_prompt="You are a careful engineer.",
    mcp_config_path="/tmp/sagents-mcp-x/mcp.json",
    mcp_url="http://127.0.0.1:4321/mcp",
    cwd="/work",
    extra_args=["--max-turns", "5"],
)

CODEX_QUIET = [
    "--disable", "plugins", "--disable", "remote_plugin", "--disable", "apps",
    "--disable", "in_app_updates", "--disable", "daemon_auto_start",
    "-c", "check_for_update_on_startup=false", "-c", "analytics.enabled=false",
]  # fmt: skip

ARGV = [
    (ClaudeCode(), HarnessConfig("hi"), ["-p", "--output-format", "stream-json", "--verbose", "--", "hi"]),
    (
        ClaudeCode(),
        FULL,
        [
            "-p", "--output-format", "stream-json", "--verbose",
            "--model", "some-model",
            "--append-system-prompt", "You are a careful engineer.",
            "--mcp-config=/tmp/sagents-mcp-x/mcp.json",
            "--allowedTools=mcp__sagents",
            "--max-turns", "5",
            "--", "Fix the failing test",
        ],
    ),
    (
        ClaudeCode(),
        HarnessConfig("hi", system_prompt="  \n"),
        ["-p", "--output-format", "stream-json", "--verbose", "--", "hi"],
    ),
    (
        ClaudeCode(
            base_url="http://127.0.0.1:9", api_key="sk-ant-x", permission_mode="plan",
            stream_text=True,
        ),
        HarnessConfig("hi", resume="9b2c1f0e", mcp_config_path="/m.json", permission_tool="ok"),
        [
            "-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages",
            "--resume=9b2c1f0e", "--permission-mode=plan", "--mcp-config=/m.json",
            "--allowedTools=mcp__sagents", "--permission-prompt-tool=mcp__sagents__ok", "--", "hi",
        ],
    ),
    (CursorAgent(), HarnessConfig("hi"), ["-p", "--output-format", "stream-json", "--", "hi"]),
    (
        CursorAgent(),
        FULL,
        [
            "-p", "--output-format", "stream-json",
            "--model", "some-model",
            "--max-turns", "5",
            "--", "You are a careful engineer.\n\nFix the failing test",
        ],
    ),
    (Codex(), HarnessConfig("hi"), ["exec", "--json", *CODEX_QUIET, "--", "hi"]),
    (
        Codex(),
        FULL,
        [
            "exec", "--json", *CODEX_QUIET,
            "--model", "some-model",
            "-c", 'developer_instructions="You are a careful engineer."',
            "-c", 'mcp_servers.sagents.url="http://127.0.0.1:4321/mcp"',
            "-c", 'mcp_servers.sagents.bearer_token_env_var="SAGENTS_MCP_TOKEN"',
            "-c", 'mcp_servers.sagents.default_tools_approval_mode="approve"',
            "-c", "mcp_servers.sagents.required=true",
            "-c", "mcp_servers.sagents.startup_timeout_sec=60",
            "-c", "mcp_servers.sagents.tool_timeout_sec=86400",
            "--max-turns", "5",
            "--", "Fix the failing test",
        ],
    ),
    (
        Codex(
            base_url="http://127.0.0.1:9/v1",
            api_key="sk-test",
            sandbox="read-only",
            approval_policy="never",
        ),
        HarnessConfig("hi", resume="thread-7"),
        [
            "exec", "resume", "thread-7", "--json", *CODEX_QUIET,
            "-c", "model_provider=sagents_endpoint",
            "-c", 'model_providers.sagents_endpoint.name="sagents_nb endpoint"',
            "-c", 'model_providers.sagents_endpoint.base_url="http://127.0.0.1:9/v1"',
            "-c", 'model_providers.sagents_endpoint.wire_api="responses"',
            "-c", 'model_providers.sagents_endpoint.env_key="SAGENTS_CODEX_API_KEY"',
            "-c", 'approval_policy="never"',
            "--", "hi",
        ],
    ),
    (Grok(), HarnessConfig("hi"), ["--prompt=hi"]),
    (
        Grok(),
        FULL,
        [
            "--prompt=You are a careful engineer.\n\nFix the failing test",
            "-m", "some-model",
            "--max-turns", "5",
        ],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("driver", "config", "argv"), ARGV)
def test_argv(driver, config, argv):
    assert driver.args(config) == argv


@pytest.mark.parametrize("driver", DRIVERS, ids=lambda d: d.name)
def test_a_flag_like_prompt_is_one_argument_that_cannot_be_read_as_a_flag(driver):
    prompt = "--help; rm -rf / $(id)"
    argv = driver.args(HarnessConfig(prompt, extra_args=["--verbose"]))
    if isinstance(driver, Grok):
        assert argv.count(f"--prompt={prompt}") == 1
    else:
        assert argv[-2:] == ["--", prompt]
        assert argv.count("--") == 1


def test_codex_developer_instructions_survive_toml_parsing():
    tricky = 'Say "hi"\nthen \\ stop. \x7f \U0001f600 \t end'
    argv = Codex().args(HarnessConfig("hi", system_prompt=tricky))
    (override,) = [a for a in argv if a.startswith("developer_instructions=")]
    assert tomllib.loads(override) == {"developer_instructions": tricky}


@pytest.mark.parametrize("driver", DRIVERS, ids=lambda d: d.name)
def test_every_driver_is_a_native_harness_and_takes_an_executable_override(driver):
    assert isinstance(driver, NativeHarness)
    moved = type(driver)(executable="/opt/bin/other")
    assert moved.executable == "/opt/bin/other"
    assert moved.args(FULL) == driver.args(FULL)


def test_drivers_set_the_endpoint_and_quiet_switches_in_the_env_and_keep_keys_out_of_argv():
    claude = ClaudeCode(base_url="http://127.0.0.1:9", api_key="sk-ant-secret")
    env = claude.env(FULL)
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    assert env["ANTHROPIC_API_KEY"] == "sk-ant-secret"
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert env["ENABLE_TOOL_SEARCH"] == "false"
    assert "ENABLE_TOOL_SEARCH" not in ClaudeCode().env(HarnessConfig("hi"))
    codex = Codex(base_url="http://127.0.0.1:9/v1", api_key="sk-secret")
    assert codex.env(FULL) == {"SAGENTS_CODEX_API_KEY": "sk-secret"}
    grok = Grok(base_url="http://127.0.0.1:9/v1", api_key="xai-secret")
    assert grok.env(FULL) == {
        "GROK_BASE_URL": "http://127.0.0.1:9/v1",
        "GROK_API_KEY": "xai-secret",
    }
    for driver in (claude, codex, grok):
        assert "secret" not in " ".join(driver.args(FULL)) and "secret" not in repr(driver)


def test_only_claude_code_and_codex_take_injected_tools():
    assert [d.injects_mcp_tools for d in DRIVERS] == [True, False, True, False]


def _line(obj: dict) -> str:
    return json.dumps(obj)


SESSION = "9b2c1f0e-6a7d-4f3b-8e21-0c5d7a9f1b34"

CLAUDE_LINES = [
    (
        _line({"type": "system", "subtype": "init", "cwd": "/work", "session_id": SESSION,
               "tools": ["Bash", "Read"], "mcp_servers": [], "model": "claude-sonnet-4-5-20250929",
               "permissionMode": "default", "apiKeySource": "none"}),
        [HarnessSession(session_id=SESSION)],
    ),
    (
        _line({"type": "assistant", "message": {"id": "msg_01", "type": "message",
               "role": "assistant", "model": "claude-sonnet-4-5-20250929",
               "content": [{"type": "text", "text": "I'll check the tests."}], "stop_reason": None,
               "usage": {"input_tokens": 4, "output_tokens": 9}},
               "parent_tool_use_id": None, "session_id": SESSION}),
        [HarnessText(text="I'll check the tests.")],
    ),
    (
        _line({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "The test imports a removed name.", "signature": "Eq0"},
            {"type": "text", "text": "Found it."},
            {"type": "tool_use", "id": "toolu_01Xy", "name": "Bash",
             "input": {"command": "pytest -q", "description": "Run the tests"}},
        ]}, "parent_tool_use_id": None, "session_id": SESSION}),
        [
            HarnessReasoning(text="The test imports a removed name."),
            HarnessText(text="Found it."),
            HarnessToolCall(name="Bash", arguments={"command": "pytest -q",
                            "description": "Run the tests"}, id="toolu_01Xy"),
        ],
    ),
    (
        _line({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Sub-agent musing."},
            {"type": "tool_use", "id": "toolu_02", "name": "Grep", "input": {"pattern": "foo"}},
        ]}, "parent_tool_use_id": "toolu_01Task", "session_id": SESSION}),
        # a sub-agent's line is its own: the Native kind puts it on the sub-agent's node
        [
            HarnessText(text="Sub-agent musing.", subagent="toolu_01Task"),
            HarnessToolCall(name="Grep", arguments={"pattern": "foo"}, id="toolu_02",
                            subagent="toolu_01Task"),
        ],
    ),
    (
        _line({"type": "user", "message": {"role": "user", "content": [
            {"tool_use_id": "toolu_01Xy", "type": "tool_result", "content": "1 passed",
             "is_error": False}]}, "parent_tool_use_id": None, "session_id": SESSION}),
        [HarnessToolResult(id="toolu_01Xy", content="1 passed")],
    ),
    (
        _line({"type": "result", "subtype": "success", "is_error": False, "duration_ms": 2650,
               "duration_api_ms": 2546, "num_turns": 3, "result": "Fixed: the import was stale.",
               "session_id": SESSION, "total_cost_usd": 0.0213,
               "usage": {"input_tokens": 12, "cache_creation_input_tokens": 5002,
                         "cache_read_input_tokens": 11000, "output_tokens": 321,
                         "server_tool_use": {"web_search_requests": 0}},
               "permission_denials": []}),
        [HarnessDone(content="Fixed: the import was stale.",
                     usage=HarnessUsage(input_tokens=16014, output_tokens=321),
                     session_id=SESSION, cost_usd=0.0213, turns=3, duration_ms=2650)],
    ),
    (
        _line({"type": "result", "subtype": "success", "is_error": False, "result": "ok",
               "session_id": SESSION, "num_turns": 2, "permission_denials": [
                   {"tool_name": "Bash", "tool_use_id": "toolu_9", "tool_input": {"command": "ls"}},
                   "junk"]}),
        [HarnessDone(content="ok", session_id=SESSION, turns=2, permission_denials=[
            {"tool_name": "Bash", "tool_use_id": "toolu_9", "tool_input": {"command": "ls"}}])],
    ),
    (
        _line({"type": "result", "subtype": "error_max_turns", "is_error": False,
               "duration_ms": 9120, "num_turns": 5, "session_id": SESSION,
               "total_cost_usd": 0.05, "usage": {"input_tokens": 40, "output_tokens": 800}}),
        [HarnessError(message="Claude Code ended with an error (error_max_turns): no details "
                      "given; raise the turn limit with extra_args=['--max-turns', 'N']")],
    ),
    (
        _line({"type": "result", "subtype": "success", "is_error": True,
               "result": "API Error: 401 {\"type\":\"error\"}", "session_id": SESSION}),
        [HarnessError(message="Claude Code ended with an error: API Error: 401 "
                      "{\"type\":\"error\"}")],
    ),
    (
        _line({"type": "assistant", "message": {"id": "m1", "model": "<synthetic>",
               "role": "assistant", "content": [{"type": "text", "text":
               "API Error: 500 {\"error\":\"boom\"}"}]}, "parent_tool_use_id": None}),
        [HarnessError(message="Claude Code: API Error: 500 {\"error\":\"boom\"}", fatal=False)],
    ),
    (
        _line({"type": "system", "subtype": "api_retry", "attempt": 2, "max_retries": 10,
               "retry_delay_ms": 1250, "error_status": 500, "error": "server_error",
               "session_id": SESSION}),
        [HarnessRetry(attempt=2, status=500, error="server_error", delay=1.25)],
    ),
    (
        _line({"type": "system", "subtype": "api_retry", "attempt": "x", "error": {
               "message": "Connection error."}}),
        [HarnessRetry(attempt=1, error="Connection error.")],
    ),
    (
        _line({"type": "system", "subtype": "permission_denied", "tool_name": "Bash",
               "tool_use_id": "toolu_3", "reason": "not allowed in this mode"}),
        [HarnessPermissionDenied(name="Bash", reason="not allowed in this mode", id="toolu_3")],
    ),
    (_line({"type": "stream_event", "event": {"type": "content_block_delta"}}), []),
    (
        _line({"type": "stream_event", "event": {"type": "content_block_delta", "index": 0,
               "delta": {"type": "text_delta", "text": "Bonjour, 世界 🎉"}},
               "parent_tool_use_id": None}),
        [HarnessText(text="Bonjour, 世界 🎉", delta=True)],
    ),
    (
        _line({"type": "stream_event", "event": {"type": "content_block_delta", "delta": {
               "type": "text_delta", "text": "a sub-agent's"}}, "parent_tool_use_id": "toolu_1"}),
        [],
    ),
    ("Loading MCP servers…", []),
    ("", []),
]  # fmt: skip

CURSOR_LINES = [
    (
        _line({"type": "system", "subtype": "init", "apiKeySource": "login", "cwd": "/work",
               "session_id": SESSION, "model": "Claude 4.5 Sonnet", "permissionMode": "default"}),
        [],
    ),
    (
        _line({"type": "user", "message": {"role": "user", "content": [
            {"type": "text", "text": "Fix the failing test"}]}, "session_id": SESSION}),
        [],
    ),
    (
        _line({"type": "thinking", "subtype": "delta", "text": "Looking at the test file",
               "session_id": SESSION, "timestamp_ms": 1760000000000}),
        [HarnessReasoning(text="Looking at the test file")],
    ),
    (_line({"type": "thinking", "subtype": "completed", "session_id": SESSION}), []),
    (
        _line({"type": "tool_call", "subtype": "started", "call_id": "toolu_vrtx_01",
               "tool_call": {"readToolCall": {"args": {"path": "tests/test_app.py"}}},
               "session_id": SESSION}),
        [HarnessToolCall(name="read", arguments={"path": "tests/test_app.py"}, id="toolu_vrtx_01")],
    ),
    (
        _line({"type": "tool_call", "subtype": "completed", "call_id": "toolu_vrtx_01",
               "tool_call": {"readToolCall": {"args": {"path": "tests/test_app.py"},
                             "result": {"success": {"content": "import app", "totalLines": 1}}}},
               "session_id": SESSION}),
        [],
    ),
    (
        _line({"type": "tool_call", "subtype": "started", "call_id": "call_7",
               "tool_call": {"function": {"name": "grep",
                                          "arguments": "{\"pattern\": \"def main\"}"}},
               "session_id": SESSION}),
        [HarnessToolCall(name="grep", arguments={"pattern": "def main"}, id="call_7")],
    ),
    (
        _line({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "The test imports a renamed function."}]},
            "session_id": SESSION}),
        [HarnessText(text="The test imports a renamed function.")],
    ),
    (
        _line({"type": "result", "subtype": "success", "duration_ms": 5234, "duration_api_ms": 5234,
               "is_error": False, "result": "The test imports a renamed function.",
               "session_id": SESSION, "request_id": "req_1"}),
        [HarnessDone(content="The test imports a renamed function.", session_id=SESSION,
                     duration_ms=5234)],
    ),
    (
        _line({"type": "result", "subtype": "error", "is_error": True,
               "result": "Workspace not trusted", "session_id": SESSION}),
        [HarnessError(message="Cursor Agent ended with an error (error): Workspace not trusted")],
    ),
]  # fmt: skip

CODEX_LINES = [
    (
        _line({"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"}),
        [HarnessSession(session_id="0199a213-81c0-7800-8aa1-bbab2a035a53")],
    ),
    (_line({"type": "turn.started"}), []),
    (
        _line({"type": "item.completed", "item": {"id": "item_0", "type": "reasoning",
               "text": "**Inspecting the failing test**"}}),
        [HarnessReasoning(text="**Inspecting the failing test**")],
    ),
    (
        _line({"type": "item.started", "item": {"id": "item_1", "type": "command_execution",
               "command": "bash -lc 'pytest -q'", "aggregated_output": "", "exit_code": None,
               "status": "in_progress"}}),
        [HarnessToolCall(name="command_execution", arguments={"command": "bash -lc 'pytest -q'"},
                         id="item_1")],
    ),
    (
        _line({"type": "item.completed", "item": {"id": "item_1", "type": "command_execution",
               "command": "bash -lc 'pytest -q'", "aggregated_output": "1 failed\n",
               "exit_code": 1, "status": "failed"}}),
        [],
    ),
    (
        _line({"type": "item.started", "item": {"id": "item_2", "type": "mcp_tool_call",
               "server": "sagents", "tool": "add", "arguments": {"a": 2, "b": 3},
               "result": None, "error": None, "status": "in_progress"}}),
        [HarnessToolCall(name="sagents/add", arguments={"a": 2, "b": 3}, id="item_2")],
    ),
    (
        _line({"type": "item.completed", "item": {"id": "item_2", "type": "mcp_tool_call",
               "server": "sagents", "tool": "add", "arguments": {"a": 2}, "result": None,
               "error": {"message": "MCP tool call requires approval, but approval policy is "
               "never"}, "status": "failed"}}),
        [HarnessError(message="Codex: the call to sagents/add failed: MCP tool call requires "
                      "approval, but approval policy is never", fatal=False)],
    ),
    (
        _line({"type": "item.completed", "item": {"id": "item_2", "type": "mcp_tool_call",
               "server": "sagents", "tool": "add", "status": "completed",
               "result": {"content": []}}}),
        [],
    ),
    (
        _line({"type": "item.completed", "item": {"id": "item_3", "type": "file_change",
               "changes": [{"path": "app.py", "kind": "update"}], "status": "completed"}}),
        [HarnessToolCall(name="file_change", arguments={"changes": [{"path": "app.py",
                         "kind": "update"}]}, id="item_3")],
    ),
    (
        _line({"type": "item.completed", "item": {"id": "item_4", "type": "agent_message",
               "text": "Renamed the import; the test passes."}}),
        [HarnessText(text="Renamed the import; the test passes.")],
    ),
    (
        _line({"type": "item.completed", "item": {"id": "item_5", "type": "error",
               "message": "model metadata for `gpt-x` not found"}}),
        [HarnessError(message="Codex: model metadata for `gpt-x` not found", fatal=False)],
    ),
    (
        _line({"type": "turn.completed", "usage": {"input_tokens": 24763,
               "cached_input_tokens": 24448, "output_tokens": 122}}),
        [HarnessDone(content="", usage=HarnessUsage(input_tokens=24763, output_tokens=122))],
    ),
    (
        _line({"type": "turn.failed", "error": {"message": "unexpected status 401 Unauthorized"}}),
        [HarnessError(message="Codex turn failed: unexpected status 401 Unauthorized")],
    ),
    (
        _line({"type": "error", "message": "Reconnecting... 2/5 (stream disconnected before "
               "completion: websocket closed by server before response.completed)"}),
        [HarnessError(message="Codex: Reconnecting... 2/5 (stream disconnected before completion: "
                      "websocket closed by server before response.completed)", fatal=False)],
    ),
    (
        _line({"type": "error", "message": "stream disconnected before completion"}),
        [HarnessError(message="Codex: stream disconnected before completion")],
    ),
    ("[2025-10-01T10:00:00] OpenAI Codex v0.44.0 (research preview)", []),
]  # fmt: skip

GROK_LINES = [
    (_line({"role": "user", "content": "--hello"}), []),
    (
        _line({"role": "assistant", "content": "Using tools to help you...", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "bash",
             "arguments": "{\"command\": \"echo hi\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "view_file",
             "arguments": "not json"}},
            {"id": "call_3", "type": "function", "function": {"arguments": "{}"}}]}),
        [HarnessToolCall(name="bash", arguments={"command": "echo hi"}, id="call_1"),
         HarnessToolCall(name="view_file", arguments={}, id="call_2")],
    ),
    (_line({"role": "tool", "tool_call_id": "call_1", "content": "hi"}), []),
    (_line({"role": "assistant", "content": "Voilà : 完成 🎉"}), [HarnessText(text="Voilà : 完成 🎉")]),
    (_line({"role": "assistant", "content": ""}), []),
    (
        _line({"role": "assistant", "content": "Error: 401 status code (no body)"}),
        [HarnessError(message="Grok: Error: 401 status code (no body)")],
    ),
    ("✅ Base URL saved to ~/.grok/user-settings.json", []),
]  # fmt: skip

PARSE = [
    *[(ClaudeCode(), line, events) for line, events in CLAUDE_LINES],
    *[(CursorAgent(), line, events) for line, events in CURSOR_LINES],
    *[(Codex(), line, events) for line, events in CODEX_LINES],
    *[(Grok(), line, events) for line, events in GROK_LINES],
]


@pytest.mark.parametrize(("driver", "line", "events"), PARSE)
def test_parse_line(driver, line, events):
    assert driver.parse_line(line) == events


@pytest.mark.parametrize("driver", DRIVERS, ids=lambda d: d.name)
@pytest.mark.parametrize(
    "line",
    [
        "{",
        "null",
        "[]",
        '"text"',
        '{"type": null}',
        '{"type": "assistant", "message": "not an object"}',
        '{"type": "assistant", "message": {"content": [1, null, {"type": "tool_use"}]}}',
        '{"type": "result", "usage": [], "result": 7}',
        '{"type": "item.completed", "item": []}',
        '{"type": "turn.completed", "usage": {"input_tokens": -5, "output_tokens": true}}',
        '{"type": "tool_call", "subtype": "started", "tool_call": {"ToolCall": {}}}',
        '{"type": "end", "usage": {"input_tokens": "12"}}',
        "[" * 100_000,
    ],
)
def test_malformed_lines_give_no_events_or_an_error_never_an_exception(driver, line):
    events = driver.parse_line(line)
    assert all(HarnessEventAdapter.validate_python(event) == event for event in events)


def test_base_harness_gives_a_driver_the_defaults_and_available_says_if_it_runs(tmp_path):
    from sagents_nb.harness import BaseHarness, available

    class Minimal(BaseHarness):
        name = "minimal"
        executable = "definitely-not-an-installed-cli"

        def args(self, config):
            return [config.prompt]

        def parse_line(self, line):
            return []

    driver = Minimal()
    assert isinstance(driver, NativeHarness)
    assert (driver.injects_mcp_tools, driver.gate_builtin_tools, tuple(driver.env_vars)) == (
        True,
        False,
        (),
    )
    assert driver.env(FULL) == {}
    assert all(isinstance(d, BaseHarness) for d in DRIVERS)
    assert available(Minimal()) is False
    script = tmp_path / "cli"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    runnable = Minimal()
    runnable.executable = str(script)
    assert available(runnable) is True
    assert available(ClaudeCode(executable="sh")) is True
