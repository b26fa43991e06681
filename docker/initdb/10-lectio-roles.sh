#!/bin/sh
# Run by the postgres image's entrypoint on a new data folder, as its superuser.
set -eu
psql --no-psqlrc -v lectio_password="$LECTIO_DB_PASSWORD" -v dagster_password="$DAGSTER_DB_PASSWORD" \
    --username "$POSTGRES_USER" --dbname postgres -f /lectio/roles.sql
