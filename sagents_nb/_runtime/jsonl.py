"""One session as JSON lines: a header, then every event, message, node snapshot and task."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._base.errors import StoreError
from .._store.protocol import EventRow, MessageRow, NodeRow, SessionRows, StoredSession, TaskRow
from .restore import read_histories, require_journal, restore

if TYPE_CHECKING:
    from .._store.protocol import Store
    from .agent import Agent
    from .session import Session

FORMAT = "sagents_nb.session"
SCHEMA = 2
"""The export's own version: its records are a store's rows, each text whole. (The file store's
schema 3 keeps long texts apart; an export carries them in their rows, as schema 2 did, so
exports go on reading in either direction.)"""


def export_jsonl(session: Session, path: str | os.PathLike[str]) -> Path:
    """Write the session's whole record (every version, so forks still work) to `path`."""
    journal = require_journal(session, "export_jsonl")
    journal.flush()
    rows = journal.store.load(session.id)
    info = rows.info
    lines: list[dict[str, Any]] = [
        {
            "format": FORMAT,
            "schema": SCHEMA,
            "session": {
                "id": info.id,
                "agent": info.agent,
                "created": info.created,
                "parent": info.parent,
                "fork_seq": info.fork_seq,
            },
        }
    ]
    lines.extend(
        {"record": "event", "seq": e.seq, "run": e.run, "body": json.loads(e.body)}
        for e in rows.events
    )
    lines.extend(
        {
            "record": "message",
            "n": m.n,
            "path": m.path,
            "transcript": m.transcript,
            "added": m.added,
            "removed": m.removed,
            "body": json.loads(m.body),
        }
        for m in rows.messages
    )
    lines.extend(
        {
            "record": "node",
            "path": n.path,
            "part": n.part,
            "seq": n.seq,
            "body": json.loads(n.body),
        }
        for n in rows.nodes
    )
    lines.extend({"record": "task", **asdict(t)} for t in rows.tasks)
    target = Path(path)
    with target.open("w", encoding="utf-8") as file:
        for line in lines:
            file.write(_json_line(line))
    return target


def import_jsonl(
    cls: type[Session],
    path: str | os.PathLike[str],
    store: Store,
    agent: Agent,
    session_id: str | None,
    options: dict[str, Any],
) -> Session:
    """Add the exported session at `path` to `store` and open it."""
    rows = read_jsonl(Path(path))
    if session_id is not None:
        rows.info = replace(rows.info, id=session_id)
    # read back whole first (as Session.open would), so a damaged export writes nothing
    session = restore(cls(agent, session_id=rows.info.id, **options), store, rows)
    read_histories(session)
    store.create(rows)
    return session


def read_jsonl(path: Path) -> SessionRows:
    """The rows of an export made by `export_jsonl`."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise StoreError(f"cannot read {path} ({exc}); check the path of the export") from exc
    # LF only ends a record: `str.splitlines` also splits at U+2028, U+0085 and other breaks
    # an older export holds raw in its texts
    lines = text.split("\n")
    try:
        header = json.loads(lines[0]) if lines else {}
    except json.JSONDecodeError:
        header = {}
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise StoreError(
            f"{path} is not a sagents_nb session export (its first line should name the format "
            f"{FORMAT!r}); pass a file written by session.export_jsonl(...)"
        )
    if header.get("schema", 0) > SCHEMA:
        raise StoreError(
            f"{path} was exported by a newer sagents_nb (schema {header['schema']}; this version "
            f"reads {SCHEMA}); upgrade sagents_nb to import it"
        )
    rows = SessionRows(StoredSession(**header["session"]))
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue  # the last line's end, or a blank line: no record
        try:
            _add_record(rows, json.loads(line))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise StoreError(
                f"{path} line {number} is not a valid record ({type(exc).__name__}: {exc}); "
                "the export is damaged, export the session again"
            ) from exc
    rows.info = replace(rows.info, last_seq=rows.events[-1].seq if rows.events else 0)
    return rows


def _add_record(rows: SessionRows, record: dict[str, Any]) -> None:
    kind = record.pop("record")
    if kind == "event":
        body = record["body"]
        rows.events.append(
            EventRow(record["seq"], record["run"], body["type"], body["path"], _dump(body))
        )
    elif kind == "message":
        rows.messages.append(
            MessageRow(
                record["n"],
                record["path"],
                record["transcript"],
                record["added"],
                record["removed"],
                _dump(record["body"]),
            )
        )
    elif kind == "node":
        rows.nodes.append(
            NodeRow(record["path"], record["part"], record["seq"], _dump(record["body"]))
        )
    elif kind == "task":
        rows.tasks.append(TaskRow(**record))
    else:
        raise KeyError(f"unknown record {kind!r}")


def _json_line(record: dict[str, Any]) -> str:
    """One record as a line: the line breaks JSON leaves raw (U+0085, U+2028, U+2029) escaped,
    so a reader splitting at any line break still finds every record whole."""
    line = json.dumps(record, ensure_ascii=False)
    return line.translate({0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}) + "\n"


def _dump(body: Any) -> str:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))
