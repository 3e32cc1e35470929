"""A real PostgreSQL server for the tests (and the benchmark), on loopback, started once per run.

It is Debian's `postgresql` package (`.ci/run` installs it): a cluster is made with `initdb` in a
temporary folder and `pg_ctl` starts it on 127.0.0.1 at a free port, its socket in the same
folder; it is stopped by its PID at the end and the folder removed. PostgreSQL refuses to run as
root, so as root it runs as the `postgres` user the package creates. Without PostgreSQL (or
psycopg) the tests that need it skip, saying why; in CI (`CI=true`) that is a failure.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from sagents_nb.store import PostgresStore

TEST_SETTINGS = ("fsync=off", "synchronous_commit=off", "full_page_writes=off")
"""For the tests: the data is thrown away, so nothing is synced to disk."""

STOP_SECONDS = 30


class Unavailable(Exception):
    """PostgreSQL cannot be started here; the text says why and what to install."""


class PostgresServer:
    """A running cluster: `url()` connects to one of its databases as the superuser `postgres`
    (trusted on loopback), `store()` opens a `PostgresStore` in a schema of its own."""

    def __init__(self, folder: Path, port: int, pid: int) -> None:
        self.folder = folder
        self.port = port
        self.pid = pid
        self._names = itertools.count(1)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def schema(self) -> str:
        """A schema name no store of this run has used."""
        return f"test_{os.getpid()}_{next(self._names)}"

    def store(self, **options: Any) -> PostgresStore:
        """A `PostgresStore` in a new schema of the `postgres` database."""
        from sagents_nb.store import PostgresStore

        options.setdefault("schema", self.schema())
        return PostgresStore(self.url(), **options)

    def database(self) -> str:
        """The URL of a new, empty database (for what reads the default schema: a URL as
        `store=`)."""
        import psycopg

        name = f"db_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def sql(self, query: str, *params: object, url: str | None = None) -> list[tuple[Any, ...]]:
        """Run `query` on a connection of its own (to `url`, else the `postgres` database);
        its rows."""
        import psycopg

        with psycopg.connect(url or self.url(), autocommit=True) as db:
            cursor = db.execute(query, params or None)
            return cursor.fetchall() if cursor.description else []


def find_bindir() -> Path:
    """The folder of `initdb` and `pg_ctl`: `$SAGENTS_PG_BIN`, Debian's newest
    /usr/lib/postgresql/<version>/bin, or PATH."""
    candidates = [os.environ.get("SAGENTS_PG_BIN", "")]
    candidates += sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True
    )
    if found := shutil.which("initdb"):
        candidates.append(str(Path(found).parent))
    for folder in candidates:
        if folder and os.access(os.path.join(folder, "pg_ctl"), os.X_OK):
            return Path(folder)
    raise Unavailable(
        "PostgreSQL is not installed (no initdb/pg_ctl under /usr/lib/postgresql/*/bin or on "
        "PATH); install it, e.g. apt-get install postgresql, or set SAGENTS_PG_BIN"
    )


@contextlib.contextmanager
def running_postgres(settings: tuple[str, ...] = TEST_SETTINGS) -> Iterator[PostgresServer]:
    """A new cluster, running until the block ends (then stopped by PID and deleted)."""
    bindir = find_bindir()
    prefix = _as_user()
    folder = Path(tempfile.mkdtemp(prefix="sagents-pg-"))
    try:
        if prefix:
            shutil.chown(folder, "postgres", "postgres")
        data = folder / "data"
        initdb = [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"]
        _run([*prefix, *initdb, "-E", "UTF8", "--locale=C", "--no-sync"], "initdb")
        server = _start(bindir, prefix, folder, settings)
        try:
            yield server
        finally:
            _stop(server.pid)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _start(
    bindir: Path, prefix: list[str], folder: Path, settings: tuple[str, ...]
) -> PostgresServer:
    """Start the cluster on a free port (another one if a process took it meanwhile)."""
    data = folder / "data"
    for attempt in range(3):
        port = _free_port()
        options = [f"-c listen_addresses=127.0.0.1 -p {port} -k {folder}"]
        options += [f"-c {setting}" for setting in (*settings, "max_connections=200")]
        pg_ctl = [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-w"]
        started = subprocess.run(
            [*prefix, *pg_ctl, "-t", "60", "-o", " ".join(options), "start"],
            capture_output=True,
            text=True,
            check=False,
        )
        if started.returncode == 0:
            pid = int((data / "postmaster.pid").read_text().split()[0])
            return PostgresServer(folder, port, pid)
        log = (folder / "log").read_text(errors="replace") if (folder / "log").exists() else ""
        if "already in use" not in log or attempt == 2:
            raise Unavailable(f"pg_ctl start failed: {started.stderr.strip()}\n{log[-2000:]}")
    raise AssertionError("unreachable")


def _stop(pid: int) -> None:
    """Stop the postmaster by its PID (SIGINT: a fast shutdown), killing it if it lingers."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGINT)
        deadline = time.monotonic() + STOP_SECONDS
        while time.monotonic() < deadline:
            os.kill(pid, 0)  # ProcessLookupError once it is gone
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)


def _as_user() -> list[str]:
    """What runs a command as a user PostgreSQL accepts: nothing, or `runuser` for root."""
    if os.geteuid() != 0:
        return []
    try:
        import pwd

        pwd.getpwnam("postgres")
    except KeyError:
        raise Unavailable(
            "running as root and there is no 'postgres' user to run PostgreSQL as (the Debian "
            "package makes one); create it or run the tests as another user"
        ) from None
    if not shutil.which("runuser"):
        raise Unavailable("running as root and runuser is missing to run PostgreSQL as postgres")
    return ["runuser", "-u", "postgres", "--"]


def _run(command: list[str], what: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise Unavailable(f"{what} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def unavailable(reason: str) -> None:
    """Skip the test saying why; fail it in CI, where PostgreSQL is part of what is tested."""
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The run's PostgreSQL server (started by the first test that asks for it)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        unavailable("psycopg is not installed: pip install 'sagents_nb[postgres]'")
    try:
        with running_postgres() as server:
            yield server
    except Unavailable as exc:
        unavailable(str(exc))
