"""Cassettes: record a real endpoint's exchanges to a file, replay them offline. No secrets written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from .._base.errors import ConfigurationError
from .openai import LLM

FORMAT = "sagents_nb-cassette/1"


class _RecordingTransport(httpx.AsyncBaseTransport):
    def __init__(self, inner: httpx.AsyncBaseTransport, path: Path, endpoint: LLM) -> None:
        self.inner = inner
        self.path = path
        self.endpoint = endpoint
        path.write_text(json.dumps({"format": FORMAT, "model": endpoint.model}) + "\n")

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        response = await self.inner.handle_async_request(request)
        content = await response.aread()
        redact = self.endpoint.redact
        entry = {
            "request": json.loads(redact(body.decode())),
            "status": response.status_code,
            "content_type": response.headers.get("content-type", "application/json"),
            "body": redact(content.decode(errors="replace")),
        }
        with self.path.open("a") as f:
            f.write(json.dumps(entry) + "\n")
        return httpx.Response(response.status_code, headers=response.headers, content=content)

    async def aclose(self) -> None:
        await self.inner.aclose()


def record(endpoint: LLM, path: str | Path) -> LLM:
    """An endpoint that talks to `endpoint` and appends every exchange to the cassette at `path`.

    The API key is never written: headers are not recorded and the key is redacted from bodies.
    """
    inner = endpoint._transport or httpx.AsyncHTTPTransport()
    recorder = LLM(
        endpoint.base_url,
        api_key=endpoint._api_key,
        model=endpoint.model,
        timeout=endpoint.timeout,
        retries=endpoint.retries,
    )
    recorder._transport = _RecordingTransport(inner, Path(path), recorder)
    return recorder


class _ReplayTransport(httpx.AsyncBaseTransport):
    def __init__(self, entries: list[dict[str, Any]], path: Path) -> None:
        self.entries = entries
        self.used = [False] * len(entries)
        self.path = path

    def fresh(self) -> _ReplayTransport:
        """The same cassette with nothing served yet."""
        return _ReplayTransport(self.entries, self.path)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(await request.aread())
        index = next(
            (i for i, e in enumerate(self.entries) if not self.used[i] and e["request"] == body),
            None,
        )
        if index is None:
            index = next((i for i, used in enumerate(self.used) if not used), None)
        if index is None:
            return httpx.Response(
                400,
                json={
                    "error": {
                        "message": (
                            f"cassette {self.path} has no exchange left ({len(self.entries)} recorded); "
                            "record it again with sn.record(...)"
                        )
                    }
                },
            )
        self.used[index] = True
        entry = self.entries[index]
        return httpx.Response(
            entry["status"],
            content=entry["body"].encode(),
            headers={"content-type": entry["content_type"]},
        )


def replay(path: str | Path, *, model: str | None = None) -> LLM:
    """An offline endpoint serving the exchanges of the cassette at `path`.

    Requests are matched to recorded ones by their JSON body, else served in recorded order.
    """
    path = Path(path)
    if not path.exists():
        raise ConfigurationError(
            f"no cassette at {path}; record one with sn.record(llm, {str(path)!r})"
        )
    lines = path.read_text().splitlines()
    try:
        header = json.loads(lines[0]) if lines else {}
        entries = [json.loads(line) for line in lines[1:] if line.strip()]
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{path} is not a sagents_nb cassette ({exc})") from None
    if header.get("format") != FORMAT:
        raise ConfigurationError(
            f"{path} is not a sagents_nb cassette (format "
            f"{header.get('format')!r}, expected {FORMAT!r})"
        )
    return LLM(
        "http://cassette.local/v1",
        api_key="",
        model=model or header.get("model"),
        transport=_ReplayTransport(entries, path),
        retries=0,
    )
