"""API keys: refused when they cannot be a header value, and cut out of any text shown or stored."""

from __future__ import annotations

import json

from .._base.errors import ConfigurationError

MASK = "***"


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
    """Replaces a key, and the forms JSON and `repr` give it, by `***`.

    Apply it to the whole text before cutting an excerpt, and to the formatted message after:
    a key cut in two by an excerpt can no longer be found.
    """

    def __init__(self, key: str) -> None:
        forms = {key, json.dumps(key)[1:-1], repr(key)[1:-1]} if len(key) >= 4 else set()
        self.forms = tuple(sorted(forms, key=len, reverse=True))

    def __call__(self, text: str) -> str:
        for form in self.forms:
            if form in text:
                text = text.replace(form, MASK)
        return text

    def excerpt(self, text: str, limit: int) -> str:
        """The redacted `text`, cut to `limit` characters."""
        text = self(text)
        return text if len(text) <= limit else text[:limit] + "…"
