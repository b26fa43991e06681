-- The roles of a lectio deployment, run once by the server's superuser when its data folder is
-- new (docker/initdb/10-lectio-roles.sh passes the passwords as psql variables). No service logs
-- in as the superuser afterwards:
--   lectio          owns the lectio database (tables, versions, the principals secret); the code
--                   location's runs and the search service, which signs principals tokens.
--   lectio_reader   what searches run as (row-level security, no login password); lectio sets
--                   it per transaction.
--   dagster         owns Dagster's run and event storage; the webserver and the daemon need
--                   nothing else.
-- What lectio would otherwise try as the owner and a non-superuser may not do (extensions, the
-- reader's settings, PUBLIC's rights on the catalog) is done here.
\set ON_ERROR_STOP on

CREATE ROLE lectio LOGIN PASSWORD :'lectio_password' NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
CREATE ROLE lectio_reader LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
GRANT lectio_reader TO lectio;
-- A token set as a literal must not show in pg_stat_activity; only a superuser may set this.
ALTER ROLE lectio_reader SET track_activities = off;
CREATE ROLE dagster LOGIN PASSWORD :'dagster_password' NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;

CREATE DATABASE lectio OWNER lectio;
CREATE DATABASE dagster OWNER dagster;
REVOKE ALL ON DATABASE lectio FROM PUBLIC;
GRANT CONNECT ON DATABASE lectio TO lectio_reader;
REVOKE ALL ON DATABASE dagster FROM PUBLIC;
REVOKE CONNECT ON DATABASE postgres FROM PUBLIC;
REVOKE CONNECT ON DATABASE template1 FROM PUBLIC;

\connect lectio
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pg_catalog.lo_create(oid), pg_catalog.lo_creat(integer),
    pg_catalog.lo_from_bytea(oid, bytea), pg_catalog.pg_notify(text, text) FROM PUBLIC;
REVOKE SELECT ON pg_catalog.pg_stat_activity FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pg_catalog.pg_stat_get_activity(integer),
    pg_catalog.pg_stat_get_backend_activity(integer) FROM PUBLIC;
