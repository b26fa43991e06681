"""The adapted embedder's wing: its training (adaptation) and its registry (registry) side by side.
Its weights are found and loaded as the packaged model's are (lectio.embedding.packaged), and
moving the index to it is an index migration, gated by lectio.evaluation.migration_gate."""
