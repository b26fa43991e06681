"""Who may read what: the reader role, the signed token that carries a caller's principals into
PostgreSQL, and the row-level policy that trusts nothing else.

Searches run as `lectio_reader`, a role that owns nothing and cannot bypass row-level security.
Which rows it sees depends on the principals of the transaction; a plain setting would let any
reader session name its own (`SET lectio.principals = 'user:bob'`). So the setting holds a
token instead: the principals as a JSON array, an expiry, and an HMAC-SHA256 over both, keyed
by a secret in a table only the owner can read. The policy calls `lectio_principals()`, a
SECURITY DEFINER function that checks the signature and the expiry and returns the array; a
forged, altered or expired token is an error, not a wider view. Only the owner (lectio itself,
or whoever holds the owner's credentials) can call `lectio_sign_principals`, so an application
that reads as `lectio_reader` over its own connection asks lectio for a token (`lectio token`)
and sets it for each transaction.

Principals travel as an array from end to end: no joining with commas, no splitting in SQL.
"""

from __future__ import annotations

import logging
from typing import Iterable

import psycopg
from psycopg import sql

from lectio.sources import PRINCIPAL, check_principals
from lectio.settings import runtime_settings

READER_ROLE = "lectio_reader"
log = logging.getLogger(__name__)
# A token is minted per transaction; five minutes covers the slowest search with room to spare,
# and bounds what a token that leaks (a log line, a process listing) is good for.
TOKEN_SECONDS = 300
# No token lives longer than this, whoever asks: the database refuses to sign or accept one that
# does. `lectio token` caps lower (LECTIO_TOKEN_MAX_SECONDS, within this ceiling).
TOKEN_CEILING_SECONDS = 86400
# The database refuses to sign what lectio would refuse (the pattern reads the same in PostgreSQL).
_PRINCIPAL_SQL = PRINCIPAL.pattern

SCHEMA = rf"""
CREATE TABLE IF NOT EXISTS lectio_secret (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    inner_key bytea NOT NULL,
    outer_key bytea NOT NULL
);
REVOKE ALL ON lectio_secret FROM PUBLIC;

-- The HMAC key pads, made once from 256 random bits (gen_random_uuid draws on the server's
-- strong random source; pgcrypto is not on every server).
DO $$
DECLARE
    k bytea;
    i bytea;
    o bytea;
BEGIN
    IF EXISTS (SELECT 1 FROM lectio_secret) THEN
        RETURN;
    END IF;
    k := decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex')
         || decode(repeat('00', 48), 'hex');
    k := substring(k FROM 1 FOR 64);
    i := k;
    o := k;
    FOR n IN 0..63 LOOP
        i := set_byte(i, n, get_byte(k, n) # 54);
        o := set_byte(o, n, get_byte(k, n) # 92);
    END LOOP;
    INSERT INTO lectio_secret (inner_key, outer_key) VALUES (i, o);
END
$$;

CREATE OR REPLACE FUNCTION lectio_mac(message text) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT encode(sha256(s.outer_key || sha256(s.inner_key || convert_to(message, 'UTF8'))), 'hex')
    FROM public.lectio_secret s
$$;
REVOKE ALL ON FUNCTION lectio_mac(text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION lectio_sign_principals(principals text[], seconds integer DEFAULT {TOKEN_SECONDS})
RETURNS text LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    body text;
    bad text;
BEGIN
    IF principals IS NULL OR seconds IS NULL OR seconds <= 0 THEN
        RAISE EXCEPTION 'lectio_sign_principals: principals and a positive lifetime are required';
    END IF;
    IF seconds > {TOKEN_CEILING_SECONDS} THEN
        RAISE EXCEPTION 'lectio_sign_principals: a lifetime of % s is past the ceiling of {TOKEN_CEILING_SECONDS} s', seconds;
    END IF;
    SELECT p INTO bad FROM unnest(principals) p WHERE p IS NULL OR p !~ '{_PRINCIPAL_SQL}' LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'lectio_sign_principals: % is not a principal (public, or kind:name)', quote_nullable(bad);
    END IF;
    body := (floor(extract(epoch FROM clock_timestamp())) + seconds)::bigint::text
            || '|' || array_to_json(principals)::text;
    RETURN body || '|' || public.lectio_mac(body);
END
$$;
REVOKE ALL ON FUNCTION lectio_sign_principals(text[], integer) FROM PUBLIC;

CREATE OR REPLACE FUNCTION lectio_principals() RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    token text := current_setting('lectio.principals', true);
    parts text[];
BEGIN
    IF token IS NULL OR token = '' THEN
        RETURN '{{}}';  -- no principals: no rows
    END IF;
    parts := string_to_array(token, '|');
    IF array_length(parts, 1) <> 3 OR parts[1] !~ '^[0-9]{{1,12}}$' THEN
        RAISE EXCEPTION 'lectio.principals is not a token signed by lectio' USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF public.lectio_mac(parts[1] || '|' || parts[2]) <> parts[3] THEN
        RAISE EXCEPTION 'lectio.principals carries a bad signature' USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF parts[1]::bigint < extract(epoch FROM clock_timestamp()) THEN
        RAISE EXCEPTION 'lectio.principals token has expired' USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- Only the owner signs, and never past the ceiling: a longer-lived token was not made here.
    IF parts[1]::bigint > extract(epoch FROM clock_timestamp()) + {TOKEN_CEILING_SECONDS} THEN
        RAISE EXCEPTION 'lectio.principals token outlives the ceiling of {TOKEN_CEILING_SECONDS} s' USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN ARRAY(SELECT json_array_elements_text(parts[2]::json));
END
$$;
"""

# Every protected table gets this policy. The function sits in a sub-select so PostgreSQL checks
# the token once per query (an InitPlan), not once per row (a row each costs an HMAC: a full scan
# took seconds). Wrapped in coalesce so the planner neither takes it for an index condition nor
# gives it the tiny default selectivity of `&&` against an unknown value: it then plans from the
# query's own `acl && ARRAY[…]` (HNSW for public, the ACL's GIN index for a rare principal), as it
# did when the principals were a plain setting. A NULL is no row, as before.
_POLICY = ("CREATE POLICY acl_visible ON {table} FOR SELECT TO {reader} "
           "USING (coalesce(acl && (SELECT lectio_principals()), false))")


def create_reader_role(conn: psycopg.Connection) -> None:
    """The reader role, and nothing it does not need (see `_narrow_public`)."""
    if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (READER_ROLE,)).fetchone():
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE").format(
                sql.Identifier(READER_ROLE))
        )
    _untracked(conn)
    _narrow_public(conn)


def _untracked(conn: psycopg.Connection) -> None:
    """Reader sessions report no query text: an application that sets its token as a literal
    (`set_config('lectio.principals', '<token>', true)`) would otherwise show it in
    pg_stat_activity to every other reader session, in every database of the server, and the
    token replays until it expires. track_activities is a superuser's setting, so a reader
    cannot turn it back on; where the owner may not set it and nobody has, say so."""
    statement = sql.SQL("ALTER ROLE {} SET track_activities = off").format(sql.Identifier(READER_ROLE))
    already = ("SELECT EXISTS (SELECT 1 FROM pg_db_role_setting s JOIN pg_roles r ON r.oid = s.setrole "
               "WHERE r.rolname = %(r)s AND s.setdatabase = 0 AND 'track_activities=off' = ANY (s.setconfig))")
    _as_far_as_allowed(conn, statement, already, "reader sessions' query text stays visible to each other; "
                       "bind the token as a parameter")


# What every role gets by default through PUBLIC and the reader has no use for, each with the test
# that the reader already lacks it (a deployment's superuser may have taken it, as
# docker/roles.sql does, where lectio's owner may not). TEMP would let a session shadow relations
# that functions resolve by name; CREATE on the schema, functions and operators; CONNECT to
# Dagster's database, its run storage; large objects and pg_notify, writes of their own. The owner
# keeps TEMP (it stages bulk loads in temp tables).
_NARROWING = (
    ("GRANT TEMPORARY ON DATABASE {db} TO CURRENT_USER",
     "SELECT has_database_privilege(current_user, current_database(), 'TEMPORARY')"),
    ("REVOKE TEMPORARY ON DATABASE {db} FROM PUBLIC",
     "SELECT NOT has_database_privilege(%(r)s, current_database(), 'TEMPORARY')"),
    ("REVOKE CREATE ON SCHEMA public FROM PUBLIC",
     "SELECT NOT has_schema_privilege(%(r)s, 'public', 'CREATE')"),
    ("REVOKE EXECUTE ON FUNCTION pg_catalog.lo_create(oid), pg_catalog.lo_creat(integer), "
     "pg_catalog.lo_from_bytea(oid, bytea), pg_catalog.pg_notify(text, text) FROM PUBLIC",
     "SELECT NOT (has_function_privilege(%(r)s, 'pg_catalog.lo_create(oid)', 'EXECUTE') "
     "OR has_function_privilege(%(r)s, 'pg_catalog.lo_creat(integer)', 'EXECUTE') "
     "OR has_function_privilege(%(r)s, 'pg_catalog.lo_from_bytea(oid, bytea)', 'EXECUTE') "
     "OR has_function_privilege(%(r)s, 'pg_catalog.pg_notify(text, text)', 'EXECUTE'))"),
    # Other sessions' activity (their query text) is the owner's to read, not the reader's.
    ("REVOKE SELECT ON pg_catalog.pg_stat_activity FROM PUBLIC",
     "SELECT NOT has_table_privilege(%(r)s, 'pg_catalog.pg_stat_activity', 'SELECT')"),
    ("REVOKE EXECUTE ON FUNCTION pg_catalog.pg_stat_get_activity(integer), "
     "pg_catalog.pg_stat_get_backend_activity(integer) FROM PUBLIC",
     "SELECT NOT (has_function_privilege(%(r)s, 'pg_catalog.pg_stat_get_activity(integer)', 'EXECUTE') "
     "OR has_function_privilege(%(r)s, 'pg_catalog.pg_stat_get_backend_activity(integer)', 'EXECUTE'))"),
)


def _narrow_public(conn: psycopg.Connection) -> None:
    """Take from PUBLIC what the reader must not have, as far as the owner may: on an external
    server where lectio's owner is not a superuser, what is still missing is logged."""
    db = sql.Identifier(conn.execute("SELECT current_database()").fetchone()[0])
    narrowing = [(sql.SQL(statement).format(db=db), already) for statement, already in _NARROWING]
    if conn.execute("SELECT 1 FROM pg_database WHERE datname = 'dagster'").fetchone():
        narrowing.append((sql.SQL("REVOKE CONNECT ON DATABASE dagster FROM PUBLIC"),
                          "SELECT NOT has_database_privilege(%(r)s, 'dagster', 'CONNECT')"))
    for statement, already in narrowing:
        _as_far_as_allowed(conn, statement, already, "PUBLIC keeps this right")


def _as_far_as_allowed(conn: psycopg.Connection, statement: sql.Composable, already: str, consequence: str) -> None:
    """Run `statement`; if the owner may not, log it unless `already` (a query of the reader's
    role name, %(r)s) finds its effect in place."""
    try:
        with conn.transaction():
            conn.execute(statement)
    except psycopg.errors.InsufficientPrivilege as exc:
        if not conn.execute(already, {"r": READER_ROLE}).fetchone()[0]:
            log.warning("could not run %s (%s): %s", statement.as_string(conn), consequence,
                        str(exc).splitlines()[0])


def protect(conn: psycopg.Connection, tables: Iterable[str], readable: Iterable[str] = ()) -> None:
    """Row-level security on `tables` (each has an `acl` column): the reader sees a row only when
    one of its transaction's verified principals is in the row's ACL. `readable` tables hold
    nothing private and are granted as they are. Safe to run again on protected tables."""
    reader = sql.Identifier(READER_ROLE)
    for table in tables:
        ident = sql.Identifier(table)
        conn.execute(sql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(ident))
        conn.execute(sql.SQL("DROP POLICY IF EXISTS acl_visible ON {}").format(ident))
        conn.execute(sql.SQL(_POLICY).format(table=ident, reader=reader))
        conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(ident, reader))
    for table in readable:
        conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(sql.Identifier(table), reader))


def withdraw(conn: psycopg.Connection, tables: Iterable[str]) -> None:
    """The reader may no longer read these tables at all (a revoked version's)."""
    for table in tables:
        conn.execute(sql.SQL("REVOKE ALL ON {} FROM {}").format(sql.Identifier(table), sql.Identifier(READER_ROLE)))


def token_max_seconds() -> int:
    """The longest lifetime `lectio token` signs: LECTIO_TOKEN_MAX_SECONDS (default an hour), at
    most the database's ceiling."""
    given = runtime_settings().token_max_seconds
    if not given.isdigit() or not 1 <= int(given) <= TOKEN_CEILING_SECONDS:
        raise ValueError(f"LECTIO_TOKEN_MAX_SECONDS must be a whole number of seconds from 1 to "
                         f"{TOKEN_CEILING_SECONDS}, not {given!r}")
    return int(given)


def sign(conn: psycopg.Connection, principals: Iterable[str], seconds: int = TOKEN_SECONDS) -> str:
    """A token for `principals`, valid for `seconds`; the caller must be the owner."""
    limit = token_max_seconds()
    if isinstance(seconds, bool) or not isinstance(seconds, int) or not 1 <= seconds <= limit:
        raise ValueError(f"a token's lifetime must be from 1 to {limit} seconds (LECTIO_TOKEN_MAX_SECONDS), "
                         f"not {seconds!r}")
    return conn.execute("SELECT lectio_sign_principals(%s::text[], %s)",
                        (list(check_principals(principals)), seconds)).fetchone()[0]


def act_as_reader(conn: psycopg.Connection, principals: Iterable[str]) -> None:
    """For the rest of the current transaction: the reader role, seeing what `principals` may.
    The token is signed while still the owner; the reader could not sign one."""
    # One statement, one round trip: set_config runs in order, so the token is signed first.
    conn.execute("SELECT set_config('lectio.principals', lectio_sign_principals(%s::text[], %s), true), "
                 "set_config('role', %s, true)",
                 (list(check_principals(principals)), TOKEN_SECONDS, READER_ROLE))
