"""The names of lectio's jobs and the tags its runs carry: one place that automation, the
runners and the definitions all read, so none of them imports another for a string."""

INGEST_JOB = "ingest_source"
INDEX_JOB = "build_index"
MIGRATE_JOB = "migrate_index"
GATE_JOB = "gate_candidate"
# The assets the ingest job materialises, one partition (source) per run.
INGEST_ASSETS = ("raw_texts", "parsed_structure", "chunks", "embeddings")

BATCH_TAG = "lectio/batch"  # the runs one schedule tick or sensor tick requested together
BATCH_SIZE_TAG = "lectio/batch_size"
STAGE_TAG = "lectio/stage"  # "index" on index runs (dagster.yaml limits those to one at a time)
# On an ingest run `lectio run` launched: the fingerprint of what the source's outputs are made
# from, so the next run can tell that nothing changed and reuse them.
INPUTS_TAG = "lectio/inputs"
