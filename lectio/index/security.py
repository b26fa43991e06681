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

from typing import Iterable

import psycopg
from psycopg import sql

from lectio.sources import PRINCIPAL, check_principals

READER_ROLE = "lectio_reader"
# A token is minted per transaction; five minutes covers the slowest search with room to spare,
# and bounds what a token that leaks (a log line, a process listing) is good for.
TOKEN_SECONDS = 300
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
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT encode(sha256(s.outer_key || sha256(s.inner_key || convert_to(message, 'UTF8'))), 'hex')
    FROM lectio_secret s
$$;
REVOKE ALL ON FUNCTION lectio_mac(text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION lectio_sign_principals(principals text[], seconds integer DEFAULT {TOKEN_SECONDS})
RETURNS text LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    body text;
    bad text;
BEGIN
    IF principals IS NULL OR seconds IS NULL OR seconds <= 0 THEN
        RAISE EXCEPTION 'lectio_sign_principals: principals and a positive lifetime are required';
    END IF;
    SELECT p INTO bad FROM unnest(principals) p WHERE p IS NULL OR p !~ '{_PRINCIPAL_SQL}' LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'lectio_sign_principals: % is not a principal (public, or kind:name)', quote_nullable(bad);
    END IF;
    body := (floor(extract(epoch FROM clock_timestamp())) + seconds)::bigint::text
            || '|' || array_to_json(principals)::text;
    RETURN body || '|' || lectio_mac(body);
END
$$;
REVOKE ALL ON FUNCTION lectio_sign_principals(text[], integer) FROM PUBLIC;

CREATE OR REPLACE FUNCTION lectio_principals() RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
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
    IF lectio_mac(parts[1] || '|' || parts[2]) <> parts[3] THEN
        RAISE EXCEPTION 'lectio.principals carries a bad signature' USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF parts[1]::bigint < extract(epoch FROM clock_timestamp()) THEN
        RAISE EXCEPTION 'lectio.principals token has expired' USING ERRCODE = 'insufficient_privilege';
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
    if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (READER_ROLE,)).fetchone():
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE").format(
                sql.Identifier(READER_ROLE))
        )


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


def sign(conn: psycopg.Connection, principals: Iterable[str], seconds: int = TOKEN_SECONDS) -> str:
    """A token for `principals`, valid for `seconds`; the caller must be the owner."""
    return conn.execute("SELECT lectio_sign_principals(%s::text[], %s)",
                        (list(check_principals(principals)), seconds)).fetchone()[0]


def act_as_reader(conn: psycopg.Connection, principals: Iterable[str]) -> None:
    """For the rest of the current transaction: the reader role, seeing what `principals` may.
    The token is signed while still the owner; the reader could not sign one."""
    # One statement, one round trip: set_config runs in order, so the token is signed first.
    conn.execute("SELECT set_config('lectio.principals', lectio_sign_principals(%s::text[], %s), true), "
                 "set_config('role', %s, true)",
                 (list(check_principals(principals)), TOKEN_SECONDS, READER_ROLE))
