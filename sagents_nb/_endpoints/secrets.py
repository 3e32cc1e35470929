"""API keys: refused when they cannot be a header value, and cut out of any text shown or stored."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import unquote, urlsplit

from .._base.errors import ConfigurationError

MASK = "***"
RUN = 8
"""A piece of a key this long is masked too where text is only shown (excerpts, stream logs)."""


def checked_key(key: str, source: str) -> str:
    """`key` if it can travel in an `Authorization` header; else a `ConfigurationError`.

    The error says what is wrong and where, never the key: a key with a trailing newline (pasted
    from a file) would otherwise fail every request with an httpx error that quotes the header.
    """
    for position, char in enumerate(key):
        if "!" <= char <= "~":
            continue
        if char in "\r\n":
            what = "a line break"
        elif char.isspace():
            what = "whitespace"
        elif char.isprintable():
            what = "a non-ASCII character"
        else:
            what = "a control character"
        raise ConfigurationError(
            f"the API key from {source} contains {what} (at character {position + 1} of "
            f"{len(key)}); API keys are printable ASCII: strip it, e.g. "
            "Path(...).read_text().strip()"
        )
    return key


class Redactor:
    """Replaces keys, and the forms JSON and `repr` give them, by `***`.

    Apply it to the whole text before cutting an excerpt, and to the formatted message after:
    a key cut in two by an excerpt can no longer be found.
    """

    def __init__(self, *keys: str) -> None:
        forms = {
            form
            for key in keys
            if len(key) >= 4
            for form in (key, json.dumps(key)[1:-1], repr(key)[1:-1])
        }
        self.forms = tuple(sorted(forms, key=len, reverse=True))
        self._runs = frozenset(
            form[i : i + RUN] for form in self.forms for i in range(len(form) - RUN + 1)
        )

    def __call__(self, text: str) -> str:
        for form in self.forms:
            if form in text:
                text = text.replace(form, MASK)
        return text

    def open_tail(self, text: str) -> int:
        """How many last characters of `text` could be the start of a key still to come.

        A stream holds them back: the model may spell a key over several chunks.
        """
        for size in range(min(len(text), max(map(len, self.forms), default=1) - 1), 0, -1):
            tail = text[-size:]
            if any(form.startswith(tail) for form in self.forms):
                return size
        return 0

    def scrub(self, text: str) -> str:
        """`text` redacted, and every run of `RUN` or more of a key's characters masked too:
        the pieces of a key a stream split, or a server's half-masked echo of it."""
        text = self(text)
        hits = [run for run in self._runs if run in text]
        if not hits:
            return text
        masked = bytearray(len(text))
        for run in hits:
            start = text.find(run)
            while start != -1:
                masked[start : start + RUN] = b"\x01" * RUN
                start = text.find(run, start + 1)
        out, end = [], 0
        for span in re.finditer(rb"\x01+", masked):
            out += [text[end : span.start()], MASK]
            end = span.end()
        out.append(text[end:])
        return "".join(out)

    def scrub_values(self, value: Any) -> Any:
        """`value` (parsed JSON) with every string scrubbed."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            return {k: self.scrub_values(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.scrub_values(v) for v in value]
        return value

    def excerpt(self, text: str, limit: int) -> str:
        """`text` redacted, cut to `limit` characters, and scrubbed.

        The cut is made after the whole key is masked, and on a window longer than `limit` by a
        key's length, so a piece of a key that straddles the cut is still found.
        """
        text = self(text)
        longest = max(map(len, self.forms), default=0)
        if len(text) > limit + longest:
            text = text[: limit + longest]
        text = self.scrub(text)
        return text if len(text) <= limit else text[:limit] + "…"


_KEY_SHAPED = re.compile(r"(?=[^/]*\d)(?=[^/]*[A-Za-z])[A-Za-z0-9_.~-]{20,}")


def masked_path(path: str) -> str:
    """A URL path with each segment that looks like a key (20 or more URL characters, letters
    and digits both) masked: a client may put its key in the path, where no header names it."""
    return "/".join(MASK if _KEY_SHAPED.fullmatch(part) else part for part in path.split("/"))


def shown_url(url: str) -> tuple[str, tuple[str, ...]]:
    """`url` with its userinfo (`user:key@`) masked, and the secrets it held.

    The password is a secret; so is a user name with no password (`https://KEY@host`, how some
    gateways take a token). A user name beside a password is only masked in the URL.
    """
    if "@" not in url:
        return url, ()
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, ()
    userinfo, _, host = parts.netloc.rpartition("@")
    user, colon, password = userinfo.partition(":")
    secrets = (password, unquote(password)) if colon else (user, unquote(user))
    shown = parts._replace(netloc=f"{MASK}@{host}").geturl()
    return shown, tuple(s for s in secrets if s)
