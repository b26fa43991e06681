"""The Dagster definitions and the `lectio` command line that runs them."""
