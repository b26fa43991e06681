"""The names of lectio's jobs, the tags its runs carry and its concurrency pools: one place, at
the bottom of the Dagster layer, that the assets, automation, the runners and the definitions all
read, so none of them imports another for a string."""

INGEST_JOB = "ingest_source"
INDEX_JOB = "build_index"
MIGRATE_JOB = "migrate_index"
GATE_JOB = "gate_candidate"
# The assets the ingest job materialises, one partition (source) per run.
INGEST_ASSETS = ("raw_texts", "parsed_structure", "chunks", "embeddings")

BATCH_TAG = "lectio/batch"  # the runs one schedule tick or sensor tick requested together
BATCH_SIZE_TAG = "lectio/batch_size"
STAGE_TAG = "lectio/stage"  # "index" on index runs (dagster.yaml limits those to one at a time)
# On every run `lectio run` or `lectio migrate` executes: which command ran it. Dagster's "Launched
# by" column knows only its own user, schedule and sensor tags, so it reads "Manually launched";
# this tag, at the top of the run's page and in the runs filter, says where the run came from.
LAUNCHED_BY_TAG = "lectio/launched_by"
# Its values: the commands that execute their runs in process and build their own index.
COMMANDS = ("lectio run", "lectio migrate")
# The sources a run failed on, shown at the top of its page and in the Runs list (filterable): on
# the index run, every failed source; on a source's ingest run, that source, when its entry or
# file stopped it (the run itself ends successfully, so the checks it never reached read as
# skipped, not failed).
FAILED_TAG = "lectio/failed_sources"
# On a run (or a backfill's runs): the embedding model it embeds and indexes with, in place of the
# home's: "base", "latest" or an adapted embedder's id (`lectio model show`). The index of such a
# batch is a candidate, gated by migrate_index before it goes live, as `lectio migrate --embedder`.
MODEL_TAG = "lectio/embed_model"
# On an ingest run that asked for its batch's index itself as it ended (pipelines.batches): that
# index run's id, so the index_after_batch sensor does not ask again.
INDEX_REQUESTED_TAG = "lectio/index_requested"
# On a run refused at its first step because it materialises part of a source's ingest (raw_texts
# without embeddings, say): what to run instead. Such a run made nothing, so no batch counts it.
REFUSED_TAG = "lectio/refused"
# On a build_index run whose version re-chunks a source by other rules than the live one: that
# version, which only the migration gate may switch in (index_after_batch then asks gate_candidate).
AWAITS_GATE_TAG = "lectio/awaits_gate"

# Dagster concurrency pools (dagster.yaml: concurrency, pools): one index build at a time (two
# builds racing would both try to switch the live index), and the runs that may embed at once (one
# embedding keeps every core busy, torch using one thread per core, so a second at once on the same
# machine only shares the cores and holds a second model; a bigger host raises this pool's limit).
INDEX_POOL = "lectio_index"
EMBED_POOL = "lectio_embed"
