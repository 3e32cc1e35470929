"""Connection strings: which `store=` strings name a PostgreSQL database, and how they are shown
(with any password as `***`). Plain text work: psycopg is not needed to tell or to show one."""

from __future__ import annotations

import re

MISSING_PSYCOPG = (
    "PostgresStore needs psycopg 3, an optional extra: pip install 'sagents_nb[postgres]'"
)

_URL = re.compile(r"(?i)postgres(?:ql)?://")
_USER_PASSWORD = re.compile(r"(?i)^(postgres(?:ql)?://[^:@/?#]*:)[^@]*(@)")
"""A URL's `user:password@` (up to the last `@`: a password with a bare `@` is still hidden)."""
_QUERY_PASSWORD = re.compile(r"(?i)([?&]password=)[^&#]*")
_KEY_PASSWORD = re.compile(r"(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)")


def is_postgres_url(target: str) -> bool:
    """Whether `target` is a `postgresql://` (or `postgres://`) URL."""
    return _URL.match(target) is not None


def redacted(conninfo: str) -> str:
    """`conninfo` (a URL or libpq's `key=value` words) with its password shown as `***`."""
    if is_postgres_url(conninfo):
        shown = _USER_PASSWORD.sub(r"\1***\2", conninfo)
        return _QUERY_PASSWORD.sub(r"\1***", shown)
    return _KEY_PASSWORD.sub(r"\1***", conninfo)


def scrubbed(text: str, conninfo: str, password: str | None) -> str:
    """`text` (e.g. a driver's error) with `conninfo` and `password` nowhere in it."""
    text = text.replace(conninfo, redacted(conninfo))
    return text.replace(password, "***") if password else text
