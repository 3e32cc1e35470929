"""Events a native CLI harness reports, normalised across CLIs: pydantic models keyed by `type`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class HarnessUsage(BaseModel):
    """Token accounting for one CLI run."""

    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    """Every prompt token the model read, cached or not."""
    output_tokens: int = 0
    """Tokens the model wrote, reasoning included where the CLI counts it."""


class _Placed(BaseModel):
    """An event that tells which of the CLI's agents it comes from."""

    model_config = ConfigDict(frozen=True)

    subagent: str | None = None
    """The CLI's id for the sub-agent it comes from (`HarnessSubagent.id`); None for the CLI's
    main thread."""


class HarnessText(_Placed):
    """Assistant text for the user: a whole message, or a streamed piece of one."""

    type: Literal["text"] = "text"
    text: str
    """The text exactly as the CLI reported it."""
    delta: bool = False
    """A streamed piece of a message whose whole text also follows as a `text` event."""


class HarnessReasoning(_Placed):
    """Thinking the CLI chose to show (reasoning summaries, thinking blocks)."""

    type: Literal["reasoning"] = "reasoning"
    text: str
    """The reasoning text, whole or a streamed piece."""


class HarnessToolCall(_Placed):
    """The CLI called a tool. For observability only: the CLI runs its own tools."""

    type: Literal["tool_call"] = "tool_call"
    name: str
    """The tool's name as the CLI knows it (injected tools may carry a server prefix)."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The arguments the CLI passed, as JSON."""
    id: str | None = None
    """The CLI's id for the call, when it reports one."""


class HarnessToolResult(_Placed):
    """What one of the CLI's tool calls returned, as the CLI reported it to its model."""

    type: Literal["tool_result"] = "tool_result"
    id: str
    """The CLI's id for the call (`HarnessToolCall.id`)."""
    content: str = ""
    """The result's text."""
    is_error: bool = False
    """The CLI reported the call as failed."""
    usage: HarnessUsage | None = None
    """For a call that ran a sub-agent in the foreground: its last model request's tokens
    (Claude Code reports that request nowhere else)."""


class HarnessModelCall(_Placed):
    """A model request of one of the CLI's sub-agents (the main thread's tokens come whole with
    `done`). A request the CLI writes as several lines is reported once per line: `id` tells."""

    type: Literal["model_call"] = "model_call"
    id: str
    """The CLI's id for the model's message."""
    usage: HarnessUsage = Field(default_factory=HarnessUsage)
    """Its tokens as the CLI reports them with the message (Claude Code: every prompt token,
    and the output tokens counted when the message began, not its final count)."""


class HarnessSubagent(BaseModel):
    """The CLI started or ended one of its own sub-agents (Claude Code's Task/Agent tool)."""

    model_config = ConfigDict(frozen=True)

    type: Literal["subagent"] = "subagent"
    id: str
    """The CLI's id for the sub-agent (Claude Code's task id): its events carry it as
    `subagent`."""
    status: Literal["running", "done", "error", "cancelled"]
    """`running` when it starts; how it ended otherwise."""
    call: str | None = None
    """The CLI's id for the tool call that started it."""
    parent: str | None = None
    """The `id` of the sub-agent that started it; None when the main thread did."""
    agent: str = ""
    """Its type, as the CLI names it (`general-purpose`)."""
    description: str = ""
    """The short description the model gave the task."""
    prompt: str = ""
    """The task the model gave it."""
    background: bool = False
    """It runs in the background: the call that started it returned at once."""
    text: str = ""
    """When it ended: its answer as the CLI reported it, or why it failed."""


class HarnessDone(BaseModel):
    """The run finished with an answer. Terminal: the first terminal event of a run wins."""

    model_config = ConfigDict(frozen=True)

    type: Literal["done"] = "done"
    content: str
    """The final answer. Empty when the CLI reports none; the runtime then fills in the text."""
    usage: HarnessUsage = Field(default_factory=HarnessUsage)
    """Tokens used by the run; a CLI that reports its sub-agents' tokens apart (Claude Code)
    counts only its main thread's here."""
    session_id: str | None = None
    """The CLI's id for its conversation (Claude's session, Codex's thread), to resume it."""
    cost_usd: float | None = None
    """What the CLI says the run cost, in US dollars (list price), when it says."""
    turns: int | None = None
    """How many model turns the CLI took, when it says."""
    duration_ms: int | None = None
    """How long the CLI says the run took, in milliseconds."""
    permission_denials: list[dict[str, Any]] = Field(default_factory=list)
    """Tool calls the CLI's own permission rules refused, as it reported them."""


class HarnessError(BaseModel):
    """The CLI (or the runtime watching it) reported an error."""

    model_config = ConfigDict(frozen=True)

    type: Literal["error"] = "error"
    message: str
    """What went wrong, in the CLI's words or the runtime's."""
    fatal: bool = True
    """True ends the run (a terminal event); False is a warning and the run goes on."""


class HarnessRetry(BaseModel):
    """The CLI is retrying a failed model request. Not terminal: the run goes on."""

    model_config = ConfigDict(frozen=True)

    type: Literal["retry"] = "retry"
    attempt: int
    """Which retry this is, from 1."""
    status: int | None = None
    """The HTTP status that failed, when there was one."""
    error: str = ""
    """The failure, in the CLI's words."""
    delay: float = 0.0
    """Seconds the CLI waits before the retry."""


class HarnessPermissionDenied(BaseModel):
    """The CLI's own permission rules refused a tool call. Not terminal: the model hears why."""

    model_config = ConfigDict(frozen=True)

    type: Literal["permission_denied"] = "permission_denied"
    name: str
    """The refused tool's name."""
    reason: str = ""
    """Why, in the CLI's words."""
    id: str | None = None
    """The CLI's id for the refused call."""


class HarnessSession(BaseModel):
    """The CLI named its conversation: a later task may resume it."""

    model_config = ConfigDict(frozen=True)

    type: Literal["session"] = "session"
    session_id: str
    """Claude's session id, Codex's thread id."""


HarnessEvent = Annotated[
    HarnessText
    | HarnessReasoning
    | HarnessToolCall
    | HarnessToolResult
    | HarnessModelCall
    | HarnessSubagent
    | HarnessDone
    | HarnessError
    | HarnessRetry
    | HarnessPermissionDenied
    | HarnessSession,
    Field(discriminator="type"),
]
"""Any harness event; `type` tells them apart."""

HarnessEventAdapter: TypeAdapter[HarnessEvent] = TypeAdapter(HarnessEvent)
"""(De)serialises a `HarnessEvent` to and from JSON: `HarnessEventAdapter.validate_json(data)`."""
