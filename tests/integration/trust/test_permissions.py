"""Permissions are enforced by PostgreSQL row-level security, not only by the search's WHERE clause."""

import time

import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg import sql

from lectio.index import security, versions
from lectio.index.database import open_database
from lectio.retrieval import SearchConfig, SearchRequest, search
from lectio.settings import secure_home
from lectio.sources import PrincipalError

pytestmark = [pytest.mark.slow, pytest.mark.network]

QUERY = "anxious prayer before the hospital appointment"


def sources_seen(conn, principals, mode="hybrid", vector_conn=None):
    asked = SearchRequest(QUERY, k=50, principals=principals, config=SearchConfig.from_options(mode=mode))
    results = search(conn, asked, vector_conn=vector_conn).results
    return {r.source_id for r in results}


class Watched(psycopg.Connection):
    """A connection that notes who it is when it reads the index's vectors."""

    vector_readers: list

    def execute(self, query, params=None, **options):
        cursor = super().execute(query, params, **options)
        text = query.as_string(self) if isinstance(query, sql.Composable) else str(query)
        if "embedding <=>" in text:
            self.vector_readers.append(super().execute("SELECT current_user, current_setting('lectio.principals', true)").fetchone())
        return cursor


def test_private_notes_reach_only_their_owner_through_search(main_run, conn, database):
    # Also with the vector side on a second connection, as the service searches.
    with Watched.connect(database.url, autocommit=True) as second:
        register_vector(second)
        second.vector_readers = []
        for mode, vector_conn in [(m, c) for m in ("hybrid", "vector", "lexical") for c in (None, second)]:
            assert "notes-bob" in sources_seen(conn, ("public", "user:bob"), mode, vector_conn)
            assert "notes-bob" not in sources_seen(conn, ("public", "user:alice"), mode, vector_conn)
            assert not {"notes-alice", "notes-bob"} & sources_seen(conn, ("public",), mode, vector_conn)
    # The second connection read as the reader role, under row-level security, with a token.
    assert len(second.vector_readers) == 6  # hybrid and vector, three readers each
    assert all(user == security.READER_ROLE and token for user, token in second.vector_readers)
    # A reference lookup goes through the same rules: a principal granted nothing sees what anyone
    # may (every caller is public too, at every door), and nothing more.
    nobody = search(conn, SearchRequest("Philippians 4:6", principals=("user:nobody",))).results
    anyone = search(conn, SearchRequest("Philippians 4:6", principals=("public",))).results
    assert nobody and [r.chunk_id for r in nobody] == [r.chunk_id for r in anyone]
    assert not {r.source_id for r in nobody} & {"notes-alice", "notes-bob"}


@pytest.fixture()
def reader(database, conn, main_run):
    """A raw connection as the application role, as any code path of the app would have."""
    table = versions.get_version(conn, versions.live_version(conn)).table_name
    with psycopg.connect(database.reader_url(security.READER_ROLE), autocommit=True) as connection:
        yield connection, sql.Identifier(table)


def count_notes(connection, table, token):
    with connection.transaction():
        if token is not None:
            connection.execute("SELECT set_config('lectio.principals', %s, true)", (token,))
        return connection.execute(
            sql.SQL("SELECT source_id, count(*) FROM {} WHERE source_id LIKE 'notes-%%' GROUP BY 1 ORDER BY 1").format(table)
        ).fetchall()


def test_raw_queries_as_the_application_role_see_only_permitted_rows(reader, conn):
    connection, table = reader
    assert connection.execute("SELECT current_user").fetchone()[0] == security.READER_ROLE
    assert count_notes(connection, table, None) == []  # no principals set: nothing at all
    assert count_notes(connection, table, security.sign(conn, ["public", "user:alice"])) == [("notes-alice", 16)]
    assert [row[0] for row in count_notes(connection, table, security.sign(conn, ["user:bob"]))] == ["notes-bob"]
    # Even with no WHERE on acl, the public sees no private rows.
    with connection.transaction():
        connection.execute("SELECT set_config('lectio.principals', %s, true)", (security.sign(conn, ["public"]),))
        rows = connection.execute(sql.SQL("SELECT DISTINCT unnest(acl) FROM {}").format(table)).fetchall()
    assert {r[0] for r in rows} == {"public"}


def test_the_application_role_cannot_switch_security_off(reader):
    connection, table = reader
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        connection.execute(sql.SQL("ALTER TABLE {} DISABLE ROW LEVEL SECURITY").format(table))
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        with connection.transaction():
            connection.execute("SET LOCAL row_security = off")
            connection.execute(sql.SQL("SELECT count(*) FROM {}").format(table)).fetchone()
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        connection.execute("SELECT count(*) FROM embedding_cache").fetchone()


def test_a_reader_session_cannot_name_its_own_principals(reader, conn):
    """A raw reader session that sets the principals itself (the plain list the policy once
    trusted, or a signed token it altered) gets an error, never Bob's notes."""
    connection, table = reader
    for forged in ("user:bob", "public,user:bob", "4102444800|[\"user:bob\"]|" + "0" * 64):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            count_notes(connection, table, forged)
    token = security.sign(conn, ["public"])
    expiry, principals, mac = token.split("|")
    assert principals == '["public"]'
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="bad signature"):
        count_notes(connection, table, f'{expiry}|["public","user:bob"]|{mac}')
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="bad signature"):
        count_notes(connection, table, f"{int(expiry) + 3600}|{principals}|{mac}")
    # The reader can neither sign a token nor read the key that signs them.
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        connection.execute("SELECT lectio_sign_principals(ARRAY['user:bob'])")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        connection.execute("SELECT * FROM lectio_secret")


def test_an_expired_token_is_refused(reader, conn):
    connection, table = reader
    token = security.sign(conn, ["user:bob"], seconds=1)
    # Polled on the database's clock, which judges the expiry: no longer than it takes.
    expiry, deadline = int(token.split("|")[0]), time.monotonic() + 10
    while conn.execute("SELECT extract(epoch FROM clock_timestamp())").fetchone()[0] <= expiry:
        assert time.monotonic() < deadline, "the token did not expire"
        time.sleep(0.05)
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="expired"):
        count_notes(connection, table, token)


@pytest.mark.parametrize("principal", ["nobody,user:bob", "user:bob ", "", "user:bob|x"])
def test_a_principal_is_one_value_or_refused(conn, principal):
    """A comma once made one principal two (the policy split the list on commas)."""
    with pytest.raises(PrincipalError):
        search(conn, SearchRequest("Psalm 23:1", principals=(principal,)))
    with pytest.raises(PrincipalError):
        security.sign(conn, [principal])
    with pytest.raises(psycopg.errors.RaiseException, match="is not a principal"):
        conn.execute("SELECT lectio_sign_principals(%s::text[])", ([principal],))


def test_the_reader_sees_no_source_list_and_other_users_no_stored_text(reader, settings):
    connection, _ = reader
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        connection.execute("SELECT sources FROM index_versions").fetchall()
    assert connection.execute("SELECT count(*) FROM index_versions WHERE status = 'ready'").fetchone()[0] >= 1
    # Dagster's stored outputs hold private notes' text: closed to other local users.
    for private in (settings.storage_dir, settings.dagster_home):
        assert private.stat().st_mode & 0o077 == 0, private
    assert settings.home.stat().st_mode & 0o044 == 0


def test_opening_the_embedded_server_leaves_the_home_closed(settings):
    # The library the server comes from makes every folder above its data listable (for its own
    # system user); lectio stops it, or each new process that opens it would undo the home's closing.
    secure_home(settings)
    open_database(settings.home)
    assert settings.home.stat().st_mode & 0o777 == 0o711


# Every retriever a search can turn on for readers' queries: the question's subject, feedback from
# the first page, the chapters around the verse, the evidence read further down, derived forms.
LEVERS = ["questions.subject=true", "feedback.weight=1", "feedback.skip_above=1", "passages.weight=1",
          "evidence.reads=60", "lexical.derived=true"]


@pytest.mark.parametrize("kind", [None, "scripture"])
def test_feedback_and_the_passage_lists_read_only_what_the_caller_may(main_run, conn, database, kind):
    """Feedback moves the query's vector toward the first page's rows and the passage list reads
    the verses of the chapters its candidates vote for: both read as the caller, so a private
    note never moves a public search nor is proposed to it."""
    from lectio.retrieval.filters import Filters

    config = SearchConfig.from_options(LEVERS)
    with Watched.connect(database.url, autocommit=True) as second:
        register_vector(second)
        second.vector_readers = []
        for vector_conn in (None, second):
            def seen(principals):
                asked = SearchRequest(QUERY, k=50, principals=principals, config=config, filters=Filters(kind=kind))
                return {r.source_id for r in search(conn, asked, vector_conn=vector_conn).results}

            public, bob = seen(("public",)), seen(("public", "user:bob"))
            assert public and not {"notes-alice", "notes-bob"} & public
            assert bob and "notes-alice" not in bob
    # The vector reads on the second connection (the first walk, or the unfiltered one beside
    # the filtered) ran as the reader role with a token.
    assert second.vector_readers and all(user == security.READER_ROLE and token for user, token in second.vector_readers)
