"""`source_changes`: ingest runs for exactly the sources whose inputs changed, observed as
`source_inputs` data versions first."""

from __future__ import annotations

import hashlib
import json

from dagster import DefaultSensorStatus, RunRequest, SensorEvaluationContext, SensorResult, sensor

from lectio.rulesets.registry import input_fingerprints
from pipelines.batches import batch_tags, source_partitions
from pipelines.observations import source_observations
from resources import CorpusResource, EmbedderResource


def source_changes_sensor(ingest_job):
    @sensor(
        name="source_changes",
        job=ingest_job,
        minimum_interval_seconds=300,
        default_status=DefaultSensorStatus.STOPPED,
        description="Requests ingest runs for exactly the sources whose content or entry changed.",
    )
    def source_changes(context: SensorEvaluationContext, corpus: CorpusResource, embedder: EmbedderResource):
        # Cursor: {"generation": n, "fingerprints": {source: hash}}. The first sight of a source
        # is its baseline (a never-ingested source is the nightly run's business, not a change).
        state = json.loads(context.cursor) if context.cursor else {"generation": 0, "fingerprints": {}}
        seen: dict[str, str] = state["fingerprints"]
        keys = source_partitions(context)
        prints = input_fingerprints(corpus.sources_path, corpus.corpus_path, embedder.model_id)
        now = {k: prints.get(k, "removed") for k in keys}
        changed = [k for k in keys if now[k] is not None and k in seen and seen[k] != now[k]]
        fingerprints = {**seen, **{k: v for k, v in now.items() if v is not None}}
        fingerprints = {k: v for k, v in fingerprints.items() if k in keys}
        # Observed before any run it requests, so that run's materializations record these.
        observed = source_observations({k: v for k, v in now.items() if v is not None and seen.get(k) != v})
        if not changed:
            return SensorResult(
                skip_reason=f"no source changed ({len(keys)} watched)",
                cursor=json.dumps({**state, "fingerprints": fingerprints}, sort_keys=True),
                asset_events=observed,
            )
        # The run key holds the generation and the new hash: a tick evaluated twice from the same
        # cursor asks for the same keys (Dagster drops the repeats), while a source that changes
        # back to an earlier content is still re-ingested (a later generation).
        generation = state["generation"] + 1
        batch = "changed-" + hashlib.sha256(
            json.dumps([generation, [(k, now[k]) for k in changed]]).encode()
        ).hexdigest()[:12]
        requests = [
            RunRequest(
                run_key=f"{k}:{generation}:{now[k][:16]}",
                partition_key=k,
                tags={**batch_tags(batch, len(changed)), "lectio/source_fingerprint": now[k][:16]},
            )
            for k in changed
        ]
        context.log.info(f"sources changed: {', '.join(changed)}")
        return SensorResult(
            run_requests=requests,
            cursor=json.dumps({"generation": generation, "fingerprints": fingerprints}, sort_keys=True),
            asset_events=observed,
        )

    return source_changes
