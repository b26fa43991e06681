"""lectio's domain, free of Dagster: one package per stage, each importing only the stages before it
(settings, sources, alerts, bible, readers, embedding, rulesets, quality, index, retrieval,
evaluation, serving)."""
