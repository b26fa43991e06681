"""Per-source assets, one partition per source of the sources file.

Staleness is per source: `source_inputs` observes each source's input fingerprint (entry, input
files, the version of the ruleset that chunks it, the embedding model) as its data version, and
`raw_texts` depends on it, so a new fingerprint marks that source's `raw_texts` stale (and each
later stage once the stage before it is materialized again). An asset's code version would be one
for all partitions, so a rule change would mark every source stale; through the data version it
marks only the sources that ruleset chunks.
"""


from dagster import (
    AssetExecutionContext,
    AssetObservation,
    DataVersion,
    DataVersionsByPartition,
    PartitionsDefinition,
    asset,
    observable_source_asset,
)
from dagster._core.definitions.data_version import DATA_VERSION_TAG

from lectio.rulesets import registry as ingest
from lectio.rulesets.chunk import chunks_frame
from lectio.embedding.cache import embed_chunks
from lectio.index import store
from resources import CorpusResource, DatabaseResource, EmbedderResource

SOURCE_INPUTS = "source_inputs"


def source_observations(prints: dict[str, str | None]) -> list[AssetObservation]:
    """What observing `source_inputs` records, for those who fingerprint the sources themselves
    (the source_changes sensor, `lectio run`): one data version per source whose data is here."""
    return [AssetObservation(SOURCE_INPUTS, partition=k, tags={DATA_VERSION_TAG: v}) for k, v in prints.items() if v]


def build_source_assets(partitions_def: PartitionsDefinition) -> list:
    @observable_source_asset(name=SOURCE_INPUTS, partitions_def=partitions_def, group_name="ingest")
    def source_inputs(corpus: CorpusResource):
        """What each source would be ingested from; a new fingerprint makes that source stale."""
        prints = ingest.input_fingerprints(corpus.sources_path, corpus.corpus_path)
        return DataVersionsByPartition({k: DataVersion(v) for k, v in prints.items() if v})

    @asset(partitions_def=partitions_def, group_name="ingest", deps=[source_inputs])
    def raw_texts(context: AssetExecutionContext, corpus: CorpusResource):
        """The source as read, with a content hash so unchanged input is recognised."""
        # The one place a source's entry is read from the sources file; later stages get it from here.
        source = corpus.source(context.partition_key)
        raw = ingest.read_source(source, corpus.corpus_path)
        context.add_output_metadata({"content_hash": raw.content_hash, "units_read": raw.units})
        return raw

    @asset(partitions_def=partitions_def, group_name="ingest")
    def parsed_structure(context: AssetExecutionContext, raw_texts):
        """Books, chapters, verses and paragraph starts (scripture); sections and paragraphs (documents)."""
        parsed = ingest.parse_source(raw_texts)
        context.add_output_metadata(ingest.structure_facts(parsed))
        return parsed

    @asset(partitions_def=partitions_def, group_name="ingest")
    def chunks(context: AssetExecutionContext, parsed_structure):
        """Typed chunks, each with the source's ACL, its ruleset version and a content hash."""
        frame = chunks_frame(ingest.chunk_source(parsed_structure))
        counts = frame.groupby("granularity").size().to_dict()
        context.add_output_metadata(
            {
                "chunks": len(frame),
                **{f"chunks_{name}": int(n) for name, n in counts.items()},
                "rulesets": ", ".join(sorted(frame["ruleset"].unique())),
                # What this run made: the index built in the same run checks it still finds this.
                "fingerprint": store.source_fingerprints(frame).get(context.partition_key, ""),
            }
        )
        return frame

    @asset(partitions_def=partitions_def, group_name="embed")
    def embeddings(context: AssetExecutionContext, database: DatabaseResource, embedder: EmbedderResource, chunks):
        """Vectors for every chunk, through the cache keyed by (content hash, model id)."""
        with database.connect() as conn:
            stats = embed_chunks(conn, chunks, embedder.embedder())
        context.add_output_metadata(
            {
                "chunks": stats.chunks,
                "embedded": stats.embedded,
                "reused_from_cache": stats.reused,
                "embed_seconds": round(stats.seconds, 2),
                "texts_per_second": round(stats.texts_per_second, 1),
            }
        )
        return chunks[["chunk_id", "content_hash"]].assign(model_id=embedder.model_id)

    return [source_inputs, raw_texts, parsed_structure, chunks, embeddings]
