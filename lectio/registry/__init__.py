"""Where the models lectio trains live in a home, one shape for every kind (lectio.registry.models)."""
