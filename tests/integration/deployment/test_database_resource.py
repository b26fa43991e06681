"""The database resource prepares the database (the server started, the databases created, the
schema current) once per instance: a run's later connections only connect."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from resources import DatabaseResource


def test_the_resource_prepares_the_database_once_then_only_connects(database, settings):
    resource = DatabaseResource(home=str(settings.home), url=settings.database_url)
    with resource.connect() as conn:
        assert conn.execute("SELECT version FROM lectio_schema").fetchone()
    # A schema migration holds lectio_schema: preparing again would wait behind it (the schema's
    # version is read from there), while a connection that only connects does not.
    with database.connect() as migrating:
        pool = ThreadPoolExecutor(1)
        try:
            with migrating.transaction():
                migrating.execute("LOCK TABLE lectio_schema IN ACCESS EXCLUSIVE MODE")
                later = pool.submit(resource.connect)
                later.result(timeout=10).close()
        finally:
            pool.shutdown()  # after the lock is gone, so a connect that waited behind it ends
