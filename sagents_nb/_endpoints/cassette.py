"""Cassettes: record a real endpoint's exchanges to a file, replay them offline. No secrets written.

The conventions are VCR's: a record mode says when to replay and when to record, a request is
served only by a recorded exchange that matches it (method, URL and body by default), and each
recorded exchange is played once.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from .._base.checks import check_instance, check_items, check_path, check_str, is_str, refuse
from .._base.errors import CassetteMismatch, ConfigurationError
from .openai import LLM

FORMAT = "sagents_nb-cassette/2"
READABLE = frozenset({"sagents_nb-cassette/1", FORMAT})
MODES = {
    "once": "replay if the cassette exists, else record every exchange",
    "new_episodes": "replay what matches, record (append) what does not",
    "all": "never replay: record every exchange, replacing the cassette's earlier ones",
    "none": "replay only: a request with no match is an error",
}
MATCH_ON = ("method", "url", "body")


def _request_path(entry: dict[str, Any]) -> str | None:
    url = entry.get("url")
    return None if url is None else urlsplit(url).path


MATCHERS: dict[str, Callable[[dict[str, Any], dict[str, Any]], bool]] = {
    "method": lambda recorded, sent: recorded.get("method", "POST") == sent["method"],
    # a version-1 cassette kept no URL: any URL matches it
    "url": lambda recorded, sent: recorded.get("url") in (None, sent["url"]),
    "path": lambda recorded, sent: _request_path(recorded) in (None, _request_path(sent)),
    "body": lambda recorded, sent: recorded["request"] == sent["request"],
}


class Cassette:
    """The exchanges of one cassette file, which of them were played, and the file's writer."""

    def __init__(self, path: Path, mode: str, match_on: tuple[str, ...]) -> None:
        self.path = path
        self.mode = mode
        self.match_on = match_on
        self.header: dict[str, Any] = {}
        self.entries: list[dict[str, Any]] = []
        if mode == "none" and not path.exists():
            raise ConfigurationError(
                f"no cassette at {path} to replay (mode 'none'); record one with "
                f"sn.record(llm, {str(path)!r})"
            )
        if path.exists() and mode != "all":
            self.header, self.entries = load(path)
        self.played = [False] * len(self.entries)
        self.replaying = mode == "none" or (mode in ("once", "new_episodes") and path.exists())
        self.recording = mode in ("all", "new_episodes") or not self.replaying
        self._fresh = mode == "all" or not path.exists()  # the first write starts the file

    def take(self, sent: dict[str, Any]) -> dict[str, Any] | None:
        """The first unplayed recorded exchange matching `sent` (marked played), or None."""
        if not self.replaying:
            return None
        for index, entry in enumerate(self.entries):
            if not self.played[index] and self._matches(entry, sent):
                self.played[index] = True
                return entry
        return None

    def _matches(self, entry: dict[str, Any], sent: dict[str, Any]) -> bool:
        return all(MATCHERS[name](entry, sent) for name in self.match_on)

    def write(self, entry: dict[str, Any], header: dict[str, Any]) -> None:
        """Add `entry` to the file at once (a crash keeps what was recorded)."""
        if self._fresh:
            self.path.write_text(json.dumps({"format": FORMAT, **header}) + "\n", encoding="utf-8")
            self._fresh = False
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def mismatch(self, sent: dict[str, Any]) -> CassetteMismatch:
        """The error for a request nothing recorded answers, naming it and the nearest entry."""
        request = f"{sent['method']} {sent['url']} ({describe_body(sent['request'])})"
        if not self.entries:
            nearest = "it holds no exchange"
        else:
            index, failed = min(
                (
                    (i, [m for m in self.match_on if not MATCHERS[m](e, sent)])
                    for i, e in enumerate(self.entries)
                ),
                key=lambda pair: len(pair[1]),
            )
            entry = self.entries[index]
            if not failed:
                nearest = f"exchange {index + 1} matches but was already played"
            elif "body" in failed:
                where = first_difference(entry["request"], sent["request"])
                nearest = f"the nearest, exchange {index + 1}, differs in the body at {where}"
            else:
                nearest = f"the nearest, exchange {index + 1}, differs in {', '.join(failed)}"
        return CassetteMismatch(
            f"cassette {self.path} (mode {self.mode!r}, matching on {', '.join(self.match_on)}) "
            f"has no unplayed exchange for {request}; of its {len(self.entries)} exchange(s) "
            f"{nearest}. To record what changed: sn.record(llm, {str(self.path)!r}, "
            "mode='new_episodes') adds it, mode='all' records the cassette again"
        )


class _CassetteTransport(httpx.AsyncBaseTransport):
    def __init__(
        self,
        cassette: Cassette,
        endpoint: LLM,
        inner: httpx.AsyncBaseTransport | None,
    ) -> None:
        self.cassette = cassette
        self.endpoint = endpoint
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        redact = self.endpoint.redact
        raw = redact((await request.aread()).decode(errors="replace"))
        try:
            body: Any = json.loads(raw)
        except json.JSONDecodeError:
            body = raw
        sent = {"method": request.method, "url": redact(str(request.url)), "request": body}
        entry = self.cassette.take(sent)
        if entry is not None:
            return httpx.Response(
                entry["status"],
                content=entry["body"].encode(),
                headers={"content-type": entry["content_type"]},
            )
        if not self.cassette.recording or self.inner is None:
            raise self.cassette.mismatch(sent)
        response = await self.inner.handle_async_request(request)
        content = await response.aread()
        entry = {
            **sent,
            "status": response.status_code,
            "content_type": response.headers.get("content-type", "application/json"),
            "body": redact(content.decode(errors="replace")),
        }
        self.cassette.write(
            entry, {"model": self.endpoint.model, "base_url": self.endpoint.base_url}
        )
        return httpx.Response(response.status_code, headers=response.headers, content=content)

    def fresh(self) -> _CassetteTransport:
        """The same cassette with nothing played yet (`sn.compare` gives each variant one)."""
        replayed = copy.copy(self.cassette)
        replayed.played = [False] * len(replayed.entries)
        return _CassetteTransport(replayed, self.endpoint, self.inner)

    async def aclose(self) -> None:
        if self.inner is not None:
            await self.inner.aclose()


class CassetteLLM(LLM):
    """An endpoint that answers from (and may record to) a cassette."""

    cassette: Cassette
    recorded: LLM | None = None
    """The endpoint recorded, kept alive with its transport, which `record` takes (a mock's
    transport reaches its endpoint by a weak reference)."""

    @property
    def label(self) -> str:
        return f"cassette:{self.cassette.path.name} ({self.cassette.mode})"


def record(
    endpoint: LLM,
    path: str | Path,
    *,
    mode: str = "once",
    match_on: Iterable[str] = MATCH_ON,
) -> LLM:
    """An endpoint that replays and records `endpoint`'s exchanges in the cassette at `path`.

    Args:
        endpoint: the endpoint to record (its transport, or the network).
        path: the cassette file (JSON lines).
        mode: `"once"` (replay if the cassette exists, else record), `"new_episodes"` (replay
            what matches, append what does not), `"all"` (record everything again, replacing
            the earlier exchanges) or `"none"` (replay only).
        match_on: what a recorded request must share with a new one to answer it: any of
            `"method"`, `"url"`, `"path"` (the URL's path only) and `"body"` (the JSON body).

    The API key is never written: headers are not recorded and the key is redacted from bodies.
    A request nothing recorded answers (when not recording) raises `sn.CassetteMismatch`.
    """
    check_instance("endpoint", endpoint, LLM, where="sn.record(...)", accepted=ENDPOINT)
    check_path("path", path, where="sn.record(...)")
    cassette = Cassette(Path(path), _mode(mode), _match_on(match_on))
    recorder = CassetteLLM(
        endpoint._root,
        api_key=endpoint._api_key,
        model=endpoint.model,
        timeout=endpoint.timeout,
        read_timeout=endpoint.read_timeout,
        retries=endpoint.retries,
        backoff=endpoint.backoff,
        max_retry_time=endpoint.max_retry_time,
    )
    recorder.cassette, recorder.recorded = cassette, endpoint
    inner = endpoint._transport or httpx.AsyncHTTPTransport()
    recorder._transport = _CassetteTransport(cassette, recorder, inner)
    return recorder


def replay(
    path: str | Path, *, model: str | None = None, match_on: Iterable[str] = MATCH_ON
) -> LLM:
    """An offline endpoint serving the exchanges of the cassette at `path` (record mode `none`).

    A request is answered by the first unplayed recorded exchange that matches it (see
    `sn.record`'s `match_on`); one with no match raises `sn.CassetteMismatch`, naming it.
    """
    path = Path(check_path("path", path, where="sn.replay(...)"))
    check_str("model", model, where="sn.replay(...)", optional=True)
    if not path.exists():
        raise ConfigurationError(
            f"no cassette at {path}; record one with sn.record(llm, {str(path)!r})"
        )
    cassette = Cassette(path, "none", _match_on(match_on))
    endpoint = CassetteLLM(
        cassette.header.get("base_url") or "http://cassette.local/v1",
        api_key="",
        model=model or cassette.header.get("model"),
        retries=0,
    )
    endpoint.cassette = cassette
    endpoint._transport = _CassetteTransport(cassette, endpoint, None)
    return endpoint


ENDPOINT = "an endpoint (sn.LLM(...), sn.mock_llm(...))"


def _mode(mode: str) -> str:
    if not isinstance(mode, str):
        refuse("mode", mode, f"one of {', '.join(map(repr, MODES))}", where="sn.record(...)")
    if mode not in MODES:
        known = "; ".join(f"{name!r}: {what}" for name, what in MODES.items())
        raise ConfigurationError(f"unknown cassette mode {mode!r}; the modes are {known}")
    return mode


def _match_on(match_on: Iterable[str]) -> tuple[str, ...]:
    names = (
        (match_on,)
        if isinstance(match_on, str)
        else tuple(
            check_items("match_on", match_on, is_str, where="sn.record/replay", accepted="a str")
        )
    )
    unknown = [n for n in names if n not in MATCHERS]
    if unknown or not names:
        raise ConfigurationError(
            f"cannot match cassette requests on {unknown or 'nothing'}; "
            f"match_on takes some of {', '.join(MATCHERS)}"
        )
    return names


def load(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A cassette's header and exchanges, each checked: a bad line is named, with what is wrong."""
    fix = "fix that line or record the cassette again with sn.record(llm, path, mode='all')"
    # one exchange a line; not `splitlines`, which also breaks at U+2028 inside a recorded text
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    try:
        header = json.loads(lines[0]) if lines else None
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("format") not in READABLE:
        found = header.get("format") if isinstance(header, dict) else None
        raise ConfigurationError(
            f"{path} is not a sagents_nb cassette (format {found!r}, expected {FORMAT!r})"
        )
    entries = []
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"{path} line {number} is not JSON ({exc}); {fix}") from None
        problem = entry_problem(entry)
        if problem:
            raise ConfigurationError(f"{path} line {number}: {problem}; {fix}")
        entries.append(entry)
    return header, entries


def entry_problem(entry: Any) -> str | None:
    """What makes `entry` unusable as a recorded exchange, or None."""
    if not isinstance(entry, dict):
        return f"an exchange is a JSON object, not {type(entry).__name__}"
    status = entry.get("status")
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        return f"'status' must be an HTTP status number, not {status!r}"
    if "request" not in entry:
        return "the exchange has no 'request' (the JSON body sent)"
    for name, required in (("body", True), ("content_type", True), ("method", False)):
        value = entry.get(name)
        if not isinstance(value, str) and (required or value is not None):
            return f"{name!r} must be a string, not {value!r:.40}"
    url = entry.get("url")
    if url is not None and not (isinstance(url, str) and url.startswith(("http://", "https://"))):
        return f"'url' must be an http(s) URL, not {url!r:.60}"
    return None


def describe_body(body: Any) -> str:
    """A short account of a request body: its model, messages and the last one's text."""
    if not isinstance(body, dict):
        return f"body {str(body)[:60]!r}"
    messages = body.get("messages")
    if not isinstance(messages, list):
        messages = []
    text = f"model {body.get('model')!r}, {len(messages)} message(s)"
    if messages and isinstance(messages[-1], dict):
        last = messages[-1]
        content = str(last.get("content") or "")
        text += f", the last from {last.get('role')!r}: {content[:60]!r}"
    return text


def first_difference(recorded: Any, sent: Any, where: str = "") -> str:
    """Where two JSON values first differ, with both values, e.g. `messages[1].content`."""
    if isinstance(recorded, dict) and isinstance(sent, dict):
        for key in sorted(recorded.keys() | sent.keys(), key=str):
            if recorded.get(key, _MISSING) != sent.get(key, _MISSING):
                return first_difference(
                    recorded.get(key, _MISSING), sent.get(key, _MISSING), f"{where}.{key}"
                )
    if isinstance(recorded, list) and isinstance(sent, list):
        for i, (a, b) in enumerate(zip(recorded, sent, strict=False)):
            if a != b:
                return first_difference(a, b, f"{where}[{i}]")
        if len(recorded) != len(sent):
            return f"{where or 'the body'}: {len(recorded)} item(s) recorded, {len(sent)} sent"
    return f"{where.lstrip('.') or 'the body'}: recorded {_short(recorded)}, sent {_short(sent)}"


_MISSING: Any = type("Missing", (), {"__repr__": lambda self: "nothing"})()


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "…"
