"""Driver for OpenAI's Codex CLI: `codex exec --json`, read through its JSONL thread events, or
`codex app-server` when the kernel answers its approval requests."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from ._codex_app_server import CodexAppServer, mcp_tool_name
from ._events import (
    HarnessDone,
    HarnessError,
    HarnessEvent,
    HarnessReasoning,
    HarnessSession,
    HarnessText,
    HarnessToolCall,
    HarnessUsage,
)
from ._json_lines import list_field, load_object, object_field, text_field, token_count
from ._protocol import MCP_SERVER_NAME, MCP_TOKEN_ENV, BaseHarness, HarnessConfig

# Codex reports a dropped model stream it is retrying as a top-level error; the turn goes on.
_RETRY_PREFIX = "Reconnecting..."
_PROVIDER = "sagents_endpoint"
"""The model provider Codex is given when the driver names a `base_url`."""
_KEY_ENV = "SAGENTS_CODEX_API_KEY"
_QUIET_FEATURES = ("plugins", "remote_plugin", "apps", "in_app_updates", "daemon_auto_start")
"""Features that reach remote hosts on their own; a child run needs none of them."""

Sandbox = Literal["read-only", "workspace-write", "danger-full-access"]
ApprovalPolicy = Literal["untrusted", "on-request", "never"]


@dataclass(frozen=True, kw_only=True)
class Codex(BaseHarness):
    """Codex in exec mode, or as an app server when its own tools are gated. The child's tools
    arrive through `-c mcp_servers...` overrides.

    In exec mode (the default), Codex refuses to run outside a git repository unless given
    `extra_args=["--skip-git-repo-check"]`; it reads the prompt from stdin when it is exactly
    "-", and the runtime closes stdin, so such a prompt arrives empty.

    With `gate_builtin_tools=True` the driver runs `codex app-server` and speaks its JSON-RPC
    over stdio (one thread, one turn per task; `extra_args` then go to `app-server`): each
    approval request Codex sends (a command to run, a patch to apply) goes through the
    `before_tool` hooks and `pause_on={"tool"}` as a call of the child named `command_execution`
    (arguments `command`, `cwd`, `reason`) or `file_change` (`changes`), and Codex runs it only
    if they let it. A decline carries no reason to Codex's model (it reads "rejected by user");
    an edit cannot change what Codex runs, so a call whose arguments were edited is declined. Which calls Codex asks about is its `approval_policy`, "untrusted" unless given
    (everything but the commands Codex knows to be read-only).

    The CLI gets the variables it reads (`OPENAI_*`, `CODEX_*`) from this process's environment and
    no others, with plugins, apps and update checks turned off.

    Args:
        executable: The `codex` program to run, by name on PATH or by path.
        base_url: A Responses API root to use instead of OpenAI's, e.g. a served mock's
            `openai_base_url`; Codex gets it as its own model provider.
        api_key: The key to send to `base_url` (passed in the environment, never in argv).
        sandbox: `--sandbox` for the commands the model runs.
        approval_policy: When Codex asks before running a command (`approval_policy`).
        gate_builtin_tools: Ask the kernel before Codex runs a command or applies a patch it
            asks approval for, through `codex app-server` (see above).
    """

    executable: str = "codex"
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    sandbox: Sandbox | None = None
    approval_policy: ApprovalPolicy | None = None
    gate_builtin_tools: bool = False
    name = "Codex"
    env_vars = ("OPENAI_*", "CODEX_*")

    def args(self, config: HarnessConfig) -> list[str]:
        """`exec [resume ID] --json [options] -- PROMPT`; with `gate_builtin_tools`,
        `app-server [options]` (the prompt, model and the rest then go over stdin)."""
        if self.gate_builtin_tools:
            return ["app-server", *self._quiet_provider(), *_mcp_server(config), *config.extra_args]
        argv = ["exec", "resume", config.resume] if config.resume else ["exec"]
        argv += ["--json", *self._quiet_provider()]
        if self.sandbox and not config.resume:
            argv += ["--sandbox", self.sandbox]
        if self.approval_policy:
            argv += ["-c", f"approval_policy={_toml_string(self.approval_policy)}"]
        if config.model:
            argv += ["--model", config.model]
        if config.system_prompt and config.system_prompt.strip():
            # Developer instructions add to Codex's own instructions instead of replacing them.
            argv += ["-c", f"developer_instructions={_toml_string(config.system_prompt)}"]
        argv += _mcp_server(config)
        # `--` ends option parsing, so a prompt starting with "-" stays the positional prompt.
        return [*argv, *config.extra_args, "--", config.prompt]

    def _quiet_provider(self) -> list[str]:
        """The options both modes take first: quiet features, then the provider."""
        argv: list[str] = []
        for feature in _QUIET_FEATURES:
            argv += ["--disable", feature]
        argv += ["-c", "check_for_update_on_startup=false", "-c", "analytics.enabled=false"]
        if self.base_url:
            provider = f"model_providers.{_PROVIDER}"
            argv += ["-c", f"model_provider={_PROVIDER}"]
            argv += ["-c", f"{provider}.name={_toml_string('sagents_nb endpoint')}"]
            argv += ["-c", f"{provider}.base_url={_toml_string(self.base_url)}"]
            argv += ["-c", f'{provider}.wire_api="responses"']
            if self.api_key:
                argv += ["-c", f"{provider}.env_key={_toml_string(_KEY_ENV)}"]
        return argv

    def _conversation(self, config: HarnessConfig) -> CodexAppServer | None:
        """The app server's client for one run, when the kernel answers Codex's approvals."""
        if not self.gate_builtin_tools:
            return None
        thread: dict[str, Any] = {"approvalPolicy": self.approval_policy or "untrusted"}
        if config.model:
            thread["model"] = config.model
        if self.sandbox:
            thread["sandbox"] = self.sandbox
        if config.system_prompt and config.system_prompt.strip():
            thread["developerInstructions"] = config.system_prompt
        return CodexAppServer(config, thread)

    def env(self, config: HarnessConfig) -> dict[str, str]:
        """The key for `base_url`, when one was given."""
        return {_KEY_ENV: self.api_key} if self.base_url and self.api_key else {}

    def parse_line(self, line: str) -> list[HarnessEvent]:
        """Events from `item.*`, `turn.*` and `error` lines; `thread.started` and noise give `[]`."""
        event = load_object(line)
        if event is None:
            return []
        match event.get("type"):
            case "thread.started" if thread := text_field(event, "thread_id"):
                return [HarnessSession(session_id=thread)]
            case "item.started":
                return _started_item(object_field(event, "item"))
            case "item.completed":
                return _completed_item(object_field(event, "item"))
            case "turn.completed":
                usage = object_field(event, "usage")
                # OpenAI's `input_tokens` already includes the cached ones.
                tokens = HarnessUsage(
                    input_tokens=token_count(usage, "input_tokens"),
                    output_tokens=token_count(usage, "output_tokens"),
                )
                return [HarnessDone(content="", usage=tokens)]
            case "turn.failed":
                message = text_field(object_field(event, "error"), "message")
                return [HarnessError(message=f"Codex turn failed: {message or 'no details given'}")]
            case "error":
                message = text_field(event, "message") or "no details given"
                fatal = not message.startswith(_RETRY_PREFIX)
                return [HarnessError(message=f"Codex: {message}", fatal=fatal)]
            case _:
                return []


def _mcp_server(config: HarnessConfig) -> list[str]:
    """The `-c` overrides naming the injected tool server, when there is one."""
    argv: list[str] = []
    if config.mcp_url:
        # The token stays out of argv (visible to every local user); Codex reads it from
        # the environment variable the runtime sets.
        server = f"mcp_servers.{MCP_SERVER_NAME}"
        argv += ["-c", f"{server}.url={_toml_string(config.mcp_url)}"]
        argv += ["-c", f"{server}.bearer_token_env_var={_toml_string(MCP_TOKEN_ENV)}"]
        # Codex asks before each MCP call, and an exec run cannot answer, so every call would
        # be refused; the kernel's hooks still see (and may deny) each one.
        argv += ["-c", f'{server}.default_tools_approval_mode="approve"']
        # Codex starts MCP servers beside the first turn and, on a slow start, sends that turn
        # without their tools; `required` makes it wait (and fail loudly if it cannot connect).
        argv += ["-c", f"{server}.required=true", "-c", f"{server}.startup_timeout_sec=60"]
        # A call may wait at a pause for a person; the kernel's own tool timeouts still apply.
        argv += ["-c", f"{server}.tool_timeout_sec=86400"]
    return argv


def _started_item(item: dict[str, Any]) -> list[HarnessEvent]:
    """Tool calls, reported when they start so they show while they run."""
    call_id = text_field(item, "id") or None
    match item.get("type"):
        case "command_execution":
            arguments = {"command": text_field(item, "command")}
            return [HarnessToolCall(name="command_execution", arguments=arguments, id=call_id)]
        case "mcp_tool_call" if name := mcp_tool_name(item):
            arguments = object_field(item, "arguments")
            return [HarnessToolCall(name=name, arguments=arguments, id=call_id)]
        case "web_search":
            arguments = {"query": text_field(item, "query")}
            return [HarnessToolCall(name="web_search", arguments=arguments, id=call_id)]
        case _:
            return []


def _completed_item(item: dict[str, Any]) -> list[HarnessEvent]:
    """Messages, reasoning, file changes (reported only once done) and non-fatal error items."""
    match item.get("type"):
        case "agent_message" if text := text_field(item, "text"):
            return [HarnessText(text=text)]
        case "reasoning" if text := text_field(item, "text"):
            return [HarnessReasoning(text=text)]
        case "file_change":
            changes = [c for c in list_field(item, "changes") if isinstance(c, dict)]
            call_id = text_field(item, "id") or None
            return [HarnessToolCall(name="file_change", arguments={"changes": changes}, id=call_id)]
        case "error" if message := text_field(item, "message"):
            return [HarnessError(message=f"Codex: {message}", fatal=False)]
        case "mcp_tool_call" if text_field(item, "status") == "failed":
            reason = text_field(object_field(item, "error"), "message") or "no details given"
            message = f"Codex: the call to {mcp_tool_name(item) or 'an MCP tool'} failed: {reason}"
            return [HarnessError(message=message, fatal=False)]
        case _:
            return []


def _toml_string(value: str) -> str:
    """`value` as a TOML basic string, the form Codex's `-c key=value` overrides parse."""
    # JSON string escapes are valid TOML; TOML also forbids a raw DEL character.
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
