-- Dagster keeps its runs and events in their own database on the same server.
CREATE DATABASE dagster;
