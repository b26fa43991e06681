"""Trust, round 2: what a raw reader session and a changed sources file could once do. A reader
shadowed the table a SECURITY DEFINER function reads and forged any principals; a revoked
version's postings and lexicon stayed readable; a leak fixed by deleting the source was not
revoked; widening an ACL revoked narrower versions for ever; a search with another sources file
in its environment revoked the live version. Each test here failed before its fix."""

from __future__ import annotations

import hashlib
import json
import time

import psycopg
import pytest
from psycopg import sql

from lectio.index import revocation, security, tables, versions
from lectio.index.database import with_database
from cli import main as cli
from tests.integration.trust.test_trust import FIXTURES, home, run, sources_yaml  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.slow, pytest.mark.network]

PRIVATE = "notes-alice"


def reader(home):
    return psycopg.connect(home.database.reader_url(security.READER_ROLE), autocommit=True)


def private_rows(connection, table: str, token: str) -> int:
    with connection.transaction():
        connection.execute("SELECT set_config('lectio.principals', %s, true)", (token,))
        return connection.execute(sql.SQL("SELECT count(*) FROM {} WHERE source_id = %s").format(
            sql.Identifier(table)), (PRIVATE,)).fetchone()[0]


def forged(inner: bytes, outer: bytes, principals: list[str], seconds: int = 600) -> str:
    """A token signed with the given HMAC pads, as lectio_sign_principals makes one."""
    body = f"{int(time.time()) + seconds}|{json.dumps(principals, separators=(',', ':'))}"
    mac = hashlib.sha256(outer + hashlib.sha256(inner + body.encode()).digest()).hexdigest()
    return f"{body}|{mac}"


def live_table(home) -> str:
    assert run(home, home.sources("base")).index["live"]
    with home.connect() as conn:
        return versions.get_version(conn).table_name


# ---------------------------------------------------------------- a reader cannot shadow


def test_a_reader_has_no_temp_schema_and_cannot_create_anywhere(home):
    live_table(home)
    with reader(home) as connection:
        for statement in ("CREATE TEMP TABLE lectio_secret (singleton boolean, inner_key bytea, outer_key bytea)",
                          "CREATE TABLE public.lectio_shadow (x int)",
                          "CREATE FUNCTION public.lectio_mac(message text) RETURNS text LANGUAGE sql AS $$ SELECT '' $$"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                connection.execute(statement)


SHADOWS = (
    # The key table, empty keys that the attacker can sign with.
    "CREATE TEMP TABLE lectio_secret (singleton boolean, inner_key bytea, outer_key bytea)",
    "INSERT INTO lectio_secret VALUES (true, ''::bytea, ''::bytea)",
    # The functions and operators the definer functions call, in the reader's own schema.
    "CREATE FUNCTION pg_temp.lectio_mac(message text) RETURNS text LANGUAGE sql AS $$ SELECT 'x' $$",
    "CREATE FUNCTION pg_temp.sha256(b bytea) RETURNS bytea LANGUAGE sql AS $$ SELECT ''::bytea $$",
    "CREATE FUNCTION pg_temp.never(a text, b text) RETURNS boolean LANGUAGE sql AS $$ SELECT false $$",
    "CREATE OPERATOR pg_temp.<> (LEFTARG = text, RIGHTARG = text, FUNCTION = pg_temp.never)",
    "CREATE FUNCTION pg_temp.current_setting(name text, missing boolean) RETURNS text LANGUAGE sql "
    "AS $$ SELECT '' $$",
)


def test_shadowing_what_a_definer_function_reads_forges_nothing(home):
    """Even given TEMP back (an operator's GRANT, an older server's default), a reader session that
    shadows every table, function and operator the definer functions touch reads no private row."""
    table = live_table(home)
    with home.connect() as conn:
        conn.execute(sql.SQL("GRANT TEMPORARY ON DATABASE {} TO {}").format(
            sql.Identifier(conn.execute("SELECT current_database()").fetchone()[0]),
            sql.Identifier(security.READER_ROLE)))
        alice = security.sign(conn, ["user:alice"])
    try:
        with reader(home) as connection:
            assert private_rows(connection, table, alice) > 0  # the real token reads them
            for statement in SHADOWS:
                connection.execute(statement)
            for token in (forged(b"", b"", ["user:alice"]), alice.rsplit("|", 1)[0] + "|x"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    private_rows(connection, table, token)
            assert private_rows(connection, table, alice) > 0  # and the functions still work
    finally:
        with home.connect() as conn:
            conn.execute(sql.SQL("REVOKE TEMPORARY ON DATABASE {} FROM {}").format(
                sql.Identifier(conn.execute("SELECT current_database()").fetchone()[0]),
                sql.Identifier(security.READER_ROLE)))


def test_every_definer_function_pins_its_search_path_with_pg_temp_last(home):
    with home.connect() as conn:
        rows = conn.execute(
            "SELECT p.proname, p.proconfig FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE p.prosecdef AND n.nspname = 'public'").fetchall()
    assert {name for name, _ in rows} >= {"lectio_mac", "lectio_sign_principals", "lectio_principals"}
    for name, config in rows:
        assert config == ["search_path=pg_catalog, public, pg_temp"], (name, config)


def test_a_token_past_the_lifetime_ceiling_is_neither_signed_nor_accepted(home, capsys):
    table = live_table(home)
    with home.connect() as conn:
        with pytest.raises(psycopg.errors.RaiseException, match="ceiling"):
            conn.execute("SELECT lectio_sign_principals(ARRAY['user:alice'], %s)",
                         (security.TOKEN_CEILING_SECONDS + 1,))
        inner, outer = conn.execute("SELECT inner_key, outer_key FROM lectio_secret").fetchone()
    ten_years = forged(bytes(inner), bytes(outer), ["user:alice"], seconds=10 * 365 * 86400)
    with reader(home) as connection:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="ceiling"):
            private_rows(connection, table, ten_years)
        assert private_rows(connection, table, forged(bytes(inner), bytes(outer), ["user:alice"])) > 0
    for seconds in ("0", "99999999999", "-5"):
        capsys.readouterr()
        assert cli(["token", "--principal", "user:alice", "--seconds", seconds]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "lifetime" in err, err


def test_the_reader_has_no_rights_it_does_not_need(home):
    """No private-chunk counts, no statistics of private values, no Dagster database, no large
    objects or notifications of its own."""
    table = live_table(home)
    with reader(home) as connection:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            connection.execute("SELECT rows FROM index_versions").fetchall()
        assert connection.execute("SELECT count(*) FROM pg_stats WHERE tablename = %s", (table,)).fetchone()[0] == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            connection.execute("SELECT count(*) FROM pg_statistic").fetchone()
        for statement in ("SELECT lo_create(0)", "SELECT lo_from_bytea(0, 'x')", "SELECT pg_notify('x', 'y')"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                connection.execute(statement)
    dagster_url = with_database(home.database.reader_url(security.READER_ROLE), "dagster")
    with pytest.raises(psycopg.OperationalError, match="permission denied"):
        psycopg.connect(dagster_url).close()


# ---------------------------------------------------------------- revocation is complete


def test_revocation_withdraws_every_table_the_version_owns(home):
    leaked = run(home, home.sources("leaked", alice_acl="public"))
    version = leaked.index["version"]
    with home.connect() as conn:
        table = versions.get_version(conn, version).table_name
        owned = tables.version_tables(conn, table)
        assert {f"{what}_{version}" for what in ("chunks", "lexicon", "postings", "xrefs")} <= set(owned)
        assert all(readable(conn, t) for t in owned)  # served while the file allowed it
    run(home, home.sources("fixed"))
    with home.connect() as conn:
        assert versions.get_version(conn, version).status == "revoked"
        assert [t for t in tables.version_tables(conn, table) if readable(conn, t)] == []
        # Not only what lectio lists: any relation whose name ends in the version's suffix.
        named = [name for (name,) in conn.execute(
            "SELECT relname FROM pg_class WHERE relname LIKE %s AND relkind IN ('r', 'p', 'v', 'm', 'f')",
            (f"%\\_{version}",)).fetchall()]
        assert set(owned) <= set(named) and [t for t in named if readable(conn, t)] == []
    with reader(home) as connection:
        for name in owned:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                connection.execute(sql.SQL("SELECT * FROM {} LIMIT 1").format(sql.Identifier(name)))


def readable(conn, table: str) -> bool:
    return conn.execute("SELECT has_table_privilege(%s, %s, 'SELECT')", (security.READER_ROLE, table)).fetchone()[0]


def test_a_leak_fixed_by_deleting_the_source_is_revoked(home, capsys):
    leaked = run(home, home.sources("leaked", alice_acl="public"))
    version = leaked.index["version"]
    assert leaked.index["live"]
    without = home.folder / "without-notes.yaml"
    without.write_text(sources_yaml().split("  - {id: notes-alice")[0])
    second = run(home, without)
    assert second.index["live"] and second.index["version"] != version
    with home.connect() as conn:
        info = versions.get_version(conn, version)
        assert info.status == "revoked" and "no longer in the sources file" in info.revoked_reason
        assert versions.previous_version(conn) == version
    # The operator switching back is told why; a search only that the version is unavailable.
    capsys.readouterr()
    assert cli(["search", "prayer", "--index", version]) == 2
    assert capsys.readouterr().err.strip() == f"lectio search: index version {version} is unavailable"
    for argv in (["index", "rollback"], ["index", "switch", version]):
        capsys.readouterr()
        assert cli(argv) == 2, argv
        assert PRIVATE in capsys.readouterr().err


def test_widening_an_acl_keeps_narrower_versions_and_narrowing_back_restores_them(home):
    narrow = run(home, home.sources("narrow"))
    wide = run(home, home.sources("wide", alice_acl="public"))
    assert wide.index["live"] and wide.index["version"] != narrow.index["version"]
    with home.connect() as conn:
        # Public covers every principal: a version that showed the notes to alice only shows less.
        assert versions.get_version(conn, narrow.index["version"]).status == "ready"
    again = run(home, home.sources("narrow-again"))
    assert again.index["version"] == narrow.index["version"] and again.index["live"]
    with home.connect() as conn:
        assert versions.get_version(conn, wide.index["version"]).status == "revoked"
        # Widened back: the file allows all it shows, so it is served again, tables and all.
        judgement = revocation.judge(conn, {"staff-guide": ("public",), PRIVATE: ("public",)})
        assert wide.index["version"] in judgement.reinstated
        info = versions.get_version(conn, wide.index["version"])
        assert info.status == "ready" and readable(conn, info.table_name)
        revocation.judge(conn, {"staff-guide": ("public",), PRIVATE: ("user:alice",)})


def test_a_search_never_revokes_whatever_sources_file_it_is_given(home, monkeypatch, capsys):
    """Judging happens where the sources file is applied; a read with a narrower file in its
    environment leaves what everyone is served as it was."""
    wide = run(home, home.sources("wide", alice_acl="public"))
    assert wide.index["live"]
    monkeypatch.setenv("LECTIO_SOURCES", str(home.sources("narrow")))
    for argv in (["search", "prayer", "--index", wide.index["version"]], ["search", "prayer"],
                 ["index", "list"]):
        assert cli(argv) == 0, argv
    with home.connect() as conn:
        assert versions.get_version(conn, wide.index["version"]).status == "ready"
    # An explicit audit applies the file.
    capsys.readouterr()
    assert cli(["index", "audit", "--json"]) == 0
    assert wide.index["version"] in json.loads(capsys.readouterr().out)["revoked"]
    monkeypatch.setenv("LECTIO_SOURCES", str(home.sources("wide-again", alice_acl="public")))
    assert cli(["index", "audit"]) == 0
    with home.connect() as conn:
        assert versions.get_version(conn, wide.index["version"]).status == "ready"
    run(home, home.sources("base"))


def test_a_killed_build_is_listed_as_abandoned(home, capsys):
    with home.connect() as conn:
        conn.execute("INSERT INTO index_versions (version, table_name, ruleset, model_id, fingerprint, sources, status) "
                     "VALUES ('v99999', 'chunks_v99999', 'x', 'x', 'x', '[]', 'building')")
    capsys.readouterr()
    assert cli(["index", "list", "--json"]) == 0
    statuses = {v["version"]: v["status"] for v in json.loads(capsys.readouterr().out)["versions"]}
    assert statuses["v99999"] == "abandoned"


# ---------------------------------------------------------------- a token is never in view


def test_no_reader_session_sees_another_sessions_token(home):
    """A reader session that sets its token as a literal (the form an application is most likely
    to write) once showed it in pg_stat_activity.query to every other reader session, in the
    lectio database and in any other it could connect to; the token then replayed."""
    live_table(home)
    with home.connect() as owner:
        token = security.sign(owner, ["user:alice"])
    server = home.database.reader_url(security.READER_ROLE)
    with psycopg.connect(server, autocommit=True) as victim:
        victim.execute(f"SELECT set_config('lectio.principals', '{token}', false)")
        for database in ("lectio", "postgres"):
            with psycopg.connect(with_database(server, database), autocommit=True) as attacker:
                for query in ("SELECT string_agg(coalesce(query, ''), ' ') FROM pg_stat_activity",
                              "SELECT string_agg(coalesce(pg_stat_get_backend_activity(b), ''), ' ') "
                              "FROM pg_stat_get_backend_idset() b"):
                    try:
                        seen = attacker.execute(query).fetchone()[0] or ""
                    except psycopg.errors.InsufficientPrivilege:
                        seen = ""
                    assert token not in seen, (database, query)
