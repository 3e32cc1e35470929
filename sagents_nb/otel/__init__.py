"""OpenTelemetry traces of a session, by the GenAI semantic conventions (`pip install 'sagents_nb[otel]'`).

`sn.otel.instrument(session_or_agent, tracer_provider=...)` turns a session's events into spans
as they happen; `sn.otel.export(session, tracer_provider=... or endpoint=...)` does the same after
the fact, from `session.events`. Either way each span starts and ends at its events' own times:
`invoke_agent {agent}` per node (a child's under its parent's `execute_tool task`), `chat {model}`
per model call with its token usage, `execute_tool {tool}` per tool call, errors as the span's
status and `error.type`, `gen_ai.conversation.id` the session's id, and OpenInference's span kinds
(AGENT, LLM, TOOL) beside them for Phoenix. Message content is left out unless
`capture_content=True`; API keys are masked in everything a span carries, always.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

try:
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "sagents_nb.otel needs OpenTelemetry's SDK and OTLP exporter: pip install 'sagents_nb[otel]'"
    ) from exc

from .._base.errors import ConfigurationError
from .._endpoints.openai import LLM
from ._spans import Spans

if TYPE_CHECKING:
    from .._runtime.agent import Agent
    from .._runtime.session import Session

SERVICE = "sagents_nb"
_LIVE: weakref.WeakKeyDictionary[Session, Callable[[], None]] = weakref.WeakKeyDictionary()


def instrument(
    session_or_agent: Session | Agent,
    *,
    tracer_provider: Any = None,
    endpoint: str | None = None,
    capture_content: bool = False,
    **session: Any,
) -> Session:
    """Send the session's spans as its events happen, and return the session.

    Spans are made of the events from now on: instrument before sending (or `export` what
    already happened). Given an `sn.Agent`, a new `sn.Session` is made for it (`**session` goes to `sn.Session`).
    Spans go to `tracer_provider` (an OpenTelemetry SDK `TracerProvider`), or to an OTLP/HTTP
    `endpoint` (`http://host:4318/v1/traces`; sent in batches, the last when `uninstrument`
    is called), or else to the global provider. Instrumenting a session twice changes nothing;
    `uninstrument(session)` stops.
    """
    from .._runtime.agent import Agent
    from .._runtime.session import Session

    if isinstance(session_or_agent, Agent):
        target = Session(session_or_agent, **session)
    elif isinstance(session_or_agent, Session):
        if session:
            raise ConfigurationError(
                f"sn.otel.instrument() got session options {sorted(session)} with a session: "
                "they are for a new session made for an agent (pass the sn.Agent instead)"
            )
        target = session_or_agent
    else:
        raise ConfigurationError(
            "sn.otel.instrument() takes an sn.Session or an sn.Agent, not "
            f"{type(session_or_agent).__name__}"
        )
    if target in _LIVE:
        return target
    provider, owned = _provider(tracer_provider, endpoint, "instrument")
    spans = _spans_of(target, provider, capture_content)

    unsubscribe = target.bus.subscribe(spans.feed)  # on the loop: spans start and end in step

    def stop() -> None:
        unsubscribe()
        if owned:
            provider.shutdown()

    _LIVE[target] = stop
    return target


def uninstrument(session: Session) -> None:
    """Stop sending the session's spans (spans still open stay unsent)."""
    stop = _LIVE.pop(session, None)
    if stop is not None:
        stop()


def export(
    session: Session,
    *,
    tracer_provider: Any = None,
    endpoint: str | None = None,
    capture_content: bool = False,
) -> int:
    """Send the spans of the session's events so far, at the events' own times; returns how many
    events were read. Spans still open at the last event (a paused run) end there, marked
    `sagents_nb.unfinished`. Where they go: as for `instrument`; the spans are flushed before it
    returns."""
    provider, owned = _provider(tracer_provider, endpoint, "export")
    spans = _spans_of(session, provider, capture_content)
    count = 0
    for event in session.events:
        spans.feed(event)
        count += 1
    spans.end_all()
    flush = getattr(provider, "force_flush", None)
    if flush is not None:
        flush()
    if owned:
        provider.shutdown()
    return count


def _provider(tracer_provider: Any, endpoint: str | None, door: str) -> tuple[Any, bool]:
    """The provider the spans go to, and whether this module made it (and so shuts it down)."""
    if tracer_provider is not None and endpoint is not None:
        raise ConfigurationError(
            f"sn.otel.{door}() takes tracer_provider= or endpoint=, not both: an endpoint is "
            "for a provider made here"
        )
    if endpoint is None:
        return (tracer_provider or trace.get_tracer_provider()), False
    if not isinstance(endpoint, str) or not endpoint.startswith(("http://", "https://")):
        raise ConfigurationError(
            f"sn.otel.{door}(endpoint=...) takes an OTLP/HTTP URL such as "
            f"'http://127.0.0.1:4318/v1/traces', not {endpoint!r}"
        )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return provider, True


def _spans_of(session: Session, provider: Any, capture_content: bool) -> Spans:
    tracer = provider.get_tracer("sagents_nb.otel")
    return Spans(tracer, session.id, capture_content=capture_content, redact=_redactor(session))


def _redactor(session: Session) -> Callable[[str], str]:
    """Masks the keys of the session's endpoint and of every agent's own endpoint."""
    llms = {id(session.llm): session.llm}
    agents, seen = [session.agent], set()
    while agents:
        agent = agents.pop()
        if id(agent) in seen:
            continue
        seen.add(id(agent))
        if isinstance(agent.model, LLM):
            llms[id(agent.model)] = agent.model
        agents.extend(agent.members())
    redactors = [llm._redact for llm in llms.values() if llm._redact.forms]

    def redact(text: str) -> str:
        for redactor in redactors:
            text = redactor.scrub(text)
        return text

    return redact


__all__ = ["export", "instrument", "uninstrument"]
