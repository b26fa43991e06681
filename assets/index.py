"""Assets over all sources: the chunk-size distribution and the pgvector index."""


import base64

import pandas as pd
from dagster import (
    AssetExecutionContext,
    AssetIn,
    Config,
    MetadataValue,
    PartitionsDefinition,
    TableColumn,
    TableRecord,
    TableSchema,
    asset,
)

from lectio.quality.distribution import histogram_markdown, histogram_png, size_distribution
from lectio.index import locks
from lectio.index.build import build_index
from resources import CorpusResource, DatabaseResource, EmbedderResource

# A source whose partition never materialised (it failed) is left out instead of failing the
# whole index; the index then refuses to replace the live version (see lectio.index.build).
_ALL_AVAILABLE = AssetIn(metadata={"allow_missing_partitions": True})


class IndexConfig(Config):
    # Sources that failed in this run, as `lectio run` saw them; besides these, a source whose
    # chunks were never materialised counts as failed.
    failed_sources: list[str] = []
    # False builds a candidate version beside the live one (for comparison or a gated switch).
    switch_live: bool = True
    # Source → fingerprint of the chunks its ingest made in this run (`lectio run` passes them):
    # a source whose stored chunks differ was overwritten by another run and is not indexed.
    expected_chunks: dict[str, str] = {}


def table_metadata(frame: pd.DataFrame) -> MetadataValue:
    """A DataFrame as Dagster's table metadata: numbers stay numbers (sortable in the UI)."""
    def kind(dtype) -> str:
        return "int" if pd.api.types.is_integer_dtype(dtype) else "float" if pd.api.types.is_float_dtype(dtype) else "string"

    columns = [TableColumn(str(name), kind(dtype)) for name, dtype in frame.dtypes.items()]
    records = [TableRecord({str(k): (v.item() if hasattr(v, "item") else v) for k, v in row.items()})
               for row in frame.to_dict(orient="records")]
    return MetadataValue.table(records=records, schema=TableSchema(columns=columns))


def _by_source(loaded, partitions_def: PartitionsDefinition) -> dict[str, pd.DataFrame]:
    # With one partition the IO manager hands over the object itself, not a dict.
    if isinstance(loaded, dict):
        return {k: v for k, v in loaded.items() if v is not None}
    keys = partitions_def.get_partition_keys()
    return {keys[0]: loaded} if loaded is not None else {}


def build_index_assets(partitions_def: PartitionsDefinition) -> list:
    @asset(ins={"chunks": _ALL_AVAILABLE}, group_name="index")
    def chunk_size_distribution(context: AssetExecutionContext, chunks) -> pd.DataFrame:
        """Token counts per content type and ruleset, with a histogram and the longest chunks."""
        frames = _by_source(chunks, partitions_def)
        if not frames:
            raise RuntimeError("no source has chunks: every source failed")
        frame = pd.concat(frames.values(), ignore_index=True)
        table = size_distribution(frame)
        png = base64.b64encode(histogram_png(frame)).decode()
        context.add_output_metadata(
            {
                # A table value is drawn as a table on the asset page; Markdown over 1,000
                # characters (this table, the image) hides behind "[Show Markdown]".
                "distribution": table_metadata(table),
                "histogram": MetadataValue.md(histogram_markdown(frame)),
                "histogram_image": MetadataValue.md(f"![chunk sizes](data:image/png;base64,{png})"),
                "chunks": len(frame),
                "over_model_limit": int(table["over_model_limit"].sum()),
            }
        )
        return table

    @asset(ins={"chunks": _ALL_AVAILABLE, "embeddings": _ALL_AVAILABLE}, group_name="index")
    def search_index(
        context: AssetExecutionContext, config: IndexConfig, corpus: CorpusResource, database: DatabaseResource,
        embedder: EmbedderResource, chunks, embeddings
    ) -> dict:
        """A pgvector table per index version (HNSW + full text), and the pointer to the live one."""
        by_source = _by_source(chunks, partitions_def)
        embedded = _by_source(embeddings, partitions_def)
        ready = {sid: frame for sid, frame in by_source.items() if sid in embedded}
        missing = [sid for sid in partitions_def.get_partition_keys() if sid not in ready]
        failed = sorted(set(config.failed_sources) | set(missing))
        if not ready:
            raise RuntimeError(f"no source has chunks and embeddings to index; failed: {', '.join(failed)}")
        frame = pd.concat(ready.values(), ignore_index=True)
        with database.connect() as conn, locks.writer_lock_unless_held(conn, "this index build"):
            outcome = build_index(conn, frame, embedder.model_id, failed, config.switch_live,
                                  sources=corpus.sources(), expected=config.expected_chunks)
        failed = sorted(set(failed) | set(outcome.rejected))
        indexed = sorted(set(ready) - set(outcome.rejected))
        context.add_output_metadata(
            {
                "version": outcome.version,
                "rows": outcome.rows,
                "live": outcome.live,
                "reused_existing_version": outcome.reused_existing,
                "decision": outcome.reason,
                "sources": ", ".join(indexed),
                "failed_sources": ", ".join(failed) or "none",
                "quality_failures": "; ".join(f"{s}: {d}" for s, d in sorted(outcome.rejected.items())) or "none",
            }
        )
        # `chunks` lets the row-count check compare the version with what was handed to it.
        return {"version": outcome.version, "live": outcome.live, "sources": indexed,
                "chunks": int(frame["source_id"].isin(indexed).sum())}

    return [chunk_size_distribution, search_index]
